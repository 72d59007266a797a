#!/usr/bin/env bash
# ffb on an NVIDIA GPU machine: what CI (no GPU) can't check or measure. One prepared script for a lent GPU
# machine (one H200, 16 cores: ~15 minutes of device time per session, 10 per command):
#   here:   bash benchmarks/gpu_carry.sh      (wheels, static ffmpeg/ffprobe, FaceFusion 3.8.1 into .gpu/pack/; it prints
#                                              the device calls that carry them over, back to back)
#   there:  bash benchmarks/gpu_check.sh "$OUT"   (the last of those calls)
# Elsewhere (ffb installed with onnxruntime-gpu, ffmpeg and ffprobe on PATH) it runs as it is:
#   bash benchmarks/gpu_check.sh [REPORT_DIR]; FACEFUSION=CHECKOUT for the FaceFusion comparison.
# Steps (STEPS, in order; default all but tests; each under its own time limit, all within BUDGET seconds, so
# that the whole fits one 10-minute command; what is cut says so):
#   detect     ffb detect-gpus (the GPU, the providers, the advice: --executor processes over several GPUs)
#   bench      ffb benchmark 1080p 4k: swap-only (profiles/swap_cuda.ini) and swapper+enhancer (chain_cuda.ini)
#              on stand-ins of the real models' size: end-to-end, model-bound and decode+encode-only fps, GPU
#              busy % and memory (NVML), cores busy, the bound, the decoder and encoder used, NVDEC/NVENC
#   facefusion benchmarks/facefusion_baseline.py: ffb (threads, then --executor processes) vs FaceFusion 3.8.1
#              on the same stand-ins, clip and ffmpeg, CUDA, FaceFusion's default 8 threads; 1080p, then 4k
#   device     the device-resident per-face work: benchmarks/device_graphs_placement.py (exit 1 if pixel-sized
#              work is off the GPU), benchmarks/face_work.py (CPU path vs device path per face), then ffb benchmark
#              at the first size with face_work cpu vs device and cuda_fp16 off vs on (the TensorRT and fp16
#              caches it leaves are listed)
#   workers    benchmarks/process_workers.py at 1080p: threads vs --executor processes (4 workers x 4 threads)
#              (vs Ray with fractional GPUs when Ray is importable) on short clips and one long clip
#   tests      tests/models/test_cuda.py and the neural end-to-end tests on CUDA (long; not in the default)
# Stand-ins: benchmarks/standin_models.py with CONVS=4 CHANNELS=64 (the enhancer ~40 GFLOPs a face at 512,
# GFPGAN 1.4 ~45): ratios and bounds are what to read, not absolute speeds of the real models.
set -u
REPORT=${1:-gpu-report}
mkdir -p "$REPORT"
exec > >(tee -a "$REPORT/log.txt") 2>&1
PY=${PYTHON:-python3}
STEPS=${STEPS:-detect bench facefusion device workers}  # in this order; tests: also the CUDA tests (long)
BUDGET=${BUDGET:-570}  # seconds for the whole script: a step that would run past it is cut or skipped
CONVS=${CONVS:-4}
CHANNELS=${CHANNELS:-64}
SIZES=${SIZES:-1080p 4k}  # the first is also the size of the workers step
SECS=${SECS:-2}  # seconds of each clip
FACEFUSION_PYTHON=${FACEFUSION_PYTHON:-$PY}
PROVIDER=${PROVIDER:-cuda}  # cpu: a smoke run of this script on a machine without a GPU
FFB_PROVIDERS=$PROVIDER; [ "$PROVIDER" = cpu ] || FFB_PROVIDERS="$PROVIDER cpu"
status=0
step() { echo "== $(date -u +%T) $*"; }
export PYTHONUNBUFFERED=1

step "set-up from carried files (.gpu/)"
if [ -d .gpu/pack ]; then  # gpu_carry.sh's one archive, in parts: site/ (wheels unpacked), bin/, facefusion/
  if [ "$(cat .gpu/pack/part.* | sha256sum | cut -d' ' -f1)" != "$(cat .gpu/pack/SHA256)" ]; then
    echo "gpu_check: .gpu/pack: parts missing or damaged (ls .gpu/pack: $(ls .gpu/pack | tr '\n' ' ')); carry every part again"
    exit 2
  fi
  mkdir -p /tmp/gpu
  cat .gpu/pack/part.* | "$PY" -c "import sys, tarfile; tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall('/tmp/gpu')" \
    || exit 2
  export PYTHONPATH=$PWD:/tmp/gpu/site PATH=/tmp/gpu/bin:$PATH FACEFUSION=${FACEFUSION:-/tmp/gpu/facefusion}
fi
export PYTHONPATH=${PYTHONPATH:-$PWD}
command -v ffmpeg >/dev/null && export FFB_FFMPEG_PATH=$(command -v ffmpeg)  # both tools encode with the same ffmpeg
ffb() { "$PY" -m facefusion_batch "$@"; }
nvidia-smi -L
nproc
"$PY" -c "import onnxruntime as o; print('onnxruntime', o.__version__, o.get_available_providers())"
ffmpeg -hide_banner -version 2>/dev/null | head -1 || echo "no ffmpeg on PATH (ffb uses imageio-ffmpeg's)"

work=$(mktemp -d)
models=$work/models
"$PY" benchmarks/standin_models.py "$models" --convs "$CONVS" --channels "$CHANNELS" | tail -1

budget() {  # seconds a step may take: its own cap, within what is left of BUDGET (the device command's 600 s)
  local left=$((BUDGET - SECONDS))
  [ "$left" -lt 30 ] && { echo "gpu_check: ${FUNCNAME[1]} skipped: ${left}s of BUDGET left" >&2; return 1; }
  echo $(( $1 < left ? $1 : left ))
}

run_detect() {
  step "detect-gpus"
  ffb detect-gpus
  ffb detect-gpus --json > "$REPORT/detect-gpus.json" || status=1
}

run_bench() {
  local limit; limit=$(budget 220) || return 0
  step "benchmark $SIZES: swap-only (base) vs swapper+enhancer (compare), $PROVIDER (${limit}s at most)"
  FFB_MODELS_PATH=$models timeout "$limit" "$PY" -m facefusion_batch benchmark $SIZES --engine neural \
    --seconds "$SECS" --profile "$work/swap.ini" --compare "$work/chain.ini" --json > "$REPORT/benchmark.json" \
    || status=1
  "$PY" -c "import json,sys; from facefusion_batch.bench.runner import render
r = json.load(open(sys.argv[1])); print(render(r) if 'runs' in r else r)" "$REPORT/benchmark.json"
}

run_facefusion() {  # ffb (threads; processes at the first size) vs FaceFusion 3.8.1, same stand-ins, clip, ffmpeg
  if [ -z "${FACEFUSION:-}" ] || ! command -v ffprobe >/dev/null; then
    echo "gpu_check: no FaceFusion comparison: needs FACEFUSION=CHECKOUT (3.8.1) and ffmpeg + ffprobe on PATH"
    status=1
    return
  fi
  local size flags limit
  for size in $SIZES; do
    for flags in "" "--executor processes"; do
      [ -n "$flags" ] && [ "$size" != "${SIZES%% *}" ] && continue  # past the first size the threads only
      limit=$(budget 110) || return 0
      step "ffb (${flags:-threads}) vs FaceFusion 3.8.1 at $size, $PROVIDER, 8 threads (${limit}s at most)"
      timeout "$limit" "$PY" benchmarks/facefusion_baseline.py --facefusion "$FACEFUSION" \
        --facefusion-python "$FACEFUSION_PYTHON" --resolution "$size" --seconds "$SECS" --rounds 1 --threads 8 \
        --providers "$PROVIDER" --convs "$CONVS" --channels "$CHANNELS" --masks box --ffb-args "$flags" \
        --workdir "$work/ff-$size" --json >> "$REPORT/facefusion.txt" || status=1
    done
  done
  cat "$REPORT/facefusion.txt"
}

run_workers() {
  local limit ray; limit=$(budget 150) || return 0
  step "process workers vs threads at ${SIZES%% *}, $PROVIDER (4 workers x 4 threads; ${limit}s at most)"
  ray=$("$PY" -c "import ray" 2>/dev/null && echo --ray)
  timeout "$limit" "$PY" benchmarks/process_workers.py --engines neural --providers "$FFB_PROVIDERS" \
    --resolution "${SIZES%% *}" --clips 6 --seconds "$SECS" --long-seconds $((SECS * 4)) --workers 4 --threads 4 \
    --convs "$CONVS" --channels "$CHANNELS" --profile "$work/swap.ini" $ray --json > "$REPORT/workers.json" \
    || status=1
  [ -s "$REPORT/workers.json" ] && "$PY" -c "import json,sys; r=json.load(open(sys.argv[1]))
for row in r['runs']: print(row)
for k, v in r['ratios'].items(): print(k, v)" "$REPORT/workers.json"
}

run_device() {
  local limit; limit=$(budget 120) || return 0
  step "device-resident per-face work on $PROVIDER (${limit}s at most)"
  timeout 30 "$PY" benchmarks/device_graphs_placement.py --provider "$PROVIDER" > "$REPORT/placement.txt" || status=1
  cat "$REPORT/placement.txt"
  timeout 40 "$PY" benchmarks/face_work.py --provider "$PROVIDER" --frames 30 | tee "$REPORT/face_work.txt"
  limit=$(budget 60) || return 0
  local cache="$work/cache-device"
  FFB_MODELS_PATH=$models FFB_CACHE_PATH=$cache FFB_FACE_WORK=cpu FFB_CUDA_FP16=false timeout "$limit" \
    "$PY" -m facefusion_batch benchmark "${SIZES%% *}" --engine neural --seconds "$SECS" --profile "$work/swap.ini" \
    --compare "$work/chain.ini" --json > "$REPORT/benchmark-cpu-work.json" || status=1
  limit=$(budget 60) || return 0
  FFB_MODELS_PATH=$models FFB_CACHE_PATH=$cache FFB_FACE_WORK=device FFB_CUDA_FP16=true timeout "$limit" \
    "$PY" -m facefusion_batch benchmark "${SIZES%% *}" --engine neural --seconds "$SECS" --profile "$work/swap.ini" \
    --compare "$work/chain.ini" --json > "$REPORT/benchmark-device-work.json" || status=1
  ls -R "$cache/tensorrt" "$cache/fp16" 2>/dev/null | head -40 > "$REPORT/caches.txt"
}

run_tests() {
  step "CUDA tests"
  "$PY" -m pytest tests/models/test_cuda.py -v -rs -p no:cacheprovider || status=1
  FFB_EXECUTION_PROVIDERS="cuda cpu" "$PY" -m pytest -q -p no:cacheprovider tests/processors/test_device_chain.py \
    tests/models/test_tensorrt_binding.py tests/models/test_fp16.py || status=1
  step "neural end-to-end tests on CUDA"
  FFB_EXECUTION_PROVIDERS="cuda cpu" "$PY" -m pytest tests/processors -x -q -p no:cacheprovider | tail -15
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
}

# the profiles of the two chains, on this run's provider
for chain in swap chain; do
  sed "s/^execution_providers = .*/execution_providers = $FFB_PROVIDERS/" "benchmarks/profiles/${chain}_cuda.ini" \
    > "$work/$chain.ini"
done
for name in $STEPS; do
  "run_$name"
done
rm -rf "$work"
echo "gpu_check: exit $status"
exit $status

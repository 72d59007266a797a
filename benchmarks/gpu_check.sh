#!/usr/bin/env bash
# ffb on an NVIDIA GPU machine: what CI (no GPU) can't check. Needs ffb importable with onnxruntime-gpu and
# NVIDIA's CUDA 12/13 + cuDNN libraries (pip install -e '.[cuda,test]'), the driver, and nvidia-smi.
#   bash benchmarks/gpu_check.sh [REPORT_DIR]
# 1. the GPU and the providers as ffb sees them (ffb detect-gpus);
# 2. tests/models/test_cuda.py: every stand-in model family on CUDA through ffb's session pool agrees with
#    CPU, `ffb run` with the whole processor chain on CUDA gives the CPU picture, NVML metrics;
# 3. the neural end-to-end tests (tests/processors) again with FFB_EXECUTION_PROVIDERS='cuda cpu';
# 4. ffb benchmark of the chain on stand-ins with real convolutions, CUDA against CPU (ratios, not absolute
#    speeds of the real models).
set -u
REPORT=${1:-gpu-report}
mkdir -p "$REPORT"
PY=${PYTHON:-python3}
ffb() { "$PY" -m facefusion_batch "$@"; }
status=0
step() { echo "== $*"; }

step "GPU and ONNX Runtime"
nvidia-smi -L
"$PY" -c "import onnxruntime as o; print('onnxruntime', o.__version__, o.get_available_providers())"
ffb detect-gpus | tee "$REPORT/detect-gpus.txt"
ffb detect-gpus --json > "$REPORT/detect-gpus.json" || status=1

step "CUDA tests"
"$PY" -m pytest tests/models/test_cuda.py -v -rs -p no:cacheprovider 2>&1 | tee "$REPORT/test_cuda.txt"
[ "${PIPESTATUS[0]}" = 0 ] || status=1

step "neural end-to-end tests on CUDA"
FFB_EXECUTION_PROVIDERS="cuda cpu" "$PY" -m pytest tests/processors -x -p no:cacheprovider 2>&1 \
  | tee "$REPORT/test_processors_cuda.txt" | tail -15
[ "${PIPESTATUS[0]}" = 0 ] || status=1

step "benchmark: the chain on CUDA vs CPU (stand-ins: ${CONVS:=8} convolutions ${CHANNELS:=64} wide)"
models=$(mktemp -d)
"$PY" benchmarks/standin_models.py "$models" --convs "$CONVS" --channels "$CHANNELS" > /dev/null
FFB_MODELS_PATH=$models ffb benchmark ${RESOLUTIONS:-360p 720p} --engine neural --seconds "${SECONDS_PER_CLIP:-2}" \
  --profile benchmarks/profiles/chain_cuda.ini --compare benchmarks/profiles/chain_cpu.ini \
  | tee "$REPORT/benchmark.txt" || status=1
echo "gpu_check: exit $status"
exit $status

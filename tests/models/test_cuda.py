"""ffb on a real NVIDIA GPU: skipped where ONNX Runtime's CUDA provider does not load (CI, laptops).

Where it loads: every stand-in model family runs on CUDA through ffb's own session pool and agrees with CPU,
`ffb run --execution-providers cuda cpu` with the whole processor chain really runs on CUDA and gives the
CPU run's picture, `ffb detect-gpus` reports the GPU, and the metrics carry the GPU's NVML readings.
Run them on a GPU machine with `python -m pytest tests/models/test_cuda.py -v`.
"""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

import standins
from conftest import FRAME_H, FRAME_W, detector_faces, face_frame
from facefusion_batch.cli import main
from facefusion_batch.models.providers import CUDA, provider_error
from facefusion_batch.models.sessions import SessionPool
from facefusion_batch.settings import Settings

pytestmark = pytest.mark.skipif(provider_error(CUDA, 0) is not None,
                                reason="ONNX Runtime's CUDA provider does not load here (no GPU or no onnxruntime-gpu)")

CHAIN = ["--processors", "face_swapper", "face_enhancer", "--face-mask-types", "box", "occlusion", "region",
         "--face-swapper-model", "hyperswap_1a_256", "--face-enhancer-model", "gfpgan_1.4"]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    """The chain's models as FaceFusion names them: stand-ins with convolutions (real GPU kernels)."""
    directory = tmp_path_factory.mktemp("cuda_models")
    standins.build_arcface(directory / "arcface_w600k_r50.onnx")
    standins.build_scrfd(directory / "scrfd_2.5g.onnx", detector_faces(640 / max(FRAME_W, FRAME_H)))
    standins.build_swapper(directory / "hyperswap_1a_256.onnx", 256, (512,), "mean", 0.5, convs=3)
    standins.build_gfpgan(directory / "gfpgan_1.4.onnx")
    standins.build_occluder(directory / "xseg_1.onnx", np.ones((256, 256), np.float32))
    standins.build_parser(directory / "bisenet_resnet_34.onnx", np.ones((512, 512), np.int64))
    for model in directory.glob("*.onnx"):
        standins.write_facefusion_hash(model)
    return directory


def _feeds(session, rng: np.random.Generator) -> dict[str, np.ndarray]:
    feeds = {}
    for spec in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in spec.shape]
        dtype = np.float16 if "float16" in spec.type else np.float32
        feeds[spec.name] = rng.uniform(-1, 1, shape).astype(dtype)
    return feeds


def test_every_model_family_runs_on_cuda_and_agrees_with_cpu(models, tmp_path):
    cpu = SessionPool(Settings(execution_providers=("cpu",), cache_path=tmp_path))
    gpu = SessionPool(Settings(execution_providers=("cuda", "cpu"), cache_path=tmp_path))
    rng = np.random.default_rng(0)
    try:
        for path in sorted(models.glob("*.onnx")):
            on_gpu = gpu.get(path)
            assert on_gpu.get_providers()[0] == CUDA, path.name
            feeds = _feeds(on_gpu, rng)
            for want, got in zip(cpu.get(path).run(None, feeds), on_gpu.run(None, feeds)):
                assert want.shape == got.shape, path.name
                scale = max(float(np.abs(want).max()), 1.0)
                assert float(np.abs(want.astype(np.float64) - got).max()) <= 1e-3 * scale, path.name
        assert gpu.active_providers() == [CUDA]
    finally:
        cpu.close()
        gpu.close()


def _run(capsys, tmp_path: Path, providers: str, *extra: str) -> tuple[dict, np.ndarray]:
    """`ffb run` of the chain on one portrait with `providers` (as --execution-providers takes them), in an
    `env_with` tmp dir."""
    source, target = tmp_path / "source.png", tmp_path / "portrait.png"
    cv2.imwrite(str(source), cv2.flip(face_frame(), 1))
    cv2.imwrite(str(target), face_frame())
    out = tmp_path / f"out_{providers.replace(' ', '_')}"
    code = main(["run", "--json", "-q", *CHAIN, "--execution-providers", providers, "-s", str(source),
                 "-t", str(target), "-o", str(out), *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out), cv2.imread(str(out / "portrait.png"))


def test_run_with_the_processor_chain_on_cuda_gives_the_cpu_picture(models, env_with, capsys):
    tmp_path = env_with(models)
    on_cpu, want = _run(capsys, tmp_path, "cpu")
    on_gpu, got = _run(capsys, tmp_path, "cuda cpu")
    assert on_gpu["counts"]["done"] == 1
    assert on_gpu["providers"] == [CUDA], on_gpu  # the providers the sessions really ran on: CUDA alone
    diff = np.abs(want.astype(np.int16) - got.astype(np.int16))
    assert diff.max() <= 2, f"CUDA output differs from CPU by up to {diff.max()} grey levels"
    assert (diff > 0).mean() < 0.01


def test_detect_gpus_reports_the_gpu_and_a_loading_cuda_provider(capsys):
    assert main(["detect-gpus", "--json"]) == 0
    findings = json.loads(capsys.readouterr().out)
    assert findings["gpus"] and findings["gpus"][0]["memory_total_mib"] > 0
    assert CUDA in findings["providers"]["loadable"]
    assert findings["advice"].startswith("use --execution-providers 'cuda cpu'")


def test_metrics_file_carries_the_gpus_nvml_readings(models, env_with, capsys):
    pytest.importorskip("pynvml")
    tmp_path = env_with(models)
    metrics = tmp_path / "ffb.prom"
    _run(capsys, tmp_path, "cuda cpu", "--metrics-file", str(metrics))
    text = metrics.read_text()
    assert "ffb_gpu_memory_total_bytes{" in text and "ffb_gpu_utilization_ratio{" in text
    assert 'provider="CUDAExecutionProvider"' in text

"""A GPU provider that cannot load is dropped with one line saying what to install, and the run goes on on
what remains (issue 11.1: it used to crash every model call under the `moderate` VRAM strategy)."""
from __future__ import annotations

import threading

import cv2
import numpy as np
import pytest

from conftest import grace_hopper, make_clip
from facefusion_batch.concurrency import concurrency_of
from facefusion_batch.models import providers
from facefusion_batch.cli import main
from facefusion_batch.models.sessions import GuardedSession, SessionPool, ort, usable_settings
from facefusion_batch.settings import load_settings


def settings(**flags):
    return load_settings(None, {}, flags).settings


@pytest.fixture(scope="module")
def cuda_fails() -> str:
    """Why CUDA does not load here; the tests need a machine where it doesn't (like CI's)."""
    error = providers.provider_error(providers.CUDA, 0)
    if error is None:
        pytest.skip("CUDA loads on this machine")
    return error


def identity_model(tmp_path):
    path = tmp_path / "identity.onnx"
    path.write_bytes(providers._probe_model())
    return path


@pytest.mark.parametrize("strategy", ["moderate", "strict", "tolerant"])
def test_a_pool_asked_for_cuda_runs_on_cpu_under_every_memory_strategy(cuda_fails, tmp_path, strategy):
    pool = SessionPool(settings(execution_providers="cuda cpu", video_memory_strategy=strategy))
    session = GuardedSession(pool, identity_model(tmp_path), threading.Semaphore(1))
    [y] = session.run(["y"], {"x": np.array([2.5], np.float32)})
    assert y.tolist() == [2.5]
    assert session.get_providers() == ["CPUExecutionProvider"] and pool.active_providers() == ["CPUExecutionProvider"]


def test_usable_settings_drop_cuda_with_one_line_naming_the_fix(cuda_fails):
    usable, lines = usable_settings(settings(execution_providers="cuda cpu"))
    assert usable.execution_providers == ("cpu",)
    assert concurrency_of(usable).inference_slots == usable.execution_thread_count  # CPU concurrency, not one GPU slot
    [line] = lines
    assert line.startswith("cuda does not load") and line.endswith("running on cpu")
    if "cannot open shared object file" in cuda_fails:  # onnxruntime-gpu without its CUDA libraries
        assert f"pip install 'onnxruntime-gpu[cuda,cudnn]=={ort().__version__}'" in line
        assert "pip install -e '.[cuda]'" in line


def test_usable_settings_leave_loadable_providers_alone():
    cpu = settings(execution_providers="cpu")
    assert usable_settings(cpu) == (cpu, [])


def test_check_keeps_the_order_asked_and_cpu_last(monkeypatch):
    monkeypatch.setattr(providers, "provider_error", lambda provider, device: None)
    assert providers.check_providers(("tensorrt", "cuda", "cpu"), 0).kept == ("tensorrt", "cuda", "cpu")
    assert providers.check_providers(("cpu", "cuda"), 0).kept == ("cuda", "cpu")
    monkeypatch.setattr(providers, "provider_error", lambda provider, device: "no" if provider == providers.CUDA else None)
    check = providers.check_providers(("tensorrt", "cuda"), 1)
    assert check.kept == ("tensorrt", "cpu") and check.dropped == {"cuda": "no"}


@pytest.mark.parametrize("name, error, words", [
    ("cuda", "Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.13: cannot open "
             "shared object file: No such file or directory",
     ["libcublasLt.so.13 not found", "pip install 'onnxruntime-gpu[cuda,cudnn]==1.31.1'", "pip install -e '.[cuda]'"]),
    ("cuda", "Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open "
             "shared object file: No such file or directory",
     ["libcudnn.so.9 not found", "pip install 'onnxruntime-gpu[cuda,cudnn]==1.31.1'"]),
    ("tensorrt", "Failed to load library libonnxruntime_providers_tensorrt.so with error: libnvinfer.so.10: cannot "
                 "open shared object file: No such file or directory",
     ["libnvinfer.so.10 not found", "TensorRT", "LD_LIBRARY_PATH"]),
    ("cuda", providers.NOT_BUILT_IN, ["pip uninstall onnxruntime && pip install 'onnxruntime-gpu[cuda,cudnn]'"]),
    ("cuda", "CUDA failure 100: no CUDA-capable device is detected", ["no CUDA-capable device", "ffb detect-gpus"]),
])
def test_fix_for_names_what_is_missing_and_the_command(name, error, words):
    line = providers.fix_for(name, error, "1.31.1")
    assert "\n" not in line and line.startswith(f"{name} ")
    for word in words:
        assert word in line


def test_run_with_cuda_that_cannot_load_finishes_on_cpu(cuda_fails, offline_env, tmp_path, capfd):
    source = tmp_path / "hopper.jpg"
    cv2.imwrite(str(source), grace_hopper())
    clip = make_clip(tmp_path / "a.mp4", frames=6)
    capfd.readouterr()
    code = main(["run", "-s", str(source), "-t", str(clip), "-o", str(tmp_path / "out"),
                 "--execution-providers", "cuda cpu", "--video-memory-strategy", "moderate"])
    out, err = capfd.readouterr()
    assert code == 0, err
    about_cuda = [line for line in err.replace(str(tmp_path), "").splitlines() if "cuda" in line.lower()]
    assert len(about_cuda) == 1 and about_cuda[0].startswith("ffb: cuda does not load"), err
    assert "onnxruntime" not in err.replace("onnxruntime-gpu", "")  # none of its own log lines
    assert "Traceback" not in err
    assert main(["status", str(tmp_path / "out"), "--json"]) == 0
    assert '"status": "done"' in capfd.readouterr().out

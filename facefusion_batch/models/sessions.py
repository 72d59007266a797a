"""The one owner of ONNX Runtime sessions: created once per (file, providers, device) and shared by threads.

Session options, and why:
- `session.intra_op.allow_spinning = 0`: sessions alternate (detector, recogniser, swapper); spinning
  intra-op threads of one steal the cores of the next (measured: 170 ms vs 67 ms per cycle on 2 cores).
- intra-op threads = cores / inference slots, so concurrent calls don't oversubscribe the CPU.
- VRAM strategy: `strict` builds sessions without memory arenas and drops them after every target;
  `moderate` keeps sessions and lets the GPU arena shrink back after each call (ONNX Runtime's
  `memory.enable_memory_arena_shrinkage`); `tolerant` keeps sessions and arenas as they grow.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from facefusion_batch.errors import ModelError
from facefusion_batch.settings import Settings

def ort():
    """Import onnxruntime quietly (a CPU-only machine logs CUDA load errors otherwise)."""
    import onnxruntime

    onnxruntime.set_default_logger_severity(3)
    return onnxruntime


def provider_list(settings: Settings) -> list[Any]:
    """ONNX Runtime providers with options, from the settings, CPU always last as the fallback."""
    device = str(settings.execution_device_id)
    trt_cache = str(settings.cache_path / "tensorrt")
    arena = "kSameAsRequested" if settings.video_memory_strategy == "strict" else "kNextPowerOfTwo"
    providers: list[Any] = []
    for name in settings.execution_providers:
        if name == "cuda":
            providers.append(("CUDAExecutionProvider", {"device_id": device, "arena_extend_strategy": arena,
                                                        "cudnn_conv_algo_search": "DEFAULT"}))
        elif name == "tensorrt":
            providers.append(("TensorrtExecutionProvider", {
                "device_id": device, "trt_engine_cache_enable": True, "trt_engine_cache_path": trt_cache,
                "trt_timing_cache_enable": True, "trt_timing_cache_path": trt_cache,
                "trt_fp16_enable": settings.tensorrt_fp16,
                "trt_builder_optimization_level": 3}))
    providers.append("CPUExecutionProvider")
    return providers


class SessionPool:
    """Sessions keyed by (file, providers, device); thread-safe; load each model once per process."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._sessions: dict[tuple, Any] = {}
        self.loads = 0  # sessions created; the tests and the benchmark read it

    def get(self, path: Path) -> Any:
        key = (str(path), self._settings.execution_providers, self._settings.execution_device_id)
        session = self._sessions.get(key)
        if session is not None:
            return session
        with self._lock:
            if key not in self._sessions:
                self._sessions[key] = self._create(path)
                self.loads += 1
            return self._sessions[key]

    def _create(self, path: Path) -> Any:
        rt = ort()
        options = rt.SessionOptions()
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.intra_op_num_threads = max(1, (os.cpu_count() or 1) // self._settings.inference_slots())
        options.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_ALL
        if self._settings.video_memory_strategy == "strict":
            options.enable_cpu_mem_arena = False
        if "tensorrt" in self._settings.execution_providers:
            (self._settings.cache_path / "tensorrt").mkdir(parents=True, exist_ok=True)
        try:
            return rt.InferenceSession(str(path), sess_options=options, providers=provider_list(self._settings))
        except Exception as exc:  # onnxruntime raises its own untyped errors
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelError(f"{path}: can't load model ({first[:200]}); delete the file and download it "
                             "again with `ffb models download`") from None

    def active_providers(self) -> list[str]:
        """Providers the loaded sessions really run on (first of each session)."""
        return sorted({s.get_providers()[0] for s in self._sessions.values()})

    def run_options(self) -> Any:
        """Run options for model calls: under `moderate` on a GPU, shrink the arena after the call."""
        if self._settings.video_memory_strategy != "moderate" or not self._uses_gpu():
            return None
        options = ort().RunOptions()
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage",
                                     f"gpu:{self._settings.execution_device_id}")
        return options

    def _uses_gpu(self) -> bool:
        return any(p in ("cuda", "tensorrt") for p in self._settings.execution_providers)

    def after_target(self) -> None:
        """Apply the VRAM strategy between targets."""
        if self._settings.video_memory_strategy == "strict":
            with self._lock:
                self._sessions.clear()

    def close(self) -> None:
        with self._lock:
            self._sessions.clear()


class Counter:
    """A thread-safe count."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self, n: int = 1) -> None:
        with self._lock:
            self.value += n


class GuardedSession:
    """A model's session as adapters see it: fetched from the pool on use (so a pool emptied by the
    `strict` strategy reloads lazily), with `run` holding the accelerator semaphore."""

    def __init__(self, pool: SessionPool, path: Path, slots: threading.Semaphore) -> None:
        self._pool, self._path, self._slots = pool, path, slots
        self._run_options = pool.run_options()
        self.calls = Counter()

    def run(self, output_names: Any, feeds: dict[str, Any]) -> list[Any]:
        session = self._pool.get(self._path)
        self.calls.add()
        with self._slots:
            return session.run(output_names, feeds, self._run_options)

    def get_inputs(self) -> Any:
        return self._pool.get(self._path).get_inputs()

    def get_outputs(self) -> Any:
        return self._pool.get(self._path).get_outputs()

    def get_providers(self) -> list[str]:
        return self._pool.get(self._path).get_providers()

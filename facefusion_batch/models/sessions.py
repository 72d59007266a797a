"""The one owner of ONNX Runtime sessions: created once per (file, providers, device) and shared by threads.

Session options, and why:
- `session.intra_op.allow_spinning = 0`: sessions alternate (detector, recogniser, swapper); spinning
  intra-op threads of one steal the cores of the next (measured: 170 ms vs 67 ms per cycle on 2 cores).
- intra-op threads = cores / inference slots, so concurrent calls don't oversubscribe the CPU.
- VRAM strategy: `strict` builds sessions without memory arenas and drops them after every target;
  `moderate` keeps sessions and lets the GPU arena shrink back after each call (ONNX Runtime's
  `memory.enable_memory_arena_shrinkage`); `tolerant` keeps sessions and arenas as they grow.
- Providers: only those that really load here are passed (providers.check_providers tries each once), and
  options that only fit a GPU session follow the providers a session really got, never the settings: ONNX
  Runtime falls back to CPU quietly, and a GPU run option on a CPU session fails every call.
"""
from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from facefusion_batch.concurrency import concurrency_of
from facefusion_batch.errors import ModelError
from facefusion_batch.models.providers import check_providers, fix_for, ort  # ort: imported from here by others
from facefusion_batch.settings import Settings
from facefusion_batch.timing import Timings, timed


def usable_settings(settings: Settings) -> tuple[Settings, list[str]]:
    """The settings with only the execution providers that load here, and one line for each one dropped
    (what is missing and how to install it)."""
    import dataclasses

    check = check_providers(settings.execution_providers, settings.execution_device_id)
    if not check.dropped:
        return settings, []
    version = ort().__version__
    lines = [f"{fix_for(name, error, version)}; running on {' '.join(check.kept)}"
             for name, error in check.dropped.items()]
    return dataclasses.replace(settings, execution_providers=check.kept), lines


def provider_list(settings: Settings, names: Optional[Sequence[str]] = None) -> list[Any]:
    """ONNX Runtime providers with options for `names` (default: the settings' providers), CPU always last as
    the fallback."""
    device = str(settings.execution_device_id)
    trt_cache = str(settings.cache_path / "tensorrt")
    arena = "kSameAsRequested" if settings.video_memory_strategy == "strict" else "kNextPowerOfTwo"
    providers: list[Any] = []
    for name in settings.execution_providers if names is None else names:
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
        self._sessions: dict[tuple, tuple[Any, Any]] = {}  # key -> (session, its run options)
        self._providers: Optional[list[Any]] = None  # those of the settings that load here, found on first use
        self.loads = 0  # sessions created; the tests and the benchmark read it
        self._used: set[str] = set()  # providers sessions ran on, kept when `strict` frees the sessions
        self.timings: Optional[Timings] = None  # set to time every inference call, by model name (metrics)
        # set to add each call's CPU time on its calling thread, by model name: all of a call's compute when it
        # has one intra-op thread, and unlike wall time not inflated by other work sharing the cores
        self.cpu_timings: Optional[Timings] = None

    def get(self, path: Path) -> Any:
        return self.entry(path)[0]

    def entry(self, path: Path) -> tuple[Any, Any]:
        """The model's session and the run options that fit the providers it really got."""
        key = (str(path), self._settings.execution_providers, self._settings.execution_device_id)
        entry = self._sessions.get(key)
        if entry is not None:
            return entry
        with self._lock:
            if key not in self._sessions:
                session = self._create(path)
                self._sessions[key] = (session, self._run_options(session))
                self._used.add(session.get_providers()[0])
                self.loads += 1
            return self._sessions[key]

    def _usable_providers(self) -> list[Any]:
        if self._providers is None:
            check = check_providers(self._settings.execution_providers, self._settings.execution_device_id)
            self._providers = provider_list(self._settings, check.kept)
        return self._providers

    def _create(self, path: Path) -> Any:
        rt = ort()
        options = rt.SessionOptions()
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.intra_op_num_threads = concurrency_of(self._settings).intra_op_threads
        options.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_ALL
        if self._settings.video_memory_strategy == "strict":
            options.enable_cpu_mem_arena = False
        providers = self._usable_providers()
        if any(p[0] == "TensorrtExecutionProvider" for p in providers if isinstance(p, tuple)):
            with contextlib.suppress(OSError):  # a read-only cache_path: TensorRT rebuilds its engines
                (self._settings.cache_path / "tensorrt").mkdir(parents=True, exist_ok=True)
        try:
            return rt.InferenceSession(str(path), sess_options=options, providers=providers)
        except Exception as exc:  # onnxruntime raises its own untyped errors
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelError(f"{path}: can't load model ({first[:200]}); delete the file and download it "
                             "again with `ffb models download`") from None

    def active_providers(self) -> list[str]:
        """Providers the sessions of this pool really ran on (first of each session), also those that the
        `strict` strategy freed after a target."""
        with self._lock:
            return sorted(self._used)  # every session's provider joins `_used` when the session is made

    def _run_options(self, session: Any) -> Any:
        """Run options for the session's calls: under `moderate`, when the session really got CUDA (whose
        arena is the one to shrink), shrink the GPU arena after each call."""
        if self._settings.video_memory_strategy != "moderate" or "CUDAExecutionProvider" not in \
                session.get_providers():
            return None
        options = ort().RunOptions()
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage",
                                     f"gpu:{self._settings.execution_device_id}")
        return options

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

    def __init__(self, pool: SessionPool, path: Path, slots: threading.Semaphore, name: str | None = None) -> None:
        """`name`: the model's name in timings (default the file's stem; a patched copy passes the original's)."""
        self._pool, self._path, self._slots = pool, path, slots
        self.name = name or path.stem
        self.calls = Counter()

    def run(self, output_names: Any, feeds: dict[str, Any]) -> list[Any]:
        session, run_options = self._pool.entry(self._path)
        self.calls.add()
        with self._slots, timed(self._pool.timings, self.name):
            cpu = self._pool.cpu_timings
            if cpu is None:
                return session.run(output_names, feeds, run_options)
            start = time.thread_time()
            try:
                return session.run(output_names, feeds, run_options)
            finally:
                cpu.add(self.name, time.thread_time() - start)

    def get_inputs(self) -> Any:
        return self._pool.get(self._path).get_inputs()

    def get_outputs(self) -> Any:
        return self._pool.get(self._path).get_outputs()

    def get_providers(self) -> list[str]:
        return self._pool.get(self._path).get_providers()

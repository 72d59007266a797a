"""The one owner of ONNX Runtime sessions: created once per (file, providers, device) and shared by threads.

Session options, and why:
- `session.intra_op.allow_spinning = 0`: sessions alternate (detector, recogniser, swapper); spinning
  intra-op threads of one steal the cores of the next (measured: 170 ms vs 67 ms per cycle on 2 cores).
- intra-op threads = cores / inference slots, so concurrent calls don't oversubscribe the CPU.
- VRAM strategy: `strict` builds sessions without memory arenas and drops them after every target;
  `moderate` keeps sessions and lets the GPU arena shrink back after each call (ONNX Runtime's
  `memory.enable_memory_arena_shrinkage`); `tolerant` keeps sessions and arenas as they grow.
- TensorRT: engines and timing cache under `cache_path/tensorrt`, one folder per model checksum and per
  ONNX Runtime/TensorRT version (models/tensorrt_cache.py), so they are built once and never reused stale.
- On CUDA/TensorRT every session is warmed up with one call on zeros when it is made (before the first
  frame: cuDNN's algorithm search, TensorRT's engine build or load, the arena's first blocks), and every
  model call goes through IO binding (models/binding.py), which also lets the device path feed crops that
  already live on the GPU.
- Providers: only those that really load here are passed (providers.check_providers tries each once), and
  options that only fit a GPU session follow the providers a session really got, never the settings: ONNX
  Runtime falls back to CPU quietly, and a GPU run option on a CPU session fails every call.
"""
from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from facefusion_batch.concurrency import concurrency_of
from facefusion_batch.errors import ModelError
from facefusion_batch.models import tensorrt_cache
from facefusion_batch.models.binding import GPU_PROVIDERS, Device, device_of, run_bound, run_to_host
from facefusion_batch.models.providers import check_providers, fix_for, ort  # ort: imported from here by others
from facefusion_batch.settings import Settings
from facefusion_batch.timing import Timings, timed


# The largest batch a TensorRT engine is built for: a frame's faces times their pixel-boost tiles, or the
# crops micro-batching merges (8 by default on a GPU).
TENSORRT_MAX_BATCH = 64


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


def provider_list(settings: Settings, names: Optional[Sequence[str]] = None, model: Optional[Path] = None,
                  checksum: str = "unknown") -> list[Any]:
    """ONNX Runtime providers with options for `names` (default: the settings' providers), CPU always last as
    the fallback. TensorRT's engine folder is keyed by `model`'s `checksum` and the runtime versions."""
    device = str(settings.execution_device_id)
    arena = "kSameAsRequested" if settings.video_memory_strategy == "strict" else "kNextPowerOfTwo"
    providers: list[Any] = []
    for name in settings.execution_providers if names is None else names:
        if name == "cuda":
            providers.append(("CUDAExecutionProvider", {"device_id": device, "arena_extend_strategy": arena,
                                                        "cudnn_conv_algo_search": "DEFAULT"}))
        elif name == "tensorrt":
            providers.append(("TensorrtExecutionProvider", dict(tensorrt_cache.tensorrt_options(
                settings.cache_path, model or Path("model.onnx"), checksum, ort().__version__,
                tensorrt_cache.tensorrt_version(), settings.execution_device_id, settings.tensorrt_fp16))))
    providers.append("CPUExecutionProvider")
    return providers


def warm_up(session: Any, device: Device) -> bool:
    """One call on zeros of the model's declared input shapes (a symbolic batch axis as 1), so the first
    frame doesn't pay for the provider's first-call setup. False (nothing run) when another axis is
    symbolic: the size ffb feeds is not known here, and a guess would make TensorRT build a useless engine."""
    feeds = {}
    types = {}
    for item in session.get_inputs():
        shape = [1 if index == 0 and not isinstance(dim, int) else dim for index, dim in enumerate(item.shape)]
        if any(not isinstance(dim, int) or dim < 0 for dim in shape):
            return False
        dtype = {"tensor(float16)": np.float16, "tensor(double)": np.float64, "tensor(int64)": np.int64}.get(
            item.type, np.float32)
        feeds[item.name], types[item.name] = np.zeros(shape, dtype), dtype
    run_bound(session, feeds, device, types=types)
    return True


# On the CPU a model costs more per image in a large batch than in a small one (its activations outgrow the
# caches), with the same outputs: BlazeFace short-range 1.5 ms an image in batches of 4, 2.2-2.6 in one of 44 (the
# sweep's edge ring), full-range 4.9 against 6.4-7.4 in 48, the face mesh 5.5 against 6.0-6.2 (one intra-op thread,
# this 2-core machine). Larger batches for a CPU session are run in pieces of this many.
CPU_BATCH = 4


def feed_rows(feeds: dict[str, Any]) -> Optional[int]:
    """The rows of `feeds` where every feed is an array with the same number of them, else None."""
    sizes = {value.shape[0] if isinstance(value, np.ndarray) and value.ndim else None for value in feeds.values()}
    return None if len(sizes) != 1 or None in sizes else sizes.pop()


def has_batch_axis(session: Any) -> bool:
    """Whether every input and output of `session` has the same named (dynamic) first axis: its batch, which can
    be run in pieces."""
    axes = {arg.shape[0] if arg.shape else None for arg in (*session.get_inputs(), *session.get_outputs())}
    return len(axes) == 1 and isinstance(next(iter(axes)), str)


class SessionPool:
    """Sessions keyed by (file, providers, device); thread-safe; load each model once per process."""

    def __init__(self, settings: Settings, io_binding: Optional[bool] = None,
                 warm: Optional[bool] = None, fp16: Optional[bool] = None) -> None:
        """`io_binding`/`warm`: bind every call / warm every session up; None: only sessions on a GPU.
        `fp16`: offer fp16 copies (`half`); None: with `cuda_fp16` on CUDA without TensorRT."""
        self._settings = settings
        self._io_binding, self._warm, self._fp16 = io_binding, warm, fp16
        self.fp16_notes: list[str] = []  # one line per model whose fp16 copy was weighed (used or not)
        self._half_lock = threading.Lock()
        self.warmed: list[str] = []  # model files warmed up, in order (the tests and --verbose read it)
        self._lock = threading.Lock()
        self._sessions: dict[tuple, tuple[Any, Any]] = {}  # key -> (session, its run options)
        self._kept: Optional[tuple[str, ...]] = None  # the settings' providers that load here, found on first use
        self._graphs: dict[str, tuple[Any, Device]] = {}  # helper graphs by name: session, device
        self._bound: dict[int, Device] = {}  # id(session) -> its device, for sessions called through IO binding
        self.loads = 0  # sessions created; the tests and the benchmark read it
        self._used: set[str] = set()  # providers sessions ran on, kept when `strict` frees the sessions
        self.timings: Optional[Timings] = None  # set to time every inference call, by model name (metrics)
        # set to add each call's CPU time on its calling thread, by model name: all of a call's compute when it
        # has one intra-op thread, and unlike wall time not inflated by other work sharing the cores
        self.cpu_timings: Optional[Timings] = None
        # set to time the device path's helper graphs (warp, paste, fold, masks), by graph kind
        self.face_work_timings: Optional[Timings] = None

    @property
    def device_id(self) -> int:
        return self._settings.execution_device_id

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
                on_gpu = session.get_providers()[0] in GPU_PROVIDERS
                device = device_of(session, self._settings.execution_device_id)
                if self._io_binding or (self._io_binding is None and on_gpu):
                    self._bound[id(session)] = device
                if (self._warm or (self._warm is None and on_gpu)) and warm_up(session, device):
                    self.warmed.append(str(path))
                self._sessions[key] = (session, self._run_options(session))
                self._used.add(session.get_providers()[0])
                self.loads += 1
            return self._sessions[key]

    def half(self, path: Path) -> Path:
        """The file to load for a processor model: its fp16 copy where one is wanted and stays within
        tolerance (models/fp16.py; made and checked once, cached under cache_path), else `path`."""
        if self._fp16 is None:
            kept = self._kept_providers()
            self._fp16 = self._settings.cuda_fp16 and "cuda" in kept and "tensorrt" not in kept
        if not self._fp16:
            return path
        from facefusion_batch.models import fp16
        from facefusion_batch.models.store import ChecksumMemo

        with self._half_lock:  # one conversion per file, even when frame threads open models together
            checksum = ChecksumMemo(self._settings.cache_path / "checksums.json").get(Path(path), "crc32")
            copy, verdict = fp16.verified_copy(Path(path), self._settings.cache_path, checksum,
                                               ort().__version__, self._create)
            self.fp16_notes.append(verdict)
        return copy or path

    def _kept_providers(self) -> tuple[str, ...]:
        if self._kept is None:
            self._kept = check_providers(self._settings.execution_providers,
                                         self._settings.execution_device_id).kept
        return self._kept

    def run(self, session: Any, feeds: dict[str, Any], output_names: Any = None, run_options: Any = None) -> list[Any]:
        """`session.run` for one of this pool's sessions: through IO binding where the pool binds it (GPU), else
        in pieces of at most CPU_BATCH images (or the settings' batch size, if larger) where the model has a
        batch axis."""
        device = self.bound_device(session)
        if device is not None:
            return run_to_host(session, feeds, device, run_options, output_names)
        piece = max(CPU_BATCH, concurrency_of(self._settings).micro_batch)
        rows = feed_rows(feeds)
        if rows is None or rows <= piece or not has_batch_axis(session):  # the model's axes asked only when it matters
            return session.run(output_names, feeds, run_options)
        parts = [session.run(output_names, {name: value[start:start + piece] for name, value in feeds.items()},
                             run_options) for start in range(0, rows, piece)]
        return [np.concatenate(outputs) for outputs in zip(*parts)]

    def bound_device(self, session: Any) -> Optional[Device]:
        """The device whose IO binding `session`'s calls use; None for plain `session.run` calls."""
        return self._bound.get(id(session))

    def graph(self, name: str, model: bytes) -> Callable[[dict[str, Any]], list[Any]]:
        """A runner of one of ffb's helper graphs (processors/device_graphs.py) on the device of this pool's
        models, through IO binding, its outputs left there. CUDA where the models get CUDA or TensorRT, never
        TensorRT itself: these graphs see a new shape with every face's box, and TensorRT would build an
        engine for each."""
        with self._lock:
            if name not in self._graphs:
                kept = self._kept_providers()
                names = [n for n in kept if n != "tensorrt"]
                if "tensorrt" in kept and "cuda" not in names:
                    names.insert(0, "cuda")  # TensorRT loads only where CUDA does
                session = self._create(model, provider_list(self._settings, names))
                self._graphs[name] = (session, device_of(session, self._settings.execution_device_id))
            session, device = self._graphs[name]

        def run(feeds: dict[str, Any]) -> list[Any]:
            with timed(self.face_work_timings, name.split("-")[0]):  # not model time: kept apart
                return run_bound(session, feeds, device)
        return run

    def _usable_providers(self, path: Path) -> list[Any]:
        self._kept_providers()
        if "tensorrt" not in self._kept:
            return provider_list(self._settings, self._kept, Path(path))
        from facefusion_batch.models.store import ChecksumMemo

        checksum = ChecksumMemo(self._settings.cache_path / "checksums.json").get(Path(path), "crc32")
        providers = provider_list(self._settings, self._kept, Path(path), checksum)
        batch = concurrency_of(self._settings).micro_batch
        profiles = tensorrt_cache.profile_options(tensorrt_cache.model_inputs(Path(path)), max(batch, 8),
                                                  TENSORRT_MAX_BATCH)
        return [(p[0], {**p[1], **profiles}) if isinstance(p, tuple) and p[0] == "TensorrtExecutionProvider"
                else p for p in providers]

    def _create(self, path: Path | bytes, providers: Optional[list[Any]] = None) -> Any:
        rt = ort()
        options = rt.SessionOptions()
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.intra_op_num_threads = concurrency_of(self._settings).intra_op_threads
        options.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_ALL
        if self._settings.video_memory_strategy == "strict":
            options.enable_cpu_mem_arena = False
        if providers is None:
            providers = self._usable_providers(path)
        for name, provider_options in (p for p in providers if isinstance(p, tuple)):
            if name == "TensorrtExecutionProvider":
                with contextlib.suppress(OSError):  # a read-only cache_path: TensorRT rebuilds its engines
                    for key in ("trt_engine_cache_path", "trt_timing_cache_path"):
                        Path(provider_options[key]).mkdir(parents=True, exist_ok=True)
        try:
            return rt.InferenceSession(path if isinstance(path, bytes) else str(path), sess_options=options,
                                       providers=providers)
        except Exception as exc:  # onnxruntime raises its own untyped errors
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            what = "ffb's helper graph" if isinstance(path, bytes) else path
            raise ModelError(f"{what}: can't load model ({first[:200]}); delete the file and download it "
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
                self._bound.clear()

    def close(self) -> None:
        with self._lock:
            self._sessions.clear()
            self._bound.clear()


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
            start = time.thread_time()
            try:
                return self._pool.run(session, feeds, output_names, run_options)
            finally:
                if cpu is not None:
                    cpu.add(self.name, time.thread_time() - start)

    def run_on_device(self, feeds: dict[str, Any]) -> list[Any]:
        """Every output as an OrtValue left on the session's device (IO binding; numpy or OrtValue feeds):
        the device path's model call."""
        session, run_options = self._pool.entry(self._path)
        device = self._pool.bound_device(session) or device_of(session, self._pool.device_id)
        self.calls.add()
        with self._slots, timed(self._pool.timings, self.name):
            cpu = self._pool.cpu_timings
            start = time.thread_time()
            try:
                return run_bound(session, feeds, device, run_options)
            finally:
                if cpu is not None:
                    cpu.add(self.name, time.thread_time() - start)

    def device(self) -> Device:
        session = self._pool.get(self._path)
        return self._pool.bound_device(session) or device_of(session, self._pool.device_id)

    def get_inputs(self) -> Any:
        return self._pool.get(self._path).get_inputs()

    def get_outputs(self) -> Any:
        return self._pool.get(self._path).get_outputs()

    def get_providers(self) -> list[str]:
        return self._pool.get(self._path).get_providers()

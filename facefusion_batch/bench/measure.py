"""Resource probes for a benchmark run: peak temp-dir size (sampled) and peak resident memory."""
from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any


def tree_size(directory: Path) -> int:
    """Bytes in the files under `directory`; files that vanish while walking count as gone."""
    total = 0
    stack = [str(directory)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total


class DiskSampler:
    """Polls the size of a directory every `interval` seconds on a thread; `peak` is the largest seen, `cpu` the CPU
    seconds its thread has taken so far (walking a run's temp tree 50 times a second is not ffb's work)."""

    def __init__(self, directory: Path, interval: float = 0.02) -> None:
        self.directory, self.interval, self.peak, self.cpu = directory, interval, 0, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ffb-disk-sampler", daemon=True)

    def _run(self) -> None:
        started = time.thread_time()
        while True:
            self.peak = max(self.peak, tree_size(self.directory))
            self.cpu = time.thread_time() - started
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> DiskSampler:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()


def peak_rss_bytes() -> int | None:
    """Peak resident memory of this process so far; None where unknown.

    Not of its ffmpeg children: their ru_maxrss counts this process's pages copied before exec.
    """
    try:
        import resource
    except ImportError:  # Windows
        return _windows_peak()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)  # bytes on macOS, KiB elsewhere


def _windows_peak() -> int | None:
    import ctypes
    from ctypes import wintypes

    class Counters(ctypes.Structure):
        _fields_ = [("cb", wintypes.DWORD), ("PageFaultCount", wintypes.DWORD),
                    ("PeakWorkingSetSize", ctypes.c_size_t), ("WorkingSetSize", ctypes.c_size_t),
                    ("QuotaPeakPagedPoolUsage", ctypes.c_size_t), ("QuotaPagedPoolUsage", ctypes.c_size_t),
                    ("QuotaPeakNonPagedPoolUsage", ctypes.c_size_t), ("QuotaNonPagedPoolUsage", ctypes.c_size_t),
                    ("PagefileUsage", ctypes.c_size_t), ("PeakPagefileUsage", ctypes.c_size_t)]

    counters = Counters()
    counters.cb = ctypes.sizeof(counters)
    windll = ctypes.windll  # type: ignore[attr-defined]
    if not windll.psapi.GetProcessMemoryInfo(windll.kernel32.GetCurrentProcess(), ctypes.byref(counters), counters.cb):
        return None
    return int(counters.PeakWorkingSetSize)


def cpu_seconds() -> tuple[float, float] | None:
    """(this process, its finished children) CPU seconds, user + system; None where unknown."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


class GpuSampler:
    """Samples NVML every `interval` seconds on a thread: mean utilisation and peak memory in use of the
    devices `indices`. `reason` says why there are no figures (no nvidia-ml-py, no driver or GPU); `cpu` is the
    CPU seconds its thread has taken so far."""

    def __init__(self, indices: tuple[int, ...], interval: float = 0.1) -> None:
        self.indices, self.interval, self.cpu = indices, interval, 0.0
        self.busy: list[int] = []
        self.peak_bytes = 0
        self.reason: str | None = None
        self._nvml: Any = None
        self._handles: list[Any] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ffb-gpu-sampler", daemon=True)

    def _open(self) -> None:
        try:
            import pynvml
        except ImportError:
            self.reason = "nvidia-ml-py is not installed (pip install nvidia-ml-py)"
            return
        try:
            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in self.indices if i < count]
        except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, _DriverNotLoaded, ...
            self.reason = f"NVML does not answer here (no NVIDIA driver or GPU: {type(exc).__name__})"
            return
        if not self._handles:
            self.reason = f"NVML lists no GPU of execution_device_ids {' '.join(map(str, self.indices))}"
            pynvml.nvmlShutdown()
            return
        self._nvml = pynvml

    def _run(self) -> None:
        nvml, started = self._nvml, time.thread_time()
        while not self._stop.wait(self.interval):
            try:
                self.busy.append(max(nvml.nvmlDeviceGetUtilizationRates(h).gpu for h in self._handles))
                self.peak_bytes = max(self.peak_bytes, sum(nvml.nvmlDeviceGetMemoryInfo(h).used for h in self._handles))
            except Exception:  # noqa: BLE001 - a reading NVML refuses is left out
                continue
            finally:
                self.cpu = time.thread_time() - started

    def figures(self) -> dict[str, Any]:
        """{"gpu_busy_percent", "gpu_memory_mb"} (None each without NVML) and "gpu_reason" (None with it)."""
        if self.reason is not None or not self.busy:
            return {"gpu_busy_percent": None, "gpu_memory_mb": None,
                    "gpu_reason": self.reason or "NVML gave no reading during the run"}
        return {"gpu_busy_percent": sum(self.busy) / len(self.busy), "gpu_memory_mb": self.peak_bytes / 1e6,
                "gpu_reason": None}

    def __enter__(self) -> GpuSampler:
        self._open()
        if self._nvml is not None:
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._nvml is not None:
            self._stop.set()
            self._thread.join()
            self._nvml.nvmlShutdown()

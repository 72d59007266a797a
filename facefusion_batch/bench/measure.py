"""Resource probes for a benchmark run: peak temp-dir size (sampled) and peak resident memory."""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from types import TracebackType


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
    """Polls the size of a directory every `interval` seconds on a thread; `peak` is the largest seen."""

    def __init__(self, directory: Path, interval: float = 0.02) -> None:
        self.directory, self.interval, self.peak = directory, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ffb-disk-sampler", daemon=True)

    def _run(self) -> None:
        while True:
            self.peak = max(self.peak, tree_size(self.directory))
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

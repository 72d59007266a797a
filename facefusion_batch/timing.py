"""Stage timings: seconds and counts per stage name, accumulated from any thread.

A `Timings` is passed explicitly to whatever should be measured (no process-wide state). Code that may run
without one calls `timed(timings, name)`, which costs one comparison when `timings` is None. A `listener`
sees every addition as it happens (the metrics' histograms are fed this way).
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, ContextManager, Iterable, Iterator, Optional, TypeVar

T = TypeVar("T")
Listener = Callable[[str, float, int], None]  # (name, seconds, count) of one addition
_IDLE = contextlib.nullcontext()


class Timings:
    """Thread-safe totals of seconds and counts per stage name, and how many `measure` blocks of each name
    are running now."""

    def __init__(self, listener: Optional[Listener] = None) -> None:
        self._lock = threading.Lock()
        self._seconds: dict[str, float] = {}
        self._counts: dict[str, int] = {}
        self._active: dict[str, int] = {}
        self._listener = listener

    def add(self, name: str, seconds: float, count: int = 1) -> None:
        with self._lock:
            self._seconds[name] = self._seconds.get(name, 0.0) + seconds
            self._counts[name] = self._counts.get(name, 0) + count
        if self._listener is not None:
            self._listener(name, seconds, count)

    def count(self, name: str, n: int) -> None:
        """Count `n` events that take no time of their own (faces swapped in a frame)."""
        self.add(name, 0.0, n)

    def active(self, name: str) -> int:
        """How many `measure(name)` blocks are running now (frames in the frame processor)."""
        return self._active.get(name, 0)

    def measure(self, name: str) -> ContextManager[None]:
        """Context manager adding the time spent inside it to `name` (one count)."""
        return _Measure(self, name)

    def snapshot(self) -> dict[str, dict[str, float]]:
        """{stage: {"seconds": total, "count": n}} at this moment."""
        with self._lock:
            return {name: {"seconds": seconds, "count": self._counts[name]}
                    for name, seconds in self._seconds.items()}


class _Measure:
    __slots__ = ("_timings", "_name", "_start")

    def __init__(self, timings: Timings, name: str) -> None:
        self._timings, self._name = timings, name

    def __enter__(self) -> None:
        timings, name = self._timings, self._name
        with timings._lock:
            timings._active[name] = timings._active.get(name, 0) + 1
        self._start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        seconds = time.perf_counter() - self._start
        timings, name = self._timings, self._name
        with timings._lock:
            timings._seconds[name] = timings._seconds.get(name, 0.0) + seconds
            timings._counts[name] = timings._counts.get(name, 0) + 1
            timings._active[name] -= 1
        if timings._listener is not None:
            timings._listener(name, seconds, 1)


def timed(timings: Timings | None, name: str) -> ContextManager[None]:
    """`timings.measure(name)`, or a shared no-op when there is nothing to measure into."""
    return _IDLE if timings is None else timings.measure(name)


def timed_iter(items: Iterable[T], timings: Timings | None, name: str) -> Iterable[T]:
    """`items`, with the time each next() takes added to `name`; `items` itself when `timings` is None."""
    if timings is None:
        return items
    return _timed_iter(iter(items), timings, name)


def _timed_iter(items: Iterator[T], timings: Timings, name: str) -> Iterator[T]:
    while True:
        start = time.perf_counter()
        try:
            item = next(items)
        except StopIteration:
            timings.add(name, time.perf_counter() - start, count=0)
            return
        timings.add(name, time.perf_counter() - start)
        yield item


def delta(after: dict[str, dict[str, float]], before: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per-stage difference of two snapshots (what happened between them)."""
    out = {}
    for name, now in after.items():
        then = before.get(name, {"seconds": 0.0, "count": 0})
        out[name] = {"seconds": now["seconds"] - then["seconds"], "count": now["count"] - then["count"]}
    return out

"""Stage timings: seconds and counts per stage name, accumulated from any thread.

A `Timings` is passed explicitly to whatever should be measured (no process-wide state). Code that may run
without one calls `timed(timings, name)`, which costs one comparison when `timings` is None.
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import ContextManager, Iterable, Iterator, TypeVar

T = TypeVar("T")
_IDLE = contextlib.nullcontext()


class Timings:
    """Thread-safe totals of seconds and counts per stage name."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds: dict[str, float] = {}
        self._counts: dict[str, int] = {}

    def add(self, name: str, seconds: float, count: int = 1) -> None:
        with self._lock:
            self._seconds[name] = self._seconds.get(name, 0.0) + seconds
            self._counts[name] = self._counts.get(name, 0) + count

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
        self._start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self._timings.add(self._name, time.perf_counter() - self._start)


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

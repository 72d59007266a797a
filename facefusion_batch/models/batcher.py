"""Micro-batching: work items from all worker threads are gathered into one model call.

The first item waits at most `max_wait` seconds for others. A batch goes at once when it is full, or when it
holds as many items as there are producer threads: each producer waits for its own result, so none of them
can add more and waiting longer would only idle. One thread owns the calls, so a model with a dynamic batch
axis sees fewer, larger calls (less per-call overhead, better accelerator use).
"""
from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future
from typing import Callable, Generic, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")
_STOP = object()


class MicroBatcher(Generic[T, R]):
    def __init__(self, fn: Callable[[list[T]], Sequence[R]], max_batch: int, max_wait: float,
                 name: str = "ffb-batcher", producers: int | None = None) -> None:
        self._fn, self._max_wait = fn, max_wait
        self._max_batch = max_batch
        self._enough = min(max_batch, producers) if producers else max_batch
        self._queue: queue.Queue = queue.Queue()
        self.calls = 0
        self.items = 0
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, item: T) -> Future:
        future: Future = Future()
        self._queue.put((item, future))
        return future

    def __call__(self, item: T) -> R:
        return self.submit(item).result()

    def map(self, items: Sequence[T]) -> list[R]:
        """Submit several items at once (e.g. all faces of a frame) and wait for all."""
        futures = [self.submit(item) for item in items]
        return [f.result() for f in futures]

    def close(self) -> None:
        """Stop the batching thread once the items already queued are done; safe to call more than once."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout=5)

    def __enter__(self) -> MicroBatcher[T, R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is _STOP:
                return
            batch = [first]
            deadline = time.monotonic() + self._max_wait
            stop = False
            while len(batch) < self._max_batch:
                try:
                    wait = 0.0 if len(batch) >= self._enough else max(0.0, deadline - time.monotonic())
                    entry = self._queue.get(timeout=wait) if wait else self._queue.get_nowait()
                except queue.Empty:
                    break
                if entry is _STOP:
                    stop = True
                    break
                batch.append(entry)
            self._run(batch)
            if stop:
                return

    def _run(self, batch: list[tuple[T, Future]]) -> None:
        self.calls += 1
        self.items += len(batch)
        try:
            results = self._fn([item for item, _ in batch])
        except BaseException as exc:  # every waiting worker sees the failure
            for _, future in batch:
                future.set_exception(exc)
            return
        for (_, future), result in zip(batch, results):
            future.set_result(result)

    @property
    def mean_batch(self) -> float:
        return self.items / self.calls if self.calls else 0.0

"""Frame flow: decoded frames run ahead on a reader thread, optionally spooled through the temp dir, into an
order-preserving executor with a bounded number of frames in flight."""
from __future__ import annotations

import collections
import queue
import threading
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Callable, Iterator, Literal, TypeVar, Union

import cv2
import numpy as np

from facefusion_batch.errors import MediaError
from facefusion_batch.pipeline.analysis import thumbnail
from facefusion_batch.timing import Timings, timed

T = TypeVar("T")
Item = Union[np.ndarray, Path]
_DONE = object()


class Spool:
    """Runs the frame source on its own thread, ahead of processing by at most `ahead` frames.

    Yields (payload, thumbnail): `memory` passes arrays; `temp` writes each frame to the temp dir (so at
    most `ahead` frames sit on disk) and passes its path; the consumer deletes the file once the frame is
    processed. The thumbnail (for motion checks) is made here, off the dispatching thread. `on_end` is
    called on the reader thread once `frames` is exhausted (not when it fails or the spool is closed).
    """

    def __init__(self, frames: Iterator[np.ndarray], transport: Literal["memory", "temp"], directory: Path,
                 frame_format: str, ahead: int, timings: Timings | None = None,
                 on_end: Callable[[], None] | None = None) -> None:
        self._frames, self._transport, self._timings, self._on_end = frames, transport, timings, on_end
        self._directory, self._format = directory, frame_format
        self._queue: queue.Queue = queue.Queue(maxsize=ahead)
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="ffb-reader", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for index, frame in enumerate(self._frames):
                with timed(self._timings, "decode"):
                    thumb = thumbnail(frame)
                    item: Item = frame
                    if self._transport == "temp":
                        item = self._directory / f"{index:08d}.{self._format}"
                        write_frame(item, frame)
                if not self._put((item, thumb)):
                    return
            if self._on_end is not None:
                self._on_end()
        except BaseException as exc:  # handed to the consumer thread
            self._error = exc
        self._put(_DONE)

    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Iterator[tuple[Item, np.ndarray]]:
        while True:
            item = self._queue.get()
            if item is _DONE:
                if self._error is not None:
                    raise self._error
                return
            yield item

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def write_frame(path: Path, frame: np.ndarray) -> None:
    """Write a spooled frame; a full disk raises OSError(ENOSPC) naming the file, like any write."""
    ok, encoded = cv2.imencode(path.suffix, frame)
    if not ok:
        raise MediaError(f"{path}: can't encode extracted frame as {path.suffix}")
    path.write_bytes(encoded)


def load(item: Item) -> np.ndarray:
    """The frame behind a spool item; a spooled file is removed once read."""
    if isinstance(item, np.ndarray):
        return item
    frame = cv2.imread(str(item), cv2.IMREAD_COLOR)
    if frame is None:
        raise MediaError(f"{item}: extracted frame is unreadable")
    item.unlink(missing_ok=True)
    return frame


def ordered_map(executor: Executor, fn: Callable[..., T], items: Iterator[tuple], in_flight: int
                ) -> Iterator[T]:
    """Apply `fn(*item)` on the executor, yielding results in input order, at most `in_flight` pending."""
    pending: collections.deque[Future] = collections.deque()
    try:
        for item in items:
            pending.append(executor.submit(fn, *item))
            if len(pending) >= in_flight:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()

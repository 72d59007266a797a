"""Frame flow: decoded frames run ahead on a reader thread, optionally spooled through the temp dir, into an
order-preserving executor with a bounded number of frames in flight."""
from __future__ import annotations

import collections
import queue
import struct
import threading
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Callable, Iterator, Literal, TypeVar, Union

import cv2
import numpy as np

from facefusion_batch.errors import MediaError
from facefusion_batch.workflow.analysis import thumbnail
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
    header = bmp_header(frame) if path.suffix.lower() == ".bmp" else None
    if header is not None:
        # the frame's own bytes after a top-down BMP header: no encoder pass, no flipped copy
        with open(path, "wb") as file:
            file.write(header)
            file.write(memoryview(np.ascontiguousarray(frame)).cast("B"))
        return
    ok, encoded = cv2.imencode(path.suffix, frame)
    if not ok:
        raise MediaError(f"{path}: can't encode extracted frame as {path.suffix}")
    path.write_bytes(encoded)


def _read_top_down_bmp(path: Path) -> np.ndarray | None:
    """A BMP as `write_frame` writes it, read straight into an array (None for any other file: OpenCV reads
    those)."""
    try:
        with open(path, "rb") as file:
            header = file.read(54)
            if len(header) < 54 or header[:2] != b"BM":
                return None
            width, height = struct.unpack_from("<ii", header, 18)
            if height >= 0 or width <= 0:
                return None
            frame = np.empty((-height, width, 3), dtype=np.uint8)
            if bmp_header(frame) != header:
                return None
            if file.readinto(memoryview(frame).cast("B")) != frame.size:
                return None
            return frame
    except OSError:
        return None


def bmp_header(frame: np.ndarray) -> bytes | None:
    """The 54-byte header of an uncompressed 24-bit top-down BMP (negative height) whose pixel data is the BGR
    `frame`'s bytes as they are; None when rows would need padding to 4 bytes (width x 3 not a multiple of 4)
    or the frame is not (H, W, 3) uint8."""
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        return None
    height, width = frame.shape[:2]
    if (width * 3) % 4:
        return None
    data = width * 3 * height
    return (b"BM" + struct.pack("<IHHI", 54 + data, 0, 0, 54)
            + struct.pack("<IiiHHIIiiII", 40, width, -height, 1, 24, 0, data, 2835, 2835, 0, 0))


def load(item: Item) -> np.ndarray:
    """The frame behind a spool item; a spooled file is removed once read."""
    if isinstance(item, np.ndarray):
        return item
    frame = _read_top_down_bmp(item) if item.suffix.lower() == ".bmp" else None
    if frame is None:
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

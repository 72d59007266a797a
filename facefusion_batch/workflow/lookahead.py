"""The next video of a batch made ready while the current one runs, so that its start waits for no probe,
no content hash and no decoder start-up (on an accelerator those gaps leave it idle between clips)."""
from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from facefusion_batch.models.store import sha256_of
from facefusion_batch.workflow.identity import Stamp, stamp_of
from facefusion_batch.targets import not_regular
from facefusion_batch.video.decoder import Decoder
from facefusion_batch.video.probe import VideoInfo, probe


@dataclass
class Prepared:
    """A video probed ahead of its turn, with its decoder already running when it could be started."""

    info: VideoInfo
    decoder: Decoder | None = None


def _stamp(path: Path) -> Stamp | None:
    """The file's identity: another file renamed over it (a new inode) is not what was prepared."""
    try:
        return stamp_of(path)
    except OSError:
        return None


@dataclass
class _Pending:
    path: Path
    stamp: Stamp | None
    probe: Future
    content: Future | None
    decoder: Future | None = None


class Lookahead:
    """Prepares one video at a time on its own thread: content hash (when asked) and probe at once; the
    decoder only when `current_decoded` says the running video's decoder is done, never beside it (a 4K
    decoder holds ~0.5 GB of frames). What is not taken is discarded: its decoder is killed."""

    def __init__(self, temp_root: Path) -> None:
        self._temp_root = temp_root
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="ffb-lookahead")
        self._lock = threading.Lock()
        self._pending: _Pending | None = None
        self._closing = threading.Event()  # a big file's hash must not hold up the end of a run

    def __enter__(self) -> Lookahead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def prepare(self, path: Path, hash_content: bool = False) -> None:
        """Start making `path` ready, dropping anything else prepared; a no-op when it already is, and
        when it is no regular file (a FIFO or a device would hold the thread for ever: the batch refuses it)."""
        with self._lock:
            pending = self._pending
            if pending is not None and pending.path == path and pending.stamp == _stamp(path):
                return
            self._pending = None
        self._drop(pending)
        if not_regular(path):
            return
        stamp = _stamp(path)  # before hashing: a change while it is hashed makes the hash unused
        content = self._worker.submit(sha256_of, path, self._closing) if hash_content else None
        with self._lock:
            self._pending = _Pending(path, stamp, self._worker.submit(probe, path), content)

    def current_decoded(self) -> None:
        """The running video has been decoded to its end: start the prepared video's decoder."""
        with self._lock:
            pending = self._pending
            if pending is not None and pending.decoder is None:
                pending.decoder = self._worker.submit(self._start_decoder, pending.probe)

    def _start_decoder(self, probed: Future) -> Decoder | None:
        if probed.exception() is not None:
            return None
        self._temp_root.mkdir(parents=True, exist_ok=True)
        return Decoder(probed.result(), self._temp_root)

    def content_hash(self, path: Path) -> str | None:
        """The prepared sha256 of `path` while the file is unchanged, else None."""
        with self._lock:
            pending = self._pending
        if pending is None or pending.path != path or pending.content is None or pending.stamp != _stamp(path):
            return None
        return pending.content.result() if pending.content.exception() is None else None

    def take(self, path: Path) -> Prepared | None:
        """What was made ready for `path` (None when it was another file, or the file changed since).
        A failed probe raises here, as probing now would."""
        with self._lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return None
        if pending.path != path or pending.stamp != _stamp(path):
            self._drop(pending)
            return None
        try:
            decoder = pending.decoder.result() if pending.decoder is not None else None
        except OSError:  # the process could not start: the job starts its own
            decoder = None
        try:
            return Prepared(pending.probe.result(), decoder)
        except BaseException:
            if decoder is not None:
                decoder.stop(kill=True)
            raise

    @staticmethod
    def _drop(pending: _Pending | None) -> None:
        if pending is None:
            return
        for work in (pending.content, pending.probe):
            if work is not None:
                work.cancel()  # only what has not started
        if pending.decoder is None or pending.decoder.cancel():
            return
        try:
            decoder = pending.decoder.result()
        except OSError:
            return
        if decoder is not None:
            decoder.stop(kill=True)

    def close(self) -> None:
        self._closing.set()
        with self._lock:
            pending, self._pending = self._pending, None
        self._drop(pending)
        self._worker.shutdown(wait=True, cancel_futures=True)

"""The Ray worker: one loaded engine and prepared source for its whole life, running work items.

This module does not import Ray: the driver wraps `FfbWorker` with `ray.remote`, and tests can run it in
process. A worker never writes an output path: whole targets and joined videos go to the hidden `staged`
name the driver chose for that attempt, and the driver renames the first successful one into place.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Callable

from facefusion_batch.errors import FfbError, SettingsError
from facefusion_batch.executors.plan import Item, Join, Segment, StorageCheck, WorkerInfo, Whole
from facefusion_batch.pipeline.batch import NO_FACE, Batch, Outcome, job_options, os_reason, remove_stale_workspaces
from facefusion_batch.pipeline.video_job import (VideoPlan, chunk_meta, chunk_path, encode_chunks, end_frames,
                                                 finish_video, plan_video, write_json)
from facefusion_batch.settings import Settings



class StorageError(SettingsError):
    """A worker does not see the storage the driver uses (inputs, outputs, the shared directory)."""


SHARED_FIX = ("inputs, outputs and shared_path must be on storage every Ray node mounts at the same path "
              "(see README, 'Scale-out on Ray')")


def check_storage(check: StorageCheck, node: str) -> None:
    """Fail with one line naming the path and the fix when this node doesn't see the driver's storage."""
    for directory, name in ((check.shared, "shared directory (shared_path)"), (check.output, "output directory")):
        try:
            seen = check.probe_file(directory).read_text()
        except OSError:
            seen = ""
        if seen != check.token:
            raise StorageError(f"{directory}: the Ray worker on {node} does not see the {name} the driver wrote "
                               f"to; {SHARED_FIX}")
    try:
        probe = check.shared / f".ffb-probe-{check.token}-{os.getpid()}.tmp"
        probe.write_text(node)
        probe.unlink()
    except OSError as exc:
        raise StorageError(f"{check.shared}: the Ray worker on {node} can't write the shared directory "
                           f"({exc.strerror}); {SHARED_FIX}") from None
    unreadable = [path for path in check.inputs if not os.access(path, os.R_OK)]
    if unreadable:
        more = f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
        raise StorageError(f"{unreadable[0]}: the Ray worker on {node} can't read this input{more}; {SHARED_FIX}")


class ProgressBox:
    """A tiny Ray actor: workers drop (dispatch id, frames) here, the driver drains it."""

    def __init__(self) -> None:
        self._events: list[tuple[int, int]] = []

    def add(self, events: list[tuple[int, int]]) -> None:
        self._events += events

    def drain(self) -> list[tuple[int, int]]:
        events, self._events = self._events, []
        return events


class _Forwarder:
    """The worker's Reporter: frames go to the progress box (a named actor) at most every `every` seconds;
    messages are kept for the start-up report (the driver prints target outcomes itself, in batch order)."""

    def __init__(self, box_name: str | None, every: float = 0.5) -> None:
        self._box_name, self._box, self._every = box_name, None, every
        self._lock = threading.Lock()
        self._pending = 0
        self._last = 0.0
        self.dispatch = -1
        self.messages: list[str] = []

    def message(self, text: str) -> None:
        if self.dispatch < 0:  # only what start-up said; outcomes of items go back in their results
            self.messages.append(text)

    def start(self, name: str, total: int) -> None:
        pass

    def advance(self, frames: int) -> None:
        with self._lock:
            self._pending += frames
            if time.monotonic() - self._last >= self._every:
                self._send()

    def flush(self) -> None:
        with self._lock:
            self._send()

    def _send(self) -> None:
        self._last = time.monotonic()
        if self._pending and self._box_name:
            try:
                if self._box is None:
                    import ray

                    self._box = ray.get_actor(self._box_name)
                self._box.add.remote([(self.dispatch, self._pending)])  # no wait for it
            except Exception:  # noqa: BLE001 - progress is best effort and must never fail an item
                self._box_name = None
        self._pending = 0

    def finish(self, status: str, name: str | None = None) -> None:
        pass

    def close(self) -> None:
        pass


class FfbWorker:
    """Built with the settings, the source and the storage check; loads the engine on first use, so an
    actor Ray restarts after a crash gets ready again on its own."""

    def __init__(self, settings: Settings, source: Path, check: StorageCheck, box_name: str | None = None) -> None:
        # The progress box is found by name: an actor handle among the arguments would put them in the
        # object store, from where a restart can't be sure to get them back.
        self._settings, self._source, self._check = settings, source, check
        self._reporter = _Forwarder(box_name)
        self._batch: Batch | None = None
        self._node = socket.gethostname()

    def start(self) -> WorkerInfo:
        """Check storage, load the engine and prepare the source; typed errors go back to the driver."""
        batch = self._ready()
        engine = batch.engine
        return WorkerInfo(self._node, os.getpid(), engine.name, tuple(engine.models),
                          tuple(engine.pool.active_providers()), batch.output_key, engine.cache.computed,
                          tuple(self._reporter.messages))

    def _ready(self) -> Batch:
        if self._batch is None:
            check_storage(self._check, self._node)
            remove_stale_workspaces(self._settings.temp_path)
            self._batch = Batch(self._settings, self._source, self._reporter)
        return self._batch

    def run(self, item: Item, dispatch: int) -> Outcome:
        """Process one work item; failures of the target come back as a `failed` Outcome."""
        batch = self._ready()
        self._reporter.dispatch = dispatch
        try:
            if isinstance(item, Whole):
                return batch.one(dataclasses.replace(item.target, output=item.staged), item.resume_key)
            shared = self._check.shared / f"ffb-{item.key}"
            if isinstance(item, Segment):
                return encode_segment(batch, item, shared, self._reporter.advance)
            return join_segments(batch, item, shared)
        finally:
            self._reporter.flush()


def encode_segment(batch: Batch, item: Segment, shared: Path, on_frames: Callable[[int], None]) -> Outcome:
    """Encode a segment's chunks in a scratch workspace on this node's temp_path (spooled frames stay on
    local disk), then publish the finished chunks to the shared workspace. Chunks another attempt already
    published are not done again; a retry on the same node also reuses the scratch's finished chunks."""
    started, calls = time.perf_counter(), batch.engine.detector_calls()
    target = item.target
    scratch = batch.settings.temp_path / f"ffb-{item.key}-s{item.first:05d}"
    try:
        plan = plan_video(target.path, target.output, job_options(batch.settings, batch.timings), item.info)
        shared.mkdir(parents=True, exist_ok=True)
        start, frames, ended = published(plan, shared, item)
        on_frames(frames)
        if not ended:
            scratch.mkdir(parents=True, exist_ok=True)
            frames += encode_chunks(plan, scratch, batch, on_frames, start, item.last).frames
            publish(plan, scratch, shared, start, item.last)
    except (FfbError, OSError) as exc:
        reason = str(exc) if isinstance(exc, FfbError) else os_reason(target, exc)
        return Outcome(str(target.path), "failed", reason=reason, seconds=time.perf_counter() - started)
    finally:
        batch.engine.pool.after_target()
    shutil.rmtree(scratch, ignore_errors=True)
    return Outcome(str(target.path), "done", frames=frames, seconds=time.perf_counter() - started,
                   detector_calls=batch.engine.detector_calls() - calls)


def published(plan: VideoPlan, shared: Path, item: Segment) -> tuple[int, int, bool]:
    """(first chunk still to do, frames of the segment's chunks already published, whether the rest of the
    segment is done: its range is published or the video's end was reached)."""
    size = plan.options.chunk_size
    end = end_frames(shared)
    index, frames = item.first, 0
    while item.last is None or index < item.last:
        if end is not None and index * size >= end:
            return index, frames, True
        meta = chunk_meta(shared, index)
        if meta is None:
            return index, frames, False
        frames += meta["frames"]
        index += 1
        if meta["frames"] < size:
            return index, frames, True
    return index, frames, True


def publish(plan: VideoPlan, scratch: Path, shared: Path, first: int, last: int | None) -> None:
    """Move the finished chunks `first` .. `last` - 1 (and the end marker) from scratch to the shared
    workspace. Each file lands by an atomic rename, the chunk before its JSON sidecar, so a chunk counts as
    finished there only once complete, as in the scratch."""
    size = plan.options.chunk_size
    if (scratch / "end.json").is_file():
        _place(scratch / "end.json", shared / "end.json")
    index = first
    while (last is None or index < last) and (meta := chunk_meta(scratch, index)) is not None:
        if meta["frames"] < size and end_frames(shared) is None:  # the end marker was lost in a crash
            write_json(shared / "end.json", {"frames": index * size + meta["frames"]})
        _place(chunk_path(scratch, index), chunk_path(shared, index))
        sidecar = chunk_path(scratch, index).with_suffix(".json")
        _place(sidecar, chunk_path(shared, index).with_suffix(".json"))
        index += 1


def _place(source: Path, destination: Path) -> None:
    """Rename when both are on one file system, else copy under a temp name and rename."""
    try:
        source.replace(destination)
    except OSError:
        tmp = destination.with_name(f".{destination.name}.{os.getpid()}.tmp")
        shutil.copyfile(source, tmp)
        tmp.replace(destination)
        source.unlink(missing_ok=True)


def join_segments(batch: Batch, item: Join, shared: Path) -> Outcome:
    """Join the shared workspace's chunks with the original audio into `item.staged` and verify it."""
    started = time.perf_counter()
    target = item.target
    try:
        plan = plan_video(target.path, target.output, job_options(batch.settings, batch.timings), item.info)
        note = finish_video(dataclasses.replace(plan, out=item.staged), shared, batch.tags,
                            batch.seal(target.path))
        frames, faces = _totals(shared, plan.options.chunk_size)
    except (FfbError, OSError) as exc:
        reason = str(exc) if isinstance(exc, FfbError) else os_reason(target, exc)
        return Outcome(str(target.path), "failed", reason=reason, seconds=time.perf_counter() - started)
    status, reason = ("done", note) if faces else ("no_face", NO_FACE)
    return Outcome(str(target.path), status, str(item.staged), reason, frames, time.perf_counter() - started)


def _totals(shared: Path, chunk_size: int) -> tuple[int, int]:
    """(frames, frames with faces) of the joined video, from its end marker and chunk sidecars."""
    total = end_frames(shared) or 0
    faces, index = 0, 0
    while index * chunk_size < total and (meta := chunk_meta(shared, index)) is not None:
        faces += meta["faces"]
        index += 1
    return total, faces

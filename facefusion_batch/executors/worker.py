"""A pool worker (a Ray actor, or a process of `process_pool`): one loaded engine and prepared source for
its whole life, running work items.

This module does not import Ray: the driver wraps `FfbWorker` with `ray.remote`, and tests can run it in
process. A worker never writes an output path: whole targets and joined videos go to the hidden `staged`
name the driver chose for that attempt, and the driver renames the first successful one into place.
"""
from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time
from typing import Callable

from facefusion_batch.errors import SettingsError
from facefusion_batch.executors.work_items import Item, Segment, StorageCheck, WorkerInfo, Whole
from facefusion_batch.workflow import job
from facefusion_batch.workflow.outcome import Outcome
from facefusion_batch.workflow.output_guard import check_output_dir
from facefusion_batch.workflow.processor import FrameProcessor, Sources, load
from facefusion_batch.workflow.workspace import Workspace, remove_stale
from facefusion_batch.settings import Settings



class StorageError(SettingsError):
    """A worker does not see the storage the driver uses (inputs, outputs, the shared directory)."""


SHARED_FIX = ("inputs, outputs and shared_path must be on storage every Ray node mounts at the same path "
              "(see docs/ray.md, 'Scale-out on Ray')")


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
    """The worker's progress: frames go to `send`, else the progress box (a named actor), at most every
    `every` seconds; messages are kept for the start-up report (the driver prints target outcomes itself, in
    batch order)."""

    def __init__(self, box_name: str | None, every: float = 0.5,
                 send: Callable[[list[tuple[int, int]]], None] | None = None) -> None:
        self._box_name, self._box, self._every, self._send_to = box_name, None, every, send
        self._lock = threading.Lock()
        self._pending = 0
        self._last = 0.0
        self.dispatch = -1
        self.messages: list[str] = []

    def message(self, text: str) -> None:
        if self.dispatch < 0:  # only what start-up said; outcomes of items go back in their results
            self.messages.append(text)

    def start(self, total: int) -> None:
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
        if self._pending and self._send_to is not None:
            self._send_to([(self.dispatch, self._pending)])
        elif self._pending and self._box_name:
            try:
                if self._box is None:
                    import ray

                    self._box = ray.get_actor(self._box_name)
                self._box.add.remote([(self.dispatch, self._pending)])  # no wait for it
            except Exception:  # noqa: BLE001 - progress is best effort and must never fail an item
                self._box_name = None
        self._pending = 0



class FfbWorker:
    """Built with the settings, the source and the storage check; loads the engine on first use, so an
    actor Ray restarts after a crash gets ready again on its own."""

    def __init__(self, settings: Settings, source: Sources, check: StorageCheck, box_name: str | None = None,
                 send: Callable[[list[tuple[int, int]]], None] | None = None) -> None:
        """Progress goes to `send` (a process worker's pipe), else to the Ray progress box named `box_name`."""
        # The progress box is found by name: an actor handle among the arguments would put them in the
        # object store, from where a restart can't be sure to get them back.
        self._settings, self._source, self._check = settings, source, check
        self._reporter = _Forwarder(box_name, send=send)
        self._processor: FrameProcessor | None = None
        self._node = socket.gethostname()

    def start(self) -> WorkerInfo:
        """Check storage, load the engine and prepare the source; typed errors go back to the driver."""
        processor = self._ready()
        engine = processor.engine
        return WorkerInfo(self._node, os.getpid(), engine.name, tuple(engine.models),
                          tuple(engine.pool.active_providers()), processor.output_key, engine.cache.computed,
                          tuple(self._reporter.messages), engine.warnings)

    def _ready(self) -> FrameProcessor:
        if self._processor is None:
            check_storage(self._check, self._node)
            remove_stale(self._settings.temp_path)
            check_output_dir(self._settings.output_dir)
            self._processor = load(self._settings, self._source, self._reporter.message)
        return self._processor

    def run(self, item: Item, dispatch: int) -> Outcome:
        """Process one work item; failures of the target come back as a `failed` Outcome."""
        processor = self._ready()
        self._reporter.dispatch = dispatch
        try:
            if isinstance(item, Whole):
                staged = dataclasses.replace(item.target, output=item.staged)
                return job.begin(processor, staged, self._reporter, item.resume_key)()
            shared = Workspace.of(self._check.shared, item.key)
            if isinstance(item, Segment):
                return job.segment(processor, item, shared, self._reporter.advance)
            return job.join(processor, item, shared)
        finally:
            self._reporter.flush()

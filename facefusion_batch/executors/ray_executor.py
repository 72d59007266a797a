"""The Ray executor: one batch spread over a Ray cluster, with the local executor's journal, progress and summary.

The driver (this process) holds the output tree's lock and journal, decides what to do with each target by
the journal's own rules, and hands work items to the Ray actors of a `WorkerPool`, each of which loads the
engine once. Ray places the actors by their CPU/GPU requests and restarts one whose process or node died;
the driver gives the item lost with it to another worker, up to `ray_max_retries` times, and records every
attempt in the journal. Workers write only hidden staged names; the driver renames the one successful
result of each target into place, so no output path is ever written twice.
"""
from __future__ import annotations

import contextlib
import dataclasses
import glob
import itertools
import os
import shutil
import sys
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from facefusion_batch.errors import FfbError
from facefusion_batch.executors import require_ray
from facefusion_batch.executors.plan import (Item, Join, OrderedProgress, Segment, StorageCheck, Whole, WorkerInfo,
                                             chunk_count, segment_length, segments, staged_name)
from facefusion_batch.executors.ray_pool import Done, WorkerPool, connect
from facefusion_batch.pipeline.batch import INTERRUPTED, BatchResult, Outcome, claim, os_reason, remove_stale_workspaces
from facefusion_batch.pipeline.journal import Journal
from facefusion_batch.pipeline.progress import Reporter
from facefusion_batch.provenance.sign import place
from facefusion_batch.settings import Settings
from facefusion_batch.targets import Target, discover
from facefusion_batch.video.probe import VideoInfo, probe

POLL_S = 0.5


def run_batch(settings: Settings, source: Path, specs: Sequence[str], journal: Journal | None, reporter: Reporter,
              force: bool = False, retry_failed: bool = False) -> BatchResult:
    """Process every target on Ray workers; the same result as `Batch.run` gives for the local executor."""
    ray = require_ray()
    # Ray prints what its workers and raylets report (a worker died, ...) on stdout; send it to stderr so
    # that stdout carries only the summary (--json).
    with contextlib.redirect_stdout(sys.stderr):
        started_here = connect(ray, settings)
        try:
            driver = _Driver(settings, source, reporter, journal, force, retry_failed)
            driver.pool = WorkerPool(ray, driver.remote_settings, reporter, driver.first_worker)
            return driver.run(specs)
        finally:
            if started_here:
                ray.shutdown()


def absolute(settings: Settings) -> Settings:
    """The settings with every path made absolute: workers don't share the driver's working directory."""
    changes = {f.name: Path(os.path.abspath(value)) for f in dataclasses.fields(settings)
               if isinstance(value := getattr(settings, f.name), Path)}
    return dataclasses.replace(settings, **changes)


def shared_root(settings: Settings) -> Path:
    """Where the workspaces of split videos live: shared_path, else temp_path."""
    return settings.shared_path or settings.temp_path


@dataclass
class _Job:
    """A target being processed: its items, attempts and pieces."""

    index: int  # position among the batch's targets
    target: Target  # as discovered (the summary names it so)
    remote: Target  # absolute paths, for the workers
    content: str | None
    key: str  # resume key: the workspace is ffb-<key>
    started: float = field(default_factory=time.perf_counter)
    shown: int = -1  # index in the ordered progress
    split: bool = False  # processed as segments in the shared workspace, then joined
    pieces: int = 0  # segments not finished yet
    inflight: int = 0
    calls: int = 0
    done: bool = False
    info: VideoInfo | None = None  # the driver's probe of a split video, handed to its segments and join


@dataclass
class _Task:
    """One work item of a job, over all its attempts."""

    job: _Job
    item: Item
    deaths: int = 0  # times a worker died on it
    avoid: int | None = None  # the worker slot that died on it last
    dispatch: int = -1  # the current attempt
    sent: Item | None = None  # the item as sent in the current attempt (with its staged name)
    frames: int = 0  # frames this attempt reported
    shown: int = 0  # frames shown for this task over all attempts


class _Driver:
    pool: WorkerPool

    def __init__(self, settings: Settings, source: Path, reporter: Reporter, journal: Journal | None,
                 force: bool, retry_failed: bool) -> None:
        self.settings, self.reporter, self.journal = settings, reporter, journal
        self.force, self.retry_failed = force, retry_failed
        self.remote_settings = absolute(settings)
        self.source = Path(os.path.abspath(source))
        self.token = uuid.uuid4().hex[:12]
        self.display = OrderedProgress(reporter)
        self.pending: deque[tuple[int, Target]] = deque()
        self.queue: deque[_Task] = deque()
        self.attempts: dict[int, _Task] = {}  # dispatch -> task, while in flight
        self.active: dict[int, _Job] = {}
        self.outcomes: dict[int, Outcome] = {}
        self.rejected: list[Outcome] = []
        self.dispatches = itertools.count()
        self.drained_at = 0.0

    def run(self, specs: Sequence[str]) -> BatchResult:
        targets, rejected = discover(specs, self.settings.output_dir, self.settings.output_file)
        self.rejected = [Outcome(str(r.path), "failed", reason=r.reason) for r in rejected]
        self.reporter.expect(len(targets))
        self.pending = deque(enumerate(targets))
        check = self._storage_check(targets)
        interrupted = False
        stopped: list[str] = []  # targets in flight when interrupted (the summary names them)
        try:
            self.pool.start(self.source, check)
            while self.pending or self.queue or self.attempts:
                self._dispatch()
                for done in self.pool.wait(POLL_S):
                    self._done(done)
                self._progress()
                if self.pool.stranded():
                    self._abandon()
        except KeyboardInterrupt:
            interrupted = True
            for job in list(self.active.values()):
                stopped.append(str(job.target.path))
                self._record(job, "interrupted", "interrupted")
        finally:
            self.pool.stop()  # first, so that no worker writes after the clean-up
            for task in self.attempts.values():
                if task.sent is not None:
                    _discard(task.sent)
            for directory in (check.shared, check.output):
                check.probe_file(directory).unlink(missing_ok=True)
        return self._summary(len(targets), interrupted, stopped)

    def first_worker(self, info: WorkerInfo) -> None:
        """What the local executor says once its engine is loaded, said once the first worker is ready."""
        for text in info.messages:
            self.reporter.message(text)
        self.reporter.message(f"engine: {info.engine} ({', '.join(info.models)})")
        for outcome in self.rejected:
            self.reporter.message(f"{outcome.target}: {outcome.reason}")

    def _summary(self, count: int, interrupted: bool, stopped: Sequence[str] = ()) -> BatchResult:
        first = self.pool.first
        result = BatchResult(first.engine if first else "", list(first.models) if first else [],
                             sorted({p for s in self.pool.slots if s.info for p in s.info.providers}))
        result.outcomes = self.rejected + [self.outcomes[i] for i in range(count) if i in self.outcomes]
        if interrupted:
            result.interrupted = True
            result.outcomes += [Outcome(name, "failed", reason=INTERRUPTED) for name in stopped or ["(batch)"]]
        result.source_embeddings_computed = self.pool.embeddings
        result.detector_calls = sum(o.detector_calls for o in result.outcomes)
        return result

    def _storage_check(self, targets: list[Target]) -> StorageCheck:
        """Write the token files workers must see, and list the inputs they must read."""
        settings = self.remote_settings
        inputs = [self.source] + [Path(os.path.abspath(t.path)) for t in targets]
        check = StorageCheck(self.token, shared_root(settings), settings.output_dir,
                             tuple(p for p in inputs if os.access(p, os.R_OK)))
        for directory in (check.shared, check.output):
            directory.mkdir(parents=True, exist_ok=True)
            check.probe_file(directory).write_text(self.token)
        if check.shared != settings.temp_path:
            remove_stale_workspaces(check.shared)
        return check

    # ---- handing out work ------------------------------------------------------------------------------

    def _dispatch(self) -> None:
        for slot in self.pool.idle():
            if (task := self._next_task(slot.id)) is not None:
                task.dispatch, task.frames = next(self.dispatches), 0
                task.sent = task.item
                if isinstance(task.item, (Whole, Join)):
                    staged = staged_name(task.job.remote.output, f"{self.token}-{task.dispatch}")
                    task.sent = dataclasses.replace(task.item, staged=staged)
                self.pool.submit(slot, task.sent, task.dispatch)
                self.attempts[task.dispatch] = task
                task.job.inflight += 1

    def _next_task(self, slot: int) -> _Task | None:
        """The first queued task this worker may take (a retry goes to another worker when one is free),
        pulling the next target when none is queued."""
        while True:
            others = any(s.id != slot for s in self.pool.idle())
            for task in self.queue:
                if task.avoid != slot or not others:
                    self.queue.remove(task)
                    return task
            if not self.pending:
                return None
            self._pull()

    def _pull(self) -> None:
        index, target = self.pending.popleft()
        outcome, key, content = self._claim(target)
        if outcome.status != "running":
            self.outcomes[index] = outcome
            return
        remote = Target(Path(os.path.abspath(target.path)), target.kind, Path(os.path.abspath(target.output)))
        job = self.active[index] = _Job(index, target, remote, content, key or uuid.uuid4().hex[:20])
        if target.kind == "image":
            job.shown = self.display.add(str(target.path), 1)
            self.queue.append(_Task(job, Whole(remote, remote.output, key)))
            return
        try:
            info = probe(remote.path)
        except (FfbError, OSError) as exc:
            job.shown = self.display.add(str(target.path), 0)
            self._fail(job, str(exc) if isinstance(exc, FfbError) else os_reason(target, exc))
            return
        job.shown = self.display.add(str(target.path), info.frame_count)
        job.info = info
        chunks = chunk_count(info.frame_count, self.settings.chunk_size)
        length = segment_length(chunks, self.settings.ray_segment_chunks, self.pool.free())
        parts = segments(chunks, length)
        if len(parts) == 1:
            self.queue.append(_Task(job, Whole(remote, remote.output, key)))
            return
        self.reporter.message(f"{target.path}: split into {len(parts)} segments of up to {length} chunks")
        job.split, job.pieces = True, len(parts)
        self.queue.extend(_Task(job, Segment(remote, job.key, first, last, info)) for first, last in parts)

    def _claim(self, target: Target) -> tuple[Outcome, str | None, str | None]:
        """The journal's decision for a target: `running` (with its resume key and content hash) when it is
        to be done."""
        if self.journal is None:
            return Outcome(str(target.path), "running"), None, None
        assert self.pool.first is not None
        skip, content, resume = claim(self.journal, target, self.pool.first.output_key, self.force,
                                      self.retry_failed)
        if skip is not None:
            return skip, None, None
        return Outcome(str(target.path), "running"), resume, content

    # ---- what comes back -------------------------------------------------------------------------------

    def _progress(self) -> None:
        if time.monotonic() - self.drained_at < POLL_S / 2:
            return
        self.drained_at = time.monotonic()
        for dispatch, frames in self.pool.progress():
            task = self.attempts.get(dispatch)
            if task is None or task.job.done:
                continue  # a lost attempt, or a finished target
            task.frames += frames
            if task.frames > task.shown:  # a retry shows only frames beyond what earlier attempts showed
                self.display.advance(task.job.shown, task.frames - task.shown)
                task.shown = task.frames

    def _done(self, done: Done) -> None:
        task = self.attempts.pop(done.dispatch)
        job, sent = task.job, task.sent
        assert sent is not None
        job.inflight -= 1
        if done.lost is not None:
            self._lost(task, done)
            return
        outcome = done.outcome or Outcome(str(job.target.path), "failed",
                                          reason=f"{job.target.path}: {done.error}")
        if job.done or outcome.status == "failed":
            _discard(sent)
            if not job.done:
                self._fail(job, outcome.reason)
            self._tidy(job)
            return
        job.calls += outcome.detector_calls
        if isinstance(sent, Segment):
            job.pieces -= 1
            if job.pieces == 0:  # every segment is in: join them next, before new work
                self.queue.appendleft(_Task(job, Join(job.remote, job.key, job.remote.output, job.info)))
            return
        assert isinstance(sent, (Whole, Join))
        try:
            place(sent.staged, job.remote.output)  # the one write to the output path (sidecar manifest first)
        except OSError as exc:
            self._fail(job, f"{job.target.output}: can't move the finished output into place ({exc.strerror})")
            return
        seconds = time.perf_counter() - job.started if isinstance(sent, Join) else outcome.seconds
        self._complete(job, dataclasses.replace(outcome, target=str(job.target.path), output=str(job.target.output),
                                                seconds=seconds, detector_calls=job.calls))
        self._tidy(job)

    def _lost(self, task: _Task, done: Done) -> None:
        """The worker died with this item: retry it on another worker, up to ray_max_retries times."""
        job = task.job
        task.deaths += 1
        assert task.sent is not None
        _discard(task.sent)
        limit = self.remote_settings.ray_max_retries
        what = f"the Ray {done.slot.where} died ({type(done.lost).__name__})"
        if job.done:
            self._tidy(job)
        elif task.deaths > limit:
            self._fail(job, f"{job.target.path}: {what}; workers died {task.deaths} times on it, more than "
                            f"ray_max_retries = {limit}")
        else:
            self._record(job, "retrying", f"{what}; retrying on another worker")
            self.reporter.message(f"{job.target.path}: {what}; retrying on another worker (retry {task.deaths} "
                                  f"of {limit})")
            task.avoid = done.slot.id
            self.queue.appendleft(task)

    def _fail(self, job: _Job, reason: str) -> None:
        self.queue = deque(t for t in self.queue if t.job is not job)
        self._complete(job, Outcome(str(job.target.path), "failed", reason=reason,
                                    seconds=time.perf_counter() - job.started))
        self._tidy(job)

    def _complete(self, job: _Job, outcome: Outcome, journal_status: str | None = None) -> None:
        job.done = True
        self.active.pop(job.index, None)
        self.outcomes[job.index] = outcome
        self._record(job, journal_status or outcome.status, outcome.reason, outcome.frames, outcome.seconds)
        self.display.complete(job.shown, outcome)

    def _record(self, job: _Job, status: str, reason: str, frames: int = 0, seconds: float = 0.0) -> None:
        if self.journal is not None and job.content is not None and self.pool.first is not None:
            self.journal.record(job.target.path, job.target.output, job.content, self.pool.first.output_key,
                                status, reason, frames, seconds)

    def _tidy(self, job: _Job) -> None:
        """Once nothing of a finished split video is in flight, remove its shared workspace (a failure's
        too, as the local executor does)."""
        if job.done and job.split and job.inflight == 0:
            shutil.rmtree(shared_root(self.remote_settings) / f"ffb-{job.key}", ignore_errors=True)

    def _abandon(self) -> None:
        """No worker is left: what is left of the batch fails in the summary, and is journaled as
        interrupted so the next run does it (finished chunks of split videos are kept for it)."""
        reason = "no Ray worker left to process it; run again when the cluster is back"
        for job in list(self.active.values()):
            self._complete(job, Outcome(str(job.target.path), "failed", reason=f"{job.target.path}: {reason}"),
                           journal_status="interrupted")
        while self.pending:
            index, target = self.pending.popleft()
            self.outcomes[index] = Outcome(str(target.path), "failed", reason=f"{target.path}: {reason}")
        self.queue.clear()


def _discard(item: Item) -> None:
    """Remove what an attempt that won't be committed left next to the output: its staged file and the
    worker's temp name of it."""
    if isinstance(item, (Whole, Join)):
        for leftover in item.staged.parent.glob(f"*{glob.escape(item.staged.stem)}*"):
            leftover.unlink(missing_ok=True)

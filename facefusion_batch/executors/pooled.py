"""What the Ray and process executors share: a pool of workers, each holding one loaded engine, fed work items.

The run driver (`facefusion_batch.runner.driver`, in this process) holds the output tree's lock and journal and
decides what to do with each target; a `PoolExecutor` pulls the claimed targets as workers get free and hands
work items to its pool's workers (`ray_pool.WorkerPool`: Ray actors; `process_pool.ProcessPool`: processes on
this machine). Long videos are split into segments, one per free worker, joined when all are in. A worker
whose process died is restarted; the item lost with it goes to another worker, up to `max_retries` times, and
each retry is told to the driver (which journals it). Workers write only hidden staged names; this process
renames the one successful result of each target into place, so no output path is ever written twice.
"""
from __future__ import annotations

import dataclasses
import glob
import itertools
import os
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, Sequence

from facefusion_batch.errors import FfbError
from facefusion_batch.executors.base import Claim, EngineInfo, Stats, Work
from facefusion_batch.executors.work_items import (Item, Join, Segment, StorageCheck, Whole, WorkerInfo,
                                             chunk_count, segment_length, segments, staged_name)
from facefusion_batch.workflow.identity import Changed, Pin
from facefusion_batch.workflow.job import profile_note
from facefusion_batch.workflow.processor import Sources, source_paths
from facefusion_batch.workflow.video_plan import reshape_of
from facefusion_batch.workflow.workspace import Workspace, remove_stale
from facefusion_batch.provenance.sign import place
from facefusion_batch.workflow import guard
from facefusion_batch.workflow.outcome import Outcome
from facefusion_batch.settings import Settings
from facefusion_batch.targets import Target
from facefusion_batch.video.probe import VideoInfo, probe

POLL_S = 0.5


@dataclass(frozen=True)
class Done:
    """An item came back: its outcome; or `lost`, the error of the worker that died with it; or `error`, an
    exception the item raised in the worker (a bug: targets' failures come back as outcomes)."""

    slot: Any  # the pool's Slot
    dispatch: int
    outcome: Outcome | None = None
    lost: Exception | None = None
    error: str = ""


class Pool(Protocol):
    """Workers that each hold one loaded engine (see `ray_pool.WorkerPool`, `process_pool.ProcessPool`)."""

    slots: Sequence[Any]
    first: WorkerInfo | None  # the first worker that started
    embeddings: int  # source embeddings the workers computed

    def start(self, source: Sources, check: StorageCheck) -> None: ...

    def idle(self) -> list[Any]: ...

    def free(self) -> int:
        """Workers that are or will soon be without work."""

    def submit(self, slot: Any, item: Item, dispatch: int) -> None: ...

    def wait(self, timeout: float) -> list[Done]:
        """Items that came back within `timeout` (worker start-ups are followed on the way)."""

    def progress(self) -> list[tuple[int, int]]:
        """(dispatch, frames) the workers reported since the last call."""

    def stranded(self) -> bool:
        """No worker left (raises when none ever started)."""

    def stop(self) -> None: ...

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
    key: str  # resume key: the workspace is ffb-<key>
    started: float = field(default_factory=time.perf_counter)
    split: bool = False  # processed as segments in the shared workspace, then joined
    pieces: int = 0  # segments not finished yet
    inflight: int = 0
    calls: int = 0
    profiles: int = 0  # face-frames left in profile, over the finished items (segments: summed)
    done: bool = False
    info: VideoInfo | None = None  # the driver's probe of a split video, handed to its segments and join
    pin: Pin | None = None  # the target as it was read: checked before its output is placed


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


class PoolExecutor:
    """The scheduling both pooled executors share; a subclass opens its pool (`_open`)."""

    concurrent_targets = True
    kind = "pool"  # how messages name a worker: "the Ray worker 1 died", "the process worker 1 died"
    retries_setting = ""  # the setting max_retries comes from
    comeback = ""  # what must be back before a run after all workers died

    def __init__(self, settings: Settings, source: Sources, lost_signal: Callable[[], None] | None = None,
                 segment_chunks: int = 0, max_retries: int = 2) -> None:
        """`source`: one photo, or several of one person (each worker averages them, as the local executor);
        `lost_signal` raises KeyboardInterrupt when a signal came but its own was lost (Ray's actor handles
        swallow one raised in their `__del__`): called each turn of the waiting loops. `segment_chunks`:
        chunks per segment of a split video (0: one segment per free worker); `max_retries`: times an item
        is retried after its worker died."""
        self.settings = settings
        self.remote_settings = absolute(settings)
        self.segment_chunks, self.max_retries = segment_chunks, max_retries
        self.sources = tuple(Path(os.path.abspath(path)) for path in source_paths(source))
        self.token = uuid.uuid4().hex[:12]
        self.queue: deque[_Task] = deque()
        self.attempts: dict[int, _Task] = {}  # dispatch -> task, while in flight
        self.active: dict[int, _Job] = {}
        self.dispatches = itertools.count()
        self.drained_at = 0.0
        self._pool: Pool | None = None
        self._check: StorageCheck | None = None
        self._claims: Iterator[Claim] | None = None
        self._work: Work | None = None
        self._lost_signal = lost_signal or (lambda: None)

    @property
    def pool(self) -> Pool:
        assert self._pool is not None, "start() first"
        return self._pool

    def _open(self, work: Work) -> Pool:
        """The pool, its workers asked to start."""
        raise NotImplementedError

    def _source(self) -> Sources:
        return self.sources[0] if len(self.sources) == 1 else self.sources

    def start(self, targets: Sequence[Target], work: Work) -> EngineInfo:
        """Start the workers and wait for the first one to be ready."""
        self._work = work
        self._pool = self._open(work)
        self._check = self._storage_check(targets)
        self.pool.start(self._source(), self._check)
        while self.pool.first is None:
            self._lost_signal()
            self.pool.wait(POLL_S)
            self.pool.stranded()  # raises when no worker starts
        first = self.pool.first
        return EngineInfo(first.engine, tuple(first.models), first.output_key, tuple(first.messages),
                          tuple(first.warnings))

    def run(self, work: Work) -> None:
        self._work = work
        self._claims = work.claims()
        try:
            while self._claims is not None or self.queue or self.attempts:
                self._lost_signal()
                self._dispatch()
                for done in self.pool.wait(POLL_S):
                    self._done(done)
                self._progress()
                if self.pool.stranded():
                    self._abandon()
        finally:
            self._stop()

    def stats(self) -> Stats:
        if self._pool is None:
            return Stats([], 0, None)
        providers = sorted({p for s in self.pool.slots if s.info for p in s.info.providers})
        return Stats(providers, self.pool.embeddings, None)

    def close(self) -> None:
        self._stop()

    def __enter__(self) -> PoolExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _stop(self) -> None:
        """Stop the workers (first, so that none writes after the clean-up) and remove what they left."""
        if self._pool is not None:
            self._pool.stop()
        for task in self.attempts.values():
            if task.sent is not None:
                _discard(task.sent)
        if self._check is not None:
            for directory in (self._check.shared, self._check.output):
                self._check.probe_file(directory).unlink(missing_ok=True)

    def _storage_check(self, targets: Sequence[Target]) -> StorageCheck:
        """Write the token files workers must see, and list the inputs they must read."""
        settings = self.remote_settings
        inputs = [*self.sources] + [Path(os.path.abspath(t.path)) for t in targets]
        check = StorageCheck(self.token, shared_root(settings), settings.output_dir,
                             tuple(p for p in inputs if os.access(p, os.R_OK)))
        for directory in (check.shared, check.output):
            directory.mkdir(parents=True, exist_ok=True)
            check.probe_file(directory).write_text(self.token)
        if check.shared != settings.temp_path:
            remove_stale(check.shared)
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
            if self._claims is None:
                return None
            claim = next(self._claims, None)
            if claim is None:
                self._claims = None
                return None
            self._pull(claim)

    @property
    def work(self) -> Work:
        assert self._work is not None
        return self._work

    def _pull(self, claim: Claim) -> None:
        index, target, key = claim.index, claim.target, claim.resume_key
        remote = Target(Path(os.path.abspath(target.path)), target.kind, Path(os.path.abspath(target.output)))
        job = self.active[index] = _Job(index, target, remote, key or uuid.uuid4().hex[:20])
        job.pin = (Pin(remote.path, claim.read, claim.content) if claim.read is not None
                   else Pin.now(remote.path, claim.content))
        if target.kind == "image":
            self.work.started(index, 1)
            self.queue.append(_Task(job, Whole(remote, remote.output, key)))
            return
        try:
            info = probe(remote.path)
        except (FfbError, OSError) as exc:
            self._fail(job, str(exc) if isinstance(exc, FfbError) else guard.os_reason(target.path, exc))
            return
        frames = reshape_of(self.settings).applied(info).frame_count  # those kept (trim, frame rate)
        self.work.started(index, frames)
        job.info = info
        chunks = chunk_count(frames, self.settings.chunk_size)
        length = segment_length(chunks, self.segment_chunks, self.pool.free())
        parts = segments(chunks, length)
        if len(parts) == 1:
            self.queue.append(_Task(job, Whole(remote, remote.output, key)))
            return
        self.work.message(f"{target.path}: split into {len(parts)} segments of up to {length} chunks")
        job.split, job.pieces = True, len(parts)
        self.queue.extend(_Task(job, Segment(remote, job.key, first, last, info)) for first, last in parts)

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
                self.work.advance(task.job.index, task.frames - task.shown)
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
        if outcome.status == "blocked":  # the content gate flagged the target: nothing was written
            _discard(sent)
            self._complete(job, dataclasses.replace(outcome, target=str(job.target.path)))
            self._tidy(job)
            return
        job.calls += outcome.detector_calls
        job.profiles += outcome.profiles_left
        if isinstance(sent, Segment):
            job.pieces -= 1
            if job.pieces == 0:  # every segment is in: join them next, before new work
                self.queue.appendleft(_Task(job, Join(job.remote, job.key, job.remote.output, job.info)))
            return
        assert isinstance(sent, (Whole, Join))
        try:
            if job.pin is not None:
                job.pin.check()  # a file renamed over the target meanwhile does not get this output
        except Changed as exc:
            _discard(sent)
            self._complete(job, Outcome(str(job.target.path), "failed", reason=str(exc), cause="changed",
                                        seconds=time.perf_counter() - job.started))
            self._tidy(job)
            return
        try:
            place(sent.staged, job.remote.output)  # the one write to the output path (sidecar manifest first)
        except OSError as exc:
            self._fail(job, f"{job.target.output}: can't move the finished output into place ({exc.strerror})")
            return
        seconds = time.perf_counter() - job.started if isinstance(sent, Join) else outcome.seconds
        if isinstance(sent, Join) and outcome.status == "done":  # the segments' counts, as a whole video's
            outcome = dataclasses.replace(outcome, reason="; ".join(filter(None, [outcome.reason,
                                                                                  profile_note(job.profiles)])))
        self._complete(job, dataclasses.replace(outcome, target=str(job.target.path), output=str(job.target.output),
                                                seconds=seconds, detector_calls=job.calls,
                                                profiles_left=job.profiles))
        self._tidy(job)

    def _lost(self, task: _Task, done: Done) -> None:
        """The worker died with this item: retry it on another worker, up to max_retries times."""
        job = task.job
        task.deaths += 1
        assert task.sent is not None
        _discard(task.sent)
        limit = self.max_retries
        what = f"the {self.kind} {done.slot.where} died ({type(done.lost).__name__})"
        if job.done:
            self._tidy(job)
        elif task.deaths > limit:
            self._fail(job, f"{job.target.path}: {what}; workers died {task.deaths} times on it, more than "
                            f"{self.retries_setting} = {limit}")
        else:
            self.work.retrying(job.index, f"{what}; retrying on another worker")
            self.work.message(f"{job.target.path}: {what}; retrying on another worker (retry {task.deaths} "
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
        self.work.finished(job.index, outcome, journal_status)

    def _tidy(self, job: _Job) -> None:
        """Once nothing of a finished split video is in flight, remove its shared workspace (a failure's
        too, as the local executor does)."""
        if job.done and job.split and job.inflight == 0:
            Workspace.of(shared_root(self.remote_settings), job.key).remove()

    def _abandon(self) -> None:
        """No worker is left: what is left of the batch fails in the summary, and what was begun is
        journaled as interrupted so the next run does it (finished chunks of split videos are kept for it)."""
        for job in self.active.values():
            job.done = True
        self.active.clear()
        self.queue.clear()
        self._claims = None
        self.work.abandon(f"no {self.kind} worker left to process it; run again when {self.comeback}")


def _discard(item: Item) -> None:
    """Remove what an attempt that won't be committed left next to the output: its staged file and the
    worker's temp name of it."""
    if isinstance(item, (Whole, Join)):
        for leftover in item.staged.parent.glob(f"*{glob.escape(item.staged.stem)}*"):
            leftover.unlink(missing_ok=True)

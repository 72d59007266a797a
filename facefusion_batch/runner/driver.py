"""The run driver: one batch over any executor.

It alone owns the run's bookkeeping: it finds the targets, asks the journal about each one as the executor
pulls it (skip, or claim it as `running`), records every end, shows progress and builds the summary. The
executor (`executors.local`, `executors.ray_executor`, ...) only turns claimed targets into outcomes. The
output lock and the journal are opened by the caller (`facefusion_batch.api`), before any model loads.
A watch's executor (`executors.watch`) adds targets to its run as files arrive (`Work.add`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from facefusion_batch import interrupts
from facefusion_batch.errors import OutputFull
from facefusion_batch.executors.base import Claim, EngineInfo, Executor, Work
from facefusion_batch.models.licence import non_commercial_notice
from facefusion_batch.workflow import guard
from facefusion_batch.runner.batch import INTERRUPTED, BatchResult, claim, needs_hash, skip_outcome
from facefusion_batch.runner.journal import UNREADABLE, Journal
from facefusion_batch.runner.progress import Reporter
from facefusion_batch.settings import Settings
from facefusion_batch.targets import Target, discover
from facefusion_batch.workflow.outcome import Outcome


def run_batch(settings: Settings, specs: Sequence[str], executor: Executor, reporter: Reporter,
              journal: Journal | None = None, force: bool = False, retry_failed: bool = False,
              notes: Sequence[str] = (), on_outcome: Callable[[Outcome], None] | None = None) -> BatchResult:
    """Process every target of `specs` on `executor`. With a journal, unchanged finished targets are skipped
    (`force` redoes them), earlier failures are skipped until their file changes (`retry_failed` runs them
    again). No exception from one target ends the batch: it becomes that target's failure. Only an
    interruption (Ctrl-C, SystemExit) ends it early, with `interrupted` set; what was claimed and not finished
    is journaled as interrupted, so the next run does it (resuming from its finished chunks), and the summary
    names the target whose work was cut. `notes` are said after the engine line. `on_outcome` is given each
    target's outcome as it is settled (in the order they finish, on the thread that runs the batch: a watch's
    --json line per file, `FaceSwapper.process`)."""
    targets, rejected = discover(specs, settings.output_dir, settings.output_file, settings.output_pattern)
    run = _Run(targets, journal, reporter, force, retry_failed, executor.concurrent_targets, on_outcome)
    info = executor.start(targets, run)
    for text in info.messages:
        reporter.message(text)
    reporter.message(f"engine: {info.engine} ({', '.join(info.models)})")
    run.use_engine(info)
    for text in notes:
        reporter.message(text)
    refused = [Outcome(str(r.path), r.status, reason=f"{r.path}: {r.reason}") for r in rejected]
    for outcome in refused:
        reporter.message(outcome.reason)
        if on_outcome is not None:
            on_outcome(outcome)
    reporter.expect(len(targets))
    stopped: list[str] = []
    try:
        executor.run(run)
    except (KeyboardInterrupt, SystemExit):
        stopped = run.interrupted()
    stats = executor.stats()
    info = run.engine or info  # a watch's reloaded profile may have changed it
    result = BatchResult(info.engine, list(info.models), stats.providers, warnings=list(run.warnings))
    result.outcomes = refused + [run.outcomes[i] for i in range(len(run.targets)) if i in run.outcomes]
    if stopped:
        result.interrupted = True
        result.outcomes += [Outcome(name, "interrupted", reason=INTERRUPTED) for name in stopped]
    result.source_embeddings_computed = stats.source_embeddings_computed
    result.detector_calls = (sum(o.detector_calls for o in result.outcomes) if stats.detector_calls is None
                             else stats.detector_calls)
    return result


@dataclass
class _Claimed:
    content: str  # the journal's content hash
    done: bool = False
    read: tuple[int, ...] | None = None  # the file's identity when it was hashed (what the journal records)


# Free bytes the output disk must gain, after it filled up, before a run starts targets there again.
ROOM_AGAIN = 64 * 1024 ** 2


@dataclass
class _Full:
    """The output disk filled up: no target is started there until it has room again."""

    directory: Path
    free: int  # bytes free when it was found full


class _Run(Work):
    """The driver's side of one run: claims, journal records, progress and the outcomes by target index."""

    def __init__(self, targets: list[Target], journal: Journal | None, reporter: Reporter, force: bool,
                 retry_failed: bool, ordered: bool, on_outcome: Callable[[Outcome], None] | None = None) -> None:
        self.targets = targets
        self._full: _Full | None = None  # the output disk is full: targets are not started
        self.journal, self.reporter = journal, reporter
        self.force, self.retry_failed = force, retry_failed
        self.output_key = ""
        self.outcomes: dict[int, Outcome] = {}
        self._claimed: dict[int, _Claimed] = {}
        self._abandoned = False
        self._claiming: int | None = None  # the target being claimed
        self._cut: int | None = None  # the target whose work an interruption cut, when the executor knows
        self._display = OrderedProgress(reporter, [str(t.path) for t in targets]) if ordered else None
        self.engine: EngineInfo | None = None  # the engine in use (the summary names it)
        self.warnings: list[str] = []  # said once per run, whatever number of engines said them
        self._licences_told: set[str] = set()  # models the licence notice named
        self._on_outcome = on_outcome

    def use_engine(self, info: EngineInfo) -> None:
        self.engine, self.output_key = info, info.output_key
        self._warn(info)

    def _warn(self, info: EngineInfo) -> None:
        """Say the warnings of the engine `info` describes that this run has not said yet: its models not
        licensed for commercial use (those not named before), settings it can't honour."""
        notice = non_commercial_notice(m for m in info.models if m not in self._licences_told)
        self._licences_told.update(info.models)
        for text in ([notice] if notice else []) + list(info.warnings):
            if text not in self.warnings:
                self.warnings.append(text)
                self.reporter.message(f"ffb: warning: {text}")

    # ---- claims ----------------------------------------------------------------------------------------

    def claims(self, hashes: Callable[[Path], str | None] | None = None) -> Iterator[Claim]:
        for index, target in enumerate(self.targets):  # sees targets added meanwhile (`add`)
            if self._abandoned:
                return
            if index in self._claimed or index in self.outcomes:
                continue  # handed out by an earlier `claims` of this run
            if self._no_room(index, target):
                continue
            if self.journal is None:
                self._claimed[index] = _Claimed("")
                yield Claim(index, target, None)
                continue
            self._claiming = index
            try:
                hashed = hashes(target.path) if hashes else None
                skip, content, resume, read = claim(self.journal, target, self.output_key, self.force,
                                                    self.retry_failed, hashed)
            except OutputFull:  # the journal can't be written: nothing is started until there is room
                self._filled(self.journal.path.parent)
                self._claiming = None
                self._no_room(index, target)
                continue
            except Exception as exc:  # noqa: BLE001 - one target's failure, whatever it is, is not the batch's
                outcome = Outcome(str(target.path), "failed", reason=guard.failure_reason(target.path, exc))
                self._record(index, _Claimed(UNREADABLE), "failed", outcome.reason)
                self._settle(index, outcome)
                continue
            self._claiming = None
            if skip is not None:
                self._settle(index, skip)
                continue
            self._claimed[index] = _Claimed(content, read=read)
            yield Claim(index, target, resume, content, read)

    def _filled(self, directory: Path) -> None:
        if self._full is None:
            self._full = _Full(directory, guard.free_space(directory))

    def _no_room(self, index: int, target: Target) -> bool:
        """While the output disk is full, settle target `index` without starting it: skipped when the
        journal says it is finished (read only), else failed with the output disk's reason (not journaled:
        the next run does it). False once the disk has room again (a watch goes on then)."""
        full = self._full
        if full is None:
            return False
        if guard.free_space(full.directory) >= full.free + ROOM_AGAIN:
            self._full = None
            self.reporter.message(f"ffb: the output disk has room again ({full.directory}); going on")
            return False
        skip = None
        if self.journal is not None:
            try:
                cached = self.journal.cached_hash(target.path)
                skip = skip_outcome(self.journal, target, cached, self.output_key, self.force, self.retry_failed)
            except Exception:  # noqa: BLE001 - it is not started either way
                skip = None
        self._settle(index, skip or Outcome(str(target.path), "failed", cause="output-full",
                                            reason=guard.output_full_reason(target.path, full.directory, False)))
        return True

    def needs_hash(self, target: Target) -> bool:
        return needs_hash(self.journal, target)

    def upcoming(self, after: int) -> tuple[Target, bool] | None:
        for target in self.targets[after + 1:]:
            if target.kind != "video":
                continue
            if self.journal is None:
                return target, False
            try:
                cached = self.journal.cached_hash(target.path)
            except OSError:
                return target, False  # its claim will report it
            if skip_outcome(self.journal, target, cached, self.output_key, self.force, self.retry_failed) is None:
                return target, cached is None
        return None

    def add(self, targets: Sequence[Target]) -> None:
        self.targets.extend(targets)
        if self._display is not None:
            self._display.extend([str(t.path) for t in targets])
        if targets:
            self.reporter.expect(len(targets))

    # ---- what the executor says ------------------------------------------------------------------------

    def started(self, index: int, total: int) -> None:
        if self._display is not None:
            self._display.start(index, total)
        else:
            self.reporter.start(str(self.targets[index].path), total)

    def advance(self, index: int, frames: int) -> None:
        if self._display is not None:
            self._display.advance(index, frames)
        else:
            self.reporter.advance(frames)

    def message(self, text: str) -> None:
        self.reporter.message(text)

    def finished(self, index: int, outcome: Outcome, journal_status: str | None = None) -> None:
        if index in self.outcomes:
            return
        # journaled and in the summary together: a signal arriving in between would leave a target done in
        # the journal and missing from the summary (on the main thread; a signal is raised once both are made)
        with interrupts.deferred():
            claimed = self._claimed.get(index)
            if outcome.cause == "output-full":
                self._filled(Path(outcome.output or self.targets[index].output).parent)
            if claimed is not None:
                claimed.done = True
                if outcome.cause and outcome.status == "failed":
                    journal_status = "interrupted"  # not the target's failure: the next run does it
                self._record(index, claimed, journal_status or outcome.status, outcome.reason, outcome.frames,
                             outcome.seconds, outcome.content_gate, outcome.watermark)
            self._settle(index, outcome)

    def retrying(self, index: int, reason: str) -> None:
        claimed = self._claimed.get(index)
        if claimed is not None:
            self._record(index, claimed, "retrying", reason)

    def abandon(self, reason: str) -> None:
        self._abandoned = True
        for index, target in enumerate(self.targets):
            if index not in self.outcomes:
                outcome = Outcome(str(target.path), "failed", reason=f"{target.path}: {reason}")
                self.finished(index, outcome, "interrupted")

    def cut(self, index: int) -> None:
        self._cut = index

    def interrupted(self) -> list[str]:
        """Journal every claimed target that did not finish as interrupted; returns the names the summary
        gives the interruption: the target whose work was cut (the executor's word, else those claimed and
        unfinished, else the one being claimed), or "(batch)". A target that has its outcome is never named
        again: a signal that lands as its end is recorded (the executor then names it) cut what came next."""
        unfinished = [index for index, claimed in self._claimed.items()
                      if not claimed.done and index not in self.outcomes]
        for index in unfinished:
            self._record(index, self._claimed[index], "interrupted", "interrupted")
        cut = self._open(self._cut) or unfinished or self._open(self._claiming)
        return [str(self.targets[index].path) for index in cut] or ["(batch)"]

    def _open(self, index: int | None) -> list[int]:
        """[index] while target `index` has no outcome yet, else []."""
        return [index] if index is not None and index not in self.outcomes else []

    def _settle(self, index: int, outcome: Outcome) -> None:
        self.outcomes[index] = outcome
        if self._on_outcome is not None:
            self._on_outcome(outcome)
        if self._display is not None:
            self._display.complete(index, outcome)
            return
        self.reporter.finish(outcome.status, outcome.target)
        if outcome.status in ("failed", "interrupted"):
            self.reporter.message(outcome.reason)

    def _record(self, index: int, claimed: _Claimed, status: str, reason: str, frames: int = 0,
                seconds: float = 0.0, content_gate: str = "", watermark: str = "") -> None:
        """Journal a target's outcome; a journal that can't be written is said, and the batch goes on."""
        if self.journal is None:
            return
        target = self.targets[index]
        try:
            self.journal.record(target.path, target.output, claimed.content, self.output_key, status, reason,
                                frames, seconds, content_gate, watermark, claimed.read)
        except OutputFull:
            self._filled(self.journal.path.parent)
            if status in ("done", "no_face"):  # a failure's own reason says the next run does it
                self.reporter.message(f"{target.path}: not recorded in the journal (output disk full); the next "
                                      "run does it again")
        except Exception as exc:  # noqa: BLE001 - the outcome is in the summary; next run redoes the target
            self.reporter.message(guard.one_line(f"{target.path}: not recorded in the journal "
                                                 f"({type(exc).__name__}: {exc}); the next run does it again"))


@dataclass
class _Shown:
    name: str
    total: int = 0
    frames: int = 0
    begun: bool = False
    outcome: Outcome | None = None


class OrderedProgress:
    """Shows targets to a Reporter one after another in batch order while several run at once: frames of
    targets further on are held back until their turn."""

    def __init__(self, reporter: Reporter, names: list[str]) -> None:
        self._reporter = reporter
        self._shown = [_Shown(name) for name in names]
        self._cursor = 0
        self._started = False

    def extend(self, names: list[str]) -> None:
        """Targets added to the run (a watch's next lot) come after those already there."""
        self._shown.extend(_Shown(name) for name in names)

    def start(self, index: int, total: int) -> None:
        shown = self._shown[index]
        shown.total, shown.begun = total, True
        self._flush()

    def advance(self, index: int, frames: int) -> None:
        shown = self._shown[index]
        if shown.outcome is not None:
            return  # late progress of a finished target
        shown.frames += frames
        if index == self._cursor and self._started:
            self._reporter.advance(frames)

    def complete(self, index: int, outcome: Outcome) -> None:
        self._shown[index].outcome = outcome
        self._flush()

    def _flush(self) -> None:
        while self._cursor < len(self._shown):
            shown = self._shown[self._cursor]
            if not self._started:
                if not shown.begun and shown.outcome is None:
                    return  # its turn, but nothing is known about it yet
                if shown.begun and (shown.total or shown.outcome is None or shown.outcome.status not in ("failed", "interrupted")):
                    self._reporter.start(shown.name, shown.total)
                    self._reporter.advance(shown.frames)
                self._started = True
            if shown.outcome is None:
                return
            outcome = shown.outcome
            if outcome.status not in ("failed", "interrupted"):
                self._reporter.advance(max(0, outcome.frames - shown.frames))
            self._reporter.finish(outcome.status, shown.name)
            if outcome.status in ("failed", "interrupted"):
                self._reporter.message(outcome.reason)
            self._cursor += 1
            self._started = False


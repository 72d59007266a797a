"""The executor protocol: how the run driver hands targets to an executor and hears back.

The driver (`facefusion_batch.runner.driver`) owns the run: the output lock, the journal's claims and records, the
progress display, the summary and the exit code. An executor only turns claimed targets into outcomes: it
pulls claims from the `Work` it is given (lazily, when it has room: pulling is what claims a target in the
journal) and tells the `Work` what became of each. A new executor implements `Executor`; the driver needs no
change for it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, Sequence

from facefusion_batch.workflow.outcome import Outcome
from facefusion_batch.targets import Target


@dataclass(frozen=True)
class Claim:
    """A target the journal lets run. `resume_key` names its workspace (None: no journal, no resuming)."""

    index: int  # position among the run's targets
    target: Target
    resume_key: str | None
    content: str | None = None  # the target's sha256, when the journal computed it
    read: tuple[int, ...] | None = None  # its identity (dev, inode, size, times) when that hash was taken


@dataclass(frozen=True)
class EngineInfo:
    """What an executor loaded, once it is ready to take work."""

    engine: str
    models: tuple[str, ...]
    output_key: str  # the journal's key of everything an output depends on besides the target
    messages: tuple[str, ...] = ()  # what loading said (e.g. several faces in the source), shown first
    warnings: tuple[str, ...] = ()  # the engine's once-per-run warnings (the driver adds the licence notice)


@dataclass(frozen=True)
class Stats:
    """Figures for the summary, once the run is over."""

    providers: list[str]
    source_embeddings_computed: int
    detector_calls: int | None  # None: the sum of the outcomes' own counts

    @classmethod
    def of(cls, engine: Any) -> "Stats":
        """The figures of a local engine (a FaceEngine), or none when no engine was loaded."""
        if engine is None:
            return cls([], 0, 0)
        return cls(engine.pool.active_providers(), engine.cache.computed, engine.detector_calls())


class Work(Protocol):
    """The driver's side of a run, as an executor sees it."""

    targets: Sequence[Target]

    def claims(self, hashes: Callable[[Path], str | None] | None = None) -> Iterator[Claim]:
        """The targets to process, claimed one by one as they are pulled (skipped ones are settled by the
        driver and not handed out). `hashes` gives a file's content hash when it was computed ahead."""

    def needs_hash(self, target: Target) -> bool:
        """Whether claiming `target` will have to hash its content (the journal has no current value)."""

    def upcoming(self, after: int) -> tuple[Target, bool] | None:
        """The next video after target `after` that a claim is expected to hand out (judged without hashing
        it), and whether claiming it will have to hash it; None when there is none."""

    def add(self, targets: Sequence[Target]) -> None:
        """More targets for this run (a watch's feed): the next `claims()` hands them out, each with its own
        index even when a target of the same file came before. The reporter is told to expect `targets`."""

    def use_engine(self, info: EngineInfo) -> None:
        """What is processed from now on is processed as `info` says (a watch's reloaded profile, a Ray lot's
        fresh workers): claimed under its output key, its warnings not said yet in this run said, and the
        summary names its engine and models."""

    def started(self, index: int, total: int) -> None:
        """Target `index` has `total` frames (1 for an image) and its frames are being processed."""

    def advance(self, index: int, frames: int) -> None: ...

    def message(self, text: str) -> None: ...

    def finished(self, index: int, outcome: Outcome, journal_status: str | None = None) -> None:
        """Target `index` is over. `journal_status` records another status than the outcome's (e.g. a target
        abandoned when no Ray worker is left is `interrupted`, to be done by the next run)."""

    def retrying(self, index: int, reason: str) -> None:
        """Target `index` is tried again after `reason`."""

    def cut(self, index: int) -> None:
        """An interruption cut target `index`'s work: the summary names it (unless it has its outcome)."""

    def abandon(self, reason: str) -> None:
        """The executor can't go on: every target not finished fails with `reason` (those begun are journaled
        as interrupted, for the next run) and no more claims are handed out."""


class Executor(Protocol):
    # Whether several targets are processed at once: the driver then shows them one after another, in order.
    concurrent_targets: bool

    def start(self, targets: Sequence[Target], work: Work) -> EngineInfo:
        """Load what the targets need (engines, workers); raises a typed error when that fails."""

    def run(self, work: Work) -> None:
        """Process every claim `work` hands out; returns when they are all finished. KeyboardInterrupt ends
        it early (what is in flight is stopped; outcomes that came back were reported)."""

    def stats(self) -> Stats: ...

    def close(self) -> None:
        """Release threads, sessions and workers; safe to call more than once."""

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None:
        """close()"""

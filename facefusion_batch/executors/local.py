"""The local executor: the batch's targets one after another in this process, frames on a thread pool.

While one video's frames are processed the next video is prepared (hashed, probed, its decoder started: see
`Lookahead`), and once its frames are done it is joined, verified and renamed on a finishing thread while
the next one starts. One `LocalExecutor` is one run: it owns that per-run state and closes it.
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Sequence

from facefusion_batch.engines.base import FaceEngine
from facefusion_batch.executors.base import Claim, EngineInfo, Stats, Work
from facefusion_batch.workflow import guard, job
from facefusion_batch.workflow.lookahead import Lookahead, Prepared
from facefusion_batch.workflow.processor import FrameProcessor, load
from facefusion_batch.settings import Settings
from facefusion_batch.workflow.outcome import Outcome
from facefusion_batch.workflow.output_guard import check_output_dir
from facefusion_batch.targets import Target
from facefusion_batch.timing import Timings


class _Progress:
    """One target's progress, told to the run under its index."""

    def __init__(self, work: Work, index: int) -> None:
        self._work, self._index = work, index

    def start(self, total: int) -> None:
        self._work.started(self._index, total)

    def advance(self, frames: int) -> None:
        self._work.advance(self._index, frames)


class LocalExecutor:
    concurrent_targets = False

    def __init__(self, settings: Settings, source: Path,
                 processor: FrameProcessor | None = None, timings: Timings | None = None,
                 on_engine: Callable[[FaceEngine], None] | None = None) -> None:
        """`processor` is one already prepared (its engine is then the caller's to close); `timings` collects stage times;
        `on_engine` is told the engine once it is loaded (metrics time its model calls)."""
        self.settings, self.source = settings, source
        self.processor = processor
        self._owns_engine = processor is None
        self._timings, self._on_engine = timings, on_engine
        self._lookahead: Lookahead | None = None

    # ---- Executor --------------------------------------------------------------------------------------

    def start(self, targets: Sequence[Target], work: Work) -> EngineInfo:
        check_output_dir(self.settings.output_dir)
        self._lookahead = Lookahead(self.settings.temp_path)
        first = next((t for t in targets if t.kind == "video"), None)
        if first is not None:  # prepared while the models load
            self._lookahead.prepare(first.path, hash_content=work.needs_hash(first))
            self._lookahead.current_decoded()  # no decoder runs yet
        messages: list[str] = []
        if self.processor is None:
            self.processor = load(self.settings, self.source, messages.append)
        if self._timings is not None:
            self.processor = self.processor.timed_by(self._timings)
        engine = self.processor.engine
        if self._on_engine is not None:
            self._on_engine(engine)
        return EngineInfo(engine.name, tuple(engine.models), self.processor.output_key, tuple(messages),
                          engine.warnings)

    def run(self, work: Work) -> None:
        """No exception from one target ends the run: it becomes that target's failure. An interruption
        (KeyboardInterrupt, SystemExit) ends it; the target whose work it cut is told to `work.cut`."""
        assert self._lookahead is not None, "start() first"
        finishing: tuple[int, Future] | None = None
        current: int | None = None  # the target an interruption now cuts
        with self._lookahead as lookahead, ThreadPoolExecutor(1, thread_name_prefix="ffb-finish") as finisher:
            try:
                try:
                    for claim in work.claims(lookahead.content_hash):
                        current = claim.index
                        completion = self._guarded(claim, work, lookahead)
                        if finishing is not None:
                            current = finishing[0]  # an interruption now cuts this one's finishing
                            work.finished(finishing[0], finishing[1].result())
                            finishing = None
                        if claim.target.kind == "video":
                            finishing = claim.index, finisher.submit(completion)
                        else:  # an image is finished already: said before the next claim (a full disk stops it)
                            current = claim.index
                            work.finished(claim.index, completion())
                        current = None
                except BaseException:
                    if finishing is not None:  # also on Ctrl-C: the output being joined is completed
                        cut, current = current, finishing[0]  # named if its own finishing was cut
                        self._settle_interrupted(work, *finishing)
                        current = cut
                    raise
                if finishing is not None:
                    current = finishing[0]
                    work.finished(finishing[0], finishing[1].result())
            except BaseException:
                if current is not None:
                    work.cut(current)
                raise

    @staticmethod
    def _settle_interrupted(work: Work, index: int, future: Future) -> None:
        """A target finished while the run is being interrupted. Its failure is journaled as interrupted,
        not failed: Ctrl-C in a terminal also kills ffb's ffmpeg processes, so the failure may be the
        signal's, and the next run must try again."""
        outcome = future.result()
        if outcome.status == "failed":
            outcome.reason += " (while the run was interrupted: the next run tries again)"
            work.finished(index, outcome, "interrupted")
        else:
            work.finished(index, outcome)

    def _guarded(self, claim: Claim, work: Work, lookahead: Lookahead) -> job.Completion:
        """`begin`; whatever it raises (short of an interruption) is the target's failure."""
        try:
            return self.begin(claim, work, lookahead)
        except Exception as exc:  # noqa: BLE001 - one target's failure, whatever it is, is not the batch's
            outcome = Outcome(str(claim.target.path), "failed", reason=guard.failure_reason(claim.target.path, exc))
            return lambda: outcome

    def begin(self, claim: Claim, work: Work, lookahead: Lookahead) -> job.Completion:
        """Start a claimed target (see `job.begin`), having the next video prepared meanwhile."""
        assert self.processor is not None
        target = claim.target

        def ready() -> Prepared | None:
            prepared = lookahead.take(target.path) if target.kind == "video" else None
            self._prepare_following(claim.index, work, lookahead)
            return prepared

        return job.begin(self.processor, target, _Progress(work, claim.index), claim.resume_key, ready,
                         lookahead.current_decoded, claim.content, claim.read)

    @staticmethod
    def _prepare_following(index: int, work: Work, lookahead: Lookahead) -> None:
        """Have the lookahead make the next video ready. Only speed depends on it: when it fails, that video
        is prepared in its turn, and fails there if it must."""
        try:
            following = work.upcoming(index)
            if following:
                lookahead.prepare(following[0].path, hash_content=following[1])
        except Exception:  # noqa: BLE001 - see above; an interruption still ends the run
            pass

    def stats(self) -> Stats:
        return Stats.of(self.processor.engine if self.processor else None)

    def close(self) -> None:
        if self._lookahead is not None:
            self._lookahead.close()
        if self._owns_engine and self.processor is not None:
            self.processor.engine.close()

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

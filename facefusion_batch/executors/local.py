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
from facefusion_batch.memory import apply_memory_limit
from facefusion_batch.pipeline import job
from facefusion_batch.pipeline.batch import check_output_dir, needs_hash
from facefusion_batch.pipeline.journal import Journal
from facefusion_batch.pipeline.lookahead import Lookahead, Prepared
from facefusion_batch.pipeline.processor import FrameProcessor, prepare
from facefusion_batch.settings import Settings
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

    def __init__(self, settings: Settings, source: Path, journal: Journal | None = None,
                 processor: FrameProcessor | None = None, timings: Timings | None = None,
                 on_engine: Callable[[FaceEngine], None] | None = None) -> None:
        """`journal` only lets the first video be hashed ahead (the driver does the claiming); `processor`
        is one already prepared (its engine is then the caller's to close); `timings` collects stage times;
        `on_engine` is told the engine once it is loaded (metrics time its model calls)."""
        self.settings, self.source, self._journal = settings, source, journal
        self.processor = processor
        self._owns_engine = processor is None
        self._timings, self._on_engine = timings, on_engine
        self._lookahead: Lookahead | None = None

    # ---- Executor --------------------------------------------------------------------------------------

    def start(self, targets: Sequence[Target], work: Work) -> EngineInfo:
        check_output_dir(self.settings.output_path)
        apply_memory_limit(self.settings.system_memory_limit)
        self._lookahead = Lookahead(self.settings.temp_path)
        first = next((t for t in targets if t.kind == "video"), None)
        if first is not None:  # prepared while the models load
            self._lookahead.prepare(first.path, hash_content=needs_hash(self._journal, first))
            self._lookahead.current_decoded()  # no decoder runs yet
        messages: list[str] = []
        if self.processor is None:
            self.processor = prepare(self.settings, self.source, messages.append)
        if self._timings is not None:
            self.processor = self.processor.timed_by(self._timings)
        engine = self.processor.engine
        if self._on_engine is not None:
            self._on_engine(engine)
        return EngineInfo(engine.name, tuple(engine.models), self.processor.output_key, tuple(messages))

    def run(self, work: Work) -> None:
        assert self._lookahead is not None, "start() first"
        finishing: tuple[int, Future] | None = None
        with self._lookahead as lookahead, ThreadPoolExecutor(1, thread_name_prefix="ffb-finish") as finisher:
            try:
                for claim in work.claims(lookahead.content_hash):
                    completion = self.begin(claim, work, lookahead)
                    if finishing is not None:
                        work.finished(finishing[0], finishing[1].result())
                        finishing = None
                    finishing = claim.index, finisher.submit(completion)
            finally:
                if finishing is not None:  # also on Ctrl-C: the output being joined is completed
                    work.finished(finishing[0], finishing[1].result())

    def begin(self, claim: Claim, work: Work, lookahead: Lookahead) -> job.Completion:
        """Start a claimed target (see `job.begin`), having the next video prepared meanwhile."""
        assert self.processor is not None
        target = claim.target

        def ready() -> Prepared | None:
            prepared = lookahead.take(target.path) if target.kind == "video" else None
            following = work.upcoming(claim.index)
            if following:
                lookahead.prepare(following[0].path, hash_content=following[1])
            return prepared

        return job.begin(self.processor, target, _Progress(work, claim.index), claim.resume_key, ready,
                         lookahead.current_decoded, claim.content)

    def stats(self) -> Stats:
        engine = self.processor.engine if self.processor else None
        if engine is None:
            return Stats([], 0, 0)
        return Stats(engine.pool.active_providers(), engine.cache.computed, engine.detector_calls())

    def close(self) -> None:
        if self._lookahead is not None:
            self._lookahead.close()
        if self._owns_engine and self.processor is not None:
            self.processor.engine.close()

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

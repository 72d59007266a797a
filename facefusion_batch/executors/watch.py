"""The watch executor: a long-lived feed of targets from watched folders, for `ffb watch`.

The engine and the source face are loaded once. What the folders already hold, then every file that appears
or changes in them, is handed to the run driver once it is complete (`watch_feed.FolderFeed`): the driver
claims it in the journal exactly as for `ffb run` (unchanged finished files are skipped, changed ones redone)
and a local executor sharing this engine processes each lot. The run only ends by a signal (the driver
journals the cut target as interrupted; the next run resumes it from its finished chunks).

SIGHUP (`hangup`) re-reads the settings; the next files are processed with them, on the same engine unless
a setting the engine is built from changed.

With `executor = "ray"` this process loads no models: it joins (or starts) Ray once, and each lot runs on a
fresh `RayExecutor` whose workers load the engine for that lot and stop at its end (simple and correct:
each lot's inputs are checked by the workers, its output key is theirs; the price is an engine load per lot).
"""
from __future__ import annotations

import contextlib
import dataclasses
import signal
import sys
import threading
from pathlib import Path
from typing import Callable, Optional, Sequence

from facefusion_batch.engines.base import FaceEngine
from facefusion_batch.errors import FfbError
from facefusion_batch.executors.base import EngineInfo, Stats, Work
from facefusion_batch.executors.local import LocalExecutor
from facefusion_batch.executors.watch_feed import FolderFeed
from facefusion_batch.listing import listed
from facefusion_batch.memory import apply_memory_limit
from facefusion_batch.workflow.processor import FrameProcessor, Sources, load
from facefusion_batch.settings import FIXED_SETTINGS, Settings
from facefusion_batch.targets import Target, discover, file_key, resolved
from facefusion_batch.timing import Timings
from facefusion_batch.workflow.output_guard import check_output_dir
from facefusion_batch.video.ffmpeg import use_ffmpeg


def _file_of(path: Path) -> object:
    """The file a path names (device and inode: every name of a file gives the same), else its resolved path."""
    return file_key(path) or resolved(path)


class WatchExecutor:

    def __init__(self, settings: Settings, source: Sources, feed: FolderFeed,
                 specs: Sequence[str], reload: Optional[Callable[[], Settings]] = None,
                 timings: Optional[Timings] = None,
                 on_engine: Optional[Callable[[FaceEngine], None]] = None,
                 lost_signal: Optional[Callable[[], None]] = None) -> None:
        """`specs`: the watched directories as the user gave them (outputs and journal records are named as
        `ffb run` with the same targets names them); `reload` gives the settings again (on SIGHUP);
        `lost_signal` raises KeyboardInterrupt when a signal came but its own was lost, called while waiting."""
        self.settings, self.source = settings, source
        self.feed, self.specs = feed, list(specs)
        self._reload, self._timings, self._on_engine = reload, timings, on_engine
        self._lost_signal = lost_signal or (lambda: None)
        self.processor: Optional[FrameProcessor] = None
        self._previous_hup = None
        self.on_ray = settings.executor == "ray"
        self.concurrent_targets = self.on_ray  # Ray runs several targets of a lot at once
        self._ray = None  # the ray module, once joined
        self._ray_started = False  # Ray was started by this watch (so it shuts it down)
        self._ray_stats = Stats([], 0, None)

    # ---- Executor --------------------------------------------------------------------------------------

    def start(self, targets: Sequence[Target], work: Work) -> EngineInfo:
        """Watch first (what lands while the models load is seen), then load the engine and the source."""
        check_output_dir(self.settings.output_dir)
        self._catch_hangup()
        self.feed.say, self.feed.lost_signal = work.message, self._lost_signal
        self.feed.start()
        watching = (f"ffb watch: watching {listed(self.specs)} ("
                    f"{'polling' if self.feed.poll else 'filesystem events'}; a file is taken once unchanged "
                    f"for {self.feed.settle:g} s)")
        if self.on_ray:  # this process loads no models, but joins and probes with ffmpeg
            use_ffmpeg(self.settings.ffmpeg_path)
            apply_memory_limit(self.settings.system_memory_limit)
            info = self._start_ray(work)
            return dataclasses.replace(info, messages=(*info.messages, watching))
        messages: list[str] = []
        self.processor = load(self.settings, self.source, messages.append)
        self._engine_loaded(self.processor.engine)
        engine = self.processor.engine
        messages.append(watching)
        return EngineInfo(engine.name, tuple(engine.models), self.processor.output_key, tuple(messages),
                          engine.warnings)

    def _start_ray(self, work: Work) -> EngineInfo:
        """Join or start Ray for the watch's life, and check once that workers start (a broken cluster or
        missing models: one clear error now, not at the first file); those workers stop again."""
        from facefusion_batch.executors import require_ray
        from facefusion_batch.executors.ray_executor import RayExecutor
        from facefusion_batch.executors.ray_pool import connect

        self._ray = require_ray()
        with contextlib.redirect_stdout(sys.stderr):
            self._ray_started = connect(self._ray, self.settings)
        with RayExecutor(self.settings, self.source, self._lost_signal) as first:
            return first.start([], work)

    def run(self, work: Work) -> None:
        """Until a signal: wait for complete files, hand them to the driver, process them."""
        while True:
            self._lost_signal()
            paths = self.feed.ready()
            if self.feed.woken:
                self.feed.woken = False
                self._reload_settings(work)
            if paths:
                self._process(work, paths)

    def stats(self) -> Stats:
        if self.on_ray:
            return self._ray_stats
        return Stats.of(self.processor.engine if self.processor else None)

    def close(self) -> None:
        if self._previous_hup is not None:
            signal.signal(signal.SIGHUP, self._previous_hup)
            self._previous_hup = None
        self.feed.close()
        processor, self.processor = self.processor, None
        if processor is not None:
            processor.engine.close()
        if self._ray_started and self._ray is not None:
            self._ray_started = False
            self._ray.shutdown()

    def __enter__(self) -> WatchExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- one lot ---------------------------------------------------------------------------------------

    def _process(self, work: Work, paths: list[Path]) -> None:
        targets = self._targets(paths, work)
        if not targets:
            return
        work.add(targets)
        if self.on_ray:
            self._process_on_ray(work, targets)
            return
        with LocalExecutor(self.settings, self.source, processor=self.processor,
                           timings=self._timings) as local:
            local.start(targets, work)
            local.run(work)

    def _process_on_ray(self, work: Work, targets: list[Target]) -> None:
        """One lot on fresh Ray workers: they check the lot's inputs and give the output key the journal
        claims with (their models, as `ffb run --executor ray`)."""
        from facefusion_batch.executors.ray_executor import RayExecutor

        with RayExecutor(self.settings, self.source, self._lost_signal) as ray_executor:
            info = ray_executor.start(targets, work)
            work.use_engine(info)
            try:
                ray_executor.run(work)
            finally:
                stats = ray_executor.stats()
                self._ray_stats = Stats(sorted({*self._ray_stats.providers, *stats.providers}),
                                        self._ray_stats.source_embeddings_computed
                                        + stats.source_embeddings_computed, None)

    def _targets(self, paths: list[Path], work: Work) -> list[Target]:
        """The targets of the settled files, named and placed as `ffb run` over the watched directories
        names and places them (so cron and watch share a journal and an output tree)."""
        wanted = {_file_of(p) for p in paths}
        found, rejected = discover(self.specs, self.settings.output_dir)
        for refused in rejected:
            if _file_of(refused.path) in wanted and refused.status == "failed":
                work.message(f"{refused.path}: {refused.reason}")
        # by the file, not the name: a change through one name of a file is a change of the name done
        return [t for t in found if _file_of(t.path) in wanted]

    # ---- SIGHUP ----------------------------------------------------------------------------------------

    def _catch_hangup(self) -> None:
        """SIGHUP wakes the feed (no more: a handler must not do work); the reload happens in the loop,
        between two lots. `close` puts the previous handler back."""
        if self._reload is not None and threading.current_thread() is threading.main_thread():
            self._previous_hup = signal.signal(signal.SIGHUP, lambda signum, frame: self.feed.wake())

    def _reload_settings(self, work: Work) -> None:
        if self._reload is None:
            return
        try:
            settings = self._reload()
        except FfbError as exc:
            work.message(f"ffb watch: SIGHUP: settings not reloaded ({exc}); going on with those in use")
            return
        fixed = [name for name in FIXED_SETTINGS if getattr(settings, name) != getattr(self.settings, name)]
        if fixed:
            work.message(f"ffb watch: SIGHUP: {', '.join(fixed)} can't change while watching (restart ffb watch "
                         "for that); keeping the value in use")
            settings = dataclasses.replace(settings, **{name: getattr(self.settings, name) for name in fixed})
        if settings == self.settings:
            work.message("ffb watch: SIGHUP: settings unchanged")
            return
        if self.on_ray:  # each lot's workers load the engine from the settings in use
            self.settings = settings
            use_ffmpeg(settings.ffmpeg_path)  # this process's joins
            work.message("ffb watch: SIGHUP: settings reloaded; they apply to the files that come next")
            return
        assert self.processor is not None
        old = self.processor.engine
        try:
            processor, rebuild = self.processor.reloaded(settings, work.message)
        except FfbError as exc:
            work.message(f"ffb watch: SIGHUP: new settings not applied ({exc}); going on with those in use")
            return
        self.processor, self.settings = processor, settings
        if rebuild:
            old.close()
            self._engine_loaded(processor.engine)
        engine = processor.engine
        rebuilt = f" (engine rebuilt: {engine.name} ({', '.join(engine.models)}))" if rebuild else ""
        work.message(f"ffb watch: SIGHUP: settings reloaded{rebuilt}; they apply to the files that come next")
        work.use_engine(EngineInfo(engine.name, tuple(engine.models), processor.output_key, (), engine.warnings))

    def _engine_loaded(self, engine: FaceEngine) -> None:
        if self._on_engine is not None:
            self._on_engine(engine)

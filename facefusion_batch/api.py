"""The public Python API: one batch, the way `ffb run` does it, for programs that embed ffb.

    import facefusion_batch as ffb

    summary = ffb.run("face.jpg", ["clips/"], "swapped/")
    print(summary.counts, summary.failed)

Everything a run opens (the output lock, the journal, engines, threads, Ray) is closed when it returns, so
a program can call `run` any number of times. Errors are the typed exceptions of `facefusion_batch.errors`
(each carries the CLI's `exit_code`); one target's failure is not an exception but a `failed` outcome.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, Sequence, Union

from facefusion_batch.driver import run_batch
from facefusion_batch.engines import preflight
from facefusion_batch.errors import SettingsError
from facefusion_batch.executors.base import Executor
from facefusion_batch.metrics import RunMetrics
from facefusion_batch.pipeline.batch import INTERRUPTED, BatchResult, Outcome, open_state
from facefusion_batch.pipeline.journal import Journal
from facefusion_batch.pipeline.processor import Sources, source_paths
from facefusion_batch.pipeline.progress import QuietReporter, Reporter
from facefusion_batch.pipeline.guard import GuardedReporter
from facefusion_batch.settings import Settings, load_settings

Summary = BatchResult
PathLike = Union[str, Path]


def run(source: PathLike | Sequence[PathLike], targets: PathLike | Sequence[PathLike], output: PathLike | None = None,
        settings: Settings | None = None, *, force: bool = False, retry_failed: bool = False, wait: bool = False,
        reporter: Reporter | None = None, metrics: RunMetrics | None = None,
        lost_signal: Callable[[], None] | None = None) -> Summary:
    """Swap the face of `source` (one image, or several photos of one person, averaged into one identity)
    into every video and image of `targets` (files, directories, globs), writing
    to `output` (else `settings.output_path`). `settings` defaults to ffb's defaults (no profile, no
    environment: use `load_settings` for those). `wait`: wait for another run holding the output instead of
    raising `LockedError`. `reporter` gets progress (default: none; wrap it with `metrics.reporter` when
    passing `metrics`, which then also gets the stage and model times of the frames processed here).
    `lost_signal`: as for `watch` (the Ray executor calls it while it waits)."""
    settings = settings or load_settings(None, {}, {}).settings
    if output is not None:
        settings = dataclasses.replace(settings, output_path=Path(output))
    specs = [str(targets)] if isinstance(targets, (str, Path)) else [str(t) for t in targets]
    if not specs:
        raise SettingsError("no targets given: pass at least one video, image, directory or glob")
    sources = source_paths(source)
    reporter = GuardedReporter(reporter or QuietReporter())  # a display failure never ends the batch
    signing = _check_signing(settings)  # a broken certificate: one error before any work
    if settings.executor == "ray":
        from facefusion_batch.executors import require_ray

        require_ray()  # before the lock: say at once how to install it
    else:  # Ray workers check on their own machines
        from facefusion_batch.models.sessions import usable_settings

        settings, dropped = usable_settings(settings)
        for line in dropped:
            reporter.message(f"ffb: {line}")
        preflight(settings)  # a missing model or a refused setting: said before anything is written
        check_encoder(settings)
    lock, journal = open_state(settings, wait, reporter)
    result = None
    try:
        if metrics is not None:
            metrics.started(journal)
        with _executor(settings, sources[0] if len(sources) == 1 else sources, journal, metrics,
                       lost_signal) as executor:
            result = run_batch(settings, specs, executor, reporter, journal, force, retry_failed,
                               notes=(signing,) if signing else ())
            return result
    finally:
        if metrics is not None:
            metrics.end(result)
        journal.close()
        lock.release()


def watch(source: PathLike | Sequence[PathLike], directories: Sequence[PathLike], settings: Settings, *,
          settle: float = 3.0,
          poll: bool = False, retry_failed: bool = False, wait: bool = False, reporter: Reporter | None = None,
          metrics: RunMetrics | None = None, reload: Callable[[], Settings] | None = None,
          lost_signal: Callable[[], None] | None = None, on_outcome: Callable[[Outcome], None] | None = None
          ) -> Summary:
    """Watch `directories` until a signal (KeyboardInterrupt): process what they hold, then every file that
    appears or changes once it has been unchanged for `settle` seconds (`poll`: poll instead of filesystem
    events). Same journal, lock (held throughout) and output layout as `run` over the same directories.
    `reload` gives the settings again when SIGHUP arrives. `source`: as for `run`. `lost_signal` raises
    KeyboardInterrupt when a signal's own was lost (see `interrupts.Interrupts.raise_lost`); the watch calls it
    while it waits. `on_outcome` hears each file's outcome as it finishes. Returns the summary of everything
    it did."""
    from facefusion_batch.executors.watch import WatchExecutor
    from facefusion_batch.executors.watch_feed import FolderFeed

    specs = [str(d) for d in directories]
    if not specs:
        raise SettingsError("ffb watch needs at least one directory to watch (--target DIR)")
    for spec in specs:
        if not Path(spec).is_dir():
            raise SettingsError(f"{spec}: not a directory; ffb watch watches directories (for single files or "
                                "globs use ffb run)")
    reporter = GuardedReporter(reporter or QuietReporter())
    signing = _check_signing(settings)
    if settings.executor == "ray":  # Ray workers check the providers on their own machines
        from facefusion_batch.executors import require_ray

        require_ray()  # before the lock: say at once how to install it
        usable_reload = reload
    else:
        settings, dropped = _usable(settings)
        for line in dropped:
            reporter.message(f"ffb: {line}")
        preflight(settings)
        check_encoder(settings)
        usable_reload = (lambda: _usable(reload())[0]) if reload is not None else None
    lock, journal = open_state(settings, wait, reporter)
    result = None
    feed = FolderFeed([Path(s) for s in specs], settle, poll)
    sources = source_paths(source)
    faces = sources[0] if len(sources) == 1 else sources
    try:
        if metrics is not None:
            metrics.started(journal)
            metrics.waiting = feed.waiting
        with WatchExecutor(settings, faces, journal, feed, specs, usable_reload,
                           timings=metrics.stage_timings if metrics else None,
                           on_engine=metrics.attach_engine if metrics else None,
                           lost_signal=lost_signal) as executor:
            result = run_batch(settings, [], executor, reporter, journal, retry_failed=retry_failed,
                               notes=(signing,) if signing else (), on_outcome=on_outcome)
            # A watch only ends by a signal: stopped while idle it cut no work, and no failure is recorded.
            result.outcomes = [o for o in result.outcomes if not (o.target == "(batch)" and o.reason == INTERRUPTED)]
            return result
    finally:
        feed.close()
        if metrics is not None:
            metrics.end(result)
        journal.close()
        lock.release()


def check_encoder(settings: Settings) -> None:
    """A chosen video encoder this machine's ffmpeg can't use: one SettingsError at start, not a failure per
    target (`auto` takes libx264 / libvpx-vp9, which every ffmpeg ffb takes has)."""
    from facefusion_batch.video.ffmpeg import encoder_problem

    encoder = settings.output_video_encoder
    if encoder == "auto":
        return
    problem = encoder_problem(encoder)
    if problem:
        raise SettingsError(f"output_video_encoder {encoder}: {problem}; choose another with "
                            "--output-video-encoder (libx264, libx265, libvpx-vp9) or leave it at auto")


def _usable(settings: Settings) -> tuple[Settings, list[str]]:
    from facefusion_batch.models.sessions import usable_settings

    return usable_settings(settings)


def _check_signing(settings: Settings) -> str:
    """Load (or create) the C2PA credential and sign a tiny image with it when this run signs; returns a
    note for the user when outputs are signed with the local certificate."""
    from facefusion_batch.provenance import credentials
    from facefusion_batch.provenance.sign import check_credential, mode_of

    if mode_of(settings) != "c2pa":
        return ""
    credential = credentials.load(settings.c2pa_certificate, settings.c2pa_private_key, settings.cache_path)
    check_credential(credential, settings.c2pa_timestamp_url)
    if not credential.local:
        return ""
    root = credentials.local_paths(settings.cache_path)[1]
    return (f"C2PA: signing with this machine's local certificate: verifiers show the signer as untrusted "
            f"unless they trust {root}; --c2pa-certificate signs as your organisation")


def _executor(settings: Settings, source: Sources, journal: Journal, metrics: RunMetrics | None,
              lost_signal: Callable[[], None] | None = None) -> Executor:
    """The executor the settings choose; the only place that knows them all."""
    if settings.executor == "ray":
        from facefusion_batch.executors.ray_executor import RayExecutor

        return RayExecutor(settings, source, lost_signal)
    from facefusion_batch.executors.local import LocalExecutor

    if metrics is None:
        return LocalExecutor(settings, source, journal)
    return LocalExecutor(settings, source, journal, timings=metrics.stage_timings, on_engine=metrics.attach_engine)

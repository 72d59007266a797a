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
from typing import Sequence, Union

from facefusion_batch.driver import run_batch
from facefusion_batch.errors import SettingsError
from facefusion_batch.executors.base import Executor
from facefusion_batch.metrics import RunMetrics
from facefusion_batch.pipeline.batch import BatchResult, open_state
from facefusion_batch.pipeline.journal import Journal
from facefusion_batch.pipeline.processor import Sources, source_paths
from facefusion_batch.pipeline.progress import QuietReporter, Reporter
from facefusion_batch.pipeline.guard import GuardedReporter
from facefusion_batch.settings import Settings, load_settings

Summary = BatchResult
PathLike = Union[str, Path]


def run(source: PathLike | Sequence[PathLike], targets: PathLike | Sequence[PathLike], output: PathLike | None = None,
        settings: Settings | None = None, *, force: bool = False, retry_failed: bool = False, wait: bool = False,
        reporter: Reporter | None = None, metrics: RunMetrics | None = None) -> Summary:
    """Swap the face of `source` (one image, or several photos of one person, averaged into one identity)
    into every video and image of `targets` (files, directories, globs), writing
    to `output` (else `settings.output_path`). `settings` defaults to ffb's defaults (no profile, no
    environment: use `load_settings` for those). `wait`: wait for another run holding the output instead of
    raising `LockedError`. `reporter` gets progress (default: none; wrap it with `metrics.reporter` when
    passing `metrics`, which then also gets the stage and model times of the frames processed here)."""
    settings = settings or load_settings(None, {}, {}).settings
    if output is not None:
        settings = dataclasses.replace(settings, output_path=Path(output))
    specs = [str(targets)] if isinstance(targets, (str, Path)) else [str(t) for t in targets]
    if not specs:
        raise SettingsError("no targets given: pass at least one video, image, directory or glob")
    sources = source_paths(source)
    if len(sources) > 1 and settings.executor == "ray":
        raise SettingsError("several sources are not supported with the ray executor yet; pass one --source, or "
                            "run with --executor local")
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
    lock, journal = open_state(settings, wait, reporter)
    result = None
    try:
        if metrics is not None:
            metrics.started(journal)
        with _executor(settings, sources[0] if len(sources) == 1 else sources, journal, metrics) as executor:
            result = run_batch(settings, specs, executor, reporter, journal, force, retry_failed,
                               notes=(signing,) if signing else ())
            return result
    finally:
        if metrics is not None:
            metrics.end(result)
        journal.close()
        lock.release()


def _check_signing(settings: Settings) -> str:
    """Load (or create) the C2PA credential and sign a tiny image with it when this run signs; returns a
    note for the user when outputs are signed with the local certificate."""
    from facefusion_batch.provenance import credentials
    from facefusion_batch.provenance.sign import check_credential, mode_of

    if mode_of(settings) != "c2pa":
        return ""
    credential = credentials.load(settings.c2pa_certificate, settings.c2pa_private_key, settings.cache_path)
    check_credential(credential)
    if not credential.local:
        return ""
    root = credentials.local_paths(settings.cache_path)[1]
    return (f"C2PA: signing with this machine's local certificate: verifiers show the signer as untrusted "
            f"unless they trust {root}; --c2pa-certificate signs as your organisation")


def _executor(settings: Settings, source: Sources, journal: Journal, metrics: RunMetrics | None) -> Executor:
    """The executor the settings choose; the only place that knows them all."""
    if settings.executor == "ray":
        from facefusion_batch.executors.ray_executor import RayExecutor

        return RayExecutor(settings, source)
    from facefusion_batch.executors.local import LocalExecutor

    if metrics is None:
        return LocalExecutor(settings, source, journal)
    return LocalExecutor(settings, source, journal, timings=metrics.stage_timings, on_engine=metrics.attach_engine)

"""The public Python API, for programs that embed ffb: a face swapper that loads once, and one-shot runs.

    import facefusion_batch as ffb

    with ffb.FaceSwapper("face.jpg") as swapper:          # the engine and the source face load here, once
        for outcome in swapper.process(["clips/"], "swapped/"):   # outcomes as each target finishes
            print(outcome.target, outcome.status)
        summary = swapper.run(["more/"], "swapped/")      # the same engine again, on this thread

    summary = ffb.run("face.jpg", ["clips/"], "swapped/")  # load, run, close: what `ffb run` does

Each batch takes the output tree's lock and journal as `ffb run` does (unchanged finished targets are skipped)
and closes what it opened; the swapper closes its engine when closed, so a program can build any number. Errors
are the typed exceptions of `facefusion_batch.errors` (each carries the CLI's `exit_code`); one target's
failure is not an exception but a `failed` outcome.
"""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import queue
import threading
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence, Union

from facefusion_batch.runner.driver import run_batch
from facefusion_batch.engines import preflight
from facefusion_batch.errors import SettingsError
from facefusion_batch.executors.base import Executor
from facefusion_batch.runner.metrics import RunMetrics
from facefusion_batch.runner.batch import INTERRUPTED, BatchResult, open_state
from facefusion_batch.runner.journal import Journal
from facefusion_batch.runner.lock import RunLock
from facefusion_batch.workflow.processor import FrameProcessor, Sources, load, source_paths
from facefusion_batch.runner.progress import GuardedReporter, QuietReporter, Reporter
from facefusion_batch.settings import Settings, load_settings
from facefusion_batch.workflow.outcome import Outcome

Summary = BatchResult
PathLike = Union[str, Path]


class FaceSwapper:
    """The engine and the source face(s), loaded once when it is built; `process` and `run` then use them for
    any number of batches. `source`: one image, or several photos of one person (averaged into one
    identity). `settings` defaults to ffb's defaults (no profile, no environment: `load_settings` reads those).
    `on_message` gets what a run says (default: nothing). With `executor = "ray"` or `"processes"` nothing
    loads here: the workers load the engine, once per batch. Close it (or use it as a context manager) when done."""

    def __init__(self, source: PathLike | Sequence[PathLike], settings: Settings | None = None, *,
                 on_message: Callable[[str], None] | None = None) -> None:
        settings = settings or load_settings(None, {}, {}).settings
        say = on_message or (lambda text: None)
        signing = _check_signing(settings)  # a broken certificate: one error before any model loads
        settings = _usable_here(settings, say)
        self._loaded(source_paths(source), settings, signing, say)

    @classmethod
    def _for(cls, sources: tuple[Path, ...], settings: Settings, signing: str,
             on_message: Callable[[str], None]) -> FaceSwapper:
        """One built from settings already checked (`run` checks them before it takes the lock)."""
        swapper = cls.__new__(cls)
        swapper._loaded(sources, settings, signing, on_message)
        return swapper

    def _loaded(self, sources: tuple[Path, ...], settings: Settings, signing: str,
                on_message: Callable[[str], None]) -> None:
        self.settings, self.sources, self._signing, self._say = settings, sources, signing, on_message
        self._source: Sources = sources[0] if len(sources) == 1 else sources
        self.processor: Optional[FrameProcessor] = None
        if settings.executor == "local":  # the others' workers load it, once each per batch
            self.processor = load(settings, self._source, on_message)

    def process(self, targets: PathLike | Sequence[PathLike], output: PathLike | None = None, *,
                force: bool = False, retry_failed: bool = False, wait: bool = False,
                reporter: Reporter | None = None) -> Outcomes:
        """Every video and image of `targets` (files, directories, globs) into `output` (else the settings'
        output_path); yields each target's `Outcome` as it finishes, and the summary is the iterator's
        `summary` once it is exhausted. The batch runs on a thread of its own while you iterate; stopping
        early (or Ctrl-C) interrupts it as Ctrl-C interrupts `ffb run`: the target being processed is
        journaled as interrupted and the next batch resumes it. `force`, `retry_failed`, `wait`: as `run`."""
        return Outcomes(lambda on_outcome: self.run(targets, output, force=force, retry_failed=retry_failed,
                                                    wait=wait, reporter=reporter, on_outcome=on_outcome))

    def run(self, targets: PathLike | Sequence[PathLike], output: PathLike | None = None, *,
            force: bool = False, retry_failed: bool = False, wait: bool = False, reporter: Reporter | None = None,
            metrics: RunMetrics | None = None, lost_signal: Callable[[], None] | None = None,
            on_outcome: Callable[[Outcome], None] | None = None) -> Summary:
        """One batch on this thread, as `process` but returning the summary at its end. `wait`: wait for
        another run holding the output instead of raising `LockedError`. `reporter` gets progress (wrap it
        with `metrics.reporter` when passing `metrics`, which then also gets the stage and model times);
        `lost_signal`: as for `watch`; `on_outcome` gets each outcome as it finishes."""
        settings = _with_output(self.settings, output)
        specs = _specs(targets)
        reporter = GuardedReporter(reporter or QuietReporter())
        lock, journal = open_state(settings, wait, reporter)
        result = None
        try:
            if metrics is not None:
                metrics.started(journal)
            result = self._batch(settings, specs, journal, force=force, retry_failed=retry_failed,
                                 reporter=reporter, metrics=metrics, lost_signal=lost_signal, on_outcome=on_outcome)
            return result
        finally:
            _close(journal, lock, metrics, result)

    def _batch(self, settings: Settings, specs: list[str], journal: Journal, *, force: bool, retry_failed: bool,
               reporter: Reporter, metrics: RunMetrics | None, lost_signal: Callable[[], None] | None,
               on_outcome: Callable[[Outcome], None] | None) -> Summary:
        """The batch over the output tree whose journal is open (its lock held)."""
        with self._executor(settings, metrics, lost_signal) as executor, _interruptible():
            return run_batch(settings, specs, executor, reporter, journal, force, retry_failed,
                             notes=(self._signing,) if self._signing else (), on_outcome=on_outcome)

    def _executor(self, settings: Settings, metrics: RunMetrics | None,
                  lost_signal: Callable[[], None] | None) -> Executor:
        """The executor the settings choose; the only place that knows them all."""
        if settings.executor == "processes":
            from facefusion_batch.executors.processes import ProcessExecutor

            return ProcessExecutor(settings, self._source, lost_signal)
        if self.processor is None:
            from facefusion_batch.executors.ray_executor import RayExecutor

            return RayExecutor(settings, self._source, lost_signal)
        from facefusion_batch.executors.local import LocalExecutor

        return LocalExecutor(settings, self._source, processor=self.processor,
                             timings=metrics.stage_timings if metrics else None,
                             on_engine=metrics.attach_engine if metrics else None)

    def close(self) -> None:
        """Close the engine (its sessions and threads)."""
        processor, self.processor = self.processor, None
        if processor is not None:
            processor.close()

    def __enter__(self) -> FaceSwapper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Outcomes:
    """The outcomes of one `FaceSwapper.process`, as they finish (iterate once); `summary` once all are in."""

    def __init__(self, batch: Callable[[Callable[[Outcome], None]], Summary]) -> None:
        self._batch = batch
        self._started = False
        self.summary: Summary | None = None

    def __iter__(self) -> Iterator[Outcome]:
        if self._started:
            raise RuntimeError("a FaceSwapper.process result is iterated once; call process again")
        self._started = True
        finished: queue.Queue = queue.Queue()
        end = object()
        ended: dict[str, object] = {}
        thread = threading.Thread(target=self._run_batch, args=(finished, end, ended), name="ffb-process")
        thread.start()
        given: list[Outcome] = []
        try:
            while True:
                try:
                    item = finished.get(timeout=0.2)  # short waits: a signal reaches this thread at once
                except queue.Empty:
                    continue
                if item is end:
                    break
                given.append(item)
                yield item
        except BaseException:  # stopped early (GeneratorExit), or Ctrl-C: interrupt the batch as Ctrl-C would
            _interrupt(thread)
            thread.join()
            self.summary = ended.get("summary")  # type: ignore[assignment]
            raise
        thread.join()
        if "error" in ended:
            raise ended["error"]  # type: ignore[misc]
        self.summary = ended["summary"]  # type: ignore[assignment]
        for outcome in self.summary.outcomes:  # those no target settled: an interruption's
            if not any(outcome is seen for seen in given):
                yield outcome


    def _run_batch(self, finished: queue.Queue, end: object, ended: dict[str, object]) -> None:
        """The batch, on its own thread: outcomes go to `finished`, then `end`; the summary or the error that
        ended it to `ended`, for the iterating thread."""
        try:
            ended["summary"] = self._batch(finished.put)
        except BaseException as exc:  # noqa: BLE001 - handed to the iterating thread, which raises it
            ended["error"] = exc
        finally:
            finished.put(end)


# The batch threads `process` runs, while inside their driver: only there may an interruption be delivered
# to them (never in the clean-up after it, which must release the lock and close the journal).
_running: set[int] = set()
_running_lock = threading.Lock()


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    with _running_lock:
        _running.add(threading.get_ident())
    try:
        yield
    finally:
        with _running_lock:
            _running.discard(threading.get_ident())


def _interrupt(thread: threading.Thread) -> None:
    """Raise KeyboardInterrupt in `thread` (as Ctrl-C raises it in the main thread) if it is in its driver."""
    with _running_lock:
        if thread.ident in _running:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                                       ctypes.py_object(KeyboardInterrupt))


def run(source: PathLike | Sequence[PathLike], targets: PathLike | Sequence[PathLike], output: PathLike | None = None,
        settings: Settings | None = None, *, force: bool = False, retry_failed: bool = False, wait: bool = False,
        reporter: Reporter | None = None, metrics: RunMetrics | None = None,
        lost_signal: Callable[[], None] | None = None) -> Summary:
    """One batch, then everything closed: the output tree is locked before any model loads (a second run
    on it leaves at once), then a `FaceSwapper` is built and runs it. Arguments as for `FaceSwapper`
    and its `run`; `lost_signal`: as for `watch` (the Ray executor calls it while it waits)."""
    settings = _with_output(settings or load_settings(None, {}, {}).settings, output)
    specs = _specs(targets)
    sources = source_paths(source)
    reporter = GuardedReporter(reporter or QuietReporter())  # a display failure never ends the batch
    signing = _check_signing(settings)  # a broken certificate: one error before any work
    settings = _usable_here(settings, reporter.message)
    lock, journal = open_state(settings, wait, reporter)
    result = None
    try:
        if metrics is not None:
            metrics.started(journal)
        with FaceSwapper._for(sources, settings, signing, reporter.message) as swapper:
            result = swapper._batch(settings, specs, journal, force=force, retry_failed=retry_failed,
                                    reporter=reporter, metrics=metrics, lost_signal=lost_signal, on_outcome=None)
            return result
    finally:
        _close(journal, lock, metrics, result)


def _close(journal: Journal, lock: RunLock, metrics: RunMetrics | None, result: Summary | None) -> None:
    try:
        if metrics is not None:
            metrics.end(result)
    finally:
        try:
            journal.close()
        finally:
            lock.release()


def _with_output(settings: Settings, output: PathLike | None) -> Settings:
    return settings if output is None else dataclasses.replace(settings, output_path=Path(output))


def _specs(targets: PathLike | Sequence[PathLike]) -> list[str]:
    specs = [str(targets)] if isinstance(targets, (str, Path)) else [str(t) for t in targets]
    if not specs:
        raise SettingsError("no targets given: pass at least one video, image, directory or glob")
    return specs


def _usable_here(settings: Settings, say: Callable[[str], None]) -> Settings:
    """The settings with only the execution providers that load here (Ray workers check on their machines)."""
    if settings.executor == "ray":
        from facefusion_batch.executors import require_ray

        require_ray()  # before the lock and the models: say at once how to install it
        return settings
    settings, dropped = _usable(settings)
    for line in dropped:
        say(f"ffb: {line}")
    preflight(settings)  # a missing model or a refused setting: said before anything is written
    check_encoder(settings)
    return settings


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

    if settings.executor == "processes":
        raise SettingsError("ffb watch runs on threads (--executor local) or Ray; --executor processes is for "
                            "ffb run")
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
        with WatchExecutor(settings, faces, feed, specs, usable_reload,
                           timings=metrics.stage_timings if metrics else None,
                           on_engine=metrics.attach_engine if metrics else None,
                           lost_signal=lost_signal) as executor:
            result = run_batch(settings, [], executor, reporter, journal, retry_failed=retry_failed,
                               notes=(signing,) if signing else (), on_outcome=on_outcome)
            # A watch only ends by a signal: stopped while idle it cut no work, and no failure is recorded.
            result.outcomes = [o for o in result.outcomes if not (o.target == "(batch)" and o.reason == INTERRUPTED)]
    except KeyboardInterrupt:
        if result is None:
            raise
        # The signal that ended the batch raised again while its workers were closed: what it did stands.
    finally:
        feed.close()
        if metrics is not None:
            metrics.end(result)
        journal.close()
        lock.release()
    return result


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

"""The `ffb` command line. Parses flags, loads settings, calls the library, and turns typed errors into one
stderr line and an exit code. Nothing else lives here.

Exit codes: 0 all targets done; 1 some target failed; 2 bad usage or settings; 3 model missing or corrupt;
4 unusable source face; 5 output directory not writable; 6 another run holds the output; 130 interrupted.
`ffb verify`: 0 every C2PA manifest found validates; 1 some file's manifest does not; 2 bad usage.
"""
from __future__ import annotations

import contextvars
import dataclasses
import functools
import inspect
import os
import signal
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from facefusion_batch import cli_options, interrupts, jsonlines
from facefusion_batch.version import __version__
from facefusion_batch.cli_options import MULTI_VALUE_FLAGS, RunOnly, Shared, WatchOnly, panels_of, setting_flags, take
from facefusion_batch.errors import FfbError, SettingsError, SourceError
from facefusion_batch.listing import capped, listed
from facefusion_batch.settings import Engine, Resolved, Settings, check_paths, describe, load_settings
from facefusion_batch.video.ffmpeg import describe_ffmpeg, use_ffmpeg

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False)
models_app = typer.Typer(no_args_is_help=True, help="List, download and verify the neural models.")
app.add_typer(models_app, name="models")


EXIT_INTERRUPTED = 130  # an interrupted command's exit code (SIGINT, or SIGTERM to ffb run)


def reports_errors(command):
    """Turn typed errors into one stderr line and the documented exit code; commands return their code.
    Under --json an error is also one JSON object on stdout (`{"ok": false, "exit_code": N, "error": ...}`),
    so a script reading stdout always gets a line."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        as_json = bool(kwargs.get("as_json"))
        stamp = RunStamp.now()
        try:
            code = command(*args, **kwargs)
        except FfbError as exc:
            _error(command.__name__, exc.exit_code, capped(str(exc)), as_json, stamp)
            raise typer.Exit(exc.exit_code) from None
        except typer.Exit:
            raise
        except KeyboardInterrupt:
            _error(command.__name__, EXIT_INTERRUPTED, "interrupted", as_json, stamp)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except Exception as exc:  # a bug: the traceback follows (no line of ffb's), and a script still gets its line
            _error(command.__name__, 1, f"internal error: {type(exc).__name__}: {exc}", as_json, stamp,
                   say=lambda: None)
            raise
        raise typer.Exit(code or 0)

    return wrapper


@dataclass(frozen=True)
class RunStamp:
    """What identifies one invocation in a log of JSON lines: an id and its start time (UTC)."""

    run_id: str
    started: str

    @staticmethod
    def now() -> "RunStamp":
        return RunStamp(uuid.uuid4().hex, _utc_now())

    def head(self, exit_code: int) -> dict[str, Any]:
        return {"ok": exit_code == 0, "exit_code": exit_code, "run_id": self.run_id, "started": self.started,
                "finished": _utc_now(), "version": __version__}

    def error(self, command: str, exit_code: int, message: str) -> dict[str, Any]:
        return {**self.head(exit_code), "command": command.replace("_", "-"), "error": message,
                "warnings": _said_warnings()}


def _utc_now() -> str:
    return jsonlines.utc()


# Under --json every warning and error ffb says is in the command's JSON document too (`warnings`, `error`);
# when stderr is the file stdout goes to (`-q --json >> log 2>&1`) it is said only there, so that the log
# stays JSON lines.
_JSON_WARNINGS: contextvars.ContextVar[Optional[list[str]]] = contextvars.ContextVar("ffb_json_warnings",
                                                                                      default=None)


def warn(text: str) -> None:
    """Say a warning on stderr and, under --json, in the command's JSON document."""
    gathered = _JSON_WARNINGS.get()
    if gathered is not None and text not in gathered:
        gathered.append(text)
    if gathered is None or not _stderr_is_stdout():
        print(f"ffb: warning: {text}", file=sys.stderr)


def _said_warnings() -> list[str]:
    return list(_JSON_WARNINGS.get() or [])


def _stderr_is_stdout() -> bool:
    """Whether stderr writes to the very file stdout does (2>&1 into one log, or one terminal)."""
    try:
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture)
        return False
    return (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino)


def _error(command: str, code: int, message: str, as_json: bool, stamp: Optional["RunStamp"] = None,
           say: Optional[Callable[[], None]] = None) -> None:
    """Every error ffb reports: its stderr line (`say` shows another form: a usage error as Click draws it) and,
    under --json, its JSON document (then alone when both are one file)."""
    if not as_json or not _stderr_is_stdout():
        if say is not None:
            say()
        else:
            print(f"ffb: error: {message}" if code != EXIT_INTERRUPTED else "ffb: interrupted", file=sys.stderr)
    if as_json:
        jsonlines.emit((stamp or RunStamp.now()).error(command, code, message))


def _load(profile: Optional[Path], flags: dict[str, Any]):
    resolved = load_settings(profile, os.environ, flags)
    for warning in resolved.warnings:
        warn(capped(warning))
    return resolved


def _print_json(data: Any) -> None:
    jsonlines.emit(data)


def run(**options: Any) -> int:
    """Swap the source face into every target video and image.

    FaceFusion's headless-run command line works as it is where ffb can do what it asks (ffb headless-run is
    ffb run); its options ffb lacks are named, ignored when they would not change the output, refused
    otherwise (docs/facefusion-ini.md)."""
    stamp = RunStamp.now()
    resolved = _resolve(options)
    if options["print_settings"]:
        return _show_settings(resolved, options["as_json"])
    shared, own, settings = take(Shared, options), take(RunOnly, options), resolved.settings
    source, targets = _inputs(shared, settings)
    _check_targets_exist(targets)
    metrics = None
    if own.metrics_file:
        from facefusion_batch.runner.metrics import FileMetrics

        # A path it can't write fails here, before anything starts; the output tells several jobs' files apart.
        metrics = FileMetrics(own.metrics_file, {"output": str(settings.output_path)})
    with interrupts.handled() as signals:  # cron's kill (SIGTERM) ends a run like Ctrl-C
        result = _run(settings, source, targets, shared, own.force, metrics, signals)
        with signals.held():  # the summary is printed whole, whatever arrives now
            result.interrupted = result.interrupted or signals.signalled
            code = EXIT_INTERRUPTED if result.interrupted else 1 if result.failed else 0
            if shared.quiet and settings.log_level != "error":  # -q drops progress, not the run's warnings
                for warning in result.warnings:
                    warn(warning)
            _print_summary(result, shared.as_json, stamp, code)
    return code


def watch(**options: Any) -> int:
    """Keep watching directories and swap the source face into every video and image that lands in them.

    Loads the engine and the source face once, processes what the --target directories already hold, then
    every new or changed file once it is complete: its size and modification time unchanged for --settle
    seconds (a file still being uploaded is never started). Same journal, lock and output layout as ffb run
    with the same options, so cron and watch can take turns on the same folders: finished unchanged files
    are skipped, a file replaced after it finished is done again.

    SIGTERM (systemctl stop) or Ctrl-C: the chunk in hand is finished or checkpointed, the target journaled
    as interrupted (the next run resumes it), and ffb exits 0 on SIGTERM, 130 on SIGINT. SIGHUP re-reads
    the profile and applies it to the files that come next (the engine is rebuilt only when its settings
    changed). One identity per watch (several -s photos of one person are averaged): for several people
    run one watch each (see docs/deploy.md).

    Example: ffb watch -s face.jpg -t incoming/ -o swapped/ --metrics-port 9101
    """
    stamp = RunStamp.now()
    resolved = _resolve(options)
    if options["print_settings"]:
        return _show_settings(resolved, options["as_json"])
    shared = take(Shared, options)
    source, targets = _inputs(shared, resolved.settings)
    return _watch(resolved.settings, lambda: _reloaded(options), source, targets, shared,
                  take(WatchOnly, options), stamp)


def _resolve(options: dict[str, Any]) -> Resolved:
    """The settings of a run or watch: its profile, the environment and its flags; ffmpeg chosen."""
    resolved = _load(options["profile"], setting_flags(options))
    use_ffmpeg(resolved.settings.ffmpeg_path)
    return resolved


def _show_settings(resolved: Resolved, as_json: bool) -> int:
    """--print-settings: every setting with its value, origin and role, what runs at once, which ffmpeg."""
    from facefusion_batch.concurrency import concurrency_of

    rows = describe(resolved) + concurrency_of(resolved.settings).rows() + _ffmpeg_rows(resolved)
    if as_json:
        _print_json(rows)
    else:
        _settings_table(rows)
    return 0


def _inputs(shared: Shared, settings: Settings) -> tuple[Path | list[Path], list[str]]:
    """The source (several photos of one person: a list) and the targets, checked before the lock and the
    models: a bad source is exit 4 at once, a missing Ray says at once how to install it."""
    targets = [*(shared.target or []), *(shared.more_targets or [])]
    if not shared.source or not targets:
        raise SettingsError("ffb run needs --source FACE_IMAGE and at least one --target; see ffb run --help")
    sources = list(dict.fromkeys(shared.source))  # the same photo twice is one photo
    check_paths(settings)
    if settings.output_file is not None:
        _check_output_file(settings.output_file, targets)
    if settings.executor == "ray":
        from facefusion_batch.executors import require_ray

        require_ray()
    for path in sources:
        check_source(path)
    return (sources[0] if len(sources) == 1 else sources), targets


def _watch(settings: Settings, reload: Callable[[], Settings], source: Path | list[Path], targets: list[str],
           shared: Shared, watching: WatchOnly, stamp: "RunStamp") -> int:
    """`ffb watch` once its options are checked: until a signal. Exit 0 on SIGTERM (a service stopped), 130 on
    SIGINT; an error before the watch began: its code."""
    from facefusion_batch.api import watch as watch_folders
    from facefusion_batch.runner.metrics import RunMetrics, serve
    from facefusion_batch.runner.progress import make_reporter

    if settings.output_file is not None:
        raise SettingsError(f"--output {settings.output_file}: ffb watch writes into an output directory; "
                            "pass -o DIR")
    metrics = RunMetrics({"output": str(settings.output_path)})
    server = None
    with interrupts.handled() as signals:
        reporter = make_reporter(quiet=shared.quiet or settings.log_level == "error")
        try:
            if watching.metrics_port is not None:
                server = serve(metrics.registry, watching.metrics_port, watching.metrics_bind)
                reporter.message(f"ffb watch: metrics at http://{server.address}:{server.port}/metrics")
            result = watch_folders(source, targets, settings, settle=watching.settle, poll=watching.poll,
                                   retry_failed=shared.retry_failed, wait=shared.wait,
                                   reporter=metrics.reporter(reporter), metrics=metrics, reload=reload,
                                   lost_signal=signals.raise_lost,
                                   on_outcome=_watch_line(stamp) if shared.as_json else None)
        except KeyboardInterrupt:  # before the watch began (e.g. while waiting for the lock)
            result = _interrupted_before_start(settings)
        finally:
            with signals.held():
                if server is not None:
                    server.close()
                metrics.close()
                reporter.close()
        with signals.held():
            code = 0 if signals.signum == signal.SIGTERM else EXIT_INTERRUPTED
            result.interrupted = True
            _print_summary(result, shared.as_json, stamp, code, command="watch")
    return code


def _interrupted_before_start(settings: Settings) -> Any:
    """The result of a batch a signal ended before any target began."""
    from facefusion_batch.runner.batch import INTERRUPTED, BatchResult
    from facefusion_batch.workflow.outcome import Outcome

    return BatchResult(str(settings.engine), [], [], [Outcome("(batch)", "interrupted", reason=INTERRUPTED)],
                       interrupted=True)


def _watch_line(stamp: "RunStamp") -> Callable[[Any], None]:
    """`ffb watch --json`: one line per file as it finishes (a kill -9 loses none already printed)."""
    def emit(outcome: Any) -> None:
        jsonlines.emit({"run_id": stamp.run_id, "started": stamp.started, "time": jsonlines.utc(),
                        "version": __version__, "command": "watch", "event": "target",
                        **outcome_document(dataclasses.asdict(outcome))})
    return emit


def _reloaded(options: dict[str, Any]) -> Settings:
    """The settings again (SIGHUP): the profile re-read, under the same flags; FfbError when it is wrong."""
    settings = _load(options["profile"], setting_flags(options)).settings
    check_paths(settings)
    return settings


def _run(settings: Settings, source: Path | list[Path], targets: list[str], shared: Shared, force: bool, metrics,
         signals: interrupts.Interrupts):
    """The batch's result (through the public API); a signal before the batch began gives an interrupted
    result with no targets."""
    from facefusion_batch.api import run as run_batch
    from facefusion_batch.runner.progress import make_reporter

    reporter = make_reporter(quiet=shared.quiet or settings.log_level == "error")
    reporter = metrics.reporter(reporter) if metrics else reporter
    try:
        return run_batch(source, targets, settings=settings, force=force, retry_failed=shared.retry_failed,
                         wait=shared.wait, reporter=reporter, metrics=metrics, lost_signal=signals.raise_lost)
    except KeyboardInterrupt:
        return _interrupted_before_start(settings)
    finally:
        with signals.held():
            reporter.close()


app.command("run")(reports_errors(cli_options.command(run, Shared, RunOnly)))
app.command("watch")(reports_errors(cli_options.command(watch, Shared, WatchOnly)))
# The panels of `ffb run --help`, each with its options in order.
RUN_HELP_PANELS: dict[str, tuple[str, ...]] = panels_of(run.__signature__)


def outcome_document(outcome: dict[str, Any]) -> dict[str, Any]:
    """A target's outcome in the JSON convention: its target and output as absolute paths ("(batch)", an
    interruption before any target, stays a word)."""
    target = outcome["target"]
    return {**outcome, "target": target if target.startswith("(") else jsonlines.absolute(target),
            "output": jsonlines.absolute(outcome.get("output"))}


def _print_summary(result, as_json: bool, stamp: "RunStamp", code: int, command: str = "run") -> None:
    """The summary as one JSON line or a table; a table that can't be drawn (e.g. rich rejects a name) falls
    back to plain lines: the summary is always printed."""
    if as_json:
        summary = result.to_dict()
        summary.pop("ok", None)
        summary["outcomes"] = [outcome_document(o) for o in summary["outcomes"]]
        summary["warnings"] = list(dict.fromkeys([*_said_warnings(), *summary["warnings"]]))
        jsonlines.emit({**stamp.head(code), "command": command, **summary})
        return
    try:
        _summary_table(result)
    except Exception as exc:  # noqa: BLE001 - any rendering failure; the plain lines still say everything
        print(f"ffb: summary table failed ({type(exc).__name__}); plain summary follows", file=sys.stderr)
        for o in result.outcomes:
            print(f"{o.target!r}\t{o.status}\t{o.frames}\t{o.seconds:.1f}\t{o.reason or o.output or ''}")
        counts = result.to_dict()["counts"]
        print(", ".join(f"{name} {count}" for name, count in counts.items()))


def check_source(path: Path) -> None:
    """The source must be one readable image file: SourceError (exit 4) naming it and the fix otherwise,
    before any model loads."""
    from facefusion_batch.media import IMAGE_EXTENSIONS, image_header_problem

    fix = f"pass --source with a photo of the face ({', '.join(e.lstrip('.') for e in IMAGE_EXTENSIONS)})"
    if path.is_dir():
        raise SourceError(f"{path}: is a directory, not an image; {fix}")
    if not path.exists():
        broken = " (a broken symbolic link)" if path.is_symlink() else ""
        raise SourceError(f"{path}: source image not found{broken}; {fix}")
    if not path.is_file():
        raise SourceError(f"{path}: not a regular file; {fix}")
    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 16)
    except OSError as exc:
        raise SourceError(f"{path}: can't read the source image ({exc.strerror or exc}); {fix}") from None
    problem = image_header_problem(head)
    if problem:
        raise SourceError(f"{path}: {problem}; {fix}")


def _check_targets_exist(specs: list[str]) -> None:
    """A target path that names nothing (not a glob) is a usage error, said before any model loads."""
    import glob

    missing = [spec for spec in specs if not glob.has_magic(spec) and not os.path.lexists(spec)]
    if missing:
        raise SettingsError(f"{', '.join(missing)}: no such file or directory; check the target path (-t) or "
                            "quote a glob ('clips/*.mp4')")


def _check_output_file(output: Path, specs: list[str]) -> None:
    """-o result.mp4 names one output file: the targets must give exactly one file, of the same kind."""
    from facefusion_batch.media import kind_of
    from facefusion_batch.targets import discover

    targets, rejected = discover(specs, output.parent, output)
    found = len(targets) + len(rejected)
    if found > 1:
        raise SettingsError(f"--output {output} names one output file, but the targets give {found} files; pass "
                            "one target, or an output directory (-o DIR) for several")
    if targets and targets[0].kind != kind_of(output):
        def article(kind: str | None) -> str:
            return "a video" if kind == "video" else "an image"

        raise SettingsError(f"--output {output} is {article(kind_of(output))} file name but {targets[0].path} is "
                            f"{article(targets[0].kind)}; give the output {article(targets[0].kind)} extension "
                            f"such as {targets[0].path.suffix}")


def _ffmpeg_rows(resolved) -> list[dict[str, Any]]:
    """--print-settings rows saying which ffmpeg runs: path, version, hardware encoders it lists."""
    info = describe_ffmpeg()
    origin = resolved.origins["ffmpeg_path"] if info.origin == "setting" else info.origin
    encoders = " ".join(info.hardware_encoders) or "none"
    return [{"section": "ffmpeg (in use)", "key": "path", "value": info.path, "origin": origin},
            {"section": "ffmpeg (in use)", "key": "version", "value": info.version or "unknown", "origin": origin},
            {"section": "ffmpeg (in use)", "key": "hardware_encoders", "value": encoders, "origin": origin}]


def _settings_table(rows: list[dict[str, Any]]) -> None:
    from facefusion_batch.tables import print_table

    print_table(("section", "key", "value", "from", "role"),
                [(row["section"], row["key"], row["value"], row["origin"], row.get("role", "")) for row in rows],
                line=lambda r: f"[{r[0]}] {r[1]} = {r[2]}  (from {r[3]}{'; ' + r[4] if r[4] else ''})")


def _summary_table(result) -> None:
    from facefusion_batch.tables import print_line, print_table

    rows = [(o.target, o.status, o.frames, f"{o.seconds:.1f}", o.reason or (o.output or "")) for o in result.outcomes]
    print_table(("target", "status", "frames", "seconds", "output / reason"), rows,
                title=f"engine {result.engine} on {', '.join(result.providers) or 'no session'}",
                line=lambda r: f"{r[0]}: {r[1]}, {r[2]} frames, {r[3]} s" + (f": {r[4]}" if r[4] else ""))
    counts = result.to_dict()["counts"]
    print_line(f"done {counts['done']}, no face {counts['no_face']}, skipped {counts['skipped']}, "
               + (f"blocked {counts['blocked']}, " if counts['blocked'] else "") + f"failed {counts['failed']}"
               + (f", interrupted {counts['interrupted']}" if counts['interrupted'] else ""))


@models_app.command("list")
@reports_errors
def models_list(
    models_path: Optional[Path] = typer.Option(None, help="Models directory (default from settings)."),
    profile: Optional[Path] = typer.Option(None, "--profile", "-p", help="Settings file."),
    as_json: bool = typer.Option(False, "--json", help="JSON on stdout."),
) -> int:
    """Show every known model: its role, whether it is there and intact, its size, its licence and whether
    that licence allows commercial use (yes / no / unknown)."""
    return _report_models(profile, models_path, as_json)


@models_app.command("verify")
@reports_errors
def models_verify(
    models_path: Optional[Path] = typer.Option(None, help="Models directory (default from settings)."),
    profile: Optional[Path] = typer.Option(None, "--profile", "-p", help="Settings file."),
    as_json: bool = typer.Option(False, "--json", help="JSON on stdout."),
) -> int:
    """Check present model files against their checksums; exit 3 if any is corrupt."""
    return _report_models(profile, models_path, as_json, fail_on_corrupt=True)


def _report_models(profile: Optional[Path], models_path: Optional[Path], as_json: bool,
                   fail_on_corrupt: bool = False) -> int:
    from facefusion_batch.models import store
    from facefusion_batch.models.catalog import CATALOG
    from facefusion_batch.models.licence import commercial_use
    from facefusion_batch.models.signature import checked

    settings = _load(profile, {"models_path": models_path}).settings
    memo = store.ChecksumMemo(settings.cache_path / "checksums.json")
    states = [checked(store.inspect(settings.models_path, spec, memo)) for spec in CATALOG.values()]
    rows = [{"name": s.spec.name, "role": _ROLES.get(s.spec.family, s.spec.family), "family": s.spec.family,
             "status": s.status, "size_bytes": _file_size(s.path) if s.status != "missing" else None,
             "path": jsonlines.absolute(s.path), "detail": s.detail, "licence": s.spec.licence,
             "commercial": commercial_use(s.spec)} for s in states]
    if as_json:
        _print_json(rows)
    else:
        from facefusion_batch.tables import print_line, print_table

        print_table(("name", "role", "status", "MB", "commercial", "licence"),
                    [(row["name"], row["role"].removeprefix("face_").removeprefix("embedding_"), row["status"],
                      "" if row["size_bytes"] is None else f"{row['size_bytes'] / 1e6:.1f}", row["commercial"],
                      row["licence"]) for row in rows],
                    title=f"models in {settings.models_path}")
        for row in rows:
            if row["status"] == "corrupt":
                print_line(f"{row['name']}: {row['detail']}")
    corrupt = any(s.status == "corrupt" for s in states)
    return 3 if fail_on_corrupt and corrupt else 0


# FaceFusion's names for the processor roles; the rest are the face analyser's.
_ROLES = {"swapper": "face_swapper", "enhancer": "face_enhancer", "occluder": "face_occluder",
          "parser": "face_parser", "classifier": "face_classifier", "embedding_converter": "embedding_converter",
          "recognizer": "face_recognizer", "detector_scrfd": "face_detector", "detector_yolo": "face_detector",
          "detector_retinaface": "face_detector", "detector_yunet": "face_detector",
          "landmarker": "face_landmarker", "landmarker_68_5": "face_landmarker"}


def _file_size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


@models_app.command("download")
@reports_errors
def models_download(
    names: Optional[list[str]] = typer.Argument(None, help="Model names (see ffb models list); none: the default "
                                                "neural set (inswapper_128, arcface_w600k_r50, scrfd_2.5g). Every "
                                                "swapper, enhancer, mask and classifier model FaceFusion 3.8.1 uses "
                                                "can be named."),
    models_path: Optional[Path] = typer.Option(None, help="Models directory (default from settings)."),
    profile: Optional[Path] = typer.Option(None, "--profile", "-p", help="Settings file."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
) -> int:
    """Download models with resume and checksum check into the models directory (those already there and
    intact are kept). Without a network every file still missing is named, with what to do instead."""
    import difflib

    from facefusion_batch.errors import DownloadError
    from facefusion_batch.models import store
    from facefusion_batch.models.catalog import CATALOG
    from facefusion_batch.models.download import download_model

    settings = _load(profile, {"models_path": models_path}).settings
    wanted = names or ["inswapper_128", "arcface_w600k_r50", "scrfd_2.5g"]
    unknown = [n for n in wanted if n not in CATALOG]
    if unknown:
        hints = [f"{n} (did you mean {close[0]}?)" if (close := difflib.get_close_matches(n, list(CATALOG), 1))
                 else n for n in unknown]
        raise SettingsError(f"unknown model {listed(hints)}; `ffb models list` shows the {len(CATALOG)} names")
    memo = store.ChecksumMemo(settings.cache_path / "checksums.json")
    failed: list[tuple[str, DownloadError]] = []
    for name in wanted:
        spec = CATALOG[name]
        state = store.inspect(settings.models_path, spec, memo)
        if store.usable(state):
            print(f"{name}: {state.path} (already there)", file=sys.stderr)
            continue
        progress = None if quiet else _download_progress(name)
        try:
            path = download_model(spec, settings.models_path, settings.download_mirror, progress)
        except DownloadError as exc:
            failed.append((name, exc))
            continue
        print(f"{name}: {path}", file=sys.stderr)
    if failed:
        raise DownloadError(_not_downloaded(failed, settings.models_path))
    return 0


def _not_downloaded(failed: list[tuple[str, Exception]], models_path: Path) -> str:
    """One line: every model file still missing, the first cause, and the three ways to get them."""
    from facefusion_batch.models.catalog import CATALOG

    specs = [CATALOG[name] for name, _ in failed]
    files = [f for s in specs for f in (s.file, s.hash_file if s.hash_url and not s.sha256 else "") if f]
    return (f"not downloaded: {', '.join(files)} (first cause: {failed[0][1]}); copy them into {models_path} by "
            "hand, set download_mirror (FFB_DOWNLOAD_MIRROR) to a mirror holding the same file names, or pass "
            "--models-path at an existing FaceFusion .assets/models")


def _download_progress(name: str):
    last = [-1]

    def report(done: int, total: int | None) -> None:
        step = done * 10 // total if total else done // (50 << 20)
        if step != last[0]:
            last[0] = step
            size = f"{done / 1e6:.0f}/{total / 1e6:.0f} MB" if total else f"{done / 1e6:.0f} MB"
            print(f"{name}: {size}", file=sys.stderr, flush=True)

    return report


@app.command()
@reports_errors
def status(
    output: Optional[Path] = typer.Argument(None, help="Output directory of earlier runs (default: output_path)."),
    profile: Optional[Path] = typer.Option(None, "--profile", "-p", help="Settings file."),
    as_json: bool = typer.Option(False, "--json", help="JSON on stdout."),
) -> int:
    """Show the journal of an output directory: every target's status, attempts, time and last error."""
    from facefusion_batch.runner.batch import state_dir
    from facefusion_batch.runner.journal import Journal

    settings = _load(profile, {"output_path": output}).settings
    path = state_dir(settings) / "journal.sqlite"
    if not path.is_file():
        raise SettingsError(f"{settings.output_path}: no journal here (no ffb run has written to it yet)")
    journal = Journal(path)
    entries = list(journal.entries())
    journal.close()
    if as_json:  # the paths absolute, as `ffb run --json` gives them
        jsonlines.emit([{"target": jsonlines.absolute(e.target), "status": e.status,
                         "output": _output_in_tree(settings.output_dir, e.output), "attempts": e.attempts,
                         "frames": e.frames,
                         "seconds": round(e.seconds, 2), "reason": e.reason, "updated": e.updated}
                        for e in entries])
        return 0
    rows = [{"target": e.target, "status": e.status, "output": e.output, "attempts": e.attempts,
             "frames": e.frames, "seconds": round(e.seconds, 2), "reason": e.reason,
             "updated": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.updated))} for e in entries]
    from facefusion_batch.tables import print_table

    print_table(("target", "status", "attempts", "updated", "reason"),
                [(row["target"], row["status"], row["attempts"], row["updated"], row["reason"]) for row in rows],
                title=f"journal of {settings.output_path}",
                line=lambda r: f"{r[0]}: {r[1]}, attempts {r[2]}, {r[3]}" + (f": {r[4]}" if r[4] else ""))
    return 0


def _output_in_tree(tree: Path, recorded: str) -> str | None:
    """An output's absolute path: the journal keeps it as the run was given it, relative to where that run
    started; found inside the output tree by its trailing parts when that was elsewhere."""
    here = Path(jsonlines.absolute(recorded) or "")
    root = Path(jsonlines.absolute(tree) or "")
    if Path(recorded).is_absolute() or here.is_relative_to(root):
        return str(here)
    parts = Path(recorded).parts
    found = next((root.joinpath(*parts[k:]) for k in range(1, len(parts)) if root.joinpath(*parts[k:]).exists()),
                 None)
    return str(found or here)


@app.command("detect-gpus")
@reports_errors
def detect_gpus(
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON on stdout."),
) -> int:
    """Show which NVIDIA GPUs and ONNX Runtime providers ffb can use, and which flags to pass.

    Lists the GPUs nvidia-smi sees: name, free memory, load, driver and CUDA version.

    Tries each ONNX Runtime provider (TensorRT, CUDA, CPU) on a tiny model. Only one that loads counts:
    onnxruntime-gpu lists CUDA even where no GPU or CUDA library is present.

    Ends with advice to copy, e.g. --execution-providers 'cuda cpu' --execution-device-ids 1.
    Exits 0 even without a GPU: ffb then runs on the CPU.
    """
    from facefusion_batch import hardware

    gpus, reason = hardware.query_nvidia_smi()
    findings = hardware.report(gpus, reason, hardware.onnxruntime_providers())
    info = describe_ffmpeg()
    if as_json:
        _print_json({**findings, "ffmpeg": dataclasses.asdict(info)})
    else:
        print(hardware.render_text(findings), end="")
        print(f"ffmpeg: {info.path} ({info.origin}, version {info.version or 'unknown'}); hardware encoders built "
              f"in: {' '.join(info.hardware_encoders) or 'none'}")
    return 0


@app.command()
@reports_errors
def benchmark(
    resolutions: Optional[list[str]] = typer.Argument(None, help="Clip sizes: 240p 360p 480p 540p 720p 1080p 1440p "
                                                      "4k (FaceFusion's 2160p), or a range such as 240p..4k (every "
                                                      "size in between; the whole range takes minutes). Default: "
                                                      "360p 720p."),
    engine: Optional[Engine] = typer.Option(None, help="auto, neural or offline, for both runs of a comparison."),
    profile: Optional[Path] = typer.Option(None, "--profile", "-p", help="Settings of the base run (default: "
                                           "built-in defaults, plus FFB_* environment)."),
    compare: Optional[Path] = typer.Option(None, "--compare", help="Settings file of a second run on the same "
                                           "clips (on its own, not layered on --profile); prints compare/base "
                                           "ratios."),
    seconds: float = typer.Option(3.0, "--seconds", help="Length of each clip (25 fps)."),
    source: Optional[Path] = typer.Option(None, "--source", "-s", help="Face swapped in. Default: "
                                          "examples/source.jpg of the ffb repository, when run from it."),
    face: Optional[Path] = typer.Option(None, "--face", help="Photo of the person the clips show. Default: the "
                                        "source photo, mirrored."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON on stdout."),
) -> int:
    """Measure speed, stage times, detector calls, peak memory and temp disk on clips of a real face.

    Makes (once, cached under cache_path/bench) a clip per size of a head on a tripod: the --face photo over
    a textured backdrop, drifting by a fraction of a pixel with sensor noise, with an audio track. Each
    configuration then runs in a fresh process: a batch of two targets (the clip twice) through the whole
    pipeline, then the frame processor alone (detect/track + swap) over the clip's frames decoded into
    memory first, with the same threads: the model-bound limit.

    Reports end-to-end and model-bound fps, ms per frame per stage (summed over threads), CPU ms per frame
    of ffb and of its ffmpeg processes (where a small machine's time goes) and the cores kept busy,
    detector calls and faces swapped per frame, peak RSS of the run's process, peak temp disk (sampled every
    20 ms; the sampling's own CPU is not counted as ffb's), and how long the second target takes from its start
    to its first frame in and done.

    Examples: ffb benchmark 720p --engine offline --compare memory.ini
              ffb benchmark 240p..4k
    """
    from facefusion_batch.bench import runner

    plan = runner.make_plan(resolutions or [], engine, profile, compare, seconds, source, face)
    result = runner.run(plan, lambda line: print(f"ffb benchmark: {line}", file=sys.stderr, flush=True))
    if as_json:
        _print_json(result)
    else:
        print(runner.render(result), end="")
    return 0


@app.command()
@reports_errors
def verify(
    paths: list[Path] = typer.Argument(..., help="Files, or directories searched recursively for images and "
                                       "videos."),
    trust: Optional[list[Path]] = typer.Option(None, "--trust", help="PEM root certificate to trust (e.g. your "
                                               "organisation's root, or cache_path/c2pa/local-root.pem); "
                                               "repeat for more."),
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON on stdout."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="An ffb output directory: a file found "
                                          "elsewhere (renamed, stripped, re-encoded) is linked to the record of "
                                          "its journal that wrote it, by the file's watermark."),
) -> int:
    """Check what files say about their making: ffb's AI-modified metadata mark, the C2PA manifest and the
    invisible watermark.

    For each file: whether it carries ffb's metadata mark; whether a C2PA manifest is present (embedded,
    or a sidecar NAME.ext.c2pa, e.g. clip.webm.c2pa, next to a file whose format can't hold one); whether it validates: trusted, valid (signer untrusted:
    the signature and hashes check out but the signer's root is not in the trust list; pass --trust), or
    invalid with the reason (e.g. assertion.bmffHash.mismatch: the video was changed after signing); the
    digital source type, the tool and model that made it, and the ffb journal record when the file lies in
    an ffb output tree (<output>/.ffb/journal.sqlite). The watermark ffb puts in the frames is read too: its
    payload identifies the output even after the manifest was stripped or the file re-encoded, scaled or
    cropped; with --output the journal record that wrote it is found by that payload.

    Exits 1 when any file claims a manifest that does not validate, else 0.
    """
    from facefusion_batch.runner.journal import lookup
    from facefusion_batch.provenance import verify as checker

    anchors = "".join(checker.trust_anchors(path) or "" for path in trust or []) or None
    findings = []
    for path in checker.files_of(paths):
        findings.append(checker.inspect(path, anchors, output, lookup))
        if not as_json:
            _print_finding(findings[-1])
    if as_json:
        _print_json([_finding_document(f.to_dict()) for f in findings])
    elif not findings:
        print("ffb verify: no images or videos found", file=sys.stderr)
    elif any(f.validation.startswith("valid") for f in findings):
        print("ffb verify: signer untrusted = signature and hashes check out, but the signer's root is not "
              "trusted here; pass --trust ROOT.pem (ffb's local root: cache_path/c2pa/local-root.pem)",
              file=sys.stderr)
    return 1 if any(f.failed for f in findings) else 0


def _finding_document(finding: dict[str, Any]) -> dict[str, Any]:
    """A verify finding in the JSON convention: file and journal paths absolute (its times: jsonlines)."""
    journal = finding.get("journal")
    if journal:
        journal = {**journal, "journal": jsonlines.absolute(journal.get("journal")),
                   "target": jsonlines.absolute(journal.get("target"))}
    return {**finding, "file": jsonlines.absolute(finding["file"]), "journal": journal}


def _print_finding(finding) -> None:
    """One file's findings as indented lines, printed literally (file names are never markup)."""
    from rich.text import Text

    from facefusion_batch.tables import stdout_console

    console = stdout_console()
    state = "no C2PA manifest" if finding.c2pa == "none" else f"C2PA {finding.c2pa}: {finding.validation}"
    style = {"invalid": "bold red", "trusted": "green"}.get(finding.validation, "yellow" if finding.validation else "")
    rows = [("metadata mark", "yes" if finding.metadata_mark else "no"),
            ("source type", finding.digital_source_type), ("tool", finding.software_agent or finding.tool),
            ("model", finding.model), ("signer", finding.signer), ("parent", finding.parent),
            ("source face", finding.source_face_sha256 and f"sha256 {finding.source_face_sha256}")]
    if finding.watermark or finding.soft_binding:
        rows.append(("watermark", f"{finding.watermark} (sync {finding.watermark_sync}, bits {finding.watermark_bits})" if finding.watermark
                     else f"not found (the manifest names {finding.soft_binding})"))
    if finding.journal:
        j = finding.journal
        if j.get("matched_by") == "watermark":
            rows.append(("journal", f"{j['status']} from {j['target']} as {j['output']} (matched by watermark)"))
        else:
            rows.append(("journal", f"{j['status']} from {j['target']}"
                                    f"{'' if j['output_unchanged'] else ' (file changed since it was written)'}"))
    console.print(Text(finding.file, style="bold"), soft_wrap=True)
    console.print(Text(f"  {state}", style=style), soft_wrap=True)
    for problem in finding.problems:
        console.print(Text(f"    {problem}"), soft_wrap=True)
    for name, value in rows:
        if value:
            console.print(Text(f"  {name + ':':15} {value}"), soft_wrap=True)


@app.command()
def version() -> None:
    """Print the version."""
    print(f"ffb {__version__}")


def _print_version(value: bool) -> None:
    if value:
        print(f"ffb {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(show_version: bool = typer.Option(False, "--version", "-V", is_eager=True, callback=_print_version,
                                            metavar="", help="Print the version and exit.")) -> None:
    """ffb: batch face swap for videos and images.

    Example: ffb run --source face.jpg --target clips/ --output swapped/ --many-faces"""


def reflow(text: str) -> str:
    """A command's help with each paragraph on one line, for the terminal to wrap at its own width (rich
    keeps the docstring's line breaks, which left a word alone on a line at most widths). A paragraph with
    an indented line (an example block) keeps its lines."""
    paragraphs = text.strip().split("\n\n")
    return "\n\n".join(p if any(line.startswith(" ") for line in p.splitlines()[1:]) else " ".join(p.split())
                       for p in paragraphs)


for _group in (app, models_app):
    for _info in _group.registered_commands:
        _info.help = reflow(_info.help if _info.help is not None else inspect.getdoc(_info.callback) or "")


def main(argv: Optional[list[str]] = None) -> int:
    """Run the CLI in-process and return the exit code (tests call this)."""
    args = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in args
    token = _JSON_WARNINGS.set([] if as_json else None)
    try:
        return _main(args, as_json)
    except KeyboardInterrupt:  # outside any command's own handling, e.g. while a lazy import runs
        _error(_command_of(args), EXIT_INTERRUPTED, "interrupted", as_json)
        return EXIT_INTERRUPTED
    finally:
        _JSON_WARNINGS.reset(token)


def _command_of(args: list[str]) -> str:
    return next((a for a in args if not a.startswith("-")), "")


def _main(args: list[str], as_json: bool) -> int:
    from facefusion_batch import facefusion_flags

    try:  # a FaceFusion command line: its names made ffb's, its options ffb lacks dropped or refused
        translated = facefusion_flags.translate(args, _own_flags(args), _own_flags(args, valued=True), _is_target)
    except SettingsError as exc:
        _error(args[0], exc.exit_code, str(exc), as_json)
        return exc.exit_code
    if translated.warning:
        warn(translated.warning)
    args = join_multi_values(translated.args)
    for refused in (empty_path, _flag_given_a_value, several_sources):  # what Click would misread
        problem = refused(args)
        if problem:
            _error(_command_of(args), 2, problem, as_json)
            return 2
    try:
        code = app(args=args, prog_name="ffb", standalone_mode=False)
    except typer.Abort:
        print("Aborted!", file=sys.stderr)
        return 1
    except typer.TyperException as exc:  # usage: an unknown flag, a value not among the choices
        if not hasattr(exc, "format_message"):
            raise
        _suggest_choice(exc)
        _error(_command_of(args), exc.exit_code, exc.format_message(), as_json, say=functools.partial(_show_usage_error, exc))
        return exc.exit_code
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code if isinstance(code, int) else 0


_BOOLEAN_WORDS = ("true", "false", "yes", "no", "on", "off", "1", "0")


def _flag_given_a_value(args: list[str]) -> str | None:
    """`--many-faces true`: an on/off flag takes no value, and the word after it would be read as a target
    (`true`, swapped into and failed). Refused with the way to write it."""
    flags = _own_flags(args) - _own_flags(args, valued=True)
    for flag, word in zip(args, args[1:]):
        if flag in flags and word.lower() in _BOOLEAN_WORDS and not os.path.exists(word):
            negative = _negative_of(flag, args)
            off = f", {negative} to turn it off" if negative else ""
            return (f"{flag} {word}: {flag} is an on/off flag and takes no value ({word!r} would be read as a "
                    f"target); write {flag} alone to turn it on{off}")
    return None


def _negative_of(flag: str, args: list[str]) -> str:
    """The --no-... form of an on/off flag of the command, or ''."""
    name = {"headless-run": "run"}.get(args[0], args[0])
    command = typer.main.get_command(app).commands.get(name)
    for param in getattr(command, "params", []):
        if flag in param.opts and param.secondary_opts:
            return param.secondary_opts[0]
    return ""


def _own_flags(args: list[str], valued: bool = False) -> frozenset[str]:
    """The flags of the command `args` runs (run or watch; FaceFusion's headless-run is run); with `valued`
    only those taking a value."""
    name = {"headless-run": "run"}.get(args[0], args[0]) if args else ""
    command = typer.main.get_command(app).commands.get(name) if name in ("run", "watch") else None
    if command is None:
        return frozenset()
    return frozenset(flag for param in command.params for flag in (*param.opts, *param.secondary_opts)
                     if not valued or not getattr(param, "is_flag", True))


def join_multi_values(args: list[str]) -> list[str]:
    """`--processors face_swapper face_enhancer` as one value `face_swapper face_enhancer` (settings split it),
    taking every word up to the next flag as argparse's nargs='+' does; a repeated flag adds to its list."""
    if not args or args[0] not in ("run", "watch"):
        return args
    out: list[str] = []
    value_at: dict[str, int] = {}  # flag -> index of its joined value in `out`
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return out + args[index:]
        name, equals, value = arg.partition("=")
        index += 1
        if name not in MULTI_VALUE_FLAGS:
            out.append(arg)
            continue
        words = [value] if equals else []
        while not equals and index < len(args) and not args[index].startswith("-") \
                and not _names_a_file(args[index]):
            words.append(args[index])
            index += 1
        if not words:
            out.append(name)  # no value: Typer reports it
        elif name in value_at:
            out[value_at[name]] += " " + " ".join(words)
        else:
            out += [name, " ".join(words)]
            value_at[name] = len(out) - 1
    return out


def _names_a_file(word: str) -> bool:
    """A target after a multi-value flag (`--processors face_swapper clips/a.mp4`): a path, a media file name or
    a file that exists. No processor, mask type, region, area or padding value looks like one."""
    from facefusion_batch.media import kind_of

    return "/" in word or os.sep in word or kind_of(Path(word)) is not None or os.path.exists(word)


def _is_target(word: str) -> bool:
    """A video or directory: never a source image, so a target (after FaceFusion's --source-paths)."""
    from facefusion_batch.media import kind_of

    return kind_of(Path(word)) == "video" or os.path.isdir(word)


_EMPTY_FIX = {"-o": "directory or file", "--output": "directory or file", "-t": "file, directory or glob",
              "--target": "file, directory or glob"}


def empty_path(args: list[str]) -> str | None:
    """A file, directory or target flag given an empty value (`-o ''`, `--output=`: an unset $OUT in a cron
    line): it would be read as "." (outputs written into, or every file taken from, the working directory);
    refused instead."""
    name = {"headless-run": "run"}.get(args[0], args[0]) if args else ""
    callback = next((c.callback for c in app.registered_commands
                     if (c.name or getattr(c.callback, "__name__", "").replace("_", "-")) == name), None)
    if callback is None:
        return None
    flags = {flag for key, parameter in inspect.signature(callback, eval_str=True).parameters.items()
             if isinstance(parameter.default, typer.models.OptionInfo)
             and ("Path" in str(parameter.annotation) or key == "target")
             for flag in parameter.default.param_decls or (f"--{key.replace('_', '-')}",)}
    for index, arg in enumerate(args):
        flag, equals, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if flag not in flags or (not equals and index + 1 == len(args)):
            continue
        if (value if equals else args[index + 1]).strip() == "":
            return (f"{flag} is empty (an unset variable in the command line?); give it a "
                    f"{_EMPTY_FIX.get(flag, 'path')}, or leave the flag out")
    return None


def several_sources(args: list[str]) -> str | None:
    """FaceFusion takes several sources after one -s (`-s a.jpg b.jpg`); here the second would be taken as
    a positional target and get the face swapped in. An image right after the source is refused instead
    (ffb takes several sources as repeated -s)."""
    if not args or args[0] not in ("run", "watch"):
        return None
    from facefusion_batch.media import kind_of

    for index, arg in enumerate(args[:-2]):
        if arg in ("-s", "--source") and not args[index + 2].startswith("-") \
                and kind_of(Path(args[index + 2])) == "image":
            return (f"several sources after one -s ({args[index + 1]} {args[index + 2]}): give each its own -s "
                    f"(-s {args[index + 1]} -s {args[index + 2]}) to average them into one identity; if "
                    f"{args[index + 2]} is a target, pass it with -t")
    return None


def _suggest_choice(exc: Any) -> None:
    """A misspelt choice (`'inswaper_128' is not one of 'a', 'b', ...`) gets a did-you-mean."""
    import difflib
    import re

    message = getattr(exc, "message", None)
    found = re.search(r"'([^']*)' is not one of (.*)", message or "", re.DOTALL)
    if not found:
        return
    close = difflib.get_close_matches(found.group(1), re.findall(r"'([^']*)'", found.group(2)), n=1, cutoff=0.6)
    if close:
        exc.message = f"{message.rstrip().rstrip('.')} (did you mean {close[0]}?)"


def _show_usage_error(exc: Any) -> None:
    """As Typer shows it when it handles the error itself."""
    try:
        from typer import rich_utils

        rich_utils.rich_format_error(exc)
    except ImportError:  # pragma: no cover - rich is a dependency
        exc.show()

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
import typing
from typing import Any, Callable, Optional

import typer

from facefusion_batch import __version__, interrupts, jsonlines
from facefusion_batch.errors import FfbError, SettingsError, SourceError
from facefusion_batch.listing import capped, listed
from facefusion_batch.settings import (Engine, ExecutorKind, FaceEnhancerModel, FaceOccluderModel,
                                       FaceParserModel, FaceSelectorGender, FaceSelectorMode, FaceSelectorOrder,
                                       FaceLandmarkerModel, FaceSelectorRace, FaceSwapperModel, FrameTransport,
                                       LabelPosition,
                                       OutputProvenance, ContentGate, VideoEncoder, VideoMemoryStrategy, VideoPreset,
                                       check_paths,
                                       choices, describe, load_settings)
from facefusion_batch.video.ffmpeg import describe_ffmpeg, use_ffmpeg

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False)
models_app = typer.Typer(no_args_is_help=True, help="List, download and verify the neural models.")
app.add_typer(models_app, name="models")


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
            _error(command.__name__, 130, "interrupted", as_json, stamp)
            raise typer.Exit(130) from None
        except Exception as exc:  # a bug: the traceback follows, and a script still gets its line
            if as_json:
                jsonlines.emit(stamp.error(command.__name__, 1, f"internal error: {type(exc).__name__}: {exc}"))
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


def _error(command: str, code: int, message: str, as_json: bool, stamp: "RunStamp") -> None:
    """An error: its stderr line and, under --json, its JSON document (then alone when both are one file)."""
    if not as_json or not _stderr_is_stdout():
        print(f"ffb: error: {message}" if code != 130 else "ffb: interrupted", file=sys.stderr)
    if as_json:
        jsonlines.emit(stamp.error(command, code, message))


def _load(profile: Optional[Path], flags: dict[str, Any]):
    resolved = load_settings(profile, os.environ, flags)
    for warning in resolved.warnings:
        warn(capped(warning))
    return resolved


def _print_json(data: Any) -> None:
    jsonlines.emit(data)


@app.command()
@reports_errors
def run(
    source: Optional[list[Path]] = typer.Option(None, "--source", "-s", help="Image of the face to put into the "
                                                "targets; repeat (-s a.jpg -s b.jpg) to average several photos "
                                                "of one person into one identity (neural engine); FaceFusion's "
                                                "--source-paths a.jpg b.jpg works too."),
    target: Optional[list[str]] = typer.Option(None, "--target", "-t", help="Video, image, directory (searched "
                                               "recursively) or quoted glob ('clips/**/*.mp4': outputs mirror the "
                                               "tree below clips/); repeat, or list more after it (FaceFusion's "
                                               "--target-path works too)."),
    more_targets: Optional[list[str]] = typer.Argument(None, metavar="TARGET", help="More targets, e.g. "
                                                       "what an unquoted clips/*.mp4 expands to.", show_default=False),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Output directory (mirrors the target tree), "
                                          "or with one target the output file (-o result.mp4; FaceFusion's "
                                          "--output-path works too). Default: output_path from the profile, "
                                          "else ./output"),
    profile: Optional[Path] = typer.Option(None, "--profile", "-p", help="Settings file: a FaceFusion "
                                           "facefusion.ini as it is (FaceFusion's --config-path works too), or "
                                           "ffb's .ini or .toml. Precedence: defaults < profile < FFB_* env < "
                                           "flags."),
    many_faces: bool = typer.Option(False, "--many-faces", help="Swap every face (same as --face-selector-mode many)."),
    face_selector_mode: Optional[FaceSelectorMode] = typer.Option(None, help="Which faces to swap: many, one "
                                                                  "(largest; ffb's default), reference (faces "
                                                                  "like --reference-face; FaceFusion's default)."),
    reference_face: Optional[Path] = typer.Option(None, "--reference-face", help="Image of the face to replace; "
                                                  "implies --face-selector-mode reference."),
    engine: Optional[Engine] = typer.Option(None, help="auto (neural if its models are "
                                         "present, else offline), neural, offline."),
    models_path: Optional[Path] = typer.Option(None, help="Directory of .onnx models (a FaceFusion .assets/models "
                                               "directory works)."),
    face_detector_model: Optional[str] = typer.Option(None, metavar="MODEL", help="Neural face detector: "
                                                      + ", ".join(choices("face_detector_model")) + " (FaceFusion's "
                                                      "yolo_face works too)."),
    face_detector_size: Optional[str] = typer.Option(None, metavar="SIZE", help="Detector input size: 640 or "
                                                     "FaceFusion's 640x640 (square)."),
    face_detector_score: Optional[float] = typer.Option(None, help="0..1: minimum detection score (default 0.5)."),
    processors: Optional[str] = typer.Option(None, metavar="PROCESSOR...", help="face_swapper, optionally followed "
                                             "by face_enhancer (neural engine), e.g. --processors face_swapper "
                                             "face_enhancer."),
    face_swapper_model: Optional[FaceSwapperModel] = typer.Option(None, help="Swapper model (FaceFusion's names; "
                                                                  "default inswapper_128)."),
    face_swapper_weight: Optional[float] = typer.Option(None, help="0..1: 0.5 the source identity as is, higher "
                                                        "keeps more of the target's own."),
    face_swapper_pixel_boost: Optional[str] = typer.Option(None, metavar="SIZE", help="Swap at this crop size, "
                                                           "e.g. 512x512 (tiled into model-size patches); default "
                                                           "the model's size."),
    face_enhancer_model: Optional[FaceEnhancerModel] = typer.Option(None, help="Enhancer model (with --processors "
                                                                    "... face_enhancer)."),
    face_enhancer_blend: Optional[int] = typer.Option(None, help="0..100: how much of the enhanced face is used "
                                                      "(default 80)."),
    face_enhancer_weight: Optional[float] = typer.Option(None, help="0..1: CodeFormer's fidelity (others ignore "
                                                         "it)."),
    face_mask_types: Optional[str] = typer.Option(None, metavar="TYPE...", help="Masks for the paste: box, "
                                                  "occlusion, region, area (neural engine), e.g. "
                                                  "--face-mask-types box occlusion."),
    face_mask_blur: Optional[float] = typer.Option(None, help="0..1: blur of the box mask's edge (default 0.3)."),
    face_mask_padding: Optional[str] = typer.Option(None, metavar="PERCENT...", help="Box mask padding, 1 to 4 "
                                                    "percentages: top right bottom left."),
    face_mask_regions: Optional[str] = typer.Option(None, metavar="REGION...", help="Face parts the region mask "
                                                    "keeps: " + " ".join(choices("face_mask_regions")) + "."),
    face_mask_areas: Optional[str] = typer.Option(None, metavar="AREA...", help="Face areas the area mask keeps: "
                                                  + " ".join(choices("face_mask_areas")) + "."),
    face_occluder_model: Optional[FaceOccluderModel] = typer.Option(None, help="Occlusion mask model (many: every "
                                                                    "XSeg, the strictest wins)."),
    face_parser_model: Optional[FaceParserModel] = typer.Option(None, help="Region mask model."),
    face_landmarker_model: Optional[FaceLandmarkerModel] = typer.Option(None, help="68-point landmarker for the "
                                                                        "area mask (default 2dfan4; many: both)."),
    face_landmarker_score: Optional[float] = typer.Option(None, help="0..1: landmarker score a face needs, else "
                                                          "the 68-from-5 estimate is used (default 0.5)."),
    face_selector_order: Optional[FaceSelectorOrder] = typer.Option(None, help="Order of a frame's faces; "
                                                                    "--face-selector-mode one takes the first."),
    face_selector_gender: Optional[FaceSelectorGender] = typer.Option(None, help="Only faces of this gender "
                                                                      "(auto: the source face's; needs the "
                                                                      "fairface model)."),
    face_selector_race: Optional[FaceSelectorRace] = typer.Option(None, help="Only faces of this race (auto: the "
                                                                  "source face's; needs the fairface model)."),
    face_selector_age_start: Optional[int] = typer.Option(None, help="Only faces of at least this age (fairface)."),
    face_selector_age_end: Optional[int] = typer.Option(None, help="Only faces younger than this age (fairface)."),
    reference_face_distance: Optional[float] = typer.Option(None, help="0..1: how unlike --reference-face a face "
                                                            "may be and still be swapped (FaceFusion's scale; "
                                                            "default 0.3, lower is stricter)."),
    face_detector_min_size: Optional[int] = typer.Option(None, help="Offline engine: find faces down to this "
                                                         "many pixels by scanning tiles (slower; 0: off)."),
    execution_providers: Optional[str] = typer.Option(None, metavar="PROVIDER...", help="Providers in order "
                                                      "of preference: cpu, cuda, tensorrt, e.g. "
                                                      "--execution-providers cuda cpu."),
    execution_device_id: Optional[str] = typer.Option(None, metavar="ID...", help="GPU indices, e.g. "
                                                      "--execution-device-id '0 1' (FaceFusion's "
                                                      "--execution-device-ids 0 1 works too); several need "
                                                      "--executor processes."),
    execution_thread_count: Optional[int] = typer.Option(None, help="Frame worker threads."),
    execution_queue_count: Optional[int] = typer.Option(None, help="Frames in flight per worker thread."),
    execution_inference_slots: Optional[int] = typer.Option(None, help="Model calls allowed at once (0: 1 on a "
                                                            "GPU, the thread count on CPU)."),
    ffmpeg_path: Optional[Path] = typer.Option(None, help="ffmpeg executable to use (default: the bundled one); "
                                               "must be version 6.0 or newer."),
    output_video_encoder: Optional[VideoEncoder] = typer.Option(None, help="ffmpeg video encoder."),
    output_video_preset: Optional[VideoPreset] = typer.Option(None, help="Encoder speed preset."),
    output_video_quality: Optional[int] = typer.Option(None, help="0..100, higher is better (maps to CRF)."),
    output_image_quality: Optional[int] = typer.Option(None, help="0..100: JPEG/WebP quality of image targets' "
                                                       "outputs (default 95)."),
    output_image_scale: Optional[float] = typer.Option(None, help="0.25..8: image outputs at this multiple of "
                                                       "the target's size (default 1)."),
    temp_path: Optional[Path] = typer.Option(None, help="Directory for temporary frames and chunks."),
    cache_path: Optional[Path] = typer.Option(None, help="Directory of the source-face cache and the local C2PA "
                                              "signing certificate (may be read-only once that exists)."),
    state_path: Optional[Path] = typer.Option(None, help="Directory for the journal and lock (default: "
                                              "OUTPUT/.ffb)."),
    shared_path: Optional[Path] = typer.Option(None, help="Ray executor: directory every node mounts at the same "
                                               "path, where chunks of a split video meet."),
    chunk_size: Optional[int] = typer.Option(None, help="Frames per chunk (bounds temporary disk use)."),
    temp_frame_format: Optional[str] = typer.Option(None, metavar="FORMAT", help="Format of the temporary frames: "
                                                    + ", ".join(choices("temp_frame_format")) + " (FaceFusion's "
                                                    "jpeg works too)."),
    frame_transport: Optional[FrameTransport] = typer.Option(
        None, help="temp: frames spooled through --temp-path in chunks; memory: no temporary frame files."),
    keypoint_reuse: Optional[bool] = typer.Option(None, "--keypoint-reuse/--no-keypoint-reuse",
                                                  help="Reuse and track faces while motion is small."),
    video_memory_strategy: Optional[VideoMemoryStrategy] = typer.Option(
        None, help="strict: free sessions between targets; moderate: shrink GPU arena; tolerant: keep all."),
    system_memory_limit: Optional[int] = typer.Option(None, help="Memory limit in GB (0: none)."),
    no_marking: bool = typer.Option(False, "--no-marking", help="Don't mark outputs as AI-modified at all: no "
                                    "metadata, no C2PA (not advised)."),
    output_provenance: Optional[OutputProvenance] = typer.Option(
        None, help="c2pa: signed C2PA content credentials + metadata (default); metadata: metadata only; off."),
    c2pa_certificate: Optional[Path] = typer.Option(None, help="Your organisation's signing certificate chain "
                                                    "(PEM, signer first); default: a local one under cache_path."),
    c2pa_private_key: Optional[Path] = typer.Option(None, help="Private key (PEM, unencrypted) of "
                                                    "--c2pa-certificate."),
    c2pa_timestamp_url: Optional[str] = typer.Option(None, metavar="URL", help="RFC 3161 time-stamp authority: "
                                                     "signatures stay valid after the certificate expires."),
    visible_label: Optional[str] = typer.Option(None, help="Draw this text (e.g. \"AI-generated\") in a corner of "
                                                "every swapped frame and image."),
    visible_label_position: Optional[LabelPosition] = typer.Option(None, help="Corner of the visible label."),
    visible_label_size: Optional[float] = typer.Option(None, help="Label text height as a fraction of the "
                                                       "frame height (default 0.03)."),
    visible_label_opacity: Optional[float] = typer.Option(None, help="Label opacity 0..1 (default 0.8)."),
    watermark: bool = typer.Option(False, "--watermark", help="Invisible watermark: the output's id in every "
                                   "swapped frame (off by default: shows as grain on flat areas, see "
                                   "docs/provenance.md)."),
    no_watermark: bool = typer.Option(False, "--no-watermark", help="No invisible watermark (the default; "
                                      "overrides a profile's output_watermark = true)."),
    content_gate: Optional[ContentGate] = typer.Option(None, help="auto: check the source and each target for "
                                                       "explicit content and block flagged targets (default); "
                                                       "off: no check (recorded in every output)."),
    executor: Optional[ExecutorKind] = typer.Option(None, help="local: this process; processes: worker processes "
                                                "on this machine, spread over the GPUs; ray: spread the batch over "
                                                "a Ray cluster (needs the ray extra of facefusion-batch)."),
    workers: Optional[int] = typer.Option(None, help="Worker processes of --executor processes (0: planned from "
                                          "cores, GPUs and GPU memory)."),
    ray_address: Optional[str] = typer.Option(None, help="Ray cluster to join: auto or ray://host:10001 (implies "
                                              "--executor ray); without it Ray starts on this machine."),
    force: bool = typer.Option(False, "--force", help="Redo targets the journal says are finished and unchanged."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Also retry targets whose last run failed "
                                      "though they are unchanged (changed and new targets always run)."),
    wait: bool = typer.Option(False, "--wait", help="If another ffb run holds this output, wait for it instead "
                                                    "of exiting (exit code 6)."),
    print_settings: bool = typer.Option(False, "--print-settings", help="Show the resolved settings and exit."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary on stdout as one line of JSON (run id, "
                                 "start/end time UTC, version, engine, counts, outcomes); errors too."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress output."),
    log_level: Optional[str] = typer.Option(None, metavar="LEVEL", help="info: progress and notes; error: only "
                                            "errors and the summary (FaceFusion's warn and debug: info)."),
    metrics_file: Optional[Path] = typer.Option(None, "--metrics-file", help="Write Prometheus metrics to this "
                                                "file every 15 s and at the end, atomically: for node_exporter's "
                                                "textfile collector, a *.prom file in its directory."),
) -> int:
    """Swap the source face into every target video and image.

    FaceFusion's headless-run command line works as it is where ffb can do what it asks (ffb headless-run is
    ffb run); its options ffb lacks are named, ignored when they would not change the output, refused
    otherwise (docs/facefusion-ini.md)."""
    stamp = RunStamp.now()
    flags: dict[str, Any] = {
        "output_path": output, "engine": engine, "models_path": models_path,
        "face_detector_model": face_detector_model, "face_detector_min_size": face_detector_min_size,
        "face_detector_size": face_detector_size, "face_detector_score": face_detector_score,
        "reference_face_distance": reference_face_distance, "output_image_quality": output_image_quality,
        "output_image_scale": output_image_scale,
        "temp_frame_format": temp_frame_format, "log_level": log_level,
        "processors": processors, "face_swapper_model": face_swapper_model,
        "face_swapper_weight": face_swapper_weight, "face_swapper_pixel_boost": face_swapper_pixel_boost,
        "face_enhancer_model": face_enhancer_model, "face_enhancer_blend": face_enhancer_blend,
        "face_enhancer_weight": face_enhancer_weight, "face_mask_types": face_mask_types,
        "face_mask_blur": face_mask_blur, "face_mask_padding": face_mask_padding,
        "face_mask_regions": face_mask_regions, "face_mask_areas": face_mask_areas,
        "face_occluder_model": face_occluder_model, "face_parser_model": face_parser_model,
        "face_landmarker_model": face_landmarker_model, "face_landmarker_score": face_landmarker_score,
        "face_selector_order": face_selector_order, "face_selector_gender": face_selector_gender,
        "face_selector_race": face_selector_race, "face_selector_age_start": face_selector_age_start,
        "face_selector_age_end": face_selector_age_end,
        "execution_providers": execution_providers,
        "execution_device_ids": execution_device_id, "execution_thread_count": execution_thread_count,
        "execution_queue_count": execution_queue_count, "execution_inference_slots": execution_inference_slots,
        "ffmpeg_path": ffmpeg_path,
        "output_video_encoder": output_video_encoder, "output_video_preset": output_video_preset,
        "output_video_quality": output_video_quality, "temp_path": temp_path, "chunk_size": chunk_size,
        "cache_path": cache_path, "state_path": state_path, "shared_path": shared_path,
        "frame_transport": frame_transport, "keypoint_reuse": keypoint_reuse,
        "video_memory_strategy": video_memory_strategy, "system_memory_limit": system_memory_limit,
        "face_selector_mode": "many" if many_faces else face_selector_mode,
        "reference_face_path": reference_face, "output_marking": False if no_marking else None,
        "executor": executor or ("ray" if ray_address else None), "ray_address": ray_address, "workers": workers,
        "output_provenance": output_provenance, "c2pa_certificate": c2pa_certificate,
        "c2pa_private_key": c2pa_private_key, "c2pa_timestamp_url": c2pa_timestamp_url,
        "visible_label": visible_label,
        "visible_label_position": visible_label_position, "visible_label_size": visible_label_size,
        "visible_label_opacity": visible_label_opacity, "output_watermark": True if watermark else False if no_watermark else None,
        "content_gate": content_gate,
    }
    if reference_face and not (many_faces or face_selector_mode):
        flags["face_selector_mode"] = "reference"
    resolved = _load(profile, flags)
    settings = resolved.settings
    use_ffmpeg(settings.ffmpeg_path)
    if print_settings:
        from facefusion_batch.concurrency import concurrency_of

        rows = describe(resolved) + concurrency_of(resolved.settings).rows() + _ffmpeg_rows(resolved)
        if as_json:
            _print_json(rows)
        else:
            _settings_table(rows)
        return 0
    target = [*(target or []), *(more_targets or [])]
    if not source or not target:
        raise SettingsError("ffb run needs --source FACE_IMAGE and at least one --target; see ffb run --help")
    sources = list(dict.fromkeys(source))  # the same photo twice is one photo
    check_paths(settings)
    if settings.output_file is not None:
        _check_output_file(settings.output_file, target)

    if settings.executor == "ray":
        from facefusion_batch.executors import require_ray

        require_ray()  # before the lock: say at once how to install it
    for path in sources:
        check_source(path)  # before the lock and the models: exit 4 at once
    watching = _WATCHING.get()
    if watching is not None:  # `ffb watch`: these options, one long-lived run (see `watch` below)
        return _watch(settings, lambda: _reloaded(profile, flags), sources[0] if len(sources) == 1 else sources,
                      target, watching, wait, quiet, retry_failed, as_json, stamp)
    _check_targets_exist(target)
    metrics = None
    if metrics_file:
        from facefusion_batch.runner.metrics import FileMetrics

        # A path it can't write fails here, before anything starts; the output tells several jobs' files apart.
        metrics = FileMetrics(metrics_file, {"output": str(settings.output_path)})
    with interrupts.handled() as signals:  # cron's kill (SIGTERM) ends a run like Ctrl-C
        result = _run(settings, sources[0] if len(sources) == 1 else sources, target, wait, quiet, force,
                      retry_failed, metrics, signals)
        with signals.held():  # the summary is printed whole, whatever arrives now
            result.interrupted = result.interrupted or signals.signalled
            code = 130 if result.interrupted else 1 if result.failed else 0
            if quiet and settings.log_level != "error":  # -q drops progress, not the run's warnings
                for warning in result.warnings:
                    warn(warning)
            _print_summary(result, as_json, stamp, code)
    return code


# `ffb run --help` in groups, so that ~60 options read as a few short lists (and an 80-column terminal
# shows every flag's name whole). An option not listed here shows under "Options".
RUN_HELP_PANELS: dict[str, tuple[str, ...]] = {
    "Faces and files": ("source", "target", "output", "profile"),
    "Face selector": ("many_faces", "face_selector_mode", "reference_face", "face_selector_order",
                      "face_selector_gender", "face_selector_race", "face_selector_age_start",
                      "face_selector_age_end", "reference_face_distance"),
    "Processors (FaceFusion's flags; neural engine)": (
        "processors", "face_swapper_model", "face_swapper_weight", "face_swapper_pixel_boost",
        "face_enhancer_model", "face_enhancer_blend", "face_enhancer_weight"),
    "Face masks (FaceFusion's flags)": ("face_mask_types", "face_mask_blur", "face_mask_padding",
                                        "face_mask_regions", "face_mask_areas", "face_occluder_model",
                                        "face_parser_model", "face_landmarker_model", "face_landmarker_score"),
    "Engine, models, face detection": ("engine", "models_path", "face_detector_model", "face_detector_size",
                                       "face_detector_score", "face_detector_min_size"),
    "Face tracking": ("keypoint_reuse",),
    "Execution": ("execution_providers", "execution_device_id", "execution_thread_count",
                  "execution_queue_count", "execution_inference_slots", "video_memory_strategy",
                  "system_memory_limit", "ffmpeg_path", "temp_path", "chunk_size", "temp_frame_format",
                  "frame_transport", "cache_path", "state_path", "shared_path"),
    "Output": ("output_video_encoder", "output_video_preset", "output_video_quality", "output_image_quality",
               "output_image_scale"),
    "Marking and provenance": ("no_marking", "output_provenance", "c2pa_certificate", "c2pa_private_key",
                               "c2pa_timestamp_url",
                               "visible_label", "visible_label_position", "visible_label_size",
                               "visible_label_opacity", "watermark", "no_watermark", "content_gate"),
    "Batch": ("executor", "workers", "ray_address", "force", "retry_failed", "wait", "print_settings", "as_json", "quiet",
              "log_level", "metrics_file"),
}


LONG_CHOICES = 14  # characters: a longer `<a|b|c>` list squeezes the flag names; it goes in the help text


def _group_help(command: Any, panels: dict[str, tuple[str, ...]]) -> None:
    """Put each named parameter of `command` in its help panel, and show a long list of choices as a short
    metavar (the last word of the flag) with the choices in the help text (Typer reads both when it builds
    the help, after this)."""
    import inspect
    import typing

    parameters = inspect.signature(command).parameters
    for panel, names in panels.items():
        for name in names:
            parameters[name].default.rich_help_panel = panel
    for name, hint in typing.get_type_hints(inspect.unwrap(command)).items():
        values = typing.get_args(next((a for a in typing.get_args(hint) if a is not type(None)), hint))
        option = parameters[name].default if name in parameters else None
        if hint in (bool, Optional[bool]) and isinstance(option, typer.models.OptionInfo) and option.metavar is None:
            option.metavar = ""  # a flag takes no value: no `<bool>` beside it (it read as if it took one)
            continue
        if not values or not all(isinstance(v, str) for v in values) or not isinstance(option, typer.models.OptionInfo):
            continue
        if len("|".join(values)) > LONG_CHOICES and option.metavar is None:
            option.metavar = name.rsplit("_", 1)[-1].upper()
            if not all(value in (option.help or "") for value in values):
                option.help = f"{option.help} Choices: {', '.join(values)}."


_group_help(run, RUN_HELP_PANELS)


@dataclass(frozen=True)
class WatchOptions:
    """What `ffb watch` adds to the options of `ffb run`."""

    settle: float
    poll: bool
    metrics_port: Optional[int]
    metrics_bind: str


# Set (for one call) by the `watch` command, which runs `run`'s option handling: run then hands over to _watch.
_WATCHING: contextvars.ContextVar[Optional[WatchOptions]] = contextvars.ContextVar("ffb_watching", default=None)
# Options of `ffb run` that `ffb watch` does not take: every file is done once per change anyway (--force would
# have nothing to mean after the first lot), and the metrics are served (--metrics-port), not written.
_NOT_WATCH = ("force", "metrics_file")


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
    watching = WatchOptions(options.pop("settle"), options.pop("poll"), options.pop("metrics_port"),
                            options.pop("metrics_bind"))
    token = _WATCHING.set(watching)
    try:
        return run.__wrapped__(**options, **{name: _RUN_DEFAULTS[name] for name in _NOT_WATCH})
    finally:
        _WATCHING.reset(token)


def _watch_signature() -> None:
    """`watch` takes `run`'s options (declared once, there) less _NOT_WATCH, plus its own."""
    own = [
        inspect.Parameter("settle", inspect.Parameter.KEYWORD_ONLY, annotation=float, default=typer.Option(
            3.0, "--settle", min=0.0, help="Seconds a file must stay unchanged (size and modification time) "
                                           "before it is taken: longer for slow uploads.")),
        inspect.Parameter("poll", inspect.Parameter.KEYWORD_ONLY, annotation=bool, default=typer.Option(
            False, "--poll", help="Poll the directories (every second) instead of filesystem events: for network "
                                  "filesystems (NFS, SMB) where events from other machines never arrive.")),
        inspect.Parameter("metrics_port", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[int],
                          default=typer.Option(None, "--metrics-port", min=0, max=65535, help="Serve Prometheus "
                                               "metrics at http://BIND:PORT/metrics while watching (e.g. 9101).")),
        inspect.Parameter("metrics_bind", inspect.Parameter.KEYWORD_ONLY, annotation=str, default=typer.Option(
            "127.0.0.1", "--metrics-bind", help="Address the metrics endpoint listens on (0.0.0.0: every "
                                                "interface; it has no authentication).")),
    ]
    taken = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in _RUN_SIGNATURE.parameters.values()
             if p.name not in _NOT_WATCH]
    parameters = taken + own
    watch.__signature__ = inspect.Signature(parameters, return_annotation=int)
    watch.__annotations__ = {**{p.name: p.annotation for p in parameters}, "return": int}


def _watch(settings, reload, source_path: Path | list[Path], target: list[str], watching: WatchOptions, wait: bool,
           quiet: bool, retry_failed: bool, as_json: bool, stamp: "RunStamp") -> int:
    """`ffb watch` once `run` has checked the options: until a signal. Exit 0 on SIGTERM (a service stopped),
    130 on SIGINT; an error before the watch began: its code."""
    from facefusion_batch.api import watch as watch_folders
    from facefusion_batch.runner.metrics import RunMetrics, serve
    from facefusion_batch.runner.batch import INTERRUPTED, BatchResult
    from facefusion_batch.workflow.outcome import Outcome
    from facefusion_batch.runner.progress import make_reporter

    if settings.output_file is not None:
        raise SettingsError(f"--output {settings.output_file}: ffb watch writes into an output directory; "
                            "pass -o DIR")
    metrics = RunMetrics({"output": str(settings.output_path)})
    server = None
    with interrupts.handled() as signals:
        reporter = make_reporter(quiet=quiet or settings.log_level == "error")
        try:
            if watching.metrics_port is not None:
                server = serve(metrics.registry, watching.metrics_port, watching.metrics_bind)
                reporter.message(f"ffb watch: metrics at http://{server.address}:{server.port}/metrics")
            result = watch_folders(source_path, target, settings, settle=watching.settle, poll=watching.poll,
                                   retry_failed=retry_failed, wait=wait, reporter=metrics.reporter(reporter),
                                   metrics=metrics, reload=reload, lost_signal=signals.raise_lost,
                                   on_outcome=_watch_line(stamp) if as_json else None)
        except KeyboardInterrupt:  # before the watch began (e.g. while waiting for the lock)
            result = BatchResult(str(settings.engine), [], [], [Outcome("(batch)", "failed", reason=INTERRUPTED)],
                                 interrupted=True)
        finally:
            with signals.held():
                if server is not None:
                    server.close()
                metrics.close()
                reporter.close()
        with signals.held():
            code = 0 if signals.signum == signal.SIGTERM else 130
            result.interrupted = True
            _print_summary(result, as_json, stamp, code, command="watch")
    return code


def _watch_line(stamp: "RunStamp") -> Callable[[Any], None]:
    """`ffb watch --json`: one line per file as it finishes (a kill -9 loses none already printed)."""
    def emit(outcome: Any) -> None:
        jsonlines.emit({"run_id": stamp.run_id, "started": stamp.started, "time": jsonlines.utc(),
                        "version": __version__, "command": "watch", "event": "target",
                        **outcome_document(dataclasses.asdict(outcome))})
    return emit


def _reloaded(profile: Optional[Path], flags: dict[str, Any]):
    """The settings again (SIGHUP): the profile re-read, under the same flags; FfbError when it is wrong."""
    settings = _load(profile, flags).settings
    check_paths(settings)
    return settings


def _run(settings, source_path: Path | list[Path], target: list[str], wait: bool, quiet: bool, force: bool,
         retry_failed: bool, metrics, signals: interrupts.Interrupts):
    """The batch's result (through the public API); a signal before the batch began gives an interrupted
    result with no targets."""
    from facefusion_batch.api import run as run_batch
    from facefusion_batch.runner.batch import INTERRUPTED, BatchResult
    from facefusion_batch.workflow.outcome import Outcome
    from facefusion_batch.runner.progress import make_reporter

    reporter = make_reporter(quiet=quiet or settings.log_level == "error")
    reporter = metrics.reporter(reporter) if metrics else reporter
    result = None
    try:
        result = run_batch(source_path, target, settings=settings, force=force, retry_failed=retry_failed,
                           wait=wait, reporter=reporter, metrics=metrics, lost_signal=signals.raise_lost)
    except KeyboardInterrupt:
        result = BatchResult(str(settings.engine), [], [], [Outcome("(batch)", "failed", reason=INTERRUPTED)],
                             interrupted=True)
    finally:
        with signals.held():
            reporter.close()
    return result


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
               + (f"blocked {counts['blocked']}, " if counts['blocked'] else "") + f"failed {counts['failed']}")


_RUN_SIGNATURE = inspect.signature(run.__wrapped__, eval_str=True)
_RUN_DEFAULTS = {name: _RUN_SIGNATURE.parameters[name].default.default for name in _NOT_WATCH}
_watch_signature()
app.command("watch")(reports_errors(watch))


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

    Ends with advice to copy, e.g. --execution-providers 'cuda cpu' --execution-device-id 1.
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
    20 ms), and how long the second target takes from its start to its first frame in and done.

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
        rows.append(("watermark", f"{finding.watermark} (sync {finding.watermark_sync})" if finding.watermark
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
        _error(_command_of(args), 130, "interrupted", as_json, RunStamp.now())
        return 130
    finally:
        _JSON_WARNINGS.reset(token)


def _command_of(args: list[str]) -> str:
    return next((a for a in args if not a.startswith("-")), "")


def _main(args: list[str], as_json: bool) -> int:
    from facefusion_batch import facefusion_flags

    try:  # a FaceFusion command line: its names made ffb's, its options ffb lacks dropped or refused
        translated = facefusion_flags.translate(args, _own_flags(args), _own_flags(args, valued=True), _is_target)
    except SettingsError as exc:
        _error(args[0], exc.exit_code, str(exc), as_json, RunStamp.now())
        return exc.exit_code
    if translated.warning:
        warn(translated.warning)
    args = join_multi_values(translated.args)
    empty = empty_path(args)
    if empty:
        _error(_command_of(args), 2, empty, as_json, RunStamp.now())
        return 2
    valued = _flag_given_a_value(args)
    if valued:
        _error(_command_of(args), 2, valued, as_json, RunStamp.now())
        return 2
    several = several_sources(args)
    if several:
        _error("run", 2, several, as_json, RunStamp.now())
        return 2
    try:
        code = app(args=args, prog_name="ffb", standalone_mode=False)
    except typer.Abort:
        print("Aborted!", file=sys.stderr)
        return 1
    except typer.TyperException as exc:  # usage: an unknown flag, a value not among the choices
        if not hasattr(exc, "format_message"):
            raise
        if not as_json or not _stderr_is_stdout():
            _show_usage_error(exc)
        if as_json:
            jsonlines.emit(RunStamp.now().error(_command_of(args), exc.exit_code, exc.format_message()))
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


# `ffb run` flags that take several values after one flag, as FaceFusion's (argparse nargs='+').
MULTI_VALUE_FLAGS = ("--processors", "--face-mask-types", "--face-mask-padding", "--face-mask-regions",
                     "--face-mask-areas", "--execution-providers")


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
    hints = typing.get_type_hints(callback)
    flags = {flag for key, parameter in inspect.signature(callback).parameters.items()
             if isinstance(parameter.default, typer.models.OptionInfo)
             and ("Path" in str(hints.get(key)) or key == "target")
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


def _show_usage_error(exc: Any) -> None:
    """As Typer shows it when it handles the error itself."""
    try:
        from typer import rich_utils

        rich_utils.rich_format_error(exc)
    except ImportError:  # pragma: no cover - rich is a dependency
        exc.show()

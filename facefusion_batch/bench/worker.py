"""One benchmark configuration on one clip, in its own process so peak memory belongs to this run alone.

    python -m facefusion_batch.bench.worker --clip CLIP --source FACE --result OUT.json [--profile P] [--engine E]

Runs a batch of two targets (the clip twice) through the real pipeline with stage timings, then the frame
processor alone over the clip's frames decoded into memory beforehand (the model-bound limit), and writes
the metrics as JSON to OUT.json. Errors go to stderr as one line, with ffb's exit codes.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from facefusion_batch.bench.bound import models_fps, name_bound
from facefusion_batch.bench.measure import DiskSampler, GpuSampler, cpu_seconds, peak_rss_bytes
from facefusion_batch.bench.model_times import model_times
from facefusion_batch.concurrency import concurrency_of
from facefusion_batch.errors import FfbError, MediaError
from facefusion_batch.workflow.analysis import Reference, thumbnail
from facefusion_batch.runner.driver import run_batch
from facefusion_batch.executors.base import Claim, Work
from facefusion_batch.executors.local import LocalExecutor
from facefusion_batch.workflow.chunks import encode_chunks, processed
from facefusion_batch.workflow.video_plan import job_options, plan_video
from facefusion_batch.workflow.workspace import Workspace
from facefusion_batch.workflow.job import Completion
from facefusion_batch.workflow.lookahead import Lookahead
from facefusion_batch.workflow.processor import FrameProcessor, load
from facefusion_batch.runner.progress import QuietReporter
from facefusion_batch.settings import Settings, describe, load_settings
from facefusion_batch.timing import Timings, delta
from facefusion_batch.video.decoder import Decoder
from facefusion_batch.video.ffmpeg import coder_report
from facefusion_batch.video.probe import VideoInfo, probe

STAGES = ("decode", "detect", "track", "swap", "paste", "encode", "verify", "watermark", "gate")
MODEL_BUDGET = 1_500_000_000  # bytes of decoded frames held for the model-bound pass


class _Messages(QuietReporter):
    """A reporter that passes on messages (why a target failed) and keeps quiet about progress."""

    def message(self, text: str) -> None:
        print(f"  {text}", file=sys.stderr, flush=True)


@dataclass(frozen=True, eq=False)
class _ObservedProcessor(FrameProcessor):
    """A frame processor that notes per target when its first frame reached the processor and when it
    left it, and the faces it swapped."""

    targets: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def analyse(self, frame: np.ndarray, reference: Reference) -> None:
        self._note("first_in")  # a video's first frame is a reference, analysed by a task of its own
        super().analyse(frame, reference)

    def __call__(self, frame: np.ndarray, reference: Reference, is_new: bool, index: int | None = None
                 ) -> tuple[np.ndarray, int]:
        self._note("first_in")
        result = super().__call__(frame, reference, is_new, index)
        self._note("first_out")
        with self.lock:
            self.targets[-1]["faces"] += result[1]
        return result

    def _note(self, key: str) -> None:
        entry = self.targets[-1] if self.targets else None
        if entry is not None and entry[key] is None:
            with self.lock:
                if entry[key] is None:
                    entry[key] = time.perf_counter()


class _ObservedExecutor(LocalExecutor):
    """The local executor, noting per target when it started and the stage times spent on its frames."""

    def begin(self, claim: Claim, work: Work, lookahead: Lookahead) -> Completion:
        processor = self.processor
        assert isinstance(processor, _ObservedProcessor) and processor.timings is not None
        entry: dict[str, Any] = {"started": time.perf_counter(), "first_in": None, "first_out": None,
                                 "faces": 0}
        before = processor.timings.snapshot()
        processor.targets.append(entry)
        completion = super().begin(claim, work, lookahead)
        entry["stages"] = delta(processor.timings.snapshot(), before)  # up to its last frame: not its finishing
        return completion


def run_worker(clip: Path, source: Path, profile: Optional[Path], engine: Optional[str],
               model_budget: int = MODEL_BUDGET) -> dict[str, Any]:
    """Metrics of one configuration on `clip`; every temporary file lives under a private directory."""
    flags = {"engine": engine}
    base = load_settings(profile, os.environ, flags).settings
    base.temp_path.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="ffb-bench-", dir=base.temp_path))
    try:
        (root / "temp").mkdir()
        (root / "targets").mkdir()
        # copies, not links: a run does a file once under all its names (a hard link is the same target)
        targets = [Path(shutil.copyfile(clip, root / "targets" / f"{which}{clip.suffix}"))
                   for which in ("first", "second")]
        resolved = load_settings(profile, os.environ,
                                 {**flags, "temp_path": root / "temp", "output_path": root / "out"})
        metrics = _measure(resolved.settings, source, targets, model_budget)
        metrics["settings"] = {row["key"]: row["value"] for row in describe(resolved)
                               if row["origin"] != "default" and row["key"] not in ("temp_path", "output_path")}
        return metrics
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _measure(settings: Settings, source: Path, targets: list[Path], model_budget: int) -> dict[str, Any]:
    timings = Timings()
    started = time.perf_counter()
    plain = load(settings, source, _Messages().message)
    processor = _ObservedProcessor(**{**{f.name: getattr(plain, f.name) for f in dataclasses.fields(plain)},
                                      "timings": timings})
    startup = time.perf_counter() - started
    model_timings = Timings()  # every model call of the batch, by model name
    model_cpu = Timings()  # the same calls' CPU time on their calling threads
    pool = getattr(plain.engine, "pool", None)
    if pool is not None:
        pool.timings, pool.cpu_timings = model_timings, model_cpu
    with DiskSampler(settings.temp_path) as disk, GpuSampler(settings.execution_device_ids) as gpu, \
            _ObservedExecutor(settings, source, processor=processor) as run:
        started, cpu_before, sampled_before = time.perf_counter(), cpu_seconds(), disk.cpu + gpu.cpu
        result = run_batch(settings, [str(t) for t in targets], run, _Messages())
        wall, cpu_after = time.perf_counter() - started, cpu_seconds()
        sampling = disk.cpu + gpu.cpu - sampled_before
    if cpu_after is not None:  # the samplers' own threads are the benchmark's work, not ffb's
        cpu_after = (cpu_after[0] - sampling, cpu_after[1])
    rss = peak_rss_bytes()  # before the model-bound pass, which holds decoded frames
    if pool is not None:
        pool.timings = pool.cpu_timings = None
    if result.interrupted:
        raise KeyboardInterrupt
    for outcome in result.outcomes:
        if outcome.status == "no_face":
            raise MediaError(f"{outcome.target}: no face found in the benchmark clip; pass --face with a "
                             "clearer photo of one face")
        if outcome.status != "done":
            raise MediaError(outcome.reason or f"{outcome.target}: {outcome.status}")
    frames = sum(o.frames for o in result.outcomes)
    stages = timings.snapshot()
    faces = sum(t["faces"] for t in processor.targets)  # before the model-bound pass calls it again
    try:
        model = model_bound(processor, targets[0], settings, model_budget)
        io = io_bound(processor, targets[0], settings)
    finally:
        plain.engine.close()
    second = processor.targets[1]
    concurrency = concurrency_of(settings)
    per_model = model_times(model_timings.snapshot(), frames, faces, concurrency.inference_slots,
                            concurrency.intra_op_threads, os.cpu_count() or 1, model_cpu.snapshot())
    metrics: dict[str, Any] = {
        "engine": result.engine, "models": result.models, "providers": result.providers,
        "threads": settings.execution_thread_count, "targets": len(targets), "frames": frames,
        "e2e_fps": frames / wall, "model_fps": model["fps"], "model_frames": model["frames"],
        "startup_ms": startup * 1000, **_cpu_metrics(cpu_before, cpu_after, frames, wall),
        "model_cpu_ms": model["cpu_ms"],
        **{f"{name}_ms": _per_frame_ms(stages, name, frames) for name in STAGES},
        "detector_calls_per_frame": sum(o.detector_calls for o in result.outcomes) / frames,
        "faces_per_frame": faces / frames,
        "model_detector_calls_per_frame": model["detector_calls_per_frame"],
        "peak_rss_mb": None if rss is None else rss / 1e6,
        "peak_temp_mb": disk.peak / 1e6,
        "second_target_start_ms": (second["first_in"] - second["started"]) * 1000,
        "second_target_first_frame_ms": (second["first_out"] - second["started"]) * 1000,
        "second_target_probe_ms": second["stages"].get("probe", {"seconds": 0.0})["seconds"] * 1000,
        "stages": stages, "model_stages": model["stages"], **per_model,
    }
    metrics["cpu_over_model_cpu"] = cpu_share(metrics["cpu_ms"], metrics["ffmpeg_cpu_ms"],
                                              per_model["model_calls_cpu_ms"])
    metrics.update(gpu.figures())
    metrics.update({key: value for key, value in io.items() if key != "codec"})
    metrics.update(coder_report(io["codec"], io["encoder_used"]))
    bound = name_bound(metrics["e2e_fps"], metrics["model_fps"], models_fps(per_model["model_bound_ms"]),
                       io["io_fps"], io["decode_fps"], metrics["cores_busy"], os.cpu_count())
    metrics.update(bound=bound.name, bound_reason=bound.reason, bound_headroom=bound.headroom)
    return metrics


def cpu_share(cpu_ms: float | None, ffmpeg_cpu_ms: float | None, model_cpu_ms: float | None) -> float | None:
    """All CPU of a frame (ffb and its ffmpeg processes) over the models' own: what end to end over model-bound
    comes to when the cores are kept busy, whatever else the machine runs (1.0: nothing but the models)."""
    if cpu_ms is None or not model_cpu_ms:
        return None
    return (cpu_ms + (ffmpeg_cpu_ms or 0.0)) / model_cpu_ms


def _cpu_metrics(before: tuple[float, float] | None, after: tuple[float, float] | None, frames: int,
                 wall: float) -> dict[str, float | None]:
    """CPU per frame of ffb itself and of its ffmpeg processes, and the cores kept busy on average."""
    if before is None or after is None:
        return {"cpu_ms": None, "ffmpeg_cpu_ms": None, "cores_busy": None}
    own, children = after[0] - before[0], after[1] - before[1]
    return {"cpu_ms": own * 1000 / frames, "ffmpeg_cpu_ms": children * 1000 / frames,
            "cores_busy": (own + children) / wall}


def _per_frame_ms(stages: dict[str, dict[str, float]], name: str, frames: int) -> float | None:
    """Milliseconds per frame spent in a stage, summed over threads; None when it was not measured."""
    return stages[name]["seconds"] * 1000 / frames if name in stages else None


def model_bound(processor: FrameProcessor, clip: Path, settings: Settings, budget: int) -> dict[str, Any]:
    """Frames per second of the frame processor alone (detect/track + swap) on frames already in memory,
    with the pipeline's thread count and frames in flight."""
    info = probe(clip)
    frames = decode_frames(clip, info, max(8, budget // (info.width * info.height * 3)), settings.temp_path)
    thumbs = [thumbnail(frame) for frame in frames]
    options = job_options(settings)
    timings = Timings()
    processor = processor.timed_by(timings)
    gate = processor.new_gate()
    calls = processor.engine.detector_calls()
    started, cpu_before = time.perf_counter(), cpu_seconds()
    planned = ((frame, *gate.reference_for(index, thumb, info.width), index)
               for index, (frame, thumb) in enumerate(zip(frames, thumbs)))
    with ThreadPoolExecutor(options.threads, thread_name_prefix="ffb-frame") as pool:
        done = sum(1 for _ in processed(pool, processor, processor, planned, options.in_flight, 0))
    seconds, cpu_after = time.perf_counter() - started, cpu_seconds()
    cpu_ms = None if cpu_before is None or cpu_after is None else (cpu_after[0] - cpu_before[0]) * 1000 / done
    return {"fps": done / seconds, "frames": done, "stages": timings.snapshot(), "cpu_ms": cpu_ms,
            "detector_calls_per_frame": (processor.engine.detector_calls() - calls) / done}


class _Passthrough:
    """A frame function that leaves every frame as it is: the pipeline's decode, frame threads and encode with
    no processing (the motion gate plans references as in a real run; each is analysed as having no face)."""

    def __init__(self, processor: FrameProcessor) -> None:
        self._processor = processor

    def new_gate(self) -> Any:
        return self._processor.new_gate()

    def analyse(self, frame: np.ndarray, reference: Reference) -> None:
        reference.result.set_result(([], []))  # frames after a reference wait for its analysis

    def __call__(self, frame: np.ndarray, reference: Reference, is_new: bool, index: int | None = None
                 ) -> tuple[np.ndarray, int, list]:
        return frame, 0, []

    def finish(self, frame: np.ndarray, faces: int, fills: list) -> tuple[np.ndarray, int]:
        return frame, faces


def io_bound(processor: FrameProcessor, clip: Path, settings: Settings) -> dict[str, Any]:
    """Frames per second of the pipeline's decode + encode alone (every frame passed through untouched, into
    chunks as a run encodes them), and of decoding alone; the encoder that was used and its CPU per frame."""
    options = job_options(settings)
    plan = plan_video(clip, settings.temp_path / f"io-only{clip.suffix}", options)
    workspace = Workspace.fresh(options.temp_root)
    started, cpu_before = time.perf_counter(), cpu_seconds()
    try:
        counters = encode_chunks(plan, workspace, _Passthrough(processor), lambda frames: None)
    finally:
        workspace.remove()
    seconds, cpu_after = time.perf_counter() - started, cpu_seconds()
    frames = max(1, counters.frames)
    io_cpu = _cpu_metrics(cpu_before, cpu_after, frames, seconds)
    decoder = Decoder(plan.info, settings.temp_path)
    started, decoded = time.perf_counter(), 0
    try:
        for _ in decoder.frames(buffers=1):
            decoded += 1
    finally:
        decoder.stop(kill=True)
    decode_seconds = time.perf_counter() - started
    return {"io_fps": frames / seconds, "decode_fps": decoded / decode_seconds if decoded else 0.0,
            "io_ffmpeg_cpu_ms": io_cpu["ffmpeg_cpu_ms"], "codec": plan.info.codec,
            "encoder_used": plan.options.encode.encoder}


def decode_frames(clip: Path, info: VideoInfo, limit: int, temp_root: Path) -> list[np.ndarray]:
    """Up to `limit` frames of `clip`, each its own array, decoded as the pipeline decodes them."""
    temp_root.mkdir(parents=True, exist_ok=True)
    decoder = Decoder(info, temp_root)
    frames: list[np.ndarray] = []
    try:
        for frame in decoder.frames(buffers=1):
            frames.append(frame.copy())
            if len(frames) >= limit:
                break
    finally:
        decoder.stop(kill=True)
    if not frames:
        raise MediaError(f"{clip}: no frames could be decoded")
    return frames


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m facefusion_batch.bench.worker",
                                     description="One ffb benchmark run (used by ffb benchmark).")
    parser.add_argument("--clip", type=Path, required=True)
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--result", type=Path, required=True, help="Write the metrics here as JSON.")
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--engine", choices=("auto", "neural", "offline"))
    parser.add_argument("--model-budget-mb", type=int, default=MODEL_BUDGET // 1_000_000)
    args = parser.parse_args(argv)
    try:
        metrics = run_worker(args.clip, args.source, args.profile, args.engine, args.model_budget_mb * 1_000_000)
    except FfbError as exc:
        print(f"ffb: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    args.result.write_text(json.dumps(metrics), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

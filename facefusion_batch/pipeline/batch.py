"""A batch: one engine and one source for many targets; each target's failure is recorded, not fatal."""
from __future__ import annotations

import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from facefusion_batch.errors import FfbError, MediaError, OutputError
from facefusion_batch.marking import marking_tags
from facefusion_batch.media import read_image, temp_name, write_image
from facefusion_batch.memory import apply_memory_limit
from facefusion_batch.pipeline.analysis import MotionGate, Reference, face_patches, track
from facefusion_batch.pipeline.engine import FaceEngine, Selection, build_engine, build_selection
from facefusion_batch.pipeline.progress import Reporter
from facefusion_batch.pipeline.source_cache import Record
from facefusion_batch.pipeline.video_job import JobOptions, process_video
from facefusion_batch.settings import Settings
from facefusion_batch.targets import Target, discover
from facefusion_batch.timing import Timings, timed
from facefusion_batch.video.ffmpeg import EncodeOptions


@dataclass
class Outcome:
    target: str
    status: str  # done | no_face | failed
    output: str | None = None
    reason: str = ""
    frames: int = 0
    seconds: float = 0.0
    detector_calls: int = 0


@dataclass
class BatchResult:
    engine: str
    models: list[str]
    providers: list[str]
    outcomes: list[Outcome] = field(default_factory=list)
    source_embeddings_computed: int = 0
    detector_calls: int = 0
    interrupted: bool = False

    @property
    def failed(self) -> int:
        return sum(o.status == "failed" for o in self.outcomes)

    def to_dict(self) -> dict:
        counts = {s: sum(o.status == s for o in self.outcomes) for s in ("done", "no_face", "failed")}
        return {**asdict(self), "counts": counts, "ok": self.failed == 0 and not self.interrupted}


def check_output_dir(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".ffb-write-test-{time.monotonic_ns()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise OutputError(f"{directory}: output directory is not writable ({exc.strerror}); pass --output "
                          "with a directory you can write to") from None


def job_options(settings: Settings, timings: Timings | None = None) -> JobOptions:
    threads = settings.execution_thread_count
    return JobOptions(temp_root=settings.temp_path, chunk_size=settings.chunk_size,
                      frame_format=settings.temp_frame_format, threads=threads,
                      in_flight=threads * settings.execution_queue_count, transport=settings.frame_transport,
                      encode=EncodeOptions(settings.output_video_encoder, settings.output_video_preset,
                                           settings.output_video_quality), timings=timings)


def _os_reason(target: Target, exc: OSError) -> str:
    where = exc.filename if exc.filename else target.path
    return f"{target.path}: {exc.strerror or exc} ({where})" if where != target.path else f"{target.path}: {exc}"


class Batch:
    """Holds the engine, the prepared source and the selection for a run over many targets."""

    def __init__(self, settings: Settings, source: Path, reporter: Reporter,
                 engine: FaceEngine | None = None) -> None:
        self.settings, self.reporter = settings, reporter
        self.timings: Timings | None = None  # set by callers that measure stages (ffb benchmark)
        check_output_dir(settings.output_path)
        apply_memory_limit(settings.system_memory_limit)
        self.engine = engine or build_engine(settings)
        self.source: Record = self.engine.prepare_source(source)
        faces_in_source = int(self.source.get("faces", 1))
        if faces_in_source > 1:
            reporter.message(f"{source}: {faces_in_source} faces in the source image; using the largest")
        self.selection: Selection = build_selection(settings, self.engine)
        self.tags = marking_tags(self.engine.name, self.engine.models) if settings.output_marking else {}

    def new_gate(self) -> MotionGate:
        s = self.settings
        return MotionGate(s.keypoint_reuse, s.reuse_motion_threshold, s.redetect_interval)

    def __call__(self, frame: np.ndarray, reference: Reference, is_new: bool) -> tuple[np.ndarray, int]:
        """Process one video frame: detect on a new reference, else track the reference's faces."""
        if is_new:
            try:
                with timed(self.timings, "detect"):
                    faces = self.engine.detect(frame)
                with timed(self.timings, "track"):
                    patches = face_patches(frame, faces) if self.settings.keypoint_reuse else []
            except BaseException as exc:
                reference.result.set_exception(exc)  # frames waiting on this reference fail too
                raise
            reference.result.set_result((faces, patches))
        else:
            ref_faces, patches = reference.result.result()
            with timed(self.timings, "track"):
                faces = track(ref_faces, patches, frame) if ref_faces else []
            if faces is None:
                with timed(self.timings, "detect"):
                    faces = self.engine.detect(frame)
        return self.swap(frame, faces)

    def frame(self, frame: np.ndarray) -> tuple[np.ndarray, int]:
        """Process a single picture: detect, select, swap."""
        with timed(self.timings, "detect"):
            faces = self.engine.detect(frame)
        return self.swap(frame, faces)

    def swap(self, frame: np.ndarray, faces: list) -> tuple[np.ndarray, int]:
        with timed(self.timings, "swap"):
            faces = self.selection.pick(frame, faces, self.engine)
            if faces:
                frame = self.engine.swap(frame, faces, self.source)
        return frame, len(faces)

    def run(self, specs: Sequence[str]) -> BatchResult:
        targets, rejected = discover(specs, self.settings.output_path)
        result = BatchResult(self.engine.name, list(self.engine.models), self.engine.pool.active_providers())
        result.outcomes += [Outcome(str(r.path), "failed", reason=r.reason) for r in rejected]
        for r in rejected:
            self.reporter.message(f"{r.path}: {r.reason}")
        try:
            for target in targets:
                result.outcomes.append(self.one(target))
        except KeyboardInterrupt:
            result.interrupted = True
            result.outcomes.append(Outcome("(batch)", "failed", reason="interrupted; partial outputs removed"))
        result.source_embeddings_computed = self.engine.cache.computed
        result.detector_calls = self.engine.detector_calls()
        result.providers = self.engine.pool.active_providers()
        return result

    def one(self, target: Target) -> Outcome:
        started = time.perf_counter()
        calls = self.engine.detector_calls()
        target.output.parent.mkdir(parents=True, exist_ok=True)
        try:
            if target.kind == "image":
                self.reporter.start(str(target.path), 1)
                swapped, frames, note = self.image(target), 1, ""
            else:
                counters = process_video(target.path, target.output, self, self.tags,
                                         job_options(self.settings, self.timings), self.reporter.advance,
                                         lambda total: self.reporter.start(str(target.path), total))
                swapped, frames, note = counters.frames_with_faces, counters.frames, counters.note
        except (FfbError, OSError) as exc:
            reason = str(exc) if isinstance(exc, FfbError) else _os_reason(target, exc)
            self.reporter.finish("failed")
            self.reporter.message(reason)
            return Outcome(str(target.path), "failed", reason=reason, seconds=time.perf_counter() - started)
        finally:
            self.engine.pool.after_target()
        status = "done" if swapped else "no_face"
        reason = note if swapped else "no face found; copied through unchanged"
        self.reporter.finish(status)
        return Outcome(str(target.path), status, str(target.output), reason, frames,
                       time.perf_counter() - started, self.engine.detector_calls() - calls)

    def image(self, target: Target) -> int:
        frame = read_image(target.path, error=MediaError)
        frame, swapped = self.frame(frame)
        if swapped:
            write_image(frame, target.output, self.settings.output_image_quality, self.tags or None)
        else:
            partial = temp_name(target.output)
            shutil.copyfile(target.path, partial)
            partial.replace(target.output)
        self.reporter.advance(1)
        return swapped

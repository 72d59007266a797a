"""The frame processor: what one batch does to every frame, with nothing that changes while it runs.

A `FrameProcessor` holds the engine, the prepared source, the face selection and the output tags. It keeps
no per-run or per-target state (that lives in the executor's run and in each video's gate and references),
so the local executor, the Ray worker and the benchmark share one, and any number of threads call it.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence, Union

import cv2
import numpy as np

from facefusion_batch.version import __version__
from facefusion_batch.engines import build_engine
from facefusion_batch.engines.base import FaceEngine, Selection, build_selection
from facefusion_batch.engines.source_cache import Record
from facefusion_batch.errors import MediaError, TargetError
from facefusion_batch.faces.types import Face
from facefusion_batch.media import kind_of, read_image
from facefusion_batch.memory import apply_memory_limit
from facefusion_batch.models.store import sha256_of
from facefusion_batch.workflow.analysis import MotionGate, Reference, TrackState
from facefusion_batch.workflow.patches import face_patches, track
from facefusion_batch.workflow.finish import Seal
from facefusion_batch.provenance.content_gate import ContentGate, build_gate
from facefusion_batch.provenance.label import VisibleLabel
from facefusion_batch.provenance.sign import Marker, mode_of
from facefusion_batch.provenance.watermark import ALGORITHM, STRENGTH, Watermarker, payload_of
from facefusion_batch.settings import DECLARED, FIELDS, Settings, engine_changed, with_role
from facefusion_batch.timing import Timings, timed
from facefusion_batch.video.decoder import frame_at
from facefusion_batch.video.ffmpeg import use_ffmpeg
from facefusion_batch.video.probe import VideoInfo, probe

EDGE_RAMP = 0.15  # a swap fades out towards an edge of the frame that cuts its face over up to this share of its size


@dataclass(frozen=True, eq=False)
class FrameProcessor:
    """Frame in, frame out: detect or track, select, swap, label. `marker` marks and signs the outputs;
    `timings` (ffb benchmark) collects stage times."""

    settings: Settings
    engine: FaceEngine
    source: Record
    selection: Selection
    marker: Marker
    label: VisibleLabel | None
    output_key: str  # the journal's key for everything an output depends on besides the target
    sources: tuple[Path, ...] = ()  # the source image(s) the prepared face comes from
    timings: Timings | None = None
    gate: ContentGate | None = None  # the content gate (None: not asked, e.g. a benchmark's own processor)
    source_sha256: str = ""  # of the source image(s), comma-separated
    watermark: Watermarker | None = None  # set per target by `for_target`

    @property
    def tags(self) -> dict[str, str]:
        """Metadata tags every output carries."""
        return self.marker.tags

    @property
    def watermarks(self) -> bool:
        """Whether this run puts the invisible watermark in its outputs' frames."""
        return self.settings.output_watermark and mode_of(self.settings) != "off"

    def for_target(self, target: Path, content: str | None = None, info: VideoInfo | None = None
                   ) -> FrameProcessor:
        """The processor for one target's frames: with that output's watermark, whose payload is a hash of
        the target's content (`content`: its sha256 when known) and the source face(s): what the output is
        made of, the same in every run and executor that swaps this face into this target. `info`: the
        target video as probed already."""
        processor = self
        if self.selection.per_target:
            processor = dataclasses.replace(self, selection=self._reference_of(target, info))
        return processor.marked_for(target, content)

    def marked_for(self, target: Path, content: str | None = None) -> FrameProcessor:
        """This processor with the watermark of `target`'s output (see for_target), and nothing else of the
        target's: what joining a split video's chunks needs, since no frame is swapped there."""
        if not self.watermarks:
            return self
        content = content or sha256_of(target)
        sources = ",".join(sorted(self.source_sha256.split(",")))  # one identity whatever the order of -s
        return dataclasses.replace(self, watermark=Watermarker(payload_of(f"{content}|{sources}")))

    def _reference_of(self, target: Path, info: VideoInfo | None = None) -> Selection:
        """Reference mode without a reference photo: the selection whose reference face is the target's own,
        from its frame reference_frame_number (an image: the image), as FaceFusion takes it; TargetError when
        that frame has no face to take."""
        number, position = self.settings.reference_frame_number, self.settings.reference_face_position
        with timed(self.timings, "detect"):
            if kind_of(target) == "video":
                info = info or probe(target)
                if number >= info.frame_count:
                    raise TargetError(f"{target}: reference_frame_number {number} is past its {info.frame_count} "
                                      "frames; set it to a frame showing the face to replace")
                frame, where = frame_at(info, number, self.settings.temp_path), f"frame {number}"
            else:
                frame, where = read_image(target, MediaError), "the image"
            selection = self.selection.referring_to(frame, position, self.engine)
        if selection is None:
            raise TargetError(f"{target}: no face in {where} to take as the reference face (reference mode "
                              "without --reference-face); set reference_frame_number to a frame showing the face "
                              "to replace, or pass --reference-face PHOTO")
        return selection

    @property
    def gate_record(self) -> str:
        return self.gate.record if self.gate is not None else ""

    def timed_by(self, timings: Timings | None) -> FrameProcessor:
        """The same processor, with its stage times going to `timings`."""
        return dataclasses.replace(self, timings=timings)

    def new_gate(self) -> MotionGate:
        s = self.settings
        return MotionGate(s.keypoint_reuse, s.reuse_motion_threshold, s.redetect_interval, TrackState())

    def analyse(self, frame: np.ndarray, reference: Reference) -> None:
        """Detect the faces of a new reference frame and keep what tracking needs; frames waiting on the
        reference get the result, or the failure."""
        try:
            with timed(self.timings, "detect"):
                faces = self.engine.detect(frame)
                if reference.sweep is not None:
                    faces = faces + self.engine.sweep(frame, faces, reference.sweep.changed)
            with timed(self.timings, "track"):
                patches = face_patches(frame, faces) if self.settings.keypoint_reuse else []
        except BaseException as exc:
            reference.result.set_exception(exc)
            raise
        reference.result.set_result((faces, patches))

    def __call__(self, frame: np.ndarray, reference: Reference, is_new: bool, index: int | None = None
                 ) -> tuple[np.ndarray, int, list[tuple[int, Face]]]:
        """Process frame `index` of a video: a new reference is analysed (unless that was done ahead), any
        other frame tracks the reference's faces; the faces then join their face tracks (in frame order) and are
        swapped. Returns the frame, its faces, and faces found late to swap into the frames before it or carried on to
        swap into this one (frame index, face: workflow/backfill.py); the frame is final once `finish`ed."""
        tracks = reference.tracks if index is not None else None
        # Cuts are looked for on reference frames only: the gate makes every frame that changed that much a
        # new reference, and has its thumbnail already.
        thumb = reference.thumb if is_new else None
        try:
            faces, detected = self._faces(frame, reference, is_new)
        except BaseException:
            if tracks is not None:
                tracks.skip(index)
            raise
        if tracks is None:
            return (*self.swap(frame, faces), [])
        with tracks.turn(index, frame.shape) as tracker, timed(self.timings, "track"):
            cut = thumb is not None and tracker.cut(thumb)
            # Look again where a tracked face should be before declaring it gone.
            missing = [] if cut else tracker.missing(index, faces)
            refits = self.engine.refit(frame, missing) if missing else []
            tracked = tracker.update(index, faces, detected, thumb, refits, tracks.edge_moves(index, frame))
            tracks.keep_edges(index, frame, tracker.near_edge(tracked))
            chosen = self.selection.pick_tracked(frame, tracked, tracker, detected, self.engine)
            if chosen:
                chosen = self.engine.settle(frame, chosen, self.source, index)
            fills = tracks.history.fills(index, frame, chosen, cut, self.selection.mode == "one", self.engine.refit)
        return (*self.swap_faces(frame, chosen), fills)

    def finish(self, frame: np.ndarray, faces: int, fills: list[Face]) -> tuple[np.ndarray, int]:
        """A video's frame out of `__call__` made final once the frames after it had their turns: `fills` (faces
        found later and followed back to it, or carried on to it) swapped, then labelled and marked."""
        if fills:
            frame, _ = self.swap_faces(frame, fills)
        return self._finished(frame), faces + len(fills)

    def _faces(self, frame: np.ndarray, reference: Reference, is_new: bool) -> tuple[list, bool]:
        """The frame's faces, and whether they were detected on it (not moved from a reference)."""
        if is_new:
            if not reference.ahead:
                self.analyse(frame, reference)
            return reference.result.result()[0], True
        ref_faces, patches = reference.result.result()
        with timed(self.timings, "track"):
            faces = track(ref_faces, patches, frame) if ref_faces else []
        if faces is None:
            with timed(self.timings, "detect"):
                return self.engine.detect(frame), True
        return faces, False

    def frame(self, frame: np.ndarray) -> tuple[np.ndarray, int]:
        """Process a single picture: detect, select, swap."""
        with timed(self.timings, "detect"):
            faces = self.engine.detect(frame)
            faces = faces + self.engine.sweep(frame, faces)
        frame, count = self.swap(frame, faces)
        return self._finished(frame), count

    def swap(self, frame: np.ndarray, faces: list) -> tuple[np.ndarray, int]:
        with timed(self.timings, "swap"):
            faces = self.selection.pick(frame, faces, self.engine)
        return self.swap_faces(frame, faces)

    def swap_faces(self, frame: np.ndarray, faces: list) -> tuple[np.ndarray, int]:
        """`frame` with `faces` swapped, and how many (not labelled or marked yet: see `finish`)."""
        with timed(self.timings, "swap"):
            # A face whose swap only partly shows (a face leaving the picture, `one`'s next choice fading in)
            # first, alone: its swap made while settling is reused on the frame it was made on.
            partial, whole = [], []
            for face in faces:
                (partial if face.opacity < 1.0 or _cut(face, frame.shape) else whole).append(face)
            for face in partial:
                if face.opacity > 0.0:
                    frame = _faded(frame, self.engine.swap(frame, [face], self.source), face)
            if whole:
                frame = self.engine.swap(frame, whole, self.source)
        if faces and self.timings is not None:
            self.timings.count("faces", len(faces))
        return frame, len(faces)

    def _finished(self, frame: np.ndarray) -> np.ndarray:
        """The frame labelled and marked, as this run's outputs are."""
        if self.label is not None:
            frame = self.label.draw(frame)
        if self.watermark is not None:
            with timed(self.timings, "watermark"):
                frame = self.watermark.mark(frame)
        return frame

    def close(self) -> None:
        """Close the engine (its sessions, batchers and threads)."""
        self.engine.close()

    def reloaded(self, settings: Settings, on_message: Callable[[str], None]) -> tuple[FrameProcessor, bool]:
        """A processor for new `settings` on the same engine unless a setting it is built from changed
        (then on a new one; this one's engine is the caller's to close), and whether the engine is new. Only
        once it is ready does this process take the new settings' ffmpeg and memory limit."""
        rebuild = engine_changed(self.settings, settings)
        processor = prepare(settings, self.sources, on_message, engine=None if rebuild else self.engine)
        _use_process_settings(settings)
        return processor, rebuild

    def seal(self, target: Path, content: str | None = None) -> Seal:
        """How a finished output of `target` is moved into place: signed first where this run signs
        (`content` is the target's sha256 when known)."""
        return functools.partial(self.marker.place, parent=target, parent_sha256=content or None,
                                 watermark=self.watermark.hex if self.watermark else "", content_gate=self.gate_record)


def settings_key(parts: dict[str, Any]) -> str:
    """A short stable hash of everything that shapes an output."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


Sources = Union[Path, Sequence[Path]]


def source_paths(source: Sources) -> tuple[Path, ...]:
    """One source path, or several (photos of one person, averaged into one identity)."""
    return (Path(source),) if isinstance(source, (str, Path)) else tuple(Path(p) for p in source)


def load(settings: Settings, source: Sources, on_message: Callable[[str], None],
         engine: FaceEngine | None = None) -> FrameProcessor:
    """What a process needs before its first target, done once: this process's ffmpeg and memory limit, the
    engine (unless given), the source face(s) and the selection. Every executor, the benchmark and the
    public `facefusion_batch.FaceSwapper` load through here; close the result (its engine) when done."""
    _use_process_settings(settings)
    return prepare(settings, source, on_message, engine)


def _use_process_settings(settings: Settings) -> None:
    """This process's ffmpeg and memory limit."""
    use_ffmpeg(settings.ffmpeg_path)
    apply_memory_limit(settings.system_memory_limit)


def prepare(settings: Settings, source: Sources, on_message: Callable[[str], None],
            engine: FaceEngine | None = None) -> FrameProcessor:
    """Load the engine (unless given), prepare the source face(s) and the selection."""
    sources = source_paths(source)
    owned = engine is None
    engine = engine or build_engine(settings)
    try:
        gate = build_gate(settings, engine.pool)
        for path in sources:  # a flagged source stops the run before any swap: no target could use it
            if gate.status == "checked":
                gate.check_source(path, read_image(path))
        records = []
        for path in sources:
            record = engine.prepare_source(path)
            faces_in_source = int(record.get("faces", 1))
            if faces_in_source > 1:
                on_message(f"{path}: {faces_in_source} faces in the source image; using the largest")
            if "notice" in record:
                on_message(f"{path}: {record['notice']}")
            records.append(record)
        record = engine.merge_sources(records)
        selection = build_selection(settings, engine, record)
    except BaseException:
        if owned:
            engine.close()
        raise
    source_sha256 = ",".join(sha256_of(path) for path in sources)
    marker = Marker.for_run(settings, engine.name, engine.models, source_sha256)
    label = (VisibleLabel(settings.visible_label, settings.visible_label_position, settings.visible_label_size,
                          settings.visible_label_opacity) if settings.visible_label else None)
    return FrameProcessor(settings, engine, record, selection, marker, label,
                          output_key(settings, source_sha256, engine, marker), sources=sources, gate=gate,
                          source_sha256=source_sha256)


def output_key(settings: Settings, source_sha256: str, engine: FaceEngine, marker: Marker) -> str:
    """The journal's settings key: everything an output depends on besides the target itself. Built from
    the settings' declared roles (settings.ROLES); the entries below hold the engine and what an output
    setting declared `keyed` stands for."""
    models = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in engine.model_files]
    reference = settings.reference_face_path
    keyed = {
        "version": __version__, "engine": engine.name, "models": models, "source": source_sha256,
        "reference": sha256_of(reference) if reference else None,  # reference_face_path
        "provenance": marker.key,  # c2pa_certificate, c2pa_private_key: the signer
        # Keyed as the cosine distance ffb used before it took FaceFusion's half scale (exact: a doubling), so
        # journals from then still match and their finished targets are not redone.
        "reference_face_distance": 2.0 * settings.reference_face_distance,
    }
    if settings.output_watermark and mode_of(settings) != "off":  # the mark's method and strength; without
        keyed["watermark"] = f"{ALGORITHM}@{STRENGTH}"  # a mark the key is what it was before the mark was made
    return settings_key({
        **{name: getattr(settings, name) for name in with_role("output") if DECLARED[name].keyed is None},
        **keyed,
        **{name: getattr(settings, name) for name in with_role("output-unless-default")
           if getattr(settings, name) != FIELDS[name].default},
    })


def _cut(face: Face, shape: tuple[int, ...]) -> bool:
    """Whether the frame's edge cuts a face's box."""
    x1, y1, x2, y2 = (float(v) for v in face.box)
    return x1 < 0 or y1 < 0 or x2 > shape[1] or y2 > shape[0]


def _faded(frame: np.ndarray, swapped: np.ndarray, face: Face) -> np.ndarray:
    """`frame` with the change `swapped` makes to it (over the rectangle where it changed) shown as much as
    `face.opacity` says, and fading out towards an edge of the frame that cuts the face: the mesh there is
    extrapolated, the source's dark features (eyes, glasses) smeared along the edge. The fade reaches inwards
    as far as the face reaches beyond the edge, at most EDGE_RAMP of its size."""
    # The changed rectangle, found on the difference seen as one channel (a row of pixels' values side by side):
    # a tenth of the cost of comparing the whole frame pixel by pixel in numpy (~13 ms at 720p, on every frame
    # of a face the edge cuts).
    x, y, w, h = cv2.boundingRect(cv2.absdiff(swapped, frame).reshape(frame.shape[0], -1))
    if not w:
        return frame
    channels = frame.shape[2]
    y1, y2, x1, x2 = y, y + h, x // channels, (x + w - 1) // channels + 1
    left, top, right, bottom = (float(v) for v in face.box)
    size = max(right - left, bottom - top, 1.0)
    height, width = frame.shape[:2]

    def ramp(start: int, stop: int, low: float, high: float, end: int) -> np.ndarray:
        at = np.arange(start, stop, dtype=np.float32) + 0.5
        weight = np.ones(stop - start, np.float32)
        for beyond, distance in ((-low, at), (high - end, end - at)):
            if beyond > 0:
                weight = np.minimum(weight, np.clip(distance / min(beyond, EDGE_RAMP * size), 0.0, 1.0))
        return weight

    alpha = face.opacity * (ramp(y1, y2, top, bottom, height)[:, None, None]
                            * ramp(x1, x2, left, right, width)[None, :, None])
    out = frame.copy()
    before = frame[y1:y2, x1:x2].astype(np.float32)
    out[y1:y2, x1:x2] = np.clip(before + alpha * (swapped[y1:y2, x1:x2] - before) + 0.5, 0, 255).astype(frame.dtype)
    return out

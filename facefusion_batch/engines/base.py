"""The engine protocol and what every engine shares: face selection, the source face, building an engine.

An engine is everything loaded once per process (sessions, adapters, source cache, semaphore). It turns a
frame into faces and swaps a prepared source into them. The pipeline only talks to the `FaceEngine`
protocol, so the neural (`engines.neural`) and offline (`engines.offline`) engines share every other line.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

import numpy as np

from facefusion_batch.engines.source_cache import Record, SourceCache
from facefusion_batch.errors import SettingsError, SourceError
from facefusion_batch.faces.tracking import Tracked, Tracker
from facefusion_batch.faces.types import Face
from facefusion_batch.media import read_image
from facefusion_batch.models.sessions import SessionPool
from facefusion_batch.processors.classifier import sort_faces
from facefusion_batch.settings import Settings


class FaceEngine(Protocol):
    name: str
    models: tuple[str, ...]
    model_files: tuple[Path, ...]
    cache: SourceCache
    pool: SessionPool
    warnings: tuple[str, ...]  # settings it can't honour, said once per run (e.g. a weight the model ignores)

    def detect(self, frame: np.ndarray) -> list[Face]: ...

    def embed(self, frame: np.ndarray, faces: Sequence[Face]) -> np.ndarray: ...

    def prepare_source(self, path: Path) -> Record: ...

    def merge_sources(self, records: Sequence[Record]) -> Record:
        """Several source photos of one person as one identity (SettingsError where the engine can't)."""
        ...

    def face_filter(self, source: Record | None = None) -> Callable[[np.ndarray, list[Face]], list[Face]] | None:
        """The face selector's gender/race/age filters as one function, or None when none is set (`auto`
        filters take the source face's gender/race from its record)."""
        ...

    def swap(self, frame: np.ndarray, faces: Sequence[Face], source: Record) -> np.ndarray:
        """`frame` with `faces` swapped, as a new array: `frame` itself is never changed."""
        ...

    def refit(self, frame: np.ndarray, predicted: Sequence[Face]) -> list[Face] | None:
        """Faces found again at tracks' predicted places (the detector missed them); may be fewer. Their score says
        how sure the engine is of each, on a detection's scale (see tracking.SURE_REFIT). None: the engine cannot
        look (its tracks are carried with their motion through a miss instead)."""
        ...

    def sweep(self, frame: np.ndarray, faces: Sequence[Face], changed: np.ndarray | None = None) -> list[Face]:
        """Faces besides `faces` (the frame's detections) that a closer look finds: small ones the whole-frame
        detectors miss. Costs several detector inputs: the pipeline asks now and then, and `changed` (a boolean
        grid over the frame, any resolution; None: everywhere) says where to look."""
        ...

    def settle(self, frame: np.ndarray, faces: Sequence[Face], source: Record, index: int) -> list[Face]:
        """A video frame's faces to swap, as their tracks decide in frame order (called in the frame's turn, see
        workflow/analysis.py `TrackState`): faces marked `leave` are left as they are by `swap`."""
        ...

    def detector_calls(self) -> int: ...

    def close(self) -> None:
        """Stop the engine's threads (micro-batchers) and drop its sessions; safe to call more than once."""


def largest(faces: Sequence[Face]) -> Face:
    return max(faces, key=lambda f: f.area)


def source_face(path: Path, engine: FaceEngine) -> tuple[np.ndarray, Face, int]:
    """The image and its largest face; SourceError when it has none."""
    image = read_image(path)
    faces = engine.detect(image)
    if not faces:
        raise SourceError(f"{path}: no face found in the source image; use a photo in which one face is "
                          "clearly visible and at least ~100 px wide")
    return image, largest(faces), len(faces)


REFERENCE_LOOKS = 5  # reference mode: a track's identity is measured on up to this many detected frames
FILTER_LOOKS = 5  # gender/race/age filters: a track is classified on up to this many detected frames


@dataclass(frozen=True)
class Selection:
    """How to pick the faces to swap in each frame: `keep` (the gender/race/age filters) first, then
    FaceFusion's `order`; mode one takes the first face (large-small: the largest)."""

    mode: str
    reference: np.ndarray | None = None  # unit embedding, reference mode only
    distance: float = 0.6
    order: str = "large-small"
    keep: Callable[[np.ndarray, list[Face]], list[Face]] | None = None

    @property
    def per_target(self) -> bool:
        """Reference mode without a reference photo: each target's own frame gives the reference face."""
        return self.mode == "reference" and self.reference is None

    def referring_to(self, frame: np.ndarray, position: int, engine: FaceEngine) -> Selection | None:
        """This selection with the reference face taken from `frame`, as FaceFusion takes it from the target's
        reference_frame_number: the frame's faces in `order`, after the filters, the one at `position` (the
        last when there are fewer); None when the frame has no such face."""
        faces = engine.detect(frame)
        if faces and self.keep is not None:
            faces = self.keep(frame, faces)
        if not faces:
            return None
        face = sort_faces(faces, self.order)[min(position, len(faces) - 1)]
        return dataclasses.replace(self, reference=engine.embed(frame, [face])[0])

    def pick(self, frame: np.ndarray, faces: list[Face], engine: FaceEngine) -> list[Face]:
        if faces and self.keep is not None:
            faces = self.keep(frame, faces)
        if not faces or self.mode == "many":
            return faces
        if self.mode == "one":
            return [largest(faces)] if self.order == "large-small" else sort_faces(faces, self.order)[:1]
        embeddings = engine.embed(frame, faces)
        distances = 1.0 - embeddings @ self.reference
        return [face for face, d in zip(faces, distances) if d <= self.distance]

    def pick_tracked(self, frame: np.ndarray, tracked: list[Tracked], tracker: Tracker, detected: bool,
                     engine: FaceEngine) -> list[Face]:
        """Faces to swap among a frame's tracked faces: `one` keeps the shot's chosen track while its face is in
        the picture; `reference` judges each track by the mean distance of its faces measured so far (measured
        again on detected frames, at most REFERENCE_LOOKS times), so one odd frame does not switch a person on
        or off. Each with how much of its swap to show (`Face.opacity`, `Tracker.opacity`)."""
        if tracked and self.keep is not None:
            tracked = self._vote(frame, tracked, tracker, detected)
        return [tracker.faded(t) for t in self._tracked(frame, tracked, tracker, detected, engine)]

    def _tracked(self, frame: np.ndarray, tracked: list[Tracked], tracker: Tracker, detected: bool,
                 engine: FaceEngine) -> list[Tracked]:
        if self.mode == "many" or not tracked:
            return tracked
        if self.mode == "one":
            return self._choose_one(tracked, tracker)
        measure = [t for t in tracked if not t.coasting and t.track in tracker.tracks
                   and (not tracker.tracks[t.track].matches
                        or (detected and len(tracker.tracks[t.track].matches) < REFERENCE_LOOKS))]
        if measure:
            distances = 1.0 - engine.embed(frame, [t.face for t in measure]) @ self.reference
            for item, distance in zip(measure, distances):
                tracker.tracks[item.track].matches.append(float(distance))
        return [t for t in tracked if t.track in tracker.tracks
                and float(np.mean(tracker.tracks[t.track].matches or [np.inf])) <= self.distance]

    def _vote(self, frame: np.ndarray, tracked: list[Tracked], tracker: Tracker, detected: bool) -> list[Tracked]:
        """The tracked faces the filters keep, decided per track by the majority of its answers (a tie: its
        first answer), so a classifier that wavers on one person does not switch the swap on and off from
        frame to frame as FaceFusion's per-frame answer does. A track is asked on its first frame, then on
        detected frames, up to FILTER_LOOKS times."""
        tracks = tracker.tracks
        ask = [t for t in tracked if t.track not in tracks or not tracks[t.track].votes
               or (detected and not t.coasting and len(tracks[t.track].votes) < FILTER_LOOKS)]
        kept = {id(face) for face in self.keep(frame, [t.face for t in ask])} if ask else set()
        answers = {t.track: id(t.face) in kept for t in ask}
        for track, answer in answers.items():
            if track in tracks:
                tracks[track].votes.append(answer)
        return [t for t in tracked if _majority(tracks[t.track].votes if t.track in tracks else [answers[t.track]])]

    def _choose_one(self, tracked: list[Tracked], tracker: Tracker) -> list[Tracked]:
        """The shot's chosen track, kept while it lives and is in the picture (across chunks too); chosen anew
        by `order` when it ended or left (see `Tracker.choose_one`)."""
        if self.order == "large-small":
            return tracker.choose_one(tracked)
        return tracker.choose_one(tracked, self._first)

    def _first(self, items: list[Tracked]) -> Tracked:
        """The tracked face `order` puts first."""
        first = sort_faces([t.face for t in items], self.order)[0]
        return next(t for t in items if t.face is first)


def _majority(votes: list[bool]) -> bool:
    """True when most votes are; a tie goes the way of the first vote."""
    yes = sum(votes)
    return yes * 2 > len(votes) or (yes * 2 == len(votes) and votes[0])


def refuse_offline_reference(settings: Settings) -> None:
    """Reference mode tells faces apart by the neural engine's face recogniser: one line saying what to do."""
    if settings.face_selector_mode == "reference":
        what = ("--reference-face" if settings.reference_face_path is not None
                else "face_selector_mode reference (its reference face from each target's reference_frame_number)")
        raise SettingsError(f"{what} needs the neural engine (it tells faces apart with the neural face "
                            "recogniser), not the offline one: run `ffb models download` for its models (or pass "
                            "--models-path at FaceFusion's .assets/models), or set face_selector_mode one to swap "
                            "the largest face (--many-faces: every face)")


def build_selection(settings: Settings, engine: FaceEngine, source: Record | None = None) -> Selection:
    keep = engine.face_filter(source)
    order = settings.face_selector_order
    if settings.face_selector_mode != "reference":
        return Selection(settings.face_selector_mode, order=order, keep=keep)
    if engine.name != "neural":
        refuse_offline_reference(settings)
    # FaceFusion's reference_face_distance is the cosine distance (0..2) mapped onto 0..1
    cosine = 2.0 * settings.reference_face_distance
    if settings.reference_face_path is None:  # each target's reference frame gives it (see Selection.per_target)
        return Selection("reference", None, cosine, order, keep)
    image, face, _ = source_face(settings.reference_face_path, engine)
    return Selection("reference", engine.embed(image, [face])[0], cosine, order, keep)

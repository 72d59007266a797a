"""Engines: everything loaded once per process (sessions, adapters, source cache, semaphore).

An engine turns a frame into faces and swaps a prepared source into them. The pipeline only talks to the
`FaceEngine` protocol, so the neural and offline engines share every other line.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from facefusion_batch.errors import ModelError, SettingsError, SourceError
from facefusion_batch.faces.detectors import ScrfdDetector, YoloFaceDetector
from facefusion_batch.faces.recognizer import ArcFaceRecognizer
from facefusion_batch.faces.tracking import Tracked, Tracker
from facefusion_batch.faces.types import Face
from facefusion_batch.media import read_image
from facefusion_batch.models import store
from facefusion_batch.models.catalog import CATALOG, DETECTOR_FOR, RECOGNIZER
from facefusion_batch.models.dynamic_batch import dynamic_batch_model
from facefusion_batch.models.signature import check_model
from facefusion_batch.models.sessions import GuardedSession, SessionPool
from facefusion_batch.pipeline.source_cache import Record, SourceCache
from facefusion_batch.settings import Settings
from facefusion_batch.swap.inswapper import InSwapper, read_emap


class FaceEngine(Protocol):
    name: str
    models: tuple[str, ...]
    model_files: tuple[Path, ...]
    cache: SourceCache
    pool: SessionPool

    def detect(self, frame: np.ndarray) -> list[Face]: ...

    def embed(self, frame: np.ndarray, faces: Sequence[Face]) -> np.ndarray: ...

    def prepare_source(self, path: Path) -> Record: ...

    def swap(self, frame: np.ndarray, faces: Sequence[Face], source: Record) -> np.ndarray: ...

    def refit(self, frame: np.ndarray, predicted: Sequence[Face]) -> list[Face]:
        """Faces found again at tracks' predicted places (the detector missed them); may be fewer."""
        ...

    def detector_calls(self) -> int: ...


def neural_model_states(settings: Settings) -> list[store.ModelState]:
    """State of each model file the neural engine needs under these settings."""
    memo = store.ChecksumMemo(settings.cache_path / "checksums.json")
    names = [settings.face_swapper_model, RECOGNIZER, DETECTOR_FOR[settings.face_detector_model]]
    return [store.inspect(settings.models_path, CATALOG[name], memo) for name in names]


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


class NeuralEngine:
    """SCRFD/YOLOFace + ArcFace + inswapper, sessions from the pool, calls bounded by the semaphore."""

    name = "neural"

    def __init__(self, settings: Settings, pool: SessionPool, cache: SourceCache,
                 slots: threading.Semaphore) -> None:
        states = neural_model_states(settings)
        for state in states:
            if not store.usable(state):
                raise ModelError(f"{state.detail}: {store.fix_hint(state)}")
            check_model(state.spec, state.path)  # before anything parses it: a wrong file is named as such
        self.pool, self.cache = pool, cache
        self.models = tuple(state.spec.name for state in states)
        self.model_files = tuple(state.path for state in states)
        swapper_state, recognizer_state, detector_state = states
        swapper_path = swapper_state.path
        if settings.micro_batch() > 1:
            swapper_path = dynamic_batch_model(swapper_path, settings.cache_path / "dynamic") or swapper_path
        swapper = GuardedSession(pool, swapper_path, slots)
        recognizer, detector = (GuardedSession(pool, state.path, slots) for state in states[1:])
        detector_class = ScrfdDetector if settings.face_detector_model == "scrfd" else YoloFaceDetector
        self._detector_session = detector
        self._detector = detector_class(detector, detector_state.spec, settings.face_detector_size,
                                        settings.face_detector_score)
        self._recognizer = ArcFaceRecognizer(recognizer, recognizer_state.spec)
        self._swapper = InSwapper(swapper, swapper_state.spec, read_emap(swapper_state.path), settings.micro_batch(),
                                  settings.batch_wait_ms / 1000, settings.execution_thread_count)

    def detect(self, frame: np.ndarray) -> list[Face]:
        return self._detector.detect([frame])[0]

    def embed(self, frame: np.ndarray, faces: Sequence[Face]) -> np.ndarray:
        return self._recognizer.embed(frame, faces)

    def prepare_source(self, path: Path) -> Record:
        def compute() -> Record:
            image, face, count = source_face(path, self)
            return {"embedding": self.embed(image, [face])[0], "faces": np.array(count)}

        return self.cache.get(path, "neural:" + ":".join(self.models), compute)

    def swap(self, frame: np.ndarray, faces: Sequence[Face], source: Record) -> np.ndarray:
        return self._swapper.swap(frame, faces, self._swapper.latent(source["embedding"]))

    def refit(self, frame: np.ndarray, predicted: Sequence[Face]) -> list[Face]:
        """The neural detectors see whole frames only: a missed face is carried by its track instead."""
        return []

    def detector_calls(self) -> int:
        """Frames on which detection ran (the neural detectors take one frame per call)."""
        return self._detector_session.calls.value


REFERENCE_LOOKS = 5  # reference mode: a track's identity is measured on up to this many detected frames


@dataclass(frozen=True)
class Selection:
    """How to pick the faces to swap in each frame."""

    mode: str
    reference: np.ndarray | None = None  # unit embedding, reference mode only
    distance: float = 0.6

    def pick(self, frame: np.ndarray, faces: list[Face], engine: FaceEngine) -> list[Face]:
        if not faces or self.mode == "many":
            return faces
        if self.mode == "one":
            return [largest(faces)]
        embeddings = engine.embed(frame, faces)
        distances = 1.0 - embeddings @ self.reference
        return [face for face, d in zip(faces, distances) if d <= self.distance]

    def pick_tracked(self, frame: np.ndarray, tracked: list[Tracked], tracker: Tracker, detected: bool,
                     engine: FaceEngine) -> list[Face]:
        """Faces to swap among a frame's tracked faces: `one` keeps the shot's chosen track; `reference`
        judges each track by the mean distance of its faces measured so far (measured again on detected
        frames, at most REFERENCE_LOOKS times), so one odd frame does not switch a person on or off."""
        if self.mode == "many" or not tracked:
            return [t.face for t in tracked]
        if self.mode == "one":
            return [t.face for t in tracker.choose_one(tracked)]
        measure = [t for t in tracked if not t.coasting and t.track in tracker.tracks
                   and (not tracker.tracks[t.track].matches
                        or (detected and len(tracker.tracks[t.track].matches) < REFERENCE_LOOKS))]
        if measure:
            distances = 1.0 - engine.embed(frame, [t.face for t in measure]) @ self.reference
            for item, distance in zip(measure, distances):
                tracker.tracks[item.track].matches.append(float(distance))
        return [t.face for t in tracked if t.track in tracker.tracks
                and float(np.mean(tracker.tracks[t.track].matches or [np.inf])) <= self.distance]


def build_selection(settings: Settings, engine: FaceEngine) -> Selection:
    if settings.face_selector_mode != "reference":
        return Selection(settings.face_selector_mode)
    if engine.name != "neural":
        raise SettingsError("face_selector_mode reference needs the neural engine's face recogniser; use "
                            "--engine neural with its models, or --many-faces / one")
    assert settings.reference_face_path is not None
    image, face, _ = source_face(settings.reference_face_path, engine)
    return Selection("reference", engine.embed(image, [face])[0], settings.reference_face_distance)


def build_engine(settings: Settings, slots: threading.Semaphore | None = None) -> FaceEngine:
    """The engine the settings ask for; `auto` picks neural when its model files are usable."""
    pool = SessionPool(settings)
    cache = SourceCache(settings.cache_path)
    slots = slots or threading.Semaphore(settings.inference_slots())
    if settings.engine == "neural":
        return NeuralEngine(settings, pool, cache, slots)
    if settings.engine == "auto" and all(store.usable(s) for s in neural_model_states(settings)):
        return NeuralEngine(settings, pool, cache, slots)
    from facefusion_batch.offline.engine import OfflineEngine

    return OfflineEngine(settings, pool, cache, slots)

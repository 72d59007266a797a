"""The neural engine: SCRFD / YOLOFace detection, ArcFace embeddings and the inswapper-class swapper, from
the model files FaceFusion users already have."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from facefusion_batch.concurrency import plan
from facefusion_batch.engines.base import source_face
from facefusion_batch.engines.inswapper import InSwapper, read_emap
from facefusion_batch.engines.source_cache import Record, SourceCache
from facefusion_batch.errors import ModelError
from facefusion_batch.faces.detectors import ScrfdDetector, YoloFaceDetector
from facefusion_batch.faces.recognizer import ArcFaceRecognizer
from facefusion_batch.faces.types import Face
from facefusion_batch.models import store
from facefusion_batch.models.catalog import CATALOG, DETECTOR_FOR, RECOGNIZER
from facefusion_batch.models.dynamic_batch import dynamic_batch_model
from facefusion_batch.models.sessions import GuardedSession, SessionPool
from facefusion_batch.models.signature import check_model
from facefusion_batch.settings import Settings


def neural_model_states(settings: Settings) -> list[store.ModelState]:
    """State of each model file the neural engine needs under these settings."""
    memo = store.ChecksumMemo(settings.cache_path / "checksums.json")
    names = [settings.face_swapper_model, RECOGNIZER, DETECTOR_FOR[settings.face_detector_model]]
    return [store.inspect(settings.models_path, CATALOG[name], memo) for name in names]



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
        concurrency = plan(settings)
        if concurrency.micro_batch > 1:
            swapper_path = dynamic_batch_model(swapper_path, settings.cache_path / "dynamic") or swapper_path
        swapper = GuardedSession(pool, swapper_path, slots)
        recognizer, detector = (GuardedSession(pool, state.path, slots) for state in states[1:])
        detector_class = ScrfdDetector if settings.face_detector_model == "scrfd" else YoloFaceDetector
        self._detector_session = detector
        self._detector = detector_class(detector, detector_state.spec, settings.face_detector_size,
                                        settings.face_detector_score)
        self._recognizer = ArcFaceRecognizer(recognizer, recognizer_state.spec)
        self._swapper = InSwapper(swapper, swapper_state.spec, read_emap(swapper_state.path),
                                  concurrency.micro_batch, settings.batch_wait_ms / 1000, concurrency.batcher_producers)

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

    def close(self) -> None:
        self._swapper.close()
        self.pool.close()

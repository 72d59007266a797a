"""Engines: the `FaceEngine` protocol (`base`), the neural and offline engines, the source-face cache.

`build_engine` is the one place that chooses between them.
"""
from __future__ import annotations

import threading

import cv2

from facefusion_batch.concurrency import concurrency_of
from facefusion_batch.engines.base import FaceEngine
from facefusion_batch.engines.source_cache import SourceCache
from facefusion_batch.models import store
from facefusion_batch.models.sessions import SessionPool
from facefusion_batch.settings import Settings


def build_engine(settings: Settings, slots: threading.Semaphore | None = None) -> FaceEngine:
    """The engine the settings ask for; `auto` picks neural when its model files are usable."""
    # OpenCV splits each warp, blur and resize over its own threads; when the frame threads already keep every
    # core busy that only adds hand-offs (measured: ~3 ms/frame more CPU for the same chain on 2 cores), so it
    # gets the cores the frame threads leave. OpenCV's setting is process-wide, set with the engine (once).
    cv2.setNumThreads(concurrency_of(settings).opencv_threads)
    pool = SessionPool(settings)
    cache = SourceCache(settings.cache_path)
    slots = slots or threading.Semaphore(concurrency_of(settings).inference_slots)
    from facefusion_batch.engines.neural import NeuralEngine, neural_model_states
    from facefusion_batch.engines.offline import OfflineEngine

    if settings.engine == "neural":
        return NeuralEngine(settings, pool, cache, slots)
    if settings.engine == "auto" and all(store.usable(s) for s in neural_model_states(settings)):
        return NeuralEngine(settings, pool, cache, slots)
    return OfflineEngine(settings, pool, cache, slots)

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
    if settings.engine == "auto":
        states = neural_model_states(settings)
        if any(s.status != "missing" for s in states):  # some are there: neural, or exit 3 naming the others
            return NeuralEngine(settings, pool, cache, slots)
        engine = OfflineEngine(settings, pool, cache, slots)
        engine.warnings = (*engine.warnings, auto_offline_note(states))
        return engine
    return OfflineEngine(settings, pool, cache, slots)


def preflight(settings: Settings) -> None:
    """The engine's refusals that need no model loaded (ModelError: a model file missing or damaged;
    SettingsError: what the engine can't do), said before a run takes its output lock or writes anything."""
    from facefusion_batch.engines.base import refuse_offline_reference
    from facefusion_batch.engines.neural import check_states, neural_model_states, processor_config
    from facefusion_batch.engines.offline import refuse_neural_only

    states = neural_model_states(settings) if settings.engine != "offline" else []
    if settings.engine == "neural" or any(s.status != "missing" for s in states):
        processor_config(settings)
        check_states(states)
        return
    refuse_neural_only(settings)
    refuse_offline_reference(settings)


def auto_offline_note(states: list[store.ModelState]) -> str:
    """Why `auto` runs the offline engine: none of the neural engine's files is in the models directory."""
    directory = states[0].path.parent
    names = " ".join(s.spec.name for s in states)
    return (f"engine auto: offline, as {directory} holds none of the neural engine's models "
            f"({', '.join(s.spec.file for s in states)}); `ffb models download {names}` (or --models-path at "
            "FaceFusion's .assets/models) for the neural engine, --engine offline to choose offline")

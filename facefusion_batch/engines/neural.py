"""The neural engine: SCRFD / YOLOFace detection, ArcFace embeddings and FaceFusion's processors (swapper,
enhancer, masks) from the model files FaceFusion users already have.

The adapters live in `processors/`; this module only opens their sessions (pool, semaphore, micro-batcher)
and hands them the faces. The default run (inswapper alone, FaceFusion's default box mask) keeps ffb's
earlier swapper path, so its outputs do not change.
"""
from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from facefusion_batch.concurrency import concurrency_of
from facefusion_batch.engines.base import source_face
from facefusion_batch.engines.inswapper import InSwapper, read_emap
from facefusion_batch.engines.source_cache import Record, SourceCache
from facefusion_batch.errors import ModelError, SettingsError
from facefusion_batch.faces.detectors import (FaceDetection, RetinaFaceDetector, ScrfdDetector, YoloFaceDetector,
                                              YunetDetector)
from facefusion_batch.faces.recognizer import ArcFaceRecognizer
from facefusion_batch.faces.types import Face
from facefusion_batch.models import store
from facefusion_batch.models.batcher import MicroBatcher
from facefusion_batch.models.catalog import CATALOG, CLASSIFIER, DETECTORS_FOR, RECOGNIZER
from facefusion_batch.models.dynamic_batch import dynamic_batch_model
from facefusion_batch.models.sessions import GuardedSession, SessionPool
from facefusion_batch.models.signature import check_model
from facefusion_batch.processors import pixel_boost
from facefusion_batch.processors.build import Processors, build_processors
from facefusion_batch.processors.classifier import (Attributes, FaceClassifier, filter_faces, needs_classifier,
                                                    resolve_auto)
from facefusion_batch.processors.enhancer import EnhancerOptions
from facefusion_batch.processors.landmarker import (ESTIMATOR, Estimator68From5, FaceLandmarker, Fan2dLandmarker,
                                                    LandmarkerOptions, PeppaWutzLandmarker, landmarker_models)
from facefusion_batch.processors.masks import MaskOptions
from facefusion_batch.processors.config import ProcessorConfig
from facefusion_batch.processors.device_chain import device_support
from facefusion_batch.processors.swapper import SwapperOptions, average_identity
from facefusion_batch.processors.tensors import MergedRuns, batch_allowed
from facefusion_batch.settings import Settings

# Processor models that may run from an fp16 copy on CUDA (the detector, recogniser and classifier stay fp32:
# their scores and embeddings decide which faces are swapped).
_HALF_FAMILIES = ("swapper", "enhancer", "occluder", "parser")
# Swapper kinds that take the source face as an image: with several sources, the first one's (FaceFusion's).
_IMAGE_SOURCE = ("blendswap", "uniface")


def processor_config(settings: Settings) -> ProcessorConfig:
    """The processors the settings ask for, checked (SettingsError naming the setting)."""
    boost = None
    if settings.face_swapper_pixel_boost:
        boost = pixel_boost.parse_boost(settings.face_swapper_pixel_boost)
        try:
            pixel_boost.check_boost(CATALOG[settings.face_swapper_model], boost)
        except ValueError as exc:
            raise SettingsError(f"face_swapper_pixel_boost: {exc}") from None
    try:
        return ProcessorConfig(
            settings.processors,
            SwapperOptions(settings.face_swapper_model, settings.face_swapper_weight, boost),
            EnhancerOptions(settings.face_enhancer_model, settings.face_enhancer_blend, settings.face_enhancer_weight),
            MaskOptions(settings.face_mask_types, settings.face_mask_blur, settings.face_mask_padding,
                        settings.face_mask_regions, settings.face_mask_areas),
            settings.face_occluder_model, settings.face_parser_model, classify=filters_on(settings))
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def filters_on(settings: Settings) -> bool:
    return needs_classifier(settings.face_selector_gender, settings.face_selector_race,
                            settings.face_selector_age_start, settings.face_selector_age_end)


def uses_earlier_path(settings: Settings) -> bool:
    """inswapper alone with FaceFusion's default mask settings: ffb's earlier swapper path (same outputs)."""
    return (settings.processors == ("face_swapper",) and CATALOG[settings.face_swapper_model].kind == "inswapper"
            and settings.face_swapper_pixel_boost in ("", "128x128") and settings.face_swapper_weight == 0.5
            and settings.face_mask_types == ("box",) and settings.face_mask_blur == 0.3
            and settings.face_mask_padding == (0, 0, 0, 0))


def device_face_work(settings: Settings) -> bool:
    """Whether the per-face work runs on the execution device (DeviceChain): `face_work = device`, or `auto`
    with CUDA/TensorRT and masks the device path does. SettingsError for `device` with masks it doesn't."""
    reason = device_support(MaskOptions(settings.face_mask_types, settings.face_mask_blur,
                                        settings.face_mask_padding, settings.face_mask_regions,
                                        settings.face_mask_areas))
    if settings.face_work == "device":
        if reason:
            raise SettingsError(reason)
        return True
    gpu = any(p in ("cuda", "tensorrt") for p in settings.execution_providers)
    return settings.face_work == "auto" and gpu and reason is None


def needs_landmarks(settings: Settings) -> bool:
    """The area mask is on for a swap: only then are 68 landmarks computed (the enhancer has no area mask)."""
    return "area" in settings.face_mask_types and "face_swapper" in settings.processors


def landmarker_names(settings: Settings) -> list[str]:
    """The face landmarker's model files under these settings (none without the area mask)."""
    if not needs_landmarks(settings):
        return []
    try:
        return landmarker_models(settings.face_landmarker_model, settings.face_landmarker_score)
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def neural_model_names(settings: Settings) -> list[str]:
    """Every model file the neural engine loads under these settings: the processors', the landmarker's, then
    recogniser and detector."""
    names = (processor_config(settings).models() + landmarker_names(settings)
             + [RECOGNIZER, *DETECTORS_FOR[settings.face_detector_model]])
    return list(dict.fromkeys(names))


def neural_model_states(settings: Settings) -> list[store.ModelState]:
    """State of each model file the neural engine needs under these settings."""
    memo = store.ChecksumMemo(settings.cache_path / "checksums.json")
    return [store.inspect(settings.models_path, CATALOG[name], memo) for name in neural_model_names(settings)]


def check_states(states: Sequence[store.ModelState]) -> None:
    """One ModelError naming every missing model (with the download command) and every damaged one."""
    missing = [s for s in states if s.status == "missing"]
    damaged = [s for s in states if not store.usable(s) and s.status != "missing"]
    problems = []
    if missing:
        names = [s.spec.name for s in missing]
        why = (f" ({CATALOG[CLASSIFIER].file}: the face selector's gender/race/age filters need it)"
               if CLASSIFIER in names and len(names) > 1 else
               " (the face selector's gender/race/age filters need it)" if CLASSIFIER in names else "")
        landmarkers = [CATALOG[n].file for n in names if CATALOG[n].family in ("landmarker", "landmarker_68_5")]
        if landmarkers:
            why += f" ({', '.join(landmarkers)}: face_mask_types area needs the 68-point face landmarker)"
        problems.append(f"{', '.join(s.spec.file for s in missing)} not found in {missing[0].path.parent}{why}; "
                        f"run `ffb models download {' '.join(names)}` (or copy them from FaceFusion's "
                        ".assets/models)")
    problems += [f"{s.detail}: {store.fix_hint(s)}" for s in damaged]
    if problems:
        raise ModelError("; ".join(problems))


class NeuralEngine:
    """Detector + ArcFace + the processor chain, sessions from the pool, calls bounded by the semaphore."""

    name = "neural"

    def __init__(self, settings: Settings, pool: SessionPool, cache: SourceCache,
                 slots: threading.Semaphore) -> None:
        self.pool, self.cache, self._settings = pool, cache, settings
        self._swapper: InSwapper | None = None
        self._batchers: list[MicroBatcher] = []
        try:
            self._load(settings, slots)
        except BaseException:  # a model that fails to load: the batcher threads and sessions opened so far go
            self.close()
            raise

    def _load(self, settings: Settings, slots: threading.Semaphore) -> None:
        self.config = processor_config(settings)
        self.device_work = device_face_work(settings)  # a face_work it can't do is refused before any model loads
        self.warnings = tuple(self.config.ignored_settings())
        states = neural_model_states(settings)
        check_states(states)
        for state in states:
            check_model(state.spec, state.path)  # before anything parses it: a wrong file is named as such
        pool = self.pool
        self.models = tuple(state.spec.name for state in states)
        self.model_files = tuple(state.path for state in states)
        by_name = {state.spec.name: state for state in states}
        self._concurrency = concurrency_of(settings)
        self._slots = slots
        self._detector = self._face_detection(settings, by_name, slots)
        recognizer_state = by_name[RECOGNIZER]
        self._recognizer = ArcFaceRecognizer(GuardedSession(pool, recognizer_state.path, slots),
                                             recognizer_state.spec)
        self._processors: Processors | None = None
        self._classifier: FaceClassifier | None = None
        self._landmarker = self._face_landmarker(settings, by_name)
        if uses_earlier_path(settings) and not self.device_work:
            self._swapper = self._inswapper(by_name[settings.face_swapper_model])
            if self.config.classify:
                self._classifier = FaceClassifier(self._open(by_name[CLASSIFIER]), CATALOG[CLASSIFIER])
        else:
            self._processors = self._build(by_name)
            self._classifier = self._processors.classifier
        self._weighted = (self._processors is not None and self._processors.swapper is not None
                          and settings.face_swapper_weight != 0.5
                          and CATALOG[settings.face_swapper_model].kind not in _IMAGE_SOURCE)

    def _face_detection(self, settings: Settings, by_name: dict[str, store.ModelState],
                        slots: threading.Semaphore) -> FaceDetection:
        """The detector(s) of face_detector_model (many: three), at face_detector_angles, with its margin."""
        adapters = {"detector_scrfd": ScrfdDetector, "detector_yolo": YoloFaceDetector,
                    "detector_retinaface": RetinaFaceDetector, "detector_yunet": YunetDetector}
        detectors = []
        for name in DETECTORS_FOR[settings.face_detector_model]:
            state = by_name[name]
            session = GuardedSession(self.pool, state.path, slots)
            detectors.append(adapters[state.spec.family](session, state.spec, settings.face_detector_size,
                                                         settings.face_detector_score))
            if len(detectors) == 1:
                self._detector_session = session  # one call per frame and angle: detector_calls counts frames
        self._detection_runs = len(settings.face_detector_angles)
        return FaceDetection(detectors, settings.face_detector_angles,
                             settings.face_detector_margin)  # type: ignore[arg-type]

    def _build(self, by_name: dict[str, store.ModelState]) -> Processors:
        """The processors, on the device path when chosen. A model the device path can't feed (a fixed batch
        of 1 that could not be given a dynamic one) sends `auto` to the CPU path and stops `device` at start."""
        emap = lambda name: read_emap(by_name[name].path)  # noqa: E731
        if self.device_work:
            try:
                return build_processors(self.config, lambda name: self._open_on_device(by_name[name]), emap,
                                        self.pool.graph)
            except ValueError as exc:
                if self._settings.face_work == "device":
                    raise SettingsError(f"face_work = device: {exc}; use face_work = auto or cpu") from None
                self.device_work = False
        return build_processors(self.config, lambda name: self._open(by_name[name]), emap)

    def _face_landmarker(self, settings: Settings, by_name: dict[str, store.ModelState]) -> FaceLandmarker | None:
        names = landmarker_names(settings)
        if not names:
            return None
        adapters = {"2dfan4": Fan2dLandmarker, "peppa_wutz": PeppaWutzLandmarker}
        landmarkers = [adapters[name](self._open(by_name[name])) for name in names if name in adapters]
        estimator = Estimator68From5(self._open(by_name[ESTIMATOR]))
        return FaceLandmarker(LandmarkerOptions(settings.face_landmarker_model, settings.face_landmarker_score),
                              estimator, landmarkers)

    def _inswapper(self, state: store.ModelState) -> InSwapper:
        path = state.path
        if self._concurrency.micro_batch > 1:
            path = dynamic_batch_model(path, self._settings.cache_path / "dynamic") or path
        session = GuardedSession(self.pool, self._precise(state, path), self._slots, state.spec.name)
        return InSwapper(session, state.spec, read_emap(state.path),
                         self._concurrency.micro_batch, self._settings.batch_wait_ms / 1000,
                         self._concurrency.batcher_producers)

    def _open(self, state: store.ModelState) -> Any:
        """A processor model's session: guarded, and with micro-batching on, its calls from all frame threads
        merged into one where the model has (or can be given) a dynamic batch axis."""
        batch, path, name = self._concurrency.micro_batch, state.path, state.spec.name
        if batch > 1:
            path = dynamic_batch_model(path, self._settings.cache_path / "dynamic") or path
        session = GuardedSession(self.pool, self._precise(state, path), self._slots, name)  # timed by model name
        if batch <= 1 or not batch_allowed(session, ("weight",)):
            return session
        return MergedRuns(session, self._make_batcher(name))

    def _open_on_device(self, state: store.ModelState) -> GuardedSession:
        """A processor model's session for the device path: its calls take a frame's faces together (with a
        dynamic batch axis where the model has or can be given one), never merged across frame threads,
        whose merging would bring the crops back to the host."""
        path = dynamic_batch_model(state.path, self._settings.cache_path / "dynamic") or state.path
        return GuardedSession(self.pool, self._precise(state, path), self._slots, state.spec.name)

    def _precise(self, state: store.ModelState, path: Path) -> Path:
        """The file a processor model runs from: its fp16 copy on CUDA where that stays within tolerance
        (SessionPool.half), unless the file is fp16 already."""
        if state.spec.fp16 or state.spec.family not in _HALF_FAMILIES:
            return path
        return self.pool.half(path)

    def _make_batcher(self, name: str) -> Callable[[Callable], MicroBatcher]:
        def make(run: Callable) -> MicroBatcher:
            batcher = MicroBatcher(run, self._concurrency.micro_batch, self._settings.batch_wait_ms / 1000,
                                   f"ffb-{name}-batcher", self._concurrency.batcher_producers)
            self._batchers.append(batcher)
            return batcher
        return make

    def detect(self, frame: np.ndarray) -> list[Face]:
        """The frame's faces; with the area mask on, each carries its 68 landmarks (frame pixels) in
        `landmarks`, so the face tracks smooth them with the keypoints and box (no flickering hull)."""
        faces = self._detector.detect([frame])[0]
        return self._with_landmarks(frame, faces) if self._landmarker is not None else faces

    def _with_landmarks(self, frame: np.ndarray, faces: list[Face]) -> list[Face]:
        assert self._landmarker is not None
        points = self._landmarker.landmarks(frame, faces)
        return [dataclasses.replace(face, landmarks=p) for face, p in zip(faces, points)]

    def embed(self, frame: np.ndarray, faces: Sequence[Face]) -> np.ndarray:
        return self._recognizer.embed(frame, faces)

    def prepare_source(self, path: Path) -> Record:
        """The source face's identity: `embedding` (unit), `raw` (as ArcFace returns it), `faces` (how many the
        image holds) and, for the processor chain, `input` (the swapper's source feed)."""
        def compute() -> Record:
            image, face, count = source_face(path, self)
            raw = self._recognizer.embed_raw(image, [face])[0]
            record = {"embedding": raw / max(float(np.linalg.norm(raw)), 1e-12), "raw": raw,
                      "faces": np.array(count)}
            swapper = self._processors.swapper if self._processors else None
            if swapper is not None:
                record["input"] = swapper.source_input(raw, frame=image, kps=face.kps)
            if self._auto_filter():
                attributes = self._classifier.classify(image, [face])[0]
                record["gender"], record["race"] = np.array(attributes.gender), np.array(attributes.race)
            return record

        # The record's form depends on the path (the chain's records carry the swapper's source feed).
        path_kind = "chain" if self._processors is not None else "inswapper"
        auto = ":attributes" if self._auto_filter() else ""
        return self.cache.get(path, f"neural-source:{path_kind}{auto}:" + ":".join(self.models), compute)

    def _auto_filter(self) -> bool:
        """FaceFusion's face_selector_gender/race auto: the source face's own, classified once with it."""
        s = self._settings
        return self._classifier is not None and "auto" in (s.face_selector_gender, s.face_selector_race)

    def merge_sources(self, records: Sequence[Record]) -> Record:
        """Several photos of one person as one identity, as FaceFusion averages them: the mean of the raw
        embeddings and of the unit embeddings (the image-based swappers take the first photo's face)."""
        if len(records) == 1:
            return records[0]
        raw, unit = average_identity(np.stack([r["raw"] for r in records]))
        merged = {"embedding": unit / max(float(np.linalg.norm(unit)), 1e-12), "raw": raw,
                  "faces": records[0]["faces"],
                  **{k: records[0][k] for k in ("gender", "race") if k in records[0]}}  # the first photo's
        swapper = self._processors.swapper if self._processors else None
        if swapper is not None:
            merged["input"] = (records[0]["input"] if swapper.spec.kind in _IMAGE_SOURCE
                               else swapper.source_input(raw, unit=unit))
        elif self._swapper is not None:
            merged["embedding"] = raw  # inswapper's latent: FaceFusion feeds the averaged raw embedding
        return merged

    def face_filter(self, source: Record | None = None) -> Callable[[np.ndarray, list[Face]], list[Face]] | None:
        """The face selector's gender/race/age filters (FairFace), or None when none is set; `auto` takes the
        gender/race of `source` (prepare_source's record)."""
        classifier = self._classifier
        if classifier is None:
            return None
        s = self._settings
        attributes = None
        if source is not None and "gender" in source:
            attributes = Attributes(str(source["gender"]), range(0), str(source["race"]))  # type: ignore[arg-type]
        gender, race = resolve_auto(s.face_selector_gender, s.face_selector_race, attributes)

        def keep(frame: np.ndarray, faces: list[Face]) -> list[Face]:
            if not faces:
                return faces
            return filter_faces(faces, classifier.classify(frame, faces), gender, race, s.face_selector_age_start,
                                s.face_selector_age_end)
        return keep

    def swap(self, frame: np.ndarray, faces: Sequence[Face], source: Record) -> np.ndarray:
        """A copy of `frame` with `faces` swapped: the frame itself is left as it was (a face swapped partly is
        blended with it, workflow/processor.py `_faded`; faces found later are followed back through it,
        workflow/backfill.py)."""
        frame = frame.copy()
        if self._swapper is not None:
            return self._swapper.swap(frame, faces, self._swapper.latent(source["embedding"]))
        assert self._processors is not None
        targets = self._recognizer.embed_raw(frame, faces) if self._weighted else None
        landmarks = None
        if self._landmarker is not None:
            if any(face.landmarks is None for face in faces):  # not from detect (a caller's own faces)
                faces = self._with_landmarks(frame, list(faces))
            landmarks = [face.landmarks[:, :2] for face in faces]
        return self._processors.chain.process(frame, list(faces), source.get("input"), targets, landmarks)

    def refit(self, frame: np.ndarray, predicted: Sequence[Face]) -> list[Face] | None:
        """The neural detectors see whole frames only: a missed face is carried by its track instead."""
        return None

    def sweep(self, frame: np.ndarray, faces: Sequence[Face], changed: np.ndarray | None = None) -> list[Face]:
        """The neural detectors see the whole frame at their own input size: no closer look."""
        return []

    def settle(self, frame: np.ndarray, faces: Sequence[Face], source: Record, index: int) -> list[Face]:
        """The neural swapper changes every face it is given: nothing to decide per track."""
        return list(faces)

    def detector_calls(self) -> int:
        """Frames on which detection ran (the neural detectors take one frame per call)."""
        return self._detector_session.calls.value // self._detection_runs

    def close(self) -> None:
        if self._swapper is not None:
            self._swapper.close()
        for batcher in self._batchers:
            batcher.close()
        self.pool.close()

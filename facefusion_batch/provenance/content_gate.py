"""The content gate: the source image and sampled frames of each target are checked for explicit content
before any swap; a flagged target is blocked (not processed, nothing written).

Two classifiers, the same rule for both (FaceFusion 3.8.1's content_analyser.py):
- `facefusion`: nsfw_1 (EraX YOLO detector, 640), nsfw_2 (Marqo, 384) and nsfw_3 (Freepik, 448) from
  models_path, each fed `input` as RGB NCHW fitted into its size (aspect kept, centred, zero padding) and
  normalised by its mean/std; nsfw_1 flags when its best class score > 0.2, nsfw_2 when logit[0] - logit[1]
  > 0.25, nsfw_3 when (logit[2] + logit[3]) - (logit[0] + logit[1]) > 10.5; a frame is flagged when two of
  the three agree.
- `open_nsfw`: Yahoo's open_nsfw (BSD-2-Clause) bundled under assets/open_nsfw: 256x256 resize, centre
  224 crop, BGR minus (104, 117, 123), NHWC; flags when P(nsfw) > OPEN_NSFW_THRESHOLD.
A picture is flagged when its one frame is. A video is sampled at frame numbers divisible by int(fps) (one
frame a second) and flagged when more than 10 % of the samples are.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

import numpy as np

from facefusion_batch.errors import ModelError, SourceError
from facefusion_batch.models.catalog import CATALOG, ModelSpec
from facefusion_batch.settings import Settings

GateStatus = Literal["checked", "not available", "off by setting"]
ASSET = Path(__file__).resolve().parents[1] / "assets" / "open_nsfw" / "open_nsfw_fp16.onnx"
FACEFUSION_MODELS = ("nsfw_1", "nsfw_2", "nsfw_3")
OPEN_NSFW_THRESHOLD = 0.8  # Yahoo's guidance: above 0.8 likely NSFW, below 0.2 likely safe
VIDEO_RATE = 10.0  # percent of sampled frames flagged above which a video is flagged (FaceFusion's)
SAMPLE_SIDE = 640  # sampled video frames are decoded at most this large (nsfw_1's input size)


def fit_contain(frame: np.ndarray, size: int) -> np.ndarray:
    """The frame resized to fit a size x size square, aspect kept, centred on black (FaceFusion's
    fit_contain_frame)."""
    import cv2

    height, width = frame.shape[:2]
    scale = min(size / height, size / width)
    new_w, new_h = int(width * scale), int(height * scale)
    top, left = max(0, (size - new_h) // 2), max(0, (size - new_w) // 2)
    resized = cv2.resize(frame, (new_w, new_h))
    return np.pad(resized, ((top, size - new_h - top), (left, size - new_w - left), (0, 0)))


def facefusion_input(frame: np.ndarray, spec: ModelSpec) -> np.ndarray:
    """A BGR frame as one nsfw_* model's input: (1, 3, S, S) float32 RGB, (x/255 - mean) / std."""
    fitted = fit_contain(frame, spec.size)[:, :, ::-1] / 255.0
    fitted = (fitted - np.array(spec.mean)) / np.array(spec.std)
    return np.ascontiguousarray(fitted.transpose(2, 0, 1)[None], dtype=np.float32)


def facefusion_votes(outputs: dict[str, np.ndarray]) -> dict[str, bool]:
    """Each model's verdict from its first output (FaceFusion's scores and thresholds)."""
    nsfw_1 = outputs["nsfw_1"]  # (1, 4 + classes, anchors): boxes then class scores
    nsfw_2 = outputs["nsfw_2"][0]  # logits [nsfw, sfw]
    nsfw_3 = outputs["nsfw_3"][0]  # logits of four levels, the last two explicit
    return {"nsfw_1": bool(np.max(np.amax(nsfw_1[:, 4:], axis=1)) > 0.2),
            "nsfw_2": bool(nsfw_2[0] - nsfw_2[1] > 0.25),
            "nsfw_3": bool((nsfw_3[2] + nsfw_3[3]) - (nsfw_3[0] + nsfw_3[1]) > 10.5)}


def open_nsfw_input(frame: np.ndarray) -> np.ndarray:
    """A BGR frame as open_nsfw's input: (1, 224, 224, 3) float32 BGR minus the dataset mean."""
    import cv2

    resized = cv2.resize(frame[:, :, :3], (256, 256), interpolation=cv2.INTER_LINEAR)[16:240, 16:240]
    return (resized.astype(np.float32) - np.array([104, 117, 123], np.float32))[None]


@dataclass(frozen=True)
class Verdict:
    """One target's check: whether it is flagged, and the one-line reason."""

    flagged: bool
    reason: str = ""


class ContentGate:
    """The run's gate: which classifier (if any) and how to ask it. One per process, shared by threads."""

    def __init__(self, status: GateStatus, classifier: str = "", run: Callable[[np.ndarray], bool] | None = None):
        self.status = status
        self.classifier = classifier  # facefusion (nsfw_1+nsfw_2+nsfw_3) | open_nsfw | ""
        self._run = run

    @property
    def record(self) -> str:
        """What outputs and the journal say about the gate: `checked (open_nsfw)`, `not available`, ..."""
        return f"{self.status} ({self.classifier})" if self.classifier else self.status

    def flags(self, frame: np.ndarray) -> bool:
        assert self._run is not None
        if frame.ndim == 2:
            frame = np.repeat(frame[:, :, None], 3, axis=2)
        return self._run(np.ascontiguousarray(frame[:, :, :3]))

    def check_source(self, path: Path, frame: np.ndarray) -> None:
        """Raise SourceError when the source image is flagged: no target could be swapped with it."""
        if self._run is not None and self.flags(frame):
            raise SourceError(f"{path}: the content gate ({self.classifier}) flags this source image as explicit; "
                              "use another source photo")

    def check_picture(self, frames: list[np.ndarray]) -> Verdict:
        if self._run is None:
            return Verdict(False)
        if any(self.flags(frame) for frame in frames[:1] or frames):
            return Verdict(True, f"blocked by the content gate ({self.classifier}): the image is flagged as explicit")
        return Verdict(False)

    def check_video(self, path: Path, width: int, height: int, fps: float) -> Verdict:
        """Sample one frame a second (frame numbers divisible by int(fps)); flagged above VIDEO_RATE %."""
        if self._run is None:
            return Verdict(False)
        from facefusion_batch.video.decoder import sampled_frames

        total = flagged = 0
        for frame in sampled_frames(path, max(1, int(fps)), *sample_size(width, height)):
            total += 1
            flagged += self.flags(frame)
        rate = 100.0 * flagged / total if total else 0.0
        if rate > VIDEO_RATE:
            return Verdict(True, f"blocked by the content gate ({self.classifier}): {flagged} of {total} sampled "
                                 f"frames flagged as explicit ({rate:.0f} %, over {VIDEO_RATE:.0f} %)")
        return Verdict(False)


def sample_size(width: int, height: int) -> tuple[int, int]:
    """The size sampled frames are decoded at: within SAMPLE_SIDE, even, aspect kept."""
    scale = min(1.0, SAMPLE_SIDE / max(width, height))
    return max(2, int(width * scale) // 2 * 2), max(2, int(height * scale) // 2 * 2)


def build_gate(settings: Settings, pool, slots=None) -> ContentGate:
    """The gate the settings ask for: FaceFusion's three models when all are usable in models_path, else
    the bundled open_nsfw, else none (`not available`); `off by setting` when content_gate = off. Sessions
    come from the engine's `pool`; `slots` (a semaphore) bounds concurrent model calls."""
    if settings.content_gate == "off":
        return ContentGate("off by setting")
    from facefusion_batch.models import store

    memo = store.ChecksumMemo(settings.cache_path / "checksums.json")
    specs = [CATALOG[name] for name in FACEFUSION_MODELS]
    states = [store.inspect(settings.models_path, spec, memo) for spec in specs]
    corrupt = [state for state in states if state.status == "corrupt"]
    if corrupt:  # there, but not the file it should be: the user meant it to run
        raise ModelError(f"{corrupt[0].detail}; {store.fix_hint(corrupt[0])} (content gate)")
    if all(store.usable(state) for state in states):
        return ContentGate("checked", "nsfw_1+nsfw_2+nsfw_3", _facefusion_runner(pool, settings, specs, slots))
    if ASSET.is_file():
        return ContentGate("checked", "open_nsfw", _open_nsfw_runner(pool, slots))
    return ContentGate("not available")


def _call(pool, path: Path, feed: dict[str, np.ndarray], slots) -> np.ndarray:
    session = pool.get(path)
    if slots is None:
        return pool.run(session, feed)[0]  # IO binding on a GPU, as every model call
    with slots:
        return pool.run(session, feed)[0]


def _facefusion_runner(pool, settings: Settings, specs: list[ModelSpec], slots) -> Callable[[np.ndarray], bool]:
    paths = {spec.name: settings.models_path / spec.file for spec in specs}

    def run(frame: np.ndarray) -> bool:
        outputs = {spec.name: _call(pool, paths[spec.name], {"input": facefusion_input(frame, spec)}, slots)
                   for spec in specs}
        return sum(facefusion_votes(outputs).values()) >= 2

    return run


def _open_nsfw_runner(pool, slots) -> Callable[[np.ndarray], bool]:
    def run(frame: np.ndarray) -> bool:
        scores = _call(pool, ASSET, {"input:0": open_nsfw_input(frame)}, slots)
        return bool(scores[0, 1] > OPEN_NSFW_THRESHOLD)

    return run

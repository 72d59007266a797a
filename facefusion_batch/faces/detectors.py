"""Neural face detectors: one adapter per family (SCRFD, YOLOFace) over shared letterbox + NMS."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from facefusion_batch.errors import SettingsError
from facefusion_batch.faces.geometry import letterbox, nms
from facefusion_batch.faces.types import Face
from facefusion_batch.models.catalog import ModelSpec

_NMS_IOU = 0.4


def _tensor(canvas: np.ndarray, spec: ModelSpec) -> np.ndarray:
    image = canvas[:, :, ::-1] if spec.rgb else canvas
    scaled = (image.astype(np.float32) / 255.0 - np.float32(spec.mean[0])) / np.float32(spec.std[0])
    return np.ascontiguousarray(scaled.transpose(2, 0, 1)[None])


def _faces(boxes: np.ndarray, scores: np.ndarray, kps: np.ndarray, scale: float) -> list[Face]:
    if len(scores) == 0:
        return []
    keep = nms(boxes, scores, _NMS_IOU)
    return [Face(box=(boxes[i] / scale).astype(np.float32), score=float(scores[i]),
                 kps=(kps[i] / scale).astype(np.float32)) for i in keep]


def anchor_centres(size: int, stride: int, per_cell: int) -> np.ndarray:
    """Anchor centres of a stride's grid, row-major, each repeated `per_cell` times."""
    cells = size // stride
    ys, xs = np.mgrid[:cells, :cells]
    centres = np.stack([xs, ys], axis=-1).reshape(-1, 2).astype(np.float32) * stride
    return np.repeat(centres, per_cell, axis=0)


class _Detector:
    """Letterbox each frame to the model's square input, run, decode in input pixels, scale back."""

    def __init__(self, session: Any, spec: ModelSpec, size: int, score_threshold: float) -> None:
        self._session = session
        self._spec = spec
        self._size = size
        self._threshold = score_threshold
        model_input = session.get_inputs()[0]
        self._input = model_input.name
        height, width = list(model_input.shape)[2:4]
        if isinstance(height, int) and isinstance(width, int) and (height, width) != (size, size):
            raise SettingsError(f"face_detector_size {size}: {spec.file} takes {width}x{height} only; set "
                                f"face_detector_size to {width} (--face-detector-size {width}x{height})")

    def detect(self, frames: Sequence[np.ndarray]) -> list[list[Face]]:
        faces = []
        for frame in frames:  # the published exports have a fixed batch of 1
            canvas, scale = letterbox(frame, self._size)
            outputs = self._session.run(None, {self._input: _tensor(canvas, self._spec)})
            faces.append(self._decode(outputs, scale))
        return faces

    def _decode(self, outputs: list[np.ndarray], scale: float) -> list[Face]:
        raise NotImplementedError


class ScrfdDetector(_Detector):
    """SCRFD (InsightFace): 9 outputs = scores, box distances, keypoints for strides 8/16/32."""

    strides = (8, 16, 32)

    def __init__(self, session: Any, spec: ModelSpec, size: int, score_threshold: float) -> None:
        super().__init__(session, spec, size, score_threshold)
        self._anchors = {s: anchor_centres(size, s, 2) for s in self.strides}

    def _decode(self, outputs: list[np.ndarray], scale: float) -> list[Face]:
        boxes, scores, points = [], [], []
        for i, stride in enumerate(self.strides):
            score = outputs[i].reshape(-1)
            hit = score >= self._threshold
            if not hit.any():
                continue
            centres = self._anchors[stride][hit]
            dist = outputs[i + 3].reshape(-1, 4)[hit] * stride
            kps = outputs[i + 6].reshape(-1, 5, 2)[hit] * stride
            boxes.append(np.concatenate([centres - dist[:, :2], centres + dist[:, 2:]], axis=1))
            points.append(centres[:, None, :] + kps)
            scores.append(score[hit])
        if not scores:
            return []
        return _faces(np.concatenate(boxes), np.concatenate(scores), np.concatenate(points), scale)


class YoloFaceDetector(_Detector):
    """YOLOFace 8n: one output (1, 20, anchors) = cx, cy, w, h, score, 5 x (x, y, confidence)."""

    def _decode(self, outputs: list[np.ndarray], scale: float) -> list[Face]:
        rows = outputs[0][0].T
        rows = rows[rows[:, 4] >= self._threshold]
        centre, half = rows[:, 0:2], rows[:, 2:4] / 2
        boxes = np.concatenate([centre - half, centre + half], axis=1)
        kps = rows[:, 5:20].reshape(-1, 5, 3)[:, :, :2]
        return _faces(boxes, rows[:, 4], kps, scale)

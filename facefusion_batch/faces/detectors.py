"""Neural face detectors: one adapter per family (SCRFD, RetinaFace, YOLOFace, YuNet) over shared letterbox +
NMS, and `FaceDetection`: FaceFusion's detection around them (several detectors at once, the frame rotated to
more angles, a margin around it)."""
from __future__ import annotations

from typing import Any, Sequence

import cv2
import numpy as np

from facefusion_batch.errors import SettingsError
from facefusion_batch.faces.geometry import letterbox, nms
from facefusion_batch.faces.types import Face
from facefusion_batch.models.catalog import ModelSpec

_NMS_IOU = 0.4
Raw = tuple[np.ndarray, np.ndarray, np.ndarray]  # boxes (N, 4), scores (N,), keypoints (N, 5, 2)
_NONE: Raw = (np.zeros((0, 4), np.float32), np.zeros(0, np.float32), np.zeros((0, 5, 2), np.float32))


def _tensor(canvas: np.ndarray, spec: ModelSpec) -> np.ndarray:
    image = canvas[:, :, ::-1] if spec.rgb else canvas
    scaled = (image.astype(np.float32) / 255.0 - np.float32(spec.mean[0])) / np.float32(spec.std[0])
    return np.ascontiguousarray(scaled.transpose(2, 0, 1)[None])


def _faces(boxes: np.ndarray, scores: np.ndarray, kps: np.ndarray, iou: float = _NMS_IOU) -> list[Face]:
    if len(scores) == 0:
        return []
    keep = nms(boxes, scores, iou)
    return [Face(box=boxes[i].astype(np.float32), score=float(scores[i]), kps=kps[i].astype(np.float32))
            for i in keep]


def _joined(parts: list[Raw]) -> Raw:
    parts = [part for part in parts if len(part[1])]
    if not parts:
        return _NONE
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]))


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
        return [_faces(*self.raw(frame)) for frame in frames]  # the published exports have a fixed batch of 1

    def raw(self, frame: np.ndarray) -> Raw:
        """Every detection scoring at least the threshold, in frame pixels, before NMS."""
        canvas, scale = letterbox(frame, self._size)
        outputs = self._session.run(None, {self._input: _tensor(canvas, self._spec)})
        boxes, scores, kps = self._decode(outputs)
        return boxes / scale, scores, kps / scale

    def _decode(self, outputs: list[np.ndarray]) -> Raw:
        raise NotImplementedError


class ScrfdDetector(_Detector):
    """SCRFD (InsightFace): 9 outputs = scores, box distances, keypoints for strides 8/16/32."""

    strides = (8, 16, 32)

    def __init__(self, session: Any, spec: ModelSpec, size: int, score_threshold: float) -> None:
        super().__init__(session, spec, size, score_threshold)
        self._anchors = {s: anchor_centres(size, s, 2) for s in self.strides}

    def _decode(self, outputs: list[np.ndarray]) -> Raw:
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
            return _NONE
        return np.concatenate(boxes), np.concatenate(scores), np.concatenate(points)


class YoloFaceDetector(_Detector):
    """YOLOFace 8n: one output (1, 20, anchors) = cx, cy, w, h, score, 5 x (x, y, confidence)."""

    def _decode(self, outputs: list[np.ndarray]) -> Raw:
        rows = outputs[0][0].T
        rows = rows[rows[:, 4] >= self._threshold]
        centre, half = rows[:, 0:2], rows[:, 2:4] / 2
        boxes = np.concatenate([centre - half, centre + half], axis=1)
        kps = rows[:, 5:20].reshape(-1, 5, 3)[:, :, :2]
        return boxes, rows[:, 4], kps


class RetinaFaceDetector(ScrfdDetector):
    """RetinaFace 10g (InsightFace): SCRFD's nine outputs and decoding (FaceFusion 3.8.1 decodes both alike)."""


class YunetDetector(_Detector):
    """YuNet (OpenCV): twelve outputs, per stride 8/16/32 class scores, objectness (score: their product), box
    (centre offset and log size in strides from the cell's corner) and keypoints (offsets in strides); one
    anchor per cell."""

    strides = (8, 16, 32)

    def __init__(self, session: Any, spec: ModelSpec, size: int, score_threshold: float) -> None:
        super().__init__(session, spec, size, score_threshold)
        self._anchors = {s: anchor_centres(size, s, 1) for s in self.strides}

    def _decode(self, outputs: list[np.ndarray]) -> Raw:
        boxes, scores, points = [], [], []
        for i, stride in enumerate(self.strides):
            score = (outputs[i] * outputs[i + 3]).reshape(-1)
            hit = score >= self._threshold
            if not hit.any():
                continue
            anchors = self._anchors[stride][hit]
            box = outputs[i + 6].reshape(-1, 4)[hit]
            centre, half = box[:, :2] * stride + anchors, np.exp(box[:, 2:4]) * stride / 2
            boxes.append(np.concatenate([centre - half, centre + half], axis=1))
            points.append(outputs[i + 9].reshape(-1, 5, 2)[hit] * stride + anchors[:, None, :])
            scores.append(score[hit])
        if not scores:
            return _NONE
        return np.concatenate(boxes), np.concatenate(scores), np.concatenate(points)


ANGLES = (0, 90, 180, 270)  # FaceFusion's face_detector_angles


def rotation(angle: int, width: int, height: int) -> tuple[np.ndarray, tuple[int, int]]:
    """The 2x3 matrix turning a width x height frame by `angle` degrees (counter-clockwise, as OpenCV) about
    its centre onto a canvas that holds it whole, and that canvas's size (FaceFusion's
    create_rotation_matrix_and_size)."""
    matrix = cv2.getRotationMatrix2D((width / 2, height / 2), angle, 1.0)
    size = np.abs(matrix[:, :2]) @ np.array([width, height], np.float64)
    matrix[:, 2] += (size - (width, height)) / 2
    return matrix, (int(round(size[0])), int(round(size[1])))


def map_back(raw: Raw, matrix: np.ndarray) -> Raw:
    """Detections made on a frame warped by `matrix`, in the frame's own pixels (a box: its corners' bounds)."""
    boxes, scores, kps = raw
    if not len(scores):
        return raw
    inverse = cv2.invertAffineTransform(matrix)
    corners = boxes[:, [0, 1, 2, 1, 2, 3, 0, 3]].reshape(-1, 4, 2)
    moved = corners @ inverse[:, :2].T + inverse[:, 2]
    points = kps @ inverse[:, :2].T + inverse[:, 2]
    return (np.concatenate([moved.min(axis=1), moved.max(axis=1)], axis=1).astype(np.float32), scores,
            points.astype(np.float32))


def margins(shape: tuple[int, ...], margin: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """FaceFusion's face_detector_margin (percent, top right bottom left; 100 is half the frame's side) in
    pixels."""
    height, width = shape[:2]
    top, right, bottom, left = margin
    return (int(height * top / 200), int(width * right / 200), int(height * bottom / 200),
            int(width * left / 200))


def nms_threshold(detectors: int, angles: int) -> float:
    """FaceFusion's overlap threshold (face_helper.get_nms_threshold): several detectors or angles find the
    same face several times, so their boxes are merged more eagerly."""
    if detectors > 1:
        return 0.1
    return {2: 0.3, 3: 0.2, 4: 0.1}.get(angles, _NMS_IOU)


class FaceDetection:
    """FaceFusion's detection around the adapters: the frame padded by the margin (black), turned to each
    angle, run through every detector (face_detector_model many: RetinaFace, SCRFD and YOLOFace), the
    detections mapped back to the frame and merged by NMS."""

    def __init__(self, detectors: Sequence[_Detector], angles: Sequence[int] = (0,),
                 margin: tuple[int, int, int, int] = (0, 0, 0, 0)) -> None:
        self._detectors, self._angles, self._margin = list(detectors), tuple(angles), margin
        self._iou = nms_threshold(len(self._detectors), len(self._angles))

    def detect(self, frames: Sequence[np.ndarray]) -> list[list[Face]]:
        return [self._detect(frame) for frame in frames]

    def _detect(self, frame: np.ndarray) -> list[Face]:
        if len(self._detectors) == 1 and self._angles == (0,) and not any(self._margin):
            return _faces(*self._detectors[0].raw(frame), self._iou)  # the common case, as it always was
        top, right, bottom, left = margins(frame.shape, self._margin)
        padded = cv2.copyMakeBorder(frame, top, bottom, left, right, cv2.BORDER_CONSTANT, value=(0, 0, 0)) \
            if top or right or bottom or left else frame
        found = []
        for angle in self._angles:
            if angle == 0:
                turned, matrix = padded, None
            else:
                matrix, size = rotation(angle, padded.shape[1], padded.shape[0])
                turned = cv2.warpAffine(padded, matrix, size)
            for detector in self._detectors:
                raw = detector.raw(turned)
                found.append(raw if matrix is None else map_back(raw, matrix))
        boxes, scores, kps = _joined(found)
        shift = np.array([left, top], np.float32)
        return _faces(boxes - np.tile(shift, 2), scores, kps - shift, self._iou)

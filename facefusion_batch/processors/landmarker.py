"""FaceFusion's 68-point face landmarker: `2dfan4`, `peppa_wutz` (or `many`: both, the better one wins) and
`fan_68_5`, which estimates the 68 points from the detector's 5. The area mask (processors/masks.py) is the
hull of some of these points.

Facts from FaceFusion 3.x (`face_landmarker.py`, `face_analyser.py`, `face_helper.py`):
- the landmarkers see a 256x256 crop in which the detector's box is centred and its longer side is 195 px,
  turned upright by the face's angle (0/90/180/270, from the 68-from-5 estimate's jaw line), with CLAHE on
  the Lab lightness when the crop is dark (mean L < 30); the crop is fed in the frame's channel order (BGR:
  FaceFusion does not swap it) as float 0..1, NCHW, input `input`;
- 2dfan4 returns (N, 68, 3) points in 64-px heatmap units and (N, 68, 64, 64) heatmaps; its score is the mean
  of the heatmaps' maxima mapped 0..0.9 -> 0..1. peppa_wutz returns (x, y, confidence) x 68 in the same
  units; its score is the mean confidence mapped 0..0.95 -> 0..1;
- `many` keeps 2dfan4's points unless peppa_wutz scores more than 0.2 higher;
- fan_68_5 takes the 5 points mapped into the unit ffhq_512 template space, (N, 5, 2) as `input`, and
  returns (N, 68, 2) in that space.

`face_landmarker_score` 0 runs no landmarker (the 68-from-5 estimate is used, as FaceFusion does); above 0,
a face whose landmarker score is not above it gets the estimate too. (FaceFusion uses the score only for
the 5 points it aligns with and keeps a low-scoring 68 for its area mask; ffb aligns with the detector's 5
points, and a landmarker that is unsure of a face, e.g. a turned or covered one, draws a worse hull than
the estimate.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence, get_args

import cv2
import numpy as np

from facefusion_batch.faces.geometry import WARP_TEMPLATES, align_matrix, compose, transform_points
from facefusion_batch.faces.types import Face
from facefusion_batch.processors.tensors import run_stacked

LandmarkerModel = Literal["many", "2dfan4", "peppa_wutz"]
LANDMARKER_MODELS: tuple[LandmarkerModel, ...] = get_args(LandmarkerModel)
ESTIMATOR = "fan_68_5"  # the 68-from-5 model, always needed with the area mask
CROP = 256  # both landmarkers' input size
BOX_SIDE = 195  # the box's longer side in the crop
HEATMAP = 64  # the landmarkers' output units: points / 64 * 256 are crop pixels
DARK = 30  # mean Lab lightness (0..255) below which the crop gets CLAHE
MANY_MARGIN = 0.2  # `many`: peppa_wutz wins only when it scores this much more than 2dfan4


def landmarker_models(model: LandmarkerModel, score: float) -> list[str]:
    """The model files the area mask needs: the 68-from-5 estimator, and the landmarker(s) unless the score
    is 0 (then only the estimate is used)."""
    if model not in LANDMARKER_MODELS:
        raise ValueError(f"unknown face landmarker model {model!r}; ffb has {', '.join(LANDMARKER_MODELS)}")
    if score <= 0:
        return [ESTIMATOR]
    return [ESTIMATOR] + (["2dfan4", "peppa_wutz"] if model == "many" else [model])


# --- pure geometry ---------------------------------------------------------------------------------------

def crop_matrix(box: np.ndarray, size: int = CROP) -> np.ndarray:
    """Frame -> crop: the box's centre to the crop's centre, its longer side to BOX_SIDE/256 of the crop."""
    x1, y1, x2, y2 = (float(v) for v in box)
    scale = BOX_SIDE / max(x2 - x1, y2 - y1, 1.0)
    tx, ty = (size - (x1 + x2) * scale) * 0.5, (size - (y1 + y2) * scale) * 0.5
    return np.array([[scale, 0.0, tx], [0.0, scale, ty]], dtype=np.float64)


def rotation(angle: float, size: int = CROP) -> tuple[np.ndarray, tuple[int, int]]:
    """The crop turned by `angle` degrees (counter-clockwise) about its centre, on a canvas that holds it
    all: (2x3 matrix, (width, height))."""
    matrix = cv2.getRotationMatrix2D((size / 2, size / 2), angle, 1.0)
    canvas = np.abs(matrix[:, :2]) @ np.array([size, size], dtype=np.float64)
    matrix[:, 2] += (canvas - size) * 0.5
    return matrix, (int(canvas[0]), int(canvas[1]))


def face_angle(landmarks68: np.ndarray) -> int:
    """The face's roll rounded to 0, 90, 180 or 270 degrees, from its jaw line (point 0 to point 16)."""
    (x1, y1), (x2, y2) = np.asarray(landmarks68, dtype=np.float64)[[0, 16], :2]
    theta = np.degrees(np.arctan2(y2 - y1, x2 - x1)) % 360
    angles = np.linspace(0, 360, 5)
    return int(angles[int(np.argmin(np.abs(angles - theta)))] % 360)


def optimize_contrast(crop: np.ndarray) -> np.ndarray:
    """CLAHE on the lightness of a dark crop (uint8, 3 channels); other crops are returned as they are.
    The crop's channels are read as FaceFusion reads them (an RGB -> Lab conversion of the BGR crop), so
    the same crops count as dark."""
    lab = cv2.cvtColor(crop, cv2.COLOR_RGB2Lab)
    if float(np.mean(lab[:, :, 0])) >= DARK:
        return crop
    lab[:, :, 0] = cv2.createCLAHE(clipLimit=2).apply(np.ascontiguousarray(lab[:, :, 0]))
    return cv2.cvtColor(lab, cv2.COLOR_Lab2RGB)


def landmarker_crop(frame: np.ndarray, box: np.ndarray, angle: float, size: int = CROP
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The landmarkers' input crop of one face (uint8 HWC, the frame's channel order) and its frame -> crop
    matrix (box crop, then the turn upright), in one warp."""
    turn, canvas = rotation(angle, size)
    matrix = compose(turn, crop_matrix(box, size)).astype(np.float64)
    crop = cv2.warpAffine(frame, matrix, canvas, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    return optimize_contrast(crop), matrix


def to_frame(points: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Crop points (N, 2) back to frame pixels through the inverse of the frame -> crop `matrix`."""
    return transform_points(points, cv2.invertAffineTransform(np.asarray(matrix, dtype=np.float64)))


def five_from_68(landmarks68: np.ndarray) -> np.ndarray:
    """The 5 points (eye centres, nose tip, mouth corners) of a 68-point set."""
    points = np.asarray(landmarks68, dtype=np.float64)[:, :2]
    return np.array([points[36:42].mean(0), points[42:48].mean(0), points[30], points[48], points[54]])


def _tensor(crops: Sequence[np.ndarray]) -> np.ndarray:
    return np.stack(crops).transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255.0)


# --- model adapters --------------------------------------------------------------------------------------

class Estimator68From5:
    """fan_68_5: the 68 points a face's 5 keypoints imply (the fallback, and the source of the face angle)."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._template = WARP_TEMPLATES["ffhq_512"]

    def estimate(self, kps: Sequence[np.ndarray]) -> list[np.ndarray]:
        if not kps:
            return []
        matrices = [align_matrix(np.asarray(k, dtype=np.float32), self._template, 1).astype(np.float64)
                    for k in kps]
        unit = np.stack([transform_points(k, m) for k, m in zip(kps, matrices)]).astype(np.float32)
        points = run_stacked(self._session, {"input": unit})[0].reshape(len(kps), 68, 2)
        return [to_frame(p, m) for p, m in zip(points, matrices)]


class Fan2dLandmarker:
    """2dfan4: crops -> (points in frame pixels, score 0..1) per face."""

    name = "2dfan4"

    def __init__(self, session: Any) -> None:
        self._session = session

    def detect(self, frame: np.ndarray, boxes: Sequence[np.ndarray], angles: Sequence[int]
               ) -> list[tuple[np.ndarray, float]]:
        crops, matrices = zip(*(landmarker_crop(frame, b, a) for b, a in zip(boxes, angles)))
        points, heatmaps = run_stacked(self._session, {"input": _tensor(crops)})[:2]
        points = np.asarray(points).reshape(len(crops), 68, -1)[:, :, :2] * (CROP / HEATMAP)
        peaks = np.asarray(heatmaps).reshape(len(crops), 68, -1).max(axis=2).mean(axis=1)
        return [(to_frame(p, m), float(np.interp(s, [0, 0.9], [0, 1])))
                for p, m, s in zip(points, matrices, peaks)]


class PeppaWutzLandmarker:
    """peppa_wutz: crops -> (points in frame pixels, score 0..1) per face."""

    name = "peppa_wutz"

    def __init__(self, session: Any) -> None:
        self._session = session

    def detect(self, frame: np.ndarray, boxes: Sequence[np.ndarray], angles: Sequence[int]
               ) -> list[tuple[np.ndarray, float]]:
        crops, matrices = zip(*(landmarker_crop(frame, b, a) for b, a in zip(boxes, angles)))
        prediction = np.asarray(run_stacked(self._session, {"input": _tensor(crops)})[0]).reshape(len(crops), -1, 3)
        points = prediction[:, :, :2] * (CROP / HEATMAP)
        return [(to_frame(p, m), float(np.interp(c.mean(), [0, 0.95], [0, 1])))
                for p, m, c in zip(points, matrices, prediction[:, :, 2])]


@dataclass(frozen=True)
class LandmarkerOptions:
    """`--face-landmarker-model` and `--face-landmarker-score` (FaceFusion's names and defaults)."""

    model: LandmarkerModel = "2dfan4"
    score: float = 0.5

    def __post_init__(self) -> None:
        landmarker_models(self.model, self.score)
        if not 0 <= self.score <= 1:
            raise ValueError(f"face landmarker score must be 0..1 (got {self.score})")


class FaceLandmarker:
    """68 points per face in frame pixels: the landmarker's where it scores above the threshold, else the
    68-from-5 estimate. `landmarkers` are the adapters the model choice runs (none when the score is 0)."""

    def __init__(self, options: LandmarkerOptions, estimator: Estimator68From5,
                 landmarkers: Sequence[Fan2dLandmarker | PeppaWutzLandmarker] = ()) -> None:
        self.options, self._estimator = options, estimator
        self._landmarkers = {landmarker.name: landmarker for landmarker in landmarkers}
        wanted = [name for name in landmarker_models(options.model, options.score) if name != ESTIMATOR]
        missing = [name for name in wanted if name not in self._landmarkers]
        if missing:
            raise ValueError(f"face landmarker {options.model} needs the {', '.join(missing)} model")

    def landmarks(self, frame: np.ndarray, faces: Sequence[Face]) -> list[np.ndarray]:
        """(68, 2) float32 points per face, in frame pixels."""
        if not faces:
            return []
        estimates = self._estimator.estimate([face.kps for face in faces])
        if not self._landmarkers:
            return [e.astype(np.float32) for e in estimates]
        boxes, angles = [face.box for face in faces], [face_angle(e) for e in estimates]
        found = {name: landmarker.detect(frame, boxes, angles) for name, landmarker in self._landmarkers.items()}
        result = []
        for index, estimate in enumerate(estimates):
            points, score = self._better(found, index)
            if score > self.options.score:
                result.append(points.astype(np.float32))
            else:
                result.append(estimate.astype(np.float32))
        return result

    @staticmethod
    def _better(found: dict[str, list[tuple[np.ndarray, float]]], index: int) -> tuple[np.ndarray, float]:
        fan = found.get("2dfan4")
        peppa = found.get("peppa_wutz")
        if fan is None:
            return peppa[index]  # type: ignore[index]
        if peppa is None or fan[index][1] > peppa[index][1] - MANY_MARGIN:
            return fan[index]
        return peppa[index]


__all__ = ["CROP", "ESTIMATOR", "LANDMARKER_MODELS", "Estimator68From5", "FaceLandmarker", "Fan2dLandmarker",
           "LandmarkerModel", "LandmarkerOptions", "PeppaWutzLandmarker", "crop_matrix", "face_angle",
           "five_from_68", "landmarker_crop", "landmarker_models", "optimize_contrast", "rotation", "to_frame"]

"""Faces followed by translation: the grey neighbourhood of each face (`Patch`), and how the picture moved there to
another frame, by phase correlation."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import cv2
import numpy as np

from facefusion_batch.faces.types import Face
from facefusion_batch.video.pixels import every_nth

TRACK_WIDTH = 192  # face patches for tracking are at most this wide
MIN_RESPONSE = 0.08  # phase correlation peaks weaker than this are not trusted
MAX_SHIFT = 0.25  # of the face's size: larger jumps mean detect anew


@dataclass(frozen=True)
class Patch:
    """The grey neighbourhood of one face on a reference frame, downscaled for phase correlation."""

    region: tuple[int, int, int, int]  # left, top, right, bottom in frame pixels
    size: tuple[int, int]  # (width, height) after downscaling, both even
    grey: np.ndarray


def grey(frame: np.ndarray, region: tuple[int, int, int, int], size: tuple[int, int]) -> np.ndarray:
    left, top, right, bottom = region
    crop = frame[top:bottom, left:right]
    step = max(1, int(crop.shape[1] / size[0] / 2))  # cheap pre-thinning for large downscales
    small = cv2.resize(every_nth(crop, step), size, interpolation=cv2.INTER_AREA)
    return cv2.cvtColor(small, cv2.COLOR_BGR2GRAY).astype(np.float32)


def face_patches(frame: np.ndarray, faces: list[Face], most: int = TRACK_WIDTH, pad: float = 0.3) -> list[Patch]:
    """Patches to track `faces` from, at most `most` pixels wide, each its face's box grown by `pad` of its size on
    every side: only the faces' surroundings are converted, never the whole frame."""
    height, width = frame.shape[:2]
    patches = []
    for face in faces:
        x1, y1, x2, y2 = face.box
        pad_x, pad_y = (x2 - x1) * pad, (y2 - y1) * pad
        left, top = max(0, int(x1 - pad_x)), max(0, int(y1 - pad_y))
        right, bottom = min(width, int(x2 + pad_x) + 1), min(height, int(y2 + pad_y) + 1)
        scale = min(1.0, most / max(1, right - left))
        # Even sizes: odd ones bias OpenCV's phase-correlation peak.
        size = (max(8, int((right - left) * scale) // 2 * 2), max(8, int((bottom - top) * scale) // 2 * 2))
        region = (left, top, right, bottom)
        patches.append(Patch(region, size, grey(frame, region, size)))
    return patches


def shift_face(face: Face, dx: float, dy: float) -> Face:
    offset = np.array([dx, dy], np.float32)
    landmarks = None
    if face.landmarks is not None:
        landmarks = face.landmarks.copy()
        landmarks[:, :2] += offset
    return dataclasses.replace(face, box=face.box + np.tile(offset, 2), kps=face.kps + offset, landmarks=landmarks)


def scale_face(face: Face, factor: float) -> Face:
    """`face` grown by `factor` about its box's centre (its points too; a mesh's depth with them); itself at 1."""
    if factor == 1.0:
        return face
    centre = ((face.box[:2] + face.box[2:]) / 2).astype(np.float32)
    landmarks = None
    if face.landmarks is not None:
        landmarks = face.landmarks.copy()
        landmarks[:, :2] = centre + (landmarks[:, :2] - centre) * factor
        landmarks[:, 2:] *= factor
    box = np.tile(centre, 2) + (face.box - np.tile(centre, 2)) * factor
    return dataclasses.replace(face, box=box.astype(face.box.dtype), kps=(centre + (face.kps - centre) * factor
                                                                          ).astype(face.kps.dtype),
                               landmarks=landmarks)


def track(faces: list[Face], patches: list[Patch], frame: np.ndarray) -> list[Face] | None:
    """Faces moved by the translation phase correlation finds around each; None if any can't be trusted."""
    moved = []
    for face, patch in zip(faces, patches):
        shift = picture_shift(patch, frame, face)
        if shift is None:
            return None
        moved.append(shift_face(face, *shift))
    return moved


def picture_shift(patch: Patch, frame: np.ndarray, face: Face) -> tuple[float, float] | None:
    """How the picture moved from `patch` to `frame` over the patch's region (x, y in frame pixels), by phase
    correlation; None where that can't be trusted (a weak peak, or a jump of more than MAX_SHIFT of `face`'s size)."""
    left, top, right, bottom = patch.region
    if right - left < 8 or bottom - top < 8:
        return None
    window = cv2.createHanningWindow(patch.size, cv2.CV_32F)
    # A copy: OpenCV's phaseCorrelate writes into arrays it is given (the shared reference!).
    (dx, dy), response = cv2.phaseCorrelate(patch.grey.copy(), grey(frame, patch.region, patch.size), window)
    dx, dy = dx * (right - left) / patch.size[0], dy * (bottom - top) / patch.size[1]
    size = max(face.box[2] - face.box[0], face.box[3] - face.box[1])
    if response < MIN_RESPONSE or max(abs(dx), abs(dy)) > MAX_SHIFT * size:
        return None
    return float(dx), float(dy)

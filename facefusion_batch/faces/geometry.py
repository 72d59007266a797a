"""Pure geometry: letterboxing, NMS, similarity alignment, crop warping, feathered masks, paste-back."""
from __future__ import annotations

import cv2
import numpy as np


def letterbox(frame: np.ndarray, size: int) -> tuple[np.ndarray, float]:
    """Scale `frame` to fit a size x size canvas at its top-left corner on black; return canvas, scale."""
    height, width = frame.shape[:2]
    scale = size / max(height, width)
    new_w, new_h = max(1, round(width * scale)), max(1, round(height * scale))
    canvas = np.zeros((size, size, 3), dtype=np.uint8)
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    canvas[:new_h, :new_w] = cv2.resize(frame, (new_w, new_h), interpolation=interpolation)
    return canvas, scale


def iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Intersection over union of one x1y1x2y2 box with many."""
    x1 = np.maximum(box[0], boxes[:, 0])
    y1 = np.maximum(box[1], boxes[:, 1])
    x2 = np.minimum(box[2], boxes[:, 2])
    y2 = np.minimum(box[3], boxes[:, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    union = area + areas - inter
    return np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)


def nms(boxes: np.ndarray, scores: np.ndarray, threshold: float) -> list[int]:
    """Indices kept by greedy non-maximum suppression, best score first."""
    order = list(np.argsort(-scores))
    keep: list[int] = []
    while order:
        best = order.pop(0)
        keep.append(int(best))
        if order:
            overlaps = iou(boxes[best], boxes[order])
            order = [i for i, o in zip(order, overlaps) if o <= threshold]
    return keep


def similarity_transform(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Least-squares rotation+uniform scale+translation (Umeyama) mapping src points to dst, as 2x3."""
    src = np.asarray(src, dtype=np.float64)
    dst = np.asarray(dst, dtype=np.float64)
    src_mean, dst_mean = src.mean(0), dst.mean(0)
    src_c, dst_c = src - src_mean, dst - dst_mean
    cov = dst_c.T @ src_c / len(src)
    u, s, vt = np.linalg.svd(cov)
    d = np.ones(2)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        d[1] = -1
    rotation = u @ np.diag(d) @ vt
    var = (src_c ** 2).sum() / len(src)
    scale = (s * d).sum() / var if var > 0 else 1.0
    translation = dst_mean - scale * rotation @ src_mean
    return np.hstack([scale * rotation, translation[:, None]]).astype(np.float32)


def align_matrix(kps: np.ndarray, template: np.ndarray, size: int) -> np.ndarray:
    """2x3 matrix taking the frame to a size x size crop where the 5 keypoints sit on the template."""
    return similarity_transform(kps, template * size)


def warp_crop(frame: np.ndarray, matrix: np.ndarray, size: int) -> np.ndarray:
    return cv2.warpAffine(frame, matrix, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def feather_mask(size: int, blur: float = 0.3) -> np.ndarray:
    """Box mask for a size x size crop: 1 inside, falling smoothly to 0 over `blur`/2 of each edge."""
    margin = max(1, int(size * blur * 0.5))
    ramp = np.clip(np.minimum(np.arange(size), np.arange(size)[::-1]) / margin, 0.0, 1.0)
    ramp = 0.5 - 0.5 * np.cos(np.pi * ramp)  # smooth start and end
    return np.outer(ramp, ramp).astype(np.float32)


def paste_back(frame: np.ndarray, crop: np.ndarray, mask: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Blend `crop` (made with `matrix`) back into `frame` in place, touching only the crop's footprint."""
    size = crop.shape[0]
    inverse = cv2.invertAffineTransform(matrix)
    corners = np.array([[0, 0, 1], [size, 0, 1], [0, size, 1], [size, size, 1]], dtype=np.float32) @ inverse.T
    height, width = frame.shape[:2]
    x0, y0 = np.floor(corners.min(0)).astype(int)
    x1, y1 = np.ceil(corners.max(0)).astype(int)
    x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
    if x1 <= x0 or y1 <= y0:
        return frame
    local = inverse.copy()
    local[:, 2] -= (x0, y0)
    roi_size = (x1 - x0, y1 - y0)
    warped = cv2.warpAffine(crop, local, roi_size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    alpha = cv2.warpAffine(mask, local, roi_size, flags=cv2.INTER_LINEAR, borderValue=0.0)[..., None]
    roi = frame[y0:y1, x0:x1]
    blended = roi.astype(np.float32) * (1.0 - alpha) + warped.astype(np.float32) * alpha
    frame[y0:y1, x0:x1] = np.clip(np.rint(blended), 0, 255).astype(np.uint8)
    return frame

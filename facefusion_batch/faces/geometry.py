"""Pure geometry: letterboxing, NMS, similarity alignment, crop warping, feathered masks, paste-back."""
from __future__ import annotations

import cv2
import numpy as np


def nose_turn(left: np.ndarray, right: np.ndarray, nose: np.ndarray) -> float:
    """How far a face is turned, from its two cheek points and nose tip (x, y): the nose tip's offset from the
    middle of the cheek line, along it, in half cheek-widths (0 frontal, ~1 at 40 degrees; signed by the side it is
    turned to; inf where the cheeks coincide)."""
    axis = right - left
    half = float(np.linalg.norm(axis)) / 2
    if half < 1e-6:
        return float("inf")
    return float((nose - (left + right) / 2) @ axis) / (2 * half * half)


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


def similarity_factors(sources: np.ndarray, target: np.ndarray) -> np.ndarray:
    """For each point set of `sources` ((..., N, 2+)), the scale and rotation, as one complex factor, that best take
    it onto `target` ((N, 2+) or (..., N, 2+)) about their centres, by least squares; 1 where a set has no extent.
    Sums by matrix product: the same rounding as `np.vdot` on one set."""
    source = np.asarray(sources)[..., :2]
    goal = np.asarray(target)[..., :2]
    source, goal = source - source.mean(axis=-2, keepdims=True), goal - goal.mean(axis=-2, keepdims=True)
    source = np.conj(source[..., 0] + 1j * source[..., 1])[..., None, :]
    goal = np.broadcast_to((goal[..., 0] + 1j * goal[..., 1])[..., None, :], source.shape)
    numerator = (source @ np.swapaxes(goal, -1, -2))[..., 0, 0]
    denominator = (source @ np.conj(np.swapaxes(source, -1, -2)))[..., 0, 0].real
    return np.where(denominator > 1e-9, numerator / np.where(denominator > 1e-9, denominator, 1.0), 1 + 0j)


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
    alpha = cv2.warpAffine(np.asarray(mask, dtype=np.float32), local, roi_size, flags=cv2.INTER_LINEAR,
                           borderValue=0.0)
    roi = frame[y0:y1, x0:x1]
    # frame * (1 - alpha) + crop * alpha, rounded: one OpenCV pass (weighted_mean) instead of numpy temporaries
    if warped.dtype == np.uint8:
        frame[y0:y1, x0:x1] = weighted_mean(warped, roi, alpha, 1 - alpha)
        return frame
    blended = weighted_mean(warped.astype(np.float32, copy=False), roi.astype(np.float32), alpha, 1 - alpha)
    frame[y0:y1, x0:x1] = cv2.convertScaleAbs(np.clip(blended, 0, 255, out=blended))  # rounds half to even
    return frame


def weighted_mean(first: np.ndarray, second: np.ndarray, first_weight: np.ndarray,
                  second_weight: np.ndarray) -> np.ndarray:
    """Per pixel (first * w1 + second * w2) / (w1 + w2) of two same-type images with (H, W) float32 weights
    (0 where both weights are 0), rounded and saturated for uint8. One pass of OpenCV's SIMD blend instead of
    numpy's chain of full-size temporaries; the weights are scaled so OpenCV's 1e-5 guard against a zero
    sum disappears below float32's precision."""
    scale = np.float32(1e3)
    return cv2.blendLinear(first, second, np.multiply(first_weight, scale, dtype=np.float32),
                           np.multiply(second_weight, scale, dtype=np.float32))


# FaceFusion's warp templates: five points (eyes, nose, mouth corners) as fractions of the crop size.
WARP_TEMPLATES: dict[str, np.ndarray] = {name: np.array(points, dtype=np.float32) for name, points in {
    "arcface_112_v1": [[0.35473214, 0.45658929], [0.64526786, 0.45658929], [0.50000000, 0.61154464],
                       [0.37913393, 0.77687500], [0.62086607, 0.77687500]],
    "arcface_112_v2": [[0.34191607, 0.46157411], [0.65653393, 0.45983393], [0.50022500, 0.64050536],
                       [0.37097589, 0.82469196], [0.63151696, 0.82325089]],
    "arcface_128": [[0.36167656, 0.40387734], [0.63696719, 0.40235469], [0.50019687, 0.56044219],
                    [0.38710391, 0.72160547], [0.61507734, 0.72034453]],
    "ffhq_512": [[0.37691676, 0.46864664], [0.62285697, 0.46912813], [0.50123859, 0.61331904],
                 [0.39308822, 0.72541100], [0.61150205, 0.72490465]],
    "mtcnn_512": [[0.36562865, 0.46733799], [0.63305391, 0.46585885], [0.50019127, 0.61942959],
                  [0.39032951, 0.77598822], [0.61178945, 0.77476328]],
}.items()}


def box_mask(size: int, blur: float, padding: tuple[int, int, int, int]) -> np.ndarray:
    """FaceFusion's box mask for a size x size crop: zero borders of `padding` percent (top, right, bottom,
    left) and at least blur/4 of the size, then a Gaussian blur whose sigma grows with `blur` (0..1)."""
    blur_amount = int(size * 0.5 * blur)
    blur_area = max(blur_amount // 2, 1)
    top, right, bottom, left = (max(blur_area, int(size * p / 100)) for p in padding)
    mask = np.ones((size, size), dtype=np.float32)
    mask[:top, :] = 0
    mask[size - bottom:, :] = 0
    mask[:, :left] = 0
    mask[:, size - right:] = 0
    if blur_amount > 0:
        mask = cv2.GaussianBlur(mask, (0, 0), blur_amount * 0.25)
    return mask


def smooth_binary_mask(mask: np.ndarray) -> np.ndarray:
    """FaceFusion's softening of model and landmark masks: blur (sigma 5), then stretch 0.5..1 to 0..1, so a
    pixel the mask left out stays exactly 0 and the inside edge fades in."""
    blurred = cv2.GaussianBlur(np.clip(np.asarray(mask, dtype=np.float32), 0, 1), (0, 0), 5)
    return _stretch_upper_half(blurred)


def smooth_model_mask(mask: np.ndarray, size: int) -> np.ndarray:
    """`smooth_binary_mask` of a model's square mask resized to size x size, as FaceFusion computes it. A mask
    of half that size (XSeg's 256 for a 512 enhancer crop) is blurred at its own size with half the sigma
    and doubled after: resizing and blurring commute but for the resize's own small kernel (under 0.3/255 on
    model-like masks, measured; other ratios err by grey levels, so they resize first), and the blur
    touches a quarter of the pixels."""
    mask = np.asarray(mask, dtype=np.float32)
    if mask.shape != (size // 2, size // 2) or size % 2:
        return smooth_binary_mask(cv2.resize(mask, (size, size)))
    blurred = cv2.GaussianBlur(np.clip(mask, 0, 1), (0, 0), 2.5)
    return _stretch_upper_half(cv2.resize(blurred, (size, size)))


def _stretch_upper_half(blurred: np.ndarray) -> np.ndarray:
    """(clip(x, 0.5, 1) - 0.5) * 2 in place (float32): a pixel at or below half is 0."""
    np.clip(blurred, 0.5, 1.0, out=blurred)
    blurred -= 0.5
    blurred *= 2
    return blurred


def hull_mask(size: int, points: np.ndarray) -> np.ndarray:
    """Filled convex hull of `points` (crop pixels) on a size x size crop, softened like FaceFusion's area
    masks."""
    hull = cv2.convexHull(np.asarray(points).astype(np.int32))
    mask = np.zeros((size, size), dtype=np.float32)
    cv2.fillConvexPoly(mask, hull, 1.0)
    return smooth_binary_mask(mask)


def transform_points(points: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Points (N, 2) mapped by a 2x3 affine matrix."""
    points = np.asarray(points, dtype=np.float64)
    return points @ np.asarray(matrix, dtype=np.float64)[:, :2].T + np.asarray(matrix, dtype=np.float64)[:, 2]


def compose(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """The 2x3 matrix applying `inner` first, then `outer`."""
    outer3 = np.vstack([outer, [0, 0, 1]]).astype(np.float64)
    inner3 = np.vstack([inner, [0, 0, 1]]).astype(np.float64)
    return (outer3 @ inner3)[:2].astype(np.float32)


def implode_tiles(crop: np.ndarray, model_size: int) -> np.ndarray:
    """Pixel boost: a (k*s, k*s, C) crop -> (k*k, s, s, C) tiles, FaceFusion's layout. Tile (a, b) holds the
    pixels (i*k + a, j*k + b): every tile sees the whole face at model resolution, offset by a sub-pixel."""
    size = crop.shape[0]
    if size % model_size or crop.shape[1] != size:
        raise ValueError(f"pixel boost {size}x{crop.shape[1]} is not a multiple of the model size {model_size}")
    total = size // model_size
    channels = crop.shape[2]
    tiles = crop.reshape(model_size, total, model_size, total, channels).transpose(1, 3, 0, 2, 4)
    return tiles.reshape(total * total, model_size, model_size, channels)


def explode_tiles(tiles: np.ndarray) -> np.ndarray:
    """Inverse of `implode_tiles`: (k*k, s, s, C) -> (k*s, k*s, C)."""
    count, model_size, _, channels = tiles.shape
    total = int(round(count ** 0.5))
    if total * total != count:
        raise ValueError(f"{count} tiles do not form a square")
    crop = tiles.reshape(total, total, model_size, model_size, channels).transpose(2, 0, 3, 1, 4)
    return crop.reshape(model_size * total, model_size * total, channels)

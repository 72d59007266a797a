"""MediaPipe face detection (BlazeFace short + full range) and 468-point face mesh, as ONNX.

The models ship in ``facefusion_batch/assets/mediapipe`` (converted by ``tools/convert_mediapipe.py``).
The adapters here never create sessions: the pipeline's session pool hands them
``onnxruntime.InferenceSession`` objects, which keeps thread and provider choices in one place.

Coordinates are frame pixels with the origin at the top-left corner of the top-left pixel (so the
centre of pixel ``(0, 0)`` is ``(0.5, 0.5)``); frames are BGR ``uint8`` arrays of shape (H, W, 3).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import cv2
import numpy as np

from facefusion_batch.errors import ModelError
from facefusion_batch.faces.geometry import iou
from facefusion_batch.video.pixels import every_nth

if TYPE_CHECKING:
    from onnxruntime import InferenceSession

Role = Literal["long_range", "short_range", "landmarks"]

MODEL_FILES: dict[Role, str] = {
    "long_range": "face_detection_full_range.onnx",
    "short_range": "face_detection_short_range.onnx",
    "landmarks": "face_landmark.onnx",
}
# Pixel value range each model expects (uint8 0..255 maps linearly onto it), RGB, NCHW.
INPUT_RANGES: dict[Role, tuple[float, float]] = {
    "long_range": (-1.0, 1.0),
    "short_range": (-1.0, 1.0),
    "landmarks": (0.0, 1.0),
}
_ASSET_DIR = Path(__file__).resolve().parent.parent / "assets" / "mediapipe"

INPUT_NAME = "image"
NUM_LANDMARKS = 468
# MediaPipe's face-detection-to-ROI step: a square 1.5 times the box's long side, rotated so the eyes
# (detection keypoints 0 and 1) are level.
ROI_SCALE = 1.5
RAW_SCORE_CLIP = 100.0
# Tiling for small faces: the full-range model finds faces reliably from about a tenth of its input
# side (19 px of 192); tiles overlap by half, and tile sides shrink by at most this ratio per level.
MIN_FACE_FRACTION = 0.1
TILE_LEVEL_RATIO = 2.5
EDGE_MARGIN = 0.02  # fraction of a tile: boxes this close to a cut edge are partial faces

# Mesh indices. Eye centres are the mean of each eye's contour ring (the mesh has no pupil point).
RIGHT_EYE_RING = (33, 7, 163, 144, 145, 153, 154, 155, 133, 173, 157, 158, 159, 160, 161, 246)
LEFT_EYE_RING = (263, 249, 390, 373, 374, 380, 381, 382, 362, 398, 384, 385, 386, 387, 388, 466)
NOSE_TIP = 1
MOUTH_RIGHT_CORNER = 61  # subject's right, image-left on a frontal face
MOUTH_LEFT_CORNER = 291


def asset_path(name: str) -> Path:
    """Path of a file inside the packaged ``assets/mediapipe`` folder."""
    return _ASSET_DIR / name


# --------------------------------------------------------------------------- anchors and decoding

@dataclass(frozen=True)
class AnchorOptions:
    """MediaPipe's SsdAnchorsCalculator options (only the parts BlazeFace uses)."""

    input_size: int
    num_layers: int
    strides: tuple[int, ...]
    min_scale: float = 0.1484375
    max_scale: float = 0.75
    anchor_offset: float = 0.5
    aspect_ratios: tuple[float, ...] = (1.0,)
    interpolated_scale_aspect_ratio: float = 1.0
    fixed_anchor_size: bool = True


SHORT_RANGE_ANCHORS = AnchorOptions(input_size=128, num_layers=4, strides=(8, 16, 16, 16))
FULL_RANGE_ANCHORS = AnchorOptions(input_size=192, num_layers=1, strides=(4,),
                                   interpolated_scale_aspect_ratio=0.0)
_ANCHORS_BY_SIZE = {opts.input_size: opts for opts in (SHORT_RANGE_ANCHORS, FULL_RANGE_ANCHORS)}


def _anchor_scale(options: AnchorOptions, layer: int) -> float:
    if options.num_layers == 1:
        return (options.min_scale + options.max_scale) / 2
    step = (options.max_scale - options.min_scale) / (options.num_layers - 1)
    return options.min_scale + step * layer


def _layer_shapes(options: AnchorOptions, first: int, last: int) -> list[tuple[float, float]]:
    """(width, height) of the anchors of layers first..last-1, which share one stride."""
    shapes = []
    for layer in range(first, last):
        scale = _anchor_scale(options, layer)
        pairs = [(ratio, scale) for ratio in options.aspect_ratios]
        if options.interpolated_scale_aspect_ratio > 0:
            next_scale = 1.0 if layer == options.num_layers - 1 else _anchor_scale(options, layer + 1)
            pairs.append((options.interpolated_scale_aspect_ratio, math.sqrt(scale * next_scale)))
        shapes += [(s * math.sqrt(r), s / math.sqrt(r)) for r, s in pairs]
    return shapes


def ssd_anchors(options: AnchorOptions) -> np.ndarray:
    """Anchors as (N, 4) float32 rows of centre x, centre y, width, height, normalised to the input.

    Layers with the same stride share one feature map; anchors run row by row, then per location.
    """
    blocks = []
    layer = 0
    while layer < options.num_layers:
        last = layer
        while last < options.num_layers and options.strides[last] == options.strides[layer]:
            last += 1
        shapes = np.asarray(_layer_shapes(options, layer, last), np.float32)
        if options.fixed_anchor_size:
            shapes = np.ones_like(shapes)
        cells = math.ceil(options.input_size / options.strides[layer])
        centres = (np.arange(cells, dtype=np.float32) + options.anchor_offset) / cells
        cy, cx = np.meshgrid(centres, centres, indexing="ij")
        grid = np.stack([cx.ravel(), cy.ravel()], axis=1)
        blocks.append(np.concatenate([np.repeat(grid, len(shapes), axis=0),
                                      np.tile(shapes, (len(grid), 1))], axis=1))
        layer = last
    return np.concatenate(blocks).astype(np.float32)


def decode_boxes(raw: np.ndarray, anchors: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Regressor rows (..., 16) to normalised boxes (..., 4) x1,y1,x2,y2 and keypoints (..., 6, 2)."""
    values = raw.reshape(*raw.shape[:-1], 8, 2) / np.float32(size)
    wh = anchors[:, 2:]
    centre = values[..., 0, :] * wh + anchors[:, :2]
    half = values[..., 1, :] * wh / 2
    boxes = np.concatenate([centre - half, centre + half], axis=-1)
    keypoints = values[..., 2:, :] * wh[:, None, :] + anchors[:, None, :2]
    return boxes, keypoints


def sigmoid_scores(raw: np.ndarray) -> np.ndarray:
    """Logits to probabilities, clipped like MediaPipe; the tanh form cannot overflow."""
    clipped = np.clip(raw.astype(np.float32), -RAW_SCORE_CLIP, RAW_SCORE_CLIP)
    return (0.5 * (1.0 + np.tanh(0.5 * clipped))).astype(np.float32)


def weighted_nms(boxes: np.ndarray, keypoints: np.ndarray, scores: np.ndarray,
                 iou_threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MediaPipe's weighted NMS: each kept box is the score-weighted mean of the boxes it suppresses.

    The kept score is the best score of its cluster.
    """
    order = np.argsort(-scores, kind="stable")
    boxes, keypoints, scores = boxes[order], keypoints[order], scores[order]
    remaining = np.ones(len(scores), bool)
    out_boxes, out_keypoints, out_scores = [], [], []
    for index in range(len(scores)):
        if not remaining[index]:
            continue
        cluster = remaining & (iou(boxes[index], boxes) > iou_threshold)
        cluster[index] = True
        weights = scores[cluster] / scores[cluster].sum()
        out_boxes.append(weights @ boxes[cluster])
        out_keypoints.append(np.tensordot(weights, keypoints[cluster], axes=1))
        out_scores.append(scores[index])
        remaining &= ~cluster
    if not out_scores:
        return np.zeros((0, 4), np.float32), np.zeros((0, 6, 2), np.float32), np.zeros(0, np.float32)
    return (np.asarray(out_boxes, np.float32), np.asarray(out_keypoints, np.float32),
            np.asarray(out_scores, np.float32))


# --------------------------------------------------------------------------- letterbox geometry

@dataclass(frozen=True)
class Placement:
    """Where a view lands in the square model input.

    The frame is resized by (scale_x, scale_y); the view's crop of it, (width, height) pixels from
    (crop_x, crop_y), sits at (left, top) in a black size x size square (centred, as MediaPipe does).
    """

    size: int
    scale_x: float
    scale_y: float
    crop_x: int
    crop_y: int
    width: int
    height: int
    left: int
    top: int


def place_view(view: View, frame_width: int, frame_height: int, size: int) -> Placement:
    """Placement of a view whose long side becomes ``size``; tiles of one level share one resize."""
    factor = size / max(view.width, view.height)
    resized_w, resized_h = max(1, round(frame_width * factor)), max(1, round(frame_height * factor))
    scale_x, scale_y = resized_w / frame_width, resized_h / frame_height
    crop_x, crop_y = round(view.x * scale_x), round(view.y * scale_y)
    width = max(1, min(size, round(view.width * scale_x), resized_w - crop_x))
    height = max(1, min(size, round(view.height * scale_y), resized_h - crop_y))
    return Placement(size, scale_x, scale_y, crop_x, crop_y, width, height,
                     (size - width) // 2, (size - height) // 2)


def input_to_frame(points: np.ndarray, place: Placement) -> np.ndarray:
    """Map normalised (..., 2) model-input points back to frame pixels."""
    x = (points[..., 0] * place.size - place.left + place.crop_x) / place.scale_x
    y = (points[..., 1] * place.size - place.top + place.crop_y) / place.scale_y
    return np.stack([x, y], axis=-1).astype(np.float32)


def model_inputs(frames: Sequence[np.ndarray], views: Sequence[View],
                 size: int) -> tuple[np.ndarray, list[Placement]]:
    """(N, size, size, 3) RGB uint8 model inputs, black padded; a frame is resized once per level, or where its
    views there take an eighth of it or less, only those parts are (`shrunk_crop`: ~4x OpenCV's time a pixel)."""
    resized: dict[tuple[int, int, int], np.ndarray] = {}
    batch = np.zeros((len(views), size, size, 3), np.uint8)
    placements = [place_view(view, frames[view.frame].shape[1], frames[view.frame].shape[0], size) for view in views]
    keys = [(view.frame, round(frames[view.frame].shape[1] * place.scale_x),
             round(frames[view.frame].shape[0] * place.scale_y)) for view, place in zip(views, placements)]
    used: dict[tuple[int, int, int], int] = {}
    for key, place in zip(keys, placements):
        used[key] = used.get(key, 0) + place.width * place.height
    for slot, (view, place, key) in enumerate(zip(views, placements, keys)):
        frame = frames[view.frame]
        if place.scale_x > 1 and place.scale_y > 1 and 4 * view.width * view.height <= frame.shape[0] * frame.shape[1]:
            crop = enlarged_crop(frame, place)  # a small view enlarged: only its pixels
        elif 8 * used[key] <= key[1] * key[2] and _shrunk_alone(frame, key[1:]):
            crop = shrunk_crop(frame, key[1:], place)  # a small part of a shrunk frame: only its pixels
        else:
            if key not in resized:
                resized[key] = cv2.resize(frame, key[1:], interpolation=cv2.INTER_AREA)
            crop = resized[key][place.crop_y:place.crop_y + place.height, place.crop_x:place.crop_x + place.width]
        batch[slot, place.top:place.top + place.height, place.left:place.left + place.width] = crop[..., ::-1]
    return batch, placements


def _shrunk_alone(frame: np.ndarray, size: tuple[int, int]) -> bool:
    """Whether `shrunk_crop` gives OpenCV's own pixels for `frame` shrunk to `size` (w, h): both axes shrunk, neither
    by a whole factor (OpenCV's integer path sums otherwise; an axis kept as it is differs by a level here and there)."""
    ratios = (frame.shape[1] / size[0], frame.shape[0] / size[1])
    return all(ratio > 1 and abs(ratio - round(ratio)) > 1e-9 for ratio in ratios)


def shrunk_crop(frame: np.ndarray, size: tuple[int, int], place: Placement) -> np.ndarray:
    """``cv2.resize(frame, size, interpolation=cv2.INTER_AREA)`` cropped to the placement's view, made for the view's
    pixels alone and bit for bit the same (where `_shrunk_alone`): OpenCV's area shrink at a non-integer ratio, its
    weight tables (`_area_terms`) and its float32 sums in its order, each row across then the rows down. A closer look
    at a 30 px face shrank the whole 720p frame for a 192 px view: ~8 ms, against ~2 for the view."""
    xs, wx = _area_terms(frame.shape[1], size[0], place.crop_x, place.width)
    ys, wy = _area_terms(frame.shape[0], size[1], place.crop_y, place.height)
    top, left = int(ys.min()), int(xs.min())
    pixels = frame[top:int(ys.max()) + 1, left:int(xs.max()) + 1].astype(np.float32)
    xs, ys = xs - left, ys - top
    across = pixels[:, xs[:, 0]] * wx[:, 0, None]
    for term in range(1, xs.shape[1]):
        across += pixels[:, xs[:, term]] * wx[:, term, None]
    down = across[ys[:, 0]] * wy[:, 0, None, None]
    for term in range(1, ys.shape[1]):
        down += across[ys[:, term]] * wy[:, term, None, None]
    return np.clip(np.rint(down), 0, 255).astype(np.uint8)


def _area_terms(length: int, shrunk: int, start: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """OpenCV's area-shrink table (`computeResizeAreaTab`, in doubles as there) for output pixels start..start+count
    of an axis of `length` pixels shrunk to `shrunk`: per output pixel, the input pixels it sums and their float32
    weights, in OpenCV's order (the part of the pixel before the first whole one, the whole ones, the part after),
    padded with zero weights on its last pixel."""
    scale = 1.0 / (shrunk / length)  # as OpenCV takes it: the inverse of its inverse scale
    low = np.arange(start, start + count, dtype=np.float64) * scale
    high = low + scale
    cell = np.minimum(scale, length - low)
    last = np.minimum(np.floor(high), length - 1)
    first = np.minimum(np.ceil(low), last)
    head, tail = first - low > 1e-3, high - last > 1e-3
    whole = (last - first).astype(np.intp)
    terms = head + whole + tail
    k = np.arange(int(terms.max()))
    index = (first.astype(np.intp) - head)[:, None] + k
    weight = np.where(k < (head + whole)[:, None], (1.0 / cell)[:, None], 0.0)
    weight = np.where(head[:, None] & (k == 0), ((first - low) / cell)[:, None], weight)
    weight = np.where(tail[:, None] & (k == (head + whole)[:, None]),
                      (np.minimum(np.minimum(high - last, 1.0), cell) / cell)[:, None], weight)
    used = k < terms[:, None]
    return np.where(used, index, index[:, :1]), np.where(used, weight, 0.0).astype(np.float32)


def enlarged_crop(frame: np.ndarray, place: Placement) -> np.ndarray:
    """The frame enlarged by the placement's scales with ``cv2.INTER_AREA`` and cropped to its view, made for the
    view's pixels alone: the same sampling as OpenCV's (its area mode, each axis apart), through a remap (pixels
    within one level of the whole enlargement's). A closer look at a 30 px face enlarged the whole frame 1.6 times
    for a 192 px view (5.7 ms at 720p, against 0.3)."""
    xs, wx = _area_enlarged(place.crop_x, place.width, place.scale_x, frame.shape[1])
    ys, wy = _area_enlarged(place.crop_y, place.height, place.scale_y, frame.shape[0])
    map_x = np.ascontiguousarray(np.broadcast_to(xs + wx, (place.height, place.width)))
    map_y = np.ascontiguousarray(np.broadcast_to((ys + wy)[:, None], (place.height, place.width)))
    return cv2.remap(frame, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def _area_enlarged(start: int, count: int, factor: float, length: int) -> tuple[np.ndarray, np.ndarray]:
    """For output pixels start..start+count of an axis of ``length`` pixels enlarged ``factor`` times (output over
    input length) in OpenCV's area mode: the input pixel each starts from and the weight of the next one (float32).
    Area mode takes an output pixel whole from one input pixel, blending in the next only by how far it spans it."""
    out = np.arange(start, start + count, dtype=np.float64)
    first = np.floor(out * (1.0 / factor))
    weight = ((out + 1) - (first + 1) * factor).astype(np.float32)
    weight = np.where(weight <= 0, np.float32(0), weight - np.floor(weight))
    last = first >= length - 1
    return np.where(last, length - 1, first).astype(np.float32), np.where(last, np.float32(0), weight)


# BlazeFace scores faces without colour low: a black-and-white photo's 30 px face on a colour backdrop scores below
# 0.1 to 0.37 on the whole frame, and a closer look at it finds nothing (the same photo in colour: 0.43-0.5, and the
# closer look finds it); on a grey picture faces of 30-50 px are missed more often than not. So the sweep's tiles
# whose pixels are GREY_VIEW or more grey (R, G, B within GREY_CHROMA of each other, fading out to there; not darker
# than GREY_DARK), and the closer looks at candidates whose box is GREY_FACE grey (then whole-frame candidates of any
# size, `_recheck_small`), are seen a second time with their grey pixels tinted towards a skin colour of the same
# lightness (SKIN_TINT, R G B); each face is taken from the view that scores it best. Only as a second view: tinted
# alone, a colour face on a grey wall loses its contrast (the wall turns skin-coloured around it; twelfth split, a
# 28 px face found at 0.55 untinted, not at all tinted), as does a crowd of soft colour faces on grey walls. The
# whole-frame inputs themselves are never replaced by tinted ones; the mesh and the swap see the frame as it is.
GREY_CHROMA = 12.0
GREY_DARK = 40
GREY_VIEW = 0.25
GREY_FACE = 0.5
# A frame whose pixels are GREY_WHOLE or more grey is seen whole by the full-range model a second time, tinted; its
# boxes that are GREY_FACE grey, whatever their score, are candidates only: the whole-frame candidates they are
# centred on are looked at closer tinted too, and up to GREY_CANDIDATES a frame that no face found and no candidate
# covers are looked at so (`_recheck_small`). What the untinted views find stays as it was: taken as faces, its boxes
# moved those of grey faces found already (merged with them), and a crowd's candidates took the closer looks of
# others (tenth split's far wall of Solvay photos: a face missed on 40 frames). Blind split's depth
# zoom, a 70 px black-and-white face in a colour collage scored 0-0.1 on the whole frame, 0.2-0.41 tinted, and was
# unswapped for the 12 frames from its coming in to the next sweep (missed face-frames there 58 -> 45). Colour
# crowds on grey walls are half grey too (0.5-0.56 in the corpus); a face on a backdrop is a third (the 720p
# benchmark's), and sees no tinted view.
GREY_WHOLE = 0.5
GREY_CANDIDATES = 3
# A sweep's grey tile is seen tinted only where its plain view scores a box TINT_HINT or more (below the threshold)
# over a GREY_FACE grey region on no known face: untinted, the grey faces only the tint finds score 0.14 (seventh
# split's restored woman) and 0.21 (tenth's Solvay-1) on their tiles, a grey backdrop's texture below 0.1 (the 720p
# benchmark's, where tinting every grey tile cost 8 % CPU and its candidates' closer looks more).
TINT_HINT = 0.1
SKIN_TINT = (1.15, 0.85, 0.70)
_LEVELS = np.arange(256, dtype=np.float32)
_TINTED = np.clip(_LEVELS[:, None] * np.float32(SKIN_TINT) + 0.5, 0, 255).astype(np.uint8).reshape(1, 256, 3)
_GREYNESS = np.clip(1 - _LEVELS / np.float32(GREY_CHROMA), 0, 1).astype(np.float32).reshape(1, 256)
GREY_STEP = 4  # the grey map is measured on every GREY_STEP-th pixel of each axis


def skin_tinted(rgb: np.ndarray) -> np.ndarray:
    """(N, H, W, 3) RGB uint8 model inputs with their grey pixels tinted towards skin (see GREY_CHROMA)."""
    flat = np.ascontiguousarray(rgb).reshape(-1, rgb.shape[-2], 3)  # OpenCV's calls take one image
    red, green, blue = cv2.split(flat)
    chroma = cv2.subtract(cv2.max(cv2.max(red, green), blue), cv2.min(cv2.min(red, green), blue))
    weight = cv2.LUT(chroma, _GREYNESS)
    tinted = cv2.LUT(cv2.merge([cv2.cvtColor(flat, cv2.COLOR_RGB2GRAY)] * 3), _TINTED)
    return cv2.blendLinear(tinted, flat, weight, 1 - weight).reshape(rgb.shape)


def grey_map(frame: np.ndarray) -> np.ndarray:
    """Which of the frame's pixels (every GREY_STEP-th of each axis) are grey and not dark (see GREY_CHROMA)."""
    thin = np.ascontiguousarray(frame[::GREY_STEP, ::GREY_STEP])
    chroma = cv2.subtract(thin.max(axis=2), thin.min(axis=2))
    return (chroma < GREY_CHROMA) & (cv2.cvtColor(thin, cv2.COLOR_BGR2GRAY) >= GREY_DARK)


def grey_share(grey: np.ndarray, x0: float, y0: float, x1: float, y1: float) -> float:
    """The share of grey pixels of `grey_map` in the frame's rectangle (x0, y0)-(x1, y1); 0 where it holds none."""
    part = grey[max(0, int(y0) // GREY_STEP):max(0, int(np.ceil(y1 / GREY_STEP))),
                max(0, int(x0) // GREY_STEP):max(0, int(np.ceil(x1 / GREY_STEP)))]
    return float(part.mean()) if part.size else 0.0


def _grey_of(greys: dict[int, np.ndarray], frames: Sequence[np.ndarray], index: int) -> np.ndarray:
    """Frame `index`'s `grey_map`, measured once: kept in `greys`."""
    if index not in greys:
        greys[index] = grey_map(frames[index])
    return greys[index]


# --------------------------------------------------------------------------- detection

@dataclass(frozen=True, eq=False)
class Detection:
    """One face. Keypoints, in MediaPipe's order: subject's right eye (image-left on a frontal face),
    left eye, nose tip, mouth centre, right ear tragion, left ear tragion."""

    box: np.ndarray  # (4,) x1, y1, x2, y2 float32, frame pixels
    score: float
    keypoints: np.ndarray  # (6, 2) float32, frame pixels
    # Found by one weak look only (`MediaPipeDetector._closer`'s second look): a face only where the mesh is sure of it
    # and agrees with the detector on where its features are (engines/offline.py SURE_MESH, WEAK_AGREE).
    weak: bool = False


def _session_input_size(session: InferenceSession, what: str) -> int:
    inputs = session.get_inputs()
    if len(inputs) != 1 or inputs[0].name != INPUT_NAME or len(inputs[0].shape) != 4:
        raise ModelError(f"{what}: expected one NCHW input named {INPUT_NAME!r}")
    size = inputs[0].shape[2]
    if not isinstance(size, int) or size != inputs[0].shape[3]:
        raise ModelError(f"{what}: expected a square input with a fixed size, got {inputs[0].shape}")
    return size


def to_nchw(images: np.ndarray, value_range: tuple[float, float]) -> np.ndarray:
    """(N, H, W, 3) uint8 RGB to the (N, 3, H, W) float32 model input scaled onto value_range."""
    low, high = value_range
    x = images.astype(np.float32) * np.float32((high - low) / 255.0) + np.float32(low)
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


@dataclass(frozen=True)
class View:
    """A rectangle of one frame that the detector sees as one letterboxed input.

    ``inner_edges`` (left, top, right, bottom) marks the sides that cut through the frame: a face
    touching them is cut off here and found whole in an overlapping view instead.
    """

    frame: int
    x: int
    y: int
    width: int
    height: int
    inner_edges: tuple[bool, bool, bool, bool] = (False, False, False, False)


def tile_sides(width: int, height: int, min_face_size: float | None) -> list[int]:
    """Square tile sides, coarse to fine, so faces down to ``min_face_size`` pixels fill a tenth of a tile.

    The whole frame is the coarsest level and not listed; sides shrink by at most 2.5x per level.
    """
    longest = max(width, height)
    if min_face_size is None:
        return []
    finest = min_face_size / MIN_FACE_FRACTION
    if finest >= longest:
        return []
    levels = math.ceil(math.log(longest / finest) / math.log(TILE_LEVEL_RATIO))
    return [round(longest * (finest / longest) ** (k / levels)) for k in range(1, levels + 1)]


def _tile_starts(length: int, side: int) -> list[int]:
    if side >= length:
        return [0]
    count = math.ceil((length - side) / (side / 2)) + 1  # overlap of at least half a tile
    return sorted({round(v) for v in np.linspace(0, length - side, count)})


def frame_views(index: int, width: int, height: int, min_face_size: float | None) -> list[View]:
    """The whole frame, then overlapping tiles for each level of ``tile_sides``."""
    views = [View(index, 0, 0, width, height)]
    for side in tile_sides(width, height, min_face_size):
        for y in _tile_starts(height, side):
            for x in _tile_starts(width, side):
                w, h = min(side, width), min(side, height)
                views.append(View(index, x, y, w, h, (x > 0, y > 0, x + w < width, y + h < height)))
    return views


def _touches_inner_edge(boxes: np.ndarray, view: View) -> np.ndarray:
    margin = EDGE_MARGIN * max(view.width, view.height)
    left, top, right, bottom = view.inner_edges
    return ((left & (boxes[:, 0] < view.x + margin)) | (top & (boxes[:, 1] < view.y + margin))
            | (right & (boxes[:, 2] > view.x + view.width - margin))
            | (bottom & (boxes[:, 3] > view.y + view.height - margin)))


class _BlazeFace:
    """One BlazeFace model: letterbox each view, run all in one batch, decode, NMS; frame pixels out."""

    def __init__(self, session: InferenceSession, role: Role) -> None:
        what = f"{role} detector"
        self.session = session
        self.value_range = INPUT_RANGES[role]
        self.size = _session_input_size(session, what)
        if self.size not in _ANCHORS_BY_SIZE:
            raise ModelError(f"{what}: no BlazeFace anchor layout for input size {self.size}")
        self.anchors = ssd_anchors(_ANCHORS_BY_SIZE[self.size])

    def run(self, frames: Sequence[np.ndarray], views: Sequence[View], score_threshold: float,
            iou_threshold: float, floor: float | None = None, tinted: Sequence[bool] = ()
            ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per view: boxes (M, 4), keypoints (M, 6, 2) in frame pixels and scores (M,). With `floor`, the
        boxes scored from `floor` up to `score_threshold` follow, merged among themselves only (the faces
        above the threshold come out exactly as without it). The views `tinted` flags (one flag a view, or
        none) are seen with their grey pixels tinted like skin (`skin_tinted`)."""
        batch, placements = model_inputs(frames, views, self.size)
        rows = np.flatnonzero(np.asarray(tinted, bool))
        if rows.size:
            batch[rows] = skin_tinted(batch[rows])
        raw_boxes, raw_scores = self.session.run(["regressors", "classificators"],
                                                 {INPUT_NAME: to_nchw(batch, self.value_range)})
        if raw_boxes.shape[1] != len(self.anchors):
            raise ModelError(f"detector returned {raw_boxes.shape[1]} boxes for {len(self.anchors)} anchors")
        scores = sigmoid_scores(raw_scores[..., 0])
        results = []
        for i, (view, place) in enumerate(zip(views, placements)):
            bands = [scores[i] >= score_threshold]
            if floor is not None:
                bands.append((scores[i] >= floor) & ~bands[0])
            parts = []
            for band in bands:
                keep = np.flatnonzero(band)  # decode only candidates
                boxes, keypoints = decode_boxes(raw_boxes[i, keep], self.anchors[keep], self.size)
                b, k, s = weighted_nms(boxes, keypoints, scores[i, keep], iou_threshold)
                corners = input_to_frame(b.reshape(-1, 2, 2), place).reshape(-1, 4)
                points = input_to_frame(k, place)
                whole = ~_touches_inner_edge(corners, view)
                parts.append((corners[whole], points[whole], s[whole]))
            results.append(tuple(np.concatenate([p[n] for p in parts]) for n in range(3)))
        return results


RECHECK_SIZE = 0.2  # short-range faces smaller than this share of the frame's long side are checked again
# ... by the full-range model on a square view this many times their size (the model's 192 px input either way, so
# no cost). A face of 28-35 px scores differently on views 3x and 4x its size (tune split's crowds, 40 true faces:
# 0.17-0.92 and 0.05-0.88, neither always the higher), and the 4x view's boxes fit the crowds' faces better: the
# missed face-frames there that profiles do not explain fell 301 -> 237, the far crowd's flicker p95 4.4 -> 3.4.
# Taking the better-scored of both views lost that; adding the 3x view where the 4x one finds nothing changed
# nothing (full tune runs). On walls of the astronaut's face at 20-40 px under eight looks the mesh keeps as many
# faces either way (150 / 150 found by `detect`, 271 / 272 with the sweep); the sweep alone finds more of the
# soft ones (tests/workflow/test_small_faces.py).
RECHECK_CONTEXT = 4.0
CANDIDATE_SCORE = 0.15  # small full-range boxes scored this much (below the threshold) are looked at again ...
# ... the likeliest this many per frame. In a crowd of 14 faces of ~30 px many score 0.15-0.45 on the whole frame or a
# sweep's tile: with 6 a frame the tune split's crowd clips had 237 missed face-frames the profiles do not explain,
# with 10, 220, the far crowd's flicker p95 3.4 -> 2.9 (16 found no more; full tune runs). A lower CANDIDATE_SCORE
# (0.1) found more there (135) but boxes on no face too (a medal on Grace Hopper's uniform scored 0.79 closer), which
# only the mesh then turned down.
MAX_CANDIDATES = 10
EDGE_PAD = 0.125  # the frame mirrored out this share of its long side across every edge, for faces cut by it:
EDGE_CUT = 0.1  # ... those reaching out of the frame by this share of their size at least ...
EDGE_INSIDE = 0.3  # ... with this share of their box's side in the frame, along either axis
# Faces the edge cuts that the mirrored view scores below the threshold, from CANDIDATE_SCORE (a small face, or
# one turned and cut: 0.15-0.45), the likeliest this many a frame, are looked at again closer (`_recheck_edges`) ...
EDGE_CANDIDATES = 2
EDGE_CONTEXT = 3.0  # ... on a view this many times their size
# A mesh crop that reaches out of the frame is padded by repeating the frame's edge pixels, which smears a face
# the edge cuts into streaks: with 30-40 % of it in frame the mesh says "no face" (presence 0-0.2) on a face
# plainly there, although its points are still where the face is (within 4-10 % of its size). Such a crop scoring
# below this is asked again with the frame mirrored out instead (the face completed by its mirror image, as the
# detectors see it in `mirror`: presence 0.7-1 on the same faces), and the better presence is taken. Its points
# are not: on the mirrored picture the mesh fits the face and its mirror image together, 8-18 % of the face's
# size off the face when 30 % of it is in frame; the repeated edge's stay.
MIRRORED_RETRY = 0.5
# Boxes of one face differ in size by less than this ratio: the short-range model, seeing faces far below its
# design size (30 px at 640 px), may put a box 4-7 times their size over one or a group of them (its keypoints
# collapsed or spread over several faces); such a box is no face of theirs, and faces found or scored inside it
# are still looked at (`_recheck_small`, `_recheck_edges`).
SAME_FACE = 2.0
# The mesh's face presence falls on small faces under a coloured or dim light (a 30 px face enlarged six times):
# on 171 true faces of 25-45 px of the tune split (crowd, far group, street) it was below 0.5 on 28 %. Asked again
# on the crop grey-balanced (`balanced`; only crops enlarged, and only where it said no face), 82 % are found
# instead of 72 %, while on background patches of the same sizes it stays below 0.2 (contrast alone, or a larger
# view, did not help: the grey balance does). What it finds there is a face it fits its points on.
BALANCED_STD = 50.0
# ... and a soft small face (out of focus, or a compressed copy of a few pixels enlarged) on the grey-balanced crop
# sharpened too: its detail above a blur of SHARPEN_SIGMA crop pixels amplified SHARPEN times more. On the tune
# split's crowd clips (159 true faces of 25-45 px) the mesh finds 86 % against 72 % on the balanced crop alone; on
# 750 patches of the same sizes from photos without a face there (a street, a cat, a rocket, coffee cups, the
# group's clothes and walls) it finds none, as on the balanced crop alone (a wider blur found one, a cup).
SHARPEN = 2.0
SHARPEN_SIGMA = 3.0
# ... and on a crop WIDER_ROI times as wide (the face with more of its head and hair around it): the full-range
# model's box on a soft 30 px face is often tight, and on its crop (1.5 times the box) the mesh's presence is
# 0.02-0.8 from frame to frame, on one 1.2 times wider 0.99-1.0 (tenth split's far wall, the old bearded man:
# unswapped for the 21 frames until the whole-frame detection found him).
WIDER_ROI = 1.2
# A fit there whose centre lies further than WIDER_OFF of the box's size from the box's centre is not taken: beside
# a face (a box 0.8 of its size away) the wider crop holds part of it, and the mesh fitted a face between the two,
# presence 0.89, 0.38 of a face off the box's centre; on the faces it finds, 0-0.1.
WIDER_OFF = 0.25
# A sweep for small faces (`sweep`) sees square tiles of the long side over SWEEP_SPLIT, half overlapping. On the
# tune split's far crowd (640 x 360, faces of 26-34 px under their own looks) tiles of a third of the long side score
# every face 0.3-0.9 (a face shrunk to 13-15 px, saved as a poor JPEG and enlarged: 0.49 and 0.57), where tiles of
# 1/2.2 scored those two 0.11 and 0.08, below CANDIDATE_SCORE: never looked at closer, never found (now the first is
# swapped; on the second, 13 px of detail, the mesh still sees no face).
SWEEP_SPLIT = 3.0
# ... and, for small faces the frame's edge cuts (on a tile they are half faces and score 0-0.4), views of EDGE_RING of
# the long side centred on the edges, every half view, the frame mirrored out across them (the face completed by
# its mirror image), through the short-range model: EDGE_CONTEXT times a face of EDGE_RING / EDGE_CONTEXT of the long
# side (tenth split's far group, 640 px: faces of 29-33 px cut by the right edge score 0.64-0.90 so, 0-0.2 on a
# mirrored tile).
EDGE_RING = 0.15
EDGE_RING_FACE = 0.6  # ... where faces the model boxes larger than this share of the view are not taken


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two boxes (x1, y1, x2, y2) are one face: one's centre lies inside the other."""
    ca, cb = (a[:2] + a[2:]) / 2, (b[:2] + b[2:]) / 2
    return bool((b[:2] <= ca).all() and (ca <= b[2:]).all() or (a[:2] <= cb).all() and (cb <= a[2:]).all())


def _same_face(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two boxes are one face (`_overlap`) of about one size (within SAME_FACE): the short-range model
    gives a group of small faces, or one of them, a box several times their size, which must not hide them."""
    side_a = float(max(a[2] - a[0], a[3] - a[1]))
    side_b = float(max(b[2] - b[0], b[3] - b[1]))
    return _overlap(a, b) and max(side_a, side_b) <= SAME_FACE * max(min(side_a, side_b), 1e-6)


def _on_a_face(box: np.ndarray, boxes: np.ndarray) -> bool:
    """Whether `box` is one of `boxes`' faces (`_same_face`)."""
    return any(_same_face(box, other) for other in boxes)


def _centre_in(box: np.ndarray, boxes: np.ndarray) -> bool:
    """Whether the centre of `box` lies inside any of `boxes`."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return bool(((boxes[:, 0] <= cx) & (cx <= boxes[:, 2]) & (boxes[:, 1] <= cy) & (cy <= boxes[:, 3])).any())


def _outside_faces(changed: np.ndarray, known: np.ndarray, width: int, height: int) -> np.ndarray:
    """`changed` (a boolean grid over a `width` x `height` frame) with the cells under each `known` box, grown by a
    quarter of its size, cleared: a known face moving changes only itself."""
    rows, cols = changed.shape[:2]
    sx, sy = cols / width, rows / height
    cells = changed.astype(bool)  # a copy
    for x1, y1, x2, y2 in known:
        px, py = (x2 - x1) / 4, (y2 - y1) / 4
        cells[max(0, int((y1 - py) * sy)):max(0, int(np.ceil((y2 + py) * sy))),
              max(0, int((x1 - px) * sx)):max(0, int(np.ceil((x2 + px) * sx)))] = False
    return cells


def _any_in(cells: np.ndarray, view: View, width: int, height: int) -> bool:
    """Whether `cells` (a boolean grid over a `width` x `height` frame) holds a True cell inside `view`."""
    sx, sy = cells.shape[1] / width, cells.shape[0] / height
    return bool(cells[int(view.y * sy):int(np.ceil((view.y + view.height) * sy)),
                      int(view.x * sx):int(np.ceil((view.x + view.width) * sx))].any())


def _ring_stops(length: int, side: float) -> list[float]:
    """Centres of views of `side` along an edge of `length` pixels, half a view apart, from end to end."""
    count = max(1, math.ceil(length / (side / 2)))
    return [float(v) for v in np.linspace(side / 2, max(side / 2, length - side / 2), count)]


def _view_around(index: int, box: np.ndarray, side: float, width: int, height: int) -> View | None:
    """A square view of ``side`` pixels centred on ``box``, shifted (and if need be shrunk) into the frame."""
    side = int(min(side, width, height))
    if side < 16:
        return None
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    x = int(np.clip(round(cx - side / 2), 0, width - side))
    y = int(np.clip(round(cy - side / 2), 0, height - side))
    return View(index, x, y, side, side, (x > 0, y > 0, x + side < width, y + side < height))


Found = tuple[np.ndarray, np.ndarray, np.ndarray]  # boxes (M, 4), keypoints (M, 6, 2), scores (M,)


def mirror(frame: np.ndarray, size: int) -> tuple[np.ndarray, int, float]:
    """The frame shrunk and mirrored out across every edge by EDGE_PAD of its long side, about ``size`` pixels
    on its long side (shrunk first: mirroring the full-size frame costs more than the model's run); with the
    padding in its pixels and the frame pixels per pixel of it."""
    height, width = frame.shape[:2]
    scale = size / (max(width, height) * (1 + 2 * EDGE_PAD))
    step = max(1, int(1 / (4 * scale)))  # cheap pre-thinning for large downscales (still 2x over)
    small = cv2.resize(every_nth(frame, step), (max(1, round(width * scale)), max(1, round(height * scale))),
                       interpolation=cv2.INTER_AREA)
    pad = round(EDGE_PAD * max(small.shape[:2]))
    return cv2.copyMakeBorder(small, pad, pad, pad, pad, cv2.BORDER_REFLECT), pad, width / small.shape[1]


def _cut_by_edge(result: Found, pad: int, factor: float, shape: tuple[int, ...], found: list[Found]) -> Found:
    """The faces found on a frame mirrored out across its edges (`mirror`: ``pad`` pixels, ``factor`` frame
    pixels per pixel) that the frame's edge cuts, in frame pixels: a face cut at its middle is whole there
    (its mirror image completes it) where the detectors give up on it in the frame itself. Faces wholly
    inside or outside the frame, and faces found already, are dropped (the latter are those faces, better
    seen)."""
    boxes, keypoints, scores = result
    boxes, keypoints = (boxes - pad) * factor, (keypoints - pad) * factor
    height, width = shape[:2]
    side = np.maximum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1])
    outside = np.maximum.reduce([-boxes[:, 0], -boxes[:, 1], boxes[:, 2] - width, boxes[:, 3] - height])
    # In frame along each axis: a face cut across a corner is mirrored out twice, and its box holds a quarter
    # of the frame's share of it (its area share would drop it); a mirror image of a face beside the edge lies
    # out of the frame along one axis.
    across = np.minimum(np.minimum(boxes[:, 2], width) - np.maximum(boxes[:, 0], 0),
                        np.minimum(boxes[:, 3], height) - np.maximum(boxes[:, 1], 0))
    keep = (outside > EDGE_CUT * side) & (across > EDGE_INSIDE * side)
    sure = np.concatenate([part[0] for part in found]) if found else np.zeros((0, 4))
    keep &= np.array([not _on_a_face(box, sure) for box in boxes], bool).reshape(-1)
    return boxes[keep], keypoints[keep], scores[keep]


def _likeliest(candidates: Found, parts: list[Found], count: int) -> list[np.ndarray]:
    """The boxes of the `count` best-scored candidates not on a face of `parts`, nor on one another."""
    boxes, _, scores = candidates
    sure = np.concatenate([part[0] for part in parts]).reshape(-1, 4)
    kept: list[np.ndarray] = []
    for i in np.argsort(-scores, kind="stable"):
        if len(kept) < count and not _on_a_face(boxes[i], [*sure, *kept]):
            kept.append(boxes[i])
    return kept


def _detection(best: Found | None) -> Detection | None:
    """The one face of a `_best_over` result as a Detection (None stays None)."""
    return None if best is None else Detection(best[0][0], float(best[2][0]), best[1][0])


def _best_over(box: np.ndarray, result: Found, sure: np.ndarray | None = None) -> Found | None:
    """The best-scored face of `result` over `box` (`_overlap`) that is none of `sure`'s faces (`_on_a_face`), as
    a result of one face; None where there is none: what a closer look at a candidate `box` found."""
    boxes, keypoints, scores = result
    near = [j for j in range(len(scores))
            if _overlap(box, boxes[j]) and (sure is None or not _on_a_face(boxes[j], sure))]
    if not near:
        return None
    j = max(near, key=lambda j: scores[j])
    return boxes[j:j + 1], keypoints[j:j + 1], scores[j:j + 1]


def _split(result: Found, threshold: float) -> tuple[Found, Found]:
    """(the part scored at least `threshold`, the rest)."""
    above = result[2] >= threshold
    return tuple(part[above] for part in result), tuple(part[~above] for part in result)  # type: ignore[return-value]


class MediaPipeDetector:
    """Both BlazeFace detectors, merged by IoU: short range finds close-ups, full range smaller faces.

    On the whole frame the full-range model finds faces down to about a tenth of the frame's long
    side; smaller ones it scores too low, and they are looked at again closer (`_recheck_small`).
    ``min_face_size`` (pixels) adds overlapping tiles, run through the full-range model in the
    same batch, so smaller faces are found too; each tile level costs several model inputs per frame.
    """

    def __init__(self, long_range: InferenceSession, short_range: InferenceSession,
                 score_threshold: float = 0.5, iou_threshold: float = 0.3,
                 min_face_size: float | None = None) -> None:
        if not 0.0 < score_threshold < 1.0 or not 0.0 < iou_threshold < 1.0:
            raise ValueError("score_threshold and iou_threshold must lie between 0 and 1")
        if min_face_size is not None and min_face_size <= 0:
            raise ValueError("min_face_size must be positive")
        self._long = _BlazeFace(long_range, "long_range")
        self._short = _BlazeFace(short_range, "short_range")
        self.score_threshold = score_threshold
        self.iou_threshold = iou_threshold
        self.min_face_size = min_face_size

    def detect(self, frames: Sequence[np.ndarray]) -> list[list[Detection]]:
        """Faces in each frame, best first. One session run per model for the whole batch, and one more
        for the small faces looked at again."""
        if not frames:
            return []
        for frame in frames:
            if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
                raise ValueError(f"frames must be HxWx3 uint8 BGR arrays, got {frame.shape} {frame.dtype}")
        whole = [View(i, 0, 0, f.shape[1], f.shape[0]) for i, f in enumerate(frames)]
        tiled = [view for i, f in enumerate(frames)
                 for view in frame_views(i, f.shape[1], f.shape[0], self.min_face_size)]
        found: list[list[Found]] = [[] for _ in frames]
        doubtful: list[list[Found]] = [[] for _ in frames]
        for view, result in zip(whole, self._short.run(frames, whole, self.score_threshold, self.iou_threshold)):
            found[view.frame].append(result)
        # The full-range model also sees each frame mirrored out across its edges (one more input per frame), and
        # a mostly grey frame tinted (GREY_WHOLE).
        mirrored = [mirror(frame, self._long.size) for frame in frames]
        edges = [View(len(frames) + i, 0, 0, m[0].shape[1], m[0].shape[0]) for i, m in enumerate(mirrored)]
        greys: dict[int, np.ndarray] = {}
        grey_whole = [view for view in whole if grey_share(_grey_of(greys, frames, view.frame), 0, 0, view.width,
                                                           view.height) >= GREY_WHOLE]
        results = self._long.run([*frames, *(m[0] for m in mirrored)], tiled + edges + grey_whole,
                                 self.score_threshold, self.iou_threshold, min(CANDIDATE_SCORE, self.score_threshold),
                                 [False] * len(tiled + edges) + [True] * len(grey_whole))
        for view, result in zip(tiled, results):
            sure, unsure = _split(result, self.score_threshold)
            found[view.frame].append(sure)
            doubtful[view.frame].append(unsure)
        hinted: list[np.ndarray] = [np.zeros((0, 4), np.float32) for _ in frames]
        for view, (boxes, _, scores) in zip(grey_whole, results[len(tiled + edges):]):
            grey = _grey_of(greys, frames, view.frame)
            hinted[view.frame] = np.array([box for box in boxes[np.argsort(-scores, kind="stable")]
                                           if grey_share(grey, *box) >= GREY_FACE], np.float32).reshape(-1, 4)
        edge_candidates = []
        for index, result in enumerate(results[len(tiled):len(tiled + edges)]):
            _, pad, factor = mirrored[index]
            sure, unsure = _split(result, self.score_threshold)
            found[index].append(_cut_by_edge(sure, pad, factor, frames[index].shape, found[index]))
            edge_candidates.append(_cut_by_edge(unsure, pad, factor, frames[index].shape, found[index]))
        self._recheck_small(frames, found, doubtful, hinted, greys)
        self._recheck_edges(frames, found, edge_candidates)
        return [self._merge(parts) for parts in found]

    def _recheck_edges(self, frames: Sequence[np.ndarray], found: list[list[Found]], candidates: list[Found]) -> None:
        """Faces the edge cuts that the mirrored view scored below the threshold (the likeliest EDGE_CANDIDATES a
        frame) are looked at again by the short-range model, on a view EDGE_CONTEXT times their size around
        each, at full resolution, the frame mirrored out across its edges, all in one batch: the mirrored view
        is shrunk to the full-range model's 192 px, where a face of 60 px (at 640 px) is 14 px, and the
        short-range model is made for faces that fill much of its view (a face half in frame scores 0.7-0.95
        there). A face found there joins the frame's faces (`found`); the candidate alone never does (the face
        mesh, asked instead, also takes a mirrored pattern, e.g. a badge on a shirt at the edge, for a face)."""
        owners = [(index, box) for index, cands in enumerate(candidates)
                  for box in _likeliest(cands, found[index], EDGE_CANDIDATES)]
        for (index, box), result in zip(owners, self._short_looks(frames, owners)):
            best = _best_over(box, _cut_by_edge(result, 0, 1.0, frames[index].shape, found[index]))
            if best is not None:
                found[index].append(best)

    def _short_looks(self, frames: Sequence[np.ndarray], looks: Sequence[tuple[int, np.ndarray]],
                     threshold: float | None = None) -> list[Found]:
        """For each (frame index, box): the faces the short-range model finds on a view EDGE_CONTEXT times the box's
        size around it (the frame reflected across its edges where the view reaches out), in frame pixels; one
        batch. `threshold`: the score a face needs there (default: the detector's)."""
        crops, offsets = [], []
        for index, box in looks:
            side = max(16, round(EDGE_CONTEXT * float(max(box[2] - box[0], box[3] - box[1]))))
            x0, y0 = round(float(box[0] + box[2] - side) / 2), round(float(box[1] + box[3] - side) / 2)
            crops.append(cv2.warpAffine(frames[index], np.array([[1.0, 0, -x0], [0, 1.0, -y0]]), (side, side),
                                        flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_REFLECT))
            offsets.append(np.array([x0, y0], np.float32))
        views = [View(i, 0, 0, crop.shape[1], crop.shape[0]) for i, crop in enumerate(crops)]
        threshold = self.score_threshold if threshold is None else threshold
        results = self._short.run(crops, views, threshold, self.iou_threshold) if crops else []
        return [(boxes + np.tile(offset, 2), keypoints + offset, scores)
                for offset, (boxes, keypoints, scores) in zip(offsets, results)]

    def _recheck_small(self, frames: Sequence[np.ndarray], found: list[list[Found]], doubtful: list[list[Found]],
                       hinted: list[np.ndarray], greys: dict[int, np.ndarray]) -> None:
        """Small faces are looked at again by the full-range model, on a view around each (`_closer_looks`), all
        in one batch:
        - those only the short-range model found: it sees them far below its design size and gives boxes (and
          keypoints) up to 1.7x too large, so the mesh fitted on them is too large too. A face the full-range
          model finds there replaces the short-range one; one it does not find stays as it was. Where the
          full-range model found the face already, its box stands alone instead of being averaged with the
          oversized one;
        - boxes the full-range model scored below the threshold (from CANDIDATE_SCORE, the likeliest
          MAX_CANDIDATES per frame) where no face was found: a face of a few dozen pixels is a handful of the
          whole-frame input's pixels and scores low; seen closer, a face scores as any other and is kept,
          anything else is not (its own view's box must not be a face found already). Larger boxes only where
          they are mostly grey (GREY_FACE), for the look tinted: a soft black-and-white face of 160 px at 640 px
          scores 0.33-0.47 on the whole frame, 0.59-0.80 tinted (blind split's whip pan, the man in a hat). Small
          ones are looked at untinted: tinted too, on every frame, on the grey walls of five moving clips, that
          cost ~7 % more CPU (the sweep, tinted, finds the small grey faces). Candidates a grey frame's tinted whole
          view also scored (`hinted`: its grey boxes per frame, best first; see GREY_WHOLE) are looked at tinted too,
          and up to GREY_CANDIDATES a frame that only it scored, on no face found and no candidate looked at.
          `greys`: the frames' grey maps measured already, by frame index (`_grey_of`)."""
        owners = []
        dropped: dict[int, set[int]] = {}
        for index, parts in enumerate(found):
            short, rest = parts[0], parts[1:]
            height, width = frames[index].shape[:2]
            small = RECHECK_SIZE * max(width, height)
            others = np.concatenate([p[0] for p in rest]) if rest else np.zeros((0, 4))
            for i, box in enumerate(short[0]):
                side = float(max(box[2] - box[0], box[3] - box[1]))
                if side >= small:
                    continue
                if any(_overlap(box, o) for o in others):
                    dropped.setdefault(index, set()).add(i)  # the full-range box stands alone
                    continue
                owners.append((index, i, box, None, False))
            sure = np.concatenate([p[0] for p in parts])
            boxes, _, scores = (np.concatenate([p[n] for p in doubtful[index]]) for n in range(3))
            looked: list[np.ndarray] = []
            for j in np.argsort(-scores, kind="stable"):
                box = boxes[j]
                large = float(max(box[2] - box[0], box[3] - box[1])) >= small
                # Centred on a face found already, or on a candidate looked at: that face again.
                if (large and grey_share(_grey_of(greys, frames, index), *box) < GREY_FACE) \
                        or _on_a_face(box, sure) or _centre_in(box, np.array(looked).reshape(-1, 4)):
                    continue
                hint = any(_centre_in(other, box[None]) for other in hinted[index])
                owners.append((index, None, box, sure, large or hint))
                looked.append(box)
                if len(looked) >= MAX_CANDIDATES:
                    break
            more = [box for box in hinted[index]
                    if not _on_a_face(box, sure) and not _centre_in(box, np.array(looked).reshape(-1, 4))]
            for box in more[:GREY_CANDIDATES]:
                owners.append((index, None, box, sure, True))
        bests = self._closer_looks(frames, [(index, box, sure) for index, _, box, sure, _ in owners],
                                   [tint for *_, tint in owners], greys)
        for (index, i, box, sure, _), best in zip(owners, bests):
            if best is not None:
                found[index].append(best)
                # The short-range box it replaces, or (found as a candidate) stands alone beside.
                short = found[index][0][0]
                dropped.setdefault(index, set()).update(
                    [i] if i is not None else [k for k in range(len(short)) if _overlap(short[k], best[0][0])])
        for index, drop in dropped.items():
            keep = np.array([i not in drop for i in range(len(found[index][0][0]))], bool)
            found[index][0] = tuple(part[keep] for part in found[index][0])

    def sweep(self, frame: np.ndarray, known: Sequence[np.ndarray], changed: np.ndarray | None = None
              ) -> list[Detection]:
        """Faces on overlapping tiles of the frame (SWEEP_SPLIT across its long side) that none of the `known`
        boxes covers: on the whole frame the full-range model finds faces down to about 1/20 of its long side
        (see `_recheck_small`), on a tile smaller ones, soft ones too (see SWEEP_SPLIT). Several inputs per call:
        run now and then (every few dozen frames, see workflow/analysis.py `MotionGate`), tracks keep the faces it
        finds in between. With `changed` (a boolean grid over the frame), only tiles where it holds a cell outside
        the known faces are looked at. Mostly grey tiles (GREY_VIEW) where a grey face may have scored faintly
        (TINT_HINT) are seen twice, the second time tinted."""
        height, width = frame.shape[:2]
        side = max(16, round(max(width, height) / SWEEP_SPLIT))
        views = [View(0, x, y, min(side, width), min(side, height),
                      (x > 0, y > 0, x + side < width, y + side < height))
                 for y in _tile_starts(height, side) for x in _tile_starts(width, side)]
        sure = np.array(known, np.float32).reshape(-1, 4)
        if changed is not None:
            cells = _outside_faces(changed, sure, width, height)
            views = [view for view in views if _any_in(cells, view, width, height)]
            if not views:
                return []
        grey = grey_map(frame)
        plain = self._long.run([frame], views, self.score_threshold, self.iou_threshold, TINT_HINT)
        greyish = [view for view, (boxes, _, scores) in zip(views, plain)
                   if grey_share(grey, view.x, view.y, view.x + view.width, view.y + view.height) >= GREY_VIEW
                   and any(score < self.score_threshold and grey_share(grey, *box) >= GREY_FACE
                           and not _centre_in(box, sure) for box, score in zip(boxes, scores))]
        results = [tuple(part[r[2] >= CANDIDATE_SCORE] for part in r) for r in plain]
        if greyish:  # a run of its own: in one batch with the rest, peak memory rose ~300 MiB (its buffers)
            results += self._long.run([frame], greyish, self.score_threshold, self.iou_threshold, CANDIDATE_SCORE,
                                      [True] * len(greyish))
        found, unsure = (list(parts) for parts in zip(*(_split(r, self.score_threshold) for r in results)))
        # Candidates on a known face (fitted by the mesh: a face, whatever its size) are parts of it.
        unsure = [tuple(part[[not _centre_in(box, sure) for box in u[0]]] for part in u) for u in unsure]
        firm, weak = self._closer(frame, unsure, found)
        found += firm
        found += self._edge_ring(frame, found, None if changed is None else cells)
        firm_boxes = np.concatenate([p[0] for p in found]).reshape(-1, 4)
        weak_boxes = np.concatenate([p[0] for p in weak]).reshape(-1, 4) if weak else np.zeros((0, 4), np.float32)
        return [replace(d, weak=True) if _centre_in(d.box, weak_boxes) and not _centre_in(d.box, firm_boxes)
                else d for d in self._merge(found + weak) if not _centre_in(d.box, sure)
                and not any(_centre_in(o, d.box[None]) for o in sure)]

    def _edge_ring(self, frame: np.ndarray, found: list[Found], cells: np.ndarray | None) -> list[Found]:
        """Faces the frame's edge cuts, on short-range views along its edges (see EDGE_RING; those holding one of
        `cells` where given), none of `found`'s faces."""
        height, width = frame.shape[:2]
        side = EDGE_RING * max(width, height)
        face = side / EDGE_CONTEXT  # the face size `_short_looks` makes a view of `side` for
        centres = [(x, y) for y in (0.0, float(height)) for x in _ring_stops(width, side)]
        centres += [(x, y) for x in (0.0, float(width)) for y in _ring_stops(height, side)]
        if cells is not None:
            centres = [(x, y) for x, y in centres if _any_in(
                cells, View(0, max(0, int(x - side / 2)), max(0, int(y - side / 2)), int(side), int(side)),
                width, height)]
        looks = [(0, np.array([x - face / 2, y - face / 2, x + face / 2, y + face / 2], np.float32))
                 for x, y in centres]
        cut = [_cut_by_edge(result, 0, 1.0, frame.shape, found) for result in self._short_looks([frame], looks)]
        # A box about the view's size is a pattern of the backdrop and its mirror image, not a face cut by the edge
        # (a face that large is seen on the mirrored whole frame).
        return [tuple(part[np.maximum(b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]) <= EDGE_RING_FACE * side]
                      for part in (b, k, s)) for b, k, s in cut]

    def look_at(self, frame: np.ndarray, boxes: Sequence[np.ndarray], threshold: float | None = None
                ) -> list[Detection | None]:
        """The best-scored face found over each of `boxes`, or None: whether a face is where a track says one
        should be. Boxes of RECHECK_SIZE of the frame's long side or more are looked at by the short-range model
        (`_short_looks`), smaller ones by the full-range model closer (`_closer_looks`); one batch each. `threshold`:
        the score a face needs there (default: the detector's)."""
        boxes = [np.asarray(box, np.float32) for box in boxes]
        small = RECHECK_SIZE * max(frame.shape[:2])
        large = [i for i, box in enumerate(boxes) if max(box[2] - box[0], box[3] - box[1]) >= small]
        rest = [i for i in range(len(boxes)) if i not in large]
        found: list[Detection | None] = [None] * len(boxes)
        for i, seen in zip(large, self.look_short(frame, [boxes[i] for i in large], threshold)):
            found[i] = seen
        closer = self._closer_looks([frame], [(0, boxes[i], None) for i in rest], [True] * len(rest),
                                    threshold=threshold)
        for i, best in zip(rest, closer):
            found[i] = _detection(best)
        return found

    def look_short(self, frame: np.ndarray, boxes: Sequence[np.ndarray], threshold: float | None = None
                   ) -> list[Detection | None]:
        """The best-scored face the short-range model finds over each of `boxes` on a view EDGE_CONTEXT times its
        size (`_short_looks`; `threshold` as there), or None; one batch. `look_at`'s look at large boxes, and a look
        by the other model at a face too small for it on the whole frame."""
        boxes = [np.asarray(box, np.float32) for box in boxes]
        looks = self._short_looks([frame], [(0, box) for box in boxes], threshold)
        return [_detection(_best_over(box, result)) for box, result in zip(boxes, looks)]

    def _closer(self, frame: np.ndarray, unsure: list[Found], parts: list[Found]) -> tuple[list[Found], list[Found]]:
        """The sweep's boxes scored from CANDIDATE_SCORE up to the threshold (the likeliest MAX_CANDIDATES, not on a
        face of `parts`) looked at again closer (`_closer_looks`); the faces found there, on none of `parts`' faces.
        On a tile a face of 25-30 px (at 640 px) under a dim or coloured light, rolled or blurred scores 0.1-0.45;
        seen closer, 0.55-0.8, as `_recheck_small` finds for the whole frame's candidates."""
        candidates = tuple(np.concatenate([p[n] for p in unsure]) for n in range(3))
        sure = np.concatenate([p[0] for p in parts]).reshape(-1, 4)
        looks = [(0, box, sure) for box in _likeliest(candidates, parts, MAX_CANDIDATES)]
        bests = self._closer_looks([frame], looks, [True] * len(looks))
        # Where the full-range model finds nothing, the short-range model looks at the same view: a 26 px face turned
        # ~50 degrees scored 0.42-0.70 by the full-range model there, 0.66-0.82 by the short-range one; but it also
        # takes things for faces, so what only it finds is weak (see Detection.weak).
        height, width = frame.shape[:2]
        again = [(look, view) for look, best in zip(looks, bests) if best is None for view in
                 [_view_around(0, look[1], RECHECK_CONTEXT * float(max(look[1][2:] - look[1][:2])), width, height)]
                 if view is not None]
        results = self._short.run([frame], [view for _, view in again], self.score_threshold,
                                  self.iou_threshold) if again else []
        weak = [best for (look, _), result in zip(again, results)
                if (best := _best_over(look[1], result, look[2])) is not None]
        return [best for best in bests if best is not None], weak

    def _closer_looks(self, frames: Sequence[np.ndarray], looks: list[tuple[int, np.ndarray, np.ndarray | None]],
                      tint: Sequence[bool], greys: dict[int, np.ndarray] | None = None,
                      threshold: float | None = None) -> list[Found | None]:
        """For each (frame index, candidate box, faces known there or None): the best-scored face the full-range
        model finds over the box (`_best_over`) on a view RECHECK_CONTEXT times its size, and on that view tinted too
        where `tint` (a flag a look) allows and the box is mostly grey (GREY_FACE), all in one batch; None where it
        finds none. `greys`: the frames' grey maps measured already, by frame index (`_grey_of`). `threshold`: the
        score a face needs there (default: the detector's)."""
        views, owners, tinted = [], [], []
        greys = {} if greys is None else greys
        for look, (index, box, _) in enumerate(looks):
            height, width = frames[index].shape[:2]
            side = RECHECK_CONTEXT * float(max(box[2] - box[0], box[3] - box[1]))
            view = _view_around(index, box, side, width, height)
            if view is None:
                continue
            seen: tuple[bool, ...] = (False,)
            if tint[look] and grey_share(_grey_of(greys, frames, index), *box) >= GREY_FACE:
                seen = (False, True)
            views += [view] * len(seen)
            owners += [look] * len(seen)
            tinted += seen
        threshold = self.score_threshold if threshold is None else threshold
        results = (self._long.run(frames, views, threshold, self.iou_threshold, tinted=tinted)
                   if views else [])
        bests: list[Found | None] = [None] * len(looks)
        for look, result in zip(owners, results):
            best = _best_over(looks[look][1], result, looks[look][2])
            if best is not None and (bests[look] is None or best[2][0] > bests[look][2][0]):
                bests[look] = best
        return bests

    def _merge(self, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> list[Detection]:
        boxes, keypoints, scores = (np.concatenate([p[k] for p in parts]) for k in range(3))
        b, k, s = weighted_nms(boxes, keypoints, scores, self.iou_threshold)
        return [Detection(b[i], float(s[i]), k[i]) for i in range(len(s))]


# --------------------------------------------------------------------------- landmarks

@dataclass(frozen=True, eq=False)
class FaceMesh:
    """Landmarks of the faces of one frame."""

    points: np.ndarray  # (N, 468, 3) float32: x, y in frame pixels, z in the same pixel scale
    presence: np.ndarray  # (N,) float32 face-presence probability from the model


def roi_from_detection(detection: Detection, scale: float = ROI_SCALE) -> tuple[np.ndarray, float, float]:
    """MediaPipe's landmark ROI: (centre (2,), side length in pixels, rotation in radians).

    The rotation turns the image-space vector from keypoint 0 to keypoint 1 (the eyes) level.
    """
    x1, y1, x2, y2 = (float(v) for v in detection.box)
    centre = np.array([(x1 + x2) / 2, (y1 + y2) / 2], np.float64)
    side = max(x2 - x1, y2 - y1) * scale
    dx, dy = (detection.keypoints[1] - detection.keypoints[0]).astype(np.float64)
    return centre, side, math.atan2(dy, dx)


def roi_to_frame_matrix(centre: np.ndarray, side: float, rotation: float, size: int) -> np.ndarray:
    """2x3 affine taking crop pixels (0..size, corner origin) to frame pixels."""
    cos, sin = math.cos(rotation) * side / size, math.sin(rotation) * side / size
    linear = np.array([[cos, -sin], [sin, cos]])
    offset = np.asarray(centre, np.float64) - linear @ np.array([size / 2, size / 2])
    return np.concatenate([linear, offset[:, None]], axis=1)


def _crop(frame: np.ndarray, crop_to_frame: np.ndarray, size: int, border: int = cv2.BORDER_REPLICATE) -> np.ndarray:
    # warpAffine addresses pixel centres; shift both sides by half a pixel from the corner origin.
    shift = np.array([[1.0, 0, 0.5], [0, 1.0, 0.5], [0, 0, 1.0]])
    unshift = np.array([[1.0, 0, -0.5], [0, 1.0, -0.5], [0, 0, 1.0]])
    matrix = (unshift @ np.vstack([crop_to_frame, [0, 0, 1]]) @ shift)[:2]
    return cv2.warpAffine(frame, matrix, (size, size), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=border)


def balanced(crop: np.ndarray) -> np.ndarray:
    """`crop` grey-balanced and brightened: each channel's mean moved to mid-grey (a colour cast and dim light
    taken out), the contrast stretched to BALANCED_STD grey levels where it is lower."""
    values = crop.astype(np.float32)
    gain = max(1.0, BALANCED_STD / max(float(values.std()), 1.0))
    return np.clip((values - values.mean(axis=(0, 1))) * gain + 128.0, 0, 255).astype(np.uint8)


def sharpened(crop: np.ndarray) -> np.ndarray:
    """`crop` with its detail (above a blur of SHARPEN_SIGMA pixels) amplified SHARPEN times more."""
    values = crop.astype(np.float32)
    return np.clip(values + SHARPEN * (values - cv2.GaussianBlur(values, (0, 0), SHARPEN_SIGMA)), 0, 255
                   ).astype(np.uint8)


def _reaches_out(crop_to_frame: np.ndarray, size: int, shape: tuple[int, ...]) -> bool:
    """Whether a crop's square (crop pixels 0..size) reaches beyond the frame's edge."""
    corners = np.array([[0, 0, 1], [size, 0, 1], [0, size, 1], [size, size, 1]], np.float64) @ crop_to_frame.T
    return bool(corners.min() < 0 or (corners[:, 0] > shape[1]).any() or (corners[:, 1] > shape[0]).any())


class MediaPipeLandmarker:
    """468-point face mesh on MediaPipe's rotated ROI around each detection."""

    def __init__(self, session: InferenceSession) -> None:
        self.session = session
        self.size = _session_input_size(session, "face landmarker")

    def predict(self, frame: np.ndarray, detections: Sequence[Detection], wider: bool = False) -> FaceMesh:
        """Landmarks and presence for every detection of one frame, in one session run; a second run asks again
        whether there is a face on the crops that reach out of the frame and found none (see MIRRORED_RETRY), a
        third on small faces' crops that found none grey-balanced, and grey-balanced and sharpened (see
        BALANCED_STD, SHARPEN), and, with `wider` (the detections are a detector's boxes), on a wider crop (see
        WIDER_ROI)."""
        if not detections:
            return FaceMesh(np.zeros((0, NUM_LANDMARKS, 3), np.float32), np.zeros(0, np.float32))
        matrices = [roi_to_frame_matrix(*roi_from_detection(d), self.size) for d in detections]
        raw, presence = self._run([_crop(frame, m, self.size) for m in matrices])
        retry = [i for i, m in enumerate(matrices)
                 if presence[i] < MIRRORED_RETRY and _reaches_out(m, self.size, frame.shape)]
        if retry:
            _, found = self._run([_crop(frame, matrices[i], self.size, cv2.BORDER_REFLECT) for i in retry])
            presence[retry] = np.maximum(presence[retry], found)
        # A small face (its crop enlarged) that the mesh says is none is asked again on the crop grey-balanced,
        # grey-balanced and sharpened, and on a wider crop (see WIDER_ROI), in one run; its points are taken from
        # the crop that finds it best.
        faint = [i for i, m in enumerate(matrices) if presence[i] < MIRRORED_RETRY and math.hypot(m[0, 0], m[1, 0]) < 1]
        if faint:
            grey = [balanced(_crop(frame, matrices[i], self.size)) for i in faint]
            wide = [roi_to_frame_matrix(*roi_from_detection(detections[i], ROI_SCALE * WIDER_ROI), self.size)
                    for i in faint] if wider else []
            points, found = self._run([*grey, *(sharpened(crop) for crop in grey),
                                       *(_crop(frame, m, self.size) for m in wide)])
            looks = 3 if wider else 2
            points, found = points.reshape(looks, len(faint), *points.shape[1:]), found.reshape(looks, len(faint))
            if wider:  # a fit on the wider crop counts only where it is centred on the detector's box
                found[2] *= _centred_on(np.array(wide), points[2], np.array([detections[i].box for i in faint]))
            best = found.argmax(axis=0)
            points, found = points[best, np.arange(len(faint))], found[best, np.arange(len(faint))]
            better = found > presence[faint]
            raw[np.array(faint)[better]] = points[better]
            presence[faint] = np.maximum(presence[faint], found)
            for k in np.flatnonzero(better & (best == 2)):
                matrices[faint[k]] = wide[k]
        points = np.empty_like(raw)
        for i, matrix in enumerate(matrices):
            points[i, :, :2] = raw[i, :, :2] @ matrix[:, :2].T + matrix[:, 2]
            points[i, :, 2] = raw[i, :, 2] * math.hypot(matrix[0, 0], matrix[1, 0])
        return FaceMesh(points.astype(np.float32), presence)

    def _run(self, crops: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Raw crop-pixel landmarks (N, 468, 3) and presence (N,) of BGR crops, in one session run."""
        inputs = {INPUT_NAME: to_nchw(np.stack([crop[..., ::-1] for crop in crops]), INPUT_RANGES["landmarks"])}
        raw, flags = self.session.run(["landmarks", "face_flag"], inputs)
        return raw.reshape(len(crops), NUM_LANDMARKS, 3).astype(np.float64), sigmoid_scores(flags.reshape(len(crops)))

    def landmarks(self, frame: np.ndarray, detections: Sequence[Detection]) -> np.ndarray:
        """(N, 468, 3) landmarks in frame pixels; see ``predict`` for the presence scores too."""
        return self.predict(frame, detections).points


def _centred_on(crop_to_frame: np.ndarray, raw: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Whether the centre of each fit (raw crop-pixel points (N, 468, 2+) of crops placed by `crop_to_frame`,
    (N, 2, 3)) lies within WIDER_OFF of its box's size (N, 4) from the box's centre."""
    centres = np.einsum("nij,npj->npi", crop_to_frame[:, :, :2], raw[..., :2]).mean(axis=1) + crop_to_frame[:, :, 2]
    off = np.abs(centres - (boxes[:, :2] + boxes[:, 2:]) / 2)
    return (off <= WIDER_OFF * (boxes[:, 2:] - boxes[:, :2])).all(axis=1)


def five_points(landmarks: np.ndarray) -> np.ndarray:
    """(N, 5, 2) points in InsightFace/ArcFace order from (N, 468, 2|3) mesh landmarks.

    Order: subject's right eye centre (image-left on a frontal face), left eye centre, nose tip,
    subject's right mouth corner, left mouth corner.
    """
    xy = np.asarray(landmarks)[..., :2]
    return np.stack([
        xy[:, list(RIGHT_EYE_RING)].mean(axis=1),
        xy[:, list(LEFT_EYE_RING)].mean(axis=1),
        xy[:, NOSE_TIP],
        xy[:, MOUTH_RIGHT_CORNER],
        xy[:, MOUTH_LEFT_CORNER],
    ], axis=1).astype(np.float32)


def four_points(five: np.ndarray) -> np.ndarray:
    """(4, 2) eyes, nose tip and mouth centre from one face's five points (`five_points`' order): where a
    detection's first four keypoints are."""
    return np.vstack([five[:3], five[3:5].mean(axis=0)])

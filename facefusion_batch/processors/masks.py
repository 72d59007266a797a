"""FaceFusion's face masks in crop space: box (blur + padding), occlusion (XSeg), region (BiSeNet) and area
(68 landmarks). Every mask is a float32 (size, size) array in 0..1; the chain combines them with a minimum."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence, get_args

import cv2
import numpy as np

from facefusion_batch.faces.geometry import box_mask, hull_mask, smooth_binary_mask, smooth_model_mask
from facefusion_batch.listing import listed
from facefusion_batch.models.catalog import ModelSpec
from facefusion_batch.processors.tensors import run_stacked, to_tensor

MaskType = Literal["box", "occlusion", "area", "region"]
MaskRegion = Literal["skin", "left-eyebrow", "right-eyebrow", "left-eye", "right-eye", "glasses", "nose", "mouth",
                     "upper-lip", "lower-lip"]
MaskArea = Literal["upper-face", "lower-face", "mouth"]
MASK_TYPES: tuple[MaskType, ...] = get_args(MaskType)
# BiSeNet's class index for each region FaceFusion offers (background, ears, neck, hair, ... are never pasted).
REGION_CLASSES: dict[MaskRegion, int] = {
    "skin": 1, "left-eyebrow": 2, "right-eyebrow": 3, "left-eye": 4, "right-eye": 5, "glasses": 6, "nose": 10,
    "mouth": 11, "upper-lip": 12, "lower-lip": 13,
}
# The 68-point landmark indices whose convex hull is each area.
AREA_POINTS: dict[MaskArea, tuple[int, ...]] = {
    "upper-face": (0, 1, 2, 31, 32, 33, 34, 35, 14, 15, 16, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17),
    "lower-face": (3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 35, 34, 33, 32, 31),
    "mouth": tuple(range(48, 68)),
}


@dataclass(frozen=True)
class MaskOptions:
    """FaceFusion's mask settings: `blur` 0..1, `padding` percent of the crop (top, right, bottom, left)."""

    types: tuple[MaskType, ...] = ("box",)
    blur: float = 0.3
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    regions: tuple[MaskRegion, ...] = tuple(REGION_CLASSES)
    areas: tuple[MaskArea, ...] = tuple(AREA_POINTS)

    def __post_init__(self) -> None:
        unknown = [t for t in self.types if t not in MASK_TYPES]
        if unknown or not self.types:
            raise ValueError(f"face mask types must be some of {', '.join(MASK_TYPES)} (got {listed(unknown) or 'none'})")
        if not 0 <= self.blur <= 1:
            raise ValueError(f"face mask blur must be 0..1 (got {self.blur})")
        if len(self.padding) != 4 or any(not 0 <= p <= 100 for p in self.padding):
            raise ValueError(f"face mask padding is 4 percentages 0..100: top right bottom left (got {self.padding})")
        bad = [r for r in self.regions if r not in REGION_CLASSES] + [a for a in self.areas if a not in AREA_POINTS]
        if bad:
            raise ValueError(f"unknown face mask region/area {listed(bad)}; regions: {', '.join(REGION_CLASSES)};"
                             f" areas: {', '.join(AREA_POINTS)}")


def area_mask(size: int, landmarks68: np.ndarray, areas: Sequence[MaskArea]) -> np.ndarray:
    """The hull of the chosen areas' landmarks (already in crop pixels), softened as FaceFusion does."""
    indices = [i for area in areas for i in AREA_POINTS[area]]
    return hull_mask(size, np.asarray(landmarks68)[indices])


class Occluder:
    """XSeg: (N, 256, 256, 3) BGR in [0, 1] (NHWC) fed as `input` -> (N, 256, 256, 1), 1 where the face shows
    (hands, hair and objects in front of it are 0). With several models (FaceFusion's `many`) the strictest
    answer wins: their minimum, smoothed once."""

    def __init__(self, session: Any, spec: ModelSpec, *more: tuple[Any, ModelSpec]) -> None:
        self._models = [(session, spec), *more]

    @property
    def models(self) -> list[tuple[Any, ModelSpec]]:
        """(session, spec) of each XSeg model, in order."""
        return list(self._models)

    def masks(self, crops: Sequence[np.ndarray]) -> list[np.ndarray]:
        if not crops:
            return []
        merged: list[np.ndarray] | None = None
        for session, spec in self._models:
            model = spec.size
            small = np.stack([cv2.resize(np.asarray(c, dtype=np.uint8), (model, model)) for c in crops])
            raw = run_stacked(session, {"input": to_tensor(small, spec)})[0]
            masks = [np.clip(out, 0, 1).astype(np.float32).reshape(model, model) for out in raw]
            if merged is not None and masks[0].shape != merged[0].shape:
                masks = [cv2.resize(m, merged[0].shape[::-1]) for m in masks]
            merged = masks if merged is None else [np.minimum(a, b) for a, b in zip(merged, masks)]
        assert merged is not None
        return [smooth_model_mask(mask, crop.shape[0]) for mask, crop in zip(merged, crops)]


class Parser:
    """BiSeNet: (N, 3, 512, 512) RGB, ImageNet mean/std, fed as `input` -> (N, 19, 512, 512) class scores."""

    def __init__(self, session: Any, spec: ModelSpec) -> None:
        self._session, self._spec = session, spec

    @property
    def session(self) -> Any:
        return self._session

    @property
    def spec(self) -> ModelSpec:
        return self._spec

    def masks(self, crops: Sequence[np.ndarray], regions: Sequence[MaskRegion]) -> list[np.ndarray]:
        if not crops:
            return []
        model = self._spec.size
        small = np.stack([cv2.resize(np.asarray(c, dtype=np.uint8), (model, model)) for c in crops])
        scores = run_stacked(self._session, {"input": to_tensor(small, self._spec)})[0]
        wanted = [REGION_CLASSES[r] for r in regions]
        return [smooth_binary_mask(cv2.resize(best_is_wanted(s, wanted).astype(np.float32), crop.shape[1::-1]))
                for s, crop in zip(scores, crops)]


def best_is_wanted(scores: np.ndarray, wanted: Sequence[int]) -> np.ndarray:
    """(C, H, W) class scores -> (H, W) bool: the best class is a wanted one (a tie counts as wanted). The
    best wanted score against the best other score, each plane read once in place: an argmax over axis 0
    walks the planes strided (~20 ms per face at 512), and `s[wanted].max(0) >= s.max(0)` copies the wanted
    planes and reads them twice. Done in bands of rows so the two running maxima stay in the cache while
    every plane streams past them once (BiSeNet's 19 x 512 x 512: ~2.2 -> ~1.3 ms)."""
    wanted = list(wanted)
    others = [i for i in range(len(scores)) if i not in set(wanted)]
    if not others:
        return np.ones(scores.shape[1:], dtype=bool)
    height, width = scores.shape[1:]
    result = np.empty((height, width), dtype=bool)
    best_wanted = np.empty((min(height, _BAND), width), dtype=np.float32)
    best_other = np.empty_like(best_wanted)
    for top in range(0, height, _BAND):
        rows = slice(top, min(height, top + _BAND))
        count = rows.stop - top
        _band_max(scores, wanted, rows, best_wanted[:count])
        _band_max(scores, others, rows, best_other[:count])
        np.greater_equal(best_wanted[:count], best_other[:count], out=result[rows])
    return result


_BAND = 128  # rows: two running maxima of 128 x 512 float32 (512 KB) fit a core's L2 cache


def _band_max(scores: np.ndarray, indices: Sequence[int], rows: slice, out: np.ndarray) -> None:
    np.copyto(out, scores[indices[0], rows], casting="same_kind")
    for index in indices[1:]:
        np.maximum(out, scores[index, rows], out=out)


def combine(masks: Sequence[np.ndarray]) -> np.ndarray:
    """FaceFusion's combination: a pixel is pasted as much as the strictest mask allows."""
    return np.clip(np.minimum.reduce([np.asarray(m, dtype=np.float32) for m in masks]), 0, 1)


__all__ = ["AREA_POINTS", "MASK_TYPES", "REGION_CLASSES", "MaskOptions", "Occluder", "Parser", "area_mask",
           "box_mask", "combine"]

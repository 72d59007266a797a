"""Pixel boost: the swap crop is taken at k times the model's size and split into k*k model-size tiles, each a
sub-pixel-shifted view of the whole face (FaceFusion's layout); the swapped tiles interleave back exactly."""
from __future__ import annotations

import re

import numpy as np

from facefusion_batch.faces.geometry import explode_tiles, implode_tiles
from facefusion_batch.models.catalog import ModelSpec


def parse_boost(text: str) -> int:
    """'512x512' (FaceFusion's spelling) or '512' -> 512."""
    match = re.fullmatch(r"\s*(\d+)(?:\s*x\s*(\d+))?\s*", str(text))
    if not match or (match.group(2) and match.group(2) != match.group(1)):
        raise ValueError(f"pixel boost must be a square size like 512x512 (got {text!r})")
    return int(match.group(1))


def check_boost(spec: ModelSpec, size: int) -> int:
    """`size` when the swapper offers it as a pixel boost; ValueError naming the sizes it offers."""
    if size not in spec.boost_sizes or size % spec.size:
        offered = ", ".join(f"{s}x{s}" for s in spec.boost_sizes if s % spec.size == 0)
        raise ValueError(f"{spec.name} offers pixel boost {offered} (got {size}x{size})")
    return size


def split(crop: np.ndarray, model_size: int) -> np.ndarray:
    """(k*s, k*s, C) -> (k*k, s, s, C)."""
    return implode_tiles(crop, model_size)


def join(tiles: np.ndarray) -> np.ndarray:
    """(k*k, s, s, C) -> (k*s, k*s, C): the inverse of `split`."""
    return explode_tiles(tiles)

"""Crops to model tensors and back, and one model call per batch of faces where the model allows it."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from facefusion_batch.models.catalog import ModelSpec


def to_tensor(crops: np.ndarray, spec: ModelSpec) -> np.ndarray:
    """(N, H, W, 3) BGR crops (0..255) -> (N, 3, H, W) float32 with the model's channel order and mean/std;
    (N, H, W, 3) for an NHWC model."""
    image = crops[..., ::-1] if spec.rgb else crops
    mean = np.asarray(spec.mean, dtype=np.float32)
    std = np.asarray(spec.std, dtype=np.float32)
    tensor = (image.astype(np.float32) / 255.0 - mean) / std
    return np.ascontiguousarray(tensor if spec.nhwc else tensor.transpose(0, 3, 1, 2))


def batch_allowed(session: Any) -> bool:
    """True when every input's first dimension is symbolic, so several faces can go in one call."""
    try:
        inputs = session.get_inputs()
    except AttributeError:
        return False
    return all(not isinstance(i.shape[0], int) for i in inputs)


def run_stacked(session: Any, feeds: Mapping[str, np.ndarray], shared: Mapping[str, np.ndarray] | None = None,
                batched: bool | None = None) -> list[np.ndarray]:
    """Run `session` on items stacked along axis 0 of every array in `feeds` (`shared` inputs go as they are):
    one call when the batch axis is dynamic, else one call per item. Returns every output, stacked per item."""
    count = len(next(iter(feeds.values())))
    if count == 0:
        raise ValueError("no items to run")
    if batched is None:
        batched = batch_allowed(session)
    shared = dict(shared or {})
    if batched or count == 1:
        return list(session.run(None, {**feeds, **shared}))
    per_item = [session.run(None, {**{name: value[i:i + 1] for name, value in feeds.items()}, **shared})
                for i in range(count)]
    return [np.concatenate([outputs[k] for outputs in per_item]) for k in range(len(per_item[0]))]


def stack(crops: Sequence[np.ndarray]) -> np.ndarray:
    return np.stack([np.asarray(crop) for crop in crops])

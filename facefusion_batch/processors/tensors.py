"""Crops to model tensors and back, and one model call per batch of faces where the model allows it."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import cv2
import numpy as np

from facefusion_batch.models.catalog import ModelSpec


def to_tensor(crops: np.ndarray, spec: ModelSpec) -> np.ndarray:
    """(N, H, W, 3) BGR crops (0..255) -> (N, 3, H, W) float32 with the model's channel order and mean/std;
    (N, H, W, 3) for an NHWC model."""
    image = np.asarray(crops)
    mean = np.asarray(spec.mean, dtype=np.float32)
    std = np.asarray(spec.std, dtype=np.float32)
    if not spec.nhwc and image.dtype in (np.uint8, np.float32) and image.ndim == 4 and image.shape[3] == 3:
        return _planar(image, spec.rgb, 1.0 / (255.0 * std), mean / std)
    if spec.rgb:
        image = image[..., ::-1]  # BGR -> RGB (mean and std are given in the model's channel order)
    # one float copy, already in the model's layout, scaled in place: (x / 255 - mean) / std
    tensor = np.array(image if spec.nhwc else image.transpose(0, 3, 1, 2), dtype=np.float32, order="C")  # a copy
    scale, shift = 1.0 / (255.0 * std), mean / std
    if spec.nhwc and (scale == scale[0]).all() and (shift == shift[0]).all():
        # one scalar for every channel: numpy broadcasts a (3,) operand over the last axis 3 values at a
        # time, several times slower than a scalar over the whole tensor (same float32 arithmetic)
        tensor *= scale[0]
        tensor -= shift[0]
        return tensor
    shape = (1, 1, 1, 3) if spec.nhwc else (1, 3, 1, 1)
    tensor *= scale.reshape(shape)
    tensor -= shift.reshape(shape)
    return tensor


def _planar(image: np.ndarray, rgb: bool, scale: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """NCHW from NHWC: each crop split into contiguous planes (OpenCV), each plane scaled and shifted into its
    place in one pass; numpy's strided transpose copy is the slow part otherwise (same float32 arithmetic)."""
    count, height, width = image.shape[:3]
    tensor = np.empty((count, 3, height, width), dtype=np.float32)
    order = (2, 1, 0) if rgb else (0, 1, 2)  # the model's channel c is the crop's plane order[c]
    for index in range(count):
        planes = cv2.split(np.ascontiguousarray(image[index]))
        for channel, plane in enumerate(order):
            out = tensor[index, channel]
            np.multiply(planes[plane], scale[channel], out=out, dtype=np.float32, casting="unsafe")
            out -= shift[channel]
    return tensor


def batch_allowed(session: Any, shared: Sequence[str] = ()) -> bool:
    """True when every per-face input's first dimension is symbolic, so several faces can go in one call
    (`shared` inputs, such as CodeFormer's (1,) weight, are fed once per call and don't count)."""
    try:
        inputs = session.get_inputs()
    except AttributeError:
        return False
    return all(not isinstance(i.shape[0], int) for i in inputs if i.name not in shared)


def run_stacked(session: Any, feeds: Mapping[str, np.ndarray], shared: Mapping[str, np.ndarray] | None = None,
                batched: bool | None = None) -> list[np.ndarray]:
    """Run `session` on items stacked along axis 0 of every array in `feeds` (`shared` inputs go as they are):
    one call when the batch axis is dynamic, else one call per item. Returns every output, stacked per item."""
    count = len(next(iter(feeds.values())))
    if count == 0:
        raise ValueError("no items to run")
    shared = dict(shared or {})
    if batched is None:
        batched = batch_allowed(session, tuple(shared))
    if batched or count == 1:
        return list(session.run(None, {**feeds, **shared}))
    per_item = [session.run(None, {**{name: value[i:i + 1] for name, value in feeds.items()}, **shared})
                for i in range(count)]
    return [np.concatenate([outputs[k] for outputs in per_item]) for k in range(len(per_item[0]))]


def stack(crops: Sequence[np.ndarray]) -> np.ndarray:
    return np.stack([np.asarray(crop) for crop in crops])


class MergedRuns:
    """A session whose `run` calls from many frame threads are merged into one model call along the batch
    axis, so faces from all frames share calls. `make_batcher(fn)` returns a callable taking one call's
    feeds and returning its outputs, gathering calls into `fn(list of feeds) -> list of outputs` (the
    pipeline's MicroBatcher fits). Inputs named in `shared` (CodeFormer's `weight`) are not stacked: calls
    are merged only with calls that feed the same values. Use it only for a model with a dynamic batch axis."""

    def __init__(self, session: Any, make_batcher: Any, shared: Sequence[str] = ("weight",)) -> None:
        self._session, self._shared = session, tuple(shared)
        if not batch_allowed(session, self._shared):
            raise ValueError("merged runs need a model with a dynamic batch axis")
        self._batcher = make_batcher(self._run_merged)

    def get_inputs(self) -> Any:
        return self._session.get_inputs()

    def run(self, output_names: Any, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        if output_names is not None:
            raise ValueError("merged runs return every output; pass None")
        return self._batcher(dict(feeds))

    def _run_merged(self, calls: list[dict[str, np.ndarray]]) -> list[list[np.ndarray]]:
        results: list[list[np.ndarray] | None] = [None] * len(calls)
        groups: dict[bytes, list[int]] = {}
        for index, feeds in enumerate(calls):
            key = b"".join(np.ascontiguousarray(feeds[name]).tobytes() for name in self._shared if name in feeds)
            groups.setdefault(key, []).append(index)
        for indices in groups.values():
            first = calls[indices[0]]
            stacked = {name: np.concatenate([calls[i][name] for i in indices])
                       for name in first if name not in self._shared}
            shared = {name: first[name] for name in self._shared if name in first}
            outputs = self._session.run(None, {**stacked, **shared})
            start = 0
            for i in indices:
                count = len(next(v for k, v in calls[i].items() if k not in self._shared))
                results[i] = [out[start:start + count] for out in outputs]
                start += count
        return results  # type: ignore[return-value]

"""Face swapper adapter for every FaceFusion swapper family: source identity in the model's form, target
crops (pixel-boost tiles) batched over faces, output back to BGR crops in 0..255."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import cv2
import numpy as np

from facefusion_batch.faces.geometry import WARP_TEMPLATES, align_matrix, warp_crop
from facefusion_batch.models.catalog import ModelSpec
from facefusion_batch.processors import pixel_boost
from facefusion_batch.processors.tensors import run_stacked, to_tensor

# Kinds whose output is in the model's normalised range (undo mean/std); the others return RGB in [0, 1].
_DENORMALISED = ("ghost", "hififace", "hyperswap", "uniface")
# Kinds whose source is an aligned image of the source face (template, size) instead of an embedding.
_SOURCE_IMAGE = {"blendswap": ("arcface_112_v2", 112), "uniface": ("ffhq_512", 256)}
# Kinds whose target embedding is unit-normalised before the weight mixes it in.
_UNIT_TARGET = ("hififace", "hyperswap", "inswapper", "simswap")


@dataclass(frozen=True)
class SwapperOptions:
    """`weight` 0..1 is FaceFusion's `face_swapper_weight` (0.5: the source identity as is; towards 1 more of
    the target's own identity, towards 0 a stronger source); `boost` is the crop size (pixel boost)."""

    model: str = "hyperswap_1a_256"
    weight: float = 0.5
    boost: int | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.weight <= 1:
            raise ValueError(f"face swapper weight must be 0..1 (got {self.weight})")


def average_identity(raw_embeddings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Several source faces (`-s a.jpg -s b.jpg`) as one identity, as FaceFusion averages them: the mean of
    the raw embeddings and the mean of the unit embeddings (pass both to `Swapper.source_input`)."""
    raw = np.asarray(raw_embeddings, dtype=np.float32).reshape(-1, 512)
    unit = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    return raw.mean(0), unit.mean(0)


def weighs_identity(spec: ModelSpec) -> bool:
    """Whether `face_swapper_weight` changes this model's output: not for blendswap/uniface, which take the
    source face as an image (FaceFusion ignores the weight there too)."""
    return spec.kind not in _SOURCE_IMAGE


def output_range(spec: ModelSpec) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(mean, std) that map the model's output back to RGB in [0, 1] (x * std + mean)."""
    if spec.kind in _DENORMALISED:
        return tuple(spec.mean), tuple(spec.std)
    return (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)


def weight_factor(weight: float) -> float:
    """FaceFusion maps the weight 0..1 to a mixing factor 0.35..-0.35 (0 at 0.5)."""
    return float(np.interp(weight, [0.0, 1.0], [0.35, -0.35]))


class Swapper:
    """`session` is the swapper (inputs `target`, `source`); `converter` the embedding converter session for
    ghost/simswap/hififace; `emap` inswapper's embedding map (the graph's last initializer)."""

    def __init__(self, session: Any, spec: ModelSpec, options: SwapperOptions, converter: Any = None,
                 emap: np.ndarray | None = None) -> None:
        if spec.kind is None:
            raise ValueError(f"{spec.name} is not a face swapper")
        if spec.converter and converter is None:
            raise ValueError(f"{spec.name} needs its embedding converter {spec.converter}")
        if spec.kind == "inswapper" and emap is None:
            raise ValueError(f"{spec.name} needs its embedding map (read_emap)")
        self.spec, self.options = spec, options
        self.size = pixel_boost.check_boost(spec, options.boost or spec.size)
        self.template = WARP_TEMPLATES[spec.template or "arcface_128"]
        self._session, self._converter, self._emap = session, converter, emap

    @property
    def session(self) -> Any:
        """The swapper model's session (the device path calls it with values on the device)."""
        return self._session

    # -- source identity (once per source) ---------------------------------------------------------------

    def source_input(self, embedding: np.ndarray | None = None, frame: np.ndarray | None = None,
                     kps: np.ndarray | None = None, unit: np.ndarray | None = None) -> np.ndarray:
        """The `source` feed (1, D) for this model: from the raw ArcFace `embedding` of the source face, or for
        blendswap/uniface from the source `frame` and the face's 5 keypoints (FaceFusion takes the first
        source image there). `unit`: the averaged unit embedding of several sources (`average_identity`),
        which hyperswap takes as it is."""
        kind = self.spec.kind
        if kind in _SOURCE_IMAGE:
            if frame is None or kps is None:
                raise ValueError(f"{self.spec.name} takes the source face as an image: pass frame and kps")
            template, size = _SOURCE_IMAGE[kind]
            crop = warp_crop(frame, align_matrix(kps, WARP_TEMPLATES[template], size), size)
            return np.ascontiguousarray(crop[None, :, :, ::-1].astype(np.float32).transpose(0, 3, 1, 2) / 255.0)
        if embedding is None:
            raise ValueError(f"{self.spec.name} takes the source face's ArcFace embedding")
        raw = np.asarray(embedding, dtype=np.float32).reshape(1, -1)
        if kind == "hyperswap":
            return np.asarray(unit, np.float32).reshape(1, -1) if unit is not None else raw / np.linalg.norm(raw)
        if kind == "inswapper":
            return (raw @ self._emap) / np.linalg.norm(raw)
        converted = run_stacked(self._converter, {"input": raw})[0].reshape(1, -1).astype(np.float32)
        return converted if kind == "ghost" else converted / np.linalg.norm(converted)

    def balance(self, source: np.ndarray, target_embeddings: np.ndarray | None, count: int) -> np.ndarray:
        """(count, D) source rows, one per face, each mixed with that face's own identity per the weight."""
        factor = weight_factor(self.options.weight)
        rows = np.repeat(source.reshape(1, *source.shape[1:]), count, axis=0).astype(np.float32)
        if factor == 0.0 or self.spec.kind in _SOURCE_IMAGE:
            return rows
        if target_embeddings is None:
            raise ValueError("face swapper weight other than 0.5 needs the target faces' embeddings")
        target = np.asarray(target_embeddings, dtype=np.float32).reshape(count, -1)
        if self.spec.kind in _UNIT_TARGET:
            target = target / np.linalg.norm(target, axis=1, keepdims=True)
        return (rows * (1 - factor) + target * factor).astype(np.float32)

    # -- target crops ----------------------------------------------------------------------------------------

    def swap(self, crops: Sequence[np.ndarray], source: np.ndarray,
             target_embeddings: np.ndarray | None = None) -> list[np.ndarray]:
        """Swapped (size, size, 3) BGR float32 crops (0..255) for BGR uint8 crops warped with `self.template`
        at `self.size`; all faces' pixel-boost tiles go through the model together where it allows a batch."""
        if not crops:
            return []
        model = self.spec.size
        tiles = [pixel_boost.split(np.asarray(crop), model) for crop in crops]
        per_face = len(tiles[0])
        rows = self.balance(source, target_embeddings, len(crops))
        feeds = {"target": to_tensor(np.concatenate(tiles), self.spec),
                 "source": np.repeat(rows, per_face, axis=0)}
        out = run_stacked(self._session, feeds)[0]
        images = self._from_output(out)
        return [pixel_boost.join(images[i * per_face:(i + 1) * per_face]) for i in range(len(crops))]

    def _from_output(self, out: np.ndarray) -> np.ndarray:
        """(N, 3, H, W) model output -> (N, H, W, 3) BGR float32 0..255, in place on one interleaved copy."""
        planes = np.asarray(out, dtype=np.float32)
        if self.spec.kind in _DENORMALISED:
            planes = planes * np.asarray(self.spec.std, dtype=np.float32).reshape(1, 3, 1, 1) \
                + np.asarray(self.spec.mean, dtype=np.float32).reshape(1, 3, 1, 1)
        image = np.stack([cv2.merge([p[2], p[1], p[0]]) for p in planes])
        np.clip(image, 0, 1, out=image)
        image *= 255.0
        return image

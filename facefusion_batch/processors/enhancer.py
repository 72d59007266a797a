"""Face enhancer adapter (GFPGAN, GPEN-BFR, CodeFormer, RestoreFormer++): RGB in [-1, 1] at the model's size
and template, batched over faces where the model allows; CodeFormer also takes its fidelity `weight`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import cv2
import numpy as np

from facefusion_batch.faces.geometry import WARP_TEMPLATES
from facefusion_batch.models.catalog import ModelSpec
from facefusion_batch.processors.tensors import run_stacked, to_tensor


@dataclass(frozen=True)
class EnhancerOptions:
    """`blend` 0..100: how much of the enhanced face replaces the frame (FaceFusion's default 80); `weight`
    0..1: CodeFormer's fidelity input (FaceFusion's `face_enhancer_weight`, default 0.5; other models ignore
    it as FaceFusion does, since they have no such input)."""

    model: str = "gfpgan_1.4"
    blend: int = 80
    weight: float = 0.5

    def __post_init__(self) -> None:
        if not 0 <= self.blend <= 100:
            raise ValueError(f"face enhancer blend must be 0..100 (got {self.blend})")
        if not 0 <= self.weight <= 1:
            raise ValueError(f"face enhancer weight must be 0..1 (got {self.weight})")


class Enhancer:
    def __init__(self, session: Any, spec: ModelSpec, options: EnhancerOptions) -> None:
        if spec.family != "enhancer":
            raise ValueError(f"{spec.name} is not a face enhancer")
        self.spec, self.options = spec, options
        self.size = spec.size
        self.template = WARP_TEMPLATES[spec.template or "ffhq_512"]
        self._session = session
        names = [i.name for i in session.get_inputs()]
        # CodeFormer's fidelity: a float64 (1,) input named `weight`, shared by every face of a call.
        self._shared = {"weight": np.array([options.weight], dtype=np.float64)} if "weight" in names else {}

    @property
    def session(self) -> Any:
        return self._session

    @property
    def shared_feeds(self) -> dict[str, np.ndarray]:
        """Inputs fed once per call whatever the faces (CodeFormer's `weight`)."""
        return dict(self._shared)

    def enhance(self, crops: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Enhanced (size, size, 3) BGR float32 crops (whole numbers 0..255, as FaceFusion rounds them)."""
        if not crops:
            return []
        batch = to_tensor(np.stack([np.asarray(c) for c in crops]), self.spec)
        out = run_stacked(self._session, {"input": batch}, self._shared)[0]
        return [_to_bgr(planes) for planes in np.asarray(out, dtype=np.float32)]


def _to_bgr(planes: np.ndarray) -> np.ndarray:
    """(3, H, W) RGB in [-1, 1] -> (H, W, 3) BGR float32 whole numbers 0..255: rint((clip + 1) / 2 * 255),
    the same arithmetic as FaceFusion's, done in place on one interleaved copy (cv2.merge) instead of numpy
    temporaries the size of the face at each step."""
    image = cv2.merge([planes[2], planes[1], planes[0]])
    np.clip(image, -1, 1, out=image)
    image += 1
    image *= 127.5  # (x + 1) * 127.5 is (x + 1) / 2 * 255 to the bit: halving is exact
    return np.rint(image, out=image)

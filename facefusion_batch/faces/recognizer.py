"""ArcFace recogniser: aligned 112 crops of all faces of a frame in one batched call, unit embeddings."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from facefusion_batch.faces.geometry import align_matrix, warp_crop
from facefusion_batch.faces.types import Face
from facefusion_batch.models.catalog import TEMPLATES, ModelSpec


def crop_tensor(crop: np.ndarray, spec: ModelSpec) -> np.ndarray:
    """HWC uint8 BGR crop -> CHW float32 normalised as the model expects."""
    image = crop[:, :, ::-1] if spec.rgb else crop
    mean = np.asarray(spec.mean, dtype=np.float32)
    std = np.asarray(spec.std, dtype=np.float32)
    return ((image.astype(np.float32) / 255.0 - mean) / std).transpose(2, 0, 1)


class ArcFaceRecognizer:
    def __init__(self, session: Any, spec: ModelSpec) -> None:
        self._session = session
        self._spec = spec
        self._input = session.get_inputs()[0].name
        self._template = TEMPLATES[spec.template or "arcface_112_v2"]

    def embed(self, frame: np.ndarray, faces: Sequence[Face]) -> np.ndarray:
        """(N, 512) unit-length embeddings, one per face."""
        raw = self.embed_raw(frame, faces)
        return raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)

    def embed_raw(self, frame: np.ndarray, faces: Sequence[Face]) -> np.ndarray:
        """(N, 512) embeddings as the model returns them: the ghost swappers' converter and FaceFusion's
        swapper weight use the unnormalised vector."""
        if not faces:
            return np.zeros((0, 512), dtype=np.float32)
        size = self._spec.size
        batch = np.stack([crop_tensor(warp_crop(frame, align_matrix(f.kps, self._template, size), size),
                                      self._spec) for f in faces])
        return self._session.run(None, {self._input: batch})[0].reshape(len(faces), -1).astype(np.float32)

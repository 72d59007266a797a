"""inswapper-class neural swapper: aligned 128 crop + source latent -> swapped crop, pasted back."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from facefusion_batch.faces.geometry import align_matrix, feather_mask, paste_back, warp_crop
from facefusion_batch.faces.recognizer import crop_tensor
from facefusion_batch.faces.types import Face
from facefusion_batch.models.catalog import TEMPLATES, ModelSpec
from facefusion_batch.models.dynamic_batch import has_dynamic_batch
from facefusion_batch.models.batcher import MicroBatcher


def read_emap(path: Path) -> np.ndarray:
    """The 512x512 matrix that maps an ArcFace embedding to the swapper's latent: the last initializer."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path), load_external_data=False)
    return numpy_helper.to_array(model.graph.initializer[-1]).astype(np.float32)


class InSwapper:
    """With `batch_size` > 1 and a session whose batch axis is dynamic, crops from all worker threads are
    gathered into one call (micro-batching); otherwise each face is one call."""

    def __init__(self, session: Any, spec: ModelSpec, emap: np.ndarray, batch_size: int = 1,
                 batch_wait: float = 0.002, producers: int | None = None) -> None:
        self._session = session
        self._spec = spec
        self._emap = emap
        self._template = TEMPLATES[spec.template or "arcface_128"]
        self._mask = feather_mask(spec.size)
        self._scratch = threading.local()
        self.batcher: MicroBatcher | None = None
        if batch_size > 1 and has_dynamic_batch(session):
            self.batcher = MicroBatcher(self._run_batch, batch_size, batch_wait, "ffb-swap-batcher", producers)

    def close(self) -> None:
        if self.batcher is not None:
            self.batcher.close()

    def latent(self, embedding: np.ndarray) -> np.ndarray:
        """Source latent from an (unnormalised or unit) ArcFace embedding: emb @ emap / |emb|."""
        emb = embedding.reshape(1, -1).astype(np.float32)
        return (emb @ self._emap) / np.linalg.norm(emb)

    def swap(self, frame: np.ndarray, faces: Sequence[Face], latent: np.ndarray) -> np.ndarray:
        """Swap every face in `faces` into `frame` in place and return it."""
        size = self._spec.size
        matrices = [align_matrix(face.kps, self._template, size) for face in faces]
        crops = [crop_tensor(warp_crop(frame, matrix, size), self._spec) for matrix in matrices]
        if self.batcher is not None:
            results = self.batcher.map([(crop, latent) for crop in crops])
        else:
            results = [self._run_one(crop, latent) for crop in crops]
        for matrix, result in zip(matrices, results):
            swapped = np.clip(result.transpose(1, 2, 0) * 255.0, 0, 255).astype(np.uint8)
            if self._spec.rgb:
                swapped = swapped[:, :, ::-1]
            paste_back(frame, np.ascontiguousarray(swapped), self._mask, matrix)
        return frame

    def _run_one(self, crop: np.ndarray, latent: np.ndarray) -> np.ndarray:
        target = self._buffer(self._spec.size)
        target[0] = crop
        return self._session.run(None, {"target": target, "source": latent})[0][0]

    def _run_batch(self, items: list[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        target = np.stack([crop for crop, _ in items])
        source = np.concatenate([latent for _, latent in items])
        return list(self._session.run(None, {"target": target, "source": source})[0])

    def _buffer(self, size: int) -> np.ndarray:
        # One input tensor per worker thread, reused for every face it swaps.
        buffer = getattr(self._scratch, "target", None)
        if buffer is None:
            buffer = self._scratch.target = np.empty((1, 3, size, size), dtype=np.float32)
        return buffer

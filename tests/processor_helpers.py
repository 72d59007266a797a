"""Helpers for the processor adapter tests: a session wrapper that records what the model was fed, and a real
face placed so its alignment is a pure integer translation (crop pixels are frame pixels)."""
from __future__ import annotations

import cv2
import numpy as np

from conftest import astronaut_face, cpu_session
from facefusion_batch.faces.geometry import WARP_TEMPLATES
from facefusion_batch.faces.types import Face


class Recorder:
    """Wraps a session; keeps every feed dict and counts calls."""

    def __init__(self, path) -> None:
        self.session = cpu_session(path)
        self.feeds: list[dict] = []

    def run(self, names, feeds):
        self.feeds.append({k: np.array(v) for k, v in feeds.items()})
        return self.session.run(names, feeds)

    def get_inputs(self):
        return self.session.get_inputs()

    @property
    def calls(self) -> int:
        return len(self.feeds)


def real_frame(height: int = 480, width: int = 640) -> np.ndarray:
    """A textured frame with the astronaut's real face in the middle (BGR)."""
    rng = np.random.default_rng(3)
    frame = cv2.GaussianBlur(rng.integers(30, 220, (height, width, 3), dtype=np.uint8), (0, 0), 2)
    face = cv2.resize(astronaut_face(), (260, 300))
    y, x = (height - 300) // 2, (width - 260) // 2
    frame[y:y + 300, x:x + 260] = face
    return frame


def translated_face(template: str, size: int, offset: tuple[int, int]) -> Face:
    """A face whose 5 points sit exactly on `template` scaled to `size` and shifted by `offset`, so the crop
    of that template and size is frame[oy:oy+size, ox:ox+size]."""
    kps = WARP_TEMPLATES[template].astype(np.float64) * size + np.array(offset, dtype=np.float64)
    box = np.array([offset[0], offset[1], offset[0] + size, offset[1] + size], dtype=np.float32)
    return Face(box=box, score=0.9, kps=kps.astype(np.float32))

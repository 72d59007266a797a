"""The face record every stage passes along."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Face:
    """One detected face in frame pixels. `kps` are 5 points: eyes, nose, mouth corners (image left first)."""

    box: np.ndarray  # (4,) x1, y1, x2, y2
    score: float
    kps: np.ndarray  # (5, 2)
    # (468, 2|3) mesh points for the offline engine; (68, 2) for the neural engine when the area mask is on
    # (processors/landmarker.py). Face tracks smooth them with the keypoints and box.
    landmarks: np.ndarray | None = None
    # The face's track's memory (faces/tracking.py: one dict per track, shared by its faces of every frame), for
    # decisions an engine makes per track rather than per frame; None for a face of no track (an image).
    memo: dict | None = field(default=None, compare=False, repr=False)
    leave: bool = False  # decided by its track (an engine's `settle`): left as it is, and counted so
    # Decided by its track too (the offline engine's `settle`): swapped with the source's mirror image, the face
    # being turned the other way than the source's.
    mirror: bool = False
    # Decided by its track too (the offline engine's `settle`): swapped with the source's photo as it was taken (or
    # its mirror image, with `mirror`), not its face turned to the camera, the face being turned nearer the photo's
    # pose than the camera's.
    posed: bool = False
    # Decided by its track too (the offline engine's `settle`): how much of the source's own detail depth its swap
    # keeps, from 0, toned to the face's light, to 1, the source's own, as much as needed where toned it would be too
    # faint to see (a small, dim face).
    own_depth: float = 0.0
    # (a frame, that frame with this face swapped), made while its track decided (an engine's `settle`): the swap
    # reuses it when it is given that very frame, untouched.
    swapped: tuple[np.ndarray, np.ndarray] | None = field(default=None, compare=False, repr=False)
    # How much of its swap to show, 1: all (faces/tracking.py `Tracker.opacity`: a face leaving the picture, or
    # mode `one`'s next choice fading in).
    opacity: float = 1.0
    # How far the face moved since the frame before (pixels; its track's motion): the smear a fast face has.
    motion: tuple[float, float] = (0.0, 0.0)
    # Its landmarks are a template placed on a detector's keypoints, not a mesh fitted on the face (the offline
    # engine's small faces the mesh cannot see, offline/face_template.py): such a face only starts a track of its
    # own, never stands in for a track's fitted face (faces/tracking.py).
    templated: bool = False

    @property
    def area(self) -> float:
        return float(max(0.0, self.box[2] - self.box[0]) * max(0.0, self.box[3] - self.box[1]))

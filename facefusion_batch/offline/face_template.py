"""A face mesh placed on a detector's keypoints, for a small face the face mesh cannot fit.

On a soft face of 25-35 px (a blurred photo on a far wall) the detectors find it (0.5-0.6) while the 468-point mesh,
asked on every crop it is tried on, says "no face" (presence 0.0004-0.002): the face was left as it is on every frame
(tune split's far crowd and crowd pan: one face, 150 of the split's 297 missed face-frames). At that size the mesh's
detail adds nothing the swap can show; the template placed by the similarity that takes its eyes, nose tip and mouth
centre onto the detector's does as well.

`face_template.npy` (in the packaged assets/mediapipe folder) is MediaPipe's mesh fitted on two frontal faces in
the public domain (Grace Hopper, examples/source.jpg; the astronaut of scikit-image's data), each at two sizes,
every fit moved so that the mean of its eyes, nose tip and mouth centre is at 0 with its eyes level one unit apart
(depth on the same scale, centred), averaged, and made left-right symmetric (`mesh_symmetry.MIRROR`).
"""

from __future__ import annotations

import functools

import numpy as np

from facefusion_batch.faces.geometry import similarity_transform
from facefusion_batch.offline.mediapipe import NUM_LANDMARKS, asset_path, five_points, four_points

TEMPLATE_FILE = "face_template.npy"


@functools.cache
def template() -> np.ndarray:
    """(468, 3) float64: the template mesh (see the module's docstring)."""
    mesh = np.load(asset_path(TEMPLATE_FILE)).astype(np.float64)
    if mesh.shape != (NUM_LANDMARKS, 3):
        raise ValueError(f"{TEMPLATE_FILE}: expected {NUM_LANDMARKS} x 3 points, got {mesh.shape}")
    return mesh


def features(points: np.ndarray) -> np.ndarray:
    """(4, 2): a mesh's eyes, nose tip and mouth centre (from its five points), in a detection's keypoint order."""
    return four_points(five_points(np.asarray(points)[None])[0])


def placed(keypoints: np.ndarray) -> np.ndarray:
    """(468, 3) float32 mesh points in frame pixels: the template moved by the similarity that best takes its eyes,
    nose tip and mouth centre onto `keypoints[:4]` (a detection's: right eye, left eye, nose tip, mouth centre);
    depth scaled alike."""
    mesh = template()
    matrix = _placing(keypoints)
    points = np.empty_like(mesh)
    points[:, :2] = mesh[:, :2] @ matrix[:, :2].T + matrix[:, 2]
    points[:, 2] = mesh[:, 2] * float(np.hypot(matrix[0, 0], matrix[1, 0]))
    return points.astype(np.float32)


def misfit(keypoints: np.ndarray) -> float:
    """How far a detection's eyes, nose tip and mouth centre (`keypoints[:4]`) lie from the template's placed on them
    (`placed`), at most, in parts of the placed template's eye distance: ~0.1 on a frontal face, ~0.5 on one in
    profile (its eyes squeezed together above the mouth, its nose off to one side)."""
    target = np.asarray(keypoints, np.float64)[:4]
    matrix = _placing(keypoints)
    fitted = features(template()) @ matrix[:, :2].T + matrix[:, 2]
    scale = float(np.hypot(matrix[0, 0], matrix[1, 0]))
    return float(np.linalg.norm(fitted - target, axis=1).max() / max(scale, 1e-9))


def _placing(keypoints: np.ndarray) -> np.ndarray:
    """The similarity (2 x 3) that best takes the template's eyes, nose tip and mouth centre onto `keypoints[:4]`."""
    return similarity_transform(features(template()), np.asarray(keypoints, np.float64)[:4]).astype(np.float64)

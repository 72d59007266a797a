"""A face mesh placed on a detector's keypoints, for a small face the face mesh cannot fit.

On a soft face of 25-35 px (a blurred photo on a far wall) the detectors find it (0.5-0.6) while the 468-point mesh,
asked on every crop it is tried on, says "no face" (presence 0.0004-0.002): the face was left as it is on every frame
(tune split's far crowd and crowd pan: one face, 150 of the split's 297 missed face-frames). At that size the mesh's
detail adds nothing the swap can show; the template, turned about its upright axis and moved by the similarity that
takes its eyes, nose tip and mouth centre onto the detector's, does as well (`placed`).

`face_template.npy` (in the packaged assets/mediapipe folder) is MediaPipe's mesh fitted on two frontal faces in
the public domain (Grace Hopper, examples/source.jpg; the astronaut of scikit-image's data), each at two sizes,
every fit moved so that the mean of its eyes, nose tip and mouth centre is at 0 with its eyes level one unit apart
(depth on the same scale, centred), averaged, and made left-right symmetric (`mesh_symmetry.MIRROR`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from facefusion_batch.faces.geometry import similarity_factors
from facefusion_batch.offline.mediapipe import NUM_LANDMARKS, asset_path, five_points, four_points

TEMPLATE_FILE = "face_template.npy"
# The template is turned up to YAW_MOST degrees either way, by YAW_STEP, to fit a detection's points (beyond ~55
# degrees a face is left as a profile: classic.PROFILE). 2 degrees moves a 45 px face's points by a fifth of a pixel.
YAW_MOST, YAW_STEP = 70.0, 2.0


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


class Placed(NamedTuple):
    """The template turned and moved onto a detection's keypoints (`placed`)."""

    points: np.ndarray  # (468, 3) float32 mesh points in frame pixels, depth on the same scale
    yaw: float  # degrees the template was turned about its upright axis to fit (positive: `classic.turn` < 0)
    # How far the keypoints lie from the template's placed on them unturned, at most, in parts of its eye distance: ~0.1
    # on a frontal face, ~0.25 on one turned 40 degrees, ~0.5 on one in profile (its eyes squeezed together above the
    # mouth, its nose off to one side).
    frontal_misfit: float


def placed(keypoints: np.ndarray) -> Placed:
    """The template turned about its upright axis by the yaw (within YAW_MOST) and moved by the similarity that best
    takes its eyes, nose tip and mouth centre onto `keypoints[:4]` (a detection's: right eye, left eye, nose tip, mouth
    centre), the yaw whose template fits them best. A turned face's eyes lie closer together and its nose off to one
    side: the frontal template placed on them lay ~0.3 of the eye distance off the mesh fitted on faces turned 35-50
    degrees (the tuning splits' photos, shrunk to 34-45 px), the turned one ~0.2, and as close as before on frontal
    faces. The yaw is no test of a face in profile: the detectors' points on one fitted 38-70 degrees."""
    yaws, meshes, features_at = _turned()
    target = np.asarray(keypoints, np.float64)[:4]
    factors = similarity_factors(features_at, target)  # (Y,)
    shifts = target.mean(axis=0) @ [1, 1j] - factors * (features_at.mean(axis=1) @ [1, 1j])
    matrices = np.stack([np.stack([factors.real, -factors.imag, shifts.real], axis=1),
                         np.stack([factors.imag, factors.real, shifts.imag], axis=1)], axis=1)  # (Y, 2, 3)
    scales = np.hypot(matrices[:, 0, 0], matrices[:, 1, 0])
    fitted = np.einsum("yfk,yjk->yfj", features_at, matrices[:, :, :2]) + matrices[:, None, :, 2]
    misfits = np.linalg.norm(fitted - target, axis=2).max(axis=1) / np.maximum(scales, 1e-9)
    best = int(np.argmin(misfits))
    matrix, mesh = matrices[best], meshes[best]
    points = np.empty_like(mesh)
    points[:, :2] = mesh[:, :2] @ matrix[:, :2].T + matrix[:, 2]
    points[:, 2] = mesh[:, 2] * scales[best]
    return Placed(points.astype(np.float32), float(yaws[best]), float(misfits[np.abs(yaws).argmin()]))


@functools.cache
def _turned() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The yaws from -YAW_MOST to YAW_MOST by YAW_STEP, the template turned by each ((Y, 468, 3)), and its eyes, nose
    tip and mouth centre seen from the front ((Y, 4, 2))."""
    yaws = np.arange(-YAW_MOST, YAW_MOST + YAW_STEP / 2, YAW_STEP)
    angles = np.radians(yaws)
    cos, sin = np.cos(angles)[:, None], np.sin(angles)[:, None]
    mesh = template()
    x, y, z = mesh[:, 0], mesh[:, 1], mesh[:, 2]
    meshes = np.stack([cos * x + sin * z, np.broadcast_to(y, (len(yaws), len(y))), cos * z - sin * x], axis=2)
    return yaws, meshes, np.stack([features(m[:, :2]) for m in meshes])

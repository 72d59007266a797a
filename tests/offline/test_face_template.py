"""offline/face_template.py: the template mesh placed on a detector's keypoints (small faces the mesh cannot fit)."""
from __future__ import annotations

import cv2
import numpy as np
import pytest
import skimage.data

from conftest import cpu_session
from facefusion_batch.offline import face_template
from facefusion_batch.offline import mediapipe as mp
from facefusion_batch.offline.mesh_symmetry import MIRROR


def test_the_template_is_a_level_left_right_symmetric_face_its_eyes_one_unit_apart():
    mesh = face_template.template()
    features = face_template.features(mesh)
    assert features[0, 1] == pytest.approx(features[1, 1], abs=1e-3)  # eyes level
    assert features[1, 0] - features[0, 0] == pytest.approx(1.0, abs=0.02)
    assert np.abs(features.mean(axis=0)).max() < 0.02
    mirrored = mesh[MIRROR] * (-1, 1, 1)
    assert np.abs(mirrored - mesh).max() < 1e-5


@pytest.mark.parametrize(("scale", "roll"), [(1.0, 0.0), (0.25, 20.0), (0.15, -15.0)])
def test_placed_on_a_detected_faces_keypoints_the_template_lies_on_the_mesh_fitted_there(scale: float, roll: float):
    # The astronaut, shrunk and rolled: the template placed on the detector's keypoints lies within 0.15 of the eye
    # distance of the fitted mesh on average (0.06-0.12 measured), nowhere beyond 0.35 (0.13-0.22).
    image = cv2.cvtColor(skimage.data.astronaut(), cv2.COLOR_RGB2BGR)
    image = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    matrix = cv2.getRotationMatrix2D((image.shape[1] / 2, image.shape[0] / 2), roll, 1.0)
    image = cv2.warpAffine(image, matrix, image.shape[1::-1], borderMode=cv2.BORDER_REFLECT)
    detector = mp.MediaPipeDetector(cpu_session(mp.asset_path(mp.MODEL_FILES["long_range"])),
                                    cpu_session(mp.asset_path(mp.MODEL_FILES["short_range"])))
    (detection,) = detector.detect([image])[0]
    landmarker = mp.MediaPipeLandmarker(cpu_session(mp.asset_path(mp.MODEL_FILES["landmarks"])))
    fitted = landmarker.predict(image, [detection]).points[0]
    placed = face_template.placed(detection.keypoints)
    eyes = float(np.linalg.norm(np.subtract(*face_template.features(fitted)[:2])))
    apart = np.linalg.norm(placed[:, :2] - fitted[:, :2], axis=1) / eyes
    assert apart.mean() < 0.15 and apart.max() < 0.35

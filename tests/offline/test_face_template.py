"""offline/face_template.py: the template mesh placed on a detector's keypoints (small faces the mesh cannot fit)."""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from conftest import astronaut_photo, cpu_session, hopper_processor
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
    image = astronaut_photo()
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


# The detectors' eyes, nose tip and mouth centre on `fresh`'s shouting soldier in profile (the quality benchmark's
# f_group_far, frame 23, a 42 px box at (470, 94)): squeezed together above the mouth, the nose off to one side.
SOLDIER = np.array([[489.4, 108.5], [492.5, 107.5], [480.4, 116.3], [485.9, 124.9]])


def test_a_face_in_profile_misfits_the_template_and_a_frontal_one_does_not():
    # A frontal template placed on the soldier's points pasted a face over his cheek and ear; he is not templated.
    from facefusion_batch.engines.offline import TEMPLATE_MISFIT

    assert face_template.misfit(SOLDIER) > 1.5 * TEMPLATE_MISFIT
    assert face_template.misfit(face_template.features(face_template.template())) < 1e-6
    image = astronaut_photo()
    detector = mp.MediaPipeDetector(cpu_session(mp.asset_path(mp.MODEL_FILES["long_range"])),
                                    cpu_session(mp.asset_path(mp.MODEL_FILES["short_range"])))
    for scale in (1.0, 0.5, 0.25):  # the astronaut, frontal, down to a 30 px face
        small = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        (detection,) = detector.detect([small])[0]
        assert face_template.misfit(detection.keypoints) < TEMPLATE_MISFIT / 1.5, scale


def test_the_offline_engine_templates_a_small_frontal_face_and_not_one_in_profile(tmp_path, monkeypatch):
    soldier = np.vstack([SOLDIER, [[500, 110], [500, 110]]])  # his ears, unused
    frontal = np.array([[480.0, 108.0], [493.0, 108.0], [486.5, 115.0], [486.5, 122.0], [474, 110], [499, 110]])
    box = np.array([470.2, 93.9, 511.8, 135.4], np.float32)
    frame = np.full((240, 640, 3), 128, np.uint8)
    with hopper_processor(tmp_path) as processor:
        engine = processor.engine
        for points, templated in ((frontal, 1), (soldier, 0)):
            found = mp.Detection(box, 0.56, points.astype(np.float32))
            # the detectors' closer looks see it again where it was (the engine's other conditions met)
            monkeypatch.setattr(engine._detector, "look_at", lambda frame, boxes, d=found: [d] * len(boxes))
            monkeypatch.setattr(engine._detector, "look_short", lambda frame, boxes, d=found: [d] * len(boxes))
            assert len(engine._templated(frame, [found])) == templated

"""FaceFusion 3.8.1's other detectors and its detection options: RetinaFace, YuNet and `many` (RetinaFace, SCRFD
and YOLOFace at once), face_detector_angles and face_detector_margin. Facts from its face_detector.py,
face_creator.py and face_helper.py (decoding, normalisation, rotation, margin, NMS thresholds); the stand-ins
(tests/standins.py) have the real files' tensor names, shapes and layouts, and find nothing when fed the
wrong channel order or normalisation."""
from __future__ import annotations

import dataclasses
import json

import cv2
import numpy as np
import pytest

from conftest import FACE_BOX, FACE_KPS, cpu_session, face_frame
from facefusion_batch.cli import main
from facefusion_batch.errors import SettingsError
from facefusion_batch.faces.detectors import (FaceDetection, RetinaFaceDetector, ScrfdDetector, YoloFaceDetector,
                                              YunetDetector, margins, nms_threshold, rotation)
from facefusion_batch.models.catalog import CATALOG, DETECTORS_FOR
from facefusion_batch.models.signature import check_model
from facefusion_batch.settings import load_settings

ADAPTERS = {"scrfd_2.5g": ScrfdDetector, "yoloface_8n": YoloFaceDetector, "retinaface_10g": RetinaFaceDetector,
            "yunet_2023_mar": YunetDetector}


def adapter(models, name, **spec):
    return ADAPTERS[name](cpu_session(models / f"{name}.onnx"), dataclasses.replace(CATALOG[name], **spec), 640, 0.5)


@pytest.mark.parametrize("name", ["retinaface_10g", "yunet_2023_mar"])
def test_new_detectors_find_the_face_in_frame_pixels(neural_models, name):
    check_model(CATALOG[name], neural_models / f"{name}.onnx")  # the catalog's signature is the stand-in's
    faces = adapter(neural_models, name).detect([face_frame()])[0]
    assert len(faces) == 1
    np.testing.assert_allclose(faces[0].box, FACE_BOX, atol=0.5)
    np.testing.assert_allclose(faces[0].kps, FACE_KPS, atol=0.5)
    assert adapter(neural_models, name).detect([np.full_like(face_frame(), 80)])[0] == []


@pytest.mark.parametrize("name, wrong", [
    ("retinaface_10g", {"rgb": True}),  # channels swapped
    ("retinaface_10g", {"mean": (0.0,) * 3, "std": (1.0,) * 3}),  # x / 255 instead of (x - 127.5) / 128
    ("yunet_2023_mar", {"rgb": True}),
    ("yunet_2023_mar", {"mean": (0.5,) * 3, "std": (128 / 255,) * 3}),  # normalised; YuNet takes 0..255
])
def test_the_standins_see_wrong_preprocessing(neural_models, name, wrong):
    assert adapter(neural_models, name, **wrong).detect([face_frame()])[0] == []


def test_many_runs_three_detectors_and_keeps_one_box_per_face(neural_models):
    detectors = [adapter(neural_models, name) for name in DETECTORS_FOR["many"]]
    assert DETECTORS_FOR["many"] == ("retinaface_10g", "scrfd_2.5g", "yoloface_8n")
    faces = FaceDetection(detectors).detect([face_frame()])[0]
    assert len(faces) == 1
    np.testing.assert_allclose(faces[0].box, FACE_BOX, atol=0.5)


def test_a_face_on_its_side_is_found_at_angle_90_and_mapped_back(neural_models):
    """The frame turned a quarter clockwise: upright detection finds nothing; with angle 90 the frame is turned
    back, the face found, and its box and keypoints mapped into the turned frame."""
    turned = np.ascontiguousarray(np.rot90(face_frame(), k=-1))  # (x, y) -> (H - 1 - y, x)
    height = face_frame().shape[0]
    retina = adapter(neural_models, "retinaface_10g")
    assert FaceDetection([retina]).detect([turned])[0] == []
    faces = FaceDetection([retina], angles=(0, 90)).detect([turned])[0]
    assert len(faces) == 1
    x1, y1, x2, y2 = FACE_BOX
    np.testing.assert_allclose(faces[0].box, [height - 1 - y2, x1, height - 1 - y1, x2], atol=2.0)
    expected_kps = np.stack([height - 1 - FACE_KPS[:, 1], FACE_KPS[:, 0]], axis=1)
    np.testing.assert_allclose(faces[0].kps, expected_kps, atol=2.0)


class Fixed:
    """An adapter that finds one face at `box` of whatever frame it is given, and records the frames' shapes."""

    def __init__(self, box):
        self.box, self.shapes = np.array(box, np.float32), []

    def raw(self, frame):
        self.shapes.append(frame.shape)
        kps = np.repeat(self.box[None, :2], 5, axis=0)[None]
        return self.box[None], np.array([0.9], np.float32), kps


def test_the_margin_pads_the_frame_and_boxes_come_back_in_its_pixels():
    frame = np.zeros((200, 400, 3), np.uint8)
    fixed = Fixed([150, 60, 250, 160])
    faces = FaceDetection([fixed], margin=(10, 20, 30, 40)).detect([frame])[0]
    assert fixed.shapes == [(200 + 10 + 30, 400 + 40 + 80, 3)]  # 100 is half the side
    np.testing.assert_allclose(faces[0].box, [150 - 80, 60 - 10, 250 - 80, 160 - 10])
    assert margins((200, 400), (100, 0, 0, 100)) == (100, 0, 0, 200)


def test_rotation_holds_the_whole_frame():
    for angle, size in ((0, (400, 200)), (90, (200, 400)), (180, (400, 200)), (270, (200, 400))):
        assert rotation(angle, 400, 200)[1] == size


def test_facefusion_nms_thresholds():
    assert nms_threshold(3, 1) == 0.1 and nms_threshold(1, 1) == 0.4
    assert [nms_threshold(1, n) for n in (2, 3, 4)] == [0.3, 0.2, 0.1]


@pytest.mark.parametrize("flags, expected", [
    ({"face_detector_angles": "0 90"}, ("face_detector_angles", (0, 90))),
    ({"face_detector_angles": "270,90,90"}, ("face_detector_angles", (270, 90))),
    ({"face_detector_margin": "10"}, ("face_detector_margin", (10, 10, 10, 10))),
    ({"face_detector_margin": "10 20"}, ("face_detector_margin", (10, 20, 10, 20))),
    ({"face_detector_model": "many"}, ("face_detector_model", "many")),
])
def test_settings(flags, expected):
    assert getattr(load_settings(None, {}, flags).settings, expected[0]) == expected[1]


@pytest.mark.parametrize("flags, text", [({"face_detector_angles": "45"}, "among 0 90 180 270"),
                                         ({"face_detector_margin": "101"}, "1 to 4 percentages")])
def test_bad_values_are_refused(flags, text):
    with pytest.raises(SettingsError, match=text):
        load_settings(None, {}, flags)


@pytest.mark.parametrize("args, models", [
    (["--face-detector-model", "many"], {"retinaface_10g", "scrfd_2.5g", "yoloface_8n"}),
    (["--face-detector-model", "yunet"], {"yunet_2023_mar"}),
    (["--face-detector-model", "retinaface", "--face-detector-angles", "0", "90", "--face-detector-margin", "5"],
     {"retinaface_10g"}),
])
def test_runs_with_each(env, source_image, capsys, args, models):
    image = env / "t.png"
    cv2.imwrite(str(image), face_frame())
    code = main(["run", "--engine", "neural", "--json", "-q", "-s", str(source_image), "-t", str(image), "-o",
                 str(env / "out"), *args])
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert code == 0 and summary["counts"]["done"] == 1, captured.err
    assert models <= set(summary["models"])
    assert summary["outcomes"][0]["detector_calls"] >= 1


def test_the_offline_engine_refuses_angles_and_margin(offline_env, source_image, capsys):
    code = main(["run", "--engine", "offline", "-s", str(source_image), "-t", str(source_image), "-o",
                 str(offline_env / "o"), "--face-detector-angles", "0", "90"])
    assert code == 2 and "can't do face_detector_angles / face_detector_margin" in capsys.readouterr().err

"""Neural adapters against stand-ins with the real tensor layouts."""
import numpy as np
import onnx
import pytest

from conftest import FACE_BOX, FACE_KPS, cpu_session, face_frame
from facefusion_batch.faces.detectors import ScrfdDetector, YoloFaceDetector
from facefusion_batch.faces.recognizer import ArcFaceRecognizer
from facefusion_batch.faces.types import Face
from facefusion_batch.models.catalog import CATALOG
from facefusion_batch.swap.inswapper import InSwapper, read_emap


session = cpu_session


@pytest.mark.parametrize("name, cls", [("scrfd_2.5g", ScrfdDetector), ("yoloface_8n", YoloFaceDetector)])
def test_detectors_map_back_to_frame_pixels(neural_models, name, cls):
    detector = cls(session(neural_models / f"{name}.onnx"), CATALOG[name], 640, 0.5)
    faces = detector.detect([face_frame()])[0]
    assert len(faces) == 1
    np.testing.assert_allclose(faces[0].box, FACE_BOX, atol=0.5)
    np.testing.assert_allclose(faces[0].kps, FACE_KPS, atol=0.5)
    assert detector.detect([np.full_like(face_frame(), 80)])[0] == []


def test_recogniser_batches_and_normalises(neural_models):
    recognizer = ArcFaceRecognizer(session(neural_models / "arcface_w600k_r50.onnx"), CATALOG["arcface_w600k_r50"])
    face = Face(FACE_BOX, 0.9, FACE_KPS)
    shifted = Face(FACE_BOX, 0.9, FACE_KPS + 30)
    both = recognizer.embed(face_frame(), [face, shifted])
    assert both.shape == (2, 512)
    np.testing.assert_allclose(np.linalg.norm(both, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(recognizer.embed(face_frame(), [face])[0], both[0], atol=1e-5)
    assert both[0] @ both[1] < 0.99
    raw = recognizer.embed_raw(face_frame(), [face, shifted])
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)
    np.testing.assert_allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), both, atol=1e-5)


def test_inswapper_latent_uses_the_last_initializer(neural_models):
    path = neural_models / "inswapper_128.onnx"
    emap = read_emap(path)
    assert emap.shape == (512, 512)
    assert np.array_equal(emap, onnx.numpy_helper.to_array(onnx.load(str(path)).graph.initializer[-1]))
    swapper = InSwapper(session(path), CATALOG["inswapper_128"], emap)
    embedding = np.random.default_rng(0).normal(size=512).astype(np.float32)
    np.testing.assert_allclose(swapper.latent(embedding), (embedding @ emap)[None] / np.linalg.norm(embedding),
                               rtol=1e-5)
    frame = face_frame()
    out = swapper.swap(frame.copy(), [Face(FACE_BOX, 0.9, FACE_KPS)], swapper.latent(embedding))
    x1, y1, x2, y2 = FACE_BOX.astype(int)
    assert np.abs(out[y1 + 30:y2 - 30, x1 + 30:x2 - 30].astype(int) - frame[y1 + 30:y2 - 30, x1 + 30:x2 - 30]).mean() > 10
    assert np.array_equal(out[:, :x1 - 40], frame[:, :x1 - 40])


def test_fp16_swapper_runs_with_float32_io(tmp_path):
    import standins

    path = tmp_path / "inswapper_128_fp16.onnx"
    standins.build_inswapper_fp16(path)
    emap = read_emap(path)
    assert emap.dtype == np.float32
    swapper = InSwapper(session(path), CATALOG["inswapper_128_fp16"], emap)
    out = swapper.swap(face_frame(), [Face(FACE_BOX, 0.9, FACE_KPS)], swapper.latent(np.ones(512, np.float32)))
    assert out.dtype == np.uint8

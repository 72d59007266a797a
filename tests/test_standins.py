"""The ONNX stand-ins load in onnxruntime with the real models' interfaces."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import standins  # noqa: E402

onnxruntime.set_default_logger_severity(3)

PROVIDERS = ['CPUExecutionProvider']


def _session(path) -> onnxruntime.InferenceSession:
    return onnxruntime.InferenceSession(str(path), providers=PROVIDERS)


def _io(session):
    return ([(i.name, i.shape, i.type) for i in session.get_inputs()],
            [(o.name, o.shape, o.type) for o in session.get_outputs()])


FACES_640 = [
    # small -> stride 8
    ((100.0, 120.0, 150.0, 180.0),
     [(115, 140), (135, 140), (125, 150), (117, 165), (133, 165)]),
    # medium -> stride 16
    ((300.5, 50.25, 390.0, 160.0),
     [(325.5, 90.0), (365.0, 90.0), (345.0, 110.0), (330.0, 135.0), (360.0, 135.0)]),
    # large -> stride 32
    ((350.0, 300.0, 600.0, 620.0),
     [(420.0, 420.0), (530.0, 420.0), (475.0, 480.0), (430.0, 550.0), (520.0, 550.0)]),
    # same centre as the first: lands on the adjacent anchor 1
    ((101.0, 121.0, 149.0, 179.0),
     [(116, 141), (134, 141), (125, 151), (118, 164), (132, 164)]),
]


def _sorted(found):
    return sorted(found, key=lambda f: tuple(f[0]))


def _check_decoded(found, faces):
    assert len(found) == len(faces)
    expected = _sorted([(np.asarray(b, np.float32), np.asarray(k, np.float32), 0.9) for b, k in faces])
    for (box, kps, score), (ebox, ekps, _) in zip(_sorted(found), expected):
        np.testing.assert_allclose(box, ebox, atol=1e-4)
        np.testing.assert_allclose(kps, ekps, atol=1e-4)
        assert score == pytest.approx(0.9)


# ---------------------------------------------------------------- inswapper

def test_inswapper_io_and_emap(tmp_path):
    path = tmp_path / 'inswapper_128.onnx'
    emap = standins.build_inswapper(path)
    assert emap.shape == (512, 512) and emap.dtype == np.float32
    last = onnx.load(str(path)).graph.initializer[-1]
    assert last.name == 'emap'
    np.testing.assert_array_equal(numpy_helper.to_array(last), emap)

    session = _session(path)
    inputs, outputs = _io(session)
    assert inputs == [('target', [1, 3, 128, 128], 'tensor(float)'),
                      ('source', [1, 512], 'tensor(float)')]
    assert outputs == [('output', [1, 3, 128, 128], 'tensor(float)')]

    rng = np.random.default_rng(1)
    target = rng.random((1, 3, 128, 128), dtype=np.float32)
    results = []
    for _ in range(2):
        emb = rng.standard_normal((1, 512)).astype(np.float32)
        latent = (emb @ emap) / np.linalg.norm(emb)
        (out,) = session.run(None, {'target': target, 'source': latent.astype(np.float32)})
        assert out.shape == (1, 3, 128, 128) and out.dtype == np.float32
        assert out.min() >= 0.0 and out.max() <= 1.0
        results.append(out)
    # different sources -> clearly different colours
    colour_a = results[0].mean(axis=(2, 3))
    colour_b = results[1].mean(axis=(2, 3))
    assert np.abs(colour_a - colour_b).max() > 0.05
    # different targets -> different outputs
    (other,) = session.run(None, {'target': 1 - target, 'source': latent.astype(np.float32)})
    assert np.abs(other - results[1]).max() > 0.1


def test_inswapper_seed_changes_emap(tmp_path):
    a = standins.build_inswapper(tmp_path / 'a.onnx', seed=0)
    b = standins.build_inswapper(tmp_path / 'b.onnx', seed=1)
    c = standins.build_inswapper(tmp_path / 'c.onnx', seed=0)
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, c)


def test_inswapper_dynamic_batch(tmp_path):
    path = tmp_path / 'inswapper_128.onnx'
    emap = standins.build_inswapper(path, dynamic_batch=True)
    session = _session(path)
    inputs, outputs = _io(session)
    assert [i[1] for i in inputs] == [['batch', 3, 128, 128], ['batch', 512]]
    assert outputs[0][1] == ['batch', 3, 128, 128]
    rng = np.random.default_rng(2)
    target = rng.random((3, 3, 128, 128), dtype=np.float32)
    source = (rng.standard_normal((3, 512)) @ emap / np.sqrt(512)).astype(np.float32)
    (batched,) = session.run(None, {'target': target, 'source': source})
    assert batched.shape == (3, 3, 128, 128)
    for i in range(3):
        (single,) = session.run(None, {'target': target[i:i + 1], 'source': source[i:i + 1]})
        np.testing.assert_allclose(batched[i:i + 1], single, atol=1e-6)


def test_inswapper_fp16(tmp_path):
    path16 = tmp_path / 'inswapper_128_fp16.onnx'
    path32 = tmp_path / 'inswapper_128.onnx'
    emap16 = standins.build_inswapper_fp16(path16)
    emap32 = standins.build_inswapper(path32)
    model = onnx.load(str(path16))
    assert all(init.data_type == onnx.TensorProto.FLOAT16
               for init in model.graph.initializer if init.data_type != onnx.TensorProto.INT64)
    last = model.graph.initializer[-1]
    assert last.name == 'emap'
    stored = numpy_helper.to_array(last)
    assert stored.shape == (512, 512) and stored.dtype == np.float16
    np.testing.assert_array_equal(stored, emap16)
    np.testing.assert_allclose(emap16.astype(np.float32), emap32, atol=1e-3)

    s16, s32 = _session(path16), _session(path32)
    assert _io(s16) == _io(s32)  # float32 I/O kept
    rng = np.random.default_rng(3)
    feed = {'target': rng.random((1, 3, 128, 128), dtype=np.float32),
            'source': (rng.standard_normal((1, 512)) / np.sqrt(512)).astype(np.float32)}
    (out16,) = s16.run(None, feed)
    (out32,) = s32.run(None, feed)
    assert out16.dtype == np.float32
    np.testing.assert_allclose(out16, out32, atol=5e-3)


# ---------------------------------------------------------------- arcface

def test_arcface(tmp_path):
    path = tmp_path / 'arcface_w600k_r50.onnx'
    standins.build_arcface(path)
    session = _session(path)
    inputs, outputs = _io(session)
    assert len(inputs) == 1 and len(outputs) == 1
    name, shape, dtype = inputs[0]
    assert name == 'input' and dtype == 'tensor(float)'
    assert isinstance(shape[0], str) and shape[1:] == [3, 112, 112]
    oname, oshape, _ = outputs[0]
    assert oname == '683' and isinstance(oshape[0], str) and oshape[1] == 512

    rng = np.random.default_rng(4)
    faces = (rng.random((3, 3, 112, 112), dtype=np.float32) * 2 - 1)
    (emb,) = session.run(None, {'input': faces})
    assert emb.shape == (3, 512)
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    # same crop -> same embedding, batched or not
    (again,) = session.run(None, {'input': faces[1:2]})
    np.testing.assert_allclose(again[0], emb[1], rtol=1e-5, atol=1e-5)
    # different faces -> clearly different directions
    sims = unit @ unit.T
    assert np.all(sims[~np.eye(3, dtype=bool)] < 0.5)
    # a flat image does not give a zero vector
    (flat,) = session.run(None, {'input': np.zeros((1, 3, 112, 112), np.float32)})
    assert np.linalg.norm(flat) > 0


# ---------------------------------------------------------------- scrfd

def test_scrfd_anchor_centers():
    c = standins.scrfd_anchor_centers(640, 8)
    assert c.shape == (80 * 80 * 2, 2)
    np.testing.assert_array_equal(c[:6], [[0, 0], [0, 0], [8, 0], [8, 0], [16, 0], [16, 0]])
    np.testing.assert_array_equal(c[160], [0, 8])  # second grid row
    assert standins.scrfd_anchor_centers(640, 32).shape == (800, 2)


def test_scrfd(tmp_path):
    path = tmp_path / 'scrfd_2.5g.onnx'
    standins.build_scrfd(path, FACES_640)
    session = _session(path)
    inputs, outputs = _io(session)
    assert inputs == [('input', [1, 3, 640, 640], 'tensor(float)')]
    assert [o[0] for o in outputs] == ['448', '471', '494', '451', '474', '497', '454', '477', '500']
    counts = [12800, 3200, 800]
    assert [o[1] for o in outputs] == ([[n, 1] for n in counts] + [[n, 4] for n in counts]
                                       + [[n, 10] for n in counts])

    frame = np.random.default_rng(5).random((1, 3, 640, 640), dtype=np.float32)
    results = session.run(None, {'input': frame})
    for result, (_, shape, _) in zip(results, outputs):
        assert list(result.shape) == shape and result.dtype == np.float32
    # one face per stride level, two on stride 8
    assert [int((r[:, 0] >= 0.5).sum()) for r in results[:3]] == [2, 1, 1]
    background = np.concatenate([r[r[:, 0] < 0.5, 0] for r in results[:3]])
    np.testing.assert_allclose(background, 0.01)
    _check_decoded(standins.decode_scrfd(results), FACES_640)


def test_scrfd_other_size_and_no_faces(tmp_path):
    path = tmp_path / 'scrfd_320.onnx'
    standins.build_scrfd(path, [], size=320)
    session = _session(path)
    assert session.get_inputs()[0].shape == [1, 3, 320, 320]
    results = session.run(None, {'input': np.zeros((1, 3, 320, 320), np.float32)})
    assert [r.shape[0] for r in results[:3]] == [3200, 800, 200]
    assert standins.decode_scrfd(results, size=320) == []


# ---------------------------------------------------------------- yoloface

def test_yoloface(tmp_path):
    path = tmp_path / 'yoloface_8n.onnx'
    standins.build_yoloface(path, FACES_640)
    session = _session(path)
    inputs, outputs = _io(session)
    assert inputs == [('input', [1, 3, 640, 640], 'tensor(float)')]
    assert outputs == [('output0', [1, 20, 8400], 'tensor(float)')]
    frame = np.random.default_rng(6).random((1, 3, 640, 640), dtype=np.float32)
    (out,) = session.run(None, {'input': frame})
    assert out.shape == (1, 20, 8400)
    assert int((out[0, 4] > 0).sum()) == len(FACES_640)
    _check_decoded(standins.decode_yoloface(out), FACES_640)
    assert standins.yoloface_anchor_centers(640).shape == (8400, 2)


# ---------------------------------------------------------------- gfpgan

def test_gfpgan(tmp_path):
    path = tmp_path / 'gfpgan_1.4.onnx'
    standins.build_gfpgan(path)
    session = _session(path)
    inputs, outputs = _io(session)
    assert inputs == [('input', [1, 3, 512, 512], 'tensor(float)')]
    assert outputs == [('output', [1, 3, 512, 512], 'tensor(float)')]
    # smooth image -> near identity; flat image -> exactly identity (edges too)
    y, x = np.mgrid[:512, :512].astype(np.float32)
    smooth = np.sin(x / 40)[None, None].repeat(3, axis=1) * 0.8
    (out,) = session.run(None, {'input': smooth.astype(np.float32)})
    assert np.abs(out - smooth).max() < 0.01
    flat = np.full((1, 3, 512, 512), 0.7, np.float32)
    (out,) = session.run(None, {'input': flat})
    np.testing.assert_allclose(out, flat, atol=1e-6)
    noisy = np.random.default_rng(7).uniform(-1, 1, (1, 3, 512, 512)).astype(np.float32)
    (out,) = session.run(None, {'input': noisy})
    assert out.min() >= -1 and out.max() <= 1


# ---------------------------------------------------------------- hash sidecar

def test_write_facefusion_hash(tmp_path):
    path = tmp_path / 'gfpgan_1.4.onnx'
    standins.build_gfpgan(path)
    hash_path = standins.write_facefusion_hash(path)
    assert hash_path == tmp_path / 'gfpgan_1.4.hash'
    text = hash_path.read_text()
    assert len(text) == 8 and text == text.lower()
    assert int(text, 16) == zlib.crc32(path.read_bytes())


def test_swapper_conv_stack_adds_work_not_change(tmp_path):
    plain = standins.build_swapper(tmp_path / "plain.onnx", 64, mode="identity", dynamic_batch=True)
    heavy = standins.build_swapper(tmp_path / "heavy.onnx", 64, mode="identity", dynamic_batch=True, convs=3,
                                   channels=8)
    assert sum(node.op_type == "Conv" for node in onnx.load(heavy).graph.node) == 3
    feeds = {"target": np.random.default_rng(0).random((2, 3, 64, 64), dtype=np.float32),
             "source": np.ones((2, 512), np.float32)}
    outputs = [onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
               for path in (plain, heavy)]
    np.testing.assert_array_equal(outputs[0], feeds["target"])
    np.testing.assert_array_equal(outputs[1], outputs[0])

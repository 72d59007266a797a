import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import standins
from conftest import FACE_BOX, FACE_KPS, cpu_session, face_frame
from facefusion_batch.faces.types import Face
from facefusion_batch.models.catalog import CATALOG
from facefusion_batch.models.dynamic_batch import dynamic_batch_model, has_dynamic_batch
from facefusion_batch.engines.inswapper import InSwapper, read_emap


def test_fixed_batch_swapper_is_patched_checked_and_cached(tmp_path):
    model = tmp_path / "inswapper_128.onnx"
    standins.build_inswapper(model)
    assert not has_dynamic_batch(cpu_session(model))
    patched = dynamic_batch_model(model, tmp_path / "cache")
    assert patched is not None and patched != model and patched.name.startswith("inswapper_128.dynamic-")
    assert has_dynamic_batch(cpu_session(patched))
    assert dynamic_batch_model(model, tmp_path / "cache") == patched, "cached"
    assert np.array_equal(read_emap(patched), read_emap(model)), "the emap is still the last initializer"


def test_native_dynamic_model_is_used_as_is(tmp_path):
    model = tmp_path / "inswapper_128.onnx"
    standins.build_inswapper(model, dynamic_batch=True)
    assert dynamic_batch_model(model, tmp_path / "cache") == model


def test_unsafe_model_falls_back_and_remembers(tmp_path):
    # Concat with a constant of batch 1: a batch of 2 can't run, so patching must be refused.
    bias = numpy_helper.from_array(np.ones((1, 2), np.float32), "bias")
    graph = helper.make_graph(
        [helper.make_node("Concat", ["x", "bias"], ["y"], axis=1)], "fixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], [bias])
    model_proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model_proto.ir_version = 8
    model = tmp_path / "fixed.onnx"
    onnx.save(model_proto, str(model))
    assert dynamic_batch_model(model, tmp_path / "cache") is None
    assert list((tmp_path / "cache").glob("*.failed"))
    assert dynamic_batch_model(model, tmp_path / "cache") is None


def test_batched_swapper_matches_single_calls(tmp_path):
    model = tmp_path / "inswapper_128.onnx"
    emap = standins.build_inswapper(model, dynamic_batch=True)
    faces = [Face(FACE_BOX, 0.9, FACE_KPS), Face(FACE_BOX + 4, 0.9, FACE_KPS + 4)]
    latent = np.random.default_rng(1).normal(size=(1, 512)).astype(np.float32)
    single = InSwapper(cpu_session(model), CATALOG["inswapper_128"], emap, batch_size=1)
    batched = InSwapper(cpu_session(model), CATALOG["inswapper_128"], emap, batch_size=8)
    assert single.batcher is None and batched.batcher is not None
    a = single.swap(face_frame(), faces, latent)
    b = batched.swap(face_frame(), faces, latent)
    assert np.abs(a.astype(int) - b).max() <= 1
    assert batched.batcher.calls == 1 and batched.batcher.items == 2

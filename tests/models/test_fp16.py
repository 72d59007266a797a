"""fp16 copies of fp32 models (models/fp16.py, SessionPool.half): converted once, used only within tolerance,
the verdict cached by the file's checksum. Run here on the CPU provider, as they are on CUDA."""
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from facefusion_batch.models import fp16
from facefusion_batch.models.catalog import CATALOG
from facefusion_batch.models.sessions import SessionPool, ort
from facefusion_batch.settings import load_settings
from standins import build_enhancer, build_swapper


def settings(**flags):
    return load_settings(None, {}, flags).settings


def _cpu(path: Path):
    return ort().InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _cancelling(path: Path) -> Path:
    """y = x * 100000: its weight is past fp16's largest number (65504), so the copy is a third off."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "big"], ["y"])], "cancel",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3, 64, 64])],
        initializer=[helper.make_tensor("big", TensorProto.FLOAT, [1], [100000.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_a_convolutional_model_gets_a_verified_fp16_copy(tmp_path):
    model = build_enhancer(tmp_path / "gfpgan_1.4.onnx", 128, mode="identity", dynamic_batch=True, convs=3,
                           channels=8)
    copy, verdict = fp16.verified_copy(model, tmp_path / "cache", "0badc0de", "1.31.1", _cpu)
    assert copy == tmp_path / "cache" / "fp16" / "gfpgan_1.4-0badc0de-ort1.31.1.fp16.onnx" and copy.is_file()
    assert "used" in verdict
    stored = onnx.load(str(copy))
    assert any(i.data_type == TensorProto.FLOAT16 for i in stored.graph.initializer)
    assert stored.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT  # fed the same arrays
    feeds = fp16.probe_feeds(_cpu(model))
    assert fp16.difference(_cpu(model).run(None, feeds), _cpu(copy).run(None, feeds)) <= fp16.TOLERANCE


def test_a_copy_out_of_tolerance_is_refused_and_remembered(tmp_path, monkeypatch):
    model = _cancelling(tmp_path / "cancel.onnx")
    copy, verdict = fp16.verified_copy(model, tmp_path, "12345678", "1.31.1", _cpu)
    assert copy is None and "kept fp32" in verdict
    assert not fp16.copy_path(tmp_path, model, "12345678", "1.31.1").exists()

    def no_conversion(source, target):
        raise AssertionError("converted again")
    monkeypatch.setattr(fp16, "convert", no_conversion)
    assert fp16.verified_copy(model, tmp_path, "12345678", "1.31.1", _cpu) == (None, verdict)
    # a new version of the file (another checksum) is weighed again
    again, why = fp16.verified_copy(model, tmp_path, "87654321", "1.31.1", _cpu)
    assert again is None and "converted again" in why


def test_an_accepted_copy_is_reused_without_converting(tmp_path, monkeypatch):
    model = build_swapper(tmp_path / "simswap_256.onnx", 256, mode="identity", dynamic_batch=True, convs=1,
                          channels=4)
    first, _ = fp16.verified_copy(model, tmp_path, "aaaa0000", "1.31.1", _cpu)
    monkeypatch.setattr(fp16, "convert", lambda source, target: (_ for _ in ()).throw(AssertionError("again")))
    assert fp16.verified_copy(model, tmp_path, "aaaa0000", "1.31.1", _cpu)[0] == first


def test_pool_offers_fp16_copies_only_where_wanted(tmp_path):
    model = build_enhancer(tmp_path / "gpen_bfr_256.onnx", 64, mode="identity", dynamic_batch=True, convs=1,
                           channels=4)
    assert SessionPool(settings(cache_path=tmp_path)).half(model) == model  # CPU provider: never by default
    assert SessionPool(settings(execution_providers="cuda", cuda_fp16=False, cache_path=tmp_path),
                       ).half(model) == model
    pool = SessionPool(settings(cache_path=tmp_path), fp16=True)
    copy = pool.half(model)
    assert copy != model and copy.is_file() and copy.parent == tmp_path / "fp16"
    assert len(pool.fp16_notes) == 1 and "used" in pool.fp16_notes[0]
    np.testing.assert_allclose(pool.get(copy).run(None, {"input": np.zeros((1, 3, 64, 64), np.float32)})[0], 0,
                               atol=1e-3)


def test_files_facefusion_ships_in_fp16_are_marked():
    assert {n for n, s in CATALOG.items() if s.fp16} == {"hyperswap_1a_256", "hyperswap_1b_256", "hyperswap_1c_256",
                                                        "inswapper_128_fp16"}

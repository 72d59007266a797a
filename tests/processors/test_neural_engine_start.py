"""The neural engine's start: what it says when models are missing, and what it leaves behind when one fails
to load (nothing: no batcher thread, no session)."""
from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import standins
from conftest import FRAME_H, FRAME_W, detector_faces, face_frame
from facefusion_batch.engines import build_engine
from facefusion_batch.errors import ModelError
from facefusion_batch.settings import load_settings


def _models(directory: Path, broken: str) -> Path:
    """Stand-ins for hyperswap + gfpgan + xseg + bisenet; `broken` is a whole ONNX graph of an op ONNX Runtime
    does not have (with its FaceFusion hash): it passes the checksum and the signature check and fails only
    when ONNX Runtime loads it, after the models opened before it."""
    standins.build_arcface(directory / "arcface_w600k_r50.onnx")
    standins.build_scrfd(directory / "scrfd_2.5g.onnx", detector_faces(640 / max(FRAME_W, FRAME_H)))
    standins.build_swapper(directory / "hyperswap_1a_256.onnx", 256, dynamic_batch=True)
    standins.build_gfpgan(directory / "gfpgan_1.4.onnx")
    standins.build_occluder(directory / "xseg_1.onnx", np.ones((256, 256), np.float32))
    standins.build_parser(directory / "bisenet_resnet_34.onnx", np.ones((512, 512), np.int64))
    _unloadable(directory / f"{broken}.onnx")
    for model in directory.glob("*.onnx"):
        standins.write_facefusion_hash(model)
    return directory


def _unloadable(path: Path) -> None:
    graph = helper.make_graph([helper.make_node("NoSuchOperator", ["input"], ["output"])], "unloadable",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 512, 512])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3, 512, 512])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))


def _batchers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.endswith("-batcher")]


@pytest.mark.parametrize("broken", ["gfpgan_1.4", "bisenet_resnet_34"])
def test_a_model_that_fails_to_load_leaves_no_batcher_thread(tmp_path, broken):
    models = _models(tmp_path / "models", broken)
    flags = {"engine": "neural", "models_path": models, "cache_path": tmp_path / "cache", "batch_size": 4,
             "execution_thread_count": 2, "processors": "face_swapper face_enhancer",
             "face_swapper_model": "hyperswap_1a_256", "face_mask_types": "box occlusion region"}
    settings = load_settings(None, {}, flags).settings
    before = _batchers()
    with pytest.raises(ModelError, match=broken):
        build_engine(settings)
    assert _batchers() == before


def test_missing_models_each_say_why_they_are_needed(tmp_path):
    models = _models(tmp_path / "models", "xseg_2")
    (models / "gfpgan_1.4.onnx").unlink()
    flags = {"engine": "neural", "models_path": models, "cache_path": tmp_path / "cache",
             "processors": "face_swapper face_enhancer", "face_swapper_model": "hyperswap_1a_256",
             "face_selector_gender": "female"}
    with pytest.raises(ModelError) as error:
        build_engine(load_settings(None, {}, flags).settings)
    message = str(error.value)
    assert "gfpgan_1.4.onnx, fairface.onnx not found" in message
    # the filters' reason belongs to fairface alone, not to the list
    assert "(fairface.onnx: the face selector's gender/race/age filters need it)" in message
    assert "ffb models download gfpgan_1.4 fairface" in message


def test_an_unloadable_model_with_micro_batching_is_exit_3_in_one_line(tmp_path, capsys, monkeypatch):
    """batch_size > 1 tries to give each model a dynamic batch axis first: a model ONNX Runtime can't load is
    still the one-line model error (exit 3), not a traceback from the patching step."""
    from facefusion_batch.cli import main

    models = _models(tmp_path / "models", "gfpgan_1.4")
    source = tmp_path / "face.png"
    cv2.imwrite(str(source), face_frame())
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    monkeypatch.setenv("FFB_BATCH_SIZE", "4")
    code = main(["run", "--engine", "neural", "--models-path", str(models), "-q",
                 "--processors", "face_swapper", "face_enhancer", "--face-swapper-model", "hyperswap_1a_256",
                 "-s", str(source), "-t", str(source), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "gfpgan_1.4.onnx: can't load model" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "face.png").exists()

"""The processor stand-ins have the interfaces FaceFusion feeds: names, shapes, dtypes, batch axis."""
import numpy as np
import pytest

from conftest import cpu_session
import standins
from facefusion_batch.models.catalog import CATALOG, ENHANCERS, SWAPPERS


def _io(path):
    session = cpu_session(path)
    return ([(i.name, i.shape, i.type) for i in session.get_inputs()],
            [(o.name, o.shape, o.type) for o in session.get_outputs()])


@pytest.mark.parametrize("name", SWAPPERS)
def test_swapper_standin_interface(tmp_path, name):
    spec = CATALOG[name]
    source = {"blendswap": (3, 112, 112), "uniface": (3, 256, 256)}.get(spec.kind, (512,))
    inputs, outputs = _io(standins.build_swapper(tmp_path / "s.onnx", spec.size, source))
    assert inputs == [("target", [1, 3, spec.size, spec.size], "tensor(float)"),
                      ("source", [1, *source], "tensor(float)")]
    assert outputs == [("output", [1, 3, spec.size, spec.size], "tensor(float)")]


@pytest.mark.parametrize("name", ENHANCERS)
def test_enhancer_standin_interface(tmp_path, name):
    size = CATALOG[name].size
    if size > 1024:
        pytest.skip("2048 stand-in: same graph, only bigger")
    inputs, outputs = _io(standins.build_enhancer(tmp_path / "e.onnx", size, weight_input=name == "codeformer",
                                                  dynamic_batch=True))
    assert inputs[0] == ("input", ["batch", 3, size, size], "tensor(float)")
    assert outputs == [("output", ["batch", 3, size, size], "tensor(float)")]
    if name == "codeformer":
        assert inputs[1] == ("weight", [1], "tensor(double)")


def test_mask_and_classifier_standin_interfaces(tmp_path):
    occ_in, occ_out = _io(standins.build_occluder(tmp_path / "x.onnx", np.ones((256, 256))))
    assert occ_in == [("input", ["batch", 256, 256, 3], "tensor(float)")]
    assert occ_out == [("output", ["batch", 256, 256, 1], "tensor(float)")]
    par_in, par_out = _io(standins.build_parser(tmp_path / "p.onnx", np.zeros((512, 512))))
    assert par_in == [("input", ["batch", 3, 512, 512], "tensor(float)")]
    assert par_out == [("output", ["batch", 19, 512, 512], "tensor(float)")]
    fair_in, fair_out = _io(standins.build_fairface(tmp_path / "f.onnx"))
    assert fair_in == [("input", ["batch", 3, 224, 224], "tensor(float)")]
    assert [(n, t) for n, _, t in fair_out] == [("race_id", "tensor(int64)"), ("gender_id", "tensor(int64)"),
                                                ("age_id", "tensor(int64)")]
    conv_in, conv_out = _io(standins.build_converter(tmp_path / "c.onnx", np.eye(512)))
    assert conv_in == [("input", ["batch", 512], "tensor(float)")] and conv_out[0][1] == ["batch", 512]

"""TensorRT provider options and cache keys, IO binding and warm-up: all checked without a GPU (IO binding and
warm-up run through the CPU provider, the same code a CUDA session runs)."""
import threading
import zlib
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from facefusion_batch.models import sessions, tensorrt_cache
from facefusion_batch.models.binding import Device, run_bound, run_to_host, upload
from facefusion_batch.models.providers import ProviderCheck
from facefusion_batch.models.sessions import GuardedSession, SessionPool, provider_list, warm_up
from facefusion_batch.settings import load_settings
from standins import build_inswapper_fp16


def settings(**flags):
    return load_settings(None, {}, flags).settings


def _scale_model(path: Path, dtype=TensorProto.FLOAT, shape=("batch", 3), factor: float = 2.0) -> Path:
    """y = x * factor, with the given input type and shape."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "k"], ["y"])], "scale",
        [helper.make_tensor_value_info("x", dtype, list(shape))],
        [helper.make_tensor_value_info("y", dtype, list(shape))],
        initializer=[helper.make_tensor("k", dtype, [1], [factor])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_engine_folder_changes_with_the_model_and_each_version(tmp_path):
    base = tensorrt_cache.engine_folder(tmp_path, Path("m/inswapper_128.onnx"), "0a1b2c3d", "1.31.1", "10.3.0")
    assert base == tmp_path / "tensorrt" / "ort1.31.1-trt10.3.0" / "inswapper_128-0a1b2c3d"
    assert tensorrt_cache.engine_folder(tmp_path, Path("inswapper_128.onnx"), "0a1b2c3d", "1.31.1", "10.3.0") == base
    others = {tensorrt_cache.engine_folder(tmp_path, Path("inswapper_128.onnx"), "ffffffff", "1.31.1", "10.3.0"),
              tensorrt_cache.engine_folder(tmp_path, Path("inswapper_128.onnx"), "0a1b2c3d", "1.32.0", "10.3.0"),
              tensorrt_cache.engine_folder(tmp_path, Path("inswapper_128.onnx"), "0a1b2c3d", "1.31.1", "10.4.0"),
              tensorrt_cache.engine_folder(tmp_path, Path("gfpgan_1.4.onnx"), "0a1b2c3d", "1.31.1", "10.3.0")}
    assert base not in others and len(others) == 4


def test_provider_list_keys_tensorrt_per_model(tmp_path, monkeypatch):
    monkeypatch.setattr(tensorrt_cache, "tensorrt_version", lambda: "10.3.0")
    s = settings(execution_providers="tensorrt cuda", execution_device_id=2, cache_path=tmp_path)
    first = provider_list(s, model=Path("/models/a.onnx"), checksum="11111111")[0][1]
    second = provider_list(s, model=Path("/models/b.onnx"), checksum="22222222")[0][1]
    version = f"ort{sessions.ort().__version__}-trt10.3.0"
    assert first["trt_engine_cache_path"] == str(tmp_path / "tensorrt" / version / "a-11111111")
    assert second["trt_engine_cache_path"] == str(tmp_path / "tensorrt" / version / "b-22222222")
    assert first["trt_timing_cache_path"] == second["trt_timing_cache_path"] == str(
        tmp_path / "tensorrt" / version / "timing")
    assert first["trt_engine_cache_enable"] and first["trt_timing_cache_enable"] and first["device_id"] == "2"
    assert provider_list(settings(execution_providers="tensorrt", tensorrt_fp16=False))[0][1][
        "trt_fp16_enable"] is False


def test_tensorrt_version_from_the_library_file_name(tmp_path, monkeypatch):
    for name in ("libnvinfer.so", "libnvinfer.so.10", "libnvinfer.so.10.3.0", "libnvinfer_plugin.so.10.9.9"):
        (tmp_path / name).write_bytes(b"")
    assert tensorrt_cache.library_version([str(tmp_path)]) == "10.3.0"
    monkeypatch.setattr(tensorrt_cache.ctypes.util, "find_library", lambda name: "libnvinfer.so.8")
    listdir = tensorrt_cache.os.listdir
    monkeypatch.setattr(tensorrt_cache.os, "listdir", lambda d: [] if d.startswith("/usr") else listdir(d))
    assert tensorrt_cache.library_version([str(tmp_path / "none")]) == "8"  # the soname's major version


def test_pool_puts_each_model_version_in_its_own_engine_folder(tmp_path, monkeypatch):
    """With TensorRT asked for and (here) loading nowhere, the pool still computes its options: the engine
    folder holds the model file's CRC32, so a changed file gets a fresh folder instead of a stale engine."""
    monkeypatch.setattr(sessions, "check_providers", lambda names, device: ProviderCheck(("tensorrt", "cpu"), {}))
    monkeypatch.setattr(tensorrt_cache, "tensorrt_version", lambda: "10.3.0")
    model = _scale_model(tmp_path / "scale.onnx")
    s = settings(execution_providers="tensorrt", cache_path=tmp_path / "cache")
    folder = lambda: tensorrt_cache.engine_folder(  # noqa: E731
        s.cache_path, model, f"{zlib.crc32(model.read_bytes()):08x}", sessions.ort().__version__, "10.3.0")
    options = SessionPool(s)._usable_providers(model)[0][1]
    assert options["trt_engine_cache_path"] == str(folder())
    before = folder()
    _scale_model(model, factor=3.0)
    after = SessionPool(s)._usable_providers(model)[0][1]["trt_engine_cache_path"]
    assert after == str(folder()) and after != str(before)


def test_run_bound_on_cpu_matches_run_and_keeps_outputs_as_ortvalues(tmp_path):
    session = sessions.ort().InferenceSession(str(_scale_model(tmp_path / "m.onnx")),
                                              providers=["CPUExecutionProvider"])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = run_bound(session, {"x": x}, Device())
    assert not isinstance(out[0], np.ndarray) and out[0].device_name().lower() == "cpu"
    np.testing.assert_array_equal(out[0].numpy(), session.run(None, {"x": x})[0])
    chained = run_bound(session, {"x": out[0]}, Device())  # an OrtValue output fed on without a copy back
    np.testing.assert_array_equal(chained[0].numpy(), x * 4)
    np.testing.assert_array_equal(run_to_host(session, {"x": upload(x, Device())}, Device())[0], x * 2)


def test_run_bound_feeds_an_fp16_model_the_fp32_arrays(tmp_path):
    session = sessions.ort().InferenceSession(str(_scale_model(tmp_path / "h.onnx", TensorProto.FLOAT16)),
                                              providers=["CPUExecutionProvider"])
    out = run_to_host(session, {"x": np.full((1, 3), 1.5, np.float32)}, Device())[0]
    assert out.dtype == np.float16 and np.all(out == 3.0)


def test_guarded_session_through_io_binding_gives_the_same_outputs(tmp_path):
    model = tmp_path / "inswapper_128_fp16.onnx"
    build_inswapper_fp16(model)
    rng = np.random.default_rng(0)
    feeds = {"target": rng.random((1, 3, 128, 128), dtype=np.float32),
             "source": rng.standard_normal((1, 512)).astype(np.float32)}
    plain = GuardedSession(SessionPool(settings()), model, threading.Semaphore(1)).run(None, feeds)[0]
    bound_pool = SessionPool(settings(), io_binding=True)
    bound = GuardedSession(bound_pool, model, threading.Semaphore(1))
    np.testing.assert_array_equal(bound.run(None, feeds)[0], plain)
    assert bound_pool.bound_device(bound_pool.get(model)) == Device("cpu", 0)
    on_device = bound.run_on_device(feeds)[0]
    np.testing.assert_array_equal(on_device.numpy(), plain)
    assert bound.calls.value == 2


def test_warm_up_runs_once_per_session_and_skips_unknown_sizes(tmp_path):
    fixed = _scale_model(tmp_path / "fixed.onnx")  # (batch, 3): the batch axis becomes 1
    free = _scale_model(tmp_path / "free.onnx", shape=("batch", "width"))
    pool = SessionPool(settings(), warm=True)
    pool.get(fixed)
    pool.get(free)
    pool.get(fixed)
    assert pool.warmed == [str(fixed)]
    session = sessions.ort().InferenceSession(str(free), providers=["CPUExecutionProvider"])
    assert warm_up(session, Device()) is False
    assert SessionPool(settings()).warmed == [] and not SessionPool(settings())._warm  # CPU: off by default


def test_tensorrt_profiles_cover_every_batch_up_to_the_maximum():
    profiles = tensorrt_cache.profile_options([("target", ["batch", 3, 256, 256]), ("source", ["batch", 512])], 8, 64)
    assert profiles == {"trt_profile_min_shapes": "target:1x3x256x256,source:1x512",
                        "trt_profile_opt_shapes": "target:8x3x256x256,source:8x512",
                        "trt_profile_max_shapes": "target:64x3x256x256,source:64x512"}
    fixed = tensorrt_cache.profile_options([("input", [1, 3, 512, 512]), ("weight", [1])], 8, 64)
    assert fixed["trt_profile_max_shapes"] == "input:1x3x512x512,weight:1"
    assert tensorrt_cache.profile_options([("input.1", [1, 3, "height", "width"])], 8, 64) == {}


def test_pool_gives_tensorrt_the_model_files_own_profile(tmp_path, monkeypatch):
    monkeypatch.setattr(sessions, "check_providers", lambda names, device: ProviderCheck(("tensorrt", "cpu"), {}))
    model = _scale_model(tmp_path / "scale.onnx")  # x: (batch, 3)
    options = SessionPool(settings(execution_providers="tensorrt", cache_path=tmp_path))._usable_providers(model)
    trt = options[0][1]
    assert trt["trt_profile_min_shapes"] == "x:1x3" and trt["trt_profile_max_shapes"] == "x:64x3"
    assert options[-1] == "CPUExecutionProvider"

import zlib
from pathlib import Path

import numpy as np
import pytest

import facefusion_batch
from facefusion_batch.concurrency import concurrency_of
from facefusion_batch.models import store
from facefusion_batch.models.catalog import CATALOG
from facefusion_batch.models.sessions import CPU_BATCH, SessionPool, provider_list
from facefusion_batch.settings import load_settings


def settings(**flags):
    return load_settings(None, {}, flags).settings


def test_inspect_states(tmp_path):
    spec = CATALOG["scrfd_2.5g"]
    memo = store.ChecksumMemo(tmp_path / "memo.json")
    assert store.inspect(tmp_path, spec, memo).status == "missing"
    (tmp_path / spec.file).write_bytes(b"model bytes")
    assert store.inspect(tmp_path, spec, memo).status == "unverified"
    (tmp_path / spec.hash_file).write_text(f"{zlib.crc32(b'model bytes'):08x}\n")
    assert store.inspect(tmp_path, spec, memo).status == "ok"
    (tmp_path / spec.file).write_bytes(b"model bytez")
    state = store.inspect(tmp_path, spec, memo)
    assert state.status == "corrupt" and "CRC32" in state.detail
    assert "ffb models download scrfd_2.5g" in store.fix_hint(state)


def test_checksum_memo_hashes_once_per_file_version(tmp_path, monkeypatch):
    file = tmp_path / "m.onnx"
    file.write_bytes(b"abc")
    calls = []
    monkeypatch.setattr(store, "crc32_of", lambda path: calls.append(path) or "00000000")
    memo = store.ChecksumMemo(tmp_path / "memo.json")
    memo.get(file, "crc32")
    store.ChecksumMemo(tmp_path / "memo.json").get(file, "crc32")
    assert len(calls) == 1
    file.write_bytes(b"abcd")
    memo.get(file, "crc32")
    assert len(calls) == 2


def test_provider_list_orders_and_falls_back_to_cpu(tmp_path):
    providers = provider_list(settings(execution_providers="tensorrt cuda", execution_device_id=1,
                                       cache_path=tmp_path))
    names = [p[0] if isinstance(p, tuple) else p for p in providers]
    assert names == ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    trt = providers[0][1]
    assert trt["device_id"] == "1" and trt["trt_engine_cache_path"].startswith(str(tmp_path))
    assert trt["trt_fp16_enable"] is True
    strict = provider_list(settings(execution_providers="cuda", video_memory_strategy="strict"))
    assert strict[0][1]["arena_extend_strategy"] == "kSameAsRequested"


def test_inference_slots_default():
    assert concurrency_of(settings(execution_providers="cpu", execution_thread_count=4)).inference_slots == 4
    assert concurrency_of(settings(execution_providers="cuda cpu")).inference_slots == 2
    assert concurrency_of(settings(execution_inference_slots=3)).inference_slots == 3


def test_pool_loads_each_model_once_and_reports_real_provider(neural_models):
    pool = SessionPool(settings(execution_providers="cuda cpu"))
    first = pool.get(neural_models / "scrfd_2.5g.onnx")
    assert pool.get(neural_models / "scrfd_2.5g.onnx") is first
    assert pool.loads == 1
    assert pool.active_providers() in (["CPUExecutionProvider"], ["CUDAExecutionProvider"])


def test_pool_names_a_broken_model(tmp_path):
    from facefusion_batch.errors import ModelError

    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not onnx")
    with pytest.raises(ModelError, match="broken.onnx: can't load model"):
        SessionPool(settings()).get(broken)


def test_strict_strategy_releases_sessions_between_targets(neural_models):
    pool = SessionPool(settings(video_memory_strategy="strict"))
    pool.get(neural_models / "scrfd_2.5g.onnx")
    pool.after_target()
    pool.get(neural_models / "scrfd_2.5g.onnx")
    assert pool.loads == 2


def test_providers_of_sessions_the_strict_strategy_freed_are_still_reported(neural_models):
    """A run's summary names the providers it ran on ('engine neural on CPUExecutionProvider'), also when
    `strict` freed every session after the last target (it read 'on no session')."""
    pool = SessionPool(settings(video_memory_strategy="strict"))
    pool.get(neural_models / "scrfd_2.5g.onnx")
    pool.after_target()
    assert pool.active_providers() == ["CPUExecutionProvider"]


class _Recording:
    """A session that records the batch of every call it is given."""

    def __init__(self, session):
        self.session, self.batches = session, []

    def run(self, names, feeds, options=None):
        self.batches.append([value.shape[0] for value in feeds.values()])
        return self.session.run(names, feeds, options)

    def get_inputs(self):
        return self.session.get_inputs()

    def get_outputs(self):
        return self.session.get_outputs()


def test_a_large_batch_on_the_cpu_runs_in_pieces_with_the_same_outputs():
    model = Path(facefusion_batch.__file__).parent / "assets" / "mediapipe" / "face_detection_short_range.onnx"
    pool = SessionPool(settings())
    session = _Recording(pool.get(model))
    images = np.random.default_rng(3).random((2 * CPU_BATCH + 3, 3, 128, 128), np.float32)
    whole = session.session.run(None, {"image": images})
    pieces = pool.run(session, {"image": images})
    assert session.batches == [[CPU_BATCH], [CPU_BATCH], [3]]
    assert all(np.array_equal(a, b) for a, b in zip(whole, pieces)) and len(pieces) == len(whole)
    # a batch the settings ask for runs whole; so does one that is small enough
    batched = SessionPool(settings(batch_size=2 * CPU_BATCH + 3))
    session.batches.clear()
    batched.run(session, {"image": images})
    pool.run(session, {"image": images[:CPU_BATCH]})
    assert session.batches == [[2 * CPU_BATCH + 3], [CPU_BATCH]]

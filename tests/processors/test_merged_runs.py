"""Faces from several frame threads share one enhancer call through the micro-batcher."""
import threading

import numpy as np

from processor_helpers import Recorder
import standins
from facefusion_batch.models.catalog import CATALOG
from facefusion_batch.pipeline.batcher import MicroBatcher
from facefusion_batch.processors.enhancer import Enhancer, EnhancerOptions
from facefusion_batch.processors.tensors import MergedRuns


def test_faces_from_three_threads_go_in_one_call_and_come_back_to_their_thread(tmp_path):
    session = Recorder(standins.build_enhancer(tmp_path / "codeformer.onnx", 512, "identity", weight_input=True,
                                               dynamic_batch=True))
    batchers = []

    def make(fn):
        # a batch goes as soon as all three producers have submitted (no timing involved)
        batchers.append(MicroBatcher(fn, max_batch=8, max_wait=30.0, producers=3))
        return batchers[-1]

    enhancer = Enhancer(MergedRuns(session, make), CATALOG["codeformer"], EnhancerOptions("codeformer", weight=0.0))
    results = {}

    def worker(value: int, faces: int) -> None:
        results[value] = enhancer.enhance([np.full((512, 512, 3), value, np.uint8)] * faces)

    threads = [threading.Thread(target=worker, args=(v, n)) for v, n in ((20, 1), (120, 2), (220, 1))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    batchers[0].close()
    assert [f["input"].shape[0] for f in session.feeds] == [4]
    assert session.feeds[0]["weight"].tolist() == [0.0]
    for value, faces in ((20, 1), (120, 2), (220, 1)):
        assert len(results[value]) == faces and all(out[0, 0, 0] == value for out in results[value])


def test_a_fixed_batch_model_is_refused(tmp_path):
    import pytest

    session = Recorder(standins.build_enhancer(tmp_path / "gfpgan.onnx", 512))
    with pytest.raises(ValueError, match="dynamic batch axis"):
        MergedRuns(session, lambda fn: fn)

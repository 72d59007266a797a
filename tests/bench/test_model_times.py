"""Per-model times in `ffb benchmark`: the pure arithmetic and the report's rows."""
import pytest

from facefusion_batch.bench.model_times import model_names, model_times
from facefusion_batch.bench.report import METRICS, render, table_rows


def timings():
    # 100 frames, 100 faces: the swapper called per face, the enhancer in batches of 4, the detector 10 times
    return {"hyperswap_1a_256": {"seconds": 2.0, "count": 100}, "gfpgan_1.4": {"seconds": 5.0, "count": 25},
            "scrfd_2.5g": {"seconds": 0.5, "count": 10}, "unused": {"seconds": 0.0, "count": 0}}


def test_ms_per_face_counts_every_call_batched_or_not():
    result = model_times(timings(), frames=100, faces=100, inference_slots=2, intra_op_threads=1, cpus=2)
    assert set(result["models"]) == {"hyperswap_1a_256", "gfpgan_1.4", "scrfd_2.5g"}
    assert result["models"]["hyperswap_1a_256"]["ms_per_face"] == pytest.approx(20.0)
    assert result["models"]["gfpgan_1.4"]["ms_per_face"] == pytest.approx(50.0)
    assert result["models"]["gfpgan_1.4"]["ms_per_call"] == pytest.approx(200.0)
    assert result["models"]["scrfd_2.5g"]["calls_per_frame"] == pytest.approx(0.1)
    assert result["model_compute_ms"] == pytest.approx(75.0)
    assert result["model_bound_ms"] == pytest.approx(37.5)  # two calls at once on two cores


def test_model_bound_time_counts_intra_op_cores():
    # One call at a time using both cores: the call's wall time is already the spread compute.
    one_slot = model_times(timings(), frames=100, faces=100, inference_slots=1, intra_op_threads=2, cpus=2)
    assert one_slot["model_cores"] == 2 and one_slot["model_bound_ms"] == pytest.approx(75.0)
    # Two faces per frame halve the per-face time, not the per-frame time.
    two_faces = model_times(timings(), frames=100, faces=200, inference_slots=2, intra_op_threads=1, cpus=2)
    assert two_faces["models"]["hyperswap_1a_256"]["ms_per_face"] == pytest.approx(10.0)
    assert two_faces["model_bound_ms"] == pytest.approx(37.5)
    # More slots than cores: the calls share the cores.
    crowded = model_times(timings(), frames=100, faces=100, inference_slots=8, intra_op_threads=1, cpus=2)
    assert crowded["model_cores"] == 2 and crowded["model_bound_ms"] == pytest.approx(37.5)
    empty = model_times({}, frames=0, faces=0, inference_slots=1, intra_op_threads=1, cpus=2)
    assert empty["models"] == {} and empty["model_bound_ms"] is None


def run(models: dict, bound: float) -> dict:
    return {**{m.key: 1.0 for m in METRICS}, "model_bound_ms": bound,
            **model_times(models, frames=10, faces=10, inference_slots=1, intra_op_threads=1, cpus=1)}


def test_table_has_a_row_per_model_and_ratios():
    base = {"240p": run({"inswapper_128": {"seconds": 0.1, "count": 10}}, 10.0)}
    compare = {"240p": run({"inswapper_128": {"seconds": 0.05, "count": 10},
                            "gfpgan_1.4": {"seconds": 0.3, "count": 10}}, 35.0)}
    assert model_names([base["240p"], compare["240p"]]) == ["inswapper_128", "gfpgan_1.4"]
    rows = {row[0]: row[1:] for row in table_rows(["240p"], base, compare)}
    assert rows["model inswapper_128 ms/face"] == ["10.00", "5.00", "0.50x"]
    assert rows["model gfpgan_1.4 ms/face"] == ["-", "30.00", "-"]
    assert rows["model gfpgan_1.4 calls/frame"] == ["-", "1.000", "-"]
    assert rows["model-bound ms/frame (compute / cores)"] == ["10.00", "35.00", "3.50x"]
    assert "model inswapper_128 ms/face" in render(table_rows(["240p"], base))


def test_model_bound_by_cpu_time_needs_one_intra_op_thread():
    cpu = {"hyperswap_1a_256": {"seconds": 1.5, "count": 100}, "gfpgan_1.4": {"seconds": 4.5, "count": 25}}
    result = model_times(timings(), frames=100, faces=100, inference_slots=2, intra_op_threads=1, cpus=2,
                         cpu_timings=cpu)
    assert result["model_calls_cpu_ms"] == pytest.approx(60.0)  # under the 75 ms of wall: no waiting for a core
    assert result["model_bound_cpu_ms"] == pytest.approx(30.0)
    # with intra-op threads the calling thread's CPU time misses the pool threads' share: no figure
    wide = model_times(timings(), frames=100, faces=100, inference_slots=1, intra_op_threads=2, cpus=2,
                       cpu_timings=cpu)
    assert wide["model_calls_cpu_ms"] is None and wide["model_bound_cpu_ms"] is None
    assert model_times(timings(), frames=100, faces=100, inference_slots=2, intra_op_threads=1,
                       cpus=2)["model_bound_cpu_ms"] is None


def test_cpu_share_is_all_cpu_over_the_models():
    from facefusion_batch.bench.worker import cpu_share

    assert cpu_share(110.0, 10.0, 100.0) == pytest.approx(1.2)
    assert cpu_share(110.0, None, 100.0) == pytest.approx(1.1)
    assert cpu_share(None, 10.0, 100.0) is None and cpu_share(110.0, 10.0, None) is None


def test_guarded_session_adds_cpu_time_not_waiting(tmp_path):
    """A call that waits (here: sleeps) adds its wall time to `timings` and next to no CPU to `cpu_timings`;
    a call that computes adds CPU."""
    import threading
    import time
    from pathlib import Path

    from facefusion_batch.models.sessions import GuardedSession
    from facefusion_batch.timing import Timings

    class Busy:
        def run(self, names, feeds, options):
            end = time.thread_time() + 0.02
            while time.thread_time() < end:
                pass
            return [1]

    class Waiting:
        def run(self, names, feeds, options):
            time.sleep(0.1)
            return [2]

    class Pool:
        def __init__(self):
            self.timings, self.cpu_timings = Timings(), Timings()

        def entry(self, path):
            return (Busy() if path.name == "busy.onnx" else Waiting()), None

        def run(self, session, feeds, names=None, options=None):  # SessionPool.run: plain run on CPU
            return session.run(names, feeds, options)

    pool = Pool()
    slots = threading.Semaphore(1)
    assert GuardedSession(pool, Path("busy.onnx"), slots).run(None, {}) == [1]
    assert GuardedSession(pool, Path("wait.onnx"), slots).run(None, {}) == [2]
    wall, cpu = pool.timings.snapshot(), pool.cpu_timings.snapshot()
    assert cpu["busy"]["seconds"] >= 0.02 and cpu["busy"]["count"] == 1
    assert wall["wait"]["seconds"] >= 0.1 and cpu["wait"]["seconds"] < 0.05

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

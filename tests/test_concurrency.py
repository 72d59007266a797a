"""What runs at once is derived in one place and shown by --print-settings."""
from __future__ import annotations

import json
import os

from facefusion_batch.cli import main
from facefusion_batch.concurrency import concurrency_of
from facefusion_batch.settings import Settings


def test_cpu_and_gpu_plans():
    cpu = concurrency_of(Settings(execution_thread_count=4, execution_queue_count=3), cpus=16)
    assert (cpu.frame_threads, cpu.frames_in_flight, cpu.inference_slots, cpu.intra_op_threads,
            cpu.micro_batch, cpu.batcher_producers) == (4, 12, 4, 4, 1, 4)
    gpu = concurrency_of(Settings(execution_thread_count=4, execution_providers=("cuda", "cpu")), cpus=16)
    assert (gpu.inference_slots, gpu.intra_op_threads, gpu.micro_batch) == (2, 8, 8)
    assert cpu.opencv_threads == 4 and gpu.opencv_threads == 4  # 16 cores over 4 frame threads
    assert concurrency_of(Settings(execution_thread_count=2), cpus=2).opencv_threads == 1  # the frame threads fill the cores
    assert concurrency_of(Settings(execution_thread_count=8), cpus=2).opencv_threads == 1
    fixed = concurrency_of(Settings(execution_inference_slots=3, batch_size=2, ray_workers=5), cpus=2)
    assert (fixed.inference_slots, fixed.intra_op_threads, fixed.micro_batch, fixed.ray_workers) == (3, 1, 2, 5)


def test_print_settings_shows_the_derived_concurrency(capsys, monkeypatch):
    monkeypatch.setenv("FFB_EXECUTION_THREAD_COUNT", "3")
    assert main(["run", "--print-settings", "--json"]) == 0
    rows = {row["key"]: row for row in json.loads(capsys.readouterr().out) if row["section"] == "concurrency"}
    assert rows["frames_in_flight"] == {"section": "concurrency", "key": "frames_in_flight", "value": "6",
                                        "origin": "derived"}
    assert set(rows) >= {"inference_slots", "intra_op_threads", "micro_batch", "batcher_producers", "ray_workers"}


def test_building_an_engine_gives_opencv_the_cores_the_frame_threads_leave(tmp_path):
    import cv2

    from facefusion_batch.engines import build_engine

    before = cv2.getNumThreads()
    try:
        settings = Settings(engine="offline", execution_thread_count=1, cache_path=tmp_path / "cache")
        engine = build_engine(settings)
        engine.close()
        assert cv2.getNumThreads() == concurrency_of(settings).opencv_threads == max(1, os.cpu_count() or 1)
        engine = build_engine(Settings(engine="offline", execution_thread_count=64, cache_path=tmp_path / "cache"))
        engine.close()
        assert cv2.getNumThreads() == 1
    finally:
        cv2.setNumThreads(before)

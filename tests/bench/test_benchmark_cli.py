"""`ffb benchmark` end to end on the offline engine: a 1 s 240p clip, base and compare runs in workers."""
import json
from pathlib import Path

import pytest

from facefusion_batch.bench.bound import BOUNDS
from facefusion_batch.bench.report import METRICS
from facefusion_batch.cli import main

SOURCE = Path(__file__).resolve().parents[2] / "examples" / "source.jpg"


def test_benchmark_json_has_every_metric_with_sane_values(offline_env, capsys):
    memory = offline_env / "memory.ini"
    memory.write_text("[frame_extraction]\nframe_transport = memory\n")
    code = main(["benchmark", "240p", "--seconds", "1", "--json", "--engine", "offline", "--source", str(SOURCE),
                 "--compare", str(memory)])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    base, compare = result["runs"]["base"]["240p"], result["runs"]["compare"]["240p"]
    for run in (base, compare):
        assert {m.key for m in METRICS} <= set(run)
        assert run["engine"] == "offline" and run["frames"] == 50 and run["targets"] == 2
        assert run["e2e_fps"] > 0 and run["model_fps"] >= run["e2e_fps"] * 0.5
        assert 0 < run["detector_calls_per_frame"] <= 1
        assert 0 < run["model_detector_calls_per_frame"] <= 1
        assert run["peak_rss_mb"] is None or run["peak_rss_mb"] > 0
        for stage in ("decode", "detect", "track", "swap", "encode"):
            assert run[f"{stage}_ms"] > 0
        assert run["paste_ms"] is None  # inside swap in both engines
        assert 0 < run["second_target_start_ms"] < run["second_target_first_frame_ms"]
        assert run["second_target_probe_ms"] == 0  # probed while the first target ran
        assert run["startup_ms"] > 0
        assert run["faces_per_frame"] == 1.0  # the clip's one face, found on every frame
        assert 0 < run["ffmpeg_cpu_ms"] and 0 < run["model_cpu_ms"] < run["cpu_ms"] and 0 < run["cores_busy"] <= 2.5
        # Every model the engine opened, timed by the session pool: the offline engine's MediaPipe models.
        assert {"face_detection_short_range", "face_landmark"} <= set(run["models"]), run["models"]
        for name, model in run["models"].items():
            assert model["calls"] > 0 and model["ms_per_call"] > 0 and model["ms_per_face"] > 0, name
        assert 0 < run["models"]["face_landmark"]["calls_per_frame"] <= 1  # reused between reference frames
        assert 0 < run["model_bound_ms"] <= run["model_compute_ms"] < 1000 / run["e2e_fps"] * 2
        # the IO path alone, what limits the run, what it decoded and encoded with, and no GPU figures here
        assert run["io_fps"] > 0 and run["decode_fps"] > 0 and run["io_ffmpeg_cpu_ms"] > 0
        assert run["bound"] in BOUNDS and run["bound_reason"] and run["bound_headroom"] > 0
        assert run["encoder"] == "libx264 (CPU)" and run["decoder"] == "h264 in software (libavcodec)"
        assert "NVDEC" in run["nvdec"] and "NVENC" in run["nvenc"] or "nvenc" in run["nvenc"]
        assert run["gpu_busy_percent"] is None and run["gpu_memory_mb"] is None and run["gpu_reason"]
    assert compare["settings"]["frame_transport"] == "memory"
    assert base["peak_temp_mb"] > compare["peak_temp_mb"] >= 0  # temp transport spools frames, memory doesn't
    assert result["ratios"]["240p"]["e2e_fps"] == pytest.approx(compare["e2e_fps"] / base["e2e_fps"])
    assert list((offline_env / "tmp").iterdir()) == []  # workers leave nothing behind
    assert len(list((offline_env / "cache" / "bench").glob("*.mp4"))) == 1  # one clip, reused by both runs
    assert "240p base: running" in err


def test_table_output_and_cached_clip(offline_env, capsys):
    args = ["benchmark", "240p", "--seconds", "0.2", "--engine", "offline", "--source", str(SOURCE)]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "end-to-end fps" in out and "240p" in out and "made clip" in err
    assert "model face_landmark ms/face" in out and "model-bound ms/frame" in out
    assert "decode+encode-only fps" in out and "bound, 240p base: " in out and "encoder: libx264 (CPU)" in out
    assert "GPU figures: none (" in out
    assert "size 1/1: 240p" in err  # progress per size
    assert main(args) == 0
    assert "cached clip" in capsys.readouterr().err


@pytest.mark.parametrize("args, fragment", [
    (["8k"], "unknown resolution 8k"),
    (["240p", "--seconds", "0"], "--seconds must be above 0"),
    (["240p", "--face", "/nonexistent.jpg"], "no such image (--face)"),
])
def test_bad_usage_exits_2(offline_env, capsys, args, fragment):
    assert main(["benchmark", *args, "--source", str(SOURCE)]) == 2
    assert fragment in capsys.readouterr().err


def test_worker_failure_keeps_its_exit_code(offline_env, capsys):
    code = main(["benchmark", "240p", "--seconds", "0.2", "--engine", "neural", "--source", str(SOURCE)])
    assert code == 3  # no neural model files: the worker's ModelError
    assert "base run" in capsys.readouterr().err

"""`ffb benchmark --engine neural` on benchmarks/standin_models.py's models: a row per processor model."""
import json
import os
import sys
from pathlib import Path

import pytest

from facefusion_batch.cli import main

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "examples" / "source.jpg"
sys.path.insert(0, str(ROOT / "benchmarks"))

import standin_models  # noqa: E402


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("standins")
    standin_models.build(directory, standin_models.bench_face(SOURCE), convs=1, channels=4)
    return directory


def _benchmark(profile: Path, capsys, text: str) -> dict:
    """`ffb benchmark 240p --engine neural --json` with `text` as the profile: the base run's 240p results."""
    profile.write_text(text)
    code = main(["benchmark", "240p", "--seconds", "0.4", "--engine", "neural", "--profile", str(profile),
                 "--source", str(SOURCE), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)["runs"]["base"]["240p"]


def test_neural_benchmark_times_every_processor_model(models, env_with, capsys, monkeypatch):
    tmp_path = env_with(models)
    # a slot per core: one intra-op thread per call, so the calls' CPU time is all of their compute
    monkeypatch.setenv("FFB_EXECUTION_INFERENCE_SLOTS", str(os.cpu_count() or 1))
    run = _benchmark(tmp_path / "chain.ini", capsys,
                     "[processors]\nprocessors = face_swapper face_enhancer\nface_swapper_model = hyperswap_1a_256\n"
                     "face_enhancer_model = gfpgan_1.4\n[face_masker]\nface_mask_types = box occlusion region\n")
    assert run["faces_per_frame"] == 1.0  # the stand-in detectors find the clip's face on every frame
    per_face = {name: model["ms_per_face"] for name, model in run["models"].items()}
    assert {"hyperswap_1a_256", "gfpgan_1.4", "xseg_1", "bisenet_resnet_34", "scrfd_2.5g"} <= set(per_face), per_face
    assert all(ms > 0 for ms in per_face.values())
    assert run["models"]["gfpgan_1.4"]["calls_per_frame"] == pytest.approx(1.0)  # only swapped faces, once
    assert run["models"]["xseg_1"]["calls_per_frame"] == pytest.approx(2.0)  # swap crop and enhancer crop
    assert 0 < run["model_bound_ms"] <= run["model_compute_ms"]
    assert 0 < run["model_bound_cpu_ms"] <= run["model_calls_cpu_ms"] < run["cpu_ms"]
    assert run["cpu_over_model_cpu"] > 1  # decoding, tracking, warps and encoding are not free


def test_the_area_masks_landmarkers_run_only_where_detection_runs(models, env_with, capsys):
    tmp_path = env_with(models)
    run = _benchmark(tmp_path / "area.ini", capsys, "[processors]\nprocessors = face_swapper\n"
                     "face_swapper_model = hyperswap_1a_256\n[face_masker]\nface_mask_types = box area\n")
    detections = run["models"]["scrfd_2.5g"]["calls_per_frame"]
    assert detections < 1  # keypoint reuse: the clip's still face is detected on reference frames only
    for name in ("2dfan4", "fan_68_5"):
        assert run["models"][name]["calls_per_frame"] == pytest.approx(detections), name
    assert "peppa_wutz" not in run["models"]

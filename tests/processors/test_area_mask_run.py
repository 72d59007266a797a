"""`ffb run --engine neural --face-mask-types area --face-mask-areas ...` end to end on a FaceFusion-layout
models dir of stand-ins: the pasted pixels are exactly those inside the chosen areas' hull (softened edge),
the hull follows the landmarker (or the 68-from-5 estimate below its score), on images and video; the
offline engine and missing models are refused in one line."""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

import standins
from conftest import FACE_BOX, FACE_KPS, FRAME_H, FRAME_W, cpu_session, decode_all, detector_faces, face_frame, \
    make_clip
from facefusion_batch.cli import main
from facefusion_batch.processors.landmarker import Estimator68From5
from facefusion_batch.processors.masks import AREA_POINTS

MARKER = (240, 112)  # a strong blue dot between the eyes: the 2dfan4 stand-in's face centres on it
SCALE = 195 / float(max(FACE_BOX[2] - FACE_BOX[0], FACE_BOX[3] - FACE_BOX[1]))  # the landmarker crop's
GREY = 127.5  # the zero swapper's face (hyperswap de-normalises 0 to mid grey)


@pytest.fixture(scope="module")
def area_models(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("area_models")
    standins.build_arcface(directory / "arcface_w600k_r50.onnx")
    standins.build_scrfd(directory / "scrfd_2.5g.onnx", detector_faces(640 / max(FRAME_W, FRAME_H)))
    standins.build_swapper(directory / "hyperswap_1a_256.onnx", 256, mode="zero")
    standins.build_2dfan4(directory / "2dfan4.onnx")
    standins.build_peppa_wutz(directory / "peppa_wutz.onnx")
    standins.build_fan_68_5(directory / "fan_68_5.onnx")
    for model in directory.glob("*.onnx"):
        standins.write_facefusion_hash(model)
    return directory


@pytest.fixture
def area_env(env_with, area_models) -> Path:
    return env_with(area_models)


def marked_frame() -> np.ndarray:
    frame = face_frame()
    cv2.circle(frame, MARKER, 4, (255, 0, 0), -1)
    return frame


@pytest.fixture
def picture(tmp_path) -> Path:
    path = tmp_path / "portrait.png"
    cv2.imwrite(str(path), marked_frame())
    return path


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "source.png"
    cv2.imwrite(str(path), cv2.flip(face_frame(), 1))
    return path


def run(capsys, *args: str) -> tuple[int, dict, str]:
    code = main(["run", "--json", "-q", "--no-watermark", *args])  # pixels outside the hull must stay exact
    captured = capsys.readouterr()
    out = captured.out.strip()
    return code, json.loads(out) if out.startswith("{") else {}, captured.err


def swap_args(*extra: str) -> list[str]:
    return ["--engine", "neural", "--processors", "face_swapper", "--face-swapper-model", "hyperswap_1a_256", *extra]


def hull(points: np.ndarray, shape: tuple[int, int], grow: int) -> np.ndarray:
    """The filled hull of `points` (frame pixels), grown (or, negative, shrunk) by `grow` pixels."""
    mask = np.zeros(shape, np.uint8)
    cv2.fillConvexPoly(mask, cv2.convexHull(np.round(points).astype(np.int32)), 1)
    kernel = np.ones((2 * abs(grow) + 1, 2 * abs(grow) + 1), np.uint8)
    return (cv2.dilate(mask, kernel) if grow > 0 else cv2.erode(mask, kernel) if grow < 0 else mask).astype(bool)


def landmarker_points(areas: tuple[str, ...]) -> np.ndarray:
    """Where the 2dfan4 stand-in puts the areas' points in the frame (independent of ffb's code path): its
    shape around the marker, scaled from the 256 crop back to the frame."""
    centre = np.argwhere(np.all(marked_frame() == (255, 0, 0), axis=-1))[:, ::-1].mean(0)
    points = centre + standins.standin_offsets() / SCALE
    return points[[i for area in areas for i in AREA_POINTS[area]]]


def changed(before: np.ndarray, after: np.ndarray, at_least: int = 1) -> np.ndarray:
    return np.abs(after.astype(np.int16) - before.astype(np.int16)).max(axis=-1) >= at_least


@pytest.mark.parametrize("areas", [("lower-face",), ("upper-face",), ("upper-face", "lower-face", "mouth")])
def test_only_the_chosen_areas_hull_is_pasted(area_env, picture, source, capsys, areas):
    out = area_env / "out"
    code, summary, err = run(capsys, *swap_args("--face-mask-types", "area", "--face-mask-areas", *areas),
                             "-s", str(source), "-t", str(picture), "-o", str(out))
    assert code == 0, err
    assert {"2dfan4", "fan_68_5"} <= set(summary["models"]) and "peppa_wutz" not in summary["models"]
    before, after = cv2.imread(str(picture)), cv2.imread(str(out / "portrait.png"))
    points = landmarker_points(areas)
    # nothing outside the hull (a pixel's interpolation to spare) changes at all ...
    assert not changed(before, after)[~hull(points, before.shape[:2], 2)].any()
    # ... and deep inside it (past the softened edge: sigma 5 crop px) the swapped face is pasted whole
    inner = hull(points, before.shape[:2], -10)
    assert inner.sum() > 150
    assert np.abs(after[inner].astype(np.float32) - GREY).max() <= 1.0
    # the edge is soft: between the two, values lie between the frame's and the pasted grey
    edge = hull(points, before.shape[:2], 0) & ~inner
    partly = changed(before, after)[edge] & (np.abs(after[edge].astype(np.float32) - GREY).max(-1) > 1.5)
    assert partly.mean() > 0.3


def test_with_the_box_mask_the_strictest_wins(area_env, picture, source, capsys):
    out = area_env / "out"
    code, _, err = run(capsys, *swap_args("--face-mask-types", "box", "area", "--face-mask-areas", "upper-face"),
                       "-s", str(source), "-t", str(picture), "-o", str(out))
    assert code == 0, err
    before, after = cv2.imread(str(picture)), cv2.imread(str(out / "portrait.png"))
    assert not changed(before, after)[~hull(landmarker_points(("upper-face",)), before.shape[:2], 2)].any()
    assert changed(before, after, 20).sum() > 500


def test_below_the_landmarker_score_the_68_from_5_estimate_draws_the_hull(area_env, area_models, picture, source,
                                                                          capsys):
    # the stand-in 2dfan4 scores at most 1, never above a threshold of 1: every face falls back to the estimate
    out = area_env / "out"
    code, _, err = run(capsys, *swap_args("--face-mask-types", "area", "--face-mask-areas", "lower-face",
                                          "--face-landmarker-score", "1"),
                       "-s", str(source), "-t", str(picture), "-o", str(out))
    assert code == 0, err
    before, after = cv2.imread(str(picture)), cv2.imread(str(out / "portrait.png"))
    (estimate,) = Estimator68From5(cpu_session(area_models / "fan_68_5.onnx")).estimate([FACE_KPS])
    points = estimate[list(AREA_POINTS["lower-face"])]
    assert not changed(before, after)[~hull(points, before.shape[:2], 2)].any()
    assert np.abs(after[hull(points, before.shape[:2], -10)].astype(np.float32) - GREY).max() <= 1.0
    # ... which is not where the landmarker's hull is
    assert not hull(landmarker_points(("lower-face",)), before.shape[:2], 0)[hull(points, before.shape[:2], -10)].all()


def test_score_zero_needs_only_the_estimator(area_env, area_models, picture, source, capsys, tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    for name in ("arcface_w600k_r50", "scrfd_2.5g", "hyperswap_1a_256", "fan_68_5"):
        for suffix in (".onnx", ".hash"):
            (models / f"{name}{suffix}").write_bytes((area_models / f"{name}{suffix}").read_bytes())
    code, summary, err = run(capsys, *swap_args("--face-mask-types", "area", "--face-landmarker-score", "0",
                                                "--models-path", str(models)),
                             "-s", str(source), "-t", str(picture), "-o", str(tmp_path / "out"))
    assert code == 0, err
    assert "fan_68_5" in summary["models"] and "2dfan4" not in summary["models"]


def test_many_loads_both_landmarkers(area_env, picture, source, capsys):
    code, summary, err = run(capsys, *swap_args("--face-mask-types", "area", "--face-landmarker-model", "many"),
                             "-s", str(source), "-t", str(picture), "-o", str(area_env / "out"))
    assert code == 0, err
    assert {"2dfan4", "peppa_wutz", "fan_68_5"} <= set(summary["models"])


def test_area_on_video_follows_the_marker_every_frame(area_env, source, capsys, tmp_path):
    clip = make_clip(tmp_path / "talk.mp4", frames=8, image=marked_frame())
    out = area_env / "out"
    code, summary, err = run(capsys, *swap_args("--face-mask-types", "area", "--face-mask-areas", "lower-face"),
                             "-s", str(source), "-t", str(clip), "-o", str(out))
    assert code == 0, err
    before, after = decode_all(clip), decode_all(out / "talk.mp4")
    assert len(after) == len(before) == 8
    points = landmarker_points(("lower-face",))
    outside = ~hull(points, before.shape[1:3], 4)
    outside[-24:, :] = False  # the clip's moving strip
    inner = hull(points, before.shape[1:3], -10)
    for b, a in zip(before, after):
        diff = np.abs(a.astype(np.int16) - b.astype(np.int16)).max(-1)
        assert np.percentile(diff[outside], 99.5) <= 12 and diff[outside].mean() < 2  # the encoder's noise
        assert np.abs(a[inner].astype(np.float32) - GREY).mean() < 3


def test_the_enhancer_alone_ignores_the_area_mask_and_loads_no_landmarker(area_env, area_models, picture, source,
                                                                          capsys, tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    for name in ("arcface_w600k_r50", "scrfd_2.5g"):
        for suffix in (".onnx", ".hash"):
            (models / f"{name}{suffix}").write_bytes((area_models / f"{name}{suffix}").read_bytes())
    standins.build_gfpgan(models / "gfpgan_1.4.onnx")
    standins.write_facefusion_hash(models / "gfpgan_1.4.onnx")
    code, summary, err = run(capsys, "--engine", "neural", "--processors", "face_enhancer", "--face-mask-types",
                             "box", "area", "--models-path", str(models),
                             "-s", str(source), "-t", str(picture), "-o", str(tmp_path / "out"))
    assert code == 0, err
    assert not {"2dfan4", "fan_68_5"} & set(summary["models"])


def test_missing_landmarker_models_are_named_with_the_download_command(area_env, area_models, picture, source,
                                                                       capsys, tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    for name in ("arcface_w600k_r50", "scrfd_2.5g", "hyperswap_1a_256"):
        for suffix in (".onnx", ".hash"):
            (models / f"{name}{suffix}").write_bytes((area_models / f"{name}{suffix}").read_bytes())
    code, _, err = run(capsys, *swap_args("--face-mask-types", "box", "area", "--face-landmarker-model", "many",
                                          "--models-path", str(models)),
                       "-s", str(source), "-t", str(picture), "-o", str(tmp_path / "out"))
    assert code == 3 and err.strip().count("\n") == 0
    assert "ffb models download fan_68_5 2dfan4 peppa_wutz" in err
    assert "face_mask_types area needs the 68-point face landmarker" in err
    assert not (tmp_path / "out" / "portrait.png").exists()


def test_the_offline_engine_refuses_the_area_mask_in_one_line(area_env, picture, source, capsys, tmp_path):
    code, summary, err = run(capsys, "--engine", "offline", "--face-mask-types", "box", "area",
                             "--models-path", str(tmp_path / "none"),
                             "-s", str(source), "-t", str(picture), "-o", str(tmp_path / "out"))
    assert code == 2 and err.strip().count("\n") == 0
    assert "area masks" in err and "own swapper and mesh mask" in err and "use --engine neural" in err
    assert "ffb models download" in err and "fan_68_5" in err and "2dfan4" in err
    assert not (tmp_path / "out" / "portrait.png").exists()


def test_bad_landmarker_settings_are_one_line_exit_2(area_env, picture, source, capsys, tmp_path):
    code, _, err = run(capsys, *swap_args("--face-mask-types", "area", "--face-landmarker-score", "1.5"),
                       "-s", str(source), "-t", str(picture), "-o", str(area_env / "out"))
    assert code == 2 and "--face-landmarker-score: 1.5 is out of range 0.0..1.0" in err and err.count("\n") == 1
    ini = tmp_path / "facefusion.ini"
    ini.write_text("[face_landmarker]\nface_landmarker_model = dlib\n")
    code, _, err = run(capsys, *swap_args("--face-mask-types", "area", "--profile", str(ini)),
                       "-s", str(source), "-t", str(picture), "-o", str(area_env / "out"))
    assert code == 2 and "'dlib' is not one of: many, 2dfan4, peppa_wutz" in err and err.strip().count("\n") == 0


def test_a_facefusion_ini_with_the_landmarker_keys_runs_as_is(area_env, picture, source, capsys, tmp_path):
    ini = tmp_path / "facefusion.ini"
    ini.write_text("[face_landmarker]\nface_landmarker_model = 2dfan4\nface_landmarker_score = 0.3\n"
                   "[face_masker]\nface_mask_types = area\nface_mask_areas = lower-face\n"
                   "[processors]\nprocessors = face_swapper\nface_swapper_model = hyperswap_1a_256\n")
    code, summary, err = run(capsys, "--engine", "neural", "--profile", str(ini), "-s", str(source),
                             "-t", str(picture), "-o", str(tmp_path / "out"))
    assert code == 0, err
    assert "face_landmarker" not in err  # read, not reported as ignored
    before, after = cv2.imread(str(picture)), cv2.imread(str(tmp_path / "out" / "portrait.png"))
    assert not changed(before, after)[~hull(landmarker_points(("lower-face",)), before.shape[:2], 2)].any()


def test_models_list_shows_the_landmarkers(area_env, capsys):
    assert main(["models", "list", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    for name, licence in (("2dfan4", "MIT"), ("peppa_wutz", "Apache-2.0"), ("fan_68_5", "OpenRAIL-M")):
        assert rows[name]["role"] == "face_landmarker" and rows[name]["status"] == "ok"
        assert licence in rows[name]["licence"] and rows[name]["commercial"] == "yes"

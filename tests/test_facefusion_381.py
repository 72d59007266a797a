"""FaceFusion 3.8.1 users, for real: its own facefusion.ini filled in runs, its flags get a FaceFusion-aware
line, its values (auto filters, every occluder) work, and an ini as editors save it reads."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from conftest import FACE_BOX, face_frame, make_clip
from facefusion_batch.cli import main
from facefusion_batch.errors import SettingsError
from facefusion_batch.settings import load_profile, load_settings

DATA = Path(__file__).parent / "data"
STOCK = DATA / "facefusion-3.8.1.ini"
FILLED = DATA / "facefusion-3.8.1-filled.ini"


@pytest.fixture
def filled_models(tmp_path, neural_models) -> Path:
    """The stand-ins plus what the filled file asks for: hyperswap_1a_256, every XSeg, fairface."""
    import standins

    models = tmp_path / "models"
    shutil.copytree(neural_models, models)
    standins.build_swapper(models / "hyperswap_1a_256.onnx", 256, mode="identity")
    for name in ("xseg_2", "xseg_3"):
        standins.build_occluder(models / f"{name}.onnx", np.ones((256, 256), np.float32))
    standins.build_fairface(models / "fairface.onnx")
    for model in models.glob("*.onnx"):
        standins.write_facefusion_hash(model)
    return models


def test_filled_facefusion_ini_runs_as_is(env_with, filled_models, source_image, capsys, tmp_path):
    env_with(filled_models, engine=None)
    clip = make_clip(tmp_path / "a.mp4", frames=4)
    code = main(["run", "--profile", str(FILLED), "-s", str(source_image), "-t", str(clip), "-o",
                 str(tmp_path / "out"), "--json", "-q"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["engine"] == "neural" and summary["counts"]["done"] == 1
    assert {"hyperswap_1a_256", "gfpgan_1.4", "xseg_1", "xseg_2", "xseg_3", "fairface", "yoloface_8n"} <= \
        set(summary["models"])
    ignored = [line for line in captured.err.splitlines() if "FaceFusion settings ffb does not have" in line]
    assert len(ignored) == 1 and "ffb: error" not in captured.err


def test_stock_facefusion_ini_saved_with_a_bom_reads(tmp_path):
    profile = tmp_path / "facefusion.ini"
    profile.write_bytes(b"\xef\xbb\xbf" + STOCK.read_bytes())
    assert load_settings(profile, {}, {}).settings == load_settings(STOCK, {}, {}).settings
    profile.write_bytes(b"\xef\xbb\xbf[face_detector]\r\nface_detector_model = yolo_face\r\n")
    assert load_profile(profile).values == {"face_detector_model": "yoloface"}


@pytest.mark.parametrize("text, expected", [
    ("face_detector_model = scrfd\n[face_detector]\n", "line 1: 'face_detector_model = scrfd' comes before any"),
    ("[misc]\nlog_level = info\n\n[misc]\n", "line 4: section [misc] appears twice"),
    ("[misc]\nlog_level = info\nlog_level = error\n", "line 3: [misc] log_level is set twice"),
    ("[misc]\nlog_level = info\n= broken\n", "line 3: '= broken' is not key = value"),
    ("[misc\nlog_level = info\n", "line 1: '[misc' comes before any [section] header"),
    ("[paths]\njust some words\n[misc]\nalso this\n", "line 2: 'just some words' is not key = value (and 1 more"),
])
def test_a_malformed_ini_names_the_file_and_the_line(tmp_path, capsys, text, expected):
    profile = tmp_path / "broken.ini"
    profile.write_text(text)
    with pytest.raises(SettingsError) as error:
        load_profile(profile)
    message = str(error.value)
    assert message.startswith(f"{profile}: not a valid ini file (") and expected in message, message
    assert "PosixPath" not in message and "\n" not in message
    assert main(["run", "--profile", str(profile), "--print-settings"]) == 2
    err = capsys.readouterr().err
    assert "PosixPath" not in err and expected in err


def test_an_ini_that_is_not_utf8_says_so(tmp_path):
    profile = tmp_path / "latin1.ini"
    profile.write_bytes("[misc]\nlog_level = caf\xe9\n".encode("latin-1"))
    with pytest.raises(SettingsError, match=r"\(line 2 is not UTF-8 text\); save it as UTF-8"):
        load_profile(profile)


@pytest.mark.parametrize("text, hint", [
    ("[face_tracker]\nface_tracker_scor = 0.2\n", "face_tracker_scor: unknown key (did you mean face_tracker_score?)"),
    ("[frame_distrbution]\ntarget_frame_amount = 2\n", "unknown section [frame_distrbution] (did you mean "
                                                       "frame_distribution?)"),
    ("[workflow]\nworkflow_strategie = disk\n", "did you mean workflow_strategy?"),
    ("[frame_extraction]\ntemp_pixel_fromat = bgr24\n", "did you mean temp_pixel_format?"),
    ("[processors]\nbackground_remover_fill_colour = 0\n", "did you mean background_remover_fill_color?"),
    ("[face_detector]\nface_tracker_score = 0.2\n", "face_tracker_score: unknown key here (FaceFusion's key of "
                                                    "[face_tracker])"),
])
def test_did_you_mean_names_the_3_8_1_key(tmp_path, text, hint):
    profile = tmp_path / "p.ini"
    profile.write_text(text)
    with pytest.raises(SettingsError) as error:
        load_profile(profile)
    assert hint in str(error.value)


@pytest.mark.parametrize("args, said", [
    (["--face-tracker-score", "0.3"], "--face-tracker-score 0.3 (ffb follows each face across frames itself"),
    (["--target-frame-amount", "3"], "--target-frame-amount 3 (ffb's face tracks span the frames"),
    (["--workflow-mode", "image-to-video"], "--workflow-mode image-to-video (ffb takes each target as an image"),
    (["--temp-pixel-format", "bgr24"], "--temp-pixel-format bgr24 (ffb keeps an image's alpha channel"),
])
def test_3_8_1_flags_get_a_facefusion_aware_line(capsys, args, said):
    assert main(["run", *args, "--print-settings", "--json"]) == 0
    captured = capsys.readouterr()
    assert "ffb: warning: FaceFusion options ffb does not have, ignored" in captured.err and said in captured.err
    assert "No such option" not in captured.err


def test_temp_pixel_format_bgra_is_refused_with_the_fix(capsys):
    assert main(["run", "--temp-pixel-format", "bgra", "--print-settings"]) == 2
    err = capsys.readouterr().err
    assert "--temp-pixel-format bgra: FaceFusion's option" in err and "set it to bgr24" in err


@pytest.mark.parametrize("strategy, transport", [("disk", "temp"), ("memory", "memory")])
def test_workflow_strategy_is_ffbs_frame_transport(capsys, strategy, transport):
    assert main(["run", "--workflow-strategy", strategy, "--print-settings", "--json"]) == 0
    rows = {row["key"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["frame_transport"]["value"] == transport


@pytest.mark.parametrize("args, key, value", [
    (["--face-selector-gender", "auto"], "face_selector_gender", "auto"),
    (["--face-selector-race", "auto"], "face_selector_race", "auto"),
    (["--face-occluder-model", "many"], "face_occluder_model", "many"),
])
def test_valid_3_8_1_values_are_accepted(capsys, args, key, value):
    assert main(["run", *args, "--print-settings", "--json"]) == 0, capsys.readouterr().err
    rows = {row["key"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows[key]["value"] == value


@pytest.mark.parametrize("args", [["--source-paths"], ["--source-paths", "-t", "a.mp4"],
                                  ["--source-paths", "--target-path", "a.mp4"]])
def test_source_paths_with_no_value_says_so(capsys, args):
    assert main(["run", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "ffb: error: --source-paths needs at least one image after it: --source-paths face.jpg " \
                  "(ffb's --source face.jpg)"


def _tinted(path: Path, red: bool) -> Path:
    """face_frame with the face tinted so that the fairface stand-in calls it female (red) or male (blue)."""
    frame = face_frame()
    x1, y1, x2, y2 = FACE_BOX.astype(int)
    channel = 2 if red else 0  # BGR
    frame[y1:y2, x1:x2, channel] = 250
    cv2.imwrite(str(path), frame)
    return path


@pytest.mark.parametrize("flag", ["--face-selector-gender", "--face-selector-race"])
def test_auto_filters_take_the_source_faces_own_attributes(env, capsys, tmp_path, neural_models, flag):
    """FaceFusion's auto: only target faces of the source face's gender (race). The same target, two sources
    the classifier tells apart: exactly one of them has the face swapped."""
    import standins

    models = tmp_path / "models"
    shutil.copytree(neural_models, models)
    standins.write_facefusion_hash(standins.build_fairface(models / "fairface.onnx"))
    target = _tinted(tmp_path / "t.png", red=True)
    changed = {}
    for name, red in (("red", True), ("blue", False)):
        if flag == "--face-selector-race":  # the stand-in's race: black when green outweighs red
            source = tmp_path / f"{name}.png"
            frame = face_frame()
            x1, y1, x2, y2 = FACE_BOX.astype(int)
            frame[y1:y2, x1:x2, 1 if not red else 2] = 250
            cv2.imwrite(str(source), frame)
        else:
            source = _tinted(tmp_path / f"{name}.png", red)
        code = main(["run", "--engine", "neural", "--json", "-q", "--models-path", str(models), flag, "auto",
                     "-s", str(source), "-t", str(target), "-o", str(tmp_path / name)])
        summary = json.loads(capsys.readouterr().out)
        assert code == 0, summary
        out = tmp_path / name / "t.png"
        changed[name] = not np.array_equal(cv2.imread(str(out)), cv2.imread(str(target)))
    assert changed == {"red": True, "blue": False}


def test_occluder_many_takes_the_strictest_of_every_xseg():
    """FaceFusion's face_occluder_model many: the minimum of xseg_1, xseg_2 and xseg_3's masks."""
    from facefusion_batch.models.catalog import CATALOG
    from facefusion_batch.processors.masks import Occluder
    from facefusion_batch.processors.config import ProcessorConfig
    from facefusion_batch.processors.masks import MaskOptions

    class Session:
        def __init__(self, value: np.ndarray) -> None:
            self.value = value

        def run(self, names, feed):
            batch = next(iter(feed.values())).shape[0]
            return [np.repeat(self.value[None, :, :, None], batch, axis=0)]

        def get_inputs(self):
            return []

    left, top = np.ones((256, 256), np.float32), np.ones((256, 256), np.float32)
    left[:, :128] = 0
    top[:128, :] = 0
    crops = [np.full((128, 128, 3), 100, np.uint8)]
    one = Occluder(Session(left), CATALOG["xseg_1"]).masks(crops)[0]
    many = Occluder(Session(left), CATALOG["xseg_1"], (Session(top), CATALOG["xseg_2"]),
                    (Session(np.ones((256, 256), np.float32)), CATALOG["xseg_3"])).masks(crops)[0]
    assert one[100, 20] < 0.05 and one[20, 100] > 0.95  # left hidden, top right shown
    assert many[100, 20] < 0.05 and many[20, 100] < 0.05 and many[110, 110] > 0.95
    plan = ProcessorConfig(masks=MaskOptions(("box", "occlusion")), occluder="many")
    assert [n for n in plan.models() if n.startswith("xseg")] == ["xseg_1", "xseg_2", "xseg_3"]

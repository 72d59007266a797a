"""FaceFusion 3.8.1 parity, run through `ffb run`: every processor-user option of FaceFusion, as a flag and as a
facefusion.ini key, with FaceFusion's values -> the ffb setting it gives, or the clear refusal, or the one
warning that names it as ignored (docs/facefusion-ini.md is the table in words).

Facts from facefusion/facefusion at tag 3.8.1, commit 6f5e4b9d (program.py, choices.py,
processors/modules/*/core.py register_args and choices.py)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from facefusion_batch import facefusion_ini
from facefusion_batch.cli import main
from facefusion_batch.facefusion_flags import translate
from facefusion_batch.settings import FIELDS, FROM_FACEFUSION, choices

SWAPPERS = ("hyperswap_1a_256", "hyperswap_1b_256", "hyperswap_1c_256", "inswapper_128", "inswapper_128_fp16",
            "simswap_256", "simswap_unofficial_512", "ghost_1_256", "ghost_2_256", "ghost_3_256", "blendswap_256",
            "uniface_256", "hififace_unofficial_256")
ENHANCERS = ("gfpgan_1.2", "gfpgan_1.3", "gfpgan_1.4", "gpen_bfr_256", "gpen_bfr_512", "gpen_bfr_1024",
             "gpen_bfr_2048", "codeformer", "restoreformer_plus_plus")
ORDERS = ("left-right", "right-left", "top-bottom", "bottom-top", "small-large", "large-small", "best-worst",
          "worst-best")
RACES = ("white", "black", "latino", "asian", "indian", "arabic")
REGIONS = ("skin", "left-eyebrow", "right-eyebrow", "left-eye", "right-eye", "glasses", "nose", "mouth",
           "upper-lip", "lower-lip")
PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow")


@dataclass(frozen=True)
class Uses:
    """The option gives this ffb setting (field, value as --print-settings shows it)."""
    field: str
    value: str


@dataclass(frozen=True)
class Ignored:
    """The option is dropped: ffb does what it asks anyway (or it never changes the output); one warning."""


@dataclass(frozen=True)
class Refused:
    """The option is an error (exit 2) whose message holds this text."""
    text: str


# (FaceFusion ini key, FaceFusion's value as on its command line, what ffb does)
CASES: list[tuple[str, str, Any]] = [
    ("processors", "face_swapper", Uses("processors", "face_swapper")),
    ("processors", "face_swapper face_enhancer", Uses("processors", "face_swapper face_enhancer")),
    ("processors", "face_swapper lip_syncer", Refused("'lip_syncer' is not one of: face_swapper, face_enhancer")),
    *[("face_swapper_model", name, Uses("face_swapper_model", name)) for name in SWAPPERS],
    ("face_swapper_model", "roop", Refused("roop")),
    *[("face_swapper_pixel_boost", f"{n}x{n}", Uses("face_swapper_pixel_boost", f"{n}x{n}"))
      for n in (128, 256, 384, 512, 768, 1024)],
    ("face_swapper_pixel_boost", "2048x2048", Refused("'2048x2048' is not one of")),
    ("face_swapper_weight", "0.3", Uses("face_swapper_weight", "0.3")),
    ("face_swapper_weight", "1.5", Refused("out of range 0.0..1.0")),
    *[("face_enhancer_model", name, Uses("face_enhancer_model", name)) for name in ENHANCERS],
    ("face_enhancer_blend", "100", Uses("face_enhancer_blend", "100")),
    ("face_enhancer_blend", "101", Refused("out of range 0..100")),
    ("face_enhancer_weight", "0.75", Uses("face_enhancer_weight", "0.75")),
    *[("face_occluder_model", name, Uses("face_occluder_model", name)) for name in ("xseg_1", "xseg_2", "xseg_3",
                                                                                     "many")],
    *[("face_parser_model", f"bisenet_resnet_{n}", Uses("face_parser_model", f"bisenet_resnet_{n}"))
      for n in (18, 34)],
    ("face_mask_types", "box occlusion area region", Uses("face_mask_types", "box occlusion area region")),
    ("face_mask_types", "box hands", Refused("'hands' is not one of")),
    ("face_mask_areas", "upper-face lower-face mouth", Uses("face_mask_areas", "upper-face lower-face mouth")),
    ("face_mask_regions", " ".join(REGIONS), Uses("face_mask_regions", " ".join(REGIONS))),
    ("face_mask_regions", "eye-glasses", Refused("'eye-glasses' is not one of")),  # FaceFusion 2.x's name
    ("face_mask_blur", "0.5", Uses("face_mask_blur", "0.5")),
    ("face_mask_padding", "10 20", Uses("face_mask_padding", "10 20 10 20")),
    ("face_mask_padding", "101", Refused("give 1 to 4 percentages")),
    ("face_selector_mode", "many", Uses("face_selector_mode", "many")),
    ("face_selector_mode", "one", Uses("face_selector_mode", "one")),
    ("face_selector_mode", "reference", Uses("face_selector_mode", "reference")),
    *[("face_selector_order", order, Uses("face_selector_order", order)) for order in ORDERS],
    ("face_selector_age_start", "20", Uses("face_selector_age_start", "20")),
    ("face_selector_age_end", "60", Uses("face_selector_age_end", "60")),
    ("face_selector_age_end", "120", Refused("out of range 0..100")),
    *[("face_selector_gender", gender, Uses("face_selector_gender", gender)) for gender in ("auto", "female")],
    *[("face_selector_race", race, Uses("face_selector_race", race)) for race in ("auto", *RACES)],
    ("reference_face_distance", "0.3", Uses("reference_face_distance", "0.3")),
    ("reference_face_distance", "1.2", Refused("out of range 0.0..1.0")),
    ("reference_face_position", "0", Uses("reference_face_position", "0")),
    ("reference_face_position", "2", Uses("reference_face_position", "2")),
    ("reference_frame_number", "0", Uses("reference_frame_number", "0")),
    ("reference_frame_number", "120", Uses("reference_frame_number", "120")),
    ("reference_frame_number", "-1", Refused("out of range 0..")),
    ("face_detector_model", "yolo_face", Uses("face_detector_model", "yoloface")),
    ("face_detector_model", "scrfd", Uses("face_detector_model", "scrfd")),
    ("face_detector_model", "retinaface", Uses("face_detector_model", "retinaface")),
    ("face_detector_model", "yunet", Uses("face_detector_model", "yunet")),
    ("face_detector_model", "many", Uses("face_detector_model", "many")),
    ("face_detector_model", "dlib", Refused("'dlib' is not one of: scrfd, yoloface, retinaface, yunet, many")),
    ("face_detector_size", "320x320", Uses("face_detector_size", "320")),
    ("face_detector_size", "640x480", Refused("the detectors take a square input")),
    ("face_detector_size", "500x500", Refused("give a multiple of 32")),
    ("face_detector_score", "0.35", Uses("face_detector_score", "0.35")),
    ("face_detector_margin", "0 0 0 0", Uses("face_detector_margin", "0 0 0 0")),
    ("face_detector_margin", "10", Uses("face_detector_margin", "10 10 10 10")),
    ("face_detector_margin", "5 10 15 20", Uses("face_detector_margin", "5 10 15 20")),
    ("face_detector_margin", "101", Refused("1 to 4 percentages")),
    ("face_detector_angles", "0", Uses("face_detector_angles", "0")),
    ("face_detector_angles", "0 90", Uses("face_detector_angles", "0 90")),
    ("face_detector_angles", "0 90 180 270", Uses("face_detector_angles", "0 90 180 270")),
    ("face_detector_angles", "45", Refused("among 0 90 180 270")),
    *[("face_landmarker_model", name, Uses("face_landmarker_model", name)) for name in ("2dfan4", "peppa_wutz",
                                                                                         "many")],
    ("face_landmarker_score", "0.7", Uses("face_landmarker_score", "0.7")),
    ("voice_extractor_model", "kim_vocal_2", Ignored()),
    ("trim_frame_start", "10", Uses("trim_frame_start", "10")),
    ("trim_frame_end", "100", Uses("trim_frame_end", "100")),
    ("trim_frame_end", "-1", Refused("out of range 0..")),
    ("temp_frame_format", "jpeg", Uses("temp_frame_format", "jpg")),
    ("temp_frame_format", "png", Uses("temp_frame_format", "png")),
    ("temp_frame_format", "tiff", Uses("temp_frame_format", "tiff")),
    ("temp_frame_format", "gif", Refused("'gif' is not one of")),
    ("temp_pixel_format", "bgr24", Ignored()),
    ("temp_pixel_format", "bgra", Refused("not a video's; set it to bgr24")),
    ("trim_frame_start", "0", Uses("trim_frame_start", "0")),
    ("face_tracker_score", "0.25", Ignored()),
    ("target_frame_amount", "2", Ignored()),
    ("workflow_mode", "image-to-video", Ignored()),
    ("workflow_strategy", "disk", Uses("frame_transport", "temp")),
    ("workflow_strategy", "memory", Uses("frame_transport", "memory")),
    ("background_remover_fill_color", "0 0 0 0", Ignored()),
    ("keep_temp", "", Ignored()),
    ("output_image_quality", "70", Uses("output_image_quality", "70")),
    ("output_image_scale", "2.0", Uses("output_image_scale", "2.0")),
    ("output_image_scale", "0.25", Uses("output_image_scale", "0.25")),
    ("output_image_scale", "9", Refused("out of range 0.25..8.0")),
    ("output_video_scale", "0.5", Uses("output_video_scale", "0.5")),
    ("output_video_scale", "8", Uses("output_video_scale", "8.0")),
    ("output_video_scale", "0.1", Refused("out of range 0.25..8.0")),
    ("output_video_fps", "30", Uses("output_video_fps", "30.0")),
    ("output_video_fps", "23.976", Uses("output_video_fps", "23.976")),
    ("output_video_fps", "120", Refused("out of range 1.0..60.0")),
    ("output_video_resolution", "1280x720", Refused("output_video_scale")),  # 3.0-3.2's
    ("skip_audio", "", Refused("ffb keeps each target's audio")),
    ("output_audio_encoder", "aac", Ignored()),
    ("output_audio_quality", "80", Ignored()),
    ("output_audio_volume", "100", Ignored()),
    ("output_audio_volume", "50", Refused("ffb keeps each target's audio")),
    *[("output_video_encoder", name, Uses("output_video_encoder", name))
      for name in ("libx264", "libx265", "libvpx-vp9", "h264_nvenc", "hevc_nvenc")],
    ("output_video_encoder", "h264_amf", Refused("'h264_amf' is not one of")),
    *[("output_video_preset", preset, Uses("output_video_preset", preset)) for preset in PRESETS],
    ("output_video_quality", "90", Uses("output_video_quality", "90")),
    ("execution_providers", "cuda cpu", Uses("execution_providers", "cuda cpu")),
    ("execution_providers", "coreml", Refused("'coreml' is not one of: cpu, cuda, tensorrt")),
    ("execution_device_ids", "1", Uses("execution_device_ids", "1")),
    ("execution_device_ids", "0 1", Refused("names several GPUs but execution_providers is cpu only")),
    ("execution_thread_count", "4", Uses("execution_thread_count", "4")),
    ("video_memory_strategy", "strict", Uses("video_memory_strategy", "strict")),
    ("video_memory_strategy", "tolerant", Uses("video_memory_strategy", "tolerant")),
    ("log_level", "debug", Uses("log_level", "info")),
    ("log_level", "error", Uses("log_level", "error")),
    ("halt_on_error", "", Ignored()),
    ("download_providers", "github huggingface", Ignored()),
    ("jobs_path", ".jobs", Ignored()),
    ("frame_enhancer_model", "real_esrgan_x2", Ignored()),
    ("face_debugger_items", "bounding-box face-landmark-5", Ignored()),
]


def _ids(case: tuple[str, str, Any]) -> str:
    return f"{case[0]}={case[1] or 'on'}"


def _outcome(capsys, args: list[str]) -> tuple[int, dict[str, str], str]:
    code = main(["run", *args, "--print-settings", "--json"])
    captured = capsys.readouterr()
    rows = {row["key"]: row["value"] for row in json.loads(captured.out)} if code == 0 else {}
    return code, rows, captured.err


def _check(code: int, rows: dict[str, str], err: str, expected: Any, names: tuple[str, ...],
           defaults: dict[str, str]) -> None:
    if isinstance(expected, Uses):
        assert code == 0, err
        assert rows[expected.field] == expected.value
    elif isinstance(expected, Ignored):
        assert code == 0, err
        warnings = [line for line in err.splitlines() if line.startswith("ffb: warning:")]
        assert len(warnings) == 1 and names[0] in warnings[0], err
        assert rows == defaults, "an ignored option must not change a setting"
    else:
        assert code == 2, err
        assert expected.text in err and any(name in err for name in names), err


@pytest.fixture(scope="module")
def defaults() -> dict[str, str]:
    import io
    from contextlib import redirect_stdout

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["run", "--print-settings", "--json"]) == 0
    return {row["key"]: row["value"] for row in json.loads(out.getvalue())}


@pytest.mark.parametrize("key, value, expected", CASES, ids=[_ids(c) for c in CASES])
def test_facefusion_flag(capsys, monkeypatch, defaults, key, value, expected):
    """FaceFusion's flag with FaceFusion's value(s), as on its command line (several values as separate words)."""
    monkeypatch.setenv("COLUMNS", "400")  # Typer's usage errors unwrapped
    name = facefusion_ini.flag(key)
    code, rows, err = _outcome(capsys, [name, *value.split()])
    ffb_name = facefusion_ini.flag(FROM_FACEFUSION.get(key, key))  # the message may name ffb's flag
    _check(code, rows, err, expected, (name, key, ffb_name), defaults)


@pytest.mark.parametrize("key, value, expected", CASES, ids=[_ids(c) for c in CASES])
def test_facefusion_ini_key(tmp_path, capsys, defaults, key, value, expected):
    """The same option as a key of FaceFusion's facefusion.ini, in its FaceFusion section (--config-path)."""
    section = facefusion_ini.section_of(key)
    assert section, key
    profile = tmp_path / "facefusion.ini"
    profile.write_text(f"[{section}]\n{key} = {value or 'true'}\n")
    code, rows, err = _outcome(capsys, ["--config-path", str(profile)])
    _check(code, rows, err, expected, (key,), defaults)


def test_every_facefusion_key_is_in_the_table():
    """Each FaceFusion option a processor user sets is either an ffb setting or a known unsupported option
    (so the table above and docs/facefusion-ini.md can't miss one)."""
    known = set(FIELDS) | set(FROM_FACEFUSION) | set(facefusion_ini.UNSUPPORTED)
    layout = {key for keys in facefusion_ini.LAYOUT.values() for key in keys}
    assert layout - known == set()
    covered = {key for key, _, _ in CASES}
    for section in ("processors", "face_detector", "face_selector", "face_masker", "output_creation",
                    "frame_extraction", "execution", "memory", "misc"):
        for key in facefusion_ini.LAYOUT[section]:
            other_processor = section == "processors" and key not in FIELDS and key != "processors"
            assert key in covered or other_processor, key


def test_ffb_choices_hold_facefusions_where_ffb_has_the_feature():
    assert set(SWAPPERS) == set(choices("face_swapper_model"))
    assert ENHANCERS == choices("face_enhancer_model")
    assert ORDERS == choices("face_selector_order") and ("auto", *RACES) == choices("face_selector_race")
    assert ("auto", "female", "male") == choices("face_selector_gender")
    assert ("many", "xseg_1", "xseg_2", "xseg_3") == choices("face_occluder_model")
    assert REGIONS == choices("face_mask_regions")


@pytest.mark.parametrize("args, expected", [
    (["headless-run", "-s", "a.jpg"], ["run", "-s", "a.jpg"]),
    (["run", "--source-paths", "a.jpg", "b.png", "-t", "v.mp4"], ["run", "--source", "a.jpg", "--source", "b.png",
                                                                   "-t", "v.mp4"]),
    (["run", "--target-path", "v.mp4", "--output-path=o.mp4", "--config-path", "f.ini"],
     ["run", "--target", "v.mp4", "--output", "o.mp4", "--profile", "f.ini"]),
    (["run", "--execution-device-id", "0", "1", "-t", "v.mp4"], ["run", "--execution-device-ids", "0 1", "-t",
                                                                 "v.mp4"]),
    (["run", "--face-editor-head-pitch", "-0.5", "-t", "v.mp4"], ["run", "-t", "v.mp4"]),
    (["run", "--keep-temp", "v.mp4"], ["run", "v.mp4"]),
    (["run", "--", "--keep-temp"], ["run", "--", "--keep-temp"]),
    (["models", "list", "--keep-temp"], ["models", "list", "--keep-temp"]),
])
def test_facefusion_names_become_ffbs(args, expected):
    assert translate(args, frozenset({"--source", "-s", "--target", "-t"})).args == expected


def test_an_option_ffb_has_is_never_translated():
    """Once ffb has a setting of FaceFusion's name (e.g. the landmarker), its flag is ffb's own."""
    own = frozenset({"--face-landmarker-model"})
    assert translate(["run", "--face-landmarker-model", "peppa_wutz"], own).args == \
        ["run", "--face-landmarker-model", "peppa_wutz"]


@pytest.mark.parametrize("command, expected", [("batch-run", "-t 'videos/*.mp4'"),
                                               ("force-download", "ffb models download")])
def test_facefusion_commands_say_what_to_run(capsys, command, expected):
    assert main([command, "--json"]) == 2
    captured = capsys.readouterr()
    assert f"ffb: error: {command} is FaceFusion's command; with ffb: " in captured.err and expected in captured.err
    assert json.loads(captured.out)["exit_code"] == 2


def test_execution_providers_take_several_words_as_facefusion(capsys, tmp_path):
    """`--execution-providers cuda cpu -t clip`: cpu is a provider, not a target named cpu."""
    code, rows, err = _outcome(capsys, ["--execution-providers", "tensorrt", "cuda", "cpu"])
    assert code == 0 and rows["execution_providers"] == "tensorrt cuda cpu", err


def test_a_facefusion_headless_run_line_runs(env, capsys, tmp_path):
    """A FaceFusion user's usual command line, as they run it, on the stand-in models."""
    from conftest import face_frame, make_clip
    import cv2

    source = tmp_path / "face.png"
    cv2.imwrite(str(source), face_frame())
    clip = make_clip(tmp_path / "clip.mp4", frames=4)
    out = tmp_path / "swapped.mp4"
    code = main(["headless-run", "--source-paths", str(source), "--target-path", str(clip), "--output-path",
                 str(out), "--processors", "face_swapper", "--face-swapper-model", "inswapper_128",
                 "--face-swapper-pixel-boost", "256x256", "--face-selector-mode", "one", "--face-detector-model",
                 "yolo_face", "--face-detector-size", "640x640", "--face-mask-types", "box", "--execution-providers",
                 "cpu", "--execution-thread-count", "2", "--video-memory-strategy", "tolerant",
                 "--output-video-encoder", "libx264", "--output-video-quality", "85", "--output-video-preset",
                 "veryfast", "--face-tracker-score", "0.25", "--log-level", "info", "--keep-temp", "--json", "-q"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out.strip().splitlines()[-1])["counts"]["done"] == 1 and out.is_file()
    assert "--face-tracker-score 0.25" in captured.err and "--keep-temp" in captured.err


def test_every_unsupported_option_says_what_to_do():
    for key, option in facefusion_ini.UNSUPPORTED.items():
        assert option.instead and option.nargs in (0, 1, "+"), key


def test_reference_face_distance_is_facefusions_half_cosine(monkeypatch, tmp_path):
    """FaceFusion compares interp(cosine distance, [0, 2], [0, 1]) < reference_face_distance: its 0.3 is a cosine
    distance of 0.6 (read as cosine 0.3, a FaceFusion ini swapped far fewer of the person's faces)."""
    import numpy as np

    from facefusion_batch.engines import base
    from facefusion_batch.settings import load_settings

    reference = np.eye(4, dtype=np.float32)[0]

    class Engine:
        name = "neural"

        def face_filter(self, source=None):
            return None

        def embed(self, image, faces):
            return np.stack([reference])

    monkeypatch.setattr(base, "source_face", lambda path, engine: (None, None, None))
    settings = load_settings(None, {}, {"face_selector_mode": "reference", "reference_face_path": tmp_path / "r.png",
                                        "reference_face_distance": 0.3}).settings
    selection = base.build_selection(settings, Engine())
    assert selection.distance == pytest.approx(0.6)
    # a face at cosine distance 0.5 (FaceFusion: 0.25 < 0.3) is the person; at 0.7 (0.35) it is not
    near, far = np.array([0.5, np.sqrt(0.75), 0, 0], np.float32), np.array([0.3, np.sqrt(0.91), 0, 0], np.float32)
    faces = ["near", "far"]

    class Embeds(Engine):
        def embed(self, image, faces):
            return np.stack([near, far])

    assert selection.pick(np.zeros((4, 4, 3), np.uint8), faces, Embeds()) == ["near"]


@pytest.fixture(scope="module")
def standin_models_dir(tmp_path_factory):
    """benchmarks/standin_models.py's FaceFusion-layout models dir (hyperswap_1a_256, gfpgan_1.4, xseg_1,
    bisenet_resnet_34, arcface, scrfd, yoloface, inswapper), its detectors finding conftest's face."""
    import sys

    from conftest import FRAME_H, FRAME_W, detector_faces

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import standin_models

    directory = tmp_path_factory.mktemp("assets_models")
    standin_models.build(directory, detector_faces(640 / max(FRAME_W, FRAME_H))[0], convs=1, channels=4)
    return directory


def test_stock_facefusion_ini_with_processor_settings_runs(standin_models_dir, tmp_path, monkeypatch, capsys):
    """FaceFusion 3.8.1's own facefusion.ini (every key, most blank) with a processor user's settings filled
    in runs as is: FaceFusion's default swapper, the enhancer and three masks, on a video."""
    import cv2
    import numpy as np

    from conftest import FACE_BOX, decode_all, face_frame, make_clip

    monkeypatch.setenv("FFB_MODELS_PATH", str(standin_models_dir))
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    monkeypatch.setenv("FFB_TEMP_PATH", str(tmp_path / "tmp"))
    filled = {"processors": "face_swapper face_enhancer", "face_swapper_model": "hyperswap_1a_256",
              "face_enhancer_model": "gfpgan_1.4", "face_enhancer_blend": "80",
              "face_mask_types": "box occlusion region",
              "face_mask_blur": "0.3", "face_selector_mode": "one", "execution_providers": "cpu",
              "execution_thread_count": "2", "output_video_quality": "80", "face_detector_model": "yolo_face"}
    lines = []
    for line in (Path(__file__).parent / "data" / "facefusion-3.8.1.ini").read_text().splitlines():
        key = line.split("=")[0].strip()
        lines.append(f"{key} = {filled[key]}" if key in filled and "=" in line else line)
    profile = tmp_path / "facefusion.ini"
    profile.write_text("\n".join(lines) + "\n")
    source = tmp_path / "face.png"
    cv2.imwrite(str(source), cv2.flip(face_frame(), 1))
    clip = make_clip(tmp_path / "clip.mp4", frames=4)
    out = tmp_path / "out.mp4"
    code = main(["run", "--config-path", str(profile), "--source-paths", str(source), "--target-path", str(clip),
                 "--output-path", str(out), "--json", "-q"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out.strip().splitlines()[-1])
    assert summary["counts"]["done"] == 1 and summary["engine"] == "neural"
    assert {"hyperswap_1a_256", "gfpgan_1.4", "xseg_1", "bisenet_resnet_34"} <= set(summary["models"])
    assert "does not have" not in captured.err  # blank keys: nothing listed as ignored
    before, after = decode_all(clip), decode_all(out)
    assert after.shape == before.shape
    diff = np.abs(after.astype(np.int16) - before.astype(np.int16)).max(axis=-1)
    x1, y1, x2, y2 = FACE_BOX.astype(int)
    # these stand-ins swap and enhance as identities: the face comes back where it was, only resampled
    assert diff[:, y1 + 20:y2 - 20, x1 + 20:x2 - 20].mean() < 8, "the pasted face must land where it was"
    background = np.concatenate([diff[:, :-24, :x1 - 60].ravel(), diff[:, :-24, x2 + 60:].ravel()])
    assert np.percentile(background, 99.5) <= 6, "beside the face: unchanged but for encode noise"


def test_a_detector_size_the_model_file_cannot_take_is_one_clear_error(env, capsys, tmp_path):
    """yolo_face takes 640x640 only (FaceFusion offers no other size): 512 was an ONNX Runtime traceback."""
    import cv2

    from conftest import face_frame

    source = tmp_path / "face.png"
    cv2.imwrite(str(source), face_frame())
    code = main(["run", "-s", str(source), "-t", str(source), "-o", str(tmp_path / "out"), "--face-detector-model",
                 "yolo_face", "--face-detector-size", "512x512", "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "ffb: error: face_detector_size 512: yoloface_8n.onnx takes 640x640 only" in err
    assert not (tmp_path / "out" / "face.png").exists()


def test_a_reference_distance_that_swaps_nearly_every_face_is_warned_once(tmp_path):
    """An ffb profile written when the distance was the cosine distance (0.6 then: 0.3 now)."""
    from facefusion_batch.settings import load_settings

    flags = {"face_selector_mode": "reference", "reference_face_path": tmp_path / "r.png"}
    warnings = load_settings(None, {}, {**flags, "reference_face_distance": 0.6}).warnings
    assert len(warnings) == 1 and "an earlier ffb profile's 0.6 is 0.3 now" in warnings[0]
    assert load_settings(None, {}, {**flags, "reference_face_distance": 0.5}).warnings == ()
    assert load_settings(None, {}, {"reference_face_distance": 0.8}).warnings == ()  # not in reference mode


@pytest.mark.parametrize("args, expected", [
    (["run", "-t", "--keep-temp", "-o", "out"], ["run", "-t", "--keep-temp", "-o", "out"]),
    (["run", "-s", "a.jpg", "--output", "--log-level", "v.mp4"], ["run", "-s", "a.jpg", "--output", "--log-level",
                                                                   "v.mp4"]),
    (["watch", "--target", "--skip-audio", "--keep-temp"], ["watch", "--target", "--skip-audio"]),
    (["run", "--keypoint-reuse", "--keep-temp", "v.mp4"], ["run", "--keypoint-reuse", "v.mp4"]),
])
def test_the_value_of_an_ffb_option_is_never_translated(args, expected):
    """A target (or output) literally named like a FaceFusion flag is Click's value of the ffb option before it,
    not a FaceFusion option to drop; a boolean ffb flag takes no value, so what follows it still is one."""
    from facefusion_batch.cli import _own_flags

    assert translate(args, _own_flags(args), _own_flags(args, valued=True)).args == expected


@pytest.mark.parametrize("value, now", [("1.2", "0.6"), ("2", "1")])
def test_an_earlier_ffb_profiles_cosine_distance_is_refused_with_its_value_now(tmp_path, value, now):
    """ffb took reference_face_distance 0..2 (its cosine scale) before FaceFusion's 0..1: such a profile is
    refused with the value it means now, not only 'out of range'."""
    from facefusion_batch.errors import SettingsError
    from facefusion_batch.settings import load_settings

    profile = tmp_path / "old.ini"
    profile.write_text(f"[face_selector]\nreference_face_distance = {value}\n")
    with pytest.raises(SettingsError) as error:
        load_settings(profile, {}, {})
    assert str(error.value).startswith(f"{profile}: [face_selector] reference_face_distance: ")
    assert f"an earlier ffb profile's {float(value)} is {now} " in str(error.value)
    with pytest.raises(SettingsError) as error:
        load_settings(None, {}, {"reference_face_distance": 2.5})
    assert "earlier ffb profile" not in str(error.value)  # never a valid ffb value: the range alone


def test_a_video_or_directory_after_source_paths_is_a_target_not_one_more_source(tmp_path):
    """FaceFusion has no positional targets, so --source-paths takes every word after it; in ffb a video or a
    directory after the source images is the target (a source is an image), not a source that fails."""
    from facefusion_batch.cli import _is_target, _own_flags

    clips = tmp_path / "clips"
    clips.mkdir()

    def translated(*words: str) -> list[str]:
        args = ["run", *words]
        return translate(args, _own_flags(args), _own_flags(args, valued=True), _is_target).args

    assert translated("--source-paths", "a.jpg", "b.png", "clip.mp4") == \
        ["run", "--source", "a.jpg", "--source", "b.png", "clip.mp4"]
    assert translated("--source-paths", "a.jpg", str(clips), "x.mov") == ["run", "--source", "a.jpg", str(clips),
                                                                          "x.mov"]
    assert translated("--source-paths", "a.jpg", "b", "-t", "c.mp4") == \
        ["run", "--source", "a.jpg", "--source", "b", "-t", "c.mp4"]  # not a video: a source, as FaceFusion's


@pytest.mark.parametrize("args, expected", [
    (["run", "--ui-workflow", "-o", "out", "v.mp4"], ["run", "-o", "out", "v.mp4"]),
    (["run", "--face-editor-head-pitch", "--print-settings"], ["run", "--print-settings"]),
    (["run", "--face-editor-head-pitch", "-0.5", "-q"], ["run", "-q"]),
    (["run", "--frame-enhancer-model", "-t", "v.mp4"], ["run", "-t", "v.mp4"]),
])
def test_a_dropped_option_without_its_value_never_takes_the_next_option(args, expected):
    """`--ui-workflow -o out v.mp4` (a FaceFusion option whose value is missing) must not swallow -o, which would
    turn the output directory into a target; a negative number is still its value."""
    own = frozenset({"-o", "--output", "-t", "--target", "--print-settings", "-q"})
    translated = translate(args, own, frozenset({"-o", "--output", "-t", "--target"}))
    assert translated.args == expected
    assert args[1] in translated.warning

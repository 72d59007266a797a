"""A FaceFusion user's facefusion.ini works as an ffb profile: FaceFusion 3.8.1's stock file and a filled-in one."""
from __future__ import annotations

import configparser
import json
import re
from pathlib import Path

import pytest

from conftest import make_clip
from facefusion_batch import facefusion_ini
from facefusion_batch.cli import main
from facefusion_batch.errors import SettingsError
from facefusion_batch.settings import FIELDS, load_profile, load_settings

DATA = Path(__file__).parent / "data"
STOCK = DATA / "facefusion-3.8.1.ini"
FILLED = DATA / "facefusion-3.8.1-filled.ini"
SHIPPED = Path(__file__).parents[1] / "facefusion.ini"


def write(tmp_path: Path, text: str, name: str = "p.ini") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_stock_facefusion_ini_is_the_defaults_without_a_warning():
    resolved = load_settings(STOCK, {}, {})
    assert resolved.settings == load_settings(None, {}, {}).settings
    assert resolved.warnings == ()


def test_the_stock_fixture_is_facefusion_3_8_1s_own_file():
    """tests/data/facefusion-3.8.1.ini is FaceFusion's file byte for byte (tag 3.8.1, commit 6f5e4b9d; see
    tests/data/FACEFUSION-ORIGIN.md), and ffb knows exactly its sections and keys, in its order."""
    import hashlib

    assert hashlib.sha256(STOCK.read_bytes()).hexdigest() == \
        "c358159684d2c541c2d3b855eb337344c9f397e67b4712103d941b0dde18efdb"
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(STOCK)
    assert {section: tuple(parser[section]) for section in parser.sections()} == facefusion_ini.LAYOUT


def test_filled_facefusion_ini_is_used_in_facefusion_formats():
    resolved = load_settings(FILLED, {}, {})
    s = resolved.settings
    assert (s.face_detector_model, s.face_detector_size, s.face_detector_score) == ("yoloface", 640, 0.5)
    assert (s.face_selector_mode, s.reference_face_distance) == ("many", 0.3)
    assert (s.temp_frame_format, s.execution_device_id, s.execution_providers) == ("png", 0, ("cpu",))
    assert (s.output_video_encoder, s.output_video_quality, s.output_image_quality) == ("libx264", 80, 80)
    assert (s.face_swapper_model, s.video_memory_strategy, s.execution_thread_count) == \
        ("hyperswap_1a_256", "strict", 2)
    assert s.frame_transport == "memory"  # [workflow] workflow_strategy = memory
    assert (s.face_selector_gender, s.face_selector_race, s.face_occluder_model) == ("auto", "auto", "many")
    assert (s.face_selector_age_start, s.face_selector_age_end) == (0, 100)
    assert resolved.origins["face_detector_size"] == f"profile {FILLED}"
    assert resolved.origins["frame_transport"] == f"profile {FILLED}"
    assert (s.trim_frame_start, s.trim_frame_end, s.output_video_fps, s.output_video_scale) == (0, 3, 30.0, 1.0)


# Keys of the filled file ffb has no setting for, with a value that changes nothing: listed once, by section.
IGNORED = {"paths": ("jobs_path", "source_paths", "target_path"),
           "patterns": ("source_pattern", "target_pattern"),
           "face_tracker": ("face_tracker_score",), "voice_extractor": ("voice_extractor_model",),
           "frame_extraction": ("temp_pixel_format",),
           "frame_distribution": ("target_frame_amount",),
           "output_creation": ("output_audio_encoder", "output_audio_quality",
                               "output_audio_volume"),
           "workflow": ("workflow_mode",),
           "processors": ("age_modifier_model", "background_remover_fill_color", "lip_syncer_weight"),
           "uis": ("open_browser", "ui_layouts", "ui_workflow"), "download": ("download_providers", "download_scope"),
           "benchmark": ("benchmark_mode", "benchmark_resolutions", "benchmark_cycle_count"),
           "misc": ("halt_on_error",)}


def test_filled_facefusion_ini_lists_what_ffb_ignores_once_in_one_warning():
    warnings = load_settings(FILLED, {}, {}).warnings
    assert len(warnings) == 1
    text = warnings[0]
    assert "\n" not in text
    for section, keys in IGNORED.items():
        assert text.count(f"[{section}] ") == 1, section
        for key in keys:
            assert len(re.findall(rf"\b{key}\b", text)) == 1, key
    for used in ("face_detector_size", "temp_frame_format", "execution_device_ids", "log_level", "processors ",
                 "face_enhancer_model", "face_mask_types", "face_occluder_model", "face_selector_order",
                 "face_swapper_pixel_boost", "face_mask_padding", "face_mask_regions", "face_parser_model",
                 "face_landmarker_model", "face_landmarker_score", "workflow_strategy", "face_selector_gender",
                 "output_image_scale", "trim_frame_start", "trim_frame_end", "output_video_fps",
                 "output_video_scale", "reference_face_position", "reference_frame_number",
                 "face_detector_margin", "face_detector_angles", "output_pattern"):
        assert used not in text, used


def test_filled_facefusion_ini_processor_and_mask_keys_are_used():
    s = load_settings(FILLED, {}, {}).settings
    assert s.processors == ("face_swapper", "face_enhancer")
    assert (s.face_enhancer_model, s.face_enhancer_blend, s.face_enhancer_weight) == ("gfpgan_1.4", 80, 0.5)
    assert (s.face_swapper_pixel_boost, s.face_swapper_weight) == ("256x256", 0.5)
    assert (s.face_occluder_model, s.face_parser_model) == ("many", "bisenet_resnet_34")
    assert s.face_mask_types == ("box", "occlusion")
    assert s.face_mask_areas == ("upper-face", "lower-face", "mouth")
    assert s.face_mask_regions == ("skin", "nose", "mouth")
    assert (s.face_mask_blur, s.face_mask_padding) == (0.3, (0, 0, 0, 0))
    assert s.face_selector_order == "large-small"


@pytest.mark.parametrize("padding, expected", [("7", (7, 7, 7, 7)), ("1 2", (1, 2, 1, 2)), ("1 2 3", (1, 2, 3, 2)),
                                               ("1 2 3 4", (1, 2, 3, 4)), ("1,2,3,4", (1, 2, 3, 4))])
def test_face_mask_padding_takes_one_to_four_numbers_as_facefusion(tmp_path, padding, expected):
    profile = write(tmp_path, f"[face_masker]\nface_mask_padding = {padding}\n")
    assert load_profile(profile).values["face_mask_padding"] == expected


@pytest.mark.parametrize("text, expected", [
    ("[processors]\nprocessors = face_swapper frame_enhancer\n",
     "[processors] processors: 'frame_enhancer' is not one of: face_swapper, face_enhancer"),
    ("[face_masker]\nface_mask_padding = 1 2 3 4 5\n", "give 1 to 4 percentages"),
    ("[face_masker]\nface_mask_padding = 101\n", "give 1 to 4 percentages"),
    ("[face_masker]\nface_mask_types = box hands\n", "'hands' is not one of: box, occlusion, area, region"),
    ("[processors]\nface_swapper_pixel_boost = 512x256\n", "give a square size"),
    ("[processors]\nface_swapper_pixel_boost = 300x300\n", "'300x300' is not one of: 128x128"),
    ("[processors]\nface_enhancer_blend = 120\n", "120 is out of range 0..100"),
    ("[face_selector]\nface_selector_gender = other\n", "'other' is not one of: auto, female, male"),
    ("[face_selector]\nface_selector_age_start = old\n", "expected a whole number"),
])
def test_processor_values_ffb_cannot_honour_are_errors(tmp_path, text, expected):
    with pytest.raises(SettingsError) as error:
        load_profile(write(tmp_path, text))
    assert expected in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("flags, expected", [
    ({"processors": "face_swapper face_swapper"}, "processors lists one twice"),
    ({"processors": "face_enhancer face_swapper"}, "list them as face_swapper face_enhancer"),
    ({"face_selector_age_start": 40, "face_selector_age_end": 20}, "is above face_selector_age_end"),
])
def test_contradicting_processor_settings_are_refused(flags, expected):
    with pytest.raises(SettingsError, match=expected):
        load_settings(None, {}, flags)


def test_every_facefusion_key_is_recognised_in_its_section(tmp_path):
    """Every key of FaceFusion 3.8.1's ini, each with a value that asks for nothing ffb can't do (FaceFusion's
    default, for the keys that change the output): never an error."""
    parser = configparser.ConfigParser()
    parser.read(STOCK)
    lines = []
    samples = {"face_detector_size": "320x320", "face_detector_model": "scrfd", "execution_device_ids": "0",
               "execution_providers": "cpu", "temp_frame_format": "jpeg", "log_level": "debug",
               "video_memory_strategy": "tolerant", "face_selector_mode": "one", "output_video_encoder": "libx265",
               "output_video_preset": "slow", "face_swapper_model": "inswapper_128_fp16", "temp_path": str(tmp_path),
               "output_path": str(tmp_path / "out"), "keep_temp": "true", "halt_on_error": "true",
               "processors": "face_swapper face_enhancer", "face_enhancer_model": "codeformer",
               "face_enhancer_weight": "0.7", "face_swapper_pixel_boost": "256x256", "face_swapper_weight": "0.3",
               "face_occluder_model": "xseg_2", "face_parser_model": "bisenet_resnet_18",
               "face_mask_types": "box region", "face_mask_areas": "mouth", "face_mask_regions": "nose",
               "face_mask_blur": "0.5", "face_mask_padding": "1", "face_selector_order": "left-right",
               "face_selector_gender": "female", "face_selector_race": "asian", "face_selector_age_start": "20",
               "face_selector_age_end": "60", "face_detector_margin": "0 0 0 0", "face_detector_angles": "0",
               "reference_face_position": "0", "reference_frame_number": "0", "output_audio_volume": "100",
               "trim_frame_start": "", "trim_frame_end": "", "output_video_fps": "",
               "face_landmarker_model": "many", "face_landmarker_score": "0.4", "temp_pixel_format": "bgr24",
               "workflow_strategy": "disk", "workflow_mode": "image-to-video", "face_tracker_score": "0.1",
               "target_frame_amount": "2", "background_remover_fill_color": "0 0 0 0"}
    for section in parser.sections():
        lines.append(f"[{section}]")
        lines += [f"{key} = {samples.get(key, '1')}" for key in parser[section]]
    profile = load_profile(write(tmp_path, "\n".join(lines) + "\n"))
    assert profile.values["face_detector_size"] == 320
    assert profile.values["temp_frame_format"] == "jpg"
    assert profile.values["log_level"] == "info"
    assert profile.values["output_path"] == tmp_path / "out"
    assert profile.values["frame_transport"] == "temp"  # FaceFusion's workflow_strategy disk
    assert len(profile.warnings) == 1


@pytest.mark.parametrize("text, expected", [
    ("[face_detector]\nface_detector_size = 640x480\n", "[face_detector] face_detector_size: '640x480': the "
                                                        "detectors take a square input"),
    ("[execution]\nexecution_device_ids = 0 0\n", "[execution] execution_device_ids: 0 0: each GPU once"),
    ("[face_detector]\nface_detector_model = dlib\n", "'dlib' is not one of: scrfd, yoloface"),
    ("[misc]\nlog_level = loud\n", "[misc] log_level: 'loud' is not one of"),
])
def test_facefusion_values_ffb_cannot_honour_are_errors(tmp_path, text, expected):
    with pytest.raises(SettingsError, match=".*") as error:
        load_profile(write(tmp_path, text))
    assert expected in str(error.value)


def test_all_problems_are_reported_at_once_with_did_you_mean(tmp_path):
    profile = write(tmp_path, "[execution]\nexecution_threads = 2\nexecution_providers = cuda rocm\n"
                              "[face_selecter]\nface_selector_mode = one\n[output_creation]\noutput_vidoe_quality = 5\n"
                              "[paths]\nkeep_temp = true\n")
    with pytest.raises(SettingsError) as error:
        load_profile(profile)
    text = str(error.value)
    assert "\n" not in text and text.startswith(f"{profile}: 5 problems: ")
    assert "[execution] execution_threads: unknown key (did you mean execution_thread_count?)" in text
    assert "'rocm' is not one of: cpu, cuda, tensorrt" in text
    assert "unknown section [face_selecter] (did you mean face_selector?)" in text
    assert "output_vidoe_quality: unknown key (did you mean output_video_quality?)" in text
    assert "[paths] keep_temp: unknown key here (FaceFusion's key of [frame_extraction])" in text


def test_default_section_is_refused_not_leaked(tmp_path):
    profile = write(tmp_path, "[DEFAULT]\nbogus = 1\n[execution]\nexecution_thread_count = 2\n")
    with pytest.raises(SettingsError, match=r"\[DEFAULT\] is not supported"):
        load_profile(profile)
    profile = write(tmp_path, "[DEFAULT]\nexecution_thread_count = 3\n")
    with pytest.raises(SettingsError, match=r"\[DEFAULT\] is not supported"):
        load_profile(profile)


def test_ffb_sections_used_before_facefusion_names_still_work(tmp_path):
    profile = write(tmp_path, "[output]\noutput_video_quality = 70\n[logging]\nlog_level = error\n"
                              "[face_swapper]\nengine = offline\nface_swapper_model = inswapper_128_fp16\n")
    values = load_profile(profile).values
    assert values == {"output_video_quality": 70, "log_level": "error", "engine": "offline",
                      "face_swapper_model": "inswapper_128_fp16"}


def test_toml_profile_takes_facefusion_keys_too(tmp_path):
    profile = write(tmp_path, '[face_detector]\nface_detector_size = "512x512"\n[execution]\n'
                              'execution_device_ids = "1"\n[uis]\nopen_browser = true\n', "p.toml")
    loaded = load_profile(profile)
    assert loaded.values == {"face_detector_size": 512, "execution_device_ids": (1,)}
    assert "[uis] open_browser" in loaded.warnings[0]


def test_shipped_profile_is_true_to_its_claim():
    """ffb's facefusion.ini: every ffb setting, each in FaceFusion's section where FaceFusion has the key."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(SHIPPED)
    written = {key: section for section in parser.sections() for key in parser[section]}
    assert set(written) == set(FIELDS)
    for key, section in written.items():
        assert section == FIELDS[key].metadata["section"], key
        facefusion_section = facefusion_ini.section_of(key)
        if facefusion_section:
            assert section == facefusion_section, key
    assert load_settings(SHIPPED, {}, {}).warnings == ()


@pytest.mark.parametrize("profile", [STOCK])  # the filled file: tests/test_facefusion_381.py
def test_run_with_a_facefusion_ini(env, source_image, capsys, profile):
    clip = make_clip(env / "a.mp4", frames=6)
    assert main(["run", "--profile", str(profile), "--print-settings", "--json"]) == 0
    rows = {row["key"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["face_detector_model"]["value"] == ("yoloface" if profile == FILLED else "scrfd")
    code = main(["run", "--profile", str(profile), "-s", str(source_image), "-t", str(clip), "-o", str(env / "out"),
                 "--json", "-q"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["counts"]["done"] == 1 and (env / "out" / "a.mp4").is_file()
    lines = captured.err.splitlines()
    licence = [line for line in lines if "commercial use" in line]  # inswapper, arcface, scrfd: said under -q too
    assert len(licence) == 1 and licence[0].startswith("ffb: warning:")
    assert sum("warning:" in line for line in lines) - 1 == (1 if profile == FILLED else 0)

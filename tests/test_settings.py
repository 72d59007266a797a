from pathlib import Path

import pytest

from facefusion_batch.errors import SettingsError
from facefusion_batch.settings import choices, describe, load_settings, read_profile


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_defaults_without_profile():
    settings = load_settings(None, {}, {}).settings
    assert settings.engine == "auto"
    assert settings.execution_providers == ("cpu",)
    assert settings.face_selector_mode == "one"


def test_precedence_default_profile_env_flag(tmp_path):
    profile = write(tmp_path, "facefusion.ini", "[execution]\nexecution_thread_count = 3\n"
                    "execution_queue_count = 4\n[output]\noutput_video_quality = 70\n")
    env = {"FFB_EXECUTION_QUEUE_COUNT": "5", "FFB_OUTPUT_VIDEO_QUALITY": "60"}
    resolved = load_settings(profile, env, {"output_video_quality": 50})
    s = resolved.settings
    assert (s.execution_thread_count, s.execution_queue_count, s.output_video_quality) == (3, 5, 50)
    assert resolved.origins["execution_thread_count"].startswith("profile")
    assert resolved.origins["execution_queue_count"] == "environment"
    assert resolved.origins["output_video_quality"] == "flag"
    assert resolved.origins["chunk_size"] == "default"


def test_toml_profile_with_lists(tmp_path):
    profile = write(tmp_path, "p.toml", '[execution]\nexecution_providers = ["cuda", "cpu"]\n'
                    '[memory]\nvideo_memory_strategy = "strict"\n')
    s = load_settings(profile, {}, {}).settings
    assert s.execution_providers == ("cuda", "cpu")
    assert s.video_memory_strategy == "strict"


def test_blank_ini_values_keep_defaults(tmp_path):
    profile = write(tmp_path, "facefusion.ini", "[paths]\ntemp_path =\n[execution]\nexecution_providers = cuda cpu\n")
    s = load_settings(profile, {}, {}).settings
    assert s.execution_providers == ("cuda", "cpu")
    assert s.temp_path == load_settings(None, {}, {}).settings.temp_path


@pytest.mark.parametrize("text, expected", [
    ("[nonsense]\na = 1\n", "unknown section [nonsense]"),
    ("[execution]\nexecution_threads = 2\n", "[execution] execution_threads: unknown key"),
    ("[output]\nexecution_thread_count = 2\n", "it belongs in [execution]"),
    ("[execution]\nexecution_thread_count = two\n", "[execution] execution_thread_count: expected a whole number"),
    ("[execution]\nexecution_providers = cuda rocm\n", "'rocm' is not one of: cpu, cuda, tensorrt"),
    ("[output]\noutput_video_quality = 101\n", "out of range 0..100"),
    ("[output]\noutput_marking = maybe\n", "expected true or false"),
    ("not an ini", "not a valid ini file"),
])
def test_bad_profiles_name_file_section_and_key(tmp_path, text, expected):
    profile = write(tmp_path, "bad.ini", text)
    with pytest.raises(SettingsError) as error:
        read_profile(profile)
    assert str(profile) in str(error.value)
    assert expected in str(error.value)


def test_bad_toml_and_missing_profile(tmp_path):
    with pytest.raises(SettingsError, match="not a valid TOML"):
        read_profile(write(tmp_path, "bad.toml", "[execution\n"))
    with pytest.raises(SettingsError, match="profile not found"):
        read_profile(tmp_path / "missing.ini")


def test_environment_errors_name_the_variable():
    with pytest.raises(SettingsError, match="environment FFB_CHUNK_SIZE: expected a whole number"):
        load_settings(None, {"FFB_CHUNK_SIZE": "lots"}, {})


def test_stray_ffb_variables_are_one_warning_not_an_error():
    resolved = load_settings(None, {"FFB_NOPE": "1", "FFB_CHUNK_SIZ": "9", "FFB_CHUNK_SIZE": "12"}, {})
    assert resolved.settings.chunk_size == 12
    assert len(resolved.warnings) == 1
    assert "FFB_CHUNK_SIZ (did you mean FFB_CHUNK_SIZE?), FFB_NOPE: not ffb settings, ignored" in resolved.warnings[0]


def test_flag_errors_name_the_flag():
    with pytest.raises(SettingsError, match="--execution-thread-count: 0 is out of range"):
        load_settings(None, {}, {"execution_thread_count": 0})


def test_reference_mode_without_a_photo_takes_each_targets_frame():
    """As FaceFusion: reference mode needs no photo; each target's reference_frame_number gives the face."""
    settings = load_settings(None, {}, {"face_selector_mode": "reference", "reference_frame_number": "12"}).settings
    assert (settings.reference_face_path, settings.reference_frame_number, settings.reference_face_position) == \
        (None, 12, 0)


def test_settings_are_frozen_and_described():
    resolved = load_settings(None, {}, {})
    with pytest.raises(Exception):
        resolved.settings.chunk_size = 5  # type: ignore[misc]
    keys = {row["key"] for row in describe(resolved)}
    assert {"execution_providers", "video_memory_strategy", "system_memory_limit"} <= keys
    assert choices("video_memory_strategy") == ("strict", "moderate", "tolerant")


def test_shipped_profile_is_valid():
    profile = Path(__file__).parents[1] / "facefusion.ini"
    s = load_settings(profile, {}, {}).settings
    assert s.execution_providers

"""Which ffmpeg ffb runs: the bundled one first (not the first on PATH), or ffmpeg_path, checked at start-up."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from facefusion_batch.cli import main
from facefusion_batch.errors import SettingsError
from facefusion_batch.video import ffmpeg


@pytest.fixture(autouse=True)
def fresh_choice(monkeypatch):
    """Each test chooses afresh, and leaves the process's ffmpeg as it was."""
    monkeypatch.setattr(ffmpeg, "_chosen", [])
    ffmpeg._default_ffmpeg.cache_clear()
    yield
    ffmpeg._default_ffmpeg.cache_clear()


def fake_ffmpeg(directory: Path, version_line: str, name: str = "ffmpeg") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    path.chmod(0o755)
    return path


def test_the_bundled_ffmpeg_wins_over_the_one_on_path(tmp_path, monkeypatch):
    import imageio_ffmpeg

    fake_ffmpeg(tmp_path / "bin", "ffmpeg version 5.1.6-0+deb12u1 Copyright (c) 2000-2024")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert ffmpeg.ffmpeg_binary() == imageio_ffmpeg.get_ffmpeg_exe()
    assert ffmpeg.use_ffmpeg(None) is None and ffmpeg.ffmpeg_binary() == imageio_ffmpeg.get_ffmpeg_exe()


@pytest.mark.parametrize("version_line, says", [
    ("ffmpeg version 5.1.6-0+deb12u1 Copyright (c) 2000-2024", "ffmpeg 5.1.6-0+deb12u1 is older than 6.0"),
    ("ffmpeg version 4.4.2-0ubuntu0.22.04.1 Copyright", "is older than 6.0"),
    ("hello, I am not ffmpeg", "not an ffmpeg"),
])
def test_a_configured_ffmpeg_too_old_or_wrong_is_refused(tmp_path, version_line, says):
    path = fake_ffmpeg(tmp_path, version_line)
    with pytest.raises(SettingsError) as error:
        ffmpeg.use_ffmpeg(path)
    assert str(error.value).startswith(f"ffmpeg_path {path}: ") and says in str(error.value)
    assert "bundled" in str(error.value)


def test_a_missing_ffmpeg_path_is_refused(tmp_path):
    with pytest.raises(SettingsError, match="can't run it"):
        ffmpeg.use_ffmpeg(tmp_path / "no-ffmpeg")


@pytest.mark.parametrize("version_line", ["ffmpeg version 7.1 Copyright", "ffmpeg version n6.0-3-gabc",
                                          "ffmpeg version N-113472-g2a5b2c8a Copyright"])
def test_a_configured_new_enough_ffmpeg_is_used(tmp_path, version_line):
    path = fake_ffmpeg(tmp_path, version_line)
    assert ffmpeg.use_ffmpeg(path) == str(path)
    assert ffmpeg.ffmpeg_binary() == str(path)
    assert ffmpeg.decode_command(Path("in.mp4"))[0] == str(path)


@pytest.mark.parametrize("how", ["flag", "env", "profile"])
def test_cli_checks_ffmpeg_path_at_start_up_with_one_line(tmp_path, capsys, monkeypatch, how):
    old = fake_ffmpeg(tmp_path, "ffmpeg version 5.1.6-0+deb12u1 Copyright (c) 2000-2024")
    args = ["run", "--print-settings"]
    if how == "flag":
        args += ["--ffmpeg-path", str(old)]
    elif how == "env":
        monkeypatch.setenv("FFB_FFMPEG_PATH", str(old))
    else:
        profile = tmp_path / "p.ini"
        profile.write_text(f"[paths]\nffmpeg_path = {old}\n")
        args += ["--profile", str(profile)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"ffb: error: ffmpeg_path {old}: ffmpeg 5.1.6")


def test_print_settings_and_detect_gpus_say_which_ffmpeg(capsys, monkeypatch, tmp_path):
    import imageio_ffmpeg

    assert main(["run", "--print-settings", "--json"]) == 0
    rows = {(r["section"], r["key"]): r for r in json.loads(capsys.readouterr().out)}
    assert rows[("ffmpeg (in use)", "path")]["value"] == imageio_ffmpeg.get_ffmpeg_exe()
    assert rows[("ffmpeg (in use)", "path")]["origin"] == "bundled"
    assert rows[("ffmpeg (in use)", "version")]["value"] == ffmpeg.ffmpeg_version(imageio_ffmpeg.get_ffmpeg_exe())
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi: quick
    assert main(["detect-gpus", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["ffmpeg"]
    assert found["path"] == imageio_ffmpeg.get_ffmpeg_exe() and found["version"]
    assert main(["detect-gpus"]) == 0
    assert f"ffmpeg: {imageio_ffmpeg.get_ffmpeg_exe()} (bundled, version" in capsys.readouterr().out


def test_hardware_encoders_are_read_from_the_listing():
    listing = """Encoders:
 V..... = Video
 ------
 V....D libx264              libx264 H.264 / AVC / MPEG-4 AVC / MPEG-4 part 10 (codec h264)
 V....D h264_nvenc           NVIDIA NVENC H.264 encoder (codec h264)
 V....D av1_nvenc            NVIDIA NVENC av1 encoder (codec av1)
 V....D hevc_nvenc           NVIDIA NVENC hevc encoder (codec hevc)
 V..... h264_qsv             H.264 (Intel Quick Sync Video acceleration) (codec h264)
 A....D aac                  AAC (Advanced Audio Coding)
"""
    assert ffmpeg.hardware_encoders(listing) == ("h264_nvenc", "hevc_nvenc", "h264_qsv")


def test_version_numbers():
    assert ffmpeg.version_tuple("5.1.6-0+deb12u1") == (5, 1)
    assert ffmpeg.version_tuple("n9.0.2-17-g2a571b6068-20260930") == (9, 0)
    assert ffmpeg.version_tuple("N-113472-g2a5b2c8a") is None  # a git build: taken as new

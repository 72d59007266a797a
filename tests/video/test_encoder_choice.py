"""The video encoder: one that won't load is refused once at start (exit 2 naming it and what is missing), not
on every target; HEVC in MP4/MOV is tagged hvc1 (Apple's players need it, FaceFusion writes it)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import make_clip
from facefusion_batch.cli import main
from facefusion_batch.video.ffmpeg import codec_tag_args, ffmpeg_binary


def fake_ffmpeg(directory: Path, fails: str, says: str) -> Path:
    """An ffmpeg that is the bundled one, except that an encode with `fails` ends with `says` (exit 1)."""
    script = directory / "ffmpeg"
    script.write_text(f"""#!/bin/sh
for arg in "$@"; do
  if [ "$arg" = "{fails}" ]; then echo "{says}" >&2; exit 1; fi
done
exec "{ffmpeg_binary()}" "$@"
""")
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("encoder, says, expected", [
    ("h264_nvenc", "[h264_nvenc @ 0x55d0c0] Cannot load libcuda.so.1",
     "output_video_encoder h264_nvenc: it needs an NVIDIA GPU with its driver, and this machine's won't load "
     "(Cannot load libcuda.so.1)"),
    ("hevc_nvenc", "[hevc_nvenc @ 0x1] No capable devices found",
     "output_video_encoder hevc_nvenc: it needs an NVIDIA GPU"),
    ("libx265", "Unknown encoder 'libx265'", "has no libx265 encoder built in (Unknown encoder 'libx265')"),
])
def test_an_encoder_that_wont_load_is_refused_once_at_start(offline_env, source_image, capsys, tmp_path, encoder,
                                                            says, expected):
    ffmpeg = fake_ffmpeg(tmp_path, encoder, says)
    clips = [make_clip(tmp_path / f"{n}.mp4", frames=2, audio=False) for n in ("a", "b")]
    code = main(["run", "-s", str(source_image), "-t", *map(str, clips), "-o", str(tmp_path / "out"),
                 "--ffmpeg-path", str(ffmpeg), "--output-video-encoder", encoder, "--json", "-q"])
    captured = capsys.readouterr()
    assert code == 2, captured.err
    errors = [line for line in captured.err.splitlines() if line.startswith("ffb: error:")]
    assert len(errors) == 1 and expected in errors[0], captured.err
    assert "choose another with --output-video-encoder" in errors[0]
    assert json.loads(captured.out)["exit_code"] == 2
    assert not (tmp_path / "out").exists()  # refused before the lock, the journal, the engine


def test_a_usable_encoder_passes_the_check(offline_env, source_image, capsys, tmp_path):
    ffmpeg = fake_ffmpeg(tmp_path, "h264_nvenc", "Cannot load libcuda.so.1")
    clip = make_clip(tmp_path / "a.mp4", frames=2, audio=False)
    code = main(["run", "-s", str(source_image), "-t", str(clip), "-o", str(tmp_path / "out"), "--ffmpeg-path",
                 str(ffmpeg), "--output-video-encoder", "libx264", "--json", "-q"])
    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize("encoder, container, expected", [
    ("libx265", "mp4", ["-tag:v", "hvc1"]), ("hevc_nvenc", "mov", ["-tag:v", "hvc1"]),
    ("libx265", "mkv", []), ("libx264", "mp4", []),
])
def test_hevc_tag_args(encoder, container, expected):
    assert codec_tag_args(encoder, container) == expected


@pytest.mark.parametrize("name", ["a.mp4", "a.mov"])
def test_libx265_output_is_tagged_hvc1(offline_env, source_image, capsys, tmp_path, name):
    clip = make_clip(tmp_path / name, frames=3, audio=False)
    out = tmp_path / "out"
    code = main(["run", "-s", str(source_image), "-t", str(clip), "-o", str(out), "--output-video-encoder",
                 "libx265", "--output-provenance", "metadata", "--json", "-q"])
    assert code == 0, capsys.readouterr().err
    listing = subprocess.run([ffmpeg_binary(), "-hide_banner", "-i", str(out / name)], capture_output=True).stderr
    video = next(line for line in listing.decode().splitlines() if "Video:" in line)
    assert "hevc" in video and "(hvc1 / " in video, video

"""Running out of disk: the reason names the video and what to do (never a temporary frame file), sizes
below 1 GB are said in MB, and a short clip is not refused for space a whole chunk would need."""
from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import cv2

from conftest import face_frame, make_clip
from facefusion_batch.cli import main
from facefusion_batch.errors import MediaError
from facefusion_batch.workflow import frames, video_plan
from facefusion_batch.workflow.guard import disk_full_reason
from facefusion_batch.workflow.video_plan import JobOptions, estimate, size_text
from facefusion_batch.video.ffmpeg import EncodeOptions
from facefusion_batch.video.probe import probe


def test_sizes_are_said_in_the_unit_a_person_reads():
    assert [size_text(n) for n in (2.34e9, 1e9, 0.5e9, 20e6, 400e3, 0)] == [
        "2.3 GB", "1.0 GB", "500 MB", "20 MB", "400 kB", "0 kB"]


def test_temp_disk_full_mid_video_names_the_video_and_the_fix(env, source_image, capsys, monkeypatch):
    clip = make_clip(env / "a.mp4", frames=30)
    image = env / "b.png"
    cv2.imwrite(str(image), face_frame())
    real = frames.write_frame
    written = []

    def filling(path: Path, frame):
        written.append(path)
        if len(written) > 12:  # the disk fills up in the middle of the video
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, frame)

    monkeypatch.setattr(frames, "write_frame", filling)
    code = main(["run", "--engine", "neural", "--json", "-q", "-s", str(source_image), "-t", str(clip), "-t",
                 str(image), "-o", str(env / "out"), "--temp-path", str(env / "tmp")])
    outcomes = json.loads(capsys.readouterr().out)["outcomes"]
    assert code == 1 and [o["status"] for o in outcomes] == ["failed", "done"]
    reason = outcomes[0]["reason"]
    assert reason.startswith(f"{clip}: temp disk full while processing this video")
    assert f"free space in temp_path {env / 'tmp'}" in reason and "frames" not in reason and ".bmp" not in reason
    assert not (env / "out" / "a.mp4").exists() and not list((env / "tmp").rglob("*.bmp"))


def test_disk_full_reported_by_ffmpeg_names_the_right_disk(tmp_path):
    video, temp, output = tmp_path / "v.mp4", tmp_path / "tmp", tmp_path / "out" / "v.mp4"
    encoding = MediaError(f"{video}: encoding failed (Error writing trailer: No space left on device)")
    joining = MediaError(f"{video}: joining chunks and audio: No space left on device")
    assert "temp disk full" in disk_full_reason(video, encoding, temp, output)
    assert disk_full_reason(video, joining, temp, output).startswith(f"{video}: output disk full ({output.parent})")
    quota = OSError(errno.EDQUOT, os.strerror(errno.EDQUOT), str(output.parent / ".v.tmp.mp4"))
    assert "output disk full" in disk_full_reason(video, quota, temp, output)
    assert disk_full_reason(video, MediaError(f"{video}: damaged"), temp, output) is None


def _options(tmp_path: Path, chunk_size: int = 240) -> JobOptions:
    return JobOptions(temp_root=tmp_path, chunk_size=chunk_size, frame_format="bmp", threads=2, in_flight=4,
                      encode=EncodeOptions("libx264", "veryfast", 80))


def test_a_short_clip_needs_space_for_its_own_frames_not_a_whole_chunk(tmp_path):
    small = cv2.resize(face_frame(), (256, 144))
    info = probe(make_clip(tmp_path / "short.mp4", frames=75, image=small))
    temp, _ = estimate(info, _options(tmp_path))
    assert temp <= 75 * 256 * 144 * 3 + 2_000_000 + info.path.stat().st_size * 2
    long_temp, _ = estimate(info.__class__(**{**info.__dict__, "frame_count": 10_000}), _options(tmp_path))
    assert long_temp > temp, "a long video still counts the frames spooled ahead"


def test_a_75_frame_clip_runs_in_a_20_mb_temp_dir(env, source_image, capsys, monkeypatch):
    clip = make_clip(env / "short.mp4", frames=75, image=cv2.resize(face_frame(), (256, 144)))
    real = shutil.disk_usage

    def twenty_mb(path):
        usage = real(path)
        return usage._replace(free=20_000_000) if Path(path) == env / "tmp" else usage

    monkeypatch.setattr(video_plan.shutil, "disk_usage", twenty_mb)
    code = main(["run", "--engine", "neural", "--json", "-q", "-s", str(source_image), "-t", str(clip),
                 "-o", str(env / "out"), "--temp-path", str(env / "tmp")])
    outcome = json.loads(capsys.readouterr().out)["outcomes"][0]
    assert code == 0 and outcome["status"] == "done", outcome["reason"]

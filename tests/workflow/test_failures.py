"""Failures inside a batch: each is recorded with a reason, the rest goes on, nothing partial is left."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import make_clip
from facefusion_batch.cli import main


def test_video_without_faces_is_copied_through(env, source_image, capsys):
    flat = np.full((272, 480, 3), 100, np.uint8)
    clip = make_clip(env / "empty_room.mp4", frames=8, image=flat)
    assert main(["run", "--engine", "neural", "-s", str(source_image), "-t", str(clip), "-o", str(env / "out"),
                 "--json", "-q"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["counts"]["no_face"] == 1
    assert (env / "out" / "empty_room.mp4").read_bytes() == clip.read_bytes()


def test_too_little_temp_disk_fails_that_target_only(env, source_image, capsys, monkeypatch):
    import shutil

    from facefusion_batch.workflow import video_plan

    real = shutil.disk_usage

    def tiny(path):
        usage = real(path)
        return usage._replace(free=1000) if "tmp" in str(path) else usage

    monkeypatch.setattr(video_plan.shutil, "disk_usage", tiny)
    clip = make_clip(env / "a.mp4", frames=4)
    image = env / "b.png"
    import cv2
    from conftest import face_frame
    cv2.imwrite(str(image), face_frame())
    code = main(["run", "--engine", "neural", "-s", str(source_image), "-t", str(clip), "-t", str(image),
                 "-o", str(env / "out"), "--json", "-q"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 1
    video = summary["outcomes"][0]
    assert video["status"] == "failed" and "temp_path" in video["reason"]
    assert " MB free in " in video["reason"] and "has 1 kB" in video["reason"], "MB below 1 GB, never '0.0 GB'"
    assert summary["outcomes"][1]["status"] == "done"
    assert not (env / "out" / "a.mp4").exists()


def test_webm_gets_vp9_and_an_impossible_encoder_is_explained(env, source_image, capsys):
    from facefusion_batch.video.ffmpeg import ffmpeg_binary

    webm = env / "a.webm"
    subprocess.run([ffmpeg_binary(), "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=64x64:d=0.2", "-c:v",
                    "libvpx-vp9", str(webm)], check=True)
    args = ["run", "--engine", "neural", "-s", str(source_image), "-t", str(webm), "-o", str(env / "out"),
            "--json", "-q"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["counts"]["failed"] == 0
    code = main(args[:-2] + ["-o", str(env / "out2"), "--output-video-encoder", "libx264", "--json", "-q"])
    reason = json.loads(capsys.readouterr().out)["outcomes"][0]["reason"]
    assert code == 1 and "libx264 can't be stored in .webm" in reason


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_keeps_only_finished_chunks_and_the_rerun_completes(env, source_image, sig):
    clip = make_clip(env / "long.mp4", frames=400)
    environment = {**os.environ, "FFB_EXECUTION_THREAD_COUNT": "1"}
    command = [sys.executable, "-m", "facefusion_batch", "run", "--engine", "neural", "-s", str(source_image),
               "-t", str(clip), "-o", str(env / "out"), "-q", "--chunk-size", "50"]
    process = subprocess.Popen(command, env=environment, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120  # a bound for a loaded machine; the file ends the wait
    while not list((env / "tmp").glob("ffb-*/chunk_00001.json")):
        assert time.monotonic() < deadline and process.poll() is None, "the first chunk was never finished"
        time.sleep(0.05)
    process.send_signal(sig)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 130, err.decode()
    left = sorted(p.name for p in (env / "tmp").rglob("*") if p.is_file())
    assert left and all(name.startswith("chunk_") and name.endswith((".mp4", ".json")) for name in left)
    assert not any(".part." in name for name in left) and not list((env / "tmp").glob("ffb-*/frames"))
    assert len(left) % 2 == 0 and {n[:11] for n in left if n.endswith(".mp4")} == {n[:11] for n in left
                                                                                 if n.endswith(".json")}
    assert [p.name for p in (env / "out").iterdir()] == [".ffb"], "no output, complete or partial"
    rerun = subprocess.run(command + ["--json"], env=environment, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    outcome = json.loads(rerun.stdout)["outcomes"][0]
    assert outcome["frames"] == 400 and outcome["reason"].startswith("resumed: ")
    assert list((env / "tmp").iterdir()) == []

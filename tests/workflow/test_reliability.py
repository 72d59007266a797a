"""Cron-style reliability: idempotent re-runs, the journal, one run per output, resume, kill -9 anywhere."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np

from conftest import decode_all, face_frame, make_clip
from facefusion_batch.cli import main
from facefusion_batch.video.probe import probe


def run(args: list[str], capsys) -> tuple[int, dict]:
    code = main(["run", "--json", "-q", *args])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip().startswith("{") else {}


def statuses(summary: dict) -> dict[str, str]:
    return {Path(o["target"]).name: o["status"] for o in summary["outcomes"]}


def test_rerun_skips_unchanged_work_and_redoes_what_changed(env, source_image, capsys):
    clips = env / "clips"
    clips.mkdir()
    make_clip(clips / "a.mp4", frames=6)
    cv2.imwrite(str(clips / "b.png"), face_frame())
    (clips / "bad.mp4").write_bytes(b"garbage")
    args = ["-s", str(source_image), "-t", str(clips), "-o", str(env / "out")]
    code, first = run(args, capsys)
    assert code == 1 and statuses(first) == {"a.mp4": "done", "b.png": "done", "bad.mp4": "failed"}
    code, second = run(args, capsys)
    assert code == 0 and set(statuses(second).values()) == {"skipped"}, "nothing is done twice"
    assert "--retry-failed" in {Path(o["target"]).name: o for o in second["outcomes"]}["bad.mp4"]["reason"]
    (env / "out" / "b.png").unlink()
    time.sleep(0.01)
    make_clip(clips / "bad.mp4", frames=4)  # the broken upload was completed
    code, third = run(args, capsys)
    assert code == 0 and statuses(third) == {"a.mp4": "skipped", "b.png": "done", "bad.mp4": "done"}
    code, forced = run(args + ["--force"], capsys)
    assert set(statuses(forced).values()) == {"done"}
    code, changed_settings = run(args + ["--output-video-quality", "60"], capsys)
    assert statuses(changed_settings)["a.mp4"] == "done", "output-shaping settings are part of the key"


def test_retry_failed_runs_only_failures(env, source_image, capsys):
    clips = env / "clips"
    clips.mkdir()
    cv2.imwrite(str(clips / "good.png"), face_frame())
    (clips / "bad.png").write_bytes(b"not an image")
    args = ["-s", str(source_image), "-t", str(clips), "-o", str(env / "out")]
    assert run(args, capsys)[0] == 1
    code, retry = run(args + ["--retry-failed"], capsys)
    assert statuses(retry) == {"bad.png": "failed", "good.png": "skipped"} and code == 1
    assert main(["status", str(env / "out"), "--json"]) == 0
    rows = {Path(r["target"]).name: r for r in json.loads(capsys.readouterr().out)}
    assert rows["bad.png"]["attempts"] == 2 and rows["good.png"]["status"] == "done"
    assert "not a readable image" in rows["bad.png"]["reason"]


def test_a_second_run_on_the_same_output_exits_at_once(env, source_image, capsys):
    from facefusion_batch.runner.lock import RunLock

    image = env / "t.png"
    cv2.imwrite(str(image), face_frame())
    holder = RunLock(env / "out" / ".ffb" / "lock")
    holder.acquire()
    started = time.monotonic()
    code = main(["run", "-s", str(source_image), "-t", str(image), "-o", str(env / "out")])
    assert code == 6 and time.monotonic() - started < 60  # a waiting run would wait forever: the lock is held
    assert "another ffb run" in capsys.readouterr().err
    holder.release()
    assert main(["run", "-s", str(source_image), "-t", str(image), "-o", str(env / "out"), "-q"]) == 0


def ffb(args: list[str], env_vars: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "facefusion_batch", "run", "-q", "--json", *args],
                            env={**os.environ, **env_vars}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def holds_lock(output: Path, run: subprocess.Popen, timeout: float = 120.0) -> None:
    """Wait until `run` holds the output's lock: the lock file names its pid once the flock is taken."""
    lock = output / ".ffb" / "lock"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if json.loads(lock.read_text() or "{}").get("pid") == run.pid:
                return
        except (OSError, ValueError):
            pass
        assert run.poll() is None, run.communicate()[1].decode()
        time.sleep(0.05)
    raise AssertionError(f"pid {run.pid} did not take {lock} within {timeout} s")


def test_two_concurrent_runs_never_process_the_same_tree_together(env, source_image):
    clips = env / "clips"
    clips.mkdir()
    for i in range(3):
        make_clip(clips / f"c{i}.mp4", frames=40)
    args = ["-s", str(source_image), "-t", str(clips), "-o", str(env / "out")]
    first = ffb(args, {})
    holds_lock(env / "out", first)  # not a sleep: on a loaded machine the second could take the lock first
    second = ffb(args + ["--wait"], {})
    out1, _ = first.communicate(timeout=300)
    out2, err2 = second.communicate(timeout=300)
    assert first.returncode == 0 and second.returncode == 0, err2.decode()
    done1 = {o["target"] for o in json.loads(out1)["outcomes"] if o["status"] == "done"}
    skipped2 = {o["target"] for o in json.loads(out2)["outcomes"] if o["status"] == "skipped"}
    assert len(done1) == 3 and skipped2 == done1, "the waiting run found everything finished"


def test_resumed_video_equals_an_uninterrupted_run(env, source_image):
    clip = make_clip(env / "long.mp4", frames=120)
    common = ["-s", str(source_image), "-t", str(clip), "--chunk-size", "20"]
    whole = ffb(common + ["-o", str(env / "whole")], {"FFB_TEMP_PATH": str(env / "tmp-whole")})
    assert whole.wait(timeout=300) == 0
    victim = ffb(common + ["-o", str(env / "resumed")], {"FFB_EXECUTION_THREAD_COUNT": "1"})
    deadline = time.monotonic() + 120  # a bound for a loaded machine; the file ends the wait
    while not list((env / "tmp").glob("ffb-*/chunk_00002.json")):
        assert time.monotonic() < deadline and victim.poll() is None, "the third chunk was never finished"
        time.sleep(0.02)
    victim.kill()  # SIGKILL: no cleanup at all
    victim.wait()
    assert not (env / "resumed" / "long.mp4").exists()
    rerun = ffb(common + ["-o", str(env / "resumed")], {})
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err.decode()
    before, after = decode_all(env / "whole" / "long.mp4"), decode_all(env / "resumed" / "long.mp4")
    assert before.shape == after.shape == (120, 272, 480, 3)
    assert np.array_equal(before, after), "same frames as a run that was never interrupted"
    assert probe(env / "resumed" / "long.mp4").audio_codec == "aac"
    assert not [p for p in (env / "resumed").iterdir() if p.name != ".ffb" and p.name != "long.mp4"]


def test_kill_9_at_random_moments_then_rerun_gives_every_output_once(env, source_image, capsys):
    clips = env / "clips"
    clips.mkdir()
    lengths = {"a.mp4": 60, "b.mp4": 45, "c.mp4": 30}
    for name, frames in lengths.items():
        make_clip(clips / name, frames=frames)
    cv2.imwrite(str(clips / "d.png"), face_frame())
    (clips / "broken.mp4").write_bytes(b"\x00" * 100)
    args = ["-s", str(source_image), "-t", str(clips), "-o", str(env / "out"), "--chunk-size", "15"]
    rng = random.Random(7)
    for delay in [0.0] + [rng.uniform(0.3, 2.5) for _ in range(4)]:  # 0: killed before it made anything
        victim = ffb(args, {})
        time.sleep(delay)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        killed_early = not (env / "out").is_dir()  # killed before the output tree was made: nothing to check
        for path in [] if killed_early else (env / "out").iterdir():  # no incomplete file at a final path
            if path.suffix == ".mp4" and not path.name.startswith("."):  # hidden: a killed run's temp name
                assert probe(path).frame_count == lengths[path.name]
    final = ffb(args, {})
    out, err = final.communicate(timeout=600)
    summary = json.loads(out)
    result = statuses(summary)
    assert result["broken.mp4"] in ("failed", "skipped")
    assert all(result[name] in ("done", "skipped") for name in [*lengths, "d.png"])
    for name, frames in lengths.items():
        info = probe(env / "out" / name)
        assert info.frame_count == frames and info.audio_codec == "aac"
    assert (env / "out" / "d.png").is_file()
    assert not [p for p in (env / "out").rglob(".*") if p.name != ".ffb" and ".ffb" not in p.parts[:-1]]
    assert main(["status", str(env / "out"), "--json"]) == 0
    journal = {Path(r["target"]).name: r["status"] for r in json.loads(capsys.readouterr().out)}
    assert journal == {**{name: "done" for name in [*lengths, "d.png"]}, "broken.mp4": "failed"}


def test_a_run_killed_while_trying_the_output_dir_leaves_no_file_there(env, source_image, monkeypatch):
    from facefusion_batch.workflow.output_guard import check_output_dir

    real_unlink = Path.unlink

    def killed(path, missing_ok=False):  # the run dies between writing its test file and removing it
        raise SystemExit(137)

    monkeypatch.setattr(Path, "unlink", killed)
    try:
        check_output_dir(env / "out")
    except SystemExit:
        pass
    monkeypatch.setattr(Path, "unlink", real_unlink)
    assert [p.name for p in (env / "out").iterdir()], "the killed run left its test file"
    image = env / "t.png"
    cv2.imwrite(str(image), face_frame())
    assert main(["run", "-s", str(source_image), "-t", str(image), "-o", str(env / "out"), "-q"]) == 0
    assert sorted(p.name for p in (env / "out").iterdir()) == [".ffb", "t.png"]


def test_finished_chunks_are_not_decoded_again(env, source_image, monkeypatch):
    from facefusion_batch.workflow import chunks
    from facefusion_batch.workflow.video_plan import job_options, plan_video
    from facefusion_batch.workflow.processor import prepare
    from facefusion_batch.workflow.workspace import Workspace
    from facefusion_batch.settings import load_settings

    clip = make_clip(env / "a.mp4", frames=40)
    settings = load_settings(None, os.environ, {"chunk_size": 20, "output_path": env / "out"}).settings
    batch = prepare(settings, source_image, print)
    (env / "out").mkdir()
    plan = plan_video(clip, env / "out" / "a.mp4", job_options(settings))
    workspace = Workspace(env / "ws").make()
    assert chunks.encode_chunks(plan, workspace, batch, lambda n: None).frames == 40
    assert workspace.end() == 40

    def no_decoder(*args, **kwargs):
        raise AssertionError("a decoder was started for work that is already done")

    monkeypatch.setattr(chunks.subprocess, "Popen", no_decoder)
    again = chunks.encode_chunks(plan, workspace, batch, lambda n: None)
    assert (again.frames, again.resumed_frames) == (40, 40)
    assert chunks.encode_chunks(plan, workspace, batch, lambda n: None, first=0, last=1).frames == 20

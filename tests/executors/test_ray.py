"""The Ray executor on a local Ray instance with two workers: same outputs as the thread executor, long
clips split into segments and joined, and a worker killed mid-batch."""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
import ray

from conftest import decode_all, face_frame, make_clip
from pool_runs import by_name, run
from facefusion_batch.cli import main
from facefusion_batch.video.probe import probe


@pytest.fixture(scope="module", autouse=True)
def ray_instance():
    """One small local Ray for the module; the executor uses it and leaves it running."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    yield
    ray.shutdown()


@pytest.fixture
def ray_env(env, monkeypatch):
    monkeypatch.setenv("FFB_RAY_WORKERS", "2")
    monkeypatch.setenv("FFB_EXECUTION_THREAD_COUNT", "1")
    return env


def test_batch_of_clips_equals_the_thread_executor(ray_env, source_image, capsys):
    clips = ray_env / "clips"
    (clips / "sub").mkdir(parents=True)
    make_clip(clips / "a.mp4", frames=20)
    make_clip(clips / "sub" / "b.mp4", frames=33, fps="30000/1001")
    make_clip(clips / "c.mov", frames=9, audio=False)
    cv2.imwrite(str(clips / "d.png"), face_frame())
    (clips / "bad.mp4").write_bytes(b"not a video")
    common = ["-s", str(source_image), "-t", str(clips), "--chunk-size", "8", "-q"]
    code, local, _ = run(common + ["-o", str(ray_env / "local")], capsys)
    assert code == 1
    code, distributed, _ = run(common + ["-o", str(ray_env / "ray")], capsys, "ray")
    assert code == 1, distributed
    assert distributed.keys() == local.keys()
    assert [o.keys() for o in distributed["outcomes"]] == [o.keys() for o in local["outcomes"]]
    assert {k: (o["status"], o["frames"]) for k, o in by_name(distributed).items()} == \
           {k: (o["status"], o["frames"]) for k, o in by_name(local).items()}, \
        [(k, o["reason"]) for k, o in by_name(distributed).items() if o["status"] == "failed"]
    assert by_name(distributed)["bad.mp4"]["reason"] == by_name(local)["bad.mp4"]["reason"]
    assert distributed["counts"] == {"done": 4, "no_face": 0, "skipped": 0, "blocked": 0, "failed": 1,
                                     "interrupted": 0}
    for name in ("a.mp4", "sub/b.mp4", "c.mov"):
        mine, theirs = ray_env / "ray" / name, ray_env / "local" / name
        assert np.array_equal(decode_all(mine), decode_all(theirs)), name
        assert (probe(mine).fps, probe(mine).audio_codec) == (probe(theirs).fps, probe(theirs).audio_codec)
    assert np.array_equal(cv2.imread(str(ray_env / "ray" / "d.png")), cv2.imread(str(ray_env / "local" / "d.png")))
    assert sorted(p.name for p in (ray_env / "ray").iterdir()) == [".ffb", "a.mp4", "c.mov", "d.png", "sub"]
    code, again, _ = run(common + ["-o", str(ray_env / "ray")], capsys, "ray")
    assert {o["status"] for o in again["outcomes"]} == {"skipped"}, "the journal works as with the local executor"


def test_long_clip_is_split_into_segments_and_joined(ray_env, source_image, capsys, monkeypatch):
    clip = make_clip(ray_env / "long.mp4", frames=95, fps="30000/1001")
    common = ["-s", str(source_image), "-t", str(clip), "--chunk-size", "10"]
    assert run(common + ["-q", "-o", str(ray_env / "local")], capsys)[0] == 0
    monkeypatch.setenv("FFB_RAY_SEGMENT_CHUNKS", "3")
    code, summary, err = run(common + ["-o", str(ray_env / "ray")], capsys, "ray")
    assert code == 0, err
    assert "split into 4 segments of up to 3 chunks" in err
    joined, whole = ray_env / "ray" / "long.mp4", ray_env / "local" / "long.mp4"
    before, after = probe(whole), probe(joined)
    assert after.frame_count == before.frame_count == 95 and summary["outcomes"][0]["frames"] == 95
    assert after.fps == before.fps and abs(after.duration - before.duration) < 0.01
    assert after.audio_codec == before.audio_codec == "aac"
    assert np.array_equal(decode_all(joined), decode_all(whole)), "segments give the single-machine frames"
    assert not list((ray_env / "tmp").glob("ffb-*")), "workspaces and scratch dirs are removed"


def parent(pid: int) -> int:
    stat = (Path("/proc") / str(pid) / "stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[1])


def ours(pid: int) -> bool:
    """Whether `pid` descends from this process: other test runs on the machine have Ray workers too."""
    try:
        while pid > 1:
            pid = parent(pid)
            if pid == os.getpid():
                return True
    except (OSError, ValueError, IndexError):
        pass
    return False


def busy(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().startswith(b"ray::FfbWorker.run")
    except OSError:
        return False


def busy_worker() -> int | None:
    """The pid of a Ray worker process of ours that is running an item right now."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and busy(int(entry.name)) and ours(int(entry.name)):
            return int(entry.name)
    return None


def kill_mid_item(pid: int) -> bool:
    """SIGKILL the worker `pid` while it runs an item. It is stopped first and looked at again, so that an
    item that ended between finding the worker and the kill (a loaded machine) can't make it an idle kill."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        return False
    if busy(pid):
        os.kill(pid, signal.SIGKILL)
        return True
    os.kill(pid, signal.SIGCONT)
    return False


@pytest.mark.skipif(sys.platform != "linux", reason="finds the worker process through /proc")
@pytest.mark.parametrize("segment_chunks", ["0", "2"])  # 0: whole clips, the first one split; 2: all split
def test_killing_a_worker_mid_batch_still_completes_the_batch(ray_env, source_image, capsys, monkeypatch,
                                                             segment_chunks):
    monkeypatch.setenv("FFB_RAY_SEGMENT_CHUNKS", segment_chunks)
    clips = ray_env / "clips"
    clips.mkdir()
    lengths = {"a.mp4": 60, "b.mp4": 45, "c.mp4": 50, "d.mp4": 40}
    for name, frames in lengths.items():
        make_clip(clips / name, frames=frames)
    common = ["-s", str(source_image), "-t", str(clips), "--chunk-size", "10"]
    killed: list[int] = []
    ended = threading.Event()

    def kill_one() -> None:
        deadline = time.monotonic() + 600  # only a bound: the batch ending stops the search (a loaded machine is slow)
        while time.monotonic() < deadline and not ended.is_set():
            if list((ray_env / "tmp").glob("ffb-*/chunk_00001.json")):
                pid = busy_worker()
                if pid and kill_mid_item(pid):  # a process this test's Ray started for the batch
                    killed.append(pid)
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one)
    killer.start()
    try:
        code, summary, err = run(common + ["-o", str(ray_env / "ray")], capsys, "ray")
    finally:
        ended.set()
        killer.join()
    assert killed, f"a worker was killed mid-batch\n{err}"
    assert code == 0, err
    assert "retrying on another worker" in err
    assert {o["status"] for o in summary["outcomes"]} == {"done"}
    assert run(common + ["-q", "-o", str(ray_env / "local")], capsys)[0] == 0
    for name, frames in lengths.items():
        assert probe(ray_env / "ray" / name).frame_count == frames
        assert np.array_equal(decode_all(ray_env / "ray" / name), decode_all(ray_env / "local" / name)), name
    assert sorted(p.name for p in (ray_env / "ray").iterdir()) == [".ffb", *sorted(lengths)], "no leftovers"
    assert main(["status", str(ray_env / "ray"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sum(r["attempts"] for r in rows) == len(lengths) + 1, "the journal records the lost attempt"
    assert {r["status"] for r in rows} == {"done"}


def test_a_worker_that_cannot_see_an_input_stops_the_run_with_the_path(ray_env, source_image, capsys, monkeypatch):
    from facefusion_batch.executors import ray_executor

    image = ray_env / "t.png"
    cv2.imwrite(str(image), face_frame())
    original = ray_executor.RayExecutor._storage_check

    def elsewhere(self, targets):  # an input the driver sees but the workers' nodes don't
        check = original(self, targets)
        return dataclasses.replace(check, inputs=check.inputs + (ray_env / "only-on-the-driver.png",))

    monkeypatch.setattr(ray_executor.RayExecutor, "_storage_check", elsewhere)
    code, _, err = run(["-s", str(source_image), "-t", str(image), "-o", str(ray_env / "out"), "-q"], capsys, "ray")
    assert code == 2
    assert "only-on-the-driver.png: the Ray worker on" in err and "can't read this input" in err
    assert "Scale-out on Ray" in err


def test_several_sources_are_averaged_as_with_the_thread_executor(ray_env, source_image, capsys):
    """-s a -s b on Ray: each worker averages the photos into one identity, as the local executor does."""
    other = ray_env / "other.png"
    cv2.imwrite(str(other), cv2.flip(face_frame(), 1))  # the mirrored face: another identity for the stand-ins
    clip = make_clip(ray_env / "a.mp4", frames=6)
    picture = ray_env / "d.png"
    cv2.imwrite(str(picture), face_frame())
    targets = ["-t", str(clip), "-t", str(picture), "-q"]
    both = ["-s", str(source_image), "-s", str(other), *targets]
    code, local, err = run(both + ["-o", str(ray_env / "local")], capsys)
    assert code == 0, err
    code, distributed, err = run(both + ["-o", str(ray_env / "ray")], capsys, "ray")
    assert code == 0, err
    assert distributed["counts"] == local["counts"] == {"done": 2, "no_face": 0, "skipped": 0, "blocked": 0,
                                                        "failed": 0, "interrupted": 0}
    assert np.array_equal(decode_all(ray_env / "ray" / "a.mp4"), decode_all(ray_env / "local" / "a.mp4"))
    averaged = cv2.imread(str(ray_env / "ray" / "d.png"))
    assert np.array_equal(averaged, cv2.imread(str(ray_env / "local" / "d.png")))
    code, _, err = run(["-s", str(source_image), *targets, "-o", str(ray_env / "one")], capsys)
    assert code == 0, err
    assert not np.array_equal(averaged, cv2.imread(str(ray_env / "one" / "d.png"))), "both photos count"


def test_a_signal_whose_keyboardinterrupt_was_lost_still_ends_a_ray_run(ray_env, source_image):
    """Ray's actor handles swallow a KeyboardInterrupt raised in their __del__: the executor's waiting loop
    asks `lost_signal` each turn, so the run ends as interrupted instead of going on to the end."""
    from facefusion_batch import api
    from facefusion_batch.runner.journal import Journal
    from facefusion_batch.runner.progress import QuietReporter
    from facefusion_batch.settings import load_settings

    clip = make_clip(ray_env / "a.mp4", frames=60)
    begun = threading.Event()

    class Started(QuietReporter):
        def start(self, name: str, total: int) -> None:
            begun.set()

    def lost_signal() -> None:
        if begun.is_set():
            raise KeyboardInterrupt

    settings = dataclasses.replace(load_settings(None, {}, {}).settings, executor="ray", chunk_size=8)
    result = api.run(source_image, clip, ray_env / "out", settings, reporter=Started(), lost_signal=lost_signal)
    assert result.interrupted
    assert not (ray_env / "out" / "a.mp4").exists()
    journal = Journal(ray_env / "out" / ".ffb" / "journal.sqlite")
    try:
        assert journal.get(clip).status == "interrupted"
    finally:
        journal.close()


def test_content_gate_blocks_whole_and_split_targets(env_with, neural_models, tmp_path, source_image, capsys,
                                                     monkeypatch):
    """A flagged picture (a whole item) and a flagged clip split into segments (checked at the join) are
    blocked with nothing written; the harmless clip is done, with the gate recorded."""
    import shutil

    import standins

    models = tmp_path / "models"
    shutil.copytree(neural_models, models)
    standins.build_nsfw_set(models)
    env = env_with(models)
    for name, value in (("RAY_WORKERS", "2"), ("EXECUTION_THREAD_COUNT", "1"), ("RAY_SEGMENT_CHUNKS", "1")):
        monkeypatch.setenv(f"FFB_{name}", value)
    inputs = env / "in"
    inputs.mkdir()
    explicit = np.full((272, 480, 3), (255, 0, 255), np.uint8)  # what the stand-ins flag
    cv2.imwrite(str(inputs / "explicit.png"), explicit)
    make_clip(inputs / "explicit.mp4", frames=30, image=explicit)
    make_clip(inputs / "face.mp4", frames=8)
    code, summary, err = run(["-q", "-s", str(source_image), "-t", str(inputs), "-o", str(env / "out"),
                              "--chunk-size", "10", "--watermark"], capsys, "ray")
    assert code == 0, err
    outcomes = by_name(summary)
    assert outcomes["explicit.png"]["status"] == outcomes["explicit.mp4"]["status"] == "blocked", outcomes
    assert outcomes["face.mp4"]["status"] == "done"
    assert outcomes["face.mp4"]["content_gate"] == "checked (nsfw_1+nsfw_2+nsfw_3)"
    assert len(outcomes["face.mp4"]["watermark"]) == 8
    assert sorted(p.name for p in (env / "out").iterdir() if not p.name.startswith(".")) == ["face.mp4"]

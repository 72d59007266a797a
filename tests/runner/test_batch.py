"""A batch finishes each video (join, verify, rename) on its own thread while the next one starts."""
from __future__ import annotations

import io
import os
import threading
from types import SimpleNamespace

import pytest

from conftest import make_clip, run_local
from facefusion_batch.errors import MediaError
from facefusion_batch.workflow import video as video_job
from facefusion_batch.runner.batch import open_state
from facefusion_batch.runner.progress import PlainReporter
from facefusion_batch.settings import load_settings


@pytest.fixture
def batch_of_two(env, source_image):
    (env / "in").mkdir()
    clips = [make_clip(env / "in" / name, frames=6) for name in ("a.mp4", "b.mp4")]
    settings = load_settings(None, os.environ, {"output_path": env / "out"}).settings
    log = io.StringIO()
    return SimpleNamespace(settings=settings, source=source_image, reporter=PlainReporter(log)), clips, log


def test_a_video_is_finished_while_the_next_one_starts(batch_of_two, monkeypatch):
    batch, clips, log = batch_of_two
    b_started = threading.Event()
    seen: dict[str, object] = {}
    real_finish, real_start = video_job.finish_video, batch.reporter.start

    def finish(plan, workspace, tags, *seal):
        if plan.info.path.name == "a.mp4":
            seen["thread"] = threading.current_thread().name
            seen["overlapped"] = b_started.wait(timeout=120)  # a sequential batch would only get here later
        return real_finish(plan, workspace, tags, *seal)

    def start(name, total):
        if name.endswith("b.mp4"):
            b_started.set()
        real_start(name, total)

    monkeypatch.setattr(video_job, "finish_video", finish)
    monkeypatch.setattr(batch.reporter, "start", start)
    result = run_local(batch.settings, batch.source, [str(clip) for clip in clips], batch.reporter)
    assert [o.status for o in result.outcomes] == ["done", "done"]
    assert seen == {"thread": seen["thread"], "overlapped": True} and seen["thread"].startswith("ffb-finish")
    lines = log.getvalue().splitlines()
    assert lines.index(f"{clips[0]}: done") < lines.index(f"{clips[1]}: done")
    assert (batch.settings.output_path / "a.mp4").is_file() and (batch.settings.output_path / "b.mp4").is_file()


def test_a_failure_while_finishing_is_reported_and_journaled_under_its_own_name(batch_of_two, monkeypatch):
    batch, clips, log = batch_of_two
    real_finish = video_job.finish_video

    def finish(plan, workspace, tags, *seal):
        if plan.info.path.name == "a.mp4":
            raise MediaError(f"{plan.info.path}: joining chunks and audio failed (disk gone)")
        return real_finish(plan, workspace, tags, *seal)

    monkeypatch.setattr(video_job, "finish_video", finish)
    lock, journal = open_state(batch.settings, False, batch.reporter)
    try:
        result = run_local(batch.settings, batch.source, [str(clip) for clip in clips], batch.reporter, journal)
        assert [o.status for o in result.outcomes] == ["failed", "done"]
        assert journal.get(clips[0]).status == "failed" and "disk gone" in journal.get(clips[0]).reason
        assert journal.get(clips[1]).status == "done"
    finally:
        journal.close()
        lock.release()
    assert f"{clips[0]}: failed" in log.getvalue().splitlines()
    assert not (batch.settings.output_path / "a.mp4").exists()
    assert not list(batch.settings.temp_path.glob("ffb-*")), "the failed video's workspace is removed"

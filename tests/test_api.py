"""The public Python API: a `FaceSwapper` that loads once and yields outcomes as they finish, and
`facefusion_batch.run` on top of it, over the same driver as `ffb run`, opened and closed cleanly by an
embedding program."""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import facefusion_batch
from conftest import decode_all, make_clip
from facefusion_batch.settings import load_settings


def test_run_twice_in_one_process_leaves_no_thread_behind(env, source_image):
    clip = make_clip(env / "a.mp4", frames=6)
    picture = env / "b.png"
    picture.write_bytes(source_image.read_bytes())
    before = set(threading.enumerate())
    for engine in ("neural", "offline"):
        settings = load_settings(None, os.environ, {"engine": engine, "batch_size": 4}).settings
        summary = facefusion_batch.run(source_image, [clip, picture], env / f"out-{engine}", settings)
        assert isinstance(summary, facefusion_batch.Summary)
        assert [o.status for o in summary.outcomes] == ["done", "done"], summary.outcomes
        assert (env / f"out-{engine}" / "a.mp4").is_file() and (env / f"out-{engine}" / "b.png").is_file()
    left = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
    assert left == [], f"threads left running: {left}"
    again = facefusion_batch.run(source_image, clip, env / "out-neural",
                                 load_settings(None, os.environ, {}).settings)
    assert [o.status for o in again.outcomes] == ["skipped"], "the output tree's journal is kept between runs"


class _Gate:
    """A reporter that holds the batch at the start of target `hold` until `release` (or forever), spinning
    so that an interruption reaches the batch's thread there."""

    def __init__(self, hold: str) -> None:
        self.hold, self.release, self.reached = hold, threading.Event(), threading.Event()

    def start(self, name: str, total: int) -> None:
        if name.endswith(self.hold):
            self.reached.set()
            while not self.release.wait(0.02):
                pass

    def message(self, text: str) -> None: ...
    def expect(self, targets: int) -> None: ...
    def advance(self, frames: int) -> None: ...
    def finish(self, status: str, name: str | None = None) -> None: ...
    def close(self) -> None: ...


def _count_engines(monkeypatch) -> list:
    from facefusion_batch.workflow import processor

    built = []
    real = processor.build_engine

    def counted(settings):
        built.append(settings)
        return real(settings)

    monkeypatch.setattr(processor, "build_engine", counted)
    return built


def test_a_face_swapper_loads_once_and_yields_outcomes_as_they_finish(env, source_image, monkeypatch):
    built = _count_engines(monkeypatch)
    (env / "in").mkdir()
    clips = [make_clip(env / "in" / f"{name}.mp4", frames=4) for name in ("a", "b", "c")]
    settings = load_settings(None, os.environ, {"engine": "offline"}).settings
    gate = _Gate("c.mp4")
    with facefusion_batch.FaceSwapper(source_image, settings) as swapper:
        outcomes = swapper.process([str(c) for c in clips], env / "out", reporter=gate)
        seen = []
        for outcome in outcomes:
            seen.append(outcome)
            if len(seen) == 1:
                # a.mp4's outcome comes while c.mp4 is held at its start: yielded as the batch goes, not at its
                # end (the local executor settles a target once the next one's frames are done)
                assert gate.reached.wait(120) and not (env / "out" / "c.mp4").exists()
                assert outcome.target.endswith("a.mp4") and outcome.status == "done"
                gate.release.set()
        assert [o.status for o in seen] == ["done", "done", "done"]
        assert outcomes.summary is not None and outcomes.summary.outcomes == seen
        again = list(swapper.process(str(env / "in"), env / "out"))
        assert [o.status for o in again] == ["skipped"] * 3, "the journal is the output tree's, as with ffb run"
        other = swapper.run(str(env / "in"), env / "other")
        assert [o.status for o in other.outcomes] == ["done"] * 3
    assert len(built) == 1, "three batches, one engine"
    assert np.array_equal(decode_all(env / "out" / "a.mp4"), decode_all(env / "other" / "a.mp4"))


def test_stopping_the_iteration_interrupts_the_batch_as_ctrl_c_does(env, source_image):
    (env / "in").mkdir()
    clips = [make_clip(env / "in" / f"{name}.mp4", frames=4) for name in ("a", "b", "c")]
    settings = load_settings(None, os.environ, {"engine": "offline"}).settings
    before = set(threading.enumerate())
    with facefusion_batch.FaceSwapper(source_image, settings) as swapper:
        outcomes = swapper.process([str(c) for c in clips], env / "out", reporter=_Gate("c.mp4"))
        for outcome in outcomes:
            assert outcome.target.endswith("a.mp4")
            break  # c.mp4 is held at its start: the batch is interrupted there
        assert outcomes.summary is not None and outcomes.summary.interrupted
        assert not (env / "out" / "c.mp4").exists()
        rerun = swapper.run([str(c) for c in clips], env / "out")  # the lock was released
    assert [o.status for o in rerun.outcomes] == ["skipped", "skipped", "done"], \
        "b.mp4 was finished before the interruption took effect; c.mp4 is done next time"
    left = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
    assert left == [], f"threads left running: {left}"


def test_a_face_swapper_refuses_a_bad_source_before_any_batch(env, tmp_path):
    from facefusion_batch.errors import FfbError

    bad = tmp_path / "not-a-face.png"
    bad.write_bytes(b"not an image")
    settings = load_settings(None, os.environ, {"engine": "offline"}).settings
    with pytest.raises(FfbError):
        facefusion_batch.FaceSwapper(bad, settings)

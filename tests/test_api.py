"""The public Python API: `facefusion_batch.run` over the same driver as `ffb run`, opened and closed
cleanly by an embedding program."""
from __future__ import annotations

import os
import threading

import facefusion_batch
from conftest import make_clip
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

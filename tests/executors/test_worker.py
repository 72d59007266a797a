"""Segments and joins made in this process, as a Ray worker makes them."""
from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from conftest import decode_all, make_clip
from facefusion_batch.cli import main
from facefusion_batch.executors.plan import Join, Segment
from facefusion_batch.executors import worker
from facefusion_batch.executors.worker import encode_segment, join_segments
from facefusion_batch.pipeline import video_job
from facefusion_batch.pipeline.processor import prepare
from facefusion_batch.pipeline.workspace import Workspace
from facefusion_batch.settings import load_settings
from facefusion_batch.targets import Target
from facefusion_batch.video.probe import probe


def test_segments_and_join_use_the_drivers_probe(env, source_image, monkeypatch):
    """The driver probed the video: a worker must not read the whole file again per segment."""
    clip = make_clip(env / "v.mp4", frames=25)
    info = probe(clip)
    settings = load_settings(None, os.environ, {"chunk_size": 10, "output_path": env / "out"}).settings
    batch = prepare(settings, source_image, print)
    (env / "out").mkdir()
    probed = []
    real = video_job.probe
    monkeypatch.setattr(video_job, "probe", lambda path: probed.append(path) or real(path))
    target, shared = Target(clip, "video", env / "out" / "v.mp4"), Workspace(env / "shared")
    for first, last in ((0, 2), (2, None)):
        assert encode_segment(batch, Segment(target, "k", first, last, info), shared, lambda n: None).status == "done"
    staged = env / "out" / ".v.staged.mp4"
    outcome = join_segments(batch, Join(target, "k", staged, info), shared)
    assert outcome.status == "done" and outcome.frames == 25
    assert clip not in probed and len(probed) == 1, "only the joined output is probed, to verify it"
    assert main(["run", "-s", str(source_image), "-t", str(clip), "-o", str(env / "whole"), "--chunk-size", "10",
                 "-q"]) == 0
    assert np.array_equal(decode_all(staged), decode_all(env / "whole" / "v.mp4"))


def _segment_setup(env, source_image):
    clip = make_clip(env / "v.mp4", frames=12)
    settings = load_settings(None, os.environ, {"chunk_size": 10, "output_path": env / "out"}).settings
    (env / "out").mkdir()
    target = Target(clip, "video", env / "out" / "v.mp4")
    return prepare(settings, source_image, print), target, probe(clip), Workspace(env / "shared")


@pytest.mark.parametrize("error, says", [
    (RuntimeError("boom"), "unexpected RuntimeError"),
    (KeyError("k"), "unexpected KeyError"),
    (OSError(errno.ENOSPC, "No space left on device"), "temp disk full"),
])
def test_a_worker_item_failure_of_any_kind_is_that_items_one_line(env, source_image, monkeypatch, error, says):
    """As in the local executor: whatever a segment or join raises becomes its failed Outcome naming the
    target, not an exception that reaches the Ray driver as a crashed task."""
    batch, target, info, shared = _segment_setup(env, source_image)

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(worker, "encode_chunks", fail)
    outcome = encode_segment(batch, Segment(target, "k", 0, None, info), shared, lambda n: None)
    assert outcome.status == "failed" and says in outcome.reason and str(target.path) in outcome.reason
    assert "\n" not in outcome.reason
    monkeypatch.setattr(worker, "finish_video", fail)
    outcome = join_segments(batch, Join(target, "k", env / "out" / ".v.staged.mp4", info), shared)
    assert outcome.status == "failed" and says in outcome.reason


@pytest.mark.parametrize("signal_like", [KeyboardInterrupt, SystemExit])
def test_a_worker_never_swallows_an_interruption(env, source_image, monkeypatch, signal_like):
    batch, target, info, shared = _segment_setup(env, source_image)

    def interrupt(*args, **kwargs):
        raise signal_like()

    monkeypatch.setattr(worker, "encode_chunks", interrupt)
    with pytest.raises(signal_like):
        encode_segment(batch, Segment(target, "k", 0, None, info), shared, lambda n: None)

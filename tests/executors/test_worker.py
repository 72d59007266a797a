"""Segments and joins made in this process, as a Ray worker makes them."""
from __future__ import annotations

import os

import numpy as np

from conftest import decode_all, make_clip
from facefusion_batch.cli import main
from facefusion_batch.executors.plan import Join, Segment
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

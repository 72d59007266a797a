"""Reference frames are analysed by tasks of their own, queued as they are planned; failures don't hang."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from conftest import make_clip
from facefusion_batch.errors import MediaError
from facefusion_batch.pipeline import video_job
from facefusion_batch.pipeline.analysis import MotionGate, Reference
from facefusion_batch.video.ffmpeg import EncodeOptions


class Recorder:
    """A frame processor that swaps nothing and notes how each frame reached it."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.fail_at = fail_at
        self.analysed: list[int] = []
        self.new_frames: list[tuple[int, bool]] = []  # (reference index, analysed ahead)
        self.lock = threading.Lock()

    def new_gate(self) -> MotionGate:
        return MotionGate(True, threshold=4.0, interval=4)

    def analyse(self, frame: np.ndarray, reference: Reference) -> None:
        with self.lock:
            self.analysed.append(reference.index)
        if reference.index == self.fail_at:
            error = MediaError("detector failed")
            reference.result.set_exception(error)
            raise error
        reference.result.set_result(([], []))

    def __call__(self, frame: np.ndarray, reference: Reference, is_new: bool, index: int
                 ) -> tuple[np.ndarray, int]:
        faces, _ = reference.result.result()
        if is_new:
            with self.lock:
                self.new_frames.append((reference.index, reference.ahead))
        return frame, len(faces)


def plan_for(tmp_path: Path, transport: str) -> video_job.VideoPlan:
    clip = make_clip(tmp_path / "a.mp4", frames=18, audio=False)
    options = video_job.JobOptions(temp_root=tmp_path / "tmp", chunk_size=10, frame_format="bmp", threads=2,
                                   in_flight=4, encode=EncodeOptions("libx264", "ultrafast", 60),
                                   transport=transport)
    return video_job.plan_video(clip, tmp_path / "out.mp4", options)


@pytest.mark.parametrize("transport", ["temp", "memory"])
def test_every_reference_is_analysed_ahead_once(tmp_path, transport):
    plan, recorder = plan_for(tmp_path, transport), Recorder()
    (tmp_path / "ws").mkdir()
    counters = video_job.encode_chunks(plan, tmp_path / "ws", recorder, lambda n: None)
    assert counters.frames == 18
    # Static frames: a reference every 4 frames, and one at each chunk start (a fresh gate per chunk).
    assert sorted(recorder.analysed) == [0, 4, 8, 10, 14]
    assert sorted(recorder.new_frames) == [(i, True) for i in (0, 4, 8, 10, 14)]


def test_a_failed_analysis_fails_the_video_without_hanging(tmp_path):
    plan, recorder = plan_for(tmp_path, "temp"), Recorder(fail_at=8)
    (tmp_path / "ws").mkdir()
    with ThreadPoolExecutor(1) as runner:
        job = runner.submit(video_job.encode_chunks, plan, tmp_path / "ws", recorder, lambda n: None)
        with pytest.raises(MediaError, match="detector failed"):
            job.result(timeout=60)


@pytest.mark.parametrize("resumable", [True, False])
def test_an_interrupted_finish_keeps_the_chunks_of_a_resumable_workspace(tmp_path, monkeypatch, resumable):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    video_job.chunk_path(workspace, 0).write_bytes(b"chunk")
    video_job.write_json(video_job.chunk_path(workspace, 0).with_suffix(".json"), {"frames": 3, "faces": 3})
    (workspace / "chunks.txt").write_text("a stray file")

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(video_job, "finish_video", interrupted)
    encoded = video_job.Encoded(plan=None, workspace=workspace, counters=video_job.Counters(), tags={},
                                resumable=resumable)
    with pytest.raises(KeyboardInterrupt):
        encoded.finish()
    if resumable:
        assert sorted(p.name for p in workspace.iterdir()) == ["chunk_00000.json", "chunk_00000.mp4"]
    else:
        assert not workspace.exists()

"""Reference frames are analysed by tasks of their own, queued as they are planned; failures don't hang."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from conftest import make_clip
from facefusion_batch.errors import MediaError
from facefusion_batch.workflow import video as video_job
from facefusion_batch.workflow.chunks import Counters, encode_chunks
from facefusion_batch.workflow.finish import finish_video
from facefusion_batch.workflow.video_plan import JobOptions, VideoPlan, plan_video
from facefusion_batch.workflow.analysis import MotionGate, Reference
from facefusion_batch.workflow.workspace import Workspace
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
                 ) -> tuple[np.ndarray, int, list]:
        faces, _ = reference.result.result()
        if is_new:
            with self.lock:
                self.new_frames.append((reference.index, reference.ahead))
        return frame, len(faces), []

    def finish(self, frame: np.ndarray, faces: int, fills: list) -> tuple[np.ndarray, int]:
        return frame, faces


def plan_for(tmp_path: Path, transport: str) -> VideoPlan:
    clip = make_clip(tmp_path / "a.mp4", frames=18, audio=False)
    options = JobOptions(temp_root=tmp_path / "tmp", chunk_size=10, frame_format="bmp", threads=2,
                                   in_flight=4, encode=EncodeOptions("libx264", "ultrafast", 60),
                                   transport=transport)
    return plan_video(clip, tmp_path / "out.mp4", options)


@pytest.mark.parametrize("transport", ["temp", "memory"])
def test_every_reference_is_analysed_ahead_once(tmp_path, transport):
    plan, recorder = plan_for(tmp_path, transport), Recorder()
    counters = encode_chunks(plan, Workspace(tmp_path / "ws").make(), recorder, lambda n: None)
    assert counters.frames == 18
    # Static frames: a reference every 4 frames, and one at each chunk start (a fresh gate per chunk).
    assert sorted(recorder.analysed) == [0, 4, 8, 10, 14]
    assert sorted(recorder.new_frames) == [(i, True) for i in (0, 4, 8, 10, 14)]


def test_a_failed_analysis_fails_the_video_without_hanging(tmp_path):
    plan, recorder = plan_for(tmp_path, "temp"), Recorder(fail_at=8)
    with ThreadPoolExecutor(1) as runner:
        job = runner.submit(encode_chunks, plan, Workspace(tmp_path / "ws").make(), recorder, lambda n: None)
        with pytest.raises(MediaError, match="detector failed"):
            job.result(timeout=60)


@pytest.mark.parametrize("resumable", [True, False])
def test_an_interrupted_finish_keeps_the_chunks_of_a_resumable_workspace(tmp_path, monkeypatch, resumable):
    workspace = Workspace(tmp_path / "ws").make()
    workspace.chunk(0).write_bytes(b"chunk")
    workspace.record_chunk(0, 3, 3)
    (workspace.path / "chunks.txt").write_text("a stray file")

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(video_job, "finish_video", interrupted)
    encoded = video_job.Encoded(plan=None, workspace=workspace, counters=Counters(), tags={},
                                resumable=resumable)
    with pytest.raises(KeyboardInterrupt):
        encoded.finish()
    if resumable:
        assert sorted(p.name for p in workspace.path.iterdir()) == ["chunk_00000.json", "chunk_00000.mp4"]
    else:
        assert not workspace.path.exists()


def test_a_link_planted_at_the_resume_workspace_is_not_followed(tmp_path):
    import os

    outside = tmp_path / "outside"
    outside.mkdir()
    clip = make_clip(tmp_path / "a.mp4", frames=5, audio=False)
    options = JobOptions(temp_root=tmp_path / "tmp", chunk_size=10, frame_format="bmp", threads=2,
                                   in_flight=4, encode=EncodeOptions("libx264", "ultrafast", 60))
    options.temp_root.mkdir()
    os.symlink(outside, options.temp_root / "ffb-key")
    encoded = video_job.encode_video(clip, tmp_path / "out.mp4", Recorder(), {}, options, lambda n: None,
                                     lambda n: None, resume_key="key")
    assert encoded.workspace.path == options.temp_root / "ffb-key" and not encoded.workspace.path.is_symlink()
    assert list(outside.iterdir()) == []
    encoded.finish()


class Swapper(Recorder):
    """Counts one face on every frame (so the output is encoded and joined, not copied through)."""

    def __call__(self, frame: np.ndarray, reference: Reference, is_new: bool, index: int
                 ) -> tuple[np.ndarray, int, list]:
        super().__call__(frame, reference, is_new, index)
        return frame, 1, []


@pytest.mark.parametrize("container, codecs, note", [
    ("mp4", ("dvd_subtitle",), "subtitles not kept: .mp4 can't hold dvd_subtitle; write .mkv to keep them"),
    ("avi", ("subrip", "ass"), "subtitles not kept: .avi can't hold subrip, ass; write .mkv to keep them"),
    ("mp4", (), ""),
])
def test_subtitles_a_container_cant_hold_are_reported(tmp_path, container, codecs, note):
    import dataclasses

    clip = make_clip(tmp_path / f"a.{container}", frames=5, audio=False)
    options = JobOptions(temp_root=tmp_path / "tmp", chunk_size=10, frame_format="bmp", threads=2,
                                   in_flight=4, encode=EncodeOptions("libx264", "ultrafast", 60))
    plan = plan_video(clip, tmp_path / f"out.{container}", options)
    info = dataclasses.replace(plan.info, subtitle_codecs=codecs)  # as a probe of such a file reports them
    plan = dataclasses.replace(plan, info=info)
    workspace = Workspace(tmp_path / "ws").make()
    encode_chunks(plan, workspace, Swapper(), lambda n: None)
    assert finish_video(plan, workspace, {}) == note
    assert (tmp_path / f"out.{container}").is_file()


@pytest.mark.parametrize("tags, kept", [({}, True), ({"comment": "AI-modified", "ai_tool": "ffb"}, False)])
def test_cover_art_is_kept_in_mp4_unless_marking_tags_exclude_it(tmp_path, tags, kept):
    import hostile_media
    from facefusion_batch.video.probe import probe

    clip = tmp_path / "cover.mp4"
    hostile_media._cover_art_first(clip)
    options = JobOptions(temp_root=tmp_path / "tmp", chunk_size=10, frame_format="bmp", threads=2,
                                   in_flight=4, encode=EncodeOptions("libx264", "ultrafast", 60))
    plan = plan_video(clip, tmp_path / "out.mp4", options)
    workspace = Workspace(tmp_path / "ws").make()
    encode_chunks(plan, workspace, Swapper(), lambda n: None)
    note = finish_video(plan, workspace, tags)
    assert (len(probe(tmp_path / "out.mp4").covers) == 1) == kept
    assert ("cover picture not kept" in note) == (not kept)

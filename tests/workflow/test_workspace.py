"""Workspace: the one owner of the chunk directory format (finished chunks, resume point, end marker,
totals, publishing, tidying, naming)."""
from __future__ import annotations

import os
import time

import pytest

from facefusion_batch.errors import MediaError
from facefusion_batch.workflow.workspace import Resume, Workspace, remove_stale


def finished(workspace: Workspace, index: int, frames: int, faces: int | None = None) -> None:
    workspace.chunk(index).write_bytes(b"v" * frames)
    workspace.record_chunk(index, frames, frames if faces is None else faces)


def test_names_are_built_in_one_place(tmp_path):
    assert Workspace.of(tmp_path, "abc").path == tmp_path / "ffb-abc"
    assert not (tmp_path / "ffb-abc").exists(), "of() names, make() creates"
    assert Workspace.of(tmp_path, "abc").make().path.is_dir()
    assert Workspace.scratch(tmp_path, "abc", 3).path == tmp_path / "ffb-abc-s00003"
    fresh = Workspace.fresh(tmp_path)
    assert fresh.path.is_dir() and fresh.path.name.startswith("ffb-") and fresh.path != Workspace.fresh(tmp_path).path


def test_a_chunk_counts_only_with_its_file_and_its_sidecar(tmp_path):
    workspace = Workspace(tmp_path)
    workspace.chunk(0).write_bytes(b"part")
    assert workspace.finished(0) is None, "no sidecar yet"
    workspace.record_chunk(0, 5, 2)
    assert workspace.finished(0) == {"frames": 5, "faces": 2}
    workspace.chunk(1).with_suffix(".json").write_text('{"frames": 5, "faces": 5}')
    assert workspace.finished(1) is None, "sidecar without its chunk"
    workspace.chunk(2).write_bytes(b"x")
    workspace.chunk(2).with_suffix(".json").write_text("{torn")
    assert workspace.finished(2) is None


def test_resume_point_end_marker_and_totals(tmp_path):
    workspace = Workspace(tmp_path)
    assert workspace.resume(10) == Resume(0) and workspace.end() is None
    finished(workspace, 0, 10, 4)
    finished(workspace, 1, 10, 0)
    assert workspace.resume(10) == Resume(2, 20, 4, False), "the end is not known yet"
    workspace.mark_end(20)
    assert workspace.resume(10) == Resume(2, 20, 4, True), "the video ended exactly with chunk 1"
    assert workspace.resume(10, 0, 1) == Resume(1, 10, 4, True), "a range ends at its last chunk"
    assert workspace.totals(10) == (20, 4)
    paths, metas = workspace.chunks("v.mp4")
    assert paths == [workspace.chunk(0), workspace.chunk(1)] and [m["frames"] for m in metas] == [10, 10]


def test_a_short_chunk_is_the_last_one_and_a_missing_chunk_is_named(tmp_path):
    workspace = Workspace(tmp_path)
    finished(workspace, 0, 10)
    finished(workspace, 1, 3)
    assert workspace.resume(10) == Resume(2, 13, 13, True)
    with pytest.raises(MediaError, match="v.mp4: the video's last chunk is missing"):
        workspace.chunks("v.mp4")
    workspace.mark_end(23)
    with pytest.raises(MediaError, match="v.mp4: chunk 2 is missing"):
        workspace.chunks("v.mp4")


def test_tidy_keeps_only_what_a_later_run_can_reuse(tmp_path):
    workspace = Workspace(tmp_path / "ws").make()
    finished(workspace, 0, 10)
    workspace.chunk(1).with_name("chunk_00001.part.mp4").write_bytes(b"half")
    (workspace.path / "chunk_00001.log").write_text("log")
    workspace.frames_dir.mkdir()
    (workspace.frames_dir / "000001.bmp").write_bytes(b"f")
    workspace.mark_end(10)
    workspace.tidy()
    assert sorted(p.name for p in workspace.path.iterdir()) == ["chunk_00000.json", "chunk_00000.mp4", "end.json"]
    workspace.remove()
    assert not workspace.path.exists()


def test_publish_moves_chunks_and_restores_a_lost_end_marker(tmp_path):
    scratch, shared = Workspace(tmp_path / "s").make(), Workspace(tmp_path / "shared").make()
    finished(scratch, 2, 10)
    finished(scratch, 3, 4)
    scratch.publish(shared, 10, 2, None)
    assert shared.finished(2) == {"frames": 10, "faces": 10} and shared.end() == 34
    assert scratch.finished(2) is None, "moved, not copied"


def test_remove_stale_keeps_recent_workspaces_and_other_directories(tmp_path):
    old, recent, other = (tmp_path / "ffb-old"), (tmp_path / "ffb-new"), (tmp_path / "keep-me")
    for directory in (old, recent, other):
        directory.mkdir()
    long_ago = time.time() - 8 * 86400
    os.utime(old, (long_ago, long_ago))
    os.utime(other, (long_ago, long_ago))
    remove_stale(tmp_path)
    assert not old.exists() and recent.exists() and other.exists()

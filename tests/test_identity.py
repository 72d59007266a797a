"""A target's identity is what was processed (issue 26, class 1): the journal records the content that was
read; a file renamed over a target (or rewritten) while it is processed never gets the old content's output
published as its own; every name of one file (symbolic and hard links) is one target and one journal row;
a watched file changed through another name is seen."""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import cv2
import pytest

from conftest import decode_all, face_frame, make_clip
from facefusion_batch.cli import main
from facefusion_batch.workflow import job
from facefusion_batch.workflow.identity import Pin
from facefusion_batch.workflow.lookahead import Lookahead

CHANGED = "changed while it was processed"


@pytest.fixture
def run(capsys):
    """`run(env, source, target)`: `ffb run` over `target` into env/out; (exit code, outcomes)."""
    def run_once(env: Path, source: Path, target: Path) -> tuple[int, list[dict]]:
        code = main(["run", "--engine", "offline", "--json", "-q", "-s", str(source), "-o", str(env / "out"),
                     "-t", str(target)])
        return code, json.loads(capsys.readouterr().out)["outcomes"]
    return run_once


def _rows(out: Path) -> list[tuple]:
    with sqlite3.connect(out / ".ffb" / "journal.sqlite") as db:
        return db.execute("SELECT target, status, attempts, size FROM targets ORDER BY target").fetchall()


def _after_frames(monkeypatch, change) -> None:
    """Call `change(target path)` once a video's frames are all processed, before it is joined and published
    (where an upload renaming a new file over the target lands in the worst case)."""
    real = job.encode_video

    def encoding(path, *args, **kwargs):
        encoded = real(path, *args, **kwargs)
        change(path)
        return encoded

    monkeypatch.setattr(job, "encode_video", encoding)


def test_a_file_renamed_over_the_target_while_it_is_processed(offline_env, source_image, run, monkeypatch):
    incoming = offline_env / "in"
    incoming.mkdir()
    target = make_clip(incoming / "clip.mp4", frames=12, audio=False)
    read_size = target.stat().st_size
    upload = make_clip(offline_env / "upload.mp4", frames=4, audio=False)
    _after_frames(monkeypatch, lambda path: os.replace(upload, path) if upload.exists() else None)
    code, outcomes = run(offline_env, source_image, incoming)
    assert code == 1 and outcomes[0]["status"] == "failed" and CHANGED in outcomes[0]["reason"]
    assert "another file was put in its place" in outcomes[0]["reason"] and "next run does it" in outcomes[0]["reason"]
    assert not (offline_env / "out" / "clip.mp4").exists(), "the 12-frame output is never published"
    rows = _rows(offline_env / "out")
    assert [(status, size) for _, status, _, size in rows] == [("interrupted", read_size)], "what was read"
    monkeypatch.undo()
    code, outcomes = run(offline_env, source_image, incoming)  # as cron runs it next
    assert code == 0 and outcomes[0]["status"] == "done"
    assert decode_all(offline_env / "out" / "clip.mp4").shape[0] == 4, "the output is the new file's"
    code, outcomes = run(offline_env, source_image, incoming)
    assert code == 0 and outcomes[0]["status"] == "skipped"


def test_an_image_rewritten_in_place_while_it_is_processed(offline_env, source_image, run, monkeypatch):
    """The same inode, new bytes (an editor saving over it): its hash differs, nothing is published."""
    target = offline_env / "still.png"
    cv2.imwrite(str(target), face_frame())
    real = job.read_picture

    def reading(path, *args, **kwargs):
        picture = real(path, *args, **kwargs)
        with open(path, "r+b") as handle:  # rewritten through the same inode
            handle.seek(0, os.SEEK_END)
            handle.write(b"\0" * 16)
        return picture

    monkeypatch.setattr(job, "read_picture", reading)
    code, outcomes = run(offline_env, source_image, target)
    assert code == 1 and CHANGED in outcomes[0]["reason"] and "it was written to" in outcomes[0]["reason"]
    assert not (offline_env / "out" / "still.png").exists()
    monkeypatch.undo()
    code, outcomes = run(offline_env, source_image, target)
    assert code == 0 and outcomes[0]["status"] == "done"


def test_a_pin_passes_what_is_unchanged_and_a_touched_file_with_the_same_bytes(tmp_path):
    path = tmp_path / "a.bin"
    path.write_bytes(b"same bytes")
    from facefusion_batch.models.store import sha256_of

    pin = Pin.now(path, sha256_of(path))
    pin.check()
    os.utime(path, ns=(1, 1))  # touched: new times, same content
    pin.check()
    Pin.now(tmp_path / "gone.bin").check()  # nothing there when read: reading failed, not this check
    path.unlink()
    pin.check()  # deleted after it was read: what was read is what was processed


def test_a_latest_link_beside_its_file_is_one_target_and_one_row(offline_env, source_image, run):
    incoming = offline_env / "in"
    incoming.mkdir()
    make_clip(incoming / "a.mp4", frames=3, audio=False)
    (incoming / "latest.mp4").symlink_to("a.mp4")
    for attempt in range(3):  # three cron runs
        code, outcomes = run(offline_env, source_image, incoming)
        statuses = {Path(o["target"]).name: o["status"] for o in outcomes}
        assert code == 0 and statuses == {"a.mp4": "done" if attempt == 0 else "skipped", "latest.mp4": "skipped"}
    alias = next(o for o in outcomes if o["target"].endswith("latest.mp4"))
    assert f"the same file as {incoming / 'a.mp4'} (a symbolic link to it)" in alias["reason"]
    assert [(Path(t).name, s, a) for t, s, a, _ in _rows(offline_env / "out")] == [("a.mp4", "done", 1)]
    assert sorted(p.name for p in (offline_env / "out").iterdir()) == [".ffb", "a.mp4"]


def test_hard_links_are_one_target_done_once(offline_env, source_image, run):
    incoming = offline_env / "in"
    incoming.mkdir()
    cv2.imwrite(str(incoming / "b.png"), face_frame())
    os.link(incoming / "b.png", incoming / "a-copy.png")
    for attempt in range(2):
        code, outcomes = run(offline_env, source_image, incoming)
        statuses = {Path(o["target"]).name: o["status"] for o in outcomes}
        assert code == 0 and statuses == {"a-copy.png": "done" if attempt == 0 else "skipped", "b.png": "skipped"}
    assert len(_rows(offline_env / "out")) == 1


def test_the_lookahead_does_not_lend_a_hash_of_a_file_since_replaced(tmp_path):
    """Prepared ahead, then another file of the same size and time renamed over it: a new inode."""
    clip = make_clip(tmp_path / "a.mp4", frames=3, audio=False)
    other = tmp_path / "b.mp4"
    other.write_bytes(bytes(reversed(clip.read_bytes())))
    stat = clip.stat()
    os.utime(other, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with Lookahead(tmp_path) as ahead:
        ahead.prepare(clip, hash_content=True)
        assert ahead.content_hash(clip) is not None
        os.replace(other, clip)
        assert clip.stat().st_size == stat.st_size and clip.stat().st_mtime_ns == stat.st_mtime_ns
        assert ahead.content_hash(clip) is None

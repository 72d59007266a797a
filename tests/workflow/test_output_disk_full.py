"""A full output disk (issue 26, class 2): the output directory, which holds the journal, fills up mid-run.
Every target it stops gets the same one-line reason, no target is started that can't finish, the journal
stays consistent and records none of them as failed, and once there is room the next run does them all."""
from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from conftest import face_frame
from facefusion_batch.cli import main
from facefusion_batch.workflow import job
from facefusion_batch.runner.journal import Journal

FULL = "output disk full"


def _images(directory: Path, names: str, size: int = 0) -> list[Path]:
    """Pictures with a face; `size` > 0 makes each a `size`x`size` noise canvas (a PNG of ~3 bytes a pixel)."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(5)
    paths = []
    for name in names:
        face = face_frame()
        picture = face
        if size:
            picture = rng.integers(0, 255, (size, size, 3), dtype=np.uint8)
            picture[100:100 + face.shape[0], 50:50 + face.shape[1]] = face
        path = directory / f"{name}.png"
        cv2.imwrite(str(path), picture)
        paths.append(path)
    return paths


def _run(env: Path, source: Path, targets: Path, out: Path, capsys) -> tuple[int, list[dict], str]:
    code = main(["run", "--engine", "offline", "--json", "-q", "-s", str(source), "-t", str(targets), "-o", str(out)])
    captured = capsys.readouterr()
    return code, json.loads(captured.out)["outcomes"], captured.err


def _journal(out: Path) -> dict[str, str]:
    with sqlite3.connect(out / ".ffb" / "journal.sqlite") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return {Path(t).name: s for t, s in db.execute("SELECT target, status FROM targets")}


def _started(monkeypatch) -> list[str]:
    """Names of the image targets whose frames were processed."""
    started: list[str] = []
    real = job.process_image

    def counting(processor, target, *args):
        started.append(target.path.name)
        return real(processor, target, *args)

    monkeypatch.setattr(job, "process_image", counting)
    return started


def _assert_stopped(outcomes: list[dict], done: int, err: str) -> None:
    assert [o["status"] for o in outcomes] == ["done"] * done + ["failed"] * (len(outcomes) - done), outcomes
    for outcome in outcomes[done:]:
        assert FULL in outcome["reason"] and "the next run does it" in outcome["reason"], outcome["reason"]
        assert "\n" not in outcome["reason"] and "unexpected" not in outcome["reason"]
    assert "unexpected" not in err and "Traceback" not in err


@pytest.fixture
def small_disk(tmp_path):
    """A 10 MB tmpfs mounted at tmp_path/small (root only; skipped where it can't be mounted)."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=10m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"can't mount a small tmpfs here ({made.stderr.decode(errors='replace').strip()[:100]})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_small_output_filesystem_that_fills_mid_run(offline_env, source_image, small_disk, capsys, monkeypatch):
    targets = offline_env / "in"
    _images(targets, "abcd", size=1100)  # ~3.6 MB each: two fit in 10 MB, the third can't be written
    started = _started(monkeypatch)
    code, outcomes, err = _run(offline_env, source_image, targets, small_disk / "out", capsys)
    assert code == 1
    _assert_stopped(outcomes, 2, err)
    assert "not started" in outcomes[3]["reason"] and started == ["a.png", "b.png", "c.png"]
    assert sorted(p.name for p in (small_disk / "out").iterdir()) == [".ffb", "a.png", "b.png"], "no partial left"
    assert "failed" not in _journal(small_disk / "out").values(), "a full disk is no failure of the target"
    subprocess.run(["mount", "-o", "remount,size=40m", str(small_disk)], check=True)  # space freed
    code, outcomes, _ = _run(offline_env, source_image, targets, small_disk / "out", capsys)
    assert code == 0 and [o["status"] for o in outcomes] == ["skipped", "skipped", "done", "done"]


def test_journal_full_mid_run(offline_env, source_image, capsys, monkeypatch):
    """SQLite's 'database or disk is full' on a journal write (fault injection: CI always covers it)."""
    targets = offline_env / "in"
    _images(targets, "abcde")
    real = Journal.__init__
    writes = []

    class Filling:
        """The journal's connection, whose writes fail once the disk is full."""

        def __init__(self, db):
            self._db = db

        def execute(self, sql, *args):
            if sql.startswith("INSERT"):
                writes.append(args)
                if len(writes) > 3:  # a: running, done; b: running; then the disk is full
                    raise sqlite3.OperationalError("database or disk is full")
            return self._db.execute(sql, *args)

        def close(self):
            self._db.close()

    def opening(self, path):
        real(self, path)
        self._db = Filling(self._db)

    monkeypatch.setattr(Journal, "__init__", opening)
    started = _started(monkeypatch)
    code, outcomes, err = _run(offline_env, source_image, targets, offline_env / "out", capsys)
    assert code == 1
    assert [o["status"] for o in outcomes][:2] == ["done", "done"], "b was under way: it is written"
    _assert_stopped(outcomes, 2, err)
    assert started == ["a.png", "b.png"], "nothing started once the journal could not be written"
    assert _journal(offline_env / "out") == {"a.png": "done", "b.png": "running"}
    monkeypatch.setattr(Journal, "__init__", real)
    code, outcomes, _ = _run(offline_env, source_image, targets, offline_env / "out", capsys)
    assert code == 0 and [o["status"] for o in outcomes] == ["skipped", "done", "done", "done", "done"]


@pytest.mark.parametrize("failure", ["enospc", "edquot"])
def test_an_output_write_that_fails_for_space(offline_env, source_image, capsys, monkeypatch, failure):
    """The write of an output fails with ENOSPC or EDQUOT (no file name: a plain write to a descriptor)."""
    from facefusion_batch import media

    targets = offline_env / "in"
    _images(targets, "abc")
    calls = []
    code_of = {"enospc": errno.ENOSPC, "edquot": errno.EDQUOT}[failure]

    class Filling:
        """`os` as media sees it: the second output's flush to disk finds it full."""

        def __getattr__(self, name):
            return getattr(os, name)

        @staticmethod
        def fsync(descriptor):
            calls.append(descriptor)
            if len(calls) == 2:
                raise OSError(code_of, os.strerror(code_of))
            return os.fsync(descriptor)

    monkeypatch.setattr(media, "os", Filling())
    code, outcomes, err = _run(offline_env, source_image, targets, offline_env / "out", capsys)
    assert code == 1
    _assert_stopped(outcomes, 1, err)
    assert "temp disk" not in outcomes[1]["reason"] and f"({offline_env / 'out'})" in outcomes[1]["reason"]
    assert _journal(offline_env / "out") == {"a.png": "done", "b.png": "interrupted"}
    monkeypatch.setattr(media, "os", os)
    code, outcomes, _ = _run(offline_env, source_image, targets, offline_env / "out", capsys)
    assert code == 0 and [o["status"] for o in outcomes] == ["skipped", "done", "done"]


def test_a_video_refused_for_output_space_is_not_journaled_failed(offline_env, source_image, capsys, monkeypatch):
    """Too little room for a video's output before any work: the same words, and the next run does it."""
    import shutil

    from conftest import make_clip
    from facefusion_batch.workflow import video_plan

    (offline_env / "in").mkdir()
    make_clip(offline_env / "in" / "a.mp4", frames=3, audio=False)
    real = shutil.disk_usage
    monkeypatch.setattr(video_plan.shutil, "disk_usage", lambda path: real(path)._replace(free=1000)
                        if Path(path) == offline_env / "out" else real(path))
    code, outcomes, err = _run(offline_env, source_image, offline_env / "in", offline_env / "out", capsys)
    assert code == 1 and FULL in outcomes[0]["reason"] and "has 1 kB" in outcomes[0]["reason"]
    assert _journal(offline_env / "out") == {"a.mp4": "interrupted"}
    monkeypatch.setattr(video_plan.shutil, "disk_usage", real)
    code, outcomes, _ = _run(offline_env, source_image, offline_env / "in", offline_env / "out", capsys)
    assert code == 0 and outcomes[0]["status"] == "done"

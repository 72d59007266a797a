"""Every target that fails is journaled, so a cron run does not fail on it again until it changes; and a
changed file is new work, with or without --retry-failed."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import cv2

from conftest import face_frame, make_clip
from facefusion_batch.cli import main
from facefusion_batch.runner import batch as batch_module
from facefusion_batch.workflow import lookahead as lookahead_module
from facefusion_batch.workflow import processor as processor_module
from facefusion_batch.runner.journal import Journal


def run(args: list[str], capsys) -> tuple[int, dict[str, dict]]:
    code = main(["run", "--engine", "neural", "--json", "-q", *args])
    summary = json.loads(capsys.readouterr().out)
    return code, {Path(o["target"]).name: o for o in summary["outcomes"]}


def _unreadable(name: str, monkeypatch) -> set[str]:
    """Reading `name` is refused while it is in the returned set, as for a file without read permission
    (the tests run as root)."""
    refused = {name}
    for module in (batch_module, lookahead_module):
        real = module.sha256_of

        def refuse(path, *args, _real=real, **kwargs):
            if Path(path).name in refused:
                raise PermissionError(13, "Permission denied", str(path))
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(module, "sha256_of", refuse)
    return refused


def test_an_unreadable_file_is_journaled_and_looked_at_again_once_it_changes(env, source_image, capsys,
                                                                              monkeypatch):
    clips = env / "clips"
    clips.mkdir()
    locked = make_clip(clips / "locked.mp4", frames=4)
    cv2.imwrite(str(clips / "fine.png"), face_frame())
    args = ["-s", str(source_image), "-t", str(clips), "-o", str(env / "out")]
    refused = _unreadable("locked.mp4", monkeypatch)
    code, first = run(args, capsys)
    assert code == 1 and first["locked.mp4"]["status"] == "failed"
    assert "Permission denied" in first["locked.mp4"]["reason"] and first["fine.png"]["status"] == "done"
    journal = Journal(env / "out" / ".ffb" / "journal.sqlite")
    assert journal.get(locked).status == "failed"
    journal.close()
    code, second = run(args, capsys)
    assert code == 0, "a cron run does not fail again on an unchanged unreadable file"
    assert second["locked.mp4"]["status"] == "skipped" and "Permission denied" in second["locked.mp4"]["reason"]
    refused.clear()
    os.chmod(locked, 0o644)  # the fix: permissions only (its ctime moves, not its size or mtime)
    code, third = run(args, capsys)
    assert code == 0 and third["locked.mp4"]["status"] == "done" and third["fine.png"]["status"] == "skipped"


def test_retry_failed_runs_a_failure_that_was_fixed_and_new_files(env, source_image, capsys):
    clips = env / "clips"
    clips.mkdir()
    make_clip(clips / "good.mp4", frames=4)
    (clips / "upload.mp4").write_bytes(b"half an upload")
    args = ["-s", str(source_image), "-t", str(clips), "-o", str(env / "out")]
    code, first = run(args, capsys)
    assert code == 1 and first["upload.mp4"]["status"] == "failed"
    time.sleep(0.01)
    make_clip(clips / "upload.mp4", frames=4)  # the upload completed: new content
    make_clip(clips / "new.mp4", frames=4)
    code, retry = run(args + ["--retry-failed"], capsys)
    assert code == 0
    assert {name: o["status"] for name, o in retry.items()} == {"good.mp4": "skipped", "upload.mp4": "done",
                                                                "new.mp4": "done"}


def test_a_target_deleted_while_it_is_processed_is_still_journaled(env, source_image, capsys, monkeypatch):
    clips = env / "clips"
    clips.mkdir()
    doomed = make_clip(clips / "doomed.mp4", frames=4)
    make_clip(clips / "z.mp4", frames=4)
    real = processor_module.FrameProcessor.swap_faces

    def swap(self, frame, faces):
        doomed.unlink(missing_ok=True)
        return real(self, frame, faces)

    monkeypatch.setattr(processor_module.FrameProcessor, "swap_faces", swap)
    code, outcomes = run(["-s", str(source_image), "-t", str(clips), "-o", str(env / "out")], capsys)
    assert set(outcomes) == {"doomed.mp4", "z.mp4"} and code in (0, 1)
    journal = Journal(env / "out" / ".ffb" / "journal.sqlite")
    assert journal.get(doomed).status == outcomes["doomed.mp4"]["status"]
    journal.close()


def test_a_journal_written_by_an_older_ffb_is_upgraded(tmp_path):
    import sqlite3

    path = tmp_path / "journal.sqlite"
    target = tmp_path / "a.mp4"
    target.write_bytes(b"a")
    old = sqlite3.connect(str(path))
    old.execute("CREATE TABLE targets (target TEXT PRIMARY KEY, output TEXT NOT NULL, size INTEGER NOT NULL, "
                "mtime_ns INTEGER NOT NULL, content_hash TEXT NOT NULL, settings_key TEXT NOT NULL, status TEXT "
                "NOT NULL, reason TEXT NOT NULL DEFAULT '', attempts INTEGER NOT NULL DEFAULT 0, frames INTEGER "
                "NOT NULL DEFAULT 0, seconds REAL NOT NULL DEFAULT 0, output_size INTEGER, output_mtime_ns "
                "INTEGER, updated REAL NOT NULL)")
    stat = target.stat()
    old.execute("INSERT INTO targets VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (str(target.resolve()), "out/a.mp4", stat.st_size, stat.st_mtime_ns, "h1", "k", "done", "", 1, 4,
                 1.0, None, None, 0.0))
    old.commit()
    old.close()
    journal = Journal(path)
    assert journal.cached_hash(target) == "h1", "an old row (no ctime) still counts while size and mtime hold"
    journal.record(target, tmp_path / "out" / "a.mp4", "h1", "k", "failed", "x")
    assert journal.get(target).ctime_ns == target.stat().st_ctime_ns and journal.get(target).attempts == 2
    journal.close()

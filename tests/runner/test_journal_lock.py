import os
import subprocess
import sys
import time

import pytest

from facefusion_batch.runner.journal import Journal
from facefusion_batch.workflow.processor import settings_key
from facefusion_batch.runner.lock import LockedError, RunLock


def test_journal_records_and_recognises_current_work(tmp_path):
    target, output = tmp_path / "a.mp4", tmp_path / "out" / "a.mp4"
    target.write_bytes(b"video")
    output.parent.mkdir()
    output.write_bytes(b"swapped")
    journal = Journal(tmp_path / "state" / "journal.sqlite")
    content = journal.content_hash(target)
    key = settings_key({"engine": "offline"})
    journal.record(target, output, content, key, "done", frames=10, seconds=1.5)
    assert journal.is_current(target, output, content, key).frames == 10
    assert journal.is_current(target, output, content, settings_key({"engine": "neural"})) is None
    output.write_bytes(b"tampered")
    assert journal.is_current(target, output, content, key) is None, "a changed output is redone"
    output.unlink()
    assert journal.is_current(target, output, content, key) is None, "a missing output is redone"


def test_content_hash_is_reused_until_the_file_changes(tmp_path, monkeypatch):
    from facefusion_batch.runner import journal as module

    target = tmp_path / "a.mp4"
    target.write_bytes(b"one")
    journal = Journal(tmp_path / "j.sqlite")
    first = journal.content_hash(target)
    journal.record(target, tmp_path / "o.mp4", first, "k", "failed", "bad")
    monkeypatch.setattr(module, "sha256_of", lambda path: pytest.fail("hashed again"))
    assert journal.content_hash(target) == first
    monkeypatch.undo()
    time.sleep(0.01)
    target.write_bytes(b"two")
    assert journal.content_hash(target) != first


def test_attempts_count_per_content(tmp_path):
    target = tmp_path / "a.mp4"
    target.write_bytes(b"x")
    journal = Journal(tmp_path / "j.sqlite")
    for _ in range(2):
        journal.record(target, tmp_path / "o.mp4", "h1", "k", "failed", "bad")
    assert journal.get(target).attempts == 2
    journal.record(target, tmp_path / "o.mp4", "h2", "k", "failed", "bad")
    assert journal.get(target).attempts == 1


def test_lock_excludes_a_second_holder_and_names_the_first(tmp_path):
    path = tmp_path / "out" / ".ffb" / "lock"
    first = RunLock(path)
    first.acquire()
    with pytest.raises(LockedError, match=f"pid {os.getpid()}") as error:
        RunLock(path).acquire()
    assert error.value.exit_code == 6 and "--wait" in str(error.value)
    first.release()
    second = RunLock(path)
    second.acquire()
    second.release()


def test_lock_of_a_killed_process_is_taken_over(tmp_path):
    path = tmp_path / "lock"
    code = ("import sys, time\nsys.path.insert(0, %r)\nfrom facefusion_batch.runner.lock import RunLock\n"
            "lock = RunLock(__import__('pathlib').Path(%r))\nlock.acquire()\nprint('locked', flush=True)\n"
            "time.sleep(600)\n"
            % (os.getcwd(), str(path)))
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(LockedError):
        RunLock(path).acquire()
    holder.kill()
    holder.wait()
    lock = RunLock(path)
    lock.acquire()
    lock.release()


def test_wait_queues_behind_the_holder(tmp_path):
    path = tmp_path / "lock"
    first = RunLock(path)
    first.acquire()
    messages = []

    def waiting(message: str) -> None:  # the holder ends once the second is seen waiting: no race with a timer
        messages.append(message)
        first.release()

    second = RunLock(path)
    second.acquire(wait=True, on_wait=waiting, poll=0.05)
    second.release()
    assert messages and "waiting for the other ffb run" in messages[0]


def test_the_record_of_an_output_is_read_through_the_journal_without_changing_it(tmp_path):
    """`ffb verify`'s lookup: the nearest enclosing output tree's journal, opened read-only."""
    from facefusion_batch.runner.journal import output_record

    target, output = tmp_path / "a.mp4", tmp_path / "out" / "sub" / "a.mp4"
    target.write_bytes(b"video")
    output.parent.mkdir(parents=True)
    output.write_bytes(b"swapped")
    journal = Journal(tmp_path / "out" / ".ffb" / "journal.sqlite")
    journal.record(target, output, journal.content_hash(target), "k", "done", frames=3, seconds=0.5)
    journal.close()
    database = tmp_path / "out" / ".ffb" / "journal.sqlite"
    before = (database.stat().st_mtime_ns, database.read_bytes())
    record = output_record(output)
    assert record is not None and record["status"] == "done" and record["frames"] == 3
    assert record["output_unchanged"] and record["target"] == str(target.resolve())
    assert (database.stat().st_mtime_ns, database.read_bytes()) == before
    stray = tmp_path / "elsewhere" / "b.mp4"
    stray.parent.mkdir()
    stray.write_bytes(b"x")
    assert output_record(stray) is None and not (tmp_path / "elsewhere" / ".ffb").exists()

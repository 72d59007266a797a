"""Targets that are no regular files (a FIFO, a socket, a link to /dev/zero or /dev/null, a directory named
like a video) and files that change while they are read: each is refused at once with one line naming it,
is journaled, and the batch goes on. Nothing may hang: a hung run keeps the lock and blocks every later
cron run."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import cv2
import pytest

from conftest import face_frame, make_clip
from facefusion_batch.cli import main
from facefusion_batch.errors import TargetError
from facefusion_batch.models import store
from facefusion_batch.models.store import sha256_of
from facefusion_batch.targets import not_regular


@pytest.fixture
def specials(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    os.mkfifo(folder / "fifo.mp4")
    os.symlink("/dev/zero", folder / "zero.mp4")
    os.symlink("/dev/null", folder / "null.png")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "socket.mov"))
    (folder / "dir.mp4").mkdir()  # a directory is walked, not read: it yields nothing
    yield folder
    server.close()


EXPECTED = {"fifo.mp4": "FIFO", "zero.mp4": "character device", "null.png": "character device",
            "socket.mov": "socket"}


def test_not_regular_names_each_kind(specials):
    for name, kind in EXPECTED.items():
        reason = not_regular(specials / name)
        assert reason and kind in reason and name in reason and "\n" not in reason
    assert "a link to /dev/zero" in not_regular(specials / "zero.mp4")
    assert not_regular(specials / "dir.mp4") and "directory" in not_regular(specials / "dir.mp4")
    good = specials / "good.mp4"
    good.write_bytes(b"x")
    assert not_regular(good) is None and not_regular(specials / "missing.mp4") is None


def test_hashing_refuses_what_would_never_end(specials):
    for name, kind in EXPECTED.items():
        with pytest.raises(TargetError, match=kind):
            sha256_of(specials / name)  # returns at once: a FIFO is opened without waiting for a writer


def test_hashing_refuses_a_file_that_grows_or_shrinks_while_read(tmp_path, monkeypatch):
    path = tmp_path / "growing.mp4"
    path.write_bytes(b"a" * 5000)
    real_fstat = os.fstat

    def size_at_open(delta):
        def fstat(fd):
            info = real_fstat(fd)
            return os.stat_result((*info[:6], info.st_size + delta, *info[7:]))
        return fstat

    monkeypatch.setattr(store.os, "fstat", size_at_open(-1000))  # 1000 bytes were appended since opening
    with pytest.raises(TargetError, match="grew while it was read"):
        sha256_of(path)
    monkeypatch.setattr(store.os, "fstat", size_at_open(+1000))
    with pytest.raises(TargetError, match="shrank while it was read"):
        sha256_of(path)
    monkeypatch.setattr(store.os, "fstat", real_fstat)
    assert sha256_of(path) == __import__("hashlib").sha256(b"a" * 5000).hexdigest()


def test_hashing_gives_up_on_a_stalled_read(tmp_path, monkeypatch):
    path = tmp_path / "slow.mp4"
    path.write_bytes(b"a" * (3 << 20))
    clock = iter(range(0, 10_000, 50))  # every look at the clock: 50 s later
    monkeypatch.setattr(store.time, "monotonic", lambda: next(clock))
    with pytest.raises(TargetError, match="took over 60 s"):
        sha256_of(path)


def test_a_batch_refuses_special_files_at_once_and_goes_on(env, source_image, specials, capsys):
    make_clip(specials / "good.mp4", frames=4)
    cv2.imwrite(str(specials / "good.png"), face_frame())
    args = ["run", "--engine", "neural", "--json", "-q", "-s", str(source_image), "-t", str(specials),
            "-o", str(env / "out")]
    started = time.monotonic()
    code = main(args)
    summary = json.loads(capsys.readouterr().out)
    outcomes = {os.path.basename(o["target"]): o for o in summary["outcomes"]}
    assert code == 1 and time.monotonic() - started < 120
    assert {name: o["status"] for name, o in outcomes.items()} == {
        "good.mp4": "done", "good.png": "done", **dict.fromkeys(EXPECTED, "failed")}
    for name, kind in EXPECTED.items():
        assert kind in outcomes[name]["reason"] and "not a regular file" in outcomes[name]["reason"]
    assert not [p for p in (env / "out").iterdir() if p.name not in (".ffb", "good.mp4", "good.png")]
    # The next cron run finds them journaled: skipped until they change, not failed for ever.
    assert main(args) == 0
    again = json.loads(capsys.readouterr().out)
    assert {o["status"] for o in again["outcomes"]} == {"skipped"}
    assert "not a regular file" in {os.path.basename(o["target"]): o for o in again["outcomes"]}["fifo.mp4"]["reason"]


def test_a_fifo_given_alone_as_the_first_target_does_not_hang(env, source_image, tmp_path):
    """The first video is prepared while the models load: that must not open the FIFO either."""
    fifo = tmp_path / "alone.mp4"
    os.mkfifo(fifo)
    process = subprocess.run([sys.executable, "-m", "facefusion_batch", "run", "--engine", "neural", "-q",
                              "--json", "-s", str(source_image), "-t", str(fifo), "-o", str(env / "out")],
                             capture_output=True, text=True, timeout=120)
    assert process.returncode == 1, process.stderr
    assert "FIFO" in json.loads(process.stdout)["outcomes"][0]["reason"]

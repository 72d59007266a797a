"""The folder feed in-process: which files it hands out, when, and how often (real events and polling)."""
from __future__ import annotations

import os
import shutil
import signal
import threading
import time
import weakref
from pathlib import Path

import pytest

from facefusion_batch.executors import watch_feed
from facefusion_batch.executors.watch_feed import FolderFeed
from facefusion_batch.runner.metrics import RunMetrics

SETTLE = 0.3
DEADLINE = 60.0


def collect(feed: FolderFeed, wanted: int, deadline: float = DEADLINE) -> list[Path]:
    """What `ready()` hands out until `wanted` files came (ready blocks: a timer wakes it to check the deadline)."""
    found: list[Path] = []
    end = time.monotonic() + deadline
    while len(found) < wanted:
        assert time.monotonic() < end, f"only {found} within {deadline:g} s"
        timer = threading.Timer(1.0, feed.wake)
        timer.start()
        try:
            found += feed.ready()
        finally:
            timer.cancel()
        feed.woken = False
    return found


def quiet(feed: FolderFeed, seconds: float) -> list[Path]:
    """What the feed hands out within `seconds` (expected: nothing)."""
    timer = threading.Timer(seconds, feed.wake)
    timer.start()
    found: list[Path] = []
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            found += feed.ready()
            if feed.woken:
                break
    finally:
        timer.cancel()
        feed.woken = False
    return found


@pytest.fixture(params=[False, True], ids=["events", "poll"])
def poll(request) -> bool:
    return request.param


@pytest.fixture
def quick_checks(monkeypatch) -> None:
    """The feed looks at its directories and handed-out files every 0.5 s instead of every 5 s: tests that wait
    for such a look take a second, not ten."""
    monkeypatch.setattr(watch_feed, "CHECK_EVERY", 0.5)


def test_files_there_at_start_and_new_ones_are_handed_out_once(tmp_path, poll):
    (tmp_path / "a.mp4").write_bytes(b"a")
    (tmp_path / "notes.txt").write_text("not media")
    (tmp_path / ".hidden.mp4").write_bytes(b"h")
    with FolderFeed([tmp_path], SETTLE, poll) as feed:
        assert collect(feed, 1) == [tmp_path / "a.mp4"]
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "b.jpg").write_bytes(b"b")
        assert collect(feed, 1) == [tmp_path / "sub" / "b.jpg"]
        assert (tmp_path / "a.mp4").read_bytes() == b"a"  # read (opened, closed): no change
        feed.note(tmp_path / "a.mp4")  # an event for a file that did not change
        assert quiet(feed, 3 * SETTLE + (1.5 if poll else 0)) == []
        if not poll:  # a chmod raises an event (polling compares sizes and times only)
            os.chmod(tmp_path / "a.mp4", 0o600)
            assert collect(feed, 1) == [tmp_path / "a.mp4"], "a chmod counts: the journal retries a file made readable"
        (tmp_path / "a.mp4").write_bytes(b"changed")
        assert collect(feed, 1) == [tmp_path / "a.mp4"], "a changed file comes again"


def test_a_directory_moved_in_brings_its_files(tmp_path, poll):
    watched, outside = tmp_path / "in", tmp_path / "elsewhere"
    watched.mkdir()
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "x.mov").write_bytes(b"x")
    (outside / "y.png").write_bytes(b"y")
    with FolderFeed([watched], SETTLE, poll) as feed:
        shutil.move(str(outside), str(watched / "batch"))
        assert sorted(collect(feed, 2)) == [watched / "batch" / "deep" / "x.mov", watched / "batch" / "y.png"]


def test_a_growing_file_is_not_handed_out_until_it_stops(tmp_path):
    with FolderFeed([tmp_path], 1.0) as feed:
        path = tmp_path / "upload.mp4"
        stop = threading.Event()

        def upload() -> None:
            with open(path, "ab") as handle:
                while not stop.is_set():
                    handle.write(b"x" * 100)
                    handle.flush()
                    time.sleep(0.1)

        writer = threading.Thread(target=upload)
        writer.start()
        try:
            assert quiet(feed, 3.0) == [], "taken while still growing"
            assert feed.waiting() == 1, "a settling file counts as waiting"
        finally:
            stop.set()
            writer.join()
        assert collect(feed, 1) == [path]
        assert feed.waiting() == 0


def test_a_file_gone_before_it_settled_is_forgotten(tmp_path):
    with FolderFeed([tmp_path], SETTLE) as feed:
        (tmp_path / "a.mp4").write_bytes(b"a")
        os.replace(tmp_path / "a.mp4", tmp_path / "a.txt")
        (tmp_path / "b.mp4").write_bytes(b"b")
        assert collect(feed, 1) == [tmp_path / "b.mp4"]
        assert feed.waiting() == 0


def test_close_stops_the_event_thread_and_is_idempotent(tmp_path, poll):
    before = set(threading.enumerate())
    feed = FolderFeed([tmp_path], SETTLE, poll)
    feed.start()
    assert set(threading.enumerate()) - before, "an observer thread runs"
    feed.close()
    feed.close()
    assert not {t for t in set(threading.enumerate()) - before if t.is_alive()}


def test_the_backlog_gauge_counts_files_still_settling():
    metrics = RunMetrics()
    waiting = [3]
    metrics.waiting = lambda: waiting[0]
    metrics.expect(2)
    metrics.start("a")

    def backlog() -> float:
        line = next(line for line in metrics.exposition().decode().splitlines()
                    if line.startswith("ffb_backlog_targets "))
        return float(line.split()[1])

    assert backlog() == 1 + 3
    waiting[0] = 0
    metrics.finish("done", "a")
    assert backlog() == 1


def test_a_watched_directory_removed_and_made_again_is_watched_again(tmp_path, poll, quick_checks):
    watched = tmp_path / "in"
    watched.mkdir()
    said: list[str] = []
    with FolderFeed([watched], SETTLE, poll) as feed:
        feed.say = said.append
        (watched / "a.mp4").write_bytes(b"a")
        assert collect(feed, 1) == [watched / "a.mp4"]
        shutil.rmtree(watched)  # e.g. a share unmounted
        end = time.monotonic() + DEADLINE
        while not any("gone" in line for line in said):
            assert time.monotonic() < end, "the directory's loss was never noticed"
            assert quiet(feed, 1.0) == []
        watched.mkdir()
        (watched / "b.mp4").write_bytes(b"b")
        assert collect(feed, 1) == [watched / "b.mp4"]
        (watched / "c.mp4").write_bytes(b"c")
        assert collect(feed, 1) == [watched / "c.mp4"], "events flow from the new directory"
    assert any("watching it again" in line for line in said)


def test_a_watched_link_to_a_directory_names_files_below_the_link(tmp_path, poll):
    real, link = tmp_path / "real", tmp_path / "link"
    real.mkdir()
    link.symlink_to(real)
    (real / "there.mp4").write_bytes(b"t")
    with FolderFeed([link], SETTLE, poll) as feed:
        assert collect(feed, 1) == [link / "there.mp4"]
        (real / "new.mp4").write_bytes(b"n")
        assert collect(feed, 1) == [link / "new.mp4"], "events below where the link leads"


class _Collected:
    pass


def _signal_when_collected() -> list[object]:
    """A holder of an object with a weak reference whose callback sends SIGTERM to this process: the
    KeyboardInterrupt the handler raises there is swallowed by Python ("Exception ignored"), as Ray's actor
    handles do with one that lands in theirs (one inside a `__del__` is raised after it: test_startup_signals)."""

    def collected(_: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.1)  # the handler runs here, inside the callback

    held = _Collected()
    return [held, weakref.ref(held, collected)]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed one, on purpose
def test_a_signal_whose_keyboardinterrupt_was_swallowed_still_ends_a_waiting_feed(tmp_path):
    from facefusion_batch import interrupts

    with interrupts.handled() as signals, FolderFeed([tmp_path], SETTLE, True) as feed:
        feed.lost_signal = signals.raise_lost
        feed.start()
        holder = _signal_when_collected()
        del holder[0]  # the callback runs now, and swallows the KeyboardInterrupt
        assert signals.signalled and signals.signum == signal.SIGTERM
        timer = threading.Timer(10.0, feed.wake)  # without the fix `ready` waits on: end it to fail
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                feed.ready()
        finally:
            timer.cancel()
        with signals.held():
            signals.raise_lost()  # where no KeyboardInterrupt may land, it raises nothing


def test_a_watched_file_changed_through_a_hard_link_elsewhere_is_seen(tmp_path, quick_checks):
    watched, elsewhere = tmp_path / "watched", tmp_path / "elsewhere"
    watched.mkdir()
    elsewhere.mkdir()
    (watched / "a.mp4").write_bytes(b"first")
    os.link(watched / "a.mp4", elsewhere / "a.mp4")
    with FolderFeed([watched], settle=SETTLE) as feed:
        assert collect(feed, 1) == [watched / "a.mp4"]
        with open(elsewhere / "a.mp4", "ab") as handle:  # no event in the watched folder
            handle.write(b" and more")
        assert collect(feed, 1) == [watched / "a.mp4"], "seen at the feed's next look (every few seconds)"

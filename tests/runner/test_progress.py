"""Progress: the batch's bar and the few running targets live, each ended target printed above them, every
name literally, nothing lost at any terminal height (issue 11.6); plain lines off a terminal."""
from __future__ import annotations

import io

import pytest
from rich.console import Console

from facefusion_batch.runner.progress import BatchCount, PlainReporter, RichReporter, clock


def test_plain_reporter_names_each_finished_target():
    log = io.StringIO()
    reporter = PlainReporter(log)
    reporter.start("a.mp4", 10)
    reporter.start("b.mp4", 5)  # a is still being finished
    reporter.finish("done", "a.mp4")
    reporter.finish("failed")
    reporter.finish("skipped", "c.mp4")  # counted, not listed
    assert log.getvalue().splitlines() == ["a.mp4: 10 frames", "b.mp4: 5 frames", "a.mp4: done", "b.mp4: failed"]


def test_plain_reporter_adds_the_batch_to_its_periodic_lines():
    log = io.StringIO()
    reporter = PlainReporter(log, every=0.0)
    reporter.expect(4)
    reporter.finish("skipped", "old.mp4")
    reporter.start("a.mp4", 10)
    reporter.advance(5)
    lines = log.getvalue().splitlines()
    assert lines[-2].startswith("a.mp4: 5/10 frames, ")
    assert lines[-1].startswith("batch: 1/4 targets, 1 skipped, ETA ") and lines[-1].endswith(" fps, 5 frames")


def terminal(height: int, width: int = 80) -> Console:
    return Console(record=True, width=width, height=height, force_terminal=True, file=io.StringIO())


NAMES = [f"clips/batch_{i:02d}/video [{'bold' if i % 2 else '/x'}] {i:02d}.mp4" for i in range(33)]


def run_batch(reporter: RichReporter, failing: set[int]) -> None:
    reporter.expect(len(NAMES))
    for i, name in enumerate(NAMES):
        reporter.start(name, 40)
        reporter.advance(12 if i in failing else 40)
        reporter.finish("failed" if i in failing else "done", name)
        if i in failing:
            reporter.message(f"{name}: decoding failed at frame 12")


@pytest.mark.parametrize("height", [20, 5, 2])
def test_33_targets_in_a_small_terminal_lose_nothing(height):
    console = terminal(height)
    reporter = RichReporter(console, refresh_per_second=1)
    try:
        run_batch(reporter, failing={3, 30})
    finally:
        reporter.close()
    text = console.export_text()  # the live area's redraws are in it too, as a terminal shows them in turn
    for i, name in enumerate(NAMES):
        status = "failed (12/40 frames" if i in (3, 30) else "done (40 frames"
        assert f"] {name}: {status}" in text, name  # literally: [bold] and [/x] kept
    assert text.count(f"{NAMES[3]}: decoding failed at frame 12") == 1
    assert f"[33/33] {NAMES[32]}: done" in text
    last = text.splitlines()[-1]
    assert last.startswith("batch: 33/33 targets, 2 failed, ") and "1264 frames in " in last


def render(reporter: RichReporter, console: Console) -> list[str]:
    console.print(reporter._render())
    return console.export_text().splitlines()


@pytest.mark.parametrize("height", [20, 6, 3])
def test_the_live_area_is_the_batch_and_the_latest_running_targets_within_the_terminal(height):
    reporter = RichReporter(terminal(height), refresh_per_second=1)
    try:
        reporter.expect(33)
        for name in NAMES[:10]:
            reporter.finish("done", name)
        for name in NAMES[10:15]:  # more running at once than are shown
            reporter.start(name, 40)
        reporter.advance(20)
        lines = render(reporter, terminal(height))
    finally:
        reporter.close()
    assert len(lines) <= max(1, height - 1)
    assert "10/33 targets, ETA" in lines[0]
    if height >= 6:
        assert len(lines) == 5 and "and 2 more running" in lines[-1]
        assert "video [bold] 13.mp4" in lines[2] and "20/40 frames" in lines[3]  # the current one advanced
        # the column is padded to its width; how much depends on the fps figure, i.e. on the machine's speed
        assert lines[3].rstrip().endswith("video [/x] 14.mp4")
    assert not any("…" == line.strip() for line in lines)


def test_long_names_keep_their_end_in_the_live_area():
    reporter = RichReporter(terminal(20, width=60), refresh_per_second=1)
    try:
        reporter.start("/srv/" + "very-long-directory/" * 5 + "clip_07.mp4", 10)
        lines = render(reporter, terminal(20, width=60))
    finally:
        reporter.close()
    assert "…" in lines[1] and "clip_07.mp4" in lines[1] and all(len(line) <= 60 for line in lines)


def test_a_target_ended_before_it_started_is_still_printed_and_counted():
    console = terminal(20)
    reporter = RichReporter(console, refresh_per_second=1)
    reporter.expect(2)
    reporter.finish("failed", "unreadable [x].mp4")
    reporter.finish("skipped", "old.mp4")
    reporter.close()
    text = console.export_text()
    assert "[1/2] unreadable [x].mp4: failed" in text and "old.mp4" not in text


def test_time_left_comes_from_targets_that_did_work():
    count = BatchCount(total=10, ended={"skipped": 4, "done": 2}, frames=100, began=0.0)
    assert count.seconds_left(now=60.0, running=0.0) == pytest.approx(60.0 * 4 / 2)
    assert count.seconds_left(now=60.0, running=1.0) == pytest.approx(60.0 * 3 / 3)
    assert BatchCount(total=10, began=0.0).seconds_left(5.0, 0.0) is None
    assert clock(3725) == "1:02:05"


def test_plain_reporter_gives_one_line_per_event_whatever_the_name_holds():
    log = io.StringIO()
    reporter = PlainReporter(log)
    reporter.start("new\nline.mp4", 3)
    reporter.finish("failed", "new\nline.mp4")
    reporter.message("new\r\nline.mp4: not a video\x0bat all")
    assert log.getvalue().splitlines() == ["new line.mp4: 3 frames", "new line.mp4: failed",
                                           "new line.mp4: not a video at all"]


def test_plain_reporters_expected_targets_add_up_as_a_watch_tells_them():
    log = io.StringIO()
    reporter = PlainReporter(log)
    reporter.expect(2)
    reporter.expect(3)  # the next lot of a watch
    assert reporter._batch.total == 5

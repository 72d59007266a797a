"""Reporters name the target that finished, which need not be the one started last."""
from __future__ import annotations

import io

from facefusion_batch.pipeline.progress import PlainReporter, RichReporter


def test_plain_reporter_names_each_finished_target():
    log = io.StringIO()
    reporter = PlainReporter(log)
    reporter.start("a.mp4", 10)
    reporter.start("b.mp4", 5)  # a is still being finished
    reporter.finish("done", "a.mp4")
    reporter.finish("failed")
    assert log.getvalue().splitlines() == ["a.mp4: 10 frames", "b.mp4: 5 frames", "a.mp4: done", "b.mp4: failed"]


def test_rich_reporter_marks_the_named_bar_and_keeps_advancing_the_current_one():
    reporter = RichReporter()
    try:
        reporter.start("a.mp4", 10)
        reporter.advance(10)
        reporter.start("b.mp4", 5)
        reporter.finish("done", "a.mp4")
        reporter.advance(2)
        reporter.finish("no face", "never-started.mp4")  # failed before its bar: nothing to mark
        tasks = {t.description: t for t in reporter._progress.tasks}
        assert set(tasks) == {"a.mp4 [done]", "b.mp4"} and tasks["b.mp4"].completed == 2
        reporter.finish("failed")
        assert [t.description for t in reporter._progress.tasks] == ["a.mp4 [done]", "b.mp4 [failed]"]
    finally:
        reporter.close()

"""The run driver over a fake executor: claims, journal records, progress, summary and interruption are the
driver's alone, whatever the executor."""
from __future__ import annotations

from pathlib import Path

import pytest

from facefusion_batch.runner.driver import run_batch
from facefusion_batch.executors.base import EngineInfo, Stats, Work
from facefusion_batch.workflow.outcome import Outcome
from facefusion_batch.runner.journal import Journal
from facefusion_batch.settings import Settings


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def message(self, text: str) -> None:
        self.events.append(("message", text))

    def expect(self, targets: int) -> None:
        self.events.append(("expect", targets))

    def start(self, name: str, total: int) -> None:
        self.events.append(("start", Path(name).name, total))

    def advance(self, frames: int) -> None:
        if frames:
            self.events.append(("advance", frames))

    def finish(self, status: str, name: str | None = None) -> None:
        self.events.append(("finish", status, Path(name).name if name else None))

    def close(self) -> None:
        pass


class FakeExecutor:
    """Turns every claim into an outcome at once: `bad*` fails, `noface*` has no face, the rest is done.
    `stop_after` raises KeyboardInterrupt once that many claims were pulled; `concurrent_targets` finishes
    them in reverse order."""

    def __init__(self, concurrent: bool = False, stop_after: int | None = None, abandon_after: int | None = None):
        self.concurrent_targets = concurrent
        self.stop_after, self.abandon_after = stop_after, abandon_after
        self.pulled: list[str] = []
        self.closed = False

    def start(self, targets, work: Work) -> EngineInfo:
        return EngineInfo("fake", ("m1",), "key-1", ("loaded the fake engine",))

    def run(self, work: Work) -> None:
        held = []
        for claim in work.claims():
            self.pulled.append(claim.target.path.name)
            if len(self.pulled) == self.stop_after:
                raise KeyboardInterrupt
            if len(self.pulled) == self.abandon_after:
                work.abandon("no worker left")
                return
            work.started(claim.index, 3)
            work.advance(claim.index, 3)
            name = claim.target.path.name
            status = "failed" if name.startswith("bad") else "no_face" if name.startswith("noface") else "done"
            outcome = Outcome(str(claim.target.path), status, reason=f"{name}: broken" if status == "failed" else "",
                              frames=3, detector_calls=1)
            if status != "failed":
                claim.target.output.parent.mkdir(parents=True, exist_ok=True)
                claim.target.output.write_bytes(b"swapped")
            held.append((claim.index, outcome))
            if not self.concurrent_targets:
                work.finished(*held.pop())
        for index, outcome in reversed(held):
            work.finished(index, outcome)

    def stats(self) -> Stats:
        return Stats(["CPUExecutionProvider"], 1, None)

    def close(self) -> None:
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "in").mkdir()
    for name in ("a.png", "bad.png", "c.png", "noface.png"):
        (tmp_path / "in" / name).write_bytes(name.encode())
    (tmp_path / "in" / "notes.txt").write_text("not media")
    settings = Settings(output_path=tmp_path / "out", temp_path=tmp_path / "temp")
    journal = Journal(tmp_path / "journal.sqlite")
    yield settings, tmp_path / "in", journal
    journal.close()


def statuses(result) -> list[tuple[str, str]]:
    return [(Path(o.target).name, o.status) for o in result.outcomes]


def test_outcomes_journal_and_progress_come_from_the_driver(tree):
    settings, folder, journal = tree
    reporter = Recorder()
    result = run_batch(settings, [str(folder), str(folder / "missing.png")], FakeExecutor(), reporter, journal)
    assert statuses(result) == [("missing.png", "failed"), ("a.png", "done"), ("bad.png", "failed"),
                                ("c.png", "done"), ("noface.png", "no_face")]
    assert result.failed == 2 and not result.interrupted
    assert result.engine == "fake" and result.providers == ["CPUExecutionProvider"]
    assert result.detector_calls == 4, "the sum of the outcomes' counts when the executor gives none"
    assert reporter.events[:2] == [("message", "loaded the fake engine"), ("message", "engine: fake (m1)")]
    assert ("finish", "failed", "bad.png") in reporter.events and ("message", "bad.png: broken") in reporter.events
    assert journal.get(folder / "a.png").status == "done" and journal.get(folder / "bad.png").status == "failed"
    again = FakeExecutor()
    second = run_batch(settings, [str(folder)], again, Recorder(), journal)
    assert again.pulled == [], "finished and failed targets are skipped by the journal, not the executor"
    assert [s for _, s in statuses(second)] == ["skipped"] * 4
    retry = FakeExecutor()
    run_batch(settings, [str(folder)], retry, Recorder(), journal, retry_failed=True)
    assert retry.pulled == ["bad.png"]


def test_a_concurrent_executor_is_shown_and_summarised_in_batch_order(tree):
    settings, folder, _ = tree
    reporter = Recorder()
    result = run_batch(settings, [str(folder)], FakeExecutor(concurrent=True), reporter)
    assert [name for name, _ in statuses(result)] == ["a.png", "bad.png", "c.png", "noface.png"]
    finishes = [e[2] for e in reporter.events if e[0] == "finish"]
    assert finishes == ["a.png", "bad.png", "c.png", "noface.png"]
    starts = [e[1] for e in reporter.events if e[0] == "start"]
    assert starts == finishes


def test_an_interruption_journals_what_was_claimed_and_not_finished(tree):
    settings, folder, journal = tree
    executor = FakeExecutor(stop_after=2)
    result = run_batch(settings, [str(folder)], executor, Recorder(), journal)
    # the summary names the target whose work was cut (claimed, not finished), not "(batch)"
    assert result.interrupted and statuses(result)[-1] == ("bad.png", "failed")
    assert statuses(result)[:-1] == [("a.png", "done")]
    assert journal.get(folder / "bad.png").status == "interrupted"
    assert journal.get(folder / "c.png") is None, "never claimed"


def test_an_executor_that_gives_up_fails_the_rest(tree):
    settings, folder, journal = tree
    result = run_batch(settings, [str(folder)], FakeExecutor(abandon_after=2), Recorder(), journal)
    assert statuses(result) == [("a.png", "done"), ("bad.png", "failed"), ("c.png", "failed"),
                                ("noface.png", "failed")]
    assert all(o.reason.endswith("no worker left") for o in result.outcomes[1:])
    assert journal.get(folder / "bad.png").status == "interrupted", "claimed: the next run does it"
    assert journal.get(folder / "c.png") is None


class ReloadingExecutor(FakeExecutor):
    """After the first target, goes on with another engine (as a watch whose SIGHUP rebuilt it)."""

    def __init__(self, later: EngineInfo) -> None:
        super().__init__()
        self.later = later

    def start(self, targets, work: Work) -> EngineInfo:
        return EngineInfo("fake", ("inswapper_128", "m1"), "key-1", (), ("first engine's warning",))

    def run(self, work: Work) -> None:
        claims = work.claims()
        for done, claim in enumerate(claims):
            if done == 1:
                work.use_engine(self.later)
            work.finished(claim.index, Outcome(str(claim.target.path), "done", frames=1))


def test_the_summary_names_the_engine_in_use_and_each_warning_once(tree):
    settings, folder, journal = tree
    later = EngineInfo("fake-2", ("inswapper_128", "codeformer"), "key-2", (),
                       ("first engine's warning", "second engine's warning"))
    reporter = Recorder()
    result = run_batch(settings, [str(folder)], ReloadingExecutor(later), reporter, journal)
    assert (result.engine, result.models) == ("fake-2", ["inswapper_128", "codeformer"])
    said = [text.removeprefix("ffb: warning: ") for kind, text, *_ in reporter.events
            if kind == "message" and text.startswith("ffb: warning: ")]
    assert said == result.warnings
    assert said[1::2] == ["first engine's warning", "second engine's warning"]
    assert "inswapper_128" in said[0] and "codeformer" in said[2] and "inswapper_128" not in said[2]
    assert len(said) == 4
    keys = {journal.get(folder / name).settings_key for name in ("a.png", "c.png")}
    assert keys == {"key-1", "key-2"}, "claims after the change are keyed by the new engine's settings"

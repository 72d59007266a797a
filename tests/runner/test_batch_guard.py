"""No exception from one target ends the batch: an error injected at each stage of the middle target of three
fails that target alone (one line), the others are done, the summary is printed. An interruption injected
at the same stages ends the run as interrupted (exit 130), with the summary; one that lands as a target's end
is recorded leaves that target in the summary once, as it ended."""
from __future__ import annotations

import json
import os
import pathlib
import signal
from pathlib import Path

import cv2
import pytest

from conftest import face_frame, make_clip
from facefusion_batch.cli import main
from facefusion_batch.runner import batch as batch_module, driver
from facefusion_batch.workflow import lookahead as lookahead_module
from facefusion_batch.workflow import chunks as chunks_phase, finish as finish_phase, video_plan
from facefusion_batch.workflow.processor import FrameProcessor
from facefusion_batch.runner.journal import Journal
from facefusion_batch.runner.progress import PlainReporter

VICTIM = "victim.mp4"
VICTIM_SHAPE = (240, 320, 3)  # the victim's frames are told apart by their size


def _wrap(owner, name: str, hit, monkeypatch, error) -> None:
    """Make `owner.name` raise `error` when `hit(*args)` says the call is about the victim."""
    real = getattr(owner, name)

    def wrapper(*args, **kwargs):
        if hit(*args, **kwargs):
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)


def _named(path, *rest, **kwargs) -> bool:
    return Path(path).name == VICTIM


def _inject(stage: str, error: BaseException, monkeypatch) -> None:
    def patch(owner, name, hit):
        _wrap(owner, name, hit, monkeypatch, error)

    if stage == "hash":
        patch(batch_module, "sha256_of", _named)
        patch(lookahead_module, "sha256_of", _named)
    elif stage == "probe":
        patch(video_plan, "probe", _named)
        patch(lookahead_module, "probe", _named)
    elif stage == "decode":
        patch(chunks_phase, "Decoder", lambda info, *a, **k: info.path.name == VICTIM)
        patch(lookahead_module, "Decoder", lambda info, *a, **k: info.path.name == VICTIM)
    elif stage == "analyse":
        patch(FrameProcessor, "analyse", lambda self, frame, *a: frame.shape == VICTIM_SHAPE)
    elif stage == "swap":
        patch(FrameProcessor, "swap_faces", lambda self, frame, *a: frame.shape == VICTIM_SHAPE)  # every frame's swap
    elif stage == "encode":
        patch(chunks_phase._Encoder, "write", lambda self, *a: self._path.name == VICTIM)
    elif stage == "join":
        patch(finish_phase, "_mux", lambda plan, *a, **k: plan.info.path.name == VICTIM)
    elif stage == "verify":
        patch(finish_phase, "_verify", lambda partial, info, *a: info.path.name == VICTIM)
    elif stage == "rename":
        patch(pathlib.Path, "replace", lambda self, target: Path(target).name == VICTIM)
    elif stage == "journal":
        patch(Journal, "record", lambda self, target, *a, **k: Path(target).name == VICTIM)
    elif stage == "progress":
        patch(PlainReporter, "start", lambda self, name, *a: name.endswith(VICTIM))
    elif stage == "deleted":  # the target vanishes while its frames are processed
        real = FrameProcessor.swap_faces

        def swap(self, frame, faces):
            if frame.shape == VICTIM_SHAPE:
                (Path(self.settings.output_path).parent / "in" / VICTIM).unlink(missing_ok=True)
            return real(self, frame, faces)

        monkeypatch.setattr(FrameProcessor, "swap_faces", swap)
    else:
        raise AssertionError(stage)


STAGES = ["hash", "probe", "decode", "analyse", "swap", "encode", "join", "verify", "rename", "journal",
          "progress", "deleted"]
# A display failure is not the target's; a target deleted mid-way may or may not still be finished.
VICTIM_STATUS = {"progress": ("done",), "deleted": ("done", "failed")}


@pytest.fixture
def three(env, source_image):
    folder = env / "in"
    folder.mkdir()
    make_clip(folder / "a.mp4", frames=4)
    make_clip(folder / VICTIM, frames=4, image=cv2.resize(face_frame(), VICTIM_SHAPE[1::-1]))
    cv2.imwrite(str(folder / "c.png"), face_frame())
    make_clip(folder / "z.mp4", frames=4)
    return ["-s", str(source_image), "-t", str(folder), "-o", str(env / "out")]


def _run(args: list[str], capsys) -> tuple[int, dict, str]:
    code = main(["run", "--engine", "neural", "--json", "-q", *args])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


@pytest.mark.parametrize("stage", STAGES)
def test_an_error_at_any_stage_fails_only_that_target(three, stage, monkeypatch, capsys):
    _inject(stage, RuntimeError("injected\nfailure"), monkeypatch)
    code, summary, err = _run(three, capsys)
    status = {Path(o["target"]).name: o for o in summary["outcomes"]}
    assert {name: status[name]["status"] for name in ("a.mp4", "c.png", "z.mp4")} == dict.fromkeys(
        ("a.mp4", "c.png", "z.mp4"), "done")
    victim = status[VICTIM]
    assert victim["status"] in VICTIM_STATUS.get(stage, ("failed",)), victim
    assert code == (1 if victim["status"] == "failed" else 0) and not summary["interrupted"]
    if victim["status"] == "failed":
        assert "\n" not in victim["reason"] and VICTIM in victim["reason"]
        assert not (Path(three[-1]) / VICTIM).exists(), "no output for a failed target"
    if stage not in VICTIM_STATUS:
        assert "unexpected RuntimeError" in victim["reason"] and "injected failure" in victim["reason"]
    assert "Traceback" not in err


@pytest.mark.parametrize("stage", STAGES[:-1])
def test_an_interruption_at_any_stage_ends_the_run(three, stage, monkeypatch, capsys):
    error = KeyboardInterrupt() if STAGES.index(stage) % 2 else SystemExit(3)
    _inject(stage, error, monkeypatch)
    code, summary, _ = _run(three, capsys)
    assert code == 130 and summary["interrupted"] is True
    assert Path(summary["outcomes"][0]["target"]).name == "a.mp4"
    assert "z.mp4" not in {Path(o["target"]).name for o in summary["outcomes"]}, "the run ended there"


def test_the_summary_is_printed_for_names_with_rich_markup(env, source_image, capsys):
    folder = env / "in"  # (brackets in a --target spec are glob patterns: the folder is named)
    (folder / "a[").mkdir(parents=True)
    make_clip(folder / "a[" / "x].mp4", frames=4)  # its path holds "[/x]": a closing tag rich rejects
    (folder / "[red]broken.png").write_bytes(b"not an image")
    code = main(["run", "--engine", "neural", "-s", str(source_image), "-t", str(folder), "-o", str(env / "out")])
    out = capsys.readouterr().out
    assert code == 1
    assert "a[/x].mp4" in out and "[red]broken.png" in out and "failed 1" in out.replace(",", "")


@pytest.mark.parametrize("moment", ["journal", "summary"])
@pytest.mark.parametrize("ending", [VICTIM, "z.mp4"])
def test_a_signal_as_a_targets_end_is_recorded_names_the_target_it_cut(three, ending, moment, monkeypatch,
                                                                       capsys):
    """Ctrl-C just as a target's end is recorded (its journal row written, or its summary entry made): the
    target is in the summary once, as the journal has it; the interruption names what it cut (the next
    target, begun meanwhile), or the batch after the last one."""
    def interrupt() -> None:
        os.kill(os.getpid(), signal.SIGINT)

    if moment == "journal":
        record = Journal.record

        def recorded(self, target, output, content, key, status, *rest, **kwargs):
            record(self, target, output, content, key, status, *rest, **kwargs)
            if Path(target).name == ending and status == "done":
                interrupt()

        monkeypatch.setattr(Journal, "record", recorded)
    else:
        settle = driver._Run._settle

        def settled(self, index, outcome):
            settle(self, index, outcome)
            if Path(outcome.target).name == ending:
                interrupt()

        monkeypatch.setattr(driver._Run, "_settle", settled)
    code, summary, _ = _run(three, capsys)
    assert code == 130 and summary["interrupted"] is True
    cut = "(batch)" if ending == "z.mp4" else "z.mp4"
    assert [(Path(o["target"]).name, o["status"]) for o in summary["outcomes"]] == [
        ("a.mp4", "done"), ("c.png", "done"), (VICTIM, "done"), *([("z.mp4", "done")] if cut == "(batch)" else []),
        (cut, "interrupted")]
    journal = Journal(Path(three[-1]) / ".ffb" / "journal.sqlite")
    try:
        folder = Path(three[3])
        assert journal.get(folder / ending).status == "done"
        assert journal.get(folder / "z.mp4").status == ("done" if cut == "(batch)" else "interrupted")
    finally:
        journal.close()


def test_a_signal_after_the_last_claim_failed_names_the_batch(three, monkeypatch, capsys):
    """The last target's claim failed (an unexpected error while hashing it), then Ctrl-C comes while the run
    winds down (for a watch: at any time later): that target is in the summary once, failed."""
    def last(path, *rest, **kwargs) -> bool:
        return Path(path).name == "z.mp4"

    for owner in (batch_module, lookahead_module):
        _wrap(owner, "sha256_of", last, monkeypatch, RuntimeError("injected"))
    close = lookahead_module.Lookahead.close

    def closed(self) -> None:
        close(self)
        os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(lookahead_module.Lookahead, "close", closed)
    code, summary, _ = _run(three, capsys)
    assert code == 130 and summary["interrupted"] is True
    assert [(Path(o["target"]).name, o["status"]) for o in summary["outcomes"]] == [
        ("a.mp4", "done"), ("c.png", "done"), (VICTIM, "done"), ("z.mp4", "failed"), ("(batch)", "interrupted")]

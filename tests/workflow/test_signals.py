"""Signals always win: SIGTERM at any moment of `ffb run` (or twice) ends it with exit 130 and a summary that
says `interrupted`; nothing on the way may swallow the interruption."""
from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest

from conftest import make_clip
from facefusion_batch import interrupts
from facefusion_batch.workflow.analysis import MotionGate, Reference, _boxes_of

PACKAGE = Path(__file__).resolve().parents[2] / "facefusion_batch"


def _interrupted_future() -> Future:
    """A future whose wait is cut by a signal, as `Future.result` is when SIGTERM lands during it."""
    future = Future()

    def result(timeout=None):
        raise KeyboardInterrupt

    future.result = result  # type: ignore[method-assign]
    return future


def test_waiting_on_a_reference_never_swallows_an_interruption():
    reference = Reference(0, np.zeros((8, 8), np.float32), _interrupted_future())
    with pytest.raises(KeyboardInterrupt):
        _boxes_of(reference)
    gate = MotionGate(True, 1.0, 100)
    first, _ = gate.reference_for(0, np.zeros((8, 8), np.float32), 64)
    first.result = _interrupted_future()
    gate.reference_for(1, np.ones((8, 8), np.float32) * 50, 64)  # a cut: new reference, the first one becomes previous
    with pytest.raises(KeyboardInterrupt):
        gate.reference_for(2, np.ones((8, 8), np.float32) * 50, 64)


def test_a_failed_reference_only_widens_the_motion_check():
    failed = Future()
    failed.set_exception(RuntimeError("detector failed"))
    assert _boxes_of(Reference(0, np.zeros((8, 8), np.float32), failed)) is None


_ALLOWED = {  # handlers that catch everything on a worker thread and hand it to the thread that waits
    ("workflow/frames.py", "_run"), ("models/batcher.py", "_run"), ("api.py", "_run_batch"),
}


def _catches_everything(handler: ast.ExceptHandler) -> bool:
    return handler.type is None or any(isinstance(n, ast.Name) and n.id == "BaseException"
                                       for n in ast.walk(handler.type))


def test_no_handler_in_the_package_swallows_an_interruption():
    """Every `except BaseException` or bare `except` re-raises (or hands the exception to the thread that
    waits, listed above), and nothing suppresses BaseException. Handlers that name KeyboardInterrupt or
    SystemExit are where a run deliberately ends as interrupted."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for function in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            where = (str(path.relative_to(PACKAGE)), function.name)
            for node in ast.walk(function):
                if isinstance(node, ast.ExceptHandler) and _catches_everything(node):
                    if not any(isinstance(n, ast.Raise) for n in ast.walk(node)) and where not in _ALLOWED:
                        offenders.append(f"{where[0]}:{node.lineno} in {where[1]}")
                if isinstance(node, ast.Call) and "suppress" in ast.dump(node.func) and any(
                        isinstance(n, ast.Name) and n.id == "BaseException" for n in ast.walk(node)):
                    offenders.append(f"{where[0]}:{node.lineno} in {where[1]} suppresses BaseException")
    assert sorted(set(offenders)) == []


def test_signal_handling_in_process_restores_the_callers_handlers():
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with interrupts.handled() as signals:
        with signals.held():
            os.kill(os.getpid(), signal.SIGTERM)  # recorded, not raised
            time.sleep(0.01)
        assert signals.signalled
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN, "later signals are ignored"
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


def _ffb(env: Path, source: Path, targets: list[Path]) -> subprocess.Popen:
    command = [sys.executable, "-m", "facefusion_batch", "run", "--engine", "neural", "-q", "--json",
               "-s", str(source), "--chunk-size", "40", "-o", str(env / "out")]
    for target in targets:
        command += ["-t", str(target)]
    return subprocess.Popen(command, env={**os.environ, "FFB_EXECUTION_THREAD_COUNT": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(process: subprocess.Popen, found, what: str) -> None:
    deadline = time.monotonic() + 120
    while not found():
        assert process.poll() is None, f"ffb ended (exit {process.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} within 120 s"
        time.sleep(0.01)


MOMENTS = {
    # the output is locked: the models are loading
    "locked": lambda env: (env / "out" / ".ffb" / "lock").exists(),
    # frames are being spooled and swapped
    "frames": lambda env: any((env / "tmp").glob("ffb-*/frames/*")),
    # a chunk is finished, the next is being processed
    "chunk": lambda env: any((env / "tmp").glob("ffb-*/chunk_00001.json")),
    # the first video is written, the second is being processed
    "second": lambda env: (env / "out" / "a.mp4").exists(),
}


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> list[Path]:
    """A short video and a long one, encoded once for the module; each run gets copies of its own."""
    folder = tmp_path_factory.mktemp("signals")
    return [make_clip(folder / "a.mp4", frames=6), make_clip(folder / "b.mp4", frames=240)]


@pytest.mark.parametrize("moment", list(MOMENTS))
@pytest.mark.parametrize("second_after", [None, 0.0, 0.15])
def test_sigterm_at_any_moment_ends_the_run_with_130(env, source_image, clips, moment, second_after):
    if second_after is not None and moment in ("locked", "frames"):
        pytest.skip("two signals are checked at the later moments")
    short, long = (Path(shutil.copy(clip, env)) for clip in clips)
    process = _ffb(env, source_image, [short, long])
    _wait_for(process, lambda: MOMENTS[moment](env), moment)
    process.send_signal(signal.SIGTERM)
    if second_after is not None:
        time.sleep(second_after)
        process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err.decode()[-2000:]
    summary = json.loads(out)
    assert summary["interrupted"] is True and summary["ok"] is False
    assert summary["counts"]["failed"] == 0, "an interrupted target is counted interrupted, not failed"
    assert "Traceback" not in err.decode()
    assert not (env / "out" / "b.mp4").exists(), "the interrupted video has no output, whole or partial"


def test_a_failure_during_an_interruption_is_tried_again_next_run(env, source_image, capsys, monkeypatch):
    """Ctrl-C in a terminal reaches ffb's ffmpeg processes too: a video whose joining fails while the run
    is being interrupted is journaled as interrupted, so the next run does it again."""
    import threading

    import cv2

    from conftest import face_frame
    from facefusion_batch.cli import main
    from facefusion_batch.errors import MediaError
    from facefusion_batch.workflow import video as video_job
    from facefusion_batch.workflow.processor import FrameProcessor as Batch
    from facefusion_batch.runner.journal import Journal

    folder = env / "in"
    folder.mkdir()
    first = make_clip(folder / "a.mp4", frames=4)
    make_clip(folder / "b.mp4", frames=10, image=cv2.resize(face_frame(), (320, 240)))
    failing = threading.Event()
    real_finish, real_swap = video_job.finish_video, Batch.swap_faces

    def finish(plan, workspace, tags, *seal):
        if plan.info.path.name == "a.mp4":
            failing.set()
            raise MediaError(f"{plan.info.path}: joining chunks and audio: ffmpeg was killed by signal 2")
        return real_finish(plan, workspace, tags, *seal)

    def swap(self, frame, faces):
        if frame.shape[1] == 320:
            failing.wait(timeout=60)
            raise KeyboardInterrupt  # the same Ctrl-C reaches ffb
        return real_swap(self, frame, faces)

    monkeypatch.setattr(video_job, "finish_video", finish)
    monkeypatch.setattr(Batch, "swap_faces", swap)
    args = ["run", "--engine", "neural", "--json", "-q", "-s", str(source_image), "-t", str(folder),
            "-o", str(env / "out")]
    assert main(args) == 130
    summary = json.loads(capsys.readouterr().out)
    assert summary["interrupted"] and "the next run tries again" in summary["outcomes"][0]["reason"]
    assert summary["counts"]["failed"] == 0 and summary["counts"]["interrupted"] == 2, summary["outcomes"]
    journal = Journal(env / "out" / ".ffb" / "journal.sqlite")
    assert journal.get(first).status == "interrupted"
    journal.close()
    monkeypatch.setattr(video_job, "finish_video", real_finish)
    monkeypatch.setattr(Batch, "swap_faces", real_swap)
    assert main(args) == 0
    assert {o["status"] for o in json.loads(capsys.readouterr().out)["outcomes"]} == {"done"}

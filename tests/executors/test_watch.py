"""`ffb watch` as a user runs it: a subprocess watching tmp folders (stand-in neural models, tiny clips).
Every wait polls for a condition under a generous deadline; sleeps only pace the scenario (a slow upload)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from conftest import decode_all, make_clip
from hostile_media import RENAME_OVER
from prometheus_helpers import free_port, needs_prometheus, prometheus_server
from facefusion_batch.runner.journal import Journal, text_of
from facefusion_batch.targets import resolved

DEADLINE = 120.0  # seconds, for a loaded machine; the condition ends every wait
SETTLE = 2.0


class Watch:
    """One `ffb watch --json` process; stderr goes to a file (read it with `log()`)."""

    def __init__(self, env: Path, source: Path, folder: Path, *extra: str, name: str = "watch") -> None:
        self.env = env
        self.err = env / f"{name}.err"
        command = [sys.executable, "-m", "facefusion_batch", "watch", "--json", "-s", str(source), "-t", str(folder),
                   "-o", str(env / "out"), "--settle", str(SETTLE), *extra]
        with open(self.err, "wb") as err:
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err)

    def log(self) -> str:
        return self.err.read_text(errors="replace")

    def wait_for(self, found: Callable[[], bool], what: str, deadline: float = DEADLINE) -> None:
        end = time.monotonic() + deadline
        while not found():
            assert self.process.poll() is None, f"ffb watch ended (exit {self.process.returncode}) before {what}:\n" \
                                                f"{self.log()[-3000:]}"
            assert time.monotonic() < end, f"no {what} within {deadline:g} s:\n{self.log()[-3000:]}"
            time.sleep(0.05)

    def ready(self) -> "Watch":
        self.wait_for(lambda: "engine:" in self.log(), "engine loaded")
        return self

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, dict]:
        """Its exit code and summary (the last JSON line; one line per file came before it)."""
        self.process.send_signal(sig)
        out, _ = self.process.communicate(timeout=DEADLINE)
        assert "Traceback" not in self.log(), self.log()[-3000:]
        self.lines = [json.loads(line) for line in out.decode().splitlines()]
        return self.process.returncode, self.lines[-1]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


@pytest.fixture
def watches():
    """Start watches with `watches(...)`; whatever a failing test left running is killed."""
    started: list[Watch] = []

    def start(*args, **kwargs) -> Watch:
        started.append(Watch(*args, **kwargs))
        return started[-1]

    yield start
    for watch in started:
        watch.kill()


def journal_entry(env: Path, target: Path):
    journal = Journal(env / "out" / ".ffb" / "journal.sqlite")
    try:
        return journal.get(target)
    finally:
        journal.close()


def arrive(path: Path, frames: int) -> Path:
    """A clip that lands in a watched folder at once, as an upload renamed into place: written under a hidden
    name (never a target), then renamed. An in-place write can stall past the settle time on a loaded
    machine and be taken half written (the settling itself has its own tests)."""
    partial = make_clip(path.with_name(f".{path.stem}.tmp{path.suffix}"), frames=frames)
    return partial.replace(path)


def finished(env: Path, target: Path) -> Callable[[], bool]:
    """Whether the journal records `target` done (its output appears a moment before: wait for this)."""
    def check() -> bool:
        entry = journal_entry(env, target)
        return entry is not None and entry.status == "done"
    return check


def outcomes_of(summary: dict, target: Path) -> list[dict]:
    """`target`'s outcomes (in JSON a name that is not UTF-8 shows its bytes as \\udcXX text)."""
    return [o for o in summary["outcomes"] if text_of(resolved(Path(o["target"]))) == text_of(resolved(target))]


def test_a_file_copied_in_slowly_is_processed_once_and_only_when_complete(env, source_image, watches):
    incoming = env / "in"
    incoming.mkdir()
    clip = make_clip(env / "clip.mp4", frames=12)
    watch = watches(env, source_image, incoming).ready()
    data = clip.read_bytes()
    landing = incoming / "clip.mp4"
    pieces = 5
    for i in range(pieces):  # an upload in pieces, each well within the settle time of the one before
        with open(landing, "ab") as handle:
            handle.write(data[i * len(data) // pieces:(i + 1) * len(data) // pieces])
        assert not (env / "out" / "clip.mp4").exists(), "started before the file was complete"
        time.sleep(SETTLE / 5)
    watch.wait_for(finished(env, landing), "done")
    code, summary = watch.stop()
    assert code == 0 and summary["command"] == "watch" and summary["interrupted"] is True
    assert [o["status"] for o in outcomes_of(summary, landing)] == ["done"], summary["outcomes"]
    assert summary["counts"]["failed"] == 0, "stopped while idle, the watch records no failure"
    entry = journal_entry(env, landing)
    assert entry.status == "done" and entry.attempts == 1
    assert decode_all(env / "out" / "clip.mp4").shape[0] == 12


def test_what_is_there_is_done_and_a_file_replaced_after_it_finished_is_redone(env, source_image, watches):
    incoming = env / "in"
    (incoming / "sub").mkdir(parents=True)
    first = make_clip(incoming / "sub" / "a.mp4", frames=6)
    make_clip(incoming / ".partial.mp4", frames=6)  # hidden (an uploader's temporary file): never a target
    watch = watches(env, source_image, incoming).ready()
    output = env / "out" / "sub" / "a.mp4"  # the tree mirrored below the watched directory, as ffb run does
    watch.wait_for(finished(env, first), "first done")
    done_once = journal_entry(env, first)
    replacement = make_clip(env / "staging.mp4", frames=9)
    os.replace(replacement, first)  # an atomic rename over the finished file
    watch.wait_for(lambda: (journal_entry(env, first).content_hash != done_once.content_hash
                            and journal_entry(env, first).status == "done"), "the replaced file redone")
    code, summary = watch.stop()
    assert code == 0
    assert [o["status"] for o in outcomes_of(summary, first)] == ["done", "done"]
    assert decode_all(output).shape[0] == 9, "the output is the replacement's"
    assert not (env / "out" / ".partial.mp4").exists()
    assert not any(".partial" in o["target"] for o in summary["outcomes"])


def test_cron_and_watch_share_the_journal(env, source_image, watches):
    """What `ffb run` finished over the same folders is skipped by the watch, not redone."""
    from facefusion_batch.cli import main

    incoming = env / "in"
    incoming.mkdir()
    clip = make_clip(incoming / "a.mp4", frames=6)
    assert main(["run", "-q", "-s", str(source_image), "-t", str(incoming), "-o", str(env / "out")]) == 0
    written = (env / "out" / "a.mp4").stat().st_mtime_ns
    watch = watches(env, source_image, incoming).ready()
    assert main(["run", "-q", "-s", str(source_image), "-t", str(incoming), "-o", str(env / "out")]) == 6, \
        "the watch holds the output's lock for its life"
    late = arrive(incoming / "b.mp4", frames=6)
    watch.wait_for(finished(env, late), "the new file done")
    code, summary = watch.stop()
    assert code == 0
    assert [o["status"] for o in outcomes_of(summary, clip)] == ["skipped"]
    assert [o["status"] for o in outcomes_of(summary, late)] == ["done"]
    assert (env / "out" / "a.mp4").stat().st_mtime_ns == written


def test_hostile_files_are_reported_and_the_next_file_still_processed(env, source_image, watches):
    incoming = env / "in"
    incoming.mkdir()
    watch = watches(env, source_image, incoming).ready()
    noise = np.random.default_rng(1).integers(0, 256, 50_000, dtype=np.uint8).tobytes()
    hostile = {
        "garbage.mp4": lambda p: p.write_bytes(noise),
        "empty.mov": lambda p: p.write_bytes(b""),
        "fifo.mp4": lambda p: os.mkfifo(p),
        "dangling.mp4": lambda p: p.symlink_to(incoming / "nowhere.mp4"),
        "loop.mp4": lambda p: p.symlink_to(p),
        os.fsdecode(b"not-utf8-\xff.mp4"): lambda p: p.write_bytes(noise),
        "new\nline.jpg": lambda p: p.write_bytes(noise[:999]),
        "truncated.mp4": lambda p: p.write_bytes(make_clip(env / "whole.mp4", frames=6).read_bytes()[:3000]),
    }
    for name, make in hostile.items():
        make(incoming / name)
    (incoming / "dir.mp4").mkdir()  # a directory with a video's name: looked into, not a target
    for name in hostile:
        watch.wait_for(lambda: journal_entry(env, incoming / name) is not None
                       and journal_entry(env, incoming / name).status == "failed", f"{name!r} journaled as failed")
    good = make_clip(env / "good.mp4", frames=6)
    os.replace(good, incoming / "good.mp4")
    watch.wait_for(finished(env, incoming / "good.mp4"), "the good file done")
    lines = watch.log().splitlines()
    for name in ("garbage.mp4", "fifo.mp4", "dangling.mp4", "loop.mp4"):
        assert any(line.startswith(str(incoming / name) + ": ") and not line.endswith(": failed")
                   for line in lines), f"{name}: one line with the reason\n{watch.log()}"
    code, summary = watch.stop(signal.SIGINT)
    assert code == 130, "Ctrl-C: 130"
    for name in hostile:
        assert [o["status"] for o in outcomes_of(summary, incoming / name)] == ["failed"], name
    assert [o["status"] for o in outcomes_of(summary, incoming / "good.mp4")] == ["done"]
    assert sorted(p.name for p in (env / "out").iterdir() if not p.name.startswith(".")) == ["good.mp4"]


CTRL_C_AS_DONE = """
import os
import signal
from pathlib import Path

from facefusion_batch.runner import driver

_settle = driver._Run._settle


def _settled(self, index, outcome):
    _settle(self, index, outcome)
    if Path(outcome.target).name == "good.mp4":
        os.kill(os.getpid(), signal.SIGINT)


driver._Run._settle = _settled
"""


def _inject(env: Path, monkeypatch, code: str) -> None:
    """`code` run as sitecustomize by the watch processes started after this (their PYTHONPATH)."""
    inject = env / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(code)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(inject), os.environ.get("PYTHONPATH", "")]))


CLOSED_WITH_CTRL_C = """
from facefusion_batch.executors import watch

_close = watch.WatchExecutor.close


def _closed(self):
    _close(self)
    raise KeyboardInterrupt  # the signal raised again as the watch's workers are closed


watch.WatchExecutor.close = _closed
"""


def test_a_signal_raised_again_while_the_watch_closes_keeps_what_it_did_in_the_summary(env, source_image, watches,
                                                                                         monkeypatch):
    """The KeyboardInterrupt of the signal that ended the watch, raised a second time as it closes its workers
    (injected): the summary still has every file it did (it was 'interrupted before it began', with none)."""
    _inject(env, monkeypatch, CLOSED_WITH_CTRL_C)
    incoming = env / "in"
    incoming.mkdir()
    watch = watches(env, source_image, incoming).ready()
    good = arrive(incoming / "good.mp4", frames=6)
    watch.wait_for(finished(env, good), "the clip done")
    code, summary = watch.stop()
    assert code == 0
    assert [o["status"] for o in outcomes_of(summary, good)] == ["done"], summary["outcomes"]


def test_ctrl_c_as_a_file_is_recorded_done_leaves_it_done_once(env, source_image, watches, monkeypatch):
    """Ctrl-C that lands as a file's outcome is recorded (injected into the watch process, where a user's lands
    by chance): the summary has the file once, done; the interruption cut no work."""
    _inject(env, monkeypatch, CTRL_C_AS_DONE)
    incoming = env / "in"
    incoming.mkdir()
    watch = watches(env, source_image, incoming).ready()
    good = arrive(incoming / "good.mp4", frames=6)
    watch.process.wait(timeout=DEADLINE)
    code, summary = watch.stop(signal.SIGINT)  # ended already: collects its output
    assert code == 130
    assert [o["status"] for o in outcomes_of(summary, good)] == ["done"], summary["outcomes"]
    assert len(summary["outcomes"]) == 1, "the interruption cut no work"
    assert journal_entry(env, good).status == "done"


def test_sigterm_mid_video_then_restart_resumes_and_loses_nothing(env, source_image, watches, monkeypatch):
    from facefusion_batch.cli import main

    monkeypatch.setenv("FFB_EXECUTION_THREAD_COUNT", "1")
    clip = make_clip(env / "long.mp4", frames=160)
    assert main(["run", "-q", "-s", str(source_image), "-t", str(clip), "--chunk-size", "20",
                 "-o", str(env / "whole")]) == 0
    incoming = env / "in"
    incoming.mkdir()
    target = incoming / "long.mp4"
    shutil.copyfile(clip, env / "copy.mp4")  # the same bytes: the same watermark payload as the whole run's
    os.replace(env / "copy.mp4", target)
    first = watches(env, source_image, incoming, "--chunk-size", "20", name="first")
    first.wait_for(lambda: any((env / "tmp").glob("ffb-*/chunk_00001.json")), "the second chunk finished")
    code, summary = first.stop()
    assert code == 0, "SIGTERM (systemctl stop) ends the watch with 0"
    assert summary["interrupted"] is True
    assert journal_entry(env, target).status == "interrupted"
    assert not (env / "out" / "long.mp4").exists()
    kept = sorted(p.name for p in (env / "tmp").glob("ffb-*/chunk_*.json"))
    assert kept, "finished chunks are kept for the next run"
    second = watches(env, source_image, incoming, "--chunk-size", "20", name="second")
    second.wait_for(finished(env, target), "the resumed target done")
    code, summary = second.stop()
    [outcome] = outcomes_of(summary, target)
    assert code == 0 and outcome["status"] == "done"
    assert "resumed: " in outcome["reason"], outcome
    before, after = decode_all(env / "whole" / "long.mp4"), decode_all(env / "out" / "long.mp4")
    assert before.shape == after.shape and before.shape[0] == 160
    assert np.array_equal(before, after), "same frames as a run that was never interrupted"


def test_sighup_rereads_the_profile_for_the_next_files(env, source_image, watches):
    incoming = env / "in"
    incoming.mkdir()
    profile = env / "profile.toml"
    profile.write_text("[output_creation]\noutput_video_quality = 80\n")
    watch = watches(env, source_image, incoming, "--profile", str(profile)).ready()
    first = arrive(incoming / "a.mp4", frames=6)
    watch.wait_for(finished(env, first), "first done")
    profile.write_text("[output_creation]\noutput_video_quality = 40\noutput_image_quality = 50\n")
    watch.process.send_signal(signal.SIGHUP)
    watch.wait_for(lambda: "settings reloaded" in watch.log(), "the reload")
    assert "engine rebuilt" not in watch.log(), "the output qualities need no new engine"
    second = arrive(incoming / "b.mp4", frames=6)
    watch.wait_for(finished(env, second), "second done")
    profile.write_text("[output_creation]\noutput_video_quality = 'not a number'\n")
    watch.process.send_signal(signal.SIGHUP)
    watch.wait_for(lambda: "settings not reloaded" in watch.log(), "a broken profile refused")
    profile.write_text("[output_creation]\noutput_video_quality = 40\n[face_detector]\nface_detector_model = 'yoloface'\n")
    watch.process.send_signal(signal.SIGHUP)
    watch.wait_for(lambda: "(engine rebuilt: " in watch.log(), "the engine rebuilt for another detector")
    third = arrive(incoming / "c.mp4", frames=6)
    watch.wait_for(finished(env, third), "third done")
    code, summary = watch.stop()
    assert code == 0
    keys = [journal_entry(env, path).settings_key for path in (first, second, third)]
    assert len(set(keys)) == 3, "each file journaled under the settings it was made with"
    assert "yoloface" in next(line for line in watch.log().splitlines() if "engine rebuilt" in line)
    assert "yoloface_8n" in summary["models"] and "scrfd_2.5g" not in summary["models"], "the engine in use"
    assert [w for w in summary["warnings"] if "yoloface_8n" in w] == [
        "no licence stated, check before commercial use: yoloface_8n (see `ffb models list`)"], \
        "a model the rebuilt engine loads is named once, the ones named at start-up not again"
    assert sum("inswapper_128" in w for w in summary["warnings"]) == 1


@pytest.mark.parametrize("poll", [False, True], ids=["events", "poll"])
def test_the_idle_watcher_uses_almost_no_cpu(env, source_image, watches, poll):
    incoming = env / "in"
    incoming.mkdir()
    for i in range(20):
        (incoming / f"note{i}.txt").write_text("not media")
    watch = watches(env, source_image, incoming, *(["--poll"] if poll else [])).ready()

    def cpu_seconds() -> float:
        fields = Path(f"/proc/{watch.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    # Start-up (models, the content gate) may still be winding down on a loaded machine: an idle watcher has a
    # quiet 3 s window within 30 s; one that polls or spins busily never has one.
    shares = []
    for _ in range(10):
        before, began = cpu_seconds(), time.monotonic()
        time.sleep(3.0)
        shares.append((cpu_seconds() - before) / (time.monotonic() - began))
        if shares[-1] < 0.10:
            break
    assert shares[-1] < 0.10, f"idle watcher used {', '.join(f'{s:.1%}' for s in shares)} of a core"
    code, _ = watch.stop()
    assert code == 0


def test_watch_takes_runs_options_and_refuses_what_it_cannot_do(env, source_image, capsys):
    from facefusion_batch.cli import main

    import typer

    from facefusion_batch.cli import app

    assert main(["watch", "--help"]) == 0 and "--settle" in capsys.readouterr().out
    commands = typer.main.get_command(app).commands
    options = {name for param in commands["watch"].params for name in param.opts}
    run_options = {name for param in commands["run"].params for name in param.opts}
    assert run_options - options == {"--force", "--metrics-file"}, "every other option of run, declared once"
    assert options - run_options == {"--settle", "--poll", "--metrics-port", "--metrics-bind"}
    assert main(["watch", "--processors", "face_swapper", "face_enhancer", "--print-settings", "--json",
                 "-t", str(env)]) == 0, "FaceFusion's multi-value flags, as for run"
    rows = json.loads(capsys.readouterr().out)
    assert {"key": "processors", "value": "face_swapper face_enhancer"}.items() <= next(
        row for row in rows if row["key"] == "processors").items()
    clip = make_clip(env / "a.mp4", frames=2)
    assert main(["watch", "-s", str(source_image), "-t", str(clip), "-o", str(env / "out")]) == 2
    assert "not a directory" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["watch", "-s", str(source_image), "-t", str(env), "-o", str(env / "out"),
                     "--metrics-port", str(port)]) == 2
    assert f"--metrics-port {port}: can't listen" in capsys.readouterr().err
    assert not (env / "out" / ".ffb" / "lock").exists()


@needs_prometheus
def test_prometheus_scrapes_a_watch(env, source_image, watches, tmp_path):
    incoming = env / "in"
    incoming.mkdir()
    port = free_port()
    watch = watches(env, source_image, incoming, "--metrics-port", str(port)).ready()
    good = arrive(incoming / "good.mp4", frames=6)
    garbage = incoming / "garbage.mp4"
    garbage.write_bytes(b"\0" * 4096)
    watch.wait_for(lambda: finished(env, good)() and journal_entry(env, garbage) is not None
                   and journal_entry(env, garbage).status == "failed", "both files journaled")
    with prometheus_server(tmp_path, "ffb-watch", port) as prometheus:
        answer = prometheus.poll('ffb_targets_total{job="ffb-watch"}', "status", deadline=DEADLINE,
                                 until=lambda answer: (answer.get("done"), answer.get("failed")) == (1.0, 1.0))
        assert answer == {"done": 1.0, "failed": 1.0, "no_face": 0.0, "skipped": 0.0, "blocked": 0.0,
                          "interrupted": 0.0}
        assert prometheus.values('ffb_backlog_targets{job="ffb-watch"}', "job") == {"ffb-watch": 0.0}
    code, summary = watch.stop()
    assert code == 0 and summary["counts"]["done"] == 1 and summary["counts"]["failed"] == 1


def test_a_file_renamed_over_the_target_while_it_is_processed(env, source_image, watches, monkeypatch, capsys):
    """Issue 26, class 1: the old content's output is never published as the new file's; the new file is
    done once it settles, and a cron run then skips it (fault injected into the watch process: the rename
    lands after the frames are processed, before the output is published)."""
    inject = env / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(RENAME_OVER)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(inject), os.environ.get("PYTHONPATH", "")]))
    upload = make_clip(env / "upload.mp4", frames=4)
    monkeypatch.setenv("FFB_TEST_UPLOAD", str(upload))
    incoming = env / "in"
    incoming.mkdir()
    target = make_clip(incoming / "clip.mp4", frames=12)
    watch = watches(env, source_image, incoming).ready()
    watch.wait_for(lambda: not upload.exists() and finished(env, target)(), "the new file done")
    code, summary = watch.stop()
    assert code == 0
    outcomes = outcomes_of(summary, target)
    assert [o["status"] for o in outcomes] == ["failed", "done"]
    assert "changed while it was processed" in outcomes[0]["reason"]
    assert decode_all(env / "out" / "clip.mp4").shape[0] == 4, "the output published is the new file's"
    assert journal_entry(env, target).size == target.stat().st_size
    monkeypatch.setenv("PYTHONPATH", os.environ["PYTHONPATH"].split(os.pathsep, 1)[1])
    from facefusion_batch.cli import main

    code = main(["run", "--json", "-q", "-s", str(source_image), "-t", str(incoming), "-o", str(env / "out")])
    assert code == 0 and json.loads(capsys.readouterr().out)["outcomes"][0]["status"] == "skipped"

"""The Ray executor's pure parts, without Ray: segments, staged names, ordered progress, storage checks,
publishing chunks, worker counts and the settings it refuses."""
from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from facefusion_batch.cli import main
from facefusion_batch.errors import SettingsError
from facefusion_batch.runner.driver import OrderedProgress
from facefusion_batch.executors.work_items import (StorageCheck, segment_length, segments,
                                             staged_name)
from facefusion_batch.executors.ray_pool import connect, worker_count
from facefusion_batch.executors.worker import StorageError, check_storage
from facefusion_batch.runner.batch import open_state
from facefusion_batch.workflow.outcome import Outcome
from facefusion_batch.workflow.workspace import Resume, Workspace
from facefusion_batch.settings import Settings, load_settings


def test_segments_cover_every_chunk_and_the_last_runs_to_the_end():
    assert segments(10, 3) == [(0, 3), (3, 6), (6, 9), (9, None)]
    assert segments(9, 3) == [(0, 3), (3, 6), (6, None)]
    assert segments(3, 3) == segments(2, 5) == [(0, None)]
    assert segment_length(10, 4, free_workers=8) == 4, "the setting wins"
    assert segment_length(10, 0, free_workers=3) == 4, "else one segment per free worker"
    assert segment_length(10, 0, free_workers=1) == segment_length(10, 0, free_workers=0) == 10


def test_staged_names_are_hidden_keep_the_container_and_are_cleared_by_the_next_run(tmp_path):
    out = tmp_path / "out" / "clip.mkv"
    staged = staged_name(out, "abc-1")
    assert staged.parent == out.parent and staged.name.startswith(".") and staged.suffix == ".mkv"
    long = staged_name(out.with_name("é" * 120 + ".mp4"), "abc-1")
    assert len(long.name.encode()) < 100 and long.suffix == ".mp4"
    out.parent.mkdir()
    staged.write_bytes(b"half")
    lock, journal = open_state(Settings(output_path=tmp_path / "out"), False, SimpleNamespace(message=print))
    journal.close()
    lock.release()
    assert not staged.exists()


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def message(self, text: str) -> None:
        self.events.append(("message", text))

    def start(self, name: str, total: int) -> None:
        self.events.append(("start", name, total))

    def advance(self, frames: int) -> None:
        if frames:
            self.events.append(("advance", frames))

    def finish(self, status: str, name: str | None = None) -> None:
        self.events.append(("finish", status))


def test_progress_is_shown_target_after_target_in_batch_order():
    recorder = Recorder()
    progress = OrderedProgress(recorder, ["a", "b", "c", "d"])
    a, b, c, d = range(4)
    progress.start(b, 5)
    progress.start(a, 10)
    progress.advance(a, 4)
    progress.advance(b, 5)  # b runs on another worker: held back until a is done
    progress.complete(b, Outcome("b", "done", frames=5))
    progress.complete(c, Outcome("c", "failed", reason="c: damaged"))  # failed before it could start
    assert recorder.events == [("start", "a", 10), ("advance", 4)]
    progress.complete(a, Outcome("a", "done", frames=10))
    assert recorder.events[2:] == [("advance", 6), ("finish", "done"), ("start", "b", 5), ("advance", 5),
                                   ("finish", "done"), ("finish", "failed"), ("message", "c: damaged")]
    progress.complete(d, Outcome("d", "skipped", reason="unchanged"))  # skipped: never started
    assert recorder.events[-1] == ("finish", "skipped")


def storage(tmp_path: Path, inputs: tuple[Path, ...] = ()) -> StorageCheck:
    check = StorageCheck("t0k", tmp_path / "shared", tmp_path / "out", inputs)
    for directory in (check.shared, check.output):
        directory.mkdir(exist_ok=True)
        check.probe_file(directory).write_text(check.token)
    return check


def test_storage_check_names_the_path_a_worker_cannot_see(tmp_path):
    readable = tmp_path / "in.mp4"
    readable.write_bytes(b"x")
    check = storage(tmp_path, (readable,))
    check_storage(check, "node-1")
    check.probe_file(check.output).unlink()  # the worker's node mounts another output directory
    with pytest.raises(StorageError, match=r"out: the Ray worker on node-1 does not see the output directory"):
        check_storage(check, "node-1")
    check = storage(tmp_path, (readable, tmp_path / "elsewhere.mp4"))
    with pytest.raises(StorageError, match=r"elsewhere.mp4: the Ray worker on node-1 can't read this input; .*"
                                           r"Scale-out on Ray"):
        check_storage(check, "node-1")


def chunk(workspace: Path, index: int, frames: int) -> None:
    workspace.mkdir(exist_ok=True)
    (workspace / f"chunk_{index:05d}.mp4").write_bytes(b"v" * frames)
    (workspace / f"chunk_{index:05d}.json").write_text(json.dumps({"frames": frames, "faces": frames}))


def test_publishing_moves_finished_chunks_and_a_retry_skips_them(tmp_path):
    scratch, shared = Workspace(tmp_path / "scratch"), Workspace(tmp_path / "shared").make()
    assert shared.resume(10, 2, None) == Resume(2, 0, 0, False)
    chunk(scratch.path, 2, 10)
    chunk(scratch.path, 3, 4)  # the video's short last chunk; the end marker was lost with a killed worker
    chunk(scratch.path, 4, 10)  # not this segment's (a stale leftover): never published past the end
    scratch.publish(shared, 10, 2, None)
    assert shared.finished(2) == {"frames": 10, "faces": 10} and shared.finished(3)["frames"] == 4
    assert json.loads((shared.path / "end.json").read_text()) == {"frames": 34}
    assert shared.resume(10, 2, None) == Resume(4, 14, 14, True), "a retry finds the segment done"
    chunk(shared.path, 0, 10)
    assert shared.resume(10, 0, 2) == Resume(1, 10, 10, False), "a retry starts at the first unfinished chunk"


def test_worker_count_follows_the_cluster_or_the_setting():
    gpu = Settings(execution_providers=("cuda", "cpu"), ray_num_gpus=0.5)
    assert worker_count(gpu, cpus=16, gpus=4) == 8
    assert worker_count(Settings(execution_thread_count=4), cpus=16, gpus=0) == 4
    assert worker_count(Settings(ray_workers=3), cpus=2, gpus=0) == 3
    with pytest.raises(SettingsError, match="has 0 GPUs but each worker asks for ray_num_gpus = 0.5"):
        worker_count(gpu, cpus=16, gpus=0)


@pytest.mark.parametrize("flags, message", [
    ({"execution_providers": "cuda cpu"}, "ray_num_gpus is 0"),
    ({"ray_num_gpus": "1"}, "execution_providers is cpu only"),
    ({"execution_providers": "cuda", "ray_num_gpus": "1", "execution_device_id": "1"}, "Ray chooses"),
])
def test_ray_settings_that_cannot_work_are_refused(flags, message):
    with pytest.raises(SettingsError, match=message):
        load_settings(None, {}, {"executor": "ray", **flags})
    load_settings(None, {}, flags)  # fine for the local executor


def test_fractional_gpus_and_the_profile_keys(tmp_path):
    profile = tmp_path / "p.ini"
    profile.write_text("[execution]\nexecutor = ray\nexecution_providers = cuda cpu\nray_num_gpus = 0.25\n"
                       "ray_address = auto\nray_segment_chunks = 4\n[paths]\nshared_path = /mnt/shared\n")
    s = load_settings(profile, {}, {}).settings
    assert (s.executor, s.ray_num_gpus, s.ray_address, s.ray_segment_chunks) == ("ray", 0.25, "auto", 4)
    assert s.shared_path == Path("/mnt/shared")


def test_ray_address_flag_implies_the_ray_executor(capsys):
    assert main(["run", "--ray-address", "auto", "--print-settings", "--json"]) == 0
    rows = {r["key"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["executor"]["value"] == "ray" and rows["ray_address"]["value"] == "auto"


def test_without_ray_the_run_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails as if it were not installed
    code = main(["run", "-s", str(tmp_path / "s.png"), "-t", str(tmp_path), "-o", str(tmp_path / "out"),
                 "--executor", "ray"])
    assert code == 2
    assert "pip install 'facefusion-batch[ray]'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists(), "refused before anything was written"


class FakeRay:
    """Just enough of the ray module for `connect`."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error, self.calls = error, []

    def is_initialized(self) -> bool:
        return False

    def init(self, **options) -> None:
        self.calls.append(options)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as Ray's own handler replaces ours
        if self.error:
            raise self.error


def test_connect_starts_ray_here_and_keeps_our_sigterm_handler():
    def ours(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, ours)
    try:
        fake = FakeRay()
        assert connect(fake, Settings(ray_workers=64, ray_num_cpus=0.5))
        assert signal.getsignal(signal.SIGTERM) is ours, "SIGTERM still ends the run cleanly (exit 130)"
        assert fake.calls[0]["num_cpus"] >= 32 and fake.calls[0]["include_dashboard"] is False
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_cluster_that_is_not_there_is_one_clear_line():
    fake = FakeRay(ConnectionError("Could not find any running Ray instance.\nmore detail"))
    with pytest.raises(SettingsError, match=r"can't start or join Ray at auto \(Could not find any running Ray "
                                            r"instance.\); start the cluster with `ray start --head`"):
        connect(fake, Settings(ray_address="auto"))
    assert fake.calls == [{"address": "auto", "logging_level": 30}]

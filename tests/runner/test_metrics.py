"""Metrics: a valid exposition (parser always, promtool where installed), counters that match the run's own
summary, the textfile written atomically, the HTTP endpoint, NVML GPU metrics only where NVML answers."""
from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import types
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from facefusion_batch.cli import main
from facefusion_batch.errors import OutputError, SettingsError
from facefusion_batch.runner.metrics import (GpuCollector, RunMetrics, check_metrics_file, serve, write_textfile)
from facefusion_batch.runner.progress import QuietReporter
from facefusion_batch.timing import Timings

REPO = Path(__file__).resolve().parents[2]
CLIP = REPO / "examples" / "clips" / "astronaut_zoom.mov"
SOURCE = REPO / "examples" / "source.jpg"


def samples(text: str) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of an exposition, through prometheus_client's own parser."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: dict, name: str, **labels: str) -> float:
    return found[(name, tuple(sorted(labels.items())))]


def promtool_check(text: str) -> None:
    """`promtool check metrics` (Debian's prometheus package) where installed: lint and syntax."""
    promtool = shutil.which("promtool")
    if promtool is None:
        return
    checked = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60)
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()


@pytest.fixture
def offline(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    monkeypatch.setenv("FFB_TEMP_PATH", str(tmp_path / "tmp"))
    monkeypatch.setenv("FFB_ENGINE", "offline")
    monkeypatch.setenv("FFB_EXECUTION_THREAD_COUNT", "2")
    return tmp_path


def run_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["run", "--json", "-q", *args])
    return code, json.loads(capsys.readouterr().out)


def test_run_metrics_file_matches_the_summary(offline, capsys):
    """A real run on an example clip (plus a WMV target, rejected before the batch starts: ffb can't write
    WMV): the file's counters are the summary's; a second run skips and still knows when work last finished."""
    prom = offline / "textfile" / "ffb.prom"
    prom.parent.mkdir()
    (offline / "old.wmv").write_bytes(b"\0" * 64)
    args = ["-s", str(SOURCE), "-t", str(CLIP), "-t", str(offline / "old.wmv"), "-o", str(offline / "out"),
            "--metrics-file", str(prom)]
    code, summary = run_json(capsys, *args)
    assert code == 1 and summary["counts"] == {"done": 1, "no_face": 0, "skipped": 0, "blocked": 0, "failed": 1}
    text = prom.read_text()
    promtool_check(text)
    found = samples(text)
    output = str(offline / "out")
    for status, count in summary["counts"].items():
        assert value(found, "ffb_targets_total", status=status, output=output) == count
    found = {(name, tuple(kv for kv in labels if kv != ("output", output))): v for (name, labels), v in found.items()}
    frames = sum(o["frames"] for o in summary["outcomes"])
    assert frames == 75
    assert value(found, "ffb_frames_total") == frames
    assert value(found, "ffb_frame_seconds_count") == frames  # every video frame went through the processor
    assert value(found, "ffb_faces_swapped_total") >= frames  # one face in every frame of this clip
    for stage in ("decode", "detect", "swap", "encode"):
        assert value(found, "ffb_stage_seconds_count", stage=stage) > 0
        assert value(found, "ffb_stage_seconds_sum", stage=stage) > 0
    models = {dict(labels)["model"] for name, labels in found if name == "ffb_model_inference_seconds_count"}
    assert models and all(value(found, "ffb_model_inference_seconds_count", model=m) > 0 for m in models)
    providers = [dict(labels) for name, labels in found if name == "ffb_engine_info"]
    assert providers == [{"engine": "offline", "provider": summary["providers"][0],
                          "version": providers[0]["version"]}]
    assert value(found, "ffb_backlog_targets") == 0 and value(found, "ffb_targets_in_progress") == 0
    assert value(found, "ffb_frames_in_flight") == 0
    started = value(found, "ffb_run_start_timestamp_seconds")
    first_success = value(found, "ffb_last_success_timestamp_seconds")
    assert first_success > started and value(found, "ffb_run_duration_seconds") > 0
    assert not [p for p in prom.parent.iterdir() if p != prom]  # no temporary file left beside it

    code, summary = run_json(capsys, *args[:4], *args[6:])  # the clip again: skipped
    assert summary["counts"]["skipped"] == 1
    found = {(name, tuple(kv for kv in labels if kv != ("output", output))): v
             for (name, labels), v in samples(prom.read_text()).items()}
    assert value(found, "ffb_targets_total", status="skipped") == 1
    assert value(found, "ffb_targets_total", status="done") == 0
    assert value(found, "ffb_frames_total") == 0
    # From the journal now: its record of that success, written a moment after the first run's gauge was set
    # (under load, more than a few ms later), and after that run started.
    again = value(found, "ffb_last_success_timestamp_seconds")
    assert started < again and again == pytest.approx(first_success, abs=5.0)


def test_metrics_file_in_a_missing_directory_fails_before_the_run(offline, capsys):
    prom = offline / "nowhere" / "ffb.prom"
    code = main(["run", "-q", "-s", str(SOURCE), "-t", str(CLIP), "-o", str(offline / "out"),
                 "--metrics-file", str(prom)])
    err = capsys.readouterr().err
    assert code == 5
    assert f"--metrics-file {prom}: directory {prom.parent} does not exist" in err
    assert len(err.strip().splitlines()) == 1
    assert not (offline / "out").exists() and not prom.parent.exists()


def test_a_run_refused_by_the_lock_leaves_the_file_to_the_run_holding_it(offline, capsys):
    from facefusion_batch.runner.lock import RunLock

    prom = offline / "ffb.prom"
    prom.write_text("# the running job's metrics\n")
    lock = RunLock(offline / "out" / ".ffb" / "lock")
    lock.acquire()
    with lock:
        code = main(["run", "-q", "-s", str(SOURCE), "-t", str(CLIP), "-o", str(offline / "out"),
                     "--metrics-file", str(prom)])
    assert code == 6
    assert prom.read_text() == "# the running job's metrics\n"


def test_labels_go_on_every_series():
    metrics = RunMetrics({"output": "/srv/out"})
    metrics.reporter(QuietReporter()).finish("done", "a.mp4")
    metrics.stage_timings.add("decode", 0.01)
    text = metrics.exposition().decode()
    promtool_check(text)
    found = samples(text)
    assert found and all(("output", "/srv/out") in labels for _, labels in found)
    assert value(found, "ffb_targets_total", status="done", output="/srv/out") == 1


def test_metrics_file_path_checks(tmp_path):
    with pytest.raises(SettingsError, match="is a directory"):
        check_metrics_file(tmp_path)
    assert check_metrics_file(tmp_path / "ffb.prom") == []
    assert "reads only *.prom" in check_metrics_file(tmp_path / "ffb.txt")[0]


def test_unwritable_metrics_file_is_an_output_error(tmp_path):
    target = tmp_path / "ffb.prom"
    target.mkdir()  # a directory where the file should go: the rename fails
    with pytest.raises(OutputError, match="can't write it"):
        write_textfile(RunMetrics().registry, target)
    assert [p.name for p in tmp_path.iterdir()] == ["ffb.prom"]  # the temporary file is gone


def test_metrics_file_is_rewritten_during_the_run(tmp_path):
    from facefusion_batch.runner.metrics import FileMetrics

    prom = tmp_path / "ffb.prom"
    metrics = FileMetrics(prom, every=0.02)
    reporter = metrics.reporter(QuietReporter())
    metrics.started(types.SimpleNamespace(entries=lambda: iter(())))
    reporter.expect(3)
    reporter.start("a.mp4", 10)
    reporter.advance(4)
    deadline = time.monotonic() + 120  # written by the thread, not yet by end(): a bound for a loaded machine
    while time.monotonic() < deadline:
        if prom.exists() and value(samples(prom.read_text()), "ffb_frames_total") == 4:
            break
        threading.Event().wait(0.02)
    found = samples(prom.read_text())
    assert value(found, "ffb_frames_total") == 4
    assert value(found, "ffb_targets_in_progress") == 1 and value(found, "ffb_backlog_targets") == 2
    metrics.end(None)
    assert value(samples(prom.read_text()), "ffb_run_duration_seconds") > 0


def test_reporter_tee_counts_and_hands_everything_on():
    seen = []

    class Inner(QuietReporter):
        def message(self, text): seen.append(("message", text))
        def expect(self, targets): seen.append(("expect", targets))
        def start(self, name, total): seen.append(("start", name, total))
        def advance(self, frames): seen.append(("advance", frames))
        def finish(self, status, name=None): seen.append(("finish", status, name))
        def close(self): seen.append(("close",))

    clock = iter(range(100, 200)).__next__
    metrics = RunMetrics(clock=lambda: float(clock()))
    reporter = metrics.reporter(Inner())
    reporter.expect(4)
    reporter.finish("skipped", "s.mp4")  # ended without a start
    reporter.start("a.mp4", 3)
    reporter.advance(3)
    reporter.start("b.jpg", 1)  # a starts the next while a is being finished
    found = samples(metrics.exposition().decode())
    assert value(found, "ffb_targets_in_progress") == 2 and value(found, "ffb_backlog_targets") == 1
    reporter.finish("done", "a.mp4")
    reporter.finish("failed")  # the one started last: b.jpg
    reporter.message("hello")
    reporter.close()
    assert [event[0] for event in seen] == ["expect", "finish", "start", "advance", "start", "finish", "finish",
                                            "message", "close"]
    found = samples(metrics.exposition().decode())
    assert value(found, "ffb_targets_in_progress") == 0 and value(found, "ffb_backlog_targets") == 1
    assert {s: value(found, "ffb_targets_total", status=s) for s in ("done", "skipped", "blocked", "failed",
                                                                    "no_face")} == \
        {"done": 1, "skipped": 1, "blocked": 0, "failed": 1, "no_face": 0}
    assert value(found, "ffb_frames_total") == 3
    assert value(found, "ffb_last_success_timestamp_seconds") > value(found, "ffb_run_start_timestamp_seconds")


def test_batches_of_one_process_add_up():
    """A long-running process runs batch after batch: each result adds what its reporter events missed."""
    metrics = RunMetrics()
    reporter = metrics.reporter(QuietReporter())
    for _ in range(2):
        reporter.expect(1)
        assert value(samples(metrics.exposition().decode()), "ffb_backlog_targets") == 1
        reporter.finish("done", "a.mp4")
        assert value(samples(metrics.exposition().decode()), "ffb_backlog_targets") == 0
        outcomes = [types.SimpleNamespace(status="done"), types.SimpleNamespace(status="failed")]  # + a rejected
        metrics.record_result(types.SimpleNamespace(outcomes=outcomes, engine="offline", providers=[]))
    reporter.expect(2)
    reporter.start("cut short.mp4", 10)  # interrupted: never finished
    metrics.end(None)
    found = samples(metrics.exposition().decode())
    assert value(found, "ffb_targets_in_progress") == 0 and value(found, "ffb_backlog_targets") == 2
    assert value(found, "ffb_targets_total", status="done") == 2
    assert value(found, "ffb_targets_total", status="failed") == 2
    duration = value(found, "ffb_run_duration_seconds")
    assert value(samples(metrics.exposition().decode()), "ffb_run_duration_seconds") == duration  # stopped


def test_statuses_are_the_batch_statuses():
    from facefusion_batch.runner import journal, metrics
    from facefusion_batch.workflow import outcome

    assert metrics.STATUSES == outcome.STATUSES and metrics.SUCCESS == journal.FINISHED


def attached(metrics: RunMetrics) -> RunMetrics:
    """`metrics` attached to a stand-in batch (what RunMetrics.attach touches of a Batch)."""
    pool = types.SimpleNamespace(timings=None, active_providers=lambda: ["CPUExecutionProvider"])
    metrics.attach(types.SimpleNamespace(timings=None, engine=types.SimpleNamespace(name="offline", pool=pool)))
    return metrics


def test_frame_path_series_are_absent_until_a_batch_is_attached():
    """With the Ray executor the frames are processed on the workers: no made-up zero faces or in-flight."""
    metrics = RunMetrics()
    text = metrics.exposition().decode()
    assert "ffb_faces_swapped" not in text and "ffb_frames_in_flight" not in text
    attached(metrics)
    found = samples(metrics.exposition().decode())
    assert value(found, "ffb_faces_swapped_total") == 0 and value(found, "ffb_frames_in_flight") == 0
    assert [dict(labels)["provider"] for name, labels in found if name == "ffb_engine_info"] == \
        ["CPUExecutionProvider"]
    attached(metrics)  # a second batch of the same process: registered once


def test_stage_listener_feeds_histograms_and_in_flight():
    metrics = attached(RunMetrics())
    timings = metrics.stage_timings
    with timings.measure("frame"):
        with timings.measure("detect"):
            pass
        found = samples(metrics.exposition().decode())
        assert value(found, "ffb_frames_in_flight") == 1
    timings.add("decode", 0.003)
    timings.add("decode", 0.5, count=0)  # a stream's end: no event
    timings.count("faces", 3)
    with metrics.inference_timings.measure("inswapper_128"):
        pass
    found = samples(metrics.exposition().decode())
    assert value(found, "ffb_frames_in_flight") == 0
    assert value(found, "ffb_frame_seconds_count") == 1
    assert value(found, "ffb_stage_seconds_count", stage="detect") == 1
    assert value(found, "ffb_stage_seconds_count", stage="decode") == 1
    assert value(found, "ffb_stage_seconds_bucket", stage="decode", le="0.0025") == 0
    assert value(found, "ffb_stage_seconds_bucket", stage="decode", le="0.005") == 1
    metrics.stage_timings.add("encode", 0.01)  # on a bound: counted in that bucket (le is "less or equal")
    metrics.stage_timings.add("encode", 1000.0)  # above the last bound: +Inf only
    found = samples(metrics.exposition().decode())
    assert value(found, "ffb_stage_seconds_bucket", stage="encode", le="0.005") == 0
    assert value(found, "ffb_stage_seconds_bucket", stage="encode", le="0.01") == 1
    assert value(found, "ffb_stage_seconds_bucket", stage="encode", le="300.0") == 1
    assert value(found, "ffb_stage_seconds_bucket", stage="encode", le="+Inf") == 2
    assert value(found, "ffb_stage_seconds_count", stage="encode") == 2
    assert value(found, "ffb_stage_seconds_sum", stage="encode") == pytest.approx(1000.01)
    assert value(found, "ffb_faces_swapped_total") == 3
    assert value(found, "ffb_model_inference_seconds_count", model="inswapper_128") == 1
    assert timings.snapshot()["faces"] == {"seconds": 0.0, "count": 3}  # the totals are kept as before


def test_timings_listener_and_active_count():
    events = []
    timings = Timings(lambda *event: events.append(event))
    with timings.measure("frame"):
        assert timings.active("frame") == 1
        with timings.measure("frame"):
            assert timings.active("frame") == 2
    try:
        with timings.measure("frame"):
            raise ValueError
    except ValueError:
        pass
    assert timings.active("frame") == 0
    assert [(name, count) for name, _, count in events] == [("frame", 1)] * 3


def test_exposition_is_valid_with_every_family_filled():
    metrics = attached(RunMetrics())
    reporter = metrics.reporter(QuietReporter())
    reporter.expect(2)
    reporter.start('odd "name"\\\n.mp4', 2)
    reporter.advance(2)
    reporter.finish("done")
    for stage in ("decode", "detect", "swap", "enhance", "encode"):
        metrics.stage_timings.add(stage, 0.01)
    metrics.inference_timings.add("gfpgan_1.4", 0.02)
    metrics._engine = lambda: ('offline "x"', ["CUDAExecutionProvider", "CPUExecutionProvider"])
    text = metrics.exposition().decode()
    promtool_check(text)
    found = samples(text)
    assert {dict(labels)["stage"] for name, labels in found if name == "ffb_stage_seconds_count"} == \
        {"decode", "detect", "swap", "enhance", "encode"}
    assert sum(1 for name, _ in found if name == "ffb_engine_info") == 2


class _FakeNvml(types.SimpleNamespace):
    """NVML's calls as pynvml names them, answering for two devices; the second refuses utilisation (MIG)."""

    class NVMLError(Exception):
        pass

    def __init__(self):
        super().__init__(shut=False)

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetName(self, handle):
        return b"NVIDIA H200" if handle == 0 else "NVIDIA A100 MIG 1g.10gb"

    def nvmlDeviceGetUtilizationRates(self, handle):
        if handle == 1:
            raise self.NVMLError("Not Supported")
        return types.SimpleNamespace(gpu=37, memory=12)

    def nvmlDeviceGetMemoryInfo(self, handle):
        return types.SimpleNamespace(used=(handle + 1) * 2**30, total=80 * 2**30, free=0)


def test_gpu_collector_reports_what_nvml_answers(monkeypatch):
    import facefusion_batch.runner.metrics as module

    fake = _FakeNvml()
    monkeypatch.setattr(module, "_nvml", lambda: fake)
    collector = GpuCollector()
    found = {}
    for family in collector.collect():
        for sample in family.samples:
            found[(sample.name, sample.labels["gpu"])] = (sample.value, sample.labels["name"])
    assert found == {
        ("ffb_gpu_utilization_ratio", "0"): (0.37, "NVIDIA H200"),
        ("ffb_gpu_memory_used_bytes", "0"): (2.0**30, "NVIDIA H200"),
        ("ffb_gpu_memory_total_bytes", "0"): (80.0 * 2**30, "NVIDIA H200"),
        ("ffb_gpu_memory_used_bytes", "1"): (2.0**31, "NVIDIA A100 MIG 1g.10gb"),
        ("ffb_gpu_memory_total_bytes", "1"): (80.0 * 2**30, "NVIDIA A100 MIG 1g.10gb"),
    }
    collector.close()
    assert fake.shut


def test_no_gpu_metrics_without_nvml(monkeypatch):
    """Here: whatever this machine has. Without a GPU (or without nvidia-ml-py) there is no ffb_gpu_ series at
    all; with one, every device NVML lists has its memory."""
    from facefusion_batch.runner.metrics import _nvml

    nvml = _nvml()
    text = RunMetrics().exposition().decode()
    if nvml is None:
        assert "ffb_gpu_" not in text
    else:
        count = nvml.nvmlDeviceGetCount()
        found = samples(text)
        assert sum(1 for name, _ in found if name == "ffb_gpu_memory_total_bytes") == count
        assert all(v > 0 for (name, _), v in found.items() if name == "ffb_gpu_memory_total_bytes")
    monkeypatch.setitem(__import__("sys").modules, "pynvml", None)  # the library absent
    assert "ffb_gpu_" not in RunMetrics().exposition().decode()


def test_serve_answers_scrapes_and_closes():
    metrics = RunMetrics()
    metrics.reporter(QuietReporter()).finish("done", "a.mp4")
    with serve(metrics.registry, 0) as server:
        assert server.address == "127.0.0.1" and server.port > 0
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=60) as response:
            text = response.read().decode()
        assert value(samples(text), "ffb_targets_total", status="done") == 1
        with pytest.raises(SettingsError, match=f"--metrics-port {server.port}: can't listen"):
            serve(metrics.registry, server.port)
    with serve(metrics.registry, server.port) as again:  # the port is free again
        assert again.port == server.port


def test_counters_have_no_created_twin():
    """Every counter was exported twice (`ffb_targets_total` and `ffb_targets_created`): only the count now."""
    from prometheus_client import generate_latest

    from facefusion_batch.runner.metrics import RunMetrics

    metrics = RunMetrics({"output": "out"})
    text = generate_latest(metrics.registry).decode()
    assert "ffb_targets_total" in text or "ffb_frames_total" in text
    assert "_created" not in text

"""A real Prometheus (Debian's `prometheus` package; skipped where it is not installed) scrapes the metrics
endpoint of a real batch and answers `ffb_targets_total` through its HTTP API; and the deployment docs'
scrape config and alert rules pass promtool, the rules' own unit tests included."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from prometheus_helpers import needs_prometheus, prometheus_server
from facefusion_batch.runner.metrics import RunMetrics, serve
from facefusion_batch.runner.progress import QuietReporter
from facefusion_batch.settings import load_settings

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "docs" / "deploy"


def run_batch(tmp_path: Path, metrics: RunMetrics) -> dict:
    """One real batch on an example clip (offline engine) with the metrics wired in as `ffb run` does."""
    from facefusion_batch.runner.driver import run_batch as drive
    from facefusion_batch.executors.local import LocalExecutor

    env = {"FFB_ENGINE": "offline", "FFB_CACHE_PATH": str(tmp_path / "cache"), "FFB_TEMP_PATH": str(tmp_path / "t"),
           "FFB_EXECUTION_THREAD_COUNT": "2"}
    settings = load_settings(None, env, {"output_path": tmp_path / "out"}).settings
    source = REPO / "examples" / "source.jpg"
    with LocalExecutor(settings, source, timings=metrics.stage_timings, on_engine=metrics.attach_engine) as local:
        specs = [str(REPO / "examples" / "clips" / "astronaut_zoom.mov"), str(tmp_path / "missing.mp4")]
        result = drive(settings, specs, local, metrics.reporter(QuietReporter()))
    metrics.record_result(result)
    return result.to_dict()["counts"]


@needs_prometheus
def test_prometheus_scrapes_the_endpoint(tmp_path):
    metrics = RunMetrics()
    counts = run_batch(tmp_path, metrics)
    with serve(metrics.registry, 0) as server, prometheus_server(tmp_path, "ffb", server.port) as prometheus:
        answer = prometheus.poll('ffb_targets_total{job="ffb"}', "status", until=lambda answer: len(answer) >= 4)
        assert answer == {status: float(count) for status, count in counts.items()}
        assert answer["done"] == 1 and answer["failed"] == 1
        assert prometheus.values('up{job="ffb"}', "job") == {"ffb": 1.0}


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed (Debian: apt-get install "
                    "prometheus)")
@pytest.mark.parametrize("command", [["check", "rules", "ffb.rules.yml"], ["test", "rules", "ffb.rules.test.yml"],
                                     ["check", "config", "prometheus.yml"]])
def test_deployment_files_pass_promtool(command, tmp_path):
    for name in os.listdir(DEPLOY):
        shutil.copy(DEPLOY / name, tmp_path / name)  # promtool check config also reads the rule files
    checked = subprocess.run([shutil.which("promtool"), *command], cwd=tmp_path, capture_output=True, timeout=60)
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()


def test_deploy_doc_shows_the_shipped_files():
    """docs/deploy.md quotes the unit, the scrape config and the rules: the quotes are the files."""
    text = (REPO / "docs" / "deploy.md").read_text()
    for name in ("ffb-watch.service", "prometheus.yml", "ffb.rules.yml"):
        assert (DEPLOY / name).read_text().strip() in text, name

"""A real Prometheus (Debian's `prometheus` package; skipped where it is not installed) scrapes the metrics
endpoint of a real batch and answers `ffb_targets_total` through its HTTP API; and the deployment docs'
scrape config and alert rules pass promtool, the rules' own unit tests included."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from facefusion_batch.metrics import RunMetrics, serve
from facefusion_batch.pipeline.progress import QuietReporter
from facefusion_batch.settings import load_settings

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "docs" / "deploy"
DEADLINE = 90.0  # seconds for Prometheus to start, scrape and answer, on a loaded machine


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def query(port: int, expression: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expression})
    with urllib.request.urlopen(url, timeout=5) as response:
        answer = json.load(response)
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def run_batch(tmp_path: Path, metrics: RunMetrics) -> dict:
    """One real batch on an example clip (offline engine) with the metrics wired in as `ffb run` does."""
    from facefusion_batch.pipeline.batch import Batch

    env = {"FFB_ENGINE": "offline", "FFB_CACHE_PATH": str(tmp_path / "cache"), "FFB_TEMP_PATH": str(tmp_path / "t"),
           "FFB_EXECUTION_THREAD_COUNT": "2"}
    settings = load_settings(None, env, {"output_path": tmp_path / "out"}).settings
    batch = Batch(settings, REPO / "examples" / "source.jpg", metrics.reporter(QuietReporter()))
    metrics.attach(batch)
    result = batch.run([str(REPO / "examples" / "clips" / "astronaut_zoom.mov"), str(tmp_path / "missing.mp4")])
    metrics.record_result(result)
    return result.to_dict()["counts"]


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus not installed (Debian: apt-get "
                    "install prometheus)")
def test_prometheus_scrapes_the_endpoint(tmp_path):
    metrics = RunMetrics()
    counts = run_batch(tmp_path, metrics)
    prometheus_port = free_port()
    with serve(metrics.registry, 0) as server:
        config = tmp_path / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"
                          f"  - job_name: ffb\n    static_configs:\n      - targets: ['127.0.0.1:{server.port}']\n")
        log = open(tmp_path / "prometheus.log", "wb")
        process = subprocess.Popen([shutil.which("prometheus"), f"--config.file={config}",
                                    f"--storage.tsdb.path={tmp_path / 'data'}",
                                    f"--web.listen-address=127.0.0.1:{prometheus_port}"],
                                   stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
        try:
            answer: dict[str, float] = {}
            deadline = time.monotonic() + DEADLINE
            while time.monotonic() < deadline and len(answer) < 4 and process.poll() is None:
                time.sleep(0.5)
                try:
                    result = query(prometheus_port, 'ffb_targets_total{job="ffb"}')
                except OSError:  # not listening yet
                    continue
                answer = {series["metric"]["status"]: float(series["value"][1]) for series in result}
            assert process.poll() is None, (tmp_path / "prometheus.log").read_text()[-2000:]
            assert answer == {status: float(count) for status, count in counts.items()}
            assert answer["done"] == 1 and answer["failed"] == 1
            up = query(prometheus_port, 'up{job="ffb"}')
            assert [float(series["value"][1]) for series in up] == [1.0]
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()


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

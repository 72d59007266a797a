"""A real Prometheus (Debian's `prometheus` package) for tests: started on 127.0.0.1 scraping one endpoint
every second, asked through its HTTP API, always stopped (terminate, then kill) when the test ends."""
from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Callable, Iterator

import pytest

DEADLINE = 90.0  # seconds for Prometheus to start, scrape and answer, on a loaded machine

needs_prometheus = pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus not installed "
                                      "(Debian: apt-get install prometheus; .ci/run does)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def query(port: int, expression: str) -> list[dict]:
    """The series Prometheus on `port` answers for `expression` (an instant query)."""
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expression})
    with urllib.request.urlopen(url, timeout=5) as response:
        answer = json.load(response)
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def stop_process(process: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM, and SIGKILL when it has not ended within `timeout` seconds; reaped either way."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Prometheus:
    """A started Prometheus: `port` it answers on, `log` its output file."""

    def __init__(self, process: subprocess.Popen, port: int, log: Path) -> None:
        self.process, self.port, self.log = process, port, log

    def alive(self) -> None:
        assert self.process.poll() is None, f"prometheus ended:\n{self.log.read_text(errors='replace')[-2000:]}"

    def query(self, expression: str) -> list[dict]:
        return query(self.port, expression)

    def values(self, expression: str, label: str) -> dict[str, float]:
        """`expression`'s series as {their `label`: value}."""
        return {series["metric"].get(label, ""): float(series["value"][1]) for series in self.query(expression)}

    def poll(self, expression: str, label: str, until: Callable[[dict[str, float]], bool],
             deadline: float = DEADLINE) -> dict[str, float]:
        """`values(expression, label)` asked every half second (not listening yet counts as no answer) until
        `until` accepts the answer or `deadline` seconds pass; the last answer either way. Prometheus dying
        meanwhile fails the test with its log."""
        answer: dict[str, float] = {}
        end = time.monotonic() + deadline
        while not until(answer) and time.monotonic() < end:
            self.alive()
            time.sleep(0.5)
            try:
                answer = self.values(expression, label)
            except OSError:  # not listening yet
                continue
        self.alive()
        return answer


@contextlib.contextmanager
def prometheus_server(directory: Path, job: str, endpoint_port: int) -> Iterator[Prometheus]:
    """Prometheus scraping http://127.0.0.1:`endpoint_port`/metrics every second as `job`; its config, data
    and log under `directory`. Stopped when the block ends, whatever ends it."""
    config = directory / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"
                      f"  - job_name: {job}\n    static_configs:\n      - targets: ['127.0.0.1:{endpoint_port}']\n")
    port, log = free_port(), directory / "prometheus.log"
    with open(log, "wb") as output:
        process = subprocess.Popen([shutil.which("prometheus"), f"--config.file={config}",
                                    f"--storage.tsdb.path={directory / 'data'}",
                                    f"--web.listen-address=127.0.0.1:{port}"],
                                   stdout=output, stderr=subprocess.STDOUT, cwd=directory)
    try:
        yield Prometheus(process, port, log)
    finally:
        stop_process(process)

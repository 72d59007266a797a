"""What the pooled executors' tests (Ray, worker processes) share: a `ffb run --json` call and its outcomes by
target name."""
from __future__ import annotations

import json
from pathlib import Path

from facefusion_batch.cli import main


def run(args: list[str], capsys, executor: str = "local") -> tuple[int, dict, str]:
    code = main(["run", "--json", "--executor", executor, *args])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip().startswith("{") else {}, captured.err


def by_name(summary: dict) -> dict[str, dict]:
    return {Path(o["target"]).name: o for o in summary["outcomes"]}

"""`ffb watch` as a service sees it: idle CPU, and the time from a clip landing to its output appearing.

    python benchmarks/watch_latency.py [--clip examples/clips/astronaut_zoom.mov] [--engine offline]
                                       [--settle 3] [--idle 30] [--landings 5] [--json]

For each way of watching (filesystem events, then --poll) it starts `ffb watch` on an empty incoming folder
(a fresh temp dir, so no journal skips), waits until the engine is loaded, measures the process's CPU time
(utime + stime from /proc) over `--idle` seconds of nothing happening, then lands the clip `--landings`
times, one after another, the way uploaders should (written under a dot-name, then an atomic rename to a
new name) and times each landing until the output file exists (polled every 10 ms). The latency includes
the settle time on purpose: it is what an operator waits. The journal's own seconds per target (the
processing alone) are reported beside it. SIGTERM ends each watch; its exit status must be 0.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEADLINE = 300.0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait(found, process: subprocess.Popen, what: str, log: Path, step: float = 0.01) -> None:
    end = time.monotonic() + DEADLINE
    while not found():
        if process.poll() is not None or time.monotonic() > end:
            raise SystemExit(f"watch_latency: no {what}; ffb watch said:\n{log.read_text()[-3000:]}")
        time.sleep(step)


def one_way(work: Path, clip: Path, source: Path, engine: str, settle: float, idle: float, landings: int,
            poll: bool) -> dict[str, Any]:
    incoming, out = work / "in", work / "out"
    incoming.mkdir(parents=True)
    log = work / "watch.err"
    env = {**os.environ, "FFB_TEMP_PATH": str(work / "tmp"), "FFB_ENGINE": engine}
    command = [sys.executable, "-m", "facefusion_batch", "watch", "-s", str(source), "-t", str(incoming),
               "-o", str(out), "--settle", str(settle), *(["--poll"] if poll else [])]
    with open(log, "wb") as err:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=env)
    try:
        _wait(lambda: "engine:" in log.read_text(), process, "engine loaded", log, 0.1)
        time.sleep(1.0)  # start-up's last threads wind down
        cpu, began = _cpu_seconds(process.pid), time.monotonic()
        time.sleep(idle)
        idle_share = (_cpu_seconds(process.pid) - cpu) / (time.monotonic() - began)
        latencies = []
        for i in range(landings):
            name = f"clip{i}{clip.suffix}"
            staging = incoming / f".{name}.part"
            shutil.copyfile(clip, staging)
            landed = time.monotonic()
            os.rename(staging, incoming / name)
            _wait((out / name).exists, process, f"output {name}", log)
            latencies.append(time.monotonic() - landed)
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=DEADLINE)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    from facefusion_batch.runner.journal import Journal

    journal = Journal(out / ".ffb" / "journal.sqlite")
    processing = [e.seconds for e in journal.entries()]
    journal.close()
    return {"way": "poll" if poll else "events", "exit_code": code, "idle_cpu_percent": round(100 * idle_share, 2),
            "idle_seconds": idle, "settle_seconds": settle,
            "latency_median_s": round(statistics.median(latencies), 3),
            "latency_min_s": round(min(latencies), 3), "latency_max_s": round(max(latencies), 3),
            "processing_median_s": round(statistics.median(processing), 3) if processing else None,
            "landings": landings}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip", type=Path, default=REPO / "examples" / "clips" / "astronaut_zoom.mov")
    parser.add_argument("--source", type=Path, default=REPO / "examples" / "source.jpg")
    parser.add_argument("--engine", default="offline")
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--landings", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for poll in (False, True):
        with tempfile.TemporaryDirectory(prefix="ffb-watch-latency-") as work:
            rows.append(one_way(Path(work), args.clip.resolve(), args.source.resolve(), args.engine, args.settle,
                                args.idle, args.landings, poll))
            print(f"watch_latency: {rows[-1]}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'way':7s} {'idle CPU':>9s} {'latency median':>15s} {'min':>7s} {'max':>7s} {'processing':>11s}  "
          f"(settle {args.settle:g} s, {args.landings} landings of {args.clip.name}, engine {args.engine})")
    for row in rows:
        print(f"{row['way']:7s} {row['idle_cpu_percent']:8.2f}% {row['latency_median_s']:14.2f}s "
              f"{row['latency_min_s']:6.2f}s {row['latency_max_s']:6.2f}s {row['processing_median_s']:10.2f}s")


if __name__ == "__main__":
    main()

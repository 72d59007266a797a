"""Throughput of the Ray executor with 1 and with 2 local workers, against the local thread executor.

    python benchmarks/ray_scaling.py [--clips 6] [--seconds 3] [--resolution 360p] [--threads 1] [--json]

Makes (once, cached like `ffb benchmark`'s) a clip of a real face, links it into a batch of `--clips`
targets, starts one local Ray instance, and runs the batch: through the local executor with `--threads`
frame threads, then through the Ray executor with 1 and with 2 workers of `--threads` threads each. Every
run starts from an empty output and temp dir (no journal skips, no resumed chunks). Reports wall time, the
time from the first work item to the end (without Ray's worker start-up), frames per second on both, and
the 2-worker / 1-worker ratio. Progress goes to stderr, the table (or --json) to stdout.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from facefusion_batch.bench import clips
from facefusion_batch.bench.runner import default_source
from facefusion_batch.runner.driver import run_batch
from facefusion_batch.executors.local import LocalExecutor
from facefusion_batch.executors.ray_executor import RayExecutor
from facefusion_batch.runner.progress import QuietReporter
from facefusion_batch.settings import load_settings


class _FirstStart(QuietReporter):
    """A quiet Reporter that notes when the first target starts (the first work item was handed out)."""

    def __init__(self) -> None:
        self.first: float | None = None

    def start(self, name: str, total: int) -> None:
        self.first = self.first or time.perf_counter()


def run_once(executor: str, workers: int, threads: int, batch_dir: Path, source: Path, work: Path) -> dict[str, Any]:
    shutil.rmtree(work, ignore_errors=True)
    flags = {"engine": "offline", "executor": executor, "ray_workers": workers, "execution_thread_count": threads,
             "output_path": work / "out", "temp_path": work / "temp"}
    settings = load_settings(None, {}, flags).settings
    reporter = _FirstStart()
    started = time.perf_counter()
    with (RayExecutor(settings, source) if executor == "ray" else LocalExecutor(settings, source)) as chosen:
        result = run_batch(settings, [str(batch_dir)], chosen, reporter)
    ended = time.perf_counter()
    if result.failed:
        raise SystemExit(f"the {executor} run failed: {[o.reason for o in result.outcomes if o.reason]}")
    frames = sum(o.frames for o in result.outcomes)
    busy = ended - (reporter.first or started)
    return {"executor": executor, "workers": workers, "threads": threads, "frames": frames,
            "wall_s": round(ended - started, 2), "items_s": round(busy, 2),
            "wall_fps": round(frames / (ended - started), 1), "items_fps": round(frames / busy, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--resolution", default="360p", choices=list(clips.RESOLUTIONS))
    parser.add_argument("--threads", type=int, default=1, help="frame threads per worker (and locally)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    source = default_source()
    if source is None:
        raise SystemExit("run from the ffb repository (needs examples/source.jpg)")
    import ray

    settings = load_settings(None, {}, {}).settings
    clip, _ = clips.ensure_clip(settings.cache_path / "bench", args.resolution, args.seconds, source, True)
    with tempfile.TemporaryDirectory(prefix="ffb-ray-scaling-") as directory:
        root = Path(directory)
        batch_dir = root / "batch"
        batch_dir.mkdir()
        for index in range(args.clips):
            os.link(clip, batch_dir / f"clip{index}.mp4")
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level=logging.WARNING)
        runs = []
        try:
            for executor, workers in (("local", 1), ("ray", 1), ("ray", 2)):
                print(f"ray_scaling: {executor}, {workers} worker(s) x {args.threads} thread(s)", file=sys.stderr)
                runs.append(run_once(executor, workers, args.threads, batch_dir, source, root / "work"))
                print(f"ray_scaling: {runs[-1]}", file=sys.stderr)
        finally:
            ray.shutdown()
    one, two = runs[1], runs[2]
    report = {"clip": clip.name, "clips": args.clips, "cpus": os.cpu_count(), "runs": runs,
              "ratio_2_to_1_wall": round(one["wall_s"] / two["wall_s"], 2),
              "ratio_2_to_1_items": round(one["items_s"] / two["items_s"], 2)}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{args.clips} x {clip.name} on {os.cpu_count()} CPUs, offline engine")
    print(f"{'executor':10} {'workers':>7} {'threads':>7} {'frames':>6} {'wall s':>7} {'wall fps':>8} "
          f"{'items s':>7} {'items fps':>9}")
    for r in runs:
        print(f"{r['executor']:10} {r['workers']:>7} {r['threads']:>7} {r['frames']:>6} {r['wall_s']:>7} "
              f"{r['wall_fps']:>8} {r['items_s']:>7} {r['items_fps']:>9}")
    print(f"2 workers / 1 worker: {report['ratio_2_to_1_wall']}x wall, {report['ratio_2_to_1_items']}x without "
          "worker start-up")


if __name__ == "__main__":
    main()

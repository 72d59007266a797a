"""Frames per second of a whole batch of short clips, as `ffb run` processes it (start-up excluded).

    python benchmarks/batch_throughput.py [720p] [--targets 6] [--seconds 3] [--engine offline]

`ffb benchmark` runs two targets; a batch of many short clips (the template-clip use case) also pays each
clip's start (probe, hash, decoder start) and end (join, verify, rename). This measures that: N hard links
to the cached benchmark clip of a resolution, one engine, one run. To compare with another revision, run
the same command with that revision's package first on PYTHONPATH, e.g.
    git worktree add /tmp/base <commit> && PYTHONPATH=/tmp/base python benchmarks/batch_throughput.py 720p
Ratios between runs made one after another are what count on a noisy machine.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from facefusion_batch.bench import clips
from facefusion_batch.runner.driver import run_batch
from facefusion_batch.executors.local import LocalExecutor
from facefusion_batch.workflow.processor import prepare
from facefusion_batch.runner.progress import QuietReporter
from facefusion_batch.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("resolution", nargs="?", default="720p", choices=sorted(clips.RESOLUTIONS))
    parser.add_argument("--targets", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--engine", default="offline", choices=("auto", "neural", "offline"))
    args = parser.parse_args()
    source = ROOT / "examples" / "source.jpg"
    base = load_settings(None, os.environ, {"engine": args.engine}).settings
    clip, _ = clips.ensure_clip(base.cache_path / "bench", args.resolution, args.seconds, source, True)
    base.temp_path.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ffb-batch-bench-", dir=base.temp_path))
    try:
        (work / "in").mkdir()
        for index in range(args.targets):
            os.link(clip, work / "in" / f"clip{index:03d}{clip.suffix}")
        settings = load_settings(None, os.environ, {"engine": args.engine, "temp_path": work / "temp",
                                                    "output_path": work / "out"}).settings
        processor = prepare(settings, source, print)
        with LocalExecutor(settings, source, processor=processor) as executor:
            started = time.perf_counter()
            result = run_batch(settings, [str(work / "in")], executor, QuietReporter())
            wall = time.perf_counter() - started
        processor.engine.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if result.failed:
        print(f"{result.failed} targets failed: {[o.reason for o in result.outcomes if o.status == 'failed']}")
        return 1
    frames = sum(o.frames for o in result.outcomes)
    print(f"{args.resolution}: {args.targets} targets x {frames // args.targets} frames, engine {result.engine}: "
          f"{frames / wall:.1f} fps, {wall * 1000 / args.targets:.0f} ms per target")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

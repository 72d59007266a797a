"""Send SIGTERM (or SIGINT) to `ffb run` at random moments of its life and tally the exit statuses.

    python benchmarks/signal_campaign.py --runs 40 --within 2.0 [--signal INT] [--engine offline]

Every run must end 130 (interrupted) or 0 (finished before the signal: make --frames long enough that none
does). A -15/-2 means the process died
instead of handling the signal; the only accepted exception is a signal within the first ~40 ms, before
Python has run any of ffb's code (the interpreter's own start-up). Uses ffb's ffmpeg for the test clip.
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2

from facefusion_batch.bench.clips import make_clip

SOURCE = Path(__file__).resolve().parents[1] / "examples" / "source.jpg"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--within", type=float, default=2.0, help="signal at a random time in [0, WITHIN] s")
    parser.add_argument("--signal", choices=("TERM", "INT"), default="TERM")
    parser.add_argument("--engine", default="offline")
    parser.add_argument("--frames", type=int, default=150, help="clip length (long enough to outlast the signal)")
    parser.add_argument("extra", nargs="*", help="more `ffb run` options after --, e.g. -- --models-path M "
                        "--processors face_swapper face_enhancer")
    parser.add_argument("--source", type=Path, help="a face photo (default: the bundled example's)")
    args = parser.parse_args()
    source = args.source or SOURCE
    work = Path(tempfile.mkdtemp(prefix="ffb-signals-"))
    try:
        photo = cv2.imread(str(source))
        clip = work / "clip.mp4"
        make_clip(clip, (640, 360), args.frames, photo)
        codes: dict[int, list[float]] = collections.defaultdict(list)
        for run in range(args.runs):
            delay = random.uniform(0.0, args.within)
            process = subprocess.Popen([sys.executable, "-m", "facefusion_batch", "run", "-q", "--engine", args.engine,
                                        "-s", str(source), "-t", str(clip), "-o", str(work / f"out{run}"), *args.extra],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(delay)
            process.send_signal(getattr(signal, f"SIG{args.signal}"))
            _, err = process.communicate(timeout=600)
            codes[process.returncode].append(round(delay, 3))
            if process.returncode not in (0, 130):
                print(f"exit {process.returncode} after {delay:.3f} s: {err.decode()[-600:]}", flush=True)
        for code, delays in sorted(codes.items()):
            print(f"exit {code:4d}: {len(delays):3d} runs (signal after {min(delays):.2f}-{max(delays):.2f} s)")
        bad = [d for c, ds in codes.items() if c not in (0, 130) for d in ds if d > 0.04]
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

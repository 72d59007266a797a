"""What metrics cost the frame path, per frame: the hooks one video frame goes through (decode twice, the
frame processor, track, swap, faces, encode, three model calls), timed three ways:

- off:      no Timings (`ffb run` without --metrics-file): `timed(None, ...)`
- timings:  a plain Timings (what `ffb benchmark` uses)
- metrics:  RunMetrics' Timings, feeding the Prometheus histograms (`ffb run --metrics-file`)

    python benchmarks/metrics_overhead.py [--frames 20000]

Prints microseconds per frame for each (median of 5 rounds). Compare with the milliseconds a frame takes
(`ffb benchmark`): that ratio is the overhead.
"""
from __future__ import annotations

import argparse
import statistics
import time

from facefusion_batch.runner.metrics import RunMetrics
from facefusion_batch.timing import Timings, timed, timed_iter


def one_video(frames: int, stages: Timings | None, inference: Timings | None) -> float:
    """Seconds to pass `frames` frames through the hooks a video frame meets."""
    started = time.perf_counter()
    for _ in timed_iter(range(frames), stages, "decode"):  # the decoder's frames
        with timed(stages, "decode"):  # the spool's thumbnail
            pass
        with timed(stages, "frame"):
            with timed(stages, "track"):
                pass
            with timed(stages, "swap"):
                for model in ("face_detection_short_range", "face_landmark", "inswapper_128"):
                    with timed(inference, model):
                        pass
            if stages is not None:
                stages.count("faces", 1)
        with timed(stages, "encode"):
            pass
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    metrics = RunMetrics()
    ways = {"off": lambda: (None, None), "timings": lambda: (Timings(), Timings()),
            "metrics": lambda: (metrics.stage_timings, metrics.inference_timings)}
    results: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.rounds):  # interleaved, so drift of the machine's speed hits all alike
        for name, make in ways.items():
            results[name].append(one_video(args.frames, *make()) / args.frames * 1e6)
    for name, per_frame in results.items():
        print(f"{name:8s} {statistics.median(per_frame):7.1f} us/frame  (min {min(per_frame):.1f}, "
              f"max {max(per_frame):.1f})")
    assert metrics.exposition()  # the histograms really were fed


if __name__ == "__main__":
    main()

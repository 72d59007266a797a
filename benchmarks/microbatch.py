"""Swap-stage style throughput: single model calls from worker threads vs micro-batched calls.

    python benchmarks/microbatch.py [--threads 2] [--items 256] [--batch 8] [--provider cpu|cuda]

For each dynamic-batch model, `--threads` worker threads push `--items` inputs through the model:
  single      each worker calls the session itself (intra-op threads = cores / workers, as ffb does)
  batched-1   workers submit to one MicroBatcher; its calls use cores / workers intra-op threads
  batched-N   the same with all cores for the batcher's calls
  ceiling     no threads and no batcher: one caller runs batches of 1..16 straight through a session with
              all cores; no batcher can beat this, so a ratio under 1 here means batching can't pay
Models: MediaPipe face mesh (192x192, shipped), MediaPipe full-range detector (192x192, shipped) and the
inswapper stand-in from the tests (tiny graph: per-call overhead dominates, so it flatters batching).
Prints items/s and the ratio to `single`. Ratios within one run are what count on a noisy machine.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from facefusion_batch.models.sessions import ort  # noqa: E402
from facefusion_batch.offline.mediapipe import MODEL_FILES, asset_path  # noqa: E402
from facefusion_batch.models.batcher import MicroBatcher  # noqa: E402


PROVIDERS = ["CPUExecutionProvider"]


def session(path: Path, threads: int):
    rt = ort()
    options = rt.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.intra_op_num_threads = threads
    return rt.InferenceSession(str(path), options, providers=PROVIDERS)


def kernel_ceiling(path: Path, items: int) -> dict[int, float]:
    """items/s of batches of 1..16 run straight through one session by one caller."""
    sess = session(path, os.cpu_count() or 1)
    rng = np.random.default_rng(0)
    rates = {}
    for size in (1, 2, 4, 8, 16):
        feeds = {i.name: rng.random([size, *i.shape[1:]], dtype=np.float32) for i in sess.get_inputs()}
        sess.run(None, feeds)  # warm up
        calls = max(2, items // size)
        started = time.perf_counter()
        for _ in range(calls):
            sess.run(None, feeds)
        rates[size] = calls * size / (time.perf_counter() - started)
    return rates


def inputs_for(sess, count: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    return [{i.name: rng.random([1, *i.shape[1:]], dtype=np.float32) for i in sess.get_inputs()}
            for _ in range(count)]


def drive(workers: int, items: list, call) -> float:
    """items/s when `workers` threads each process their share of `items` with `call`."""
    shares = [items[k::workers] for k in range(workers)]

    def work(share):
        for item in share:
            call(item)

    threads = [threading.Thread(target=work, args=(share,)) for share in shares]
    started = time.perf_counter()
    [t.start() for t in threads]
    [t.join() for t in threads]
    return len(items) / (time.perf_counter() - started)


def batched_call(sess):
    names = [o.name for o in sess.get_outputs()]

    def run(batch: list[dict[str, np.ndarray]]) -> list:
        feeds = {name: np.concatenate([item[name] for item in batch]) for name in batch[0]}
        outputs = sess.run(names, feeds)
        return [[out[k:k + 1] for out in outputs] for k in range(len(batch))]

    return run


def measure(path: Path, workers: int, count: int, batch: int) -> dict[str, float]:
    cores = os.cpu_count() or 1
    per_worker = max(1, cores // workers)
    single = session(path, per_worker)
    items = inputs_for(single, count)
    drive(workers, items[:8], lambda feeds: single.run(None, feeds))  # warm up
    results = {"single": drive(workers, items, lambda feeds: single.run(None, feeds))}
    for label, intra in (("batched-1", per_worker), (f"batched-{cores}", cores)):
        batcher = MicroBatcher(batched_call(session(path, intra)), batch, 0.002, producers=workers)
        drive(workers, items[:8], batcher)
        results[label] = drive(workers, items, batcher)
        results[label + " mean batch"] = batcher.mean_batch
        batcher.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--items", type=int, default=256)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--provider", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    import standins

    if args.provider == "cuda":
        PROVIDERS.insert(0, "CUDAExecutionProvider")

    work = Path(tempfile.mkdtemp())
    swapper = work / "inswapper_dynamic.onnx"
    standins.build_inswapper(swapper, dynamic_batch=True)
    models = {"mediapipe face mesh": asset_path(MODEL_FILES["landmarks"]),
              "mediapipe full-range detector": asset_path(MODEL_FILES["long_range"]),
              "inswapper stand-in": swapper}
    print(f"{args.provider}: {os.cpu_count()} cores; active providers "
          f"{session(models['mediapipe face mesh'], 1).get_providers()}; {args.threads} worker threads, "
          f"{args.items} items, batch <= {args.batch}; items/s and the ratio to `single`")
    for name, path in models.items():
        result = measure(path, args.threads, args.items, args.batch)
        base = result["single"]
        cells = [f"{k} {v:.1f}/s ({v / base:.2f}x)" for k, v in result.items() if "mean" not in k]
        means = [f"{k} {v:.1f}" for k, v in result.items() if "mean" in k]
        print(f"{name}: " + ", ".join(cells) + "; " + ", ".join(means))
        ceiling = kernel_ceiling(path, args.items)
        print("  ceiling, batches straight through one session: "
              + ", ".join(f"b{size} {rate:.0f}/s ({rate / base:.2f}x)" for size, rate in ceiling.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

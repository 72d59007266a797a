"""Face enhancer: all faces of a frame in one call (dynamic batch axis) vs one call per face, on this CPU.

    python benchmarks/enhancer_batching.py [--faces 4] [--rounds 3] [--size 512] [--convs 3] [--channels 32]

The enhancer is the tests' stand-in (exact interface: `input` (B,3,S,S) RGB in [-1,1] -> `output`) with a
stack of `--convs` 3x3 convolutions `--channels` wide in its graph, so each call does real convolution work
(GFLOPs per face printed; the real GFPGAN 1.4 is larger, so treat the absolute times as a floor) while the
output stays exact. `--convs 0` shows the per-call overhead alone. Faces are real (the astronaut) crops
through the product's `Enhancer` adapter. Each round times batched then unbatched on the same crops; the
best round of each is reported with the ratio (the order alternates per round). Ratios within one run are what count on a noisy machine.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import standins  # noqa: E402

from facefusion_batch.models.catalog import CATALOG  # noqa: E402
from facefusion_batch.processors.enhancer import Enhancer, EnhancerOptions  # noqa: E402


def session(path: Path, threads: int):
    from facefusion_batch.models.sessions import ort

    rt = ort()
    options = rt.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.intra_op_num_threads = threads
    return rt.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def crops(count: int, size: int) -> list[np.ndarray]:
    import cv2
    from skimage import data

    face = cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2BGR)[20:240, 150:330]
    return [cv2.resize(np.roll(face, 7 * i, axis=1), (size, size)) for i in range(count)]


def gflops(size: int, convs: int, channels: int) -> float:
    widths = [3] + [channels] * (convs - 1) + [3] if convs else []
    return sum(size * size * 9 * 2 * a * b for a, b in zip(widths, widths[1:])) / 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faces", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--convs", type=int, default=3)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    spec = CATALOG["gfpgan_1.4"]
    with tempfile.TemporaryDirectory() as tmp:
        adapters = {}
        for mode, dynamic in (("batched", True), ("unbatched", False)):
            path = standins.build_enhancer(Path(tmp) / f"{mode}.onnx", args.size, "identity", False, dynamic,
                                           args.convs, args.channels)
            adapters[mode] = Enhancer(session(path, args.threads), spec, EnhancerOptions())
        faces = crops(args.faces, args.size)
        for adapter in adapters.values():
            adapter.enhance(faces[:1])  # warm-up
        best = {mode: float("inf") for mode in adapters}
        for round_ in range(args.rounds):
            order = list(adapters.items())  # alternate which goes first: load drifts on a shared machine
            for mode, adapter in (order if round_ % 2 == 0 else order[::-1]):
                start = time.perf_counter()
                out = adapter.enhance(faces)
                best[mode] = min(best[mode], time.perf_counter() - start)
                assert len(out) == len(faces)
    print(f"enhancer stand-in {args.size}x{args.size}, {args.convs} convs x {args.channels} channels "
          f"({gflops(args.size, args.convs, args.channels):.2f} GFLOPs/face), {args.faces} faces, "
          f"{args.threads} threads, best of {args.rounds}")
    for mode, seconds in best.items():
        print(f"  {mode:10s} {seconds * 1000 / args.faces:8.1f} ms/face")
    print(f"  batched / unbatched time: {best['batched'] / best['unbatched']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

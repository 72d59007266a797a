"""CPU per frame of the processor chain alone: inside the model calls vs ffb's own work (warps, masks, pastes).

Runs the neural engine's chain over the frames of a clip on one thread, with one intra-op thread per model
call (so a call's CPU time on its thread is all of its compute), and prints per round: the thread's CPU per
frame, the part inside model calls, the rest (ffb's own), and the process's CPU (which adds OpenCV's worker
threads). CPU time, unlike wall time, is not inflated by other work on a shared machine.

    python benchmarks/standin_models.py /tmp/standins
    FFB_MODELS_PATH=/tmp/standins python benchmarks/chain_cpu.py --profile enhance.ini CLIP.mp4

The faces are detected once on the first frame and reused, so detection and tracking are left out.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from facefusion_batch.bench.worker import decode_frames  # noqa: E402
from facefusion_batch.models.sessions import SessionPool  # noqa: E402
from facefusion_batch.workflow.processor import prepare  # noqa: E402
from facefusion_batch.settings import load_settings  # noqa: E402
from facefusion_batch.timing import Timings  # noqa: E402
from facefusion_batch.video.probe import probe  # noqa: E402


def _process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("clip", type=Path, help="a video with one face (e.g. ffb benchmark's cached clip)")
    parser.add_argument("--profile", type=Path, help="settings (ini/TOML) naming the processors and masks")
    parser.add_argument("--source", type=Path, default=Path(__file__).resolve().parents[1] / "examples" / "source.jpg")
    parser.add_argument("--frames", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    # one frame thread, one inference slot per core: one intra-op thread per call
    flags = {"engine": "neural", "execution_thread_count": 1, "execution_inference_slots": os.cpu_count() or 1}
    settings = load_settings(args.profile, os.environ, flags).settings
    processor = prepare(settings, args.source, lambda line: print(line, file=sys.stderr))
    engine = processor.engine
    try:
        frames = decode_frames(args.clip, probe(args.clip), args.frames, settings.temp_path)
        faces = engine.detect(frames[0])
        if not faces:
            print(f"{args.clip}: no face on the first frame", file=sys.stderr)
            return 1
        for frame in frames[:3]:  # warm up: sessions, arenas, caches
            engine.swap(frame.copy(), faces, processor.source)
        pool: SessionPool | None = getattr(engine, "pool", None)
        if pool is None:
            print("the neural engine has no session pool to time", file=sys.stderr)
            return 1
        for round_ in range(args.rounds):
            pool.cpu_timings = model = Timings()
            work = [frame.copy() for frame in frames]
            wall, thread, process = time.perf_counter(), time.thread_time(), _process_cpu()
            for frame in work:
                engine.swap(frame, faces, processor.source)
            wall, thread = time.perf_counter() - wall, time.thread_time() - thread
            process = _process_cpu() - process
            in_models = sum(entry["seconds"] for entry in model.snapshot().values())
            per = 1000 / len(work)
            print(f"round {round_}: thread CPU {thread * per:.1f} ms/frame = models {in_models * per:.1f} + own "
                  f"{(thread - in_models) * per:.1f}; process CPU {process * per:.1f} (own incl. OpenCV threads "
                  f"{(process - in_models) * per:.1f}); wall {wall * per:.1f}")
        pool.cpu_timings = None
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Process workers against frame threads (and Ray on this one node), in one run: ratios, not absolute figures.

    python benchmarks/process_workers.py [--clips 6] [--seconds 2] [--long-seconds 12] [--resolution 360p]
                                         [--workers 2] [--engines offline neural] [--ray] [--json]
                                         [--providers 'cuda cpu'] [--threads N] [--convs 3 --channels 32]

For each engine (offline; neural: the stand-ins of benchmarks/standin_models.py, built into a temp dir),
runs two batches on fresh output and temp dirs: `--clips` short clips (copies of ffb benchmark's cached
clip of a real face) and one long clip of `--long-seconds`. Each batch goes through the local executor with
one thread per core (`threads`), then through `--executor processes` with `--workers` workers of
cores/workers threads each (`processes`), and with `--ray` through Ray on this machine with as many workers of
as many threads (`ray`, fractional GPUs on a GPU: 1/workers each; Ray is started by the executor for
each run and shut down after it, as `ffb run --executor ray` does). Reports wall time, start-up (until the
first target starts: Ray's own start, worker spawns, engine loads), frames per second over the wall and after start-up, and the
ratio processes/threads (above 1: processes faster). Progress on stderr, the table (or --json) on stdout.
On a GPU: `--providers 'cuda cpu'` and `--threads` (frame threads of each worker; the thread run gets
workers x threads), stand-ins of a real model's size with `--convs 4 --channels 64`.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from facefusion_batch.bench import clips
from facefusion_batch.bench.runner import default_source
from facefusion_batch.executors.local import LocalExecutor
from facefusion_batch.executors.processes import ProcessExecutor
from facefusion_batch.runner.driver import run_batch
from facefusion_batch.runner.progress import QuietReporter
from facefusion_batch.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]


class _FirstStart(QuietReporter):
    """A quiet Reporter that notes when the first target starts."""

    def __init__(self) -> None:
        self.first: float | None = None

    def start(self, name: str, total: int) -> None:
        self.first = self.first or time.perf_counter()


def run_once(kind: str, flags: dict[str, Any], spec: Path, source: Path, work: Path,
             profile: Path | None = None) -> dict[str, Any]:
    shutil.rmtree(work, ignore_errors=True)
    settings = load_settings(profile, {}, {**flags, "output_path": work / "out", "temp_path": work / "temp"}).settings
    reporter = _FirstStart()
    started = time.perf_counter()
    cpu_before = _children_cpu()
    if kind == "ray":
        from facefusion_batch.executors.ray_executor import RayExecutor

        chosen: Any = RayExecutor(settings, source)
    elif kind == "processes":
        chosen = ProcessExecutor(settings, source)
    else:
        chosen = LocalExecutor(settings, source)
    with chosen:
        result = run_batch(settings, [str(spec)], chosen, reporter)
    ended = time.perf_counter()
    if result.interrupted:
        raise KeyboardInterrupt
    if result.failed:
        raise SystemExit(f"the {kind} run failed: {[o.reason for o in result.outcomes if o.reason]}")
    frames = sum(o.frames for o in result.outcomes)
    busy = ended - (reporter.first or started)
    cpu = time.process_time() + _children_cpu() - cpu_before
    return {"executor": kind, "frames": frames, "wall_s": round(ended - started, 2),
            "startup_s": round((reporter.first or started) - started, 2), "wall_fps": round(frames / (ended - started), 1),
            "items_fps": round(frames / busy, 1), "cores_busy": round(cpu / (ended - started), 2)}


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _children_cpu() -> float:
    usage = os.times()
    return usage.children_user + usage.children_system


def build_standins(directory: Path, source: Path, convs: int, channels: int) -> Path:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import standin_models

    standin_models.build(directory, standin_models.bench_face(source), convs, channels)
    return directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--long-seconds", type=float, default=12.0)
    parser.add_argument("--resolution", default="360p", choices=list(clips.RESOLUTIONS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--engines", nargs="+", default=["offline", "neural"], choices=["offline", "neural"])
    parser.add_argument("--ray", action="store_true", help="also Ray on this machine, same workers and threads")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--providers", default="cpu", help="execution_providers of every run, e.g. 'cuda cpu'")
    parser.add_argument("--threads", type=int, default=0, help="frame threads per worker (0: cores / workers)")
    parser.add_argument("--convs", type=int, default=3)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--profile", type=Path, help="settings for every run (processors, masks)")
    args = parser.parse_args()
    source = default_source()
    if source is None:
        raise SystemExit("run from the ffb repository (needs examples/source.jpg)")
    cores = os.cpu_count() or 1
    per_worker = args.threads or max(1, cores // args.workers)
    cache = load_settings(None, {}, {}).settings.cache_path / "bench"
    short, _ = clips.ensure_clip(cache, args.resolution, args.seconds, source, True)
    long, _ = clips.ensure_clip(cache, args.resolution, args.long_seconds, source, True)
    kinds = ["threads", "processes"] + (["ray"] if args.ray else [])
    rows = []
    with tempfile.TemporaryDirectory(prefix="ffb-process-workers-") as directory:
        root = Path(directory)
        batch = root / "batch"
        batch.mkdir()
        for index in range(args.clips):
            shutil.copyfile(short, batch / f"clip{index}.mp4")  # copies: hard links are one target
        signal.signal(signal.SIGTERM, _interrupt)  # `timeout` cuts a run short: report what was measured
        interrupted = False
        try:
            for engine in args.engines:
                flags: dict[str, Any] = {"engine": engine, "execution_providers": args.providers}
                if engine == "neural":
                    flags["models_path"] = build_standins(root / "models", source, args.convs, args.channels)
                for label, spec in (("short clips", batch), ("long clip", long)):
                    for kind in kinds:
                        threads = (args.threads * args.workers if args.threads else cores) if kind == "threads" \
                            else per_worker
                        run_flags = {**flags, "execution_thread_count": threads, "workers": args.workers,
                                     "ray_workers": args.workers, "ray_num_cpus": per_worker / 2,
                                     # fractional GPUs: the workers share the GPU as the processes do
                                     "ray_num_gpus": 0 if args.providers == "cpu" else round(1 / args.workers, 3),
                                     "executor": {"threads": "local"}.get(kind, kind)}
                        print(f"process_workers: {engine}, {label}, {kind}", file=sys.stderr)
                        row = run_once("local" if kind == "threads" else kind, run_flags, spec, source, root / "work",
                                       args.profile)
                        row.update(engine=engine, batch=label, executor=kind,
                                   layout=f"1x{threads}" if kind == "threads" else f"{args.workers}x{threads}")
                        rows.append(row)
                        print(f"process_workers: {row}", file=sys.stderr)
        except KeyboardInterrupt:
            interrupted = True
    ratios = {}
    for engine in args.engines:
        for label in ("short clips", "long clip"):
            got = {r["executor"]: r for r in rows if r["engine"] == engine and r["batch"] == label}
            for kind in [k for k in kinds[1:] if k in got and "threads" in got]:
                ratios[f"{engine}, {label}: {kind}/threads"] = {
                    "wall": round(got["threads"]["wall_s"] / got[kind]["wall_s"], 2),
                    "after_startup": round(got[kind]["items_fps"] / got["threads"]["items_fps"], 2)}
    report = {"cores": cores, "providers": args.providers, "resolution": args.resolution, "clips": args.clips, "seconds": args.seconds,
              "long_seconds": args.long_seconds, "workers": args.workers, "ffmpeg": _ffmpeg_version(),
              "runs": rows, "ratios": ratios, "interrupted": interrupted}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{cores} cores, {args.resolution}; {args.clips} x {args.seconds:g} s clips, one {args.long_seconds:g} s clip")
    print(f"{'engine':8} {'batch':12} {'executor':10} {'layout':6} {'frames':>6} {'wall s':>7} {'start s':>7} "
          f"{'wall fps':>8} {'items fps':>9} {'cores':>5}")
    for r in rows:
        print(f"{r['engine']:8} {r['batch']:12} {r['executor']:10} {r['layout']:6} {r['frames']:>6} {r['wall_s']:>7} "
              f"{r['startup_s']:>7} {r['wall_fps']:>8} {r['items_fps']:>9} {r['cores_busy']:>5}")
    for name, ratio in ratios.items():
        print(f"{name}: {ratio['wall']}x wall, {ratio['after_startup']}x after start-up")


def _ffmpeg_version() -> str:
    from facefusion_batch.video.ffmpeg import ffmpeg_binary

    try:
        return subprocess.run([ffmpeg_binary(), "-version"], capture_output=True, text=True).stdout.split("\n")[0]
    except (OSError, IndexError):
        return "?"


if __name__ == "__main__":
    main()

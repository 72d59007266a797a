"""ffb vs FaceFusion on the same model files, the same clip and thread count: swapper alone, swapper + enhancer.

    python benchmarks/facefusion_baseline.py [--facefusion CHECKOUT --facefusion-python PYTHON]
        [--resolution 360p] [--seconds 4] [--rounds 2] [--threads 2] [--convs 3] [--channels 32]
        [--masks box occlusion] [--workdir DIR] [--providers cuda] [--ffb-args '--executor processes'] [--json]

On a GPU: `--providers cuda` (ffb gets 'cuda cpu', FaceFusion 'cuda') and `--threads 8` (FaceFusion 3.8.1's
default execution_thread_count); each run's GPU busy % and memory come from NVML when it answers, and the
cores busy from the run's CPU time (its process tree's).

Builds the stand-in models (benchmarks/standin_models.py: FaceFusion's file names and tensors, `.hash`
sidecars, real convolution work in hyperswap_1a_256 and gfpgan_1.4) and ffb benchmark's clip, then times
whole runs, best of `--rounds`, each in a fresh process with a fresh cache:

- `ffb run --engine neural --processors face_swapper [face_enhancer]` (needs the processors wired into the
  neural engine, issue 14);
- with `--facefusion`, `facefusion.py headless-run` of a FaceFusion 3.8.1 checkout (kept OUTSIDE this
  repository, run by its own interpreter/venv) with the same processors, models and thread count. The models
  are copied into the checkout's `.assets/models`, where FaceFusion looks for them, with the models only
  FaceFusion loads: its content analyser (nsfw_1/2/3, stand-ins that never flag) and face classifier (fairface).
  FaceFusion needs `ffmpeg` and `ffprobe` on PATH (e.g. Debian's; ffb uses its bundled one either way).

Prints wall seconds and frames per second per run, the ratios ffb / FaceFusion, and each tool's
swapper+enhancer / swapper-alone ratio. Not part of the product or CI.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import standin_models  # noqa: E402

CHAINS = {"swapper": ["face_swapper"], "swapper+enhancer": ["face_swapper", "face_enhancer"]}
SWAPPER, ENHANCER = "hyperswap_1a_256", "gfpgan_1.4"


def ffb_command(source: Path, clip: Path, output: Path, models: Path, processors: list[str], threads: int,
                masks: list[str], providers: str = "cpu", extra: list[str] | None = None) -> list[str]:
    ours = "cpu" if providers == "cpu" else f"{providers} cpu"
    return [sys.executable, "-m", "facefusion_batch", "run", "-s", str(source), "-t", str(clip), "-o", str(output),
            *(extra or []), "--engine", "neural", "--models-path", str(models), "--execution-providers", ours,
            "--execution-thread-count", str(threads), "--processors", *processors,
            "--face-swapper-model", SWAPPER, "--face-enhancer-model", ENHANCER, "--face-mask-types", *masks]


def facefusion_command(python: str, checkout: Path, source: Path, clip: Path, output: Path, processors: list[str],
                       threads: int, masks: list[str], providers: str = "cpu") -> list[str]:
    # FaceFusion 3.x's headless-run flags (facefusion/program.py); its defaults elsewhere.
    return [python, str(checkout / "facefusion.py"), "headless-run", "-s", str(source), "-t", str(clip),
            "-o", str(output), "--processors", *processors, "--face-swapper-model", SWAPPER,
            "--face-enhancer-model", ENHANCER, "--face-mask-types", *masks, "--execution-providers", providers,
            "--execution-thread-count", str(threads), "--face-detector-model", "yolo_face"]


def timed_run(command: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, dict]:
    """Wall seconds of `command`, and its GPU busy % / memory (NVML; None each without it) and cores busy;
    a failure ends the benchmark with its output's tail."""
    from facefusion_batch.bench.measure import GpuSampler

    before = os.times()
    with GpuSampler((0,)) as gpu:
        started = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        seconds = time.perf_counter() - started
    after = os.times()
    if done.returncode != 0:
        tail = "\n".join(done.stdout.strip().splitlines()[-15:])
        raise SystemExit(f"{' '.join(command[:4])} ... failed (exit {done.returncode}):\n{tail}")
    cpu = (after.children_user + after.children_system) - (before.children_user + before.children_system)
    return seconds, {**gpu.figures(), "cores_busy": round(cpu / seconds, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facefusion", type=Path, help="A FaceFusion 3.8.1 checkout (outside this repository).")
    parser.add_argument("--facefusion-python", default=sys.executable, help="The interpreter of FaceFusion's venv.")
    parser.add_argument("--resolution", default="360p")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--convs", type=int, default=3)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--masks", nargs="+", default=["box"], help="--face-mask-types for both tools.")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--providers", default="cpu", choices=("cpu", "cuda", "tensorrt"),
                        help="execution provider of both tools (ffb falls back to cpu after it)")
    parser.add_argument("--ffb-args", default="", help="more ffb run flags, e.g. '--executor processes'")
    parser.add_argument("--json", action="store_true", help="also print the results as one JSON line")
    args = parser.parse_args()
    from facefusion_batch.bench import clips

    work = args.workdir or Path(tempfile.mkdtemp(prefix="ffb-ff-baseline-"))
    source = ROOT / "examples" / "source.jpg"
    models = work / "models"
    standin_models.build(models, standin_models.bench_face(source), args.convs, args.channels)
    clip, _ = clips.ensure_clip(work / "clips", args.resolution, args.seconds, source, True)
    frames = clips.frame_count(args.seconds)
    tools = {"ffb": None}
    if args.facefusion:
        target = args.facefusion / ".assets" / "models"
        target.mkdir(parents=True, exist_ok=True)
        for path in models.iterdir():
            shutil.copy2(path, target / path.name)
        standin_models.build_facefusion_only(target)
        tools["facefusion"] = args.facefusion
    results: dict[tuple[str, str], float] = {}
    figures: dict[tuple[str, str], dict] = {}
    for round_ in range(args.rounds):
        for chain, processors in CHAINS.items():
            for tool in (tools if round_ % 2 == 0 else list(tools)[::-1]):  # alternate: the machine's load drifts
                run_dir = Path(tempfile.mkdtemp(prefix=f"{tool}-", dir=work))
                env = {**os.environ, "FFB_CACHE_PATH": str(run_dir / "cache"), "FFB_TEMP_PATH": str(run_dir / "tmp")}
                if tool == "ffb":
                    command = ffb_command(source, clip, run_dir / "out", models, processors, args.threads, args.masks,
                                          args.providers, args.ffb_args.split())
                    seconds, seen = timed_run(command, env)
                else:
                    command = facefusion_command(args.facefusion_python, args.facefusion, source, clip,
                                                 run_dir / f"out{clip.suffix}", processors, args.threads,
                                                 args.masks, args.providers)
                    seconds, seen = timed_run(command, env, cwd=args.facefusion)
                if seconds < results.get((tool, chain), float("inf")):
                    results[(tool, chain)], figures[(tool, chain)] = seconds, seen
                print(f"round {round_ + 1} {tool} {chain}: {seconds:.2f} s {seen}", file=sys.stderr, flush=True)
                shutil.rmtree(run_dir, ignore_errors=True)
    print(f"{args.resolution} clip, {frames} frames, one face; {args.threads} threads on {args.providers}; "
          f"best of {args.rounds}; ffb flags: {args.ffb_args or '(defaults)'}; "
          f"stand-ins: swapper {standin_models.gflops(256, args.convs, args.channels):.2f}, enhancer "
          f"{standin_models.gflops(512, args.convs, args.channels):.2f} GFLOPs/face; masks {' '.join(args.masks)}")
    for (tool, chain), seconds in results.items():
        seen = figures[(tool, chain)]
        busy = "-" if seen["gpu_busy_percent"] is None else f"{seen['gpu_busy_percent']:.0f} %"
        print(f"  {tool:10s} {chain:17s} {seconds:7.2f} s  {frames / seconds:6.1f} fps  GPU busy {busy}  "
              f"cores busy {seen['cores_busy']}")
    for tool in tools:
        chain_ratio = results[(tool, "swapper+enhancer")] / results[(tool, "swapper")]
        print(f"  {tool}: swapper+enhancer / swapper alone time {chain_ratio:.2f}")
    if "facefusion" in tools:
        for chain in CHAINS:
            speedup = results[("facefusion", chain)] / results[("ffb", chain)]
            print(f"  {chain}: FaceFusion time / ffb time {speedup:.2f}")
    if args.json:
        import json

        print(json.dumps({"resolution": args.resolution, "frames": frames, "providers": args.providers,
                          "threads": args.threads, "ffb_args": args.ffb_args,
                          "runs": [{"tool": tool, "chain": chain, "seconds": seconds, "fps": frames / seconds,
                                    **figures[(tool, chain)]} for (tool, chain), seconds in results.items()]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

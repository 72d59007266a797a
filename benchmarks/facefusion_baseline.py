"""ffb vs FaceFusion on the same model files, the same clip and 2 CPU threads: swapper alone, swapper + enhancer.

    python benchmarks/facefusion_baseline.py [--facefusion CHECKOUT --facefusion-python PYTHON]
        [--resolution 360p] [--seconds 4] [--rounds 2] [--threads 2] [--convs 3] [--channels 32]
        [--masks box occlusion] [--workdir DIR]

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
                masks: list[str]) -> list[str]:
    return [sys.executable, "-m", "facefusion_batch", "run", "-s", str(source), "-t", str(clip), "-o", str(output),
            "--engine", "neural", "--models-path", str(models), "--execution-providers", "cpu",
            "--execution-thread-count", str(threads), "--processors", *processors,
            "--face-swapper-model", SWAPPER, "--face-enhancer-model", ENHANCER, "--face-mask-types", *masks]


def facefusion_command(python: str, checkout: Path, source: Path, clip: Path, output: Path, processors: list[str],
                       threads: int, masks: list[str]) -> list[str]:
    # FaceFusion 3.x's headless-run flags (facefusion/program.py); its defaults elsewhere.
    return [python, str(checkout / "facefusion.py"), "headless-run", "-s", str(source), "-t", str(clip),
            "-o", str(output), "--processors", *processors, "--face-swapper-model", SWAPPER,
            "--face-enhancer-model", ENHANCER, "--face-mask-types", *masks, "--execution-providers", "cpu",
            "--execution-thread-count", str(threads), "--face-detector-model", "yolo_face"]


def timed_run(command: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    """Wall seconds of `command`; its output goes to stderr; a failure ends the benchmark with its tail."""
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        tail = "\n".join(done.stdout.strip().splitlines()[-15:])
        raise SystemExit(f"{' '.join(command[:4])} ... failed (exit {done.returncode}):\n{tail}")
    return seconds


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
    for round_ in range(args.rounds):
        for chain, processors in CHAINS.items():
            for tool in (tools if round_ % 2 == 0 else list(tools)[::-1]):  # alternate: the machine's load drifts
                run_dir = Path(tempfile.mkdtemp(prefix=f"{tool}-", dir=work))
                env = {**os.environ, "FFB_CACHE_PATH": str(run_dir / "cache"), "FFB_TEMP_PATH": str(run_dir / "tmp")}
                if tool == "ffb":
                    command = ffb_command(source, clip, run_dir / "out", models, processors, args.threads, args.masks)
                    seconds = timed_run(command, env)
                else:
                    command = facefusion_command(args.facefusion_python, args.facefusion, source, clip,
                                                 run_dir / f"out{clip.suffix}", processors, args.threads,
                                                 args.masks)
                    seconds = timed_run(command, env, cwd=args.facefusion)
                results[(tool, chain)] = min(results.get((tool, chain), float("inf")), seconds)
                print(f"round {round_ + 1} {tool} {chain}: {seconds:.2f} s", file=sys.stderr, flush=True)
                shutil.rmtree(run_dir, ignore_errors=True)
    print(f"{args.resolution} clip, {frames} frames, one face; {args.threads} threads on CPU; best of {args.rounds}; "
          f"stand-ins: swapper {standin_models.gflops(256, args.convs, args.channels):.2f}, enhancer "
          f"{standin_models.gflops(512, args.convs, args.channels):.2f} GFLOPs/face; masks {' '.join(args.masks)}")
    for (tool, chain), seconds in results.items():
        print(f"  {tool:10s} {chain:17s} {seconds:7.2f} s  {frames / seconds:6.1f} fps")
    for tool in tools:
        chain_ratio = results[(tool, "swapper+enhancer")] / results[(tool, "swapper")]
        print(f"  {tool}: swapper+enhancer / swapper alone time {chain_ratio:.2f}")
    if "facefusion" in tools:
        for chain in CHAINS:
            speedup = results[("facefusion", chain)] / results[("ffb", chain)]
            print(f"  {chain}: FaceFusion time / ffb time {speedup:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

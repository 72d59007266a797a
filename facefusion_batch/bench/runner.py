"""Runs `ffb benchmark`: makes or reuses the clips, runs each configuration on each clip in a fresh worker
process, and gathers the metrics (and compare/base ratios) into one result."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import facefusion_batch
from facefusion_batch.bench import clips, report
from facefusion_batch.errors import FfbError, SettingsError
from facefusion_batch.settings import load_settings


class BenchError(FfbError):
    """A benchmark run failed; carries the worker's exit code."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Config:
    label: str  # base | compare
    profile: Optional[Path]


@dataclass(frozen=True)
class Plan:
    resolutions: tuple[str, ...]
    configs: tuple[Config, ...]
    engine: Optional[str]
    seconds: float
    source: Path
    face: Path
    mirror: bool  # the clips show the face photo mirrored (when it is the source photo itself)
    clip_dir: Path


def parse_resolutions(names: Sequence[str]) -> tuple[str, ...]:
    """Clip sizes in the order given, each once; `A..B` stands for the ladder's sizes from A to B (240p..4k)."""
    sizes: list[str] = []
    for name in names:
        sizes += [clips.ALIASES.get(size, size) for size in _expand(_alias(name.strip().lower()))]
    return tuple(dict.fromkeys(sizes))


def _alias(name: str) -> str:
    """FaceFusion's size names (2160p) as ffb's, in a range too."""
    low, dots, high = name.partition("..")
    return clips.ALIASES.get(low, low) + dots + clips.ALIASES.get(high, high)


def _expand(name: str) -> list[str]:
    choices = f"choose from {' '.join(clips.RESOLUTIONS)}, or a range over {' '.join(clips.LADDER)} such as " \
              f"{clips.LADDER[0]}..{clips.LADDER[-1]}"
    if ".." not in name:
        if name not in clips.RESOLUTIONS:
            raise SettingsError(f"unknown resolution {name}; {choices}")
        return [name]
    low, _, high = name.partition("..")
    off = [end for end in (low, high) if end not in clips.LADDER]
    if off:
        raise SettingsError(f"range {name!r}: {' and '.join(repr(end) for end in off)} not on the ladder; {choices}")
    first, last = clips.LADDER.index(low), clips.LADDER.index(high)
    if first > last:
        raise SettingsError(f"range {name!r} runs downwards; write {high}..{low}")
    return list(clips.LADDER[first:last + 1])


def default_source() -> Optional[Path]:
    """examples/source.jpg of the repository in the working directory or around the installed package."""
    for root in (Path.cwd(), Path(facefusion_batch.__file__).resolve().parents[1]):
        candidate = root / "examples" / "source.jpg"
        if candidate.is_file():
            return candidate
    return None


def make_plan(resolutions: Sequence[str], engine: Optional[str], profile: Optional[Path],
              compare: Optional[Path], seconds: float, source: Optional[Path], face: Optional[Path]) -> Plan:
    """Check everything that can be checked before any clip is made or any worker started."""
    if not seconds > 0:
        raise SettingsError(f"--seconds must be above 0, got {seconds}")
    configs = [Config("base", profile)] + ([Config("compare", compare)] if compare else [])
    settings = [load_settings(c.profile, os.environ, {"engine": engine}).settings for c in configs]
    source = source or default_source()
    if source is None:
        raise SettingsError("ffb benchmark needs --source FACE_IMAGE (examples/source.jpg is used when run from "
                            "the ffb repository)")
    for path, flag in ((source, "--source"), (face, "--face")):
        if path is not None and not path.is_file():
            raise SettingsError(f"{path}: no such image ({flag})")
    return Plan(parse_resolutions(resolutions or ["360p", "720p"]), tuple(configs), engine, seconds, source,
                face or source, face is None, settings[0].cache_path / "bench")


def run_worker(clip: Path, plan: Plan, config: Config) -> dict[str, Any]:
    """Metrics of one configuration on one clip, from a fresh `python -m facefusion_batch.bench.worker`."""
    with tempfile.TemporaryDirectory(prefix="ffb-bench-result-") as directory:
        result = Path(directory) / "result.json"
        command = [sys.executable, "-m", "facefusion_batch.bench.worker", "--clip", str(clip),
                   "--source", str(plan.source), "--result", str(result)]
        command += ["--profile", str(config.profile)] if config.profile else []
        command += ["--engine", plan.engine] if plan.engine else []
        process = subprocess.Popen(command, stdout=2)  # stdout stays free for --json
        try:
            code = process.wait()
        except KeyboardInterrupt:  # the worker got the same Ctrl-C: let it remove its temp files
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            raise
        if code != 0 or not result.exists():
            raise BenchError(f"the {config.label} run on {clip.name} failed (exit {code}); the worker's error "
                             "is above", code if 0 < code < 130 else 1)
        return json.loads(result.read_text(encoding="utf-8"))


def run(plan: Plan, progress: Callable[[str], None]) -> dict[str, Any]:
    """Every configuration on every resolution; runs of one resolution follow each other, so the machine's
    state drifts as little as possible between the runs that a ratio compares."""
    runs: dict[str, dict[str, Any]] = {c.label: {} for c in plan.configs}
    for number, resolution in enumerate(plan.resolutions, 1):
        progress(f"size {number}/{len(plan.resolutions)}: {resolution}")
        clip, made = clips.ensure_clip(plan.clip_dir, resolution, plan.seconds, plan.face, plan.mirror)
        progress(f"{resolution}: {'made' if made else 'cached'} clip {clip}")
        for config in plan.configs:
            progress(f"{resolution} {config.label}: running ({config.profile or 'default settings'})")
            metrics = runs[config.label][resolution] = run_worker(clip, plan, config)
            progress(f"{resolution} {config.label}: {metrics['e2e_fps']:.1f} fps end-to-end, "
                     f"{metrics['model_fps']:.1f} fps model-bound")
            if abs(metrics["faces_per_frame"] - 1) > 0.005:
                progress(f"{resolution} {config.label}: warning: {metrics['faces_per_frame']:.2f} faces swapped "
                         "per frame in a one-face clip (a missed face or a false detection): stage times "
                         "cover a different amount of work than the other runs")
    compare = runs.get("compare")
    return {
        "resolutions": list(plan.resolutions), "seconds": plan.seconds, "fps": clips.FPS,
        "engine": plan.engine, "source": str(plan.source), "face": str(plan.face), "face_mirrored": plan.mirror,
        "configs": {c.label: {"profile": str(c.profile) if c.profile else None} for c in plan.configs},
        "runs": runs, "ratios": report.ratios(runs["base"], compare) if compare is not None else None,
    }


def render(result: dict[str, Any]) -> str:
    """The human-readable report: what ran, the table, and the note on stage times."""
    first = result["runs"]["base"][result["resolutions"][0]]
    frames = first["frames"] // first["targets"]
    lines = [f"engine {first['engine']} on {', '.join(first['providers'])}, {first['threads']} threads; "
             f"batch of {first['targets']} targets x {frames} frames ({result['seconds']:g} s at {result['fps']} fps)"]
    for label, config in result["configs"].items():
        lines.append(f"{label}: {config['profile'] or 'default settings'}")
    rows = report.table_rows(result["resolutions"], result["runs"]["base"], result["runs"].get("compare"))
    return "\n".join(lines) + "\n\n" + report.render(rows) + "\n" + "\n".join(bound_lines(result)) + "\n" \
        + report.NOTE + "\n"


def bound_lines(result: dict[str, Any]) -> list[str]:
    """Per size and configuration, what limits the run; then the decoder and encoder used, and the GPU figures'
    absence when NVML had none."""
    lines = []
    for label, runs in result["runs"].items():
        for resolution in result["resolutions"]:
            metrics = runs.get(resolution)
            if metrics and metrics.get("bound"):
                lines.append(f"bound, {resolution} {label}: {metrics['bound']} ({metrics['bound_reason']})")
    first = result["runs"]["base"][result["resolutions"][0]]
    for key in ("decoder", "encoder", "nvdec", "nvenc"):
        if first.get(key):
            lines.append(f"{key}: {first[key]}")
    if first.get("gpu_reason"):
        lines.append(f"GPU figures: none ({first['gpu_reason']})")
    return lines

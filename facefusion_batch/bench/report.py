"""Benchmark results as a plain-text table and compare/base ratios (pure functions)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from facefusion_batch.bench.model_times import model_names

Runs = Mapping[str, Mapping[str, Any]]  # resolution -> metrics of one run


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    digits: int


METRICS: tuple[Metric, ...] = (
    Metric("e2e_fps", "end-to-end fps", 1),
    Metric("model_fps", "model-bound fps (frames in memory)", 1),
    Metric("io_fps", "decode+encode-only fps (frames passed through)", 1),
    Metric("decode_fps", "decode-only fps", 1),
    Metric("bound_headroom", "end-to-end / the bound's fps", 2),
    Metric("gpu_busy_percent", "GPU busy % (NVML, mean)", 0),
    Metric("gpu_memory_mb", "GPU memory in use MB (NVML, peak)", 0),
    Metric("io_ffmpeg_cpu_ms", "CPU ms/frame, ffmpeg decode+encode alone", 1),
    Metric("decode_ms", "decode ms/frame", 2),
    Metric("detect_ms", "detect ms/frame", 2),
    Metric("track_ms", "track ms/frame", 2),
    Metric("swap_ms", "swap ms/frame (incl. paste)", 2),
    Metric("paste_ms", "paste ms/frame", 2),
    Metric("encode_ms", "encode ms/frame (incl. mux)", 2),
    Metric("verify_ms", "verify ms/frame", 2),
    Metric("watermark_ms", "invisible watermark ms/frame", 2),
    Metric("gate_ms", "content gate ms/frame", 2),
    Metric("model_compute_ms", "model calls ms/frame (summed)", 2),
    Metric("model_bound_ms", "model-bound ms/frame (compute / cores)", 2),
    Metric("model_calls_cpu_ms", "model calls CPU ms/frame (summed)", 2),
    Metric("model_bound_cpu_ms", "model-bound ms/frame (CPU / cores)", 2),
    Metric("cpu_over_model_cpu", "all CPU / model CPU per frame", 3),
    Metric("cpu_ms", "CPU ms/frame, ffb process", 1),
    Metric("ffmpeg_cpu_ms", "CPU ms/frame, ffmpeg (decode+encode)", 1),
    Metric("model_cpu_ms", "CPU ms/frame, model-bound pass", 1),
    Metric("cores_busy", "cores busy on average", 2),
    Metric("detector_calls_per_frame", "detector calls/frame", 3),
    Metric("faces_per_frame", "faces swapped/frame (clip has 1)", 2),
    Metric("peak_rss_mb", "peak RSS MB", 0),
    Metric("peak_temp_mb", "peak temp disk MB", 1),
    Metric("second_target_start_ms", "2nd target start ms (to 1st frame in)", 0),
    Metric("second_target_probe_ms", "  of which probing ms", 0),
    Metric("second_target_first_frame_ms", "2nd target 1st frame done ms", 0),
    Metric("startup_ms", "startup ms (engine + source)", 0),
)
# Per model (rows after METRICS): (key in the run's "models" entry, label, digits).
MODEL_METRICS: tuple[tuple[str, str, int], ...] = (("ms_per_face", "ms/face", 2), ("calls_per_frame", "calls/frame", 3))
NOTE = ("Stage times are per frame summed over threads (stages overlap, so they can add up to more than "
        "1000/fps). Model rows: each model's inference time per face swapped (all its calls, batched or not), "
        "from the session pool's timings; model-bound = the models' own compute spread over the cores their "
        "calls may use at once (by wall time, which grows when other work holds the cores; by CPU time, which doesn't, "
        "with one intra-op thread per call); all CPU / model CPU is end to end over model-bound on busy cores.")


def ratio(base: Any, compare: Any) -> float | None:
    """compare / base; None when either is missing or base is zero."""
    if not isinstance(base, (int, float)) or not isinstance(compare, (int, float)) or base == 0:
        return None
    return compare / base


def ratios(base: Runs, compare: Runs) -> dict[str, dict[str, float | None]]:
    """Per resolution run by both, compare/base for every metric of the table."""
    return {resolution: {m.key: ratio(base[resolution].get(m.key), compare[resolution].get(m.key))
                         for m in METRICS}
            for resolution in base if resolution in compare}


def _cell(value: Any, digits: int) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{value:.{digits}f}"


def _ratio_cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def table_rows(resolutions: Sequence[str], base: Runs, compare: Runs | None = None) -> list[list[str]]:
    """Header row, then one row per metric that any run measured: value per resolution, or base, compare
    and compare/base per resolution."""
    runs = [base] + ([compare] if compare is not None else [])
    header = ["metric"]
    for resolution in resolutions:
        header += [resolution] if compare is None else [f"{resolution} base", f"{resolution} compare", "ratio"]
    rows = [header]
    for metric in METRICS:
        if all(run[r].get(metric.key) is None for run in runs for r in resolutions if r in run):
            continue
        row = [metric.label]
        for resolution in resolutions:
            row += [_cell(run.get(resolution, {}).get(metric.key), metric.digits) for run in runs]
            if compare is not None:
                row.append(_ratio_cell(ratio(base.get(resolution, {}).get(metric.key),
                                             compare.get(resolution, {}).get(metric.key))))
        rows.append(row)
    for name in model_names([run[r] for run in runs for r in resolutions if r in run]):
        for key, label, digits in MODEL_METRICS:
            def value(run: Runs, resolution: str) -> Any:
                return ((run.get(resolution, {}).get("models") or {}).get(name) or {}).get(key)

            row = [f"model {name} {label}"]
            for resolution in resolutions:
                row += [_cell(value(run, resolution), digits) for run in runs]
                if compare is not None:
                    row.append(_ratio_cell(ratio(value(base, resolution), value(compare, resolution))))
            rows.append(row)
    return rows


def render(rows: list[list[str]]) -> str:
    """Rows as aligned plain text: the label column left-aligned, numbers right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines) + "\n"

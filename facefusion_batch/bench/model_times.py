"""Per-model inference times of a benchmark run, from the session pool's timings (pure functions).

The pool times every `run` of every model by model name (`GuardedSession`), so whatever models an engine
opens (detector, recogniser, swapper, enhancer, occluder, parser, ...) show up here without a second timing
system. A call's seconds are its wall time, which on CPU keeps `intra_op_threads` cores busy; the models'
own compute spread over the cores they may use at once is the run's model-bound time per frame: the fastest
the run could go if the models were all it did.
"""
from __future__ import annotations

from typing import Any, Mapping


def model_times(timings: Mapping[str, Mapping[str, float]], frames: int, faces: int, inference_slots: int,
                intra_op_threads: int, cpus: int,
                cpu_timings: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, Any]:
    """{"models": {name: calls, ms per call, ms per face, calls per frame}, "model_compute_ms": the summed
    call time per frame, "model_cores": the cores the calls may use at once, "model_bound_ms": the compute's
    core time per frame spread over those cores, "model_calls_cpu_ms" / "model_bound_cpu_ms": the same from
    the calls' CPU time on their calling threads (`cpu_timings`), None unless each call has one intra-op
    thread (then that CPU time is all of its compute)}.

    A call's wall time includes waiting for a core that other work holds (ffb's own threads, ffmpeg, other
    processes), so on a busy machine the wall-based model-bound time grows with everything else; the CPU-based
    one doesn't."""
    models: dict[str, dict[str, float | None]] = {}
    for name, entry in sorted(timings.items()):
        calls, seconds = int(entry["count"]), float(entry["seconds"])
        if calls == 0:
            continue
        models[name] = {"calls": calls, "ms_per_call": seconds * 1000 / calls,
                        "ms_per_face": seconds * 1000 / faces if faces else None,
                        "calls_per_frame": calls / frames if frames else None}
    total = sum(float(entry["seconds"]) for entry in timings.values())
    cores = max(1, min(cpus, inference_slots * intra_op_threads))
    cpu_ms = None
    if cpu_timings is not None and intra_op_threads == 1 and frames:
        cpu_ms = sum(float(entry["seconds"]) for entry in cpu_timings.values()) * 1000 / frames
    return {"models": models,
            "model_compute_ms": total * 1000 / frames if frames else None,
            "model_cores": cores,
            "model_bound_ms": total * intra_op_threads * 1000 / frames / cores if frames else None,
            "model_calls_cpu_ms": cpu_ms,
            "model_bound_cpu_ms": None if cpu_ms is None else cpu_ms / cores}


def model_names(runs: list[Mapping[str, Any]]) -> list[str]:
    """Every model timed in any of `runs` (metrics of one run each), in first-seen order."""
    names: dict[str, None] = {}
    for run in runs:
        names.update(dict.fromkeys(run.get("models") or {}))
    return list(names)

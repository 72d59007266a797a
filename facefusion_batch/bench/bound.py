"""What limits a benchmark run: the bound, named from the run's own limits (pure functions).

A video runs through two paths that overlap: decode -> frames -> encode (the IO path), and the frame
processor (models plus the CPU-side per-face work around them: crops, warps, masks, pastes). The benchmark
measures each alone: decode only, decode+encode with frames passed through untouched, the processor alone on
frames in memory, and the models' own compute. The slower path sets the pace; within it, the part whose
own limit is close to the path's names the bound.
"""
from __future__ import annotations

from dataclasses import dataclass

BOUNDS = ("models", "CPU-side per-face work", "decoder", "encoder")
CLOSE = 0.85  # a part whose own limit is within 15 % of its path's is what limits that path


@dataclass(frozen=True)
class Bound:
    name: str  # one of BOUNDS
    reason: str  # the figures that name it
    headroom: float | None  # end to end over the bound's rate (1.0: the run goes as fast as its bound allows)


def name_bound(e2e_fps: float, processor_fps: float, models_fps: float | None, io_fps: float,
               decode_fps: float, cores_busy: float | None = None, cores: int | None = None) -> Bound:
    """The bound of a run from its limits: `processor_fps` (the frame processor alone, frames in memory),
    `models_fps` (the models' compute alone; None: not measured), `io_fps` (decode + encode, frames passed
    through), `decode_fps` (decode alone)."""
    if processor_fps <= io_fps:
        if models_fps is not None and processor_fps < CLOSE * models_fps:
            name = "CPU-side per-face work"
            why = (f"the frame processor alone runs at {processor_fps:.1f} fps, its models alone at "
                   f"{models_fps:.1f} fps: the work around the models holds it back")
        else:
            name = "models"
            why = (f"the frame processor alone runs at {processor_fps:.1f} fps"
                   + (f", close to its models alone ({models_fps:.1f} fps)" if models_fps is not None else ""))
        why += f"; decode+encode alone at {io_fps:.1f} fps"
        limit = processor_fps
    else:
        if io_fps >= CLOSE * decode_fps:
            name = "decoder"
            why = f"decode alone runs at {decode_fps:.1f} fps, decode+encode at {io_fps:.1f} fps"
        else:
            name = "encoder"
            why = f"decode+encode alone runs at {io_fps:.1f} fps while decode alone runs at {decode_fps:.1f} fps"
        why += f"; the frame processor alone at {processor_fps:.1f} fps"
        limit = io_fps
    headroom = e2e_fps / limit if limit > 0 else None
    why += f"; end to end {e2e_fps:.1f} fps"
    if cores_busy is not None and cores and cores_busy >= 0.9 * cores:
        why += f" with every core busy ({cores_busy:.1f} of {cores}): each limit was measured on cores the others share"
    return Bound(name, why, headroom)


def models_fps(model_bound_ms: float | None) -> float | None:
    """The models' own rate from their compute per frame spread over the cores they may use."""
    return 1000.0 / model_bound_ms if model_bound_ms else None

"""What one target came to: its `Outcome` (the run's summary lists one per target)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from facefusion_batch.targets import Target
from facefusion_batch.workflow import guard
from facefusion_batch.workflow.identity import Changed

STATUSES = ("done", "no_face", "skipped", "blocked", "failed")
NO_FACE = "no face found; copied through unchanged"


@dataclass
class Outcome:
    target: str
    status: str  # done | no_face | skipped | blocked | failed
    output: str | None = None
    reason: str = ""
    frames: int = 0
    seconds: float = 0.0
    detector_calls: int = 0
    profiles_left: int = 0  # face-frames turned too far to swap, left as they are (the reason says so too)
    content_gate: str = ""  # checked (classifier) | not available | off by setting; "" when not asked
    watermark: str = ""  # the invisible watermark's payload (8 hex digits) in the output's frames, "" for none
    # Why it failed when that is no fault of the target's (the next run does it): "output-full" or
    # "temp-full" (a full disk), "changed" (the file changed while it was processed: nothing published).
    cause: str = ""


def failed(target: Target, exc: Exception, temp_root: Path, started: float, content_gate: str = "") -> Outcome:
    """A target's failure: one line saying why, and the time it took; a full disk says which, and that the
    next run does it."""
    disk = guard.full_disk(exc, temp_root, target.output)
    if disk and target.kind == "image":
        disk = "output"  # an image writes nothing in temp_path
    reason = (guard.disk_full_reason(target.path, exc, temp_root, target.output, disk)
              or guard.failure_reason(target.path, exc))
    cause = f"{disk}-full" if disk else "changed" if isinstance(exc, Changed) else ""
    return Outcome(str(target.path), "failed", reason=reason, seconds=time.perf_counter() - started,
                   content_gate=content_gate, cause=cause)

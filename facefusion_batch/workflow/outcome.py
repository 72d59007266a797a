"""What one target came to: its `Outcome` (the run's summary lists one per target)."""
from __future__ import annotations

from dataclasses import dataclass

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

"""Machine-readable marking of outputs as AI-modified (EU AI Act, Article 50: synthetic media must be
marked in a machine-readable way). On by default; `output_marking = false` turns it off. Signed C2PA
content credentials on top of these tags are in `facefusion_batch.provenance`."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Sequence

from facefusion_batch.version import __version__

# IPTC digital source type for media edited with a trained model.
DIGITAL_SOURCE_TYPE = "http://cv.iptc.org/newscodes/digitalsourcetype/compositeWithTrainedAlgorithmicMedia"
# How the comment tag starts: the one tag every container keeps (AVI keeps no other of these).
COMMENT_PREFIX = "AI-modified: "


def marking_tags(engine: str, models: Sequence[str], when: datetime | None = None) -> dict[str, str]:
    """Container tags for a modified output."""
    stamp = (when or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "comment": f"{COMMENT_PREFIX}faces swapped by ffb {__version__} ({engine} engine) at {stamp}",
        "ai_modified": "true",
        "ai_tool": f"ffb {__version__}",
        "ai_engine": engine,
        "ai_models": ",".join(models),
        "ai_time": stamp,
        "digital_source_type": DIGITAL_SOURCE_TYPE,
    }

"""ffb: batch face swap for videos and images. `facefusion_batch.FaceSwapper(source)` loads once and
processes batches; `facefusion_batch.run(...)` runs one batch (see `api`)."""
from __future__ import annotations

from typing import Any

from facefusion_batch.version import __version__

__all__ = ["FaceSwapper", "run", "Summary", "Settings", "load_settings", "__version__"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: `import facefusion_batch` (and the CLI's start) stays light.
    if name in ("FaceSwapper", "run", "Summary"):
        from facefusion_batch import api

        return getattr(api, name)
    if name in ("Settings", "load_settings"):
        from facefusion_batch import settings

        return getattr(settings, name)
    raise AttributeError(f"module 'facefusion_batch' has no attribute {name!r}")

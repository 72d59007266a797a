"""Executors: where the targets of a batch are processed.

`local` (the default, `executors.local`) processes the targets in this process. `ray` spreads the same batch over a Ray
cluster (`executors.ray_executor`): Ray actors each hold one loaded engine, take work items from the driver
(whole targets, or frame-range segments of long videos), and the driver keeps the lock, the journal, the
progress and the summary exactly as the local executor does.
"""
from __future__ import annotations

from types import ModuleType

from facefusion_batch.errors import SettingsError

INSTALL_RAY = "pip install 'facefusion-batch[ray]' (in a checkout: pip install -e '.[ray]')"


def require_ray() -> ModuleType:
    """The `ray` module, or a SettingsError that says how to install it."""
    try:
        import ray
    except ImportError:
        raise SettingsError(f"--executor ray needs Ray, which is not installed: {INSTALL_RAY}") from None
    return ray

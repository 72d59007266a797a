"""System memory limit. RLIMIT_DATA bounds the process's writable private memory (heap and anonymous
mappings) but not reserved-only address space, so CUDA's large virtual reservations still work, unlike
RLIMIT_AS, which breaks CUDA initialisation."""
from __future__ import annotations

import sys


def apply_memory_limit(gigabytes: int) -> bool:
    """Limit this process's data segment to `gigabytes` GB; return whether a limit was set."""
    if gigabytes <= 0 or not sys.platform.startswith(("linux", "darwin")):
        return False
    import resource

    limit = gigabytes * 1024 ** 3
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    return True

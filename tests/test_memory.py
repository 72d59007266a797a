import subprocess
import sys

import pytest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA semantics checked on Linux")
def test_memory_limit_stops_large_allocations_in_this_process():
    code = (
        "from facefusion_batch.memory import apply_memory_limit\n"
        "assert apply_memory_limit(1)\n"
        "try:\n"
        "    block = bytearray(3 * 1024 ** 3)\n"
        "except MemoryError:\n"
        "    print('limited')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.stdout.strip() == "limited", result.stderr


def test_zero_means_no_limit():
    from facefusion_batch.memory import apply_memory_limit

    assert apply_memory_limit(0) is False

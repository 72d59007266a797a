import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from facefusion_batch.errors import MediaError
from facefusion_batch.workflow.frames import Spool, load, ordered_map


def test_ordered_map_keeps_order_and_bounds_in_flight():
    active, peak, lock = [0], [0], threading.Lock()

    def work(i):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.002 * (i % 3))
        with lock:
            active[0] -= 1
        return i * i

    consumed = []

    def items():
        for i in range(40):
            consumed.append(i)
            yield (i,)

    with ThreadPoolExecutor(4) as pool:
        results = []
        for value in ordered_map(pool, work, items(), in_flight=3):
            results.append(value)
            assert len(consumed) - len(results) <= 3, "never more than in_flight items pulled ahead"
    assert results == [i * i for i in range(40)]
    assert peak[0] <= 3


def test_temp_spool_writes_frames_and_load_removes_them(tmp_path):
    frames = [np.full((8, 8, 3), i, np.uint8) for i in range(6)]
    spool = Spool(iter(frames), "temp", tmp_path, "bmp", ahead=2)
    loaded = []
    for item, thumb in spool:
        assert item.exists() and thumb.dtype == np.float32
        loaded.append(load(item))
        assert not item.exists()
    spool.close()
    assert [int(f[0, 0, 0]) for f in loaded] == list(range(6))


def test_spool_hands_reader_errors_to_the_consumer(tmp_path):
    def broken():
        yield np.zeros((2, 2, 3), np.uint8)
        raise MediaError("decoder died")

    spool = Spool(broken(), "memory", tmp_path, "bmp", ahead=1)
    with pytest.raises(MediaError, match="decoder died"):
        list(spool)
    spool.close()

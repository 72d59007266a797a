"""The process executor's plan: how many worker processes, and which GPU each one's sessions use, from the
cores, the GPUs and their free memory (fake hardware: no GPU is needed)."""
from __future__ import annotations

import pytest

from facefusion_batch.concurrency import MAX_WORKERS_PER_GPU, WORKER_GPU_MIB, spread, worker_devices
from facefusion_batch.errors import SettingsError
from facefusion_batch.settings import load_settings

GIB = 1024


def settings(**flags):
    return load_settings(None, {}, flags).settings


def gpu(ids: str, **flags):
    return settings(execution_providers="cuda cpu", executor="processes", execution_device_ids=ids, **flags)


def test_on_cpu_one_worker_per_thread_count_of_cores():
    assert worker_devices(settings(execution_thread_count=4), 16, {}) == (0, 0, 0, 0)
    assert worker_devices(settings(execution_thread_count=8), 2, {}) == (0,), "never none"
    assert worker_devices(settings(execution_thread_count=1, workers=2), 2, {}) == (0, 0), "the setting wins"


def test_four_big_gpus_are_each_given_workers_by_memory_up_to_the_cores():
    free = {i: 80 * GIB for i in range(4)}
    assert worker_devices(gpu("0 1 2 3"), 64, free) == tuple(i for i in range(4) for _ in range(MAX_WORKERS_PER_GPU))
    assert worker_devices(gpu("0 1 2 3"), 16, free) == (0, 0, 1, 1, 2, 2, 3, 3), "two cores a worker"
    assert worker_devices(gpu("0 1 2 3"), 2, free) == (0, 1, 2, 3), "one a device at least"


def test_a_gpu_with_less_free_memory_gets_fewer_workers():
    free = {0: 3 * WORKER_GPU_MIB + 100, 1: WORKER_GPU_MIB // 2, 2: None}
    # device 1 has room for less than one: it still gets one (its load fails loudly if it does not fit);
    # device 2's memory is unknown: one
    assert worker_devices(gpu("0 1 2"), 64, free) == (0, 0, 0, 1, 2)
    assert worker_devices(gpu("2 0"), 64, free) == (2, 0, 0, 0), "only the devices asked for, in their order"


def test_a_worker_count_is_spread_evenly_over_the_devices():
    assert worker_devices(gpu("0 1 2 3", workers=6), 2, {}) == (0, 0, 1, 1, 2, 3)
    assert worker_devices(gpu("3 1", workers=3), 2, {}) == (3, 3, 1)
    assert spread(5, {7: 1, 8: 10}) == (7, 8, 8, 8, 8), "a full device is skipped"
    assert spread(3, {0: 1}) == (0, 0, 0), "over the room when nothing has any left"


@pytest.mark.parametrize("flags, says", [
    ({"execution_device_ids": "0 1"}, "names several GPUs but execution_providers is cpu only"),
    ({"execution_device_ids": "0 1", "execution_providers": "cuda"}, "add --executor processes"),
    ({"execution_device_ids": "1 1", "execution_providers": "cuda", "executor": "processes"}, "each GPU once"),
    ({"execution_device_ids": "0 65", "execution_providers": "cuda", "executor": "processes"}, "out of range"),
])
def test_several_devices_where_nothing_would_use_them_are_refused(flags, says):
    with pytest.raises(SettingsError, match=says):
        settings(**flags)


def test_the_workers_sessions_each_use_their_device(monkeypatch):
    """Each worker process is given settings naming its one device (what its sessions' device_id is)."""
    from facefusion_batch.executors.process_pool import ProcessPool

    pool = ProcessPool(gpu("0 1"), lambda text: None, (0, 1, 1))
    assert [s.settings.execution_device_id for s in pool.slots] == [0, 1, 1]
    assert [s.settings.execution_device_ids for s in pool.slots] == [(0,), (1,), (1,)]

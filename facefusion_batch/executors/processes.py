"""The process executor: worker processes on this machine, each with its own engine and sessions, spread
over its GPUs (execution_device_ids).

Frames of one video on threads share one Python interpreter: the per-face work around the models (warps,
masks, pastes) then waits on the GIL (docs/performance.md). Processes don't share it. The scheduling is
`pooled.PoolExecutor`'s (the Ray executor's too): whole targets, long videos split into segments one per
free worker and joined, a lost item retried on another worker; the pool is `process_pool.ProcessPool`.
"""
from __future__ import annotations

import os
from typing import Callable

from facefusion_batch.concurrency import worker_devices
from facefusion_batch.executors.base import Work
from facefusion_batch.executors.pooled import PoolExecutor
from facefusion_batch.executors.process_pool import ProcessPool
from facefusion_batch.workflow.processor import Sources
from facefusion_batch.settings import Settings


class ProcessExecutor(PoolExecutor):
    kind = "process"
    retries_setting = "worker_retries"
    comeback = "what ended them is fixed (see the messages above)"

    def __init__(self, settings: Settings, source: Sources, lost_signal: Callable[[], None] | None = None,
                 free_mib: Callable[[], dict[int, int | None]] | None = None) -> None:
        """`free_mib`: each GPU's free memory by index (default: nvidia-smi's, asked only for a GPU run)."""
        super().__init__(settings, source, lost_signal, 0, settings.worker_retries)
        self._free_mib = free_mib or gpu_free_mib

    def _open(self, work: Work) -> ProcessPool:
        gpu = any(p != "cpu" for p in self.settings.execution_providers)
        free = self._free_mib() if gpu and self.settings.workers == 0 else {}
        devices = worker_devices(self.settings, os.cpu_count() or 1, free)
        return ProcessPool(self.remote_settings, work.message, devices)


def gpu_free_mib() -> dict[int, int | None]:
    """Free memory of each NVIDIA GPU by nvidia-smi index; empty when nvidia-smi can't say."""
    from facefusion_batch.hardware import HardwareError, query_nvidia_smi

    try:
        gpus, _ = query_nvidia_smi()
    except HardwareError:
        return {}
    return {gpu.index: gpu.memory_free_mib for gpu in gpus}

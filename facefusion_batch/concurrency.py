"""How much runs at once, derived in one place from the settings and the machine.

Every thread pool, semaphore, session and batcher takes its width from `concurrency_of(settings)`, and
`ffb run --print-settings` shows the same figures, so what runs is what is shown.
"""
from __future__ import annotations

import functools
import os
from dataclasses import asdict, dataclass

from facefusion_batch.settings import Settings


@dataclass(frozen=True)
class Concurrency:
    frame_threads: int  # threads processing a video's frames (execution_thread_count)
    frames_in_flight: int  # frames submitted and not yet written, per video
    inference_slots: int  # model calls at once (the accelerator semaphore)
    intra_op_threads: int  # ONNX Runtime threads inside one model call
    micro_batch: int  # crops per batched model call (1: micro-batching off)
    batcher_producers: int  # threads feeding a micro-batcher (a batch goes once each has given one)
    ray_workers: int  # Ray workers asked for (0: as many as the cluster's GPUs or CPUs allow)
    opencv_threads: int = 1  # OpenCV's threads inside one warp/blur/resize: the cores the frame threads leave

    def rows(self) -> list[dict[str, str]]:
        """Rows for --print-settings (section `concurrency`, origin `derived`)."""
        return [{"section": "concurrency", "key": key, "value": str(value), "origin": "derived"}
                for key, value in asdict(self).items()]


@functools.lru_cache(maxsize=32)
def concurrency_of(settings: Settings, cpus: int | None = None) -> Concurrency:
    """The concurrency of a run with these settings on a machine with `cpus` processors (default: this one)."""
    cpus = cpus or os.cpu_count() or 1
    gpu = any(p != "cpu" for p in settings.execution_providers)
    threads = settings.execution_thread_count
    if settings.execution_inference_slots > 0:
        slots = settings.execution_inference_slots
    else:
        # Two calls at once on a GPU: one call's copies and CPU-side work overlap the other's kernels
        # (+8-20 % end to end on an H200, docs/performance.md); more gave nothing there.
        slots = 2 if gpu else max(1, threads)
    if settings.batch_size > 0:
        batch = settings.batch_size
    else:
        batch = 8 if gpu else 1
    return Concurrency(frame_threads=threads, frames_in_flight=threads * settings.execution_queue_count,
                       inference_slots=slots, intra_op_threads=max(1, cpus // slots), micro_batch=batch,
                       batcher_producers=threads, ray_workers=settings.ray_workers,
                       opencv_threads=max(1, cpus // threads))


# One worker process's share of a GPU: its sessions and their arenas for the default chain (swapper, detector,
# recogniser, enhancer: about 1 GB of weights, in fp32) with room for batched activations. An estimate, not a
# measurement (no GPU was at hand when it was set): a worker that does not fit fails to load with CUDA's error.
WORKER_GPU_MIB = 4096
MAX_WORKERS_PER_GPU = 4  # more processes on one GPU only queue for its kernels
CORES_PER_GPU_WORKER = 2  # a worker's decode, encode and per-face work keep about two cores busy


def worker_devices(settings: Settings, cores: int, free_mib: dict[int, int | None]) -> tuple[int, ...]:
    """Each worker process's execution device id, for `--executor processes` on a machine with `cores`
    processors whose GPUs have `free_mib` MiB free (by nvidia-smi index; None: not known).

    `workers` above 0 is obeyed, spread evenly over execution_device_ids. Otherwise: on CPU, one worker per
    execution_thread_count cores; on GPUs, as many per device as its free memory holds (WORKER_GPU_MIB each,
    at most MAX_WORKERS_PER_GPU, at least one), no more in all than CORES_PER_GPU_WORKER cores each allow
    (but one per device at least)."""
    ids = settings.execution_device_ids
    gpu = any(p != "cpu" for p in settings.execution_providers)
    if settings.workers > 0:
        return spread(settings.workers, {i: settings.workers for i in ids})
    if not gpu:
        return spread(max(1, cores // settings.execution_thread_count), {ids[0]: cores})
    room = {i: min(MAX_WORKERS_PER_GPU, max(1, (free_mib.get(i) or WORKER_GPU_MIB) // WORKER_GPU_MIB))
            for i in ids}
    total = min(sum(room.values()), max(len(ids), cores // CORES_PER_GPU_WORKER))
    return spread(total, room)


def spread(count: int, room: dict[int, int]) -> tuple[int, ...]:
    """`count` workers over devices (in their order), each next one on the device with the fewest so far
    that has room left; the workers of a device side by side."""
    given = {device: 0 for device in room}
    for _ in range(count):
        open_ = [d for d in room if given[d] < room[d]] or list(room)
        given[min(open_, key=lambda d: given[d])] += 1
    return tuple(device for device in room for _ in range(given[device]))

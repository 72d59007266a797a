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

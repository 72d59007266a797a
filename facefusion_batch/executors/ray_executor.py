"""The Ray executor: one batch spread over a Ray cluster.

The scheduling is `pooled.PoolExecutor`'s; this module joins or starts Ray and opens a `ray_pool.WorkerPool`,
whose actors Ray places by their CPU/GPU requests and restarts when their process or node died.
"""
from __future__ import annotations

import contextlib
import sys
from types import ModuleType
from typing import Callable, Sequence

from facefusion_batch.executors import require_ray
from facefusion_batch.executors.base import EngineInfo, Work
from facefusion_batch.executors.pooled import PoolExecutor
from facefusion_batch.executors.ray_pool import WorkerPool, connect
from facefusion_batch.workflow.processor import Sources
from facefusion_batch.settings import Settings
from facefusion_batch.targets import Target


class RayExecutor(PoolExecutor):
    kind = "Ray"
    retries_setting = "ray_max_retries"
    comeback = "the cluster is back"

    def __init__(self, settings: Settings, source: Sources, lost_signal: Callable[[], None] | None = None) -> None:
        super().__init__(settings, source, lost_signal, settings.ray_segment_chunks, settings.ray_max_retries)
        self._ray: ModuleType | None = None
        self._started_here = False

    def _open(self, work: Work) -> WorkerPool:
        self._ray = ray = require_ray()
        self._started_here = connect(ray, self.settings)
        return WorkerPool(ray, self.remote_settings, work.message)

    def start(self, targets: Sequence[Target], work: Work) -> EngineInfo:
        """Join or start Ray, start the workers, and wait for the first one to be ready."""
        # Ray prints what its workers and raylets report (a worker died, ...) on stdout; send it to stderr so
        # that stdout carries only the summary (--json).
        with contextlib.redirect_stdout(sys.stderr):
            return super().start(targets, work)

    def run(self, work: Work) -> None:
        with contextlib.redirect_stdout(sys.stderr):
            super().run(work)

    def close(self) -> None:
        super().close()
        if self._started_here and self._ray is not None:
            self._started_here = False
            self._ray.shutdown()

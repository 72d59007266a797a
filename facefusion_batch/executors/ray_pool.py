"""The Ray side of the Ray executor: joining or starting Ray, the worker actors and what comes back.

`WorkerPool` starts the actors (Ray places them by their CPU/GPU requests), follows their start-up, hands
them items, and turns Ray's answers into `Done` records. A worker whose process or node died is restarted
by Ray (`max_restarts`); the pool starts it again and the driver decides what happens to the lost item.
"""
from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from facefusion_batch.concurrency import concurrency_of
from facefusion_batch.errors import FfbError, SettingsError
from facefusion_batch.executors.pooled import Done
from facefusion_batch.executors.work_items import Item, StorageCheck, WorkerInfo
from facefusion_batch.executors.worker import FfbWorker, ProgressBox
from facefusion_batch.workflow.outcome import Outcome
from facefusion_batch.workflow.processor import Sources
from facefusion_batch.settings import Settings

WORKER_WAIT_S = 600.0  # with no worker started for this long, the pool gives up
RESTART_POLL_S = 1.0  # how often a worker Ray is still restarting is asked to start again


def connect(ray: ModuleType, settings: Settings) -> bool:
    """Join the cluster at `ray_address`, or start Ray on this machine; True when this call started it."""
    if ray.is_initialized():
        return False  # a caller (a script, the tests) set Ray up and keeps it
    on_term = signal.getsignal(signal.SIGTERM)
    try:
        if settings.ray_address:
            ray.init(address=settings.ray_address, logging_level=logging.WARNING)
        else:
            needed = math.ceil(settings.ray_workers * settings.ray_num_cpus)
            ray.init(num_cpus=max(os.cpu_count() or 1, needed), include_dashboard=False,
                     logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = settings.ray_address or "this machine"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SettingsError(f"can't start or join Ray at {where} ({first}); start the cluster with `ray start "
                            "--head` on its head node, or leave ray_address empty to run Ray here") from None
    if on_term is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_term)  # Ray installs its own, which ends the process at once
    return True


def worker_count(settings: Settings, cpus: float, gpus: float) -> int:
    """Workers to start: ray_workers, else as many as the cluster's GPUs (or CPUs, by thread count) allow."""
    if settings.ray_num_gpus > gpus:
        raise SettingsError(f"the Ray cluster has {gpus:g} GPUs but each worker asks for ray_num_gpus = "
                            f"{settings.ray_num_gpus:g}; lower ray_num_gpus or add GPU nodes")
    if settings.ray_num_cpus > cpus:
        raise SettingsError(f"the Ray cluster has {cpus:g} CPUs but each worker asks for ray_num_cpus = "
                            f"{settings.ray_num_cpus:g}; lower ray_num_cpus")
    if settings.ray_workers:
        return settings.ray_workers
    if settings.ray_num_gpus:
        return int(gpus // settings.ray_num_gpus)
    return max(1, int(cpus // concurrency_of(settings).frame_threads))


@dataclass
class Slot:
    """One worker actor as the driver sees it."""

    id: int
    handle: Any
    state: str = "starting"  # starting | restarting | idle | busy | gone
    ref: Any = None  # the pending start() call
    info: WorkerInfo | None = None
    deaths: int = 0
    retry_at: float = 0.0  # restarting: when to call start() again

    @property
    def where(self) -> str:
        return f"worker {self.id} on {self.info.node}" if self.info else f"worker {self.id}"


class WorkerPool:
    def __init__(self, ray: ModuleType, settings: Settings, message: Callable[[str], None]) -> None:
        self.ray, self.settings, self.message = ray, settings, message
        self.slots: list[Slot] = []
        self.first: WorkerInfo | None = None
        self.embeddings = 0  # source embeddings the workers computed
        self._running: dict[Any, tuple[Slot, int]] = {}
        self._box: Any = None
        self._alive_at = time.monotonic()

    def start(self, source: Sources, check: StorageCheck) -> None:
        ray, s = self.ray, self.settings
        resources = ray.cluster_resources()
        count = worker_count(s, resources.get("CPU", 0.0), resources.get("GPU", 0.0))
        box_name = f"ffb-progress-{check.token}"
        self._box = ray.remote(ProgressBox).options(name=box_name, num_cpus=0, max_restarts=-1).remote()
        actor = ray.remote(FfbWorker).options(num_cpus=s.ray_num_cpus, num_gpus=s.ray_num_gpus,
                                              max_restarts=s.ray_max_retries, max_task_retries=0)
        for index in range(count):
            slot = Slot(index, actor.remote(s, source, check, box_name))
            slot.ref = slot.handle.start.remote()
            self.slots.append(slot)
        self.message(f"ray: {count} workers, each {s.ray_num_cpus:g} CPUs and {s.ray_num_gpus:g} GPUs "
                              f"(cluster: {resources.get('CPU', 0):g} CPUs, {resources.get('GPU', 0):g} GPUs)")

    def idle(self) -> list[Slot]:
        return [s for s in self.slots if s.state == "idle"]

    def free(self) -> int:
        """Workers that are or will soon be without work."""
        return sum(s.state in ("idle", "starting", "restarting") for s in self.slots)

    def submit(self, slot: Slot, item: Item, dispatch: int) -> None:
        self._running[slot.handle.run.remote(item, dispatch)] = (slot, dispatch)
        slot.state = "busy"

    def wait(self, timeout: float) -> list[Done]:
        """Items that came back within `timeout` (worker start-ups are followed on the way)."""
        now = time.monotonic()
        for slot in self.slots:
            if slot.state == "restarting" and slot.retry_at <= now:
                slot.state, slot.ref = "starting", slot.handle.start.remote()
        restarting = [s.retry_at for s in self.slots if s.state == "restarting"]
        if restarting:
            timeout = max(0.0, min(timeout, min(restarting) - now))
        starting = {s.ref: s for s in self.slots if s.state == "starting"}
        refs = list(self._running) + list(starting)
        if not refs:
            time.sleep(timeout if restarting else 0.0)
            return []
        ready, rest = self.ray.wait(refs, num_returns=1, timeout=timeout)
        if ready and rest:
            ready += self.ray.wait(rest, num_returns=len(rest), timeout=0)[0]
        done = []
        for ref in ready:
            if ref in self._running:
                done.append(self._finished(ref))
            else:
                self._started(starting[ref])
        return done

    def progress(self) -> list[tuple[int, int]]:
        """(dispatch, frames) the workers reported since the last call."""
        try:
            return self.ray.get(self._box.drain.remote())
        except self.ray.exceptions.RayActorError:
            return []  # progress is best effort; Ray restarts the box

    def stranded(self) -> bool:
        """No worker left, or none running or ready for WORKER_WAIT_S; raises if none ever started."""
        if any(s.state in ("idle", "busy") for s in self.slots):
            self._alive_at = time.monotonic()
            return False
        if any(s.state != "gone" for s in self.slots) and time.monotonic() - self._alive_at < WORKER_WAIT_S:
            return False
        if self.first is None:
            raise FfbError(f"no Ray worker started within {WORKER_WAIT_S:.0f} s; check that the cluster has "
                           "the CPUs and GPUs the workers ask for (ray status)")
        return True

    def stop(self) -> None:
        for handle in [s.handle for s in self.slots] + ([self._box] if self._box else []):
            with contextlib.suppress(Exception):
                self.ray.kill(handle, no_restart=True)

    def _finished(self, ref: Any) -> Done:
        slot, dispatch = self._running.pop(ref)
        try:
            outcome: Outcome = self.ray.get(ref)
        except self.ray.exceptions.RayActorError as exc:
            self._died(slot)
            return Done(slot, dispatch, lost=exc)
        except self.ray.exceptions.RayTaskError as exc:
            slot.state = "idle"
            return Done(slot, dispatch, error=_line(exc.cause))
        slot.state = "idle"
        return Done(slot, dispatch, outcome)

    def _started(self, slot: Slot) -> None:
        try:
            info: WorkerInfo = self.ray.get(slot.ref)
        except self.ray.exceptions.ActorUnavailableError:
            # Ray is still restarting it (slow on a loaded machine): not another death, ask again shortly
            slot.state, slot.retry_at = "restarting", time.monotonic() + RESTART_POLL_S
            return
        except self.ray.exceptions.RayActorError:
            self._died(slot)
            return
        except self.ray.exceptions.RayTaskError as exc:
            cause = exc.cause
            if slot.deaths and self.first is not None:  # a restarted worker, e.g. on a node without the mounts
                slot.state = "gone"
                self.message(f"ray: {slot.where} could not start again ({_line(cause)}); going on "
                                      "without it")
                return
            if isinstance(cause, FfbError):  # a start-up check failed: stop the run with its message
                raise cause from None
            raise FfbError(f"a Ray worker failed to start: {_line(cause)}") from None
        first = self.first
        if first is None:
            self.first = info
        elif (info.engine, info.models) != (first.engine, first.models):
            raise SettingsError(f"the Ray worker on {info.node} loaded the {info.engine} engine "
                                f"({', '.join(info.models)}) but the one on {first.node} loaded {first.engine} "
                                f"({', '.join(first.models)}); give every node the same models, or pass --engine")
        elif info.output_key != first.output_key:
            self.message(f"ray: the model files on {info.node} differ in size or time from those on "
                                  f"{first.node}; the journal keys outputs by the first worker's, so a later run "
                                  "may redo finished targets: give every node the same models_path")
        slot.info, slot.state = info, "idle"
        self.embeddings += info.embeddings_computed

    def _died(self, slot: Slot) -> None:
        """Ray restarts a dead worker (up to ray_max_retries times); after that the batch goes on without it."""
        slot.deaths += 1
        if slot.deaths > self.settings.ray_max_retries:
            slot.state = "gone"
            with contextlib.suppress(Exception):
                self.ray.kill(slot.handle, no_restart=True)
            self.message(f"ray: {slot.where} died {slot.deaths} times; going on without it")
            return
        slot.state = "starting"
        slot.ref = slot.handle.start.remote()


def _line(exc: BaseException | None) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1]}" if text else type(exc).__name__

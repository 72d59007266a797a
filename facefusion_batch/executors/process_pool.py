"""Worker processes on this machine, each holding one loaded engine (`worker.FfbWorker`), fed work items.

The same pool as `ray_pool.WorkerPool` offers the shared scheduling (`pooled.PoolExecutor`), without Ray: each
worker is a spawned process talking to the driver over a pipe. A worker runs in a process group of its own,
so that Ctrl-C in a terminal reaches only the driver, which then stops the workers (SIGTERM, then SIGKILL to
the group: their ffmpeg processes too). A worker that dies (kill -9, out of memory) is seen by its process
sentinel; the item it had is lost (the executor retries it elsewhere) and the slot starts a new process, up
to `worker_retries` times. Each worker's sessions use the device `device_plan.assign` gave it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import pickle
import signal
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

from facefusion_batch.errors import FfbError
from facefusion_batch.executors.pooled import Done
from facefusion_batch.executors.work_items import Item, StorageCheck, WorkerInfo
from facefusion_batch.executors.worker import FfbWorker
from facefusion_batch.workflow.processor import Sources
from facefusion_batch.settings import Settings

STOP_S = 5.0  # how long a stopped worker may take to end its item's ffmpeg before it is killed
ORPHAN_POLL_S = 1.0  # how often a worker checks that its driver is still alive


class WorkerDied(Exception):
    """A worker process ended while it had an item (killed, out of memory, crashed)."""


@dataclass
class ProcSlot:
    """One worker process as the driver sees it."""

    id: int
    device: int  # the execution device id its sessions use
    settings: Settings  # the worker's settings (its device)
    process: Any = None  # multiprocessing.Process
    conn: Connection | None = None
    state: str = "starting"  # starting | idle | busy | gone
    info: WorkerInfo | None = None
    deaths: int = 0
    dispatch: int = -1  # the item it runs

    @property
    def where(self) -> str:
        return f"worker {self.id} (pid {self.process.pid if self.process else '?'}, device {self.device})"


class ProcessPool:
    def __init__(self, settings: Settings, message: Callable[[str], None], devices: tuple[int, ...]) -> None:
        """`devices`: each worker's execution device id (its length is the number of workers)."""
        self.settings, self.message = settings, message
        self.slots = [ProcSlot(i, device, dataclasses.replace(settings, execution_device_ids=(device,)))
                      for i, device in enumerate(devices)]
        self.first: WorkerInfo | None = None
        self.embeddings = 0
        self._events: list[tuple[int, int]] = []
        self._context = multiprocessing.get_context("spawn")
        self._source: Sources | None = None
        self._check: StorageCheck | None = None

    def start(self, source: Sources, check: StorageCheck) -> None:
        self._source, self._check = source, check
        for slot in self.slots:
            self._spawn(slot)
        threads = self.settings.execution_thread_count
        self.message(f"processes: {len(self.slots)} workers of {threads} frame threads each, on devices "
                     f"{' '.join(str(s.device) for s in self.slots)}")

    def _spawn(self, slot: ProcSlot) -> None:
        mine, theirs = self._context.Pipe()
        slot.process = self._context.Process(target=serve, args=(theirs, slot.settings, self._source, self._check),
                                             name=f"ffb-worker-{slot.id}", daemon=True)
        slot.process.start()
        theirs.close()
        slot.conn, slot.state, slot.dispatch = mine, "starting", -1

    def idle(self) -> list[ProcSlot]:
        return [s for s in self.slots if s.state == "idle"]

    def free(self) -> int:
        return sum(s.state in ("idle", "starting") for s in self.slots)

    def submit(self, slot: ProcSlot, item: Item, dispatch: int) -> None:
        assert slot.conn is not None
        slot.state, slot.dispatch = "busy", dispatch
        try:
            slot.conn.send(("run", item, dispatch))
        except OSError:
            pass  # it died: its sentinel says so in the next wait

    def wait(self, timeout: float) -> list[Done]:
        live = [s for s in self.slots if s.state != "gone"]
        handles = [h for s in live for h in (s.conn, s.process.sentinel)]
        if not handles:
            time.sleep(timeout)
            return []
        wait(handles, timeout)
        done: list[Done] = []
        for slot in live:
            done += self._read(slot)
            if slot.state != "gone" and not slot.process.is_alive():
                done += self._died(slot)
        return done

    def _read(self, slot: ProcSlot) -> list[Done]:
        """What the worker said since the last wait."""
        done = []
        assert slot.conn is not None
        try:
            while slot.conn.poll():
                message = slot.conn.recv()
                kind = message[0]
                if kind == "progress":
                    self._events += message[1]
                elif kind == "started":
                    self._started(slot, message[1])
                elif kind == "failed":  # start-up failed
                    self._start_failed(slot, message[1])
                elif kind in ("done", "error"):
                    slot.state, slot.dispatch = "idle", -1
                    done.append(Done(slot, message[1], outcome=message[2]) if kind == "done"
                                else Done(slot, message[1], error=message[2]))
        except (EOFError, OSError):
            slot.process.join(STOP_S)  # the pipe closed: the process is ending
        return done

    def _started(self, slot: ProcSlot, info: WorkerInfo) -> None:
        slot.info, slot.state = info, "idle"
        self.embeddings += info.embeddings_computed
        if self.first is None:
            self.first = info

    def _start_failed(self, slot: ProcSlot, raw: bytes) -> None:
        error = pickle.loads(raw)
        if slot.deaths and self.first is not None:
            slot.state = "gone"
            self.message(f"processes: {slot.where} could not start again ({error}); going on without it")
            return
        raise error

    def _died(self, slot: ProcSlot) -> list[Done]:
        """A worker ended: its item is lost; the slot starts a new process up to worker_retries times."""
        code = slot.process.exitcode
        lost = ([Done(slot, slot.dispatch, lost=WorkerDied(f"exit code {code}"))]
                if slot.state == "busy" else [])
        slot.deaths += 1
        _close(slot)
        if slot.deaths > self.settings.worker_retries:
            slot.state = "gone"
            self.message(f"processes: {slot.where} died {slot.deaths} times; going on without it")
        else:
            self._spawn(slot)
        return lost

    def progress(self) -> list[tuple[int, int]]:
        events, self._events = self._events, []
        return events

    def stranded(self) -> bool:
        if any(s.state != "gone" for s in self.slots):
            return False
        if self.first is None:
            raise FfbError("no worker process started; see the messages above")
        return True

    def stop(self) -> None:
        """SIGTERM every worker (it ends its item's ffmpeg), then SIGKILL what is left of its process group."""
        running = [s for s in self.slots if s.process is not None and s.process.is_alive()]
        for slot in running:
            with contextlib.suppress(OSError):
                os.kill(slot.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_S
        for slot in running:
            slot.process.join(max(0.0, deadline - time.monotonic()))
        for slot in self.slots:
            if slot.process is not None:
                with contextlib.suppress(OSError):
                    if hasattr(os, "killpg"):
                        os.killpg(slot.process.pid, signal.SIGKILL)  # its ffmpeg processes, and itself if still there
                    elif slot.process.is_alive():
                        slot.process.kill()
                slot.process.join(STOP_S)
                _close(slot)
            slot.state = "gone"


def _close(slot: ProcSlot) -> None:
    if slot.conn is not None:
        slot.conn.close()
        slot.conn = None


# ---- the worker process ----------------------------------------------------------------------------------

def serve(conn: Connection, settings: Settings, source: Sources, check: StorageCheck) -> None:
    """A worker process's life: load once, then run the items the driver sends until the pipe closes."""
    if hasattr(os, "setpgrp"):  # POSIX: Ctrl-C in the terminal is the driver's to handle
        os.setpgrp()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _interrupt)
    lock = threading.Lock()

    def send(message: tuple) -> None:
        with lock:
            conn.send(message)

    _watch_driver(os.getppid())
    try:
        _serve(conn, send, FfbWorker(settings, source, check, send=lambda events: send(("progress", events))))
    except KeyboardInterrupt:  # the driver stopped it (SIGTERM): what ran was stopped on the way out
        pass


def _serve(conn: Connection, send: Callable[[tuple], None], worker: FfbWorker) -> None:
    try:
        info = worker.start()
    except Exception as exc:  # noqa: BLE001 - said to the driver, which raises it there
        send(("failed", _picklable(exc)))
        return
    send(("started", info))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        _, item, dispatch = message
        try:
            outcome = worker.run(item, dispatch)
        except Exception as exc:  # noqa: BLE001 - a bug in the item: the driver fails that target with it
            send(("error", dispatch, f"{type(exc).__name__}: {exc}"))
            continue
        send(("done", dispatch, outcome))


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _picklable(exc: BaseException) -> bytes:
    """The exception as the driver can raise it: itself when it pickles, else an FfbError of its text."""
    try:
        raw = pickle.dumps(exc)
        pickle.loads(raw)
        return raw
    except Exception:  # noqa: BLE001 - any exception type may fail to pickle
        return pickle.dumps(FfbError(f"a worker process failed to start: {type(exc).__name__}: {exc}"))


def _watch_driver(driver: int) -> None:
    """End this worker (and its ffmpeg) when the driver is gone: a killed driver leaves no orphans."""
    def watch() -> None:
        while os.getppid() == driver:
            time.sleep(ORPHAN_POLL_S)
        if hasattr(os, "killpg"):
            os.killpg(0, signal.SIGKILL)
        os._exit(1)

    threading.Thread(target=watch, name="ffb-driver-watch", daemon=True).start()

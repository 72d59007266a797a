"""The worker pool's bookkeeping of worker deaths, with a stand-in for Ray (no cluster needed)."""
from __future__ import annotations

import types

from facefusion_batch.executors import ray_pool
from facefusion_batch.executors.ray_pool import Slot, WorkerPool


class RayActorError(Exception):
    pass


class ActorUnavailableError(RayActorError):
    pass


class Handle:
    def __init__(self) -> None:
        self.starts = 0
        self.start = types.SimpleNamespace(remote=self._start)

    def _start(self) -> str:
        self.starts += 1
        return f"start-{self.starts}"


def fake_ray(answers: dict[str, Exception]) -> types.SimpleNamespace:
    def get(ref):
        raise answers[ref]

    return types.SimpleNamespace(
        exceptions=types.SimpleNamespace(RayActorError=RayActorError, ActorUnavailableError=ActorUnavailableError),
        get=get, wait=lambda refs, num_returns, timeout: (refs[:num_returns], refs[num_returns:]), kill=lambda *a, **k: None)


def pool(ray, retries: int = 2) -> WorkerPool:
    settings = types.SimpleNamespace(ray_max_retries=retries)
    return WorkerPool(ray, settings, types.SimpleNamespace(message=lambda text: None), on_first=lambda info: None)


def test_a_worker_ray_is_still_restarting_is_asked_again_not_counted_dead(monkeypatch):
    monkeypatch.setattr(ray_pool, "RESTART_POLL_S", 0.0, raising=False)
    handle = Handle()
    answers = {f"start-{i}": ActorUnavailableError("restarting") for i in range(1, 10)}
    workers = pool(fake_ray(answers))
    slot = Slot(0, handle, ref=handle.start.remote(), deaths=1)  # it died once running an item
    workers.slots.append(slot)
    for _ in range(5):  # a loaded machine: the restart takes a while
        assert workers.wait(0.0) == []
    assert slot.deaths == 1 and slot.state in ("starting", "restarting") and handle.starts > 3
    assert workers.free() == 1 and not workers.stranded()


def test_a_worker_that_keeps_dying_is_given_up_after_its_retries():
    handle = Handle()
    answers = {f"start-{i}": RayActorError("died") for i in range(1, 10)}
    workers = pool(fake_ray(answers), retries=2)
    slot = Slot(0, handle, ref=handle.start.remote())
    workers.slots.append(slot)
    for _ in range(5):
        workers.wait(0.0)
    assert slot.state == "gone" and slot.deaths == 3

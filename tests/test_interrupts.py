"""SIGTERM / SIGINT handling (facefusion_batch/interrupts.py): one KeyboardInterrupt per run, whatever the moment."""
from __future__ import annotations

import os
import signal
import time

from facefusion_batch import interrupts


class _Finalised:
    """An object whose `__del__` receives SIGTERM: the handler owes the KeyboardInterrupt (Python would swallow it
    there) and raises it ~10 ms later from a second run of the handler."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler runs here, inside the finaliser


def test_a_signal_in_a_finaliser_raises_once_when_a_waiting_loop_raised_it_first():
    # A watch's loop calls raise_lost each turn: it raised the KeyboardInterrupt the finaliser owed, the batch
    # caught it and wrote its summary; the handler's second run must not raise it again (it landed in the watch's
    # teardown and the summary of everything done was replaced by "interrupted": a CI failure of
    # tests/executors/test_watch_ray.py).
    raised = []
    with interrupts.handled() as signals:
        holder = [_Finalised()]
        del holder[0]
        assert signals.signalled and signals.signum == signal.SIGTERM
        try:
            signals.raise_lost()
        except KeyboardInterrupt:
            raised.append("by the loop")
        try:
            time.sleep(0.3)  # the handler's second run comes here
        except KeyboardInterrupt:
            raised.append("again")
    assert raised == ["by the loop"]


def test_a_signal_in_a_finaliser_is_raised_after_it_where_no_loop_raised_it():
    raised = []
    with interrupts.handled() as signals:
        holder = [_Finalised()]
        try:
            del holder[0]
            time.sleep(0.3)
        except KeyboardInterrupt:
            raised.append("after the finaliser")
        assert signals.signum == signal.SIGTERM
    assert raised == ["after the finaliser"]

"""SIGTERM and SIGINT end a run the same deterministic way: the first one raises KeyboardInterrupt in the
main thread (the batch records it, cleans up and exits 130; one landing inside an object's `__del__`, where
Python would swallow it, is raised as soon as that is done); every later one is ignored, so clean-up is
never cut short and the exit status can't turn into -15 (a second signal during interpreter shutdown,
when Python has put the default handlers back, would kill the process).

Where no KeyboardInterrupt may land (writing the summary, closing the journal) the handler is `held`:
a signal is only recorded, and the caller reads `signalled` afterwards.
"""
from __future__ import annotations

import _thread
import contextlib
import signal
import sys
import threading
import time
from typing import Any, Callable, Iterator

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Interrupts:
    """The process's handler for SIGTERM and SIGINT while a command runs."""

    def __init__(self) -> None:
        self.signalled = False
        self.signum: int | None = None  # the first signal (`ffb watch` exits 0 on SIGTERM, 130 on SIGINT)
        self._held = 0
        self._owed = False  # the first signal came inside a finaliser: its KeyboardInterrupt is raised after it

    def handle(self, signum: int, frame: Any) -> None:
        first = not self.signalled
        self.signalled = True
        if first:
            self.signum = signum
        if (first or self._owed) and not self._held and _in_finaliser(frame):
            # Raised inside an object's `__del__` (a subprocess.Popen's, collected at any moment), a KeyboardInterrupt
            # is swallowed ("Exception ignored") and the run goes on to finish, output written. So it is owed: this
            # handler runs again shortly (interrupt_main, below; the handlers stay installed until then) and
            # raises it once no finaliser is running.
            self._owed = True
            # A bare thread of ~10 ms (threading's would take its module lock, which the code interrupted here may
            # hold); it ends by itself.
            _thread.start_new_thread(_interrupt_main_soon, ())
            return
        owed, self._owed = self._owed, False
        for sig in SIGNALS:  # at OS level: Python's shutdown leaves an ignored signal ignored
            signal.signal(sig, signal.SIG_IGN)
        if (first or owed) and not self._held:
            raise KeyboardInterrupt

    def raise_lost(self) -> None:
        """Raise KeyboardInterrupt again when a signal came and the run goes on: its KeyboardInterrupt was
        lost, raised inside code that ignores exceptions (an object's `__del__`, such as a Ray actor
        handle's, prints "Exception ignored" and carries on). Waiting loops (a watch's, Ray's) call this each
        turn so that the signal still ends them."""
        if self.signalled and not self._held:
            # The KeyboardInterrupt owed for a signal that landed in a `__del__` is this one: raised again by the
            # handler's second run (~10 ms on), it landed wherever the run was by then, past the batch that had
            # caught this one (a watch closing its Ray workers), and its summary lost every outcome.
            self._owed = False
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Within: a signal is recorded in `signalled` but raises nothing."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1


def _in_finaliser(frame: Any) -> bool:
    """Whether Python code runs inside an object's `__del__` at `frame` (there an exception is swallowed)."""
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _interrupt_main_soon() -> None:
    time.sleep(0.01)  # let the finaliser finish: this handler runs again when the main thread next can
    _thread.interrupt_main(signal.SIGINT)


@contextlib.contextmanager
def handled() -> Iterator[Interrupts]:
    """The Interrupts already installed for this process (see `install`), else new ones installed for the
    duration of the block (in-process callers such as tests get their own handlers back afterwards)."""
    current = signal.getsignal(signal.SIGTERM)
    owner = getattr(current, "__self__", None)
    if isinstance(owner, Interrupts):
        yield owner
        return
    previous, hook = {sig: signal.getsignal(sig) for sig in SIGNALS}, sys.unraisablehook
    interrupts = install()
    try:
        yield interrupts
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.unraisablehook = hook


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """For code that must not be cut by a KeyboardInterrupt but may be slow, such as importing a C
    extension (onnxruntime's turns one raised inside its initialisation into "ImportError: initialization
    failed"): within, a signal is only recorded; it is raised on leaving. Only the main thread defers
    (signals are handled there); elsewhere this does nothing."""
    current = signal.getsignal(signal.SIGTERM)
    owner = getattr(current, "__self__", None)
    if not isinstance(owner, Interrupts) or threading.current_thread() is not threading.main_thread():
        yield
        return
    before = owner.signalled
    with owner.held():
        yield
    if owner.signalled and not before and not owner._held:  # an enclosing `held` keeps it recorded only
        raise KeyboardInterrupt


def install() -> Interrupts:
    """Make SIGTERM and SIGINT raise KeyboardInterrupt once (see the module's text); for the whole process."""
    interrupts = Interrupts()
    for sig in SIGNALS:
        signal.signal(sig, interrupts.handle)
    if not isinstance(sys.unraisablehook, _QuietRace):
        sys.unraisablehook = _QuietRace(sys.unraisablehook)
    return interrupts


class _QuietRace:
    """An unraisable-exception hook that says nothing of a later signal ignored as ffb means it to be. A second
    signal that arrives while the first one's handler sets both to SIG_IGN is tripped in Python but finds its
    handler ignored: CPython then reports "Signal 15 ignored due to race condition" with a traceback on stderr
    (bpo-43406), which reads as a crash of an interrupted run that ended as it should. Anything else goes on
    to the hook there was before."""

    def __init__(self, previous: Callable[[Any], object]) -> None:
        self.previous = previous

    def __call__(self, unraisable: Any) -> None:
        error = unraisable.exc_value
        if isinstance(error, OSError) and str(error).endswith("ignored due to race condition"):
            return
        self.previous(unraisable)


def ignore() -> None:
    """The command is over: a late signal must not change its exit status during interpreter shutdown."""
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_IGN)

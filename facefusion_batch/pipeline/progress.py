"""Progress on stderr: a rich bar on a terminal, plain periodic lines otherwise (cron logs)."""
from __future__ import annotations

import sys
import threading
import time
from typing import IO, TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.progress import TaskID


class Reporter(Protocol):
    def message(self, text: str) -> None: ...

    def start(self, name: str, total: int) -> None: ...

    def advance(self, frames: int) -> None: ...

    def finish(self, status: str, name: str | None = None) -> None:
        """The end of target `name` (default: the one started last). A batch starts the next target while
        the previous one is being finished, so `name` need not be the current one."""

    def close(self) -> None: ...


class QuietReporter:
    """Reports nothing; subclass it to keep the one thing a caller wants."""

    def message(self, text: str) -> None:
        pass

    def start(self, name: str, total: int) -> None:
        pass

    def advance(self, frames: int) -> None:
        pass

    def finish(self, status: str, name: str | None = None) -> None:
        pass

    def close(self) -> None:
        pass


class PlainReporter:
    """One line when a target starts and ends, and every `every` seconds in between."""

    def __init__(self, stream: IO[str], every: float = 10.0, quiet: bool = False) -> None:
        self._stream, self._every, self._quiet = stream, every, quiet
        self._lock = threading.Lock()
        self._name, self._total, self._done, self._last, self._began = "", 0, 0, 0.0, 0.0

    def _print(self, text: str) -> None:
        if not self._quiet:
            print(text, file=self._stream, flush=True)

    def message(self, text: str) -> None:
        self._print(text)

    def start(self, name: str, total: int) -> None:
        self._name, self._total, self._done = name, total, 0
        self._began = self._last = time.monotonic()
        self._print(f"{name}: {total} frames")

    def advance(self, frames: int) -> None:
        with self._lock:
            self._done += frames
            now = time.monotonic()
            if now - self._last >= self._every:
                self._last = now
                fps = self._done / max(now - self._began, 1e-9)
                self._print(f"{self._name}: {self._done}/{self._total} frames, {fps:.1f} fps")

    def finish(self, status: str, name: str | None = None) -> None:
        self._print(f"{name or self._name}: {status}")

    def close(self) -> None:
        pass


class RichReporter:
    """A rich progress bar per target, on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)

        self._console = Console(stderr=True)
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), TimeRemainingColumn(),
                                  console=self._console, transient=False)
        self._progress.start()
        self._tasks: dict[str, TaskID] = {}  # started and not finished, by name
        self._task: TaskID | None = None  # the one frames advance

    def message(self, text: str) -> None:
        self._progress.console.print(text, markup=False, highlight=False)

    def start(self, name: str, total: int) -> None:
        self._task = self._tasks[name] = self._progress.add_task(name, total=max(total, 1))

    def advance(self, frames: int) -> None:
        if self._task is not None:
            self._progress.advance(self._task, frames)

    def finish(self, status: str, name: str | None = None) -> None:
        task_id = self._task if name is None else self._tasks.get(name)
        if task_id is None:
            return
        self._tasks = {k: v for k, v in self._tasks.items() if v != task_id}
        if task_id == self._task:
            self._task = None
        task = next(t for t in self._progress.tasks if t.id == task_id)
        self._progress.update(task_id, completed=task.total, description=f"{task.description} [{status}]")

    def close(self) -> None:
        self._progress.stop()


def make_reporter(quiet: bool = False) -> Reporter:
    if not quiet and sys.stderr.isatty():
        return RichReporter()
    return PlainReporter(sys.stderr, quiet=quiet)

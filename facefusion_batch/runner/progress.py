"""Progress on stderr: on a terminal a live area (the batch's bar plus the few targets now running) with each
finished target printed above it as it ends; elsewhere (cron logs) plain lines, at most every 10 s.

Names are printed literally (rich `Text`, never markup): a file named `[bold]a.mp4` shows as that.
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Optional, Protocol

from facefusion_batch.workflow.guard import one_line

if TYPE_CHECKING:
    from rich.console import Console, RenderableType


class Reporter(Protocol):
    def message(self, text: str) -> None: ...

    def expect(self, targets: int) -> None:
        """How many targets the batch holds (before the first starts); a watch, whose batch grows, tells each
        lot of new targets: the counts add up."""

    def start(self, name: str, total: int) -> None: ...

    def advance(self, frames: int) -> None: ...

    def finish(self, status: str, name: str | None = None) -> None:
        """The end of target `name` (default: the one started last). A batch starts the next target while
        the previous one is being finished, so `name` need not be the current one. Targets skipped or failed
        before they started end here too, without a start."""

    def close(self) -> None: ...


class QuietReporter:
    """Reports nothing; subclass it to keep the one thing a caller wants."""

    def message(self, text: str) -> None:
        pass

    def expect(self, targets: int) -> None:
        pass

    def start(self, name: str, total: int) -> None:
        pass

    def advance(self, frames: int) -> None:
        pass

    def finish(self, status: str, name: str | None = None) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass
class BatchCount:
    """Where a batch stands: targets ended by status, frames processed, and a time left estimated from the
    targets that did work (skipped ones take no time and would make the estimate too hopeful)."""

    total: int = 0  # 0: not told
    ended: dict[str, int] = field(default_factory=dict)
    frames: int = 0
    began: Optional[float] = None

    @property
    def finished(self) -> int:
        return sum(self.ended.values())

    def fps(self, now: float) -> float:
        return self.frames / max(now - self.began, 1e-9) if self.began is not None else 0.0

    def seconds_left(self, now: float, running: float) -> Optional[float]:
        """`running`: the fraction of their frames the targets now running have done, summed."""
        if not self.total or self.began is None or self.finished >= self.total:
            return None
        worked = self.finished - self.ended.get("skipped", 0) + running
        to_do = self.total - self.finished - running
        if worked <= 0.05:
            return None
        return max(0.0, (now - self.began) * to_do / worked)

    def describe(self, now: float, running: float = 0.0) -> str:
        """'30/33 targets, 2 failed, ETA 0:05:12, 25.1 fps, 1172 frames': what matters most first."""
        parts = [f"{self.finished}/{self.total} targets" if self.total else f"{self.finished} targets"]
        parts += [f"{count} {status.replace('_', ' ')}" for status, count in self.ended.items()
                  if status in ("failed", "no_face", "skipped") and count]
        left = self.seconds_left(now, running)
        if left is not None:
            parts.append(f"ETA {clock(left)}")
        parts += [f"{self.fps(now):.1f} fps", f"{self.frames} frames"]
        return ", ".join(parts)


def clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class PlainReporter:
    """One line when a target starts and ends, and every `every` seconds in between a line for the target
    and one for the batch. Skipped targets are counted, not listed (a cron re-run skips most of them)."""

    def __init__(self, stream: IO[str], every: float = 10.0, quiet: bool = False) -> None:
        self._stream, self._every, self._quiet = stream, every, quiet
        self._lock = threading.Lock()
        self._name, self._total, self._done, self._last, self._began = "", 0, 0, 0.0, 0.0
        self._batch = BatchCount()

    def _print(self, text: str) -> None:
        if not self._quiet:  # one event, one line of the log: a file name may hold a line break
            print(" ".join(text.splitlines()), file=self._stream, flush=True)

    def message(self, text: str) -> None:
        self._print(text)

    def expect(self, targets: int) -> None:
        self._batch.total += targets

    def start(self, name: str, total: int) -> None:
        with self._lock:
            self._name, self._total, self._done = name, total, 0
            self._began = self._last = time.monotonic()
            if self._batch.began is None:
                self._batch.began = self._began
        self._print(f"{name}: {total} frames")

    def advance(self, frames: int) -> None:
        with self._lock:
            self._done += frames
            self._batch.frames += frames
            now = time.monotonic()
            if now - self._last < self._every:
                return
            self._last = now
            fps = self._done / max(now - self._began, 1e-9)
            running = self._done / self._total if self._total else 0.0
            lines = [f"{self._name}: {self._done}/{self._total} frames, {fps:.1f} fps",
                     f"batch: {self._batch.describe(now, min(running, 1.0))}"]
        for line in lines:
            self._print(line)

    def finish(self, status: str, name: str | None = None) -> None:
        with self._lock:
            self._batch.ended[status] = self._batch.ended.get(status, 0) + 1
        if status != "skipped":
            self._print(f"{name or self._name}: {status}")

    def close(self) -> None:
        pass


@dataclass
class _Running:
    name: str
    total: int
    done: int = 0
    began: float = 0.0


class RichReporter:
    """A live area on stderr: the batch's bar (targets, frames, fps, time left) and at most `shown` running
    targets, never taller than the terminal. Each target, once ended, is printed above the live area with
    its status, so nothing is lost however many targets end or however small the terminal is."""

    def __init__(self, console: Console | None = None, shown: int = 3, refresh_per_second: float = 4) -> None:
        from rich.console import Console
        from rich.live import Live

        self._console = console or Console(stderr=True)
        self._shown = shown
        self._lock = threading.RLock()
        self._batch = BatchCount()
        self._running: dict[str, _Running] = {}  # started and not ended, oldest first
        self._current: str | None = None  # the one frames advance
        self._live = Live(console=self._console, get_renderable=self._render, transient=True,
                          refresh_per_second=refresh_per_second, redirect_stdout=False, redirect_stderr=True)
        self._live.start()

    def message(self, text: str) -> None:
        from rich.text import Text

        self._console.print(Text(text), soft_wrap=True)

    def expect(self, targets: int) -> None:
        with self._lock:
            self._batch.total += targets

    def start(self, name: str, total: int) -> None:
        with self._lock:
            now = time.monotonic()
            if self._batch.began is None:
                self._batch.began = now
            self._running.pop(name, None)
            self._running[name] = _Running(name, max(total, 0), began=now)
            self._current = name
        self._live.refresh()

    def advance(self, frames: int) -> None:
        with self._lock:
            self._batch.frames += frames
            running = self._running.get(self._current) if self._current else None
            if running is not None:
                running.done += frames

    def finish(self, status: str, name: str | None = None) -> None:
        from rich.text import Text

        with self._lock:
            key = self._current if name is None else name
            running = self._running.pop(key, None) if key is not None else None
            if key == self._current:
                self._current = None
            self._batch.ended[status] = self._batch.ended.get(status, 0) + 1
            count = f"[{self._batch.finished}/{self._batch.total}] " if self._batch.total else ""
        if status == "skipped" or key is None:
            self._live.refresh()
            return
        line = Text(count, style="dim")
        line.append(key)
        line.append(": ")
        line.append(status.replace("_", " "), style=_STYLES.get(status, ""))
        if running is not None:
            frames = f"{running.done}/{running.total}" if status == "failed" else f"{running.done}"
            line.append(f" ({frames} frames, {time.monotonic() - running.began:.1f} s)")
        self._console.print(line, soft_wrap=True)
        self._live.refresh()

    def close(self) -> None:
        from rich.text import Text

        self._live.stop()
        with self._lock:
            began = self._batch.began
            summary = self._batch.describe(time.monotonic())
        if began is not None:
            self._console.print(Text(f"batch: {summary} in {clock(time.monotonic() - began)}"), soft_wrap=True)

    def _render(self) -> RenderableType:
        """The live area: the batch's row, then the latest running targets that fit the terminal."""
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        with self._lock:
            now = time.monotonic()
            width, height = self._console.width, self._console.height
            running = list(self._running.values())
            fractions = sum(min(r.done / r.total, 1.0) for r in running if r.total)
            rows = max(0, min(self._shown, height - 2, len(running)))
            bar = max(10, min(30, width // 4))
            text = max(10, width - bar - 1)
            grid = Table.grid(padding=(0, 1))
            grid.add_column(width=bar, no_wrap=True)
            grid.add_column(width=text, no_wrap=True, overflow="ellipsis")
            grid.add_row(ProgressBar(total=max(self._batch.total, 1), completed=self._batch.finished + fractions,
                                     width=bar),
                         Text(self._batch.describe(now, fractions), style="bold"))
            for target in running[len(running) - rows:]:
                numbers = f"{target.done}/{target.total} frames, {target.done / max(now - target.began, 1e-9):.1f} fps  "
                grid.add_row(ProgressBar(total=max(target.total, 1), completed=target.done, width=bar),
                             Text(numbers + _tail(target.name, text - len(numbers))))
            hidden = len(running) - rows
            if hidden > 0 and height - 2 - rows > 0:
                grid.add_row("", Text(f"and {hidden} more running", style="dim"))
            return grid


_STYLES = {"done": "green", "failed": "bold red", "no_face": "yellow", "blocked": "magenta"}


def _tail(name: str, width: int) -> str:
    """The end of a long name, which tells targets apart ('…/june/clip_07.mp4')."""
    width = max(width, 2)
    return name if len(name) <= width else "…" + name[len(name) - width + 1:]


def make_reporter(quiet: bool = False) -> Reporter:
    import sys

    if not quiet and sys.stderr.isatty():
        return RichReporter()
    return PlainReporter(sys.stderr, quiet=quiet)


class GuardedReporter:
    """A Reporter whose own failures never reach the batch: after the first one the display is dropped and
    messages go to stderr as plain lines."""

    def __init__(self, inner: Reporter) -> None:
        self._inner = inner
        self._broken = False

    def _call(self, method: str, *args: object) -> bool:
        if self._broken:
            return False
        try:
            getattr(self._inner, method)(*args)
            return True
        except Exception as exc:  # noqa: BLE001 - a display problem; the work and the summary go on
            self._broken = True
            print(f"ffb: progress display failed ({type(exc).__name__}: {one_line(str(exc))}); going on without it",
                  file=sys.stderr, flush=True)
            return False

    def message(self, text: str) -> None:
        if not self._call("message", text):
            print(text, file=sys.stderr, flush=True)

    def expect(self, targets: int) -> None:
        self._call("expect", targets)

    def start(self, name: str, total: int) -> None:
        self._call("start", name, total)

    def advance(self, frames: int) -> None:
        self._call("advance", frames)

    def finish(self, status: str, name: str | None = None) -> None:
        self._call("finish", status, name)

    def close(self) -> None:
        self._call("close")

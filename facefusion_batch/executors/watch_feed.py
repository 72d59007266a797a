"""Watched folders as a feed of complete files, for `ffb watch`.

Filesystem events (watchdog: inotify and the like, or polling with `poll`) only say that a file was touched;
a file is handed out once it has settled: its size and modification time unchanged for `settle` seconds,
so a file still being uploaded or copied in pieces is never started. A file is handed out again only when
it changed since (the journal then decides whether it is redone).

Nothing here spins: the caller blocks in `ready()` on a pipe that the event thread (and `wake`, which a
signal handler may call) writes to, with a timeout while some file is settling, and every CHECK_EVERY
seconds to look at the watched directories themselves (a stat each).
"""
from __future__ import annotations

import os
import select
import stat
import threading
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

from facefusion_batch.media import kind_of

Stamp = tuple[int, int, int]  # size, mtime_ns, ctime_ns (a chmod counts: the journal retries a file made readable)
CHECK_EVERY = 5.0  # seconds between two looks at the watched directories themselves (gone, replaced)


def _stamp(path: Path) -> Optional[Stamp]:
    """Size and times of what is at `path` (of the link itself when it leads nowhere); None when nothing is
    there or it is a directory. FIFOs, devices and broken links are handed out like files: the run refuses
    each in one line and journals it, as `ffb run` does."""
    try:
        st = path.stat()
    except OSError:
        try:
            st = path.lstat()
        except OSError:
            return None
    if stat.S_ISDIR(st.st_mode):
        return None
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _identity(directory: Path) -> Optional[tuple[int, int]]:
    """Device and inode of a directory (links followed); None when there is no directory there."""
    try:
        st = directory.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _hidden(path: Path, root: Path) -> bool:
    """Below `root`, a name starting with a dot (rsync's and many uploaders' partial files, ffb's own .ffb):
    never a target, as for `ffb run`."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return True
    return any(part.startswith(".") for part in parts)


class FolderFeed:
    """Complete media files appearing or changing below `directories` (recursively). Start it, then call
    `ready()` in a loop; `close()` stops the event thread (also when start failed half way). A watched
    directory that is removed or replaced (an unmounted share, a folder recreated) is watched again once
    it is back; `say` tells both."""

    def __init__(self, directories: Sequence[Path], settle: float, poll: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.directories = [Path(os.path.abspath(d)) for d in directories]
        self.settle = settle
        self.poll = poll
        self._clock = clock
        self._lock = threading.Lock()
        self._events: dict[Path, float] = {}  # touched since the last pass -> when (event thread writes)
        self._pending: dict[Path, tuple[Optional[Stamp], float]] = {}  # settling -> stamp, unchanged since
        self._handed: dict[Path, Stamp] = {}  # handed out -> its stamp then
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)
        self._observer = None
        self._handler = _Handler(self)
        self._watches: dict[Path, tuple[Optional[tuple[int, int]], object]] = {}  # identity, watchdog's watch
        self._real: dict[Path, Path] = {}  # a watched directory -> where its links lead (what is watched)
        self._checked = 0.0
        self.say: Callable[[str], None] = lambda text: None
        self.lost_signal: Callable[[], None] = lambda: None  # called each turn of `ready` (see WatchExecutor)
        self.woken = False  # set by `wake` (e.g. SIGHUP); the caller clears it

    # ---- life ------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start watching, then note what is already there (in that order: nothing falls between)."""
        from watchdog.observers import Observer
        from watchdog.observers.polling import PollingObserver

        observer = PollingObserver(timeout=1.0) if self.poll else Observer()
        self._observer = observer
        observer.daemon = True
        observer.start()
        for directory in self.directories:
            self._arm(directory)
        self._checked = self._clock()

    def _arm(self, directory: Path) -> None:
        """Watch `directory` (when it is there), then note what it holds."""
        identity = _identity(directory)
        watch = None
        if identity is not None:
            assert self._observer is not None
            # inotify does not follow a watched link: watch where it leads, name files as given
            real = Path(os.path.realpath(directory))
            with self._lock:
                self._real[directory] = real
            watch = self._observer.schedule(self._handler, str(real), recursive=True)
            self.note_tree(directory)
        self._watches[directory] = (identity, watch)

    def _watching(self, watch: object) -> bool:
        """Whether watchdog still watches (its emitter ends itself when the directory is deleted: one made
        again at once may even get the same inode)."""
        emitters = self._observer.emitters if self._observer is not None else ()
        return any(e.watch == watch and e.should_keep_running() for e in emitters)

    def _check_handed(self) -> None:
        """Note every handed-out file whose stamp changed without an event: one written through another
        name (a hard link outside the watched folders; inotify reports a change only below the name
        used). A stat per file every CHECK_EVERY seconds."""
        with self._lock:
            handed = list(self._handed.items())
        for path, stamp in handed:
            now = _stamp(path)
            if now is not None and now != stamp:
                self.note(path)

    def _check_directories(self) -> None:
        """Re-watch a directory that was removed or replaced since it was armed; look at the files handed
        out (`_check_handed`)."""
        self._checked = self._clock()
        self._check_handed()
        for directory, (identity, watch) in list(self._watches.items()):
            now = _identity(directory)
            if now == identity and (watch is None or self._watching(watch)):
                continue
            if watch is not None:
                try:
                    self._observer.unschedule(watch)  # type: ignore[union-attr]
                except (KeyError, OSError):
                    pass  # its emitter already ended with the directory
                self.say(f"ffb watch: {directory}: the watched directory is gone; watching for it to come back")
            self._arm(directory)
            if now is not None:
                self.say(f"ffb watch: {directory}: watching it again")

    def close(self) -> None:
        """Stop the event thread; safe to call more than once."""
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            if observer.is_alive():
                observer.join(timeout=10)
        for fd in (self._read_fd, self._write_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self._read_fd = self._write_fd = -1

    def __enter__(self) -> FolderFeed:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- what happens (event thread, signal handlers) ---------------------------------------------------

    def note(self, path: Path) -> None:
        """`path` was touched: it settles from now."""
        path = self._as_given(Path(os.path.abspath(path)))
        root = next((d for d in self.directories if d == path or d in path.parents), None)
        if root is None or _hidden(path, root) or kind_of(path) is None:
            return
        with self._lock:
            new = path not in self._events
            self._events[path] = self._clock()
        if new:
            self._poke()

    def _as_given(self, path: Path) -> Path:
        """An event's path below where a watched link leads, named below the link as the user gave it."""
        with self._lock:
            links = list(self._real.items())
        for given, real in links:
            if real != given and real in path.parents:
                return given / path.relative_to(real)
        return path

    def note_tree(self, directory: Path) -> None:
        """Every file below `directory` was touched (a directory moved in brings its files without events)."""
        for root, dirs, files in os.walk(directory, followlinks=False):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                self.note(Path(root) / name)

    def wake(self) -> None:
        """Make `ready()` return now (async-signal-safe: no lock)."""
        self.woken = True
        self._poke()

    def _poke(self) -> None:
        try:
            os.write(self._write_fd, b".")
        except (BlockingIOError, OSError):
            pass  # the pipe is full (the reader wakes anyway) or closed (the feed is over)

    # ---- the caller's side -----------------------------------------------------------------------------

    def waiting(self) -> int:
        """Files seen and not handed out yet (still settling, or settled and not yet taken)."""
        with self._lock:
            return len(self._events.keys() | self._pending.keys())

    def ready(self) -> list[Path]:
        """Block until some files have settled, or `wake`; returns those files (possibly none)."""
        while True:
            self.lost_signal()
            if self._clock() - self._checked >= CHECK_EVERY:
                self._check_directories()
            found = self._pass()
            if found or self.woken:
                return found
            due = self._next_due()
            self._wait(CHECK_EVERY if due is None else min(due, CHECK_EVERY))

    def _wait(self, timeout: Optional[float]) -> None:
        select.select([self._read_fd], [], [], timeout)
        try:
            while os.read(self._read_fd, 4096):
                pass
        except BlockingIOError:
            pass

    def _pass(self) -> list[Path]:
        """Move new events into the settling set, look at every settling file, return those settled."""
        now = self._clock()
        found: list[Path] = []
        with self._lock:
            events, self._events = self._events, {}
            for path, when in events.items():
                stamp, since = self._pending.get(path, (None, when))
                self._pending[path] = (stamp, max(since, when))
            for path, (known, since) in list(self._pending.items()):
                stamp = _stamp(path)
                if stamp is None:
                    del self._pending[path]  # gone (renamed away, deleted), or a directory
                elif stamp != known:
                    self._pending[path] = (stamp, now)
                elif now - since >= self.settle:
                    del self._pending[path]
                    if self._handed.get(path) != stamp:
                        self._handed[path] = stamp
                        found.append(path)
        return sorted(found)

    def _next_due(self) -> Optional[float]:
        """Seconds until the first settling file may have settled; None when none is settling."""
        with self._lock:
            if not self._pending:
                return None
            first = min(since for _, since in self._pending.values())
        return max(0.05, first + self.settle - self._clock())


class _Handler:
    """watchdog's callbacks, on its thread: every file touched is noted; a directory created or moved in is
    walked (its files may have come with it)."""

    def __init__(self, feed: FolderFeed) -> None:
        self._feed = feed

    def dispatch(self, event) -> None:
        kind = event.event_type
        if kind in ("opened", "closed_no_write", "deleted"):
            return
        path = getattr(event, "dest_path", "") or event.src_path
        path = Path(os.fsdecode(path))
        if event.is_directory:
            if kind in ("created", "moved"):
                self._feed.note_tree(path)
            return
        self._feed.note(path)

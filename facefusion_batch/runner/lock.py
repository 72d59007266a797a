"""One run per output tree: an exclusive flock on `<state dir>/lock`.

The kernel drops a flock when its process dies (even by SIGKILL), so a lock left by a dead run is simply
free: the next run takes it over, no pid guessing needed. The file also records who holds it, for the
message a second run prints.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Callable

from facefusion_batch.errors import FfbError


class LockedError(FfbError):
    """Another run holds the output tree's lock."""

    exit_code = 6


class RunLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle = None

    def acquire(self, wait: bool = False, on_wait: Callable[[str], None] | None = None,
                poll: float = 0.5) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")
        told = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = self.holder()
                if not wait:
                    handle.close()
                    raise LockedError(f"{self.path.parent.parent}: another ffb run ({holder}) is processing this "
                                      "output; it finishes on its own, or pass --wait to queue behind it") from None
                if on_wait and not told:
                    on_wait(f"waiting for the other ffb run ({holder}) to finish")
                    told = True
                time.sleep(poll)
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}))
        handle.flush()
        self._handle = handle

    def holder(self) -> str:
        try:
            info = json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return "unknown process"
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.get("started", 0)))
        return f"pid {info.get('pid', '?')} on {info.get('host', '?')}, started {started}"

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

"""What keeps one target from ending a batch: any exception it raises becomes that target's one-line failure
reason (the run's display has its own guard: runner.progress.GuardedReporter). KeyboardInterrupt and
SystemExit are never caught here: signals always win."""
from __future__ import annotations

import errno
import os
import traceback
from pathlib import Path

from facefusion_batch.errors import FfbError


def one_line(text: str) -> str:
    return " ".join(text.split())


def os_reason(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return f"{path}: symbolic link loop (the link leads back to itself)"
    if path.is_symlink() and not path.exists():
        return f"{path}: broken symbolic link"
    where = exc.filename if exc.filename else path
    return f"{path}: {exc.strerror or exc} ({where})" if where != path else f"{path}: {exc}"


def failure_reason(path: Path, exc: Exception) -> str:
    """The one line a user sees for a target that failed with `exc`."""
    if isinstance(exc, FfbError):
        return one_line(str(exc))
    if isinstance(exc, OSError):
        return one_line(os_reason(path, exc))
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return one_line(f"{path}: unexpected {type(exc).__name__}{where}: {exc}; this is a bug in ffb, please "
                    "report it with this line")


_FULL = (errno.ENOSPC, errno.EDQUOT)
_FULL_TEXT = (os.strerror(errno.ENOSPC), os.strerror(errno.EDQUOT))  # as ffmpeg's log says it


def disk_full_reason(path: Path, exc: Exception, temp_root: Path, output: Path) -> str | None:
    """For a target that failed because a disk filled up: the reason naming the target and what to do
    (not the temporary file that could not be written), else None."""
    if not (isinstance(exc, OSError) and exc.errno in _FULL) and not any(t in str(exc) for t in _FULL_TEXT):
        return None
    written = Path(exc.filename) if isinstance(exc, OSError) and exc.filename else None
    joining = written is None and "joining" in str(exc)  # ffmpeg's mux writes beside the output
    if (written is not None and not written.absolute().is_relative_to(temp_root.absolute())) or joining:
        return (f"{path}: output disk full while writing {output}: free space in {output.parent} or choose "
                "another --output")
    return (f"{path}: temp disk full while processing this video: free space in temp_path {temp_root} or set "
            "temp_path (--temp-path) to a larger disk")

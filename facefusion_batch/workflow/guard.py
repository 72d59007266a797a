"""What keeps one target from ending a batch: any exception it raises becomes that target's one-line failure
reason (the run's display has its own guard: runner.progress.GuardedReporter). KeyboardInterrupt and
SystemExit are never caught here: signals always win."""
from __future__ import annotations

import errno
import os
import shutil
import traceback
from pathlib import Path

from facefusion_batch.errors import FfbError, NoSpace, OutputFull
from facefusion_batch.listing import capped


def one_line(text: str) -> str:
    """`text` on one line, capped (a reason quoting a huge name or tool output stays a line)."""
    return capped(" ".join(text.split()))


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
NEARLY_FULL = 1 << 20  # bytes free below which a disk counts as full when an error does not say which


def full_disk(exc: BaseException, temp_root: Path, output: Path) -> str | None:
    """Which disk a failure `exc` says is full: "output" (the output's, which holds the journal too),
    "temp", or None when it is no full disk."""
    if isinstance(exc, OutputFull):
        return "output"
    if isinstance(exc, NoSpace):
        return exc.disk
    if not (isinstance(exc, OSError) and exc.errno in _FULL) and not any(t in str(exc) for t in _FULL_TEXT):
        return None
    named = (exc.filename2 or exc.filename) if isinstance(exc, OSError) else None  # copyfile names both
    written = Path(os.fsdecode(named)) if named else None
    if written is not None:
        return "temp" if written.absolute().is_relative_to(temp_root.absolute()) else "output"
    if "joining" in str(exc) or free_space(output.parent) < NEARLY_FULL:  # ffmpeg's mux writes beside the output
        return "output"
    return "temp"


def free_space(directory: Path) -> int:
    """Bytes free on the disk of `directory` (of its nearest existing parent); a very large number when
    that can't be told."""
    for place in (directory, *directory.parents):
        try:
            return shutil.disk_usage(place).free
        except OSError:
            continue
    return 1 << 62


def output_full_reason(path: Path, directory: Path, started: bool = True) -> str:
    """The one line of every target an output disk that filled up stops (the same words for each)."""
    what = "" if started else ", not started"
    return (f"{path}: output disk full ({directory}){what}: free space there or choose another --output; "
            "the next run does it")


def disk_full_reason(path: Path, exc: Exception, temp_root: Path, output: Path, disk: str | None = None
                     ) -> str | None:
    """For a target that failed because a disk filled up: the reason naming the target and what to do
    (not the temporary file that could not be written), else None. `disk` is the full one when known."""
    if isinstance(exc, NoSpace):
        return None  # its own words say how much room it needs
    disk = disk or full_disk(exc, temp_root, output)
    if disk == "output":
        return output_full_reason(path, output.parent)
    if disk == "temp":
        return (f"{path}: temp disk full while processing this video: free space in temp_path {temp_root} or "
                "set temp_path (--temp-path) to a larger disk")
    return None

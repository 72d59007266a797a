"""What a target was when it was read, checked again before its output is published.

A file can change under a running batch: an upload tool writes `clip.mp4.part` and renames it over
`clip.mp4` (the pattern docs/deploy.md recommends), a user re-exports in place. The journal must record the
content that was actually processed, and an output made from the old content must never be published as
the output of the new one. A `Pin` holds the file's identity (device, inode, size, times) when its content
hash was taken; `check()`, called just before the publishing rename, passes when the file is still that
file, or has the same content, and raises `Changed` otherwise.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from facefusion_batch.errors import TargetError
from facefusion_batch.models.store import sha256_of

Stamp = tuple[int, int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns


class Changed(TargetError):
    """The target is not what was read any more: its output is not published (the next run does it)."""


def stamp_of(path: Path) -> Stamp:
    """The identity of the file at `path` (links followed); OSError when there is none."""
    info = os.stat(path)
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


@dataclass(frozen=True)
class Pin:
    path: Path
    stamp: Stamp | None  # None: the file could not be looked at when it was read (reading then failed)
    content: str | None = None  # its sha256 then, when the journal computed it

    @classmethod
    def now(cls, path: Path, content: str | None = None) -> Pin:
        try:
            return cls(path, stamp_of(path), content)
        except OSError:
            return cls(path, None, content)

    def check(self) -> None:
        """Raise Changed when the file at `path` is not what was read: another file renamed over it, or
        its bytes changed (a new inode, size or modification time, and a content hash that differs when
        one was taken). A target deleted meanwhile passes: what was read is what was processed."""
        if self.stamp is None:
            return
        try:
            now = stamp_of(self.path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise Changed(f"{self.path}: can't be looked at any more ({exc.strerror}); its output was not "
                          "written; the next run does it") from None
        if now == self.stamp or (self.content is None and now[:4] == self.stamp[:4]):
            return  # (without a hash, a change of ctime alone, as a new hard link makes, is no change)
        if self.content is not None and now[2] == self.stamp[2] and sha256_of(self.path) == self.content:
            return
        replaced = "another file was put in its place" if now[:2] != self.stamp[:2] else "it was written to"
        raise Changed(f"{self.path}: changed while it was processed ({replaced}: {self.stamp[2]} bytes when read, "
                      f"{now[2]} now); its output was not written, so an output of the old content is never "
                      "published as the new one's; the next run does it")

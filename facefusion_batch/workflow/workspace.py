"""The chunk workspace of one video: the on-disk format that resuming, Ray segments and joining share.

A workspace is a directory `ffb-<key>` (or `ffb-<random>` when the run can't resume) holding:
- `chunk_00000.mp4` + `chunk_00000.json` ({"frames", "faces"}, and "one": mode `one`'s handover to the next
  chunk when it chose a face): a chunk counts as finished only once both exist; the encoder writes a
  `.part` name and renames it, and the sidecar is renamed into place after it;
- `end.json` ({"frames"}): written once a run has decoded the video to its end;
- `frames/`, logs and listings: scratch, removed by `tidy`.
Nothing else in the package reads or writes these names.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PREFIX = "ffb-"
STALE_DAYS = 7


@dataclass(frozen=True)
class Resume:
    """Where processing of a chunk range starts again: the first chunk still to do, the frames (and frames
    with faces) of the finished chunks before it, and whether the range needs no more work."""

    index: int
    frames: int = 0
    faces: int = 0
    done: bool = False


class Workspace:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"Workspace({str(self.path)!r})"

    @classmethod
    def of(cls, root: Path, key: str) -> Workspace:
        """The workspace of resume key `key` under `root` (not created): an earlier run's chunks are in it."""
        return cls(root / f"{PREFIX}{key}")

    def make(self) -> Workspace:
        """Create the directory. Its name is predictable: a link planted there is removed, never worked (or
        deleted) through."""
        if self.path.is_symlink():
            self.path.unlink()
        self.path.mkdir(parents=True, exist_ok=True)
        return self

    @classmethod
    def scratch(cls, root: Path, key: str, first: int) -> Workspace:
        """A node-local workspace for the segment of `key` that starts at chunk `first` (not created)."""
        return cls(root / f"{PREFIX}{key}-s{first:05d}")

    @classmethod
    def fresh(cls, root: Path) -> Workspace:
        """A new workspace of its own under `root`, for a run that won't be resumed."""
        return cls(Path(tempfile.mkdtemp(prefix=PREFIX, dir=root)))

    # ---- chunks ----------------------------------------------------------------------------------------

    def chunk(self, index: int) -> Path:
        return self.path / f"chunk_{index:05d}.mp4"

    def finished(self, index: int) -> dict | None:
        """{"frames", "faces"} of a finished chunk, or None when it isn't finished."""
        chunk = self.chunk(index)
        try:
            meta = json.loads(chunk.with_suffix(".json").read_text())
        except (OSError, ValueError):
            return None
        return meta if chunk.is_file() else None

    def record_chunk(self, index: int, frames: int, faces: int, handover: dict | None = None) -> None:
        """Mark chunk `index` (already renamed into place) finished, with what the next chunk continues from
        (faces/tracking.py `Handover.to_json`) when there is something."""
        meta: dict = {"frames": frames, "faces": faces}
        if handover is not None:
            meta["one"] = handover
        write_json(self.chunk(index).with_suffix(".json"), meta)

    def handover(self, index: int) -> dict | None:
        """The handover recorded with finished chunk `index`, or None."""
        meta = self.finished(index)
        return meta.get("one") if meta is not None else None

    def end(self) -> int | None:
        """The video's frame count once a run has decoded to its end, else None."""
        try:
            return int(json.loads((self.path / "end.json").read_text())["frames"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def mark_end(self, frames: int) -> None:
        write_json(self.path / "end.json", {"frames": frames})

    def resume(self, chunk_size: int, first: int = 0, last: int | None = None) -> Resume:
        """Where work on chunks `first` .. `last` - 1 (None: to the end of the video) starts again."""
        end = self.end()
        index, frames, faces = first, 0, 0
        while last is None or index < last:
            if end is not None and index * chunk_size >= end:
                return Resume(index, frames, faces, True)  # the video ended with the chunk before
            meta = self.finished(index)
            if meta is None:
                return Resume(index, frames, faces, False)
            frames, faces, index = frames + meta["frames"], faces + meta["faces"], index + 1
            if meta["frames"] < chunk_size:
                return Resume(index, frames, faces, True)  # that was the video's last chunk
        return Resume(index, frames, faces, True)

    def chunks(self, what: str) -> tuple[list[Path], list[dict]]:
        """The finished chunks of the whole video and their sidecars, in order; MediaError naming `what`
        when the end marker or a chunk is missing."""
        from facefusion_batch.errors import MediaError

        total = self.end()
        if total is None:
            raise MediaError(f"{what}: the video's last chunk is missing; run again to finish it")
        metas: list[dict] = []
        paths: list[Path] = []
        while sum(m["frames"] for m in metas) < total:
            meta = self.finished(len(metas))
            if meta is None:
                raise MediaError(f"{what}: chunk {len(metas)} is missing; run again to finish it")
            paths.append(self.chunk(len(metas)))
            metas.append(meta)
        return paths, metas

    def totals(self, chunk_size: int) -> tuple[int, int]:
        """(frames, frames with faces) of the whole video, from its end marker and chunk sidecars."""
        total = self.end() or 0
        faces, index = 0, 0
        while index * chunk_size < total and (meta := self.finished(index)) is not None:
            faces += meta["faces"]
            index += 1
        return total, faces

    # ---- moving and tidying ----------------------------------------------------------------------------

    def publish(self, shared: Workspace, chunk_size: int, first: int, last: int | None) -> None:
        """Move the finished chunks `first` .. `last` - 1 (and the end marker) to `shared`. Each file lands by
        an atomic rename, the chunk before its sidecar, so a chunk counts as finished there only once
        complete, as here."""
        if (self.path / "end.json").is_file():
            _place(self.path / "end.json", shared.path / "end.json")
        index = first
        while (last is None or index < last) and (meta := self.finished(index)) is not None:
            if meta["frames"] < chunk_size and shared.end() is None:  # the end marker was lost in a crash
                shared.mark_end(index * chunk_size + meta["frames"])
            _place(self.chunk(index), shared.chunk(index))
            _place(self.chunk(index).with_suffix(".json"), shared.chunk(index).with_suffix(".json"))
            index += 1

    @property
    def frames_dir(self) -> Path:
        return self.path / "frames"

    def tidy(self) -> None:
        """Keep only finished chunks (and the end marker): what a later run can reuse."""
        keep = {p for index in range(len(list(self.path.glob("chunk_*.json"))) + 1)
                if self.finished(index) for p in (self.chunk(index), self.chunk(index).with_suffix(".json"))}
        keep.add(self.path / "end.json")
        shutil.rmtree(self.frames_dir, ignore_errors=True)
        for stray in set(self.path.iterdir()) - keep:
            if stray.is_file():
                stray.unlink(missing_ok=True)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def remove_stale(root: Path) -> None:
    """Remove workspaces abandoned for STALE_DAYS under `root`: their targets will not resume."""
    cutoff = time.time() - STALE_DAYS * 86400
    with contextlib.suppress(OSError):
        for workspace in root.glob(f"{PREFIX}*"):
            with contextlib.suppress(OSError):
                if workspace.is_dir() and workspace.stat().st_mtime < cutoff:
                    shutil.rmtree(workspace, ignore_errors=True)


def write_json(path: Path, data: dict) -> None:
    """Write JSON under a temp name and rename: a reader sees the whole file or none."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def _place(source: Path, destination: Path) -> None:
    """Rename when both are on one file system, else copy under a temp name and rename."""
    try:
        source.replace(destination)
    except OSError:
        tmp = destination.with_name(f".{destination.name}.{os.getpid()}.tmp")
        shutil.copyfile(source, tmp)
        tmp.replace(destination)
        source.unlink(missing_ok=True)

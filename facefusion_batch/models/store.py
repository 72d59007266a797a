"""Where model files live and whether they are intact.

A models directory holds `<name>.onnx`, optionally with FaceFusion's `<name>.hash` sidecar (CRC32 of the
file as 8 hex digits), so a FaceFusion `.assets/models` directory can be used as it is. Checksums are
remembered per (path, size, mtime) in the cache directory so a 550 MB file is hashed once, not every run.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from facefusion_batch.errors import TargetError
from facefusion_batch.models.catalog import ModelSpec
from facefusion_batch.targets import special_kind

Status = Literal["ok", "unverified", "missing", "corrupt"]
_BLOCK = 1 << 20


@dataclass(frozen=True)
class ModelState:
    spec: ModelSpec
    path: Path
    status: Status
    detail: str


def crc32_of(path: Path) -> str:
    value = 0
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK):
            value = zlib.crc32(block, value)
    return f"{value & 0xFFFFFFFF:08x}"


HASH_MIN_RATE = 10_000_000  # bytes/s: slower than this (plus a minute) means a stalled disk or network mount


def sha256_of(path: Path, stop: threading.Event | None = None) -> str:
    """The file's sha256. Only a regular file is read (a FIFO or a device would never end), and only the
    bytes it had when opened: a file that grows or shrinks meanwhile is refused, and so is a read slower
    than HASH_MIN_RATE. With `stop`, hashing gives up (raising InterruptedError) once it is set."""
    digest = hashlib.sha256()
    _refuse_special(path, os.stat(path).st_mode)  # a socket can't even be opened
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # opening a FIFO must not wait for a writer
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        _refuse_special(path, info.st_mode)  # it may have been replaced meanwhile
        left = info.st_size
        limit = 60 + left / HASH_MIN_RATE
        deadline = time.monotonic() + limit
        while left > 0:
            block = handle.read(min(_BLOCK, left))
            if stop is not None and stop.is_set():
                raise InterruptedError(f"{path}: hashing stopped")
            if not block:
                raise TargetError(f"{path}: the file shrank while it was read (being rewritten?); it is tried "
                                  "again once it changes")
            if time.monotonic() > deadline:
                raise TargetError(f"{path}: reading it took over {limit:.0f} s "
                                  "(a stalled disk or network mount?)")
            digest.update(block)
            left -= len(block)
        if handle.read(1):
            raise TargetError(f"{path}: the file grew while it was read (still being written?); it is tried "
                              "again once it changes")
    return digest.hexdigest()


def _refuse_special(path: Path, mode: int) -> None:
    kind = special_kind(mode)
    if kind is not None:
        raise TargetError(f"{path}: is {kind}, not a regular file; only video and image files can be processed")


class ChecksumMemo:
    """Checksums remembered by (path, size, mtime) in a JSON file; a changed file is hashed again."""

    def __init__(self, file: Path | None) -> None:
        self._file = file
        self._data: dict[str, str] = {}
        if file is not None and file.is_file():
            try:
                self._data = json.loads(file.read_text())
            except (OSError, ValueError):
                self._data = {}

    def get(self, path: Path, kind: str) -> str:
        stat = path.stat()
        key = f"{kind}:{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
        if key not in self._data:
            self._data[key] = crc32_of(path) if kind == "crc32" else sha256_of(path)
            self._save()
        return self._data[key]

    def _save(self) -> None:
        if self._file is None:
            return
        try:
            self._file.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._file.with_suffix(".tmp")
            tmp.write_text(json.dumps(self._data))
            tmp.replace(self._file)
        except OSError:
            pass  # a read-only cache only costs re-hashing next time


def inspect(models_path: Path, spec: ModelSpec, memo: ChecksumMemo) -> ModelState:
    """Check one model file against its sha256 (when known) or its FaceFusion .hash sidecar."""
    path = models_path / spec.file
    if not path.is_file():
        return ModelState(spec, path, "missing", f"{path} not found")
    if path.stat().st_size == 0:
        return ModelState(spec, path, "corrupt", f"{path} is empty")
    if spec.sha256:
        actual = memo.get(path, "sha256")
        if actual != spec.sha256:
            return ModelState(spec, path, "corrupt", f"{path}: sha256 {actual} != expected {spec.sha256}")
        return ModelState(spec, path, "ok", "sha256 matches")
    sidecar = models_path / spec.hash_file
    if not sidecar.is_file():
        return ModelState(spec, path, "unverified", f"no {sidecar.name} sidecar to check it against")
    expected = sidecar.read_text(encoding="ascii", errors="replace").strip().lower()
    actual = memo.get(path, "crc32")
    if actual != expected:
        return ModelState(spec, path, "corrupt", f"{path}: CRC32 {actual} != {expected} in {sidecar.name}")
    return ModelState(spec, path, "ok", f"CRC32 matches {sidecar.name}")


def usable(state: ModelState) -> bool:
    return state.status in ("ok", "unverified")


def fix_hint(state: ModelState) -> str:
    name = state.spec.name
    if state.status == "missing":
        return (f"run `ffb models download {name}`, or put {state.spec.file} (from {state.spec.url}) in "
                f"{state.path.parent} by hand")
    return f"delete {state.path} and run `ffb models download {name}`"

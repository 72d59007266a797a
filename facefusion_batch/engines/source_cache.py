"""Source faces computed once per (image content, engine models): in memory and on disk."""
from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Callable

import numpy as np

from facefusion_batch.models.store import sha256_of

Record = dict[str, np.ndarray]


class SourceCache:
    """Records keyed by sha256 of the image file and the engine's model key; `computed` counts misses."""

    def __init__(self, directory: Path | None) -> None:
        self._directory = directory
        self._memory: dict[str, Record] = {}
        self._lock = threading.Lock()
        self.computed = 0

    def get(self, image: Path, model_key: str, compute: Callable[[], Record]) -> Record:
        key = f"{sha256_of(image)[:32]}-{hashlib.sha256(model_key.encode()).hexdigest()[:12]}"
        with self._lock:
            if key in self._memory:
                return self._memory[key]
            record = self._load(key)
            if record is None:
                record = compute()
                self.computed += 1
                self._store(key, record)
            self._memory[key] = record
            return record

    def _file(self, key: str) -> Path | None:
        return None if self._directory is None else self._directory / "sources" / f"{key}.npz"

    def _load(self, key: str) -> Record | None:
        file = self._file(key)
        if file is None or not file.is_file():
            return None
        try:
            with np.load(file) as data:
                return {name: data[name] for name in data.files}
        except (OSError, ValueError):
            return None  # a damaged cache entry is recomputed

    def _store(self, key: str, record: Record) -> None:
        file = self._file(key)
        if file is None:
            return
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            tmp = file.with_name(file.name + ".tmp.npz")
            np.savez(tmp, **record)
            tmp.replace(file)
        except OSError:
            pass  # an unwritable cache only costs recomputing next run

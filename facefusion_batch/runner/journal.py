"""The journal: one SQLite row per target, so re-runs skip finished work and resume interrupted work.

A row holds the target's content hash (recomputed only when its size or mtime changes), the key of every
setting and model that shapes the output, the status, timings, attempts, the last error, and the output's
size and mtime when it was written (an output that changed or vanished since is redone) and its sha256 (for
`ffb verify`: a copy of the output tree is unchanged although every mtime differs).
"""
from __future__ import annotations

import dataclasses
import errno
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from facefusion_batch.errors import OutputFull
from facefusion_batch.models.store import sha256_of
from facefusion_batch.targets import resolved

_SCHEMA = """
CREATE TABLE IF NOT EXISTS targets (
    target TEXT PRIMARY KEY,
    output TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    settings_key TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    attempts INTEGER NOT NULL DEFAULT 0,
    frames INTEGER NOT NULL DEFAULT 0,
    seconds REAL NOT NULL DEFAULT 0,
    output_size INTEGER,
    output_mtime_ns INTEGER,
    updated REAL NOT NULL,
    ctime_ns INTEGER,
    output_sha256 TEXT,
    content_gate TEXT,
    watermark TEXT
)
"""
FINISHED = ("done", "no_face")
# The content hash recorded for a target that could not be read: it fails, and is skipped until it changes.
UNREADABLE = "unreadable"
GONE = (-1, 0, 0)  # the stamp of a target that vanished before its outcome was recorded


@dataclass(frozen=True)
class Entry:
    target: str
    output: str
    size: int
    mtime_ns: int
    content_hash: str
    settings_key: str
    status: str
    reason: str
    attempts: int
    frames: int
    seconds: float
    output_size: int | None
    output_mtime_ns: int | None
    updated: float
    ctime_ns: int | None = None  # None in rows written before it was recorded
    output_sha256: str | None = None  # of the output as written; None before it was recorded, or no output
    content_gate: str | None = None  # whether the content gate ran on the target (see provenance.content_gate)
    watermark: str | None = None  # the invisible watermark's payload in the output (8 hex digits)


def text_of(value: object) -> str:
    """`value` as text SQLite can store: a file name that is not UTF-8 (Python keeps its bytes as lone
    surrogates) gets them written as \\udcXX escapes, the same ones every time, instead of failing."""
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")


_SQLITE_FULL, _SQLITE_IOERR = 13, 10
_NEARLY_FULL = 1 << 20  # bytes free below which an I/O error of the journal is its disk being full


class Journal:
    """Thread-compatible: one connection per instance, used from the batch's main thread. A write that
    fails for lack of space raises OutputFull (SQLite leaves the journal as it was before that write)."""

    def __init__(self, path: Path, read_only: bool = False) -> None:
        """Open (creating it) the journal at `path`; `read_only`: an existing one, changing nothing."""
        self.path = path
        if read_only:
            self._db = sqlite3.connect(path.as_uri() + "?mode=ro", uri=True)
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(targets)")}
            for column in ("ctime_ns INTEGER", "output_sha256 TEXT", "content_gate TEXT", "watermark TEXT"):
                if column.split()[0] not in columns:  # a journal written by an older ffb
                    self._db.execute(f"ALTER TABLE targets ADD COLUMN {column}")
        except (sqlite3.Error, OSError) as exc:
            if self.full(exc):
                raise OutputFull(f"{path}: output disk full: the journal can't be written; free space in "
                                 f"{path.parent} or choose another --output") from None
            raise

    def full(self, exc: BaseException) -> bool:
        """Whether a write of this journal failed for lack of space: SQLite says "database or disk is
        full", or an I/O error while its disk has next to nothing free (WAL and shared-memory files)."""
        if isinstance(exc, OSError):
            return exc.errno in (errno.ENOSPC, errno.EDQUOT)
        if not isinstance(exc, sqlite3.Error):
            return False
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        if code == _SQLITE_FULL or "is full" in str(exc):
            return True
        if code != _SQLITE_IOERR and "disk I/O error" not in str(exc):
            return False
        try:
            return shutil.disk_usage(self.path.parent).free < _NEARLY_FULL
        except OSError:
            return False

    def close(self) -> None:
        self._db.close()

    def get(self, target: Path) -> Entry | None:
        found = read_entries(self._db, "WHERE target = ?", (text_of(resolved(target)),))
        return found[0] if found else None

    def by_watermark(self, payload: str) -> list[Entry]:
        """The entries whose output carries this watermark payload."""
        return read_entries(self._db, "WHERE watermark = ?", (payload,))

    def entries(self) -> Iterator[Entry]:
        yield from read_entries(self._db, "ORDER BY target")

    def writer_of(self, output: Path, tree: Path) -> Entry | None:
        """The entry whose output is `output` (a file inside `tree`, the output tree this journal serves)."""
        resolved_output = output.resolve()
        relative = resolved_output.relative_to(tree).parts
        entries = list(self.entries())
        exact = [e for e in entries if Path(e.output).is_absolute() and Path(e.output).resolve() == resolved_output]
        # A relative output is relative to where that run started, an absolute one may name the tree before
        # it was copied or moved: match it by its path inside the tree, when only one entry has it.
        tail = [e for e in entries if Path(e.output).parts[-len(relative):] == relative]
        matches = exact or (tail if len(tail) == 1 else [])
        return matches[0] if matches else None

    def cached_hash(self, target: Path) -> str | None:
        """The journal's sha256 of the file while its size, mtime and ctime are unchanged, else None (ctime
        moves on a chmod too: a file made readable is looked at again)."""
        size, mtime, ctime = stamp(target)
        entry = self.get(target)
        if entry and (entry.size, entry.mtime_ns) == (size, mtime) and entry.ctime_ns in (None, ctime):
            return entry.content_hash
        return None

    def content_hash(self, target: Path, hashed: str | None = None) -> str:
        """sha256 of the file: the journal's value while size and mtime are unchanged, else `hashed` (when
        it was computed ahead of time), else hashed now."""
        return self.cached_hash(target) or hashed or sha256_of(target)

    def is_current(self, target: Path, output: Path, content: str, key: str) -> Entry | None:
        """The entry when the target finished with this content and settings and its output is intact."""
        entry = self.get(target)
        if not entry or entry.content_hash != content or entry.settings_key != key or entry.output != text_of(output):
            return None
        if entry.status in FINISHED:
            try:
                stat = output.stat()
            except OSError:
                return None
            if (stat.st_size, stat.st_mtime_ns) != (entry.output_size, entry.output_mtime_ns):
                return None
        return entry

    def record(self, target: Path, output: Path, content: str, key: str, status: str, reason: str = "",
               frames: int = 0, seconds: float = 0.0, content_gate: str = "", watermark: str = "",
               read: tuple[int, ...] | None = None) -> None:
        """`read` is the file's identity (dev, inode, size, mtime, ctime) when `content` was hashed: the row
        holds what was read, so a file renamed over the target meanwhile is hashed again by the next run."""
        try:
            size, mtime, ctime = read[2:5] if read is not None else stamp(target)
        except FileNotFoundError:  # deleted while it was processed: its outcome is still recorded
            size, mtime, ctime = GONE
        out_size = out_mtime = out_hash = None
        if status in FINISHED and output.exists():
            out_stat = output.stat()
            out_size, out_mtime = out_stat.st_size, out_stat.st_mtime_ns
            try:
                out_hash = sha256_of(output)
            except OSError:
                out_hash = None
        previous = self.get(target)
        attempts = (previous.attempts if previous and previous.content_hash == content else 0)
        attempts += status != "running"
        try:
            self._db.execute(
                "INSERT OR REPLACE INTO targets (target, output, size, mtime_ns, content_hash, settings_key, "
                "status, reason, attempts, frames, seconds, output_size, output_mtime_ns, updated, ctime_ns, "
                "output_sha256, content_gate, watermark) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (text_of(resolved(target)), text_of(output), size, mtime, content, key, status, text_of(reason),
                 attempts, frames, seconds, out_size, out_mtime, time.time(), ctime, out_hash, content_gate or None,
                 watermark or None))
        except sqlite3.Error as exc:
            if self.full(exc):
                raise OutputFull(f"output disk full: the journal {self.path} can't be written") from None
            raise


def read_entries(db: sqlite3.Connection, where: str = "", params: tuple = ()) -> list[Entry]:
    """The journal's rows as entries, read by column name: columns that older ffb versions added in another
    order, or lack (a journal opened read-only is never altered), can't shift the fields."""
    present = {row[1] for row in db.execute("PRAGMA table_info(targets)")}
    names = [f.name for f in dataclasses.fields(Entry) if f.name in present]
    rows = db.execute(f"SELECT {', '.join(names)} FROM targets {where}", params).fetchall()
    return [Entry(**dict(zip(names, row))) for row in rows]


def stamp(path: Path) -> tuple[int, int, int]:
    """(size, mtime_ns, ctime_ns) of the file, or of the link itself when it leads nowhere (a dangling link
    is then recorded like any file that fails, and looked at again once it changes)."""
    try:
        info = path.stat()
    except OSError:  # a link pointing nowhere, or round in a loop
        info = path.lstat()  # raises when there is nothing at all
    return info.st_size, info.st_mtime_ns, info.st_ctime_ns


def lookup(path: Path, watermark: str | None = None, output: Path | None = None) -> dict[str, Any] | None:
    """What the journals say of the run that wrote `path` (`ffb verify`), or None; journals are only read.
    The entry whose output `path` is, in the nearest enclosing output tree's journal; else, for a copy found
    elsewhere (renamed, stripped, re-encoded) that carries a `watermark` payload, the entry whose output has
    that payload, in `output`'s journal when given, else in an enclosing tree's."""
    return output_record(path) or (watermark_record(path, watermark, output) if watermark else None)


def _read(journal_path: Path, read: Callable[[Journal], Any]) -> Any:
    """`read` over the journal at `journal_path`, opened read-only (None when it can't be read: an older
    journal without a column asked for, a damaged file)."""
    try:
        journal = Journal(journal_path, read_only=True)
        try:
            return read(journal)
        finally:
            journal.close()
    except sqlite3.Error:
        return None


def _summary(journal_path: Path, entry: Entry) -> dict[str, Any]:
    return {"journal": str(journal_path), "target": entry.target, "status": entry.status,
            "content_hash": entry.content_hash, "frames": entry.frames, "seconds": round(entry.seconds, 2),
            "updated": entry.updated}


def output_record(path: Path) -> dict[str, Any] | None:
    """The nearest enclosing output tree's (`<tree>/.ffb/journal.sqlite`) entry for the output `path`."""
    resolved_path = path.resolve()
    for tree in resolved_path.parents:
        journal_path = tree / ".ffb" / "journal.sqlite"
        if not journal_path.is_file():
            continue
        entry = _read(journal_path, lambda journal: journal.writer_of(resolved_path, tree))
        if entry is None:
            return None
        return {**_summary(journal_path, entry), "output_unchanged": _unchanged(path, entry)}
    return None


def watermark_record(path: Path, payload: str, output: Path | None) -> dict[str, Any] | None:
    """The entry whose output carries the watermark `payload`: in `output`'s journal when given, else in the
    journal of an output tree that encloses `path`."""
    trees = [output] if output is not None else list(path.resolve().parents)
    for tree in trees:
        journal_path = tree / ".ffb" / "journal.sqlite"
        if not journal_path.is_file():
            continue
        entries = _read(journal_path, lambda journal: journal.by_watermark(payload))
        if not entries:
            return None
        return {**_summary(journal_path, entries[0]), "output": entries[0].output, "matched_by": "watermark",
                "output_unchanged": False}
    return None


def _unchanged(path: Path, entry: Entry) -> bool:
    """Whether `path` holds the bytes the journal's run wrote: by their sha256 (a copy keeps them, not its
    mtime); rows of an ffb that recorded no output hash by size and mtime."""
    if entry.output_sha256:
        try:
            return sha256_of(path) == entry.output_sha256
        except OSError:
            return False
    stat = path.stat()
    return (stat.st_size, stat.st_mtime_ns) == (entry.output_size, entry.output_mtime_ns)

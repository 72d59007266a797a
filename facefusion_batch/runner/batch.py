"""The run's side of a batch: the summary, the journal's decision on each target, the output tree's lock
and state."""
from __future__ import annotations

import contextlib
import glob
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from facefusion_batch.errors import OutputError, TargetError
from facefusion_batch.media import temp_stem
from facefusion_batch.models.store import sha256_of
from facefusion_batch.runner.journal import FINISHED, UNREADABLE, Journal
from facefusion_batch.runner.lock import RunLock
from facefusion_batch.runner.progress import Reporter
from facefusion_batch.settings import Settings
from facefusion_batch.targets import Target
from facefusion_batch.workflow import guard
from facefusion_batch.workflow.identity import Stamp, stamp_of
from facefusion_batch.workflow.job import refuse_special
from facefusion_batch.workflow.outcome import STATUSES, Outcome
from facefusion_batch.workflow.output_guard import check_output_dir
from facefusion_batch.workflow.processor import settings_key
from facefusion_batch.workflow.workspace import remove_stale


INTERRUPTED = "interrupted; finished chunks are kept for the next run, partial outputs removed"


@dataclass
class BatchResult:
    engine: str
    models: list[str]
    providers: list[str]
    outcomes: list[Outcome] = field(default_factory=list)
    source_embeddings_computed: int = 0
    detector_calls: int = 0
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)  # said once per run, e.g. models not for commercial use

    @property
    def failed(self) -> int:
        return sum(o.status == "failed" for o in self.outcomes)

    def to_dict(self) -> dict:
        counts = {s: sum(o.status == s for o in self.outcomes) for s in STATUSES}
        return {**asdict(self), "counts": counts, "ok": self.failed == 0 and not self.interrupted}


def state_dir(settings: Settings) -> Path:
    """Where the journal and the lock of an output tree live."""
    return settings.state_path or settings.output_dir / ".ffb"


def open_state(settings: Settings, wait: bool, reporter: Reporter) -> tuple[RunLock, Journal]:
    """Lock the output tree (before any model loads, so a second run leaves at once) and open its journal;
    then clear what killed runs left: hidden partial outputs and old abandoned workspaces."""
    check_output_dir(settings.output_dir)
    lock = RunLock(state_dir(settings) / "lock")
    lock.acquire(wait=wait, on_wait=reporter.message)
    # With an output file (-o result.mp4) its directory is not ffb's to search: only the file's own partials.
    output_file = settings.output_file
    partials = (settings.output_dir.glob(f"{glob.escape(temp_stem(output_file))}*.tmp*") if output_file
                else settings.output_path.rglob(".*.tmp*"))
    for partial in partials:
        if ".ffb-" in partial.name and partial.is_file():
            partial.unlink(missing_ok=True)
    remove_stale(settings.temp_path)
    return lock, Journal(state_dir(settings) / "journal.sqlite")


def _when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def claim(journal: Journal, target: Target, output_key: str, force: bool, retry_failed: bool,
          hashed: str | None = None) -> tuple[Outcome | None, str, str, Stamp | None]:
    """The journal's decision on a target: (an outcome when it is skipped or can't be read, else None; its
    content hash; its resume key; the file's identity when it was hashed, which is what the journal records
    and what is checked again before its output is published). A target to be done is recorded as
    `running` (the caller records the end). `hashed` is the file's sha256 when it was computed ahead of
    time. A target that can't be read at all is recorded as failed, so later runs skip it until it changes
    (a chmod counts)."""
    try:
        read: Stamp | None = stamp_of(target.path)  # before hashing: a change while it is hashed is seen later
    except OSError:
        read = None  # a broken link or a loop: the journal knows it by the link itself (see below)
    try:
        content = journal.cached_hash(target.path)
        if content is None:
            refuse_special(target)  # before any read
            content = hashed or sha256_of(target.path)
    except (TargetError, OSError) as exc:
        reason = guard.failure_reason(target.path, exc)
        with contextlib.suppress(OSError, sqlite3.Error, OutputError):  # e.g. nothing at that path any more
            journal.record(target.path, target.output, UNREADABLE, output_key, "failed", reason)
        return Outcome(str(target.path), "failed", reason=reason), UNREADABLE, "", None
    skip = skip_outcome(journal, target, content, output_key, force, retry_failed)
    if skip is not None:
        return skip, content, "", read
    journal.record(target.path, target.output, content, output_key, "running", read=read)
    return (None, content, settings_key({"content": content, "settings": output_key, "output": str(target.output)}),
            read)


def skip_outcome(journal: Journal, target: Target, content: str | None, output_key: str, force: bool,
          retry_failed: bool) -> Outcome | None:
    """The skip outcome the journal gives a target with this content hash (None: unknown, i.e. changed).
    A changed or new target is always work; `retry_failed` also retries unchanged failures."""
    entry = None if force or content is None else journal.is_current(target.path, target.output, content,
                                                                       output_key)
    last_failed = entry is not None and entry.status == "failed"
    if entry and entry.status in FINISHED:
        return Outcome(str(target.path), "skipped", str(target.output),
                       f"unchanged since it was {entry.status} ({_when(entry.updated)}); --force redoes it")
    if last_failed and not retry_failed:
        return Outcome(str(target.path), "skipped",
                       reason=f"failed before and unchanged; --retry-failed tries again: {entry.reason}")
    return None


def needs_hash(journal: Journal | None, target: Target) -> bool:
    """Whether the journal will have to hash `target` (it has no current value for the file)."""
    if journal is None:
        return False
    try:
        return journal.cached_hash(target.path) is None
    except OSError:
        return False


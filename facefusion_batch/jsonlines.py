"""ffb's one convention for what `--json` prints, used by every command.

- One JSON document per line (never indented), written and flushed at once: a script tailing the output, or a
  log a killed process leaves, has every line already printed whole.
- Times are ISO-8601 UTC with milliseconds and a Z (`2026-12-02T00:53:21.256Z`): a value under one of
  TIME_KEYS given as epoch seconds or a datetime is written so.
- Paths are absolute (`absolute`; a `Path` value is made so here), so a line means the same whatever
  directory the reader runs in.
- Text is UTF-8; a file name that is not (its bytes kept as lone surrogates) shows them as the text \\udcXX.
"""
from __future__ import annotations

import json
import os
import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

TIME_KEYS = frozenset({"started", "finished", "updated", "time"})


def utc(moment: float | datetime | None = None) -> str:
    """A time (epoch seconds, a datetime, or now) as ISO-8601 UTC: 2026-12-02T00:53:21.256Z."""
    if moment is None:
        moment = datetime.now(timezone.utc)
    elif not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(float(moment), timezone.utc)
    elif moment.tzinfo is None:
        moment = moment.astimezone()  # a naive datetime is local time
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def absolute(path: str | os.PathLike | None) -> str | None:
    """The path as an absolute path (symbolic links kept as named), or None for none; '' stays ''."""
    if path is None or path == "":
        return path  # type: ignore[return-value]
    return os.path.abspath(os.fsdecode(path))


def normalise(data: Any, key: str = "") -> Any:
    """`data` in the convention: times under TIME_KEYS as ISO UTC, Path values absolute, nested alike."""
    if isinstance(data, dict):
        return {k: normalise(v, str(k)) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [normalise(v) for v in data]
    if isinstance(data, Path):
        return absolute(data)
    if key in TIME_KEYS and (isinstance(data, datetime) or
                             (isinstance(data, (int, float)) and not isinstance(data, bool))):
        return utc(data)
    if isinstance(data, datetime):
        return utc(data)
    return data


def dumps(data: Any) -> str:
    """One line of JSON in the convention."""
    return _utf8(json.dumps(normalise(data), default=str, ensure_ascii=False))


def emit(data: Any, stream: IO[str] | None = None) -> None:
    """Print one document as one line and flush it."""
    out = stream or sys.stdout
    out.write(dumps(data) + "\n")
    out.flush()


def _utf8(text: str) -> str:
    return re.sub("[\ud800-\udfff]", lambda m: f"\\\\u{ord(m.group()):04x}", text)

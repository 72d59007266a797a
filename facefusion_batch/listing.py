"""Lists and long texts inside one-line messages, capped. What a user's file, command line or media holds
can be huge (a profile with 200,000 unknown sections, a video with 5,000 subtitle streams); a message names
the first few and counts the rest, and no line grows past a few kilobytes."""
from __future__ import annotations

from typing import Callable, Iterable, Sized

SHOWN = 50  # items a message lists before "and N more"
ITEM_CHARS = 1000  # characters of one listed item (a section name may be a megabyte)
LINE_CHARS = 8000  # characters of one message line


def capped(text: str, limit: int = LINE_CHARS) -> str:
    """`text` in at most about `limit` characters: its start and its end (where the fix usually is)."""
    text = str(text)
    if len(text) <= limit:
        return text
    tail = limit // 3
    head = limit - tail
    return f"{text[:head]} … ({len(text) - head - tail} characters left out) … {text[-tail:]}"


def listed(items: Iterable[object], separator: str = ", ", limit: int = SHOWN, total: int | None = None) -> str:
    """The first `limit` items joined by `separator` (each capped), then "and N more"; `total` is the
    number of items when `items` holds only the first ones."""
    shown: list[str] = []
    count = 0
    for item in items:
        count += 1
        if len(shown) < limit:
            shown.append(capped(str(item), ITEM_CHARS))
    more = (count if total is None else total) - len(shown)
    return separator.join(shown + ([f"and {more} more"] if more > 0 else []))


class Problems(Sized):
    """Problems found in one pass over a user's input: every one counted, only the first `limit` worded
    (wording one may cost a fuzzy match for "did you mean": 200,000 of them must not)."""

    def __init__(self, limit: int = SHOWN) -> None:
        self.limit = limit
        self.count = 0
        self.worded: list[str] = []

    def add(self, problem: str | Callable[[], str]) -> None:
        self.count += 1
        if len(self.worded) < self.limit:
            self.worded.append(problem() if callable(problem) else problem)

    def __len__(self) -> int:
        return self.count

    def text(self, separator: str = "; ") -> str:
        return listed(self.worded, separator, self.limit, total=self.count)

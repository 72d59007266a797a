"""Tables on stdout that fit the terminal, never cut or split a value, and print every value literally.

On a terminal a table is drawn only when it fits the terminal's width; otherwise each row becomes a line of
its own that the terminal wraps (so a long path stays one piece to copy). Off a terminal (a pipe, a file)
nothing is wrapped or cut: the table is as wide as its content. Values are `Text`, never markup: a file
named `[bold]x.mp4` or `a[/x].mp4` prints as it is.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

# Off a terminal: wide enough for any row, so rich never wraps one.
_UNBOUNDED = 1 << 16


def stdout_console(stderr: bool = False) -> Console:
    """A console for ffb's reports: the terminal's width on a terminal, unbounded elsewhere; no markup,
    emoji codes or highlighting applied to what it prints."""
    console = Console(stderr=stderr, emoji=False, highlight=False, markup=False)
    if not console.is_terminal:
        console = Console(stderr=stderr, emoji=False, highlight=False, markup=False, width=_UNBOUNDED)
    return console


def print_table(columns: Sequence[str], rows: Sequence[Sequence[object]], title: Optional[str] = None,
                line: Optional[Callable[[Sequence[str]], str]] = None, console: Optional[Console] = None) -> None:
    """Print `rows` under `columns`; `line` turns a row into one line for a terminal too narrow for the
    table (default: the first value, then `column value` pairs)."""
    console = console or stdout_console()
    cells = [["" if value is None else str(value) for value in row] for row in rows]
    table = Table(*columns, title=Text(title) if title else None)
    for row in cells:
        table.add_row(*(Text(value) for value in row))
    needed = console.measure(table, options=console.options.update_width(_UNBOUNDED)).maximum
    if not console.is_terminal or needed <= console.width:
        console.print(table)
        return
    if title:
        console.print(Text(title), soft_wrap=True)
    for row in cells:
        console.print(Text((line or _default_line(columns))(row)), soft_wrap=True)


def print_line(text: str, console: Optional[Console] = None) -> None:
    """One line, literally, unwrapped."""
    (console or stdout_console()).print(Text(text), soft_wrap=True)


def _default_line(columns: Sequence[str]) -> Callable[[Sequence[str]], str]:
    def line(row: Sequence[str]) -> str:
        pairs = [f"{column} {value}" for column, value in zip(columns[1:], row[1:]) if value]
        return f"{row[0]}: {', '.join(pairs)}" if pairs else row[0]

    return line

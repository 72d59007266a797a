"""Tables fit the terminal, never cut or split a name, and print every name literally (issue 11.7, 10.3)."""
from __future__ import annotations

import io
import json

import cv2
import pytest
from rich.console import Console

from conftest import face_frame, grace_hopper
from facefusion_batch.cli import main
from facefusion_batch.tables import print_table

LONG = "/srv/uploads/2026/november/a-rather-long-folder-name-for-the-campaign/" + "clip_with_long_name_" * 4 + ".mp4"
ODD = ["clips/a[/x].mp4", "clips/[bold]b[/bold].mp4", "clips/:smile: [red]c.mp4", "clips/[link=http://x]d.mp4"]


def terminal(width: int) -> Console:
    return Console(record=True, width=width, height=20, force_terminal=True, file=io.StringIO())


def test_a_table_too_wide_for_the_terminal_becomes_one_line_per_row_with_names_whole():
    console = terminal(80)
    print_table(("target", "status", "output / reason"), [(LONG, "done", LONG.replace("uploads", "out"))],
                title="engine offline", console=console)
    lines = console.export_text().splitlines()
    assert any(LONG in line and LONG.replace("uploads", "out") in line for line in lines)


def test_a_table_that_fits_is_drawn_within_the_terminal():
    console = terminal(80)
    print_table(("target", "status"), [("a.mp4", "done")], console=console)
    text = console.export_text()
    assert "┃ target" in text and all(len(line) <= 80 for line in text.splitlines())


@pytest.mark.parametrize("width", [40, 80, 200])
def test_names_print_literally(width):
    console = terminal(width)
    print_table(("target", "status"), [(name, "[failed]") for name in ODD], title="journal of out[/x]",
                console=console)
    text = console.export_text()
    for name in ODD:
        assert name in text
    assert "[failed]" in text and "journal of out[/x]" in text


def test_print_settings_off_a_terminal_keeps_every_value_whole(tmp_path, capsys):
    temp = tmp_path / ("deep-" * 40) / "[temp]"
    assert main(["run", "--print-settings", "--temp-path", str(temp)]) == 0
    out = capsys.readouterr().out
    assert any(str(temp) in line for line in out.splitlines())


@pytest.fixture
def odd_batch(offline_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cv2.imwrite("source.jpg", grace_hopper())
    (tmp_path / "clips" / "a[").mkdir(parents=True)  # a path with [/x] in it: a directory a[ holding x].png
    for name in ("clips/a[/x].png", "clips/[bold]b.png"):
        cv2.imwrite(name, face_frame())
    (tmp_path / "clips" / "[red]broken.png").write_bytes(b"not an image")
    return tmp_path


def test_summary_and_status_print_markup_looking_names_literally(odd_batch, capsys):
    assert main(["run", "-s", "source.jpg", "-t", "clips", "-t", "clips/[bold]b.png", "-o", "out[/x]", "-q"]) == 1
    out = capsys.readouterr().out
    for name in ("clips/a[/x].png", "clips/[bold]b.png", "clips/[red]broken.png", "out[/x]/a[/x].png"):
        assert name in out, out
    assert main(["status", "out[/x]"]) == 0
    out = capsys.readouterr().out
    for name in ("clips/a[/x].png", "clips/[bold]b.png", "clips/[red]broken.png", "journal of out[/x]"):
        assert name in out, out
    assert main(["status", "out[/x]", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 3

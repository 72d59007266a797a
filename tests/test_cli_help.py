"""`ffb run --help` on an 80-column terminal: every flag's name whole, in groups, long choice lists readable."""
from __future__ import annotations

import re

import pytest
import typer

from facefusion_batch.cli import RUN_HELP_PANELS, app, main


def _run_flags() -> list[str]:
    command = typer.main.get_command(app).commands["run"]
    return [name for param in command.params for name in (*param.opts, *param.secondary_opts)
            if name.startswith("--")]


@pytest.mark.parametrize("columns", ["80", "100"])
def test_every_run_flag_is_shown_whole(capsys, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    assert main(["run", "--help"]) == 0
    text = capsys.readouterr().out
    assert "…" not in text
    shown = set(re.findall(r"--[a-z0-9-]+", text))
    missing = [flag for flag in _run_flags() if flag not in shown]
    assert not missing, missing


def test_run_help_is_grouped_and_lists_long_choices_in_words(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["run", "--help"]) == 0
    text = capsys.readouterr().out
    for panel in RUN_HELP_PANELS:
        assert f"─ {panel} ─" in text, panel
    flat = " ".join(text.replace("│", " ").split())
    assert "--face-swapper-model MODEL" in flat
    assert "hififace_unofficial_256" in flat and "best-worst, worst-best" in flat  # the choices, as words
    assert "--face-selector-gender GENDER" in flat and "Choices: auto, female, male." in flat


def test_long_choice_lists_are_still_checked(capsys):
    assert main(["run", "--face-selector-order", "middle-out", "--print-settings"]) == 2
    assert "middle-out" in capsys.readouterr().err


def _commands():
    group = typer.main.get_command(app)
    for name, command in group.commands.items():
        if isinstance(command, typer.core.TyperGroup):
            yield from ((f"{name} {sub}", [name, sub]) for sub in command.commands)
        else:
            yield name, [name]


@pytest.mark.parametrize("name, argv", list(_commands()))
def test_no_command_help_leaves_a_word_alone_on_a_line(capsys, monkeypatch, name, argv):
    """The description paragraphs are wrapped by the terminal, not by the docstring's line breaks (which
    left one or two words on a line of their own at most widths)."""
    monkeypatch.setenv("COLUMNS", "100")
    assert main([*argv, "--help"]) == 0
    text = capsys.readouterr().out
    description = text.split("╭")[0]  # before the first panel of options
    lines = [line.strip() for line in description.splitlines()]
    for before, line, after in zip(lines, lines[1:], lines[2:]):
        if before and after and line and not line.startswith(("ffb ", "Usage")):
            assert len(line.split()) > 2, f"{name}: {line!r} alone on a line"


def test_reflow_joins_paragraph_lines_and_keeps_example_blocks():
    from facefusion_batch.cli import reflow

    assert reflow("One\ntwo three.\n\nFour\nfive.") == "One two three.\n\nFour five."
    block = "Examples: ffb a\n          ffb b"
    assert reflow(f"Text\nhere.\n\n{block}") == f"Text here.\n\n{block}"

"""Every setting's flag is made from its declaration: a setting declared in settings.py gets its `ffb run` and
`ffb watch` flag, help text and help panel without a change to the CLI."""
from __future__ import annotations

import json
import re
import typing

import pytest
import typer

from facefusion_batch import cli_options
from facefusion_batch import settings as settings_module
from facefusion_batch.cli import app, main
from facefusion_batch.cli_options import NO_FLAG_OF_ITS_OWN, PANEL_OF_SECTION, RunOnly, Shared
from facefusion_batch.settings import DECLARED, SECTIONS, Declaration, default_of


def _flag(name: str) -> str:
    return f"--{name.replace('_', '-')}"


def _params(command: str) -> dict[str, typing.Any]:
    return {param.name: param for param in typer.main.get_command(app).commands[command].params}


@pytest.mark.parametrize("command", ["run", "watch"])
def test_every_setting_has_a_flag_or_a_named_reason(capsys, monkeypatch, command):
    monkeypatch.setenv("COLUMNS", "200")
    assert main([command, "--help"]) == 0
    shown = set(re.findall(r"--[a-z0-9-]+", capsys.readouterr().out))
    flags = {flag for param in _params(command).values() for flag in (*param.opts, *param.secondary_opts)}
    for name in DECLARED:
        if name in NO_FLAG_OF_ITS_OWN:
            replacement = re.findall(r"--[a-z0-9-]+", NO_FLAG_OF_ITS_OWN[name])[0]  # the reason starts with it
            assert replacement in flags and replacement in shown, (name, NO_FLAG_OF_ITS_OWN[name])
            assert _flag(name) not in flags, f"{name} has a flag of its own after all: drop its reason"
        else:
            assert _flag(name) in flags and _flag(name) in shown, name


def test_every_section_has_a_help_panel():
    assert set(SECTIONS) <= set(PANEL_OF_SECTION), set(SECTIONS) - set(PANEL_OF_SECTION)


@pytest.mark.parametrize("command", ["run", "watch"])
def test_each_setting_flag_is_in_its_sections_panel_with_its_declared_help(command):
    params = _params(command)
    for name, declared in DECLARED.items():
        if name in NO_FLAG_OF_ITS_OWN:
            continue
        param = params[name]
        assert param.opts == [_flag(name)], name
        assert param.rich_help_panel in (PANEL_OF_SECTION[declared.section], cli_options.SWITCHES), name
        assert declared.help.split("(")[0].strip() in param.help, name


def _given(name: str) -> list[str]:
    """A flag setting `name` to its default, as a user writes it."""
    value = "neural" if name == "engine" else default_of(name)  # auto would be made neural, not by the flag
    if isinstance(value, bool):
        return [_flag(name) if value else f"--no-{_flag(name)[2:]}"]
    if isinstance(value, tuple):
        return [_flag(name), *map(str, value)]
    return [_flag(name), str(value)]


def test_every_setting_flag_reaches_its_setting(capsys, tmp_path):
    """All flags at once (each at its default, so that no combination is refused): --print-settings says each
    setting came from its flag."""
    skipped = {"ffmpeg_path", "state_path", "shared_path", "c2pa_certificate", "c2pa_private_key",
               "face_selector_gender", "face_selector_race", "face_selector_age_start", "face_selector_age_end"}
    names = [name for name in DECLARED if name not in NO_FLAG_OF_ITS_OWN and name not in skipped]
    args = [word for name in names for word in _given(name)]
    assert main(["run", *args, "--print-settings", "--json"]) == 0
    rows = [row for row in json.loads(capsys.readouterr().out) if row["section"] != "concurrency"]
    origins = {row["key"]: row["origin"] for row in rows}
    assert [name for name in names if origins[name] != "flag"] == []
    # the skipped ones take a value of their own kind
    faces = tmp_path / "faces"
    assert main(["run", "--state-path", str(tmp_path), "--shared-path", str(tmp_path), "--face-selector-gender",
                 "female", "--face-selector-race", "asian", "--face-selector-age-start", "20",
                 "--face-selector-age-end", "40", "--cache-path", str(faces), "--print-settings", "--json"]) == 0
    rows = {row["key"]: row for row in json.loads(capsys.readouterr().out) if "key" in row}
    assert {rows[n]["origin"] for n in ("state_path", "shared_path", "face_selector_gender",
                                        "face_selector_race", "face_selector_age_start")} == {"flag"}


def test_a_newly_declared_setting_gets_its_flag_help_and_panel(monkeypatch, capsys):
    """A setting added to settings.py (here: pretended) is a flag of run and watch, typed as declared, in its
    section's panel, with its help and its choices, and reaches the command's options."""
    declared = Declaration("face_tracker", "How far a tracked face may drift, in pixels.", "output", False,
                           (0, 64), None, None, False)
    monkeypatch.setitem(cli_options.DECLARED, "track_drift", declared)
    for hints in (cli_options._HINTS, settings_module._HINTS):
        monkeypatch.setitem(hints, "track_drift", int)
        monkeypatch.setitem(hints, "track_style", typing.Literal["optical-flow", "keypoints", "boxes"])
    monkeypatch.setitem(cli_options.DECLARED, "track_style", Declaration(
        "face_tracker", "How faces are followed.", "output", False, None, None, None, False))
    seen = {}

    def run(**options):
        seen.update(options)
        return 0

    trial = typer.Typer(add_completion=False)
    trial.command("run")(cli_options.command(run, Shared, RunOnly))
    trial.command("other")(lambda: 0)
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit):
        trial(["run", "--help"], prog_name="ffb")
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    tracking = text.split("─ Face tracking ─")[1].split("╭")[0]
    assert "--track-drift" in tracking and "--track-style" in tracking and "--redetect-interval" in tracking
    assert "--track-drift INTEGER" in text or "--track-drift <int>" in text
    assert "How far a tracked face may drift, in pixels." in text
    assert "--track-style STYLE" in text and "Choices: optical-flow, keypoints, boxes." in text
    with pytest.raises(SystemExit) as done:
        trial(["run", "--track-drift", "7", "--track-style", "boxes"], prog_name="ffb")
    assert done.value.code == 0 and seen["track_drift"] == 7 and seen["track_style"] == "boxes"
    with pytest.raises(SystemExit) as refused:
        trial(["run", "--track-style", "wobbly"], prog_name="ffb")
    assert refused.value.code == 2


def test_multi_value_flags_are_the_list_settings():
    lists = {_flag(name) for name, hint in typing.get_type_hints(cli_options.Settings).items()
             if typing.get_origin(hint) is tuple}
    assert set(cli_options.MULTI_VALUE_FLAGS) == lists
    assert {"--processors", "--face-mask-types", "--execution-providers"} <= lists

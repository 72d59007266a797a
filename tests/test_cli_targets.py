"""`ffb run` takes targets as a shell gives them: several after one -t, positional ones (an unquoted glob),
and quoted globs whose outputs mirror the tree (issue 11.4)."""
from __future__ import annotations

import json
import os

import cv2
import pytest

from conftest import face_frame, grace_hopper
from facefusion_batch.cli import main


@pytest.fixture
def env(offline_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cv2.imwrite("source.jpg", grace_hopper())
    for name in ("up/a/x.png", "up/b/x.png", "up/c.png"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        cv2.imwrite(name, face_frame())
    return tmp_path


def outcomes(capsys) -> dict[str, str]:
    """Targets (as paths relative to the tmp dir; --json gives them absolute) and their status."""
    return {os.path.relpath(o["target"]): o["status"] for o in json.loads(capsys.readouterr().out)["outcomes"]}


@pytest.mark.parametrize("args", [
    ["-t", "up/a/x.png", "up/c.png"],              # several values after one -t
    ["up/a/x.png", "up/c.png"],                     # positional, as `up/*/x.png up/c.png` expands
    ["-t", "up/a/x.png", "-o", "o2", "up/c.png"],   # mixed with options (the later -o wins)
])
def test_several_targets_without_repeating_t(env, capsys, args):
    assert main(["run", "-s", "source.jpg", "-o", "out", "--json", "-q", *args]) == 0
    assert outcomes(capsys) == {"up/a/x.png": "done", "up/c.png": "done"}


def test_a_quoted_glob_mirrors_the_tree_and_reruns_with_the_output_inside_it(env, capsys):
    command = ["run", "-s", "source.jpg", "-t", "up/**/*.png", "-o", "up/out", "--json", "-q"]
    assert main(command) == 0
    assert set(outcomes(capsys).values()) == {"done"}
    assert sorted(p.relative_to(env / "up" / "out").as_posix() for p in (env / "up" / "out").rglob("*.png")) == [
        "a/x.png", "b/x.png", "c.png"]
    assert main(command) == 0  # its own outputs are not inputs now
    assert set(outcomes(capsys).values()) == {"skipped"}


def test_misspelt_options_are_still_caught(env, capsys):
    assert main(["run", "--sorce", "source.jpg", "up/c.png"]) == 2
    assert "--source" in capsys.readouterr().err

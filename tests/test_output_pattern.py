"""output_pattern (FaceFusion 3.8.1's [patterns] key, its placeholders {target_name} and {target_extension} as
core.process_batch formats them): each output's file name in its mirrored directory."""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest

from conftest import face_frame
from facefusion_batch.cli import main
from facefusion_batch.errors import SettingsError
from facefusion_batch.settings import load_settings
from facefusion_batch.targets import discover, pattern_name


def test_pattern_names_each_output_in_its_mirrored_directory(tmp_path):
    (tmp_path / "in" / "sub").mkdir(parents=True)
    for name in ("in/a.MP4", "in/sub/b.png"):
        (tmp_path / name).write_bytes(b"x")
    targets, rejected = discover([str(tmp_path / "in")], tmp_path / "out", None,
                                 "{target_name}-swapped{target_extension}")
    assert rejected == []
    assert sorted(t.output for t in targets) == [tmp_path / "out" / "a-swapped.mp4",
                                                 tmp_path / "out" / "sub" / "b-swapped.png"]
    assert pattern_name("", Path("x/Clip.MOV")) == "Clip.MOV"
    assert pattern_name("swapped/{target_name}{target_extension}", Path("Clip.MOV")) == "swapped/Clip.mov"


def test_an_output_of_another_kind_is_refused_for_that_target(tmp_path):
    (tmp_path / "a.mp4").write_bytes(b"x")
    (tmp_path / "b.png").write_bytes(b"x")
    targets, rejected = discover([str(tmp_path / "a.mp4"), str(tmp_path / "b.png")], tmp_path / "out", None,
                                 "{target_name}.png")
    assert [t.path.name for t in targets] == ["b.png"]
    assert len(rejected) == 1 and "not a video file name" in rejected[0].reason


def test_two_targets_named_alike_are_caught(tmp_path):
    for name in ("a.mp4", "b.mp4"):
        (tmp_path / name).write_bytes(b"x")
    targets, rejected = discover([str(tmp_path / "a.mp4"), str(tmp_path / "b.mp4")], tmp_path / "out", None,
                                 "same{target_extension}")
    assert len(targets) == 1 and "is also the output of" in rejected[0].reason


@pytest.mark.parametrize("pattern, text", [
    ("output/{index}.mp4", "{index} and {source_name} number and name the jobs of FaceFusion's batch-run"),
    ("{source_name}-{target_name}{target_extension}", "batch-run"),
    ("{name}{target_extension}", "unknown placeholder {name}"),
    ("{}.mp4", "unknown placeholder"),
    ("../{target_name}{target_extension}", "below the output directory"),
    ("/tmp/{target_name}{target_extension}", "below the output directory"),
])
def test_patterns_ffb_cant_honour_are_refused(pattern, text):
    with pytest.raises(SettingsError, match=r"output[_-]pattern.*" + text.replace("{", r"\{").replace("}", r"\}")
                       .replace("(", r"\(").replace(")", r"\)")):
        load_settings(None, {}, {"output_pattern": pattern})


def test_a_run_writes_the_pattern_s_name(offline_env, capsys):
    source, image = offline_env / "s.png", offline_env / "t.png"
    cv2.imwrite(str(source), face_frame())
    cv2.imwrite(str(image), face_frame())
    code = main(["run", "--json", "-q", "-s", str(source), "-t", str(image), "-o", str(offline_env / "out"),
                 "--output-pattern", "{target_name}-swapped{target_extension}", "--content-gate", "off"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["outcomes"][0]["output"] == str(offline_env / "out" / "t-swapped.png")
    assert (offline_env / "out" / "t-swapped.png").is_file() and not (offline_env / "out" / "t.png").exists()

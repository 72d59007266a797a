"""Paths that must not lead ffb astray (issue 10, classes 5 and 6): target names ffmpeg would read as a
protocol or URL, and symbolic links in the output tree pointing outside it."""
from __future__ import annotations

import json
import os

import pytest

import hostile_media
from conftest import make_clip
from facefusion_batch.cli import main
from facefusion_batch.video.probe import probe

# Each name, given to ffmpeg as it is, reads something else: the concatenation of a.mp4 and b.mp4, a.mp4
# itself, or a.mp4 through the subfile protocol.
PROTOCOL_NAMES = ["concat:a.mp4|b.mp4", "file:a.mp4", "subfile,,start,0,end,0,,:a.mp4", "async:a.mp4",
                  "cache:a.mp4", "crypto:a.mp4", "a.mp4|b.mp4", "clip%03d.mp4", "a?b#c.mp4", "-y.mp4"]


@pytest.fixture
def decoys(env):
    """a.mp4 (8 frames) and b.mp4 (8 frames) beside each protocol-looking name (5 frames each)."""
    folder = env / "in"
    folder.mkdir()
    make_clip(folder / "a.mp4", frames=8, audio=False)
    make_clip(folder / "b.mp4", frames=8, audio=False)
    for name in PROTOCOL_NAMES:
        make_clip(folder / name, frames=5, audio=False)
    return folder


@pytest.mark.parametrize("name", PROTOCOL_NAMES)
def test_relative_target_named_like_a_protocol_is_read_as_a_file(env, decoys, source_image, capsys, monkeypatch,
                                                                 name):
    monkeypatch.chdir(decoys)
    assert main(["run", "-s", str(source_image), "-t", name, "-o", str(env / "out"), "--json", "-q"]) == 0
    outcome = json.loads(capsys.readouterr().out)["outcomes"][0]
    assert outcome["status"] == "done" and outcome["frames"] == 5
    assert probe(env / "out" / name).frame_count == 5


def test_output_named_like_a_protocol_in_the_current_directory(env, decoys, source_image, capsys, monkeypatch):
    """`-o .`: the output path itself is the bare name `concat:a.mp4|b.mp4`."""
    out = env / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    target = decoys / "concat:a.mp4|b.mp4"
    assert main(["run", "-s", str(source_image), "-t", str(target), "-o", ".", "--json", "-q"]) == 0
    assert json.loads(capsys.readouterr().out)["outcomes"][0]["status"] == "done"
    assert probe(out / "concat:a.mp4|b.mp4").frame_count == 5
    assert sorted(os.listdir(out)) == [".ffb", "concat:a.mp4|b.mp4"]


@pytest.mark.parametrize("kind", ["directory", "file", "image"])
def test_symlink_in_the_output_tree_pointing_outside_fails_that_target(env, source_image, capsys, kind):
    tree, out, outside = env / "in", env / "out", env / "outside"
    (tree / "sub").mkdir(parents=True)
    outside.mkdir()
    out.mkdir()
    name = "a.png" if kind == "image" else "a.mp4"
    if kind == "image":
        import shutil
        shutil.copyfile(source_image, tree / "sub" / name)
    else:
        make_clip(tree / "sub" / name, frames=5, audio=False)
    make_clip(tree / "fine.mp4", frames=5, audio=False)
    if kind == "file":
        (out / "sub").mkdir()
        os.symlink(outside / name, out / "sub" / name)
    else:
        os.symlink(outside, out / "sub")
    code = main(["run", "-s", str(source_image), "-t", str(tree), "-o", str(out), "--json", "-q"])
    outcomes = {o["target"]: o for o in json.loads(capsys.readouterr().out)["outcomes"]}
    assert code == 1
    bad = outcomes[str(tree / "sub" / name)]
    assert bad["status"] == "failed" and "leads outside the output directory" in bad["reason"]
    assert "\n" not in bad["reason"]
    assert outcomes[str(tree / "fine.mp4")]["status"] == "done"
    assert list(outside.iterdir()) == []


def test_symlink_inside_the_output_tree_is_fine(env, source_image, capsys):
    tree, out = env / "in", env / "out"
    (tree / "sub").mkdir(parents=True)
    (out / "real").mkdir(parents=True)
    os.symlink(out / "real", out / "sub")
    make_clip(tree / "sub" / "a.mp4", frames=5, audio=False)
    assert main(["run", "-s", str(source_image), "-t", str(tree), "-o", str(out), "--json", "-q"]) == 0
    assert (out / "real" / "a.mp4").is_file()


def test_a_link_planted_at_the_temp_name_is_not_written_through(tmp_path):
    import numpy as np

    from facefusion_batch.media import temp_name, write_image

    outside = tmp_path / "outside.png"
    outside.write_bytes(b"keep me")
    out = tmp_path / "out" / "a.png"
    out.parent.mkdir()
    os.symlink(outside, temp_name(out))
    write_image(np.zeros((8, 8, 3), np.uint8), out, 90, None)
    assert outside.read_bytes() == b"keep me" and out.is_file()

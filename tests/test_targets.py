import os
from pathlib import Path

from facefusion_batch.targets import discover


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")
    return path


def test_directories_mirror_and_skip_non_media_hidden_and_output(tmp_path):
    root = tmp_path / "clips"
    touch(root / "a.mp4")
    touch(root / "deep" / "b.MOV")
    touch(root / "c.txt")
    touch(root / ".hidden.mp4")
    touch(root / "out" / "already.mp4")
    targets, rejected = discover([str(root)], root / "out")
    assert [t.output.relative_to(root / "out").as_posix() for t in targets] == ["a.mp4", "deep/b.MOV"]
    assert [t.kind for t in targets] == ["video", "video"]
    assert rejected == []


def test_globs_files_and_reasons(tmp_path):
    touch(tmp_path / "x1.jpg")
    touch(tmp_path / "x2.webp")
    touch(tmp_path / "notes.doc")
    targets, rejected = discover([str(tmp_path / "x*"), str(tmp_path / "notes.doc"), str(tmp_path / "gone.mp4"),
                                  str(tmp_path / "nomatch*.mp4")], tmp_path / "out")
    assert [t.path.name for t in targets] == ["x1.jpg", "x2.webp"]
    reasons = {r.path.name: r.reason for r in rejected}
    assert "unsupported extension '.doc'" in reasons["notes.doc"]
    assert reasons["gone.mp4"] == "no such file or directory"
    assert reasons["nomatch*.mp4"] == "no file matches this pattern"


def test_never_overwrite_an_input_and_no_output_collisions(tmp_path):
    a = touch(tmp_path / "a" / "same.mp4")
    b = touch(tmp_path / "b" / "same.mp4")
    targets, rejected = discover([str(a), str(b), str(a)], tmp_path / "out")
    assert [t.path for t in targets] == [a]
    assert "also the output of" in rejected[0].reason
    targets, rejected = discover([str(a)], tmp_path / "a")
    assert targets == [] and "overwrite an input" in rejected[0].reason


def test_symlink_loops_are_not_followed(tmp_path):
    root = tmp_path / "clips"
    touch(root / "a.mp4")
    os.symlink(root, root / "loop")
    targets, _ = discover([str(root)], tmp_path / "out")
    assert [t.path.name for t in targets] == ["a.mp4"]

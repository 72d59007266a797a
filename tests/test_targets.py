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


def test_a_glob_mirrors_the_tree_below_its_fixed_start(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    touch(tmp_path / "up" / "a" / "x.mp4")
    touch(tmp_path / "up" / "b" / "x.mp4")
    touch(tmp_path / "up" / "b" / "deep" / "y.png")
    touch(tmp_path / "up" / "top.mov")
    for pattern in ("up/**/*.mp4", str(tmp_path / "up" / "**" / "*.mp4"), "./up/*/x.mp4"):
        targets, rejected = discover([pattern], tmp_path / "out")
        assert rejected == [], pattern
        assert [t.output.relative_to(tmp_path / "out").as_posix() for t in targets] == ["a/x.mp4", "b/x.mp4"]
    targets, rejected = discover(["up/*"], tmp_path / "out")  # directories matched by a glob mirror too
    assert sorted(t.output.relative_to(tmp_path / "out").as_posix() for t in targets) == [
        "a/x.mp4", "b/deep/y.png", "b/x.mp4", "top.mov"]
    targets, _ = discover(["*/top.mov"], tmp_path / "out")
    assert [t.output.relative_to(tmp_path / "out").as_posix() for t in targets] == ["up/top.mov"]


def test_a_glob_over_a_tree_holding_the_output_survives_a_rerun(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    touch(tmp_path / "clips" / "a.mp4")
    touch(tmp_path / "clips" / "sub" / "b.mp4")
    touch(tmp_path / "clips" / "notes.txt")  # beside the videos: not a target, not an error either
    first, rejected = discover(["clips/**"], Path("clips/out"))
    assert rejected == []
    assert [t.output.as_posix() for t in first] == ["clips/out/a.mp4", "clips/out/sub/b.mp4"]
    for target in first:  # the first run's outputs
        touch(target.output)
    again, rejected = discover(["clips/**", "clips/*.mp4"], Path("clips/out"))
    assert rejected == [] and again == first


def test_a_glob_of_nothing_usable_says_so(tmp_path):
    touch(tmp_path / "notes.txt")
    _, rejected = discover([str(tmp_path / "*.txt")], tmp_path / "out")
    assert [r.reason for r in rejected] == ["pattern matches no video or image files"]


def test_shell_expanded_names_that_collide_suggest_quoting_the_glob(tmp_path):
    a, b = touch(tmp_path / "a" / "x.mp4"), touch(tmp_path / "b" / "x.mp4")
    _, [rejected] = discover([str(a), str(b)], tmp_path / "out")
    assert rejected.path == b and "quote a glob" in rejected.reason


def test_an_existing_name_that_looks_like_a_glob_is_taken_literally(tmp_path):
    odd = touch(tmp_path / "[bold]a[1].mp4")
    touch(tmp_path / "1.mp4")  # what the pattern would match
    targets, rejected = discover([str(odd)], tmp_path / "out")
    assert [t.path for t in targets] == [odd] and rejected == []

"""File names that are not UTF-8 (Linux allows any bytes; Python keeps them as lone surrogates): SQLite,
JSON and C2PA take only UTF-8, so every place a name is stored as text must say so, not crash."""
from __future__ import annotations

import os
from pathlib import Path

import cv2

from conftest import face_frame, make_clip
from facefusion_batch.media import temp_name
from facefusion_batch.runner.journal import Journal, text_of
from facefusion_batch.provenance.manifest import title_of


def test_the_journal_stores_and_finds_names_that_are_not_utf8(tmp_path):
    journal = Journal(tmp_path / "journal.sqlite")
    first, second = (tmp_path / os.fsdecode(b"a\xff.mp4"), tmp_path / os.fsdecode(b"a\xfe.mp4"))
    for number, path in enumerate((first, second)):
        path.write_bytes(b"x")
        journal.record(path, path.with_suffix(".out.mp4"), f"hash-{number}", "key", "failed",
                       reason=f"{path}: broken")
    assert journal.get(first).content_hash == "hash-0"
    assert journal.get(second).content_hash == "hash-1", "two such names stay apart"
    assert "\\udcff" in journal.get(first).target and "\\udcff" in journal.get(first).reason
    assert len(list(journal.entries())) == 2
    journal.close()
    assert text_of("plain é") == "plain é"


def test_temp_names_and_manifest_titles_of_names_that_are_not_utf8():
    path = Path(os.fsdecode(b"/out/clip\xff.mp4"))
    assert os.fsencode(temp_name(path).name).startswith(b".clip\xff.ffb-")
    long = Path(os.fsdecode(b"/out/" + b"\xff" * 250 + b".mp4"))
    assert len(os.fsencode(temp_name(long).name)) < 255
    assert title_of(path) == "clip\ufffd.mp4"


def test_run_processes_a_video_and_an_image_named_so(env, source_image):
    from facefusion_batch.cli import main

    incoming = env / "in"
    incoming.mkdir()
    video = make_clip(incoming / os.fsdecode(b"clip\xff.mp4"), frames=4)
    image = incoming / os.fsdecode(b"still\xfe.png")
    image.write_bytes(cv2.imencode(".png", face_frame())[1].tobytes())  # cv2.imwrite crashes on such a name
    args = ["run", "-q", "-s", str(source_image), "-t", str(incoming), "-o", str(env / "out")]
    assert main(args) == 0
    assert (env / "out" / video.name).is_file() and (env / "out" / image.name).is_file()
    journal = Journal(env / "out" / ".ffb" / "journal.sqlite")
    assert journal.get(video).status == "done" and journal.get(image).status == "done"
    journal.close()
    assert main(args) == 0  # the second run finds both in the journal: skipped, not redone


def test_json_output_stays_utf8(tmp_path, source_image, capsys):
    import json

    from facefusion_batch.cli import main

    folder = tmp_path / "in"
    folder.mkdir()
    (folder / os.fsdecode(b"bad\xff.mp4")).write_bytes(b"not a video")
    assert main(["run", "--engine", "offline", "--json", "-q", "-s", str(source_image), "-t", str(folder),
                 "-o", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    summary = json.loads(out.encode("utf-8"))  # a script reading bytes: valid UTF-8
    assert summary["outcomes"][0]["target"].endswith("bad\\udcff.mp4")

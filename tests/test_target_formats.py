"""Directory scans take every target format FaceFusion 3.8.1 takes (its choices.py image_type_set and
video_type_set), or name each file they do not process with the reason and the fix: none is passed by."""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest

from conftest import face_frame
from facefusion_batch.cli import main
from facefusion_batch.media import IMAGE_EXTENSIONS, UNPROCESSED, VIDEO_EXTENSIONS, kind_of

# FaceFusion 3.8.1, facefusion/choices.py (tag 3.8.1): image_type_set and video_type_set keys
FACEFUSION_IMAGES = ("bmp", "jpeg", "png", "tiff", "webp")
FACEFUSION_VIDEOS = ("avi", "m4v", "mkv", "mp4", "mpeg", "mov", "mxf", "webm", "wmv")


@pytest.mark.parametrize("extension", FACEFUSION_IMAGES + FACEFUSION_VIDEOS)
def test_every_facefusion_format_is_processed_or_named(extension):
    suffix = f".{extension}"
    assert suffix in IMAGE_EXTENSIONS + VIDEO_EXTENSIONS or suffix in UNPROCESSED


def test_a_directory_scan_takes_tiff_and_names_what_it_does_not_process(offline_env, source_image, tmp_path,
                                                                       capsys):
    clips = tmp_path / "clips"
    (clips / "sub").mkdir(parents=True)
    for name in ("a.tif", "sub/b.TIFF"):
        cv2.imwrite(str(clips / name), face_frame())
    for name in ("c.bmp", "d.wmv", "sub/e.mpeg", "f.mxf", "g.mpg"):
        (clips / name).write_bytes(b"\0" * 64)
    (clips / "notes.txt").write_text("not media")
    code = main(["run", "-s", str(source_image), "-t", str(clips), "-o", str(tmp_path / "out"), "--json", "-q",
                 "--output-provenance", "metadata"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 1
    by_name = {Path(o["target"]).name: o for o in summary["outcomes"]}
    assert {by_name[n]["status"] for n in ("a.tif", "b.TIFF")} == {"done"}
    assert (tmp_path / "out" / "a.tif").is_file() and (tmp_path / "out" / "sub" / "b.TIFF").is_file()
    assert kind_of(Path("x.tiff")) == "image"
    for name, says in (("c.bmp", "BMP can't carry ffb's AI-modified marking"), ("d.wmv", "ffb can't write WMV"),
                       ("e.mpeg", "MPEG program streams"), ("f.mxf", "ffb can't write MXF"),
                       ("g.mpg", "MPEG program streams")):
        assert by_name[name]["status"] == "failed" and says in by_name[name]["reason"], name
        assert "convert it first, e.g. ffmpeg -i" in by_name[name]["reason"]
    assert "notes.txt" not in by_name


def test_a_named_unprocessed_file_gets_the_same_reason(offline_env, source_image, tmp_path, capsys):
    target = tmp_path / "v.wmv"
    target.write_bytes(b"\0" * 64)
    code = main(["run", "-s", str(source_image), "-t", str(target), "-o", str(tmp_path / "out"), "--json", "-q"])
    outcome = json.loads(capsys.readouterr().out)["outcomes"][0]
    assert code == 1 and "ffb can't write WMV" in outcome["reason"]


@pytest.mark.parametrize("scale, size", [(0.5, (240, 136)), (2.0, (960, 544)), (0.25, (120, 68))])
def test_output_image_scale_sizes_image_outputs_as_facefusion(offline_env, source_image, tmp_path, capsys, scale,
                                                             size):
    """FaceFusion's output_image_scale: each side times the scale, rounded to even pixels; a target without a
    face is scaled too (unmarked: nothing swapped)."""
    from facefusion_batch.media import scaled_size

    target, blank = tmp_path / "t.png", tmp_path / "blank.png"
    cv2.imwrite(str(target), face_frame())
    cv2.imwrite(str(blank), face_frame()[:, :, :] * 0 + 128)
    code = main(["run", "-s", str(source_image), "-t", str(target), "-t", str(blank), "-o", str(tmp_path / "out"),
                 "--output-image-scale", str(scale), "--output-provenance", "metadata", "--json", "-q"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0, summary
    assert {Path(o["target"]).name: o["status"] for o in summary["outcomes"]} == {"t.png": "done",
                                                                                "blank.png": "no_face"}
    for name in ("t.png", "blank.png"):
        height, width = cv2.imread(str(tmp_path / "out" / name)).shape[:2]
        assert (width, height) == size == scaled_size(480, 272, scale)

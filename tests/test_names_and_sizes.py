"""Names and sizes (issue 26, class 5): ffb's own temp and sidecar names fit beside any legal target name,
a sidecar that can't be named is one line, an image bomb is reported at its real size, and no message grows
with what a user's file or command line lists."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import hostile_media
from conftest import make_clip
from facefusion_batch.cli import main
from facefusion_batch.errors import SourceError
from facefusion_batch.listing import capped, listed
from facefusion_batch.media import read_image, temp_name, temp_stem
from facefusion_batch.workflow import guard

SOURCE = Path(__file__).resolve().parents[1] / "examples" / "source.jpg"


def _run(tmp_path, capsys, *args: str) -> tuple[int, dict, str]:
    code = main(["run", "--engine", "offline", "-s", str(SOURCE), "--json", "-q", "--temp-path",
                 str(tmp_path / "temp"), *args])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_temp_names_do_not_grow_with_the_output_name():
    lengths = {len(os.fsencode(temp_name(Path("/out") / ("x" * n + ".mp4")).name)) for n in range(60, 252)}
    assert len(lengths) == 1 and max(lengths) < 100, "one length, whatever the output's"
    a, b = (Path("/out") / ("y" * 200 + tail + ".mp4") for tail in ("a", "b"))
    assert temp_stem(a) != temp_stem(b), "two long names sharing a long start still get their own temp names"
    assert temp_name(Path("/out/clip.mp4")).name.startswith(".clip.ffb-")  # short names stay readable


def test_names_of_251_to_255_bytes_are_processed(offline_env, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    incoming = tmp_path / "in"
    incoming.mkdir()
    clip = make_clip(tmp_path / "clip.mp4", frames=3, audio=False)
    names = {hostile_media._long_name(255): clip, hostile_media._long_name(251, ".mov"): clip}
    for name, made in names.items():
        (incoming / name).write_bytes(made.read_bytes())
    hostile_media._rgba(incoming / hostile_media._long_name(254, ".png"))
    # a sidecar format: <name>.c2pa is 255 bytes at 250, one too many at 251
    (incoming / hostile_media._long_name(250, ".mkv")).write_bytes(clip.read_bytes())
    too_long = incoming / hostile_media._long_name(251, ".mkv")
    too_long.write_bytes(clip.read_bytes())
    code, result, err = _run(tmp_path, capsys, "-t", str(incoming), "-o", str(tmp_path / "out"))
    statuses = {Path(o["target"]).name: (o["status"], o["reason"]) for o in result["outcomes"]}
    assert code == 1
    assert statuses.pop(too_long.name)[0] == "failed"
    assert all(status == "done" for status, _ in statuses.values()), statuses
    reason = next(o["reason"] for o in result["outcomes"] if o["status"] == "failed")
    assert "C2PA sidecar can't be named" in reason and "256 bytes" in reason and "255" in reason
    assert "output_provenance = metadata" in reason and "\n" not in reason
    assert not (tmp_path / "out" / too_long.name).exists()
    written = sorted(p.name for p in (tmp_path / "out").iterdir() if p.name != ".ffb")
    assert hostile_media._long_name(250, ".mkv") + ".c2pa" in written, "the 255-byte sidecar is there"
    assert not [n for n in written if ".ffb-" in n or n.startswith(".")], "no temp file left"
    longest = tmp_path / "out" / hostile_media._long_name(255)
    assert main(["verify", str(longest)]) in (0, 1), "its sidecar name can't exist: looked for, not a crash"
    assert "signature and hashes check out" in capsys.readouterr().err


def test_a_sidecar_that_cant_be_named_with_c2pa_on_failure_metadata(offline_env, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    monkeypatch.setenv("FFB_C2PA_ON_FAILURE", "metadata")
    target = make_clip(tmp_path / hostile_media._long_name(253, ".webm"), frames=3, audio=False,
                       extra=["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8"])
    code, result, _ = _run(tmp_path, capsys, "-t", str(target), "-o", str(tmp_path / "out"))
    outcome = result["outcomes"][0]
    assert code == 0 and outcome["status"] == "done", outcome
    assert "C2PA manifest not written" in outcome["reason"] and "metadata marking only" in outcome["reason"]
    assert (tmp_path / "out" / target.name).is_file()


@pytest.mark.parametrize("width, height", [(30000, 30000), (200000, 1000)])
def test_an_image_bomb_is_reported_at_its_real_size(tmp_path, width, height):
    bomb = tmp_path / "bomb.png"
    hostile_media._huge_png(bomb, width, height)
    with pytest.raises(SourceError, match=f"image is {width}x{height}, over 64 megapixels; downscale"):
        read_image(bomb)


def test_a_profile_with_200000_unknown_sections_gives_one_short_line(tmp_path, capsys):
    profile = tmp_path / "huge.ini"
    profile.write_text("".join(f"[junk_{i}]\nkey = value\n" for i in range(200_000)))
    code = main(["run", "-p", str(profile), "-s", str(SOURCE), "-t", str(tmp_path / "x.mp4")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and len(err) < 3000, err[:5000]
    assert "200000 problems" in err and "unknown section [junk_0]" in err and "and 199950 more" in err


def test_many_unsupported_facefusion_flags_and_stray_variables_are_counted_not_listed(tmp_path, capsys,
                                                                                   monkeypatch):
    for i in range(3000):
        monkeypatch.setenv(f"FFB_STRAY_{i}", "1")
    flags = [word for i in range(3000) for word in ("--ui-layouts", f"layout{i}")]
    code = main(["run", "-s", str(tmp_path / "nowhere.jpg"), "-t", str(tmp_path / "x.mp4"), *flags])
    lines = capsys.readouterr().err.splitlines()
    assert code != 0 and lines and all(len(line) < 8200 for line in lines), [len(line) for line in lines]
    assert any("more" in line and "FFB_STRAY_" in line for line in lines)
    assert any("more" in line and "ui-layouts" in line for line in lines)


def test_listing_and_capping():
    assert listed(range(3)) == "0, 1, 2"
    assert listed(range(100), limit=2) == "0, 1, and 98 more"
    assert listed(["x" * 10_000]).endswith("x") and len(listed(["x" * 10_000])) < 1100
    reason = guard.one_line("target.mp4: " + "noise " * 100_000 + "; do this to fix it")
    assert len(reason) < 8200 and reason.endswith("do this to fix it") and "characters left out" in reason
    assert capped("short") == "short"

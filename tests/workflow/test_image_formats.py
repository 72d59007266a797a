"""Image targets keep transparency and animation (issue 10, class 11): every frame of an animated GIF,
WebP or PNG is processed and written with its timing; the alpha channel is set aside and put back."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import hostile_media
from facefusion_batch.cli import main
from facefusion_batch.media import read_picture, write_picture


def _frames(path):
    with Image.open(path) as image:
        out = []
        for index in range(getattr(image, "n_frames", 1)):
            image.seek(index)
            out.append((np.asarray(image.convert("RGBA")).astype(int), image.info.get("duration")))
        return out


@pytest.mark.parametrize("name", ["animated.gif", "animated.webp", "animated.png", "rgba.png", "rgba.webp",
                                  "zero_delay.gif", "zero_delay.png"])
def test_every_frame_swapped_alpha_and_timing_kept(tmp_path, capsys, monkeypatch, name):
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    monkeypatch.setenv("FFB_MODELS_PATH", str(tmp_path / "no-models"))
    target = tmp_path / "in" / name
    target.parent.mkdir()
    builders = {"animated": hostile_media._animated, "rgba": hostile_media._rgba,
                "zero_delay": hostile_media._zero_delays}
    builders[name.split(".")[0]](target)
    source = Path(__file__).resolve().parents[2] / "examples" / "source.jpg"
    assert main(["run", "--engine", "offline", "-s", str(source), "-t", str(target), "-o", str(tmp_path / "out"),
                 "--json", "-q"]) == 0
    assert json.loads(capsys.readouterr().out)["outcomes"][0]["status"] == "done"
    before, after = _frames(target), _frames(tmp_path / "out" / name)
    assert len(after) == len(before)
    for (old, old_duration), (new, new_duration) in zip(before, after):
        assert old.shape == new.shape
        assert np.array_equal(old[:, :, 3] < 128, new[:, :, 3] < 128), "transparency kept"
        changed = np.abs(old[:, :, :3] - new[:, :, :3]).max(axis=2) > 30
        assert changed.mean() > 0.003, "the face in this frame was swapped"
        assert (new_duration or 0) == (old_duration or 0)  # a GIF frame without a delay: 0 (issue 26)


@pytest.mark.parametrize("name", ["zero_delay.gif", "zero_delay.png", "zero_delay.webp"])
def test_zero_duration_frames_stay_zero(tmp_path, name):
    """A frame the file shows for 0 ms is written with 0 ms, in every animated format (issue 26)."""
    target = tmp_path / name
    hostile_media._zero_delays(target)
    picture = read_picture(target)
    assert picture.durations == tuple(hostile_media.ZERO_DELAYS)
    write_picture(picture, tmp_path / f"out-{name}", 90, None)
    assert [duration or 0 for _, duration in _frames(tmp_path / f"out-{name}")] == hostile_media.ZERO_DELAYS


def test_jpeg_output_of_a_transparent_picture_keeps_the_colour(tmp_path):
    png = tmp_path / "a.png"
    hostile_media._rgba(png)
    picture = read_picture(png)
    assert picture.alpha[0] is not None and not picture.animated
    write_picture(picture, tmp_path / "a.jpg", 90, None)
    with Image.open(tmp_path / "a.jpg") as image:
        assert image.mode == "RGB" and image.size == (480, 272)


def test_too_many_animation_pixels_is_refused_with_the_fix(tmp_path, monkeypatch):
    from facefusion_batch import media
    from facefusion_batch.errors import MediaError

    gif = tmp_path / "a.gif"
    hostile_media._animated(gif)
    monkeypatch.setattr(media, "MAX_ANIMATION_PIXELS", 240 * 136 * 3)
    with pytest.raises(MediaError, match="4 frames of 240x136 are too many.*convert it to a video"):
        read_picture(gif)


def test_huge_or_broken_images_fail_with_a_reason_not_an_exception(tmp_path):
    from facefusion_batch.errors import MediaError

    big = tmp_path / "big.png"
    from PIL import Image
    Image.new("LA", (13000, 14000)).save(big)  # over Pillow's own bomb limit: it raises rather than warns
    with pytest.raises(MediaError, match="downscale"):
        read_picture(big)
    gif = tmp_path / "cut.gif"
    hostile_media._animated(gif)
    gif.write_bytes(gif.read_bytes()[: gif.stat().st_size // 2])
    with pytest.raises(MediaError, match="cut.gif"):
        read_picture(gif)


@pytest.mark.parametrize("suffix", [".jpg", ".png", ".webp"])
def test_colour_profile_is_kept(tmp_path, suffix):
    from PIL import ImageCms

    profile = ImageCms.ImageCmsProfile(ImageCms.createProfile("LAB")).tobytes()  # any valid ICC profile
    still = tmp_path / f"a{suffix}"
    Image.fromarray(np.full((32, 32, 3), 120, np.uint8)).save(still, icc_profile=profile)
    picture = read_picture(still)
    assert picture.icc_profile == profile
    write_picture(picture, tmp_path / f"out{suffix}", 90, {"comment": "c", "ai_tool": "t"})
    with Image.open(tmp_path / f"out{suffix}") as image:
        assert image.info.get("icc_profile") == profile

from fractions import Fraction

import pytest

from conftest import make_clip
from facefusion_batch.errors import MediaError
from facefusion_batch.video.ffmpeg import ffmpeg_binary
from facefusion_batch.video.probe import frame_timing, parse_colour, probe

FRAMECRC = """#software: Lavf
#tb 0: 1/30000
#media_type 0: video
0,      -2002,          0,     1001,     5031, 0x690d4cdf
0,      -1001,       3003,     1001,      100, 0x0
0,          0,       1001,     1001,      100, 0x0
0,       1001,       2002,     1001,      100, 0x0
"""


def test_frame_timing_is_exact_for_ntsc_rates():
    count, fps, variable, shift = frame_timing(FRAMECRC)[:4]
    assert (count, fps, variable, shift) == (4, Fraction(30000, 1001), False, 0.0)


def test_frame_timing_flags_variable_rate():
    lines = ["#tb 0: 1/1000"] + [f"0, {t}, {t}, 1, 1, 0x0" for t in (0, 40, 80, 200, 240, 400)]
    count, fps, variable, shift = frame_timing("\n".join(lines))[:4]
    assert count == 6 and variable and fps == 12.5
    assert abs(shift - 0.08) < 1e-9  # the frame at 200 ms belongs at 120 ms at a constant 12.5 fps


@pytest.mark.parametrize("text, matrix, primaries, rng", [
    ("tv, bt709, progressive", "bt709", "bt709", "tv"),
    ("tv, bt709/unknown/unknown, progressive", "bt709", None, "tv"),
    ("pc, bt470bg/bt470bg/smpte170m", "bt470bg", "bt470bg", "pc"),
    ("progressive", None, None, None),
])
def test_parse_colour(text, matrix, primaries, rng):
    colour = parse_colour(text)
    assert (colour.matrix, colour.primaries, colour.range) == (matrix, primaries, rng)


def test_probe_real_clip(tmp_path):
    info = probe(make_clip(tmp_path / "a.mp4", frames=12, fps="30000/1001"))
    assert (info.width, info.height, info.frame_count) == (480, 272, 12)
    assert info.fps == Fraction(30000, 1001)
    assert info.audio_codec == "aac" and info.rotation == 0


def test_probe_rotated_clip_reports_display_size(tmp_path):
    import subprocess

    plain = make_clip(tmp_path / "a.mp4", frames=5, audio=False)
    rotated = tmp_path / "rot.mp4"
    subprocess.run([ffmpeg_binary(), "-v", "error", "-display_rotation", "90", "-i", str(plain), "-c", "copy",
                    str(rotated)], check=True)
    info = probe(rotated)
    assert info.rotation in (90, 270)
    assert (info.width, info.height) == (272, 480)
    assert info.audio_codec is None


def test_probe_rejects_non_video(tmp_path):
    bogus = tmp_path / "notes.mp4"
    bogus.write_text("this is text")
    with pytest.raises(MediaError, match="notes.mp4: not a readable video, or damaged"):
        probe(bogus)
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(MediaError, match="empty.mp4: file is empty"):
        probe(empty)

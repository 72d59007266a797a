"""A damaged video's reason says what really happened (never "only 40 of 40 frames could be decoded")."""
from fractions import Fraction
from pathlib import Path

import pytest

from facefusion_batch.workflow.chunks import _shortfall
from facefusion_batch.video.ffmpeg import Colour
from facefusion_batch.video.probe import VideoInfo


def info(frames: int, duration: float) -> VideoInfo:
    return VideoInfo(Path("a.mp4"), 64, 64, Fraction(25), frames, duration, 0, "h264", "yuv420p", Colour(), None,
                     False)


@pytest.mark.parametrize("frames, duration, decoded, expected", [
    (40, 1.6, 40, "the file ends early (its 40 frames decoded, but data after them is missing)"),
    (40, 4.0, 40, "the file ends early: its header promises ~100 frames, only 40 are in it"),
    (40, 1.6, 39, "the file ends early (its 39 frames decoded, but data after them is missing)"),
    (40, 1.6, 12, "only 12 of its 40 frames could be decoded"),
])
def test_shortfall_never_contradicts_itself(frames, duration, decoded, expected):
    text = _shortfall(info(frames, duration), decoded)
    assert text == expected
    assert f"only {frames} of {frames}" not in text

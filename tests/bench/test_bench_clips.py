from pathlib import Path

import numpy as np
import pytest

from facefusion_batch.bench import clips
from facefusion_batch.media import read_image

SOURCE = Path(__file__).resolve().parents[2] / "examples" / "source.jpg"


def test_still_has_the_frame_size_and_the_photo_at_the_bottom_centre():
    photo = np.full((100, 80, 3), 255, np.uint8)
    still = clips.compose(photo, clips.RESOLUTIONS["240p"])
    assert still.shape == (240, 426, 3)
    assert still[230, 213].min() > 240  # inside the photo, away from the feathered edge
    assert still[10, 10].max() < 240  # backdrop


def test_frames_drift_by_less_than_a_pixel():
    still = clips.compose(np.full((100, 80, 3), 200, np.uint8), (128, 72))
    frames = list(clips.frames(still, 4))
    assert len(frames) == 4
    difference = np.abs(frames[3].astype(int) - still.astype(int)).mean()
    assert 0 < difference < 6


def test_cache_name_depends_on_everything_the_clip_depends_on(tmp_path):
    other = tmp_path / "other.jpg"
    other.write_bytes(SOURCE.read_bytes() + b"\0")
    names = {clips.clip_path(tmp_path, "240p", 3, SOURCE, True), clips.clip_path(tmp_path, "240p", 3, SOURCE, False),
             clips.clip_path(tmp_path, "360p", 3, SOURCE, True), clips.clip_path(tmp_path, "240p", 2, SOURCE, True),
             clips.clip_path(tmp_path, "240p", 3, other, True)}
    assert len(names) == 5
    assert clips.clip_path(tmp_path, "240p", 3, SOURCE, True) == clips.clip_path(tmp_path, "240p", 3.0, SOURCE, True)


@pytest.mark.parametrize("resolution", ["240p", "720p", "1080p"])
def test_the_only_face_in_a_clip_is_the_photo(tmp_path, resolution):
    """The backdrop must not draw false detections: runs would swap different numbers of faces."""
    from facefusion_batch.engines import build_engine
    from facefusion_batch.settings import Settings

    engine = build_engine(Settings(engine="offline", cache_path=tmp_path))
    still = clips.compose(read_image(SOURCE)[:, ::-1], clips.RESOLUTIONS[resolution])
    assert [len(engine.detect(frame)) for frame in clips.frames(still, 8)] == [1] * 8

"""Frames spooled through the temp dir come back exactly."""
import cv2
import numpy as np


def test_spooled_bmp_is_the_frame_bytes_after_a_top_down_header(tmp_path):
    """The temp dir's BMP frames are written without an encoder pass; OpenCV (and any BMP reader) reads back
    the exact frame; widths whose rows need padding go through OpenCV's encoder as before."""
    from facefusion_batch.workflow.frames import bmp_header, load, write_frame

    rng = np.random.default_rng(7)
    for height, width in ((360, 640), (7, 4), (5, 6), (3, 5)):
        frame = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        path = tmp_path / f"{width}.bmp"
        write_frame(path, frame)
        if (width * 3) % 4 == 0:
            assert path.stat().st_size == 54 + frame.size and bmp_header(frame) is not None
        else:
            assert bmp_header(frame) is None
        assert np.array_equal(cv2.imread(str(path), cv2.IMREAD_UNCHANGED), frame)
        assert np.array_equal(load(path), frame) and not path.exists()
    view = rng.integers(0, 256, (8, 16, 3), dtype=np.uint8)[:, ::2]  # not contiguous
    write_frame(tmp_path / "view.bmp", view)
    assert np.array_equal(cv2.imread(str(tmp_path / "view.bmp")), view)
    # a BMP OpenCV wrote (bottom-up rows) is not mistaken for one of ours: OpenCV reads it
    frame = rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)
    cv2.imwrite(str(tmp_path / "cv.bmp"), frame)
    assert np.array_equal(load(tmp_path / "cv.bmp"), frame)

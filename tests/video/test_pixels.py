import numpy as np
import pytest

from facefusion_batch.video.pixels import every_nth


@pytest.mark.parametrize("shape", [(720, 1280, 3), (241, 333, 3), (7, 9, 3), (5, 4), (33, 65, 4), (1, 1, 3)])
@pytest.mark.parametrize("step", [1, 2, 3, 5])
def test_every_nth_pixel_is_the_strided_view_copied(shape, step):
    image = np.random.default_rng(step).integers(0, 256, shape, dtype=np.uint8)
    crop = image[shape[0] // 4:, 1:]  # a view into a larger frame, as a face's region is
    for picture in (image, crop, image.astype(np.float32), image.astype(np.uint16) * 257, image > 127):
        taken = every_nth(picture, step)
        assert taken.dtype == picture.dtype and np.array_equal(taken, picture[::step, ::step])
        assert taken.flags["C_CONTIGUOUS"] or step == 1

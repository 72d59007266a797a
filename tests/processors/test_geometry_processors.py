import numpy as np
import pytest

from facefusion_batch.faces.geometry import (box_mask, compose, explode_tiles, hull_mask, implode_tiles,
                                             smooth_binary_mask, transform_points)
from facefusion_batch.processors.pixel_boost import check_boost, parse_boost
from facefusion_batch.models.catalog import CATALOG


def test_box_mask_padding_is_top_right_bottom_left_percent():
    mask = box_mask(100, 0.0, (10, 20, 30, 40))
    rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
    assert (rows[0], rows[-1], cols[0], cols[-1]) == (10, 69, 40, 79)
    assert mask[10:70, 40:80].min() == 1.0


def test_box_mask_blur_zeroes_a_border_then_softens_it():
    mask = box_mask(200, 0.3, (0, 0, 0, 0))
    # blur 0.3: a border of int(200 * 0.15) // 2 = 15 px is zero before a Gaussian of sigma 7.5
    assert mask[100, 100] == pytest.approx(1.0, abs=1e-4)
    assert mask[0, 100] < 0.1 and 0.3 < mask[15, 100] < 0.7
    np.testing.assert_allclose(mask, mask.T, atol=1e-6)


def test_smoothed_masks_leave_outside_pixels_exactly_zero():
    raw = np.zeros((100, 100), np.float32)
    raw[:, :50] = 1
    mask = smooth_binary_mask(raw)
    assert (mask[:, 50:] == 0).all() and (mask[:, :20] == 1).all()
    hull = hull_mask(100, np.array([[20, 20], [80, 20], [80, 80], [20, 80]]))
    assert hull[50, 50] == 1 and hull[5, 5] == 0 and hull[50, 95] == 0


def test_pixel_boost_tiles_round_trip_exactly_in_facefusions_layout():
    crop = np.random.default_rng(0).integers(0, 256, (512, 512, 3)).astype(np.uint8)
    tiles = implode_tiles(crop, 128)
    assert tiles.shape == (16, 128, 128, 3)
    # tile (a, b) holds pixels (i*4 + a, j*4 + b): each is the whole face, sub-pixel shifted
    np.testing.assert_array_equal(tiles[1 * 4 + 2], crop[1::4, 2::4])
    np.testing.assert_array_equal(explode_tiles(tiles), crop)
    with pytest.raises(ValueError, match="not a multiple"):
        implode_tiles(crop[:384, :384], 256)


def test_pixel_boost_sizes():
    assert parse_boost("512x512") == 512 and parse_boost("768") == 768
    with pytest.raises(ValueError):
        parse_boost("512x256")
    assert check_boost(CATALOG["inswapper_128"], 384) == 384
    with pytest.raises(ValueError, match="offers pixel boost 256x256, 512x512"):
        check_boost(CATALOG["hyperswap_1a_256"], 384)


def test_compose_and_transform_points():
    a = np.array([[2, 0, 5], [0, 2, 1]], np.float32)
    b = np.array([[0, -1, 3], [1, 0, 0]], np.float32)
    p = np.array([[1.0, 2.0], [3.0, -1.0]])
    np.testing.assert_allclose(transform_points(p, compose(a, b)), transform_points(transform_points(p, b), a))

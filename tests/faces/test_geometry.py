import cv2
import numpy as np
import pytest

from facefusion_batch.faces.geometry import (align_matrix, feather_mask, iou, letterbox, nms, paste_back, weighted_mean,
                                             similarity_factors, similarity_transform, warp_crop)
from facefusion_batch.models.catalog import TEMPLATES


def test_similarity_transform_recovers_a_known_transform():
    angle, scale, shift = np.deg2rad(17), 1.7, np.array([12.0, -5.0])
    rot = scale * np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    src = np.random.default_rng(0).uniform(0, 100, (5, 2))
    dst = src @ rot.T + shift
    matrix = similarity_transform(src, dst)
    np.testing.assert_allclose(matrix[:, :2], rot, atol=1e-4)
    np.testing.assert_allclose(matrix[:, 2], shift, atol=1e-3)


def test_similarity_factors_recover_each_sets_scale_and_rotation_and_ignore_depth_and_shift():
    rng = np.random.default_rng(1)
    target = rng.uniform(0, 100, (6, 3))
    factors = np.array([1.7 * np.exp(0.3j), 0.5 * np.exp(-1.1j), 1 + 0j])
    centred = (target[:, 0] - target[:, 0].mean()) + 1j * (target[:, 1] - target[:, 1].mean())
    sources = np.stack([np.column_stack([(centred / f).real + 40, (centred / f).imag - 7, rng.uniform(0, 9, 6)])
                        for f in factors])
    np.testing.assert_allclose(similarity_factors(sources, target), factors, atol=1e-12)
    one = similarity_factors(sources[1], target)
    assert one.shape == () and one == similarity_factors(sources, target)[1]
    paired = similarity_factors(sources, np.stack([target] * 3))  # a target per set
    np.testing.assert_allclose(paired, factors, atol=1e-12)


def test_similarity_factor_of_a_set_without_extent_is_one():
    assert similarity_factors(np.ones((4, 2)), np.arange(8.0).reshape(4, 2)) == 1 + 0j


def test_align_matrix_puts_keypoints_on_the_template():
    kps = np.array([[212, 120], [268, 120], [240, 150], [218, 180], [262, 180]], np.float32)
    matrix = align_matrix(kps, TEMPLATES["arcface_112_v2"], 112)
    mapped = np.hstack([kps, np.ones((5, 1))]) @ matrix.T
    assert np.abs(mapped - TEMPLATES["arcface_112_v2"] * 112).max() < 6


def test_templates_match_insightface_points():
    np.testing.assert_allclose(TEMPLATES["arcface_128"][0], [0.36167656, 0.40387734], atol=1e-6)
    np.testing.assert_allclose(TEMPLATES["arcface_112_v2"][0], [0.34191607, 0.46157411], atol=1e-6)


def test_letterbox_is_black_and_top_left():
    frame = np.full((100, 200, 3), 255, np.uint8)
    canvas, scale = letterbox(frame, 640)
    assert scale == pytest.approx(3.2)
    assert canvas[:320, :].min() == 255 and canvas[320:, :].max() == 0


def test_nms_and_iou():
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60]], np.float32)
    assert iou(boxes[0], boxes[1:])[1] == 0
    assert nms(boxes, np.array([0.9, 0.8, 0.7]), 0.4) == [0, 2]


def test_feather_mask_is_one_inside_zero_at_edges():
    mask = feather_mask(128)
    assert mask[64, 64] == 1.0 and mask[0].max() == 0.0 and mask[:, 0].max() == 0.0


def test_paste_back_touches_only_the_crops_footprint():
    rng = np.random.default_rng(3)
    frame = rng.integers(0, 255, (240, 320, 3), dtype=np.uint8)
    original = frame.copy()
    kps = np.array([[150, 100], [180, 100], [165, 120], [152, 140], [178, 140]], np.float32)
    matrix = align_matrix(kps, TEMPLATES["arcface_128"], 128)
    crop = np.full((128, 128, 3), 7, np.uint8)
    paste_back(frame, crop, feather_mask(128), matrix)
    changed = np.argwhere((frame != original).any(-1))
    corners = cv2.transform(np.array([[[0, 0], [128, 0], [0, 128], [128, 128]]], np.float32),
                            cv2.invertAffineTransform(matrix))[0]
    assert changed.size and (changed[:, 1] >= corners[:, 0].min() - 1).all()
    assert (changed[:, 1] <= corners[:, 0].max() + 1).all() and (changed[:, 0] <= corners[:, 1].max() + 1).all()
    centre = np.rint(kps[2]).astype(int)
    assert (frame[centre[1], centre[0]] == 7).all()


def test_paste_back_outside_the_frame_is_a_no_op():
    frame = np.zeros((50, 50, 3), np.uint8)
    matrix = np.array([[1, 0, 500], [0, 1, 500]], np.float32)
    assert paste_back(frame.copy(), np.ones((128, 128, 3), np.uint8), feather_mask(128), matrix).max() == 0


def test_warp_crop_size():
    assert warp_crop(np.zeros((50, 60, 3), np.uint8), np.eye(2, 3, dtype=np.float32), 112).shape == (112, 112, 3)


def test_weighted_mean_is_the_per_pixel_weighted_average_of_two_images():
    rng = np.random.default_rng(7)
    first, second = (rng.random((40, 50, 3), dtype=np.float32) * 255 for _ in range(2))
    w1, w2 = (rng.random((40, 50), dtype=np.float32) for _ in range(2))
    w1[:5], w2[:5] = 0, 0  # both weights 0: nothing
    w2[5:10] = 1 - w1[5:10]  # weights summing to 1: a plain blend, exact to float32 precision
    total = (w1 + w2)[..., None]
    expected = np.where(total > 0, (first * w1[..., None] + second * w2[..., None]) / np.maximum(total, 1e-12), 0)
    assert np.abs(weighted_mean(first, second, w1, w2) - expected).max() < 1e-3
    assert not weighted_mean(first, second, w1, w2)[:5].any()
    # uint8 images come back rounded and saturated
    a, b = np.full((4, 4, 3), 10, np.uint8), np.full((4, 4, 3), 250, np.uint8)
    half = np.full((4, 4), 0.5, np.float32)
    out = weighted_mean(a, b, half, half)
    assert out.dtype == np.uint8 and (out == 130).all()

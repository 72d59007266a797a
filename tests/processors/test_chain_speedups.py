"""Speed-ups of the processor chain stay exact: the enhancer step folds the swapped face in only inside the
box its mask reaches (`footprint`); the parser picks the regions with per-plane maxima (`best_is_wanted`)."""
import cv2
import numpy as np

from facefusion_batch.faces.geometry import box_mask
from facefusion_batch.processors.chain import footprint


def test_footprint_box_holds_every_visibly_pasted_pixel():
    mask = box_mask(256, 0.3, (0, 0, 0, 0))
    matrix = cv2.getRotationMatrix2D((128.0, 128.0), 12, 1.2).astype(np.float32)
    matrix[:, 2] += (128, 128)  # the 256 crop's centre on the 512 crop's: inside it, turned and larger
    box = footprint(mask, matrix, 512)
    assert box is not None
    x0, y0, x1, y1 = box
    warped = cv2.warpAffine(mask, matrix, (512, 512), flags=cv2.INTER_LINEAR, borderValue=0.0)
    outside = warped.copy()
    outside[y0:y1, x0:x1] = 0
    assert outside.max() <= 0.5 / 255  # nothing visible left out
    assert (x1 - x0) * (y1 - y0) < 0.8 * 512 * 512  # and the box saves work: it is not the whole crop


def test_footprint_is_none_when_the_mask_reaches_outside_and_empty_when_nothing_shows():
    mask = box_mask(256, 0.3, (0, 0, 0, 0))
    shifted = np.array([[1, 0, 300], [0, 1, 0]], np.float32)
    assert footprint(mask, shifted, 512) is None
    x0, y0, x1, y1 = footprint(np.zeros((256, 256), np.float32), shifted, 512)
    assert x1 <= x0 or y1 <= y0


def test_best_is_wanted_matches_the_argmax_with_ties_counted_as_wanted():
    from facefusion_batch.processors.masks import REGION_CLASSES, best_is_wanted

    rng = np.random.default_rng(3)
    scores = rng.standard_normal((19, 64, 64)).astype(np.float32)
    scores[3, :4] = scores[4, :4] = 9  # two wanted classes tie for best
    scores[15, 4:8] = scores[1, 4:8] = 9  # hair (not offered) ties with skin: counted as wanted
    wanted = sorted(REGION_CLASSES[r] for r in ("skin", "left-eye", "nose"))
    best = scores.argmax(0)
    expected = np.isin(best, wanted) | (scores[wanted].max(0) >= scores.max(0))
    got = best_is_wanted(scores, wanted)
    assert (got == expected).all() and got[4:8].all() and not got.all()
    assert best_is_wanted(scores, list(range(19))).all()


def test_to_tensor_fast_nhwc_path_equals_the_per_channel_formula():
    """XSeg's NHWC input with one mean/std for all channels takes scalar arithmetic; a per-channel NHWC
    model keeps the broadcast; both equal (x / 255 - mean) / std per channel."""
    import dataclasses

    from facefusion_batch.models.catalog import CATALOG
    from facefusion_batch.processors.tensors import to_tensor

    crops = np.random.default_rng(5).integers(0, 256, (2, 16, 16, 3), dtype=np.uint8)
    uniform = CATALOG["xseg_1"]
    mixed = dataclasses.replace(uniform, mean=(0.1, 0.2, 0.3), std=(0.5, 0.25, 2.0), rgb=True)
    for spec in (uniform, mixed):
        got = to_tensor(crops, spec)
        image = crops[..., ::-1] if spec.rgb else crops
        expected = (image / 255.0 - np.array(spec.mean)) / np.array(spec.std)
        assert got.shape == crops.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_to_tensor_planar_nchw_equals_the_transposed_formula_bit_for_bit():
    """NCHW models (swappers, enhancers, BiSeNet) get planes split by OpenCV and scaled in place: the same
    float32 numbers as numpy's transposed copy scaled in place, RGB and BGR, uint8 and float32 crops."""
    import dataclasses

    from facefusion_batch.models.catalog import CATALOG
    from facefusion_batch.processors.tensors import to_tensor

    rng = np.random.default_rng(6)
    for spec in (CATALOG["bisenet_resnet_34"], CATALOG["gfpgan_1.4"], CATALOG["gpen_bfr_512"],
                 dataclasses.replace(CATALOG["bisenet_resnet_34"], rgb=False)):
        for crops in (rng.integers(0, 256, (3, 24, 20, 3), dtype=np.uint8),
                      rng.uniform(0, 255, (1, 24, 20, 3)).astype(np.float32)):
            image = crops[..., ::-1] if spec.rgb else crops
            expected = np.array(image.transpose(0, 3, 1, 2), dtype=np.float32)
            std, mean = np.array(spec.std, np.float32), np.array(spec.mean, np.float32)
            expected *= (1.0 / (255.0 * std)).reshape(1, 3, 1, 1)
            expected -= (mean / std).reshape(1, 3, 1, 1)
            got = to_tensor(crops, spec)
            assert got.shape == expected.shape and got.flags.c_contiguous
            assert np.array_equal(got, expected), spec.name


def test_paste_back_in_one_opencv_pass_equals_the_numpy_blend():
    """frame * (1 - alpha) + crop * alpha, rounded: at most one grey level apart on a handful of pixels (float
    rounding of a half), for uint8 and float32 crops; values outside 0..255 saturate."""
    from facefusion_batch.faces.geometry import paste_back

    rng = np.random.default_rng(1)
    frame = cv2.GaussianBlur(rng.integers(0, 256, (200, 240, 3), dtype=np.uint8), (0, 0), 2)
    matrix = cv2.getRotationMatrix2D((120.0, 100.0), 10, 1.7).astype(np.float32)
    matrix[:, 2] += (128 - 120, 128 - 100)
    mask = box_mask(256, 0.3, (0, 0, 0, 0))
    for crop in (rng.integers(0, 256, (256, 256, 3)).astype(np.uint8),
                 rng.uniform(-20, 280, (256, 256, 3)).astype(np.float32)):
        inverse = cv2.invertAffineTransform(matrix)
        warped = cv2.warpAffine(crop, inverse, (240, 200), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        alpha = cv2.warpAffine(mask, inverse, (240, 200), flags=cv2.INTER_LINEAR, borderValue=0.0)[..., None]
        expected = np.clip(np.rint(frame * (1.0 - alpha) + warped.astype(np.float32) * alpha), 0, 255)
        got = paste_back(frame.copy(), crop, mask, matrix)
        diff = np.abs(got.astype(int) - expected.astype(int))
        assert diff.max() <= 1 and (diff > 0).mean() < 1e-3
        assert (got != frame).any(2).sum() > 5000


def test_model_mask_blurred_at_model_size_matches_facefusions_blur_at_crop_size():
    """XSeg's 256 mask for a 512 crop is blurred at 256 and resized after: within a grey level of resizing
    first and blurring at crop size, on a face-like mask with an occluding hand; other sizes resize first."""
    from facefusion_batch.faces.geometry import smooth_binary_mask, smooth_model_mask

    yy, xx = np.mgrid[:256, :256]
    face = ((xx - 128) ** 2 / 90 ** 2 + (yy - 140) ** 2 / 110 ** 2 < 1).astype(np.float32)
    face[150:, 60:120] = 0  # a hand in front of the chin
    for raw in (face, cv2.GaussianBlur(face, (0, 0), 1.0)):
        for size in (512,):
            exact = smooth_binary_mask(cv2.resize(raw, (size, size)))
            got = smooth_model_mask(raw, size)
            assert got.shape == (size, size) and np.abs(got - exact).max() < 1 / 255
            assert got.max() == 1 and (got == 0).mean() > 0.3
        assert np.array_equal(smooth_model_mask(raw, 256), smooth_binary_mask(raw))
        for size in (128, 700, 1024):
            assert np.array_equal(smooth_model_mask(raw, size), smooth_binary_mask(cv2.resize(raw, (size, size))))


def test_best_is_wanted_in_bands_of_rows_matches_the_argmax_across_band_edges():
    from facefusion_batch.processors.masks import best_is_wanted

    rng = np.random.default_rng(4)
    for shape in ((19, 300, 40), (19, 128, 7), (5, 129, 3), (3, 1, 9)):
        scores = rng.standard_normal(shape).astype(np.float32)
        wanted = [1, 2] if shape[0] > 3 else [0]
        expected = np.isin(scores.argmax(0), wanted)
        assert (best_is_wanted(scores, wanted) == expected).all(), shape
    assert best_is_wanted(scores.astype(np.float16), [0]).shape == (1, 9)  # other float types are compared too


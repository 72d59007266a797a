"""Every FaceFusion swapper family through its stand-in, on a real face: the numbers that come back show the
channel order, mean/std, template and de-normalisation the adapter used."""
import numpy as np
import pytest

from processor_helpers import Recorder, real_frame
import standins
from facefusion_batch.faces.geometry import WARP_TEMPLATES, align_matrix, warp_crop
from facefusion_batch.models.catalog import CATALOG, SWAPPERS
from facefusion_batch.processors.swapper import Swapper, SwapperOptions, weight_factor

KPS = np.array([[280, 210], [360, 210], [320, 260], [290, 300], [350, 300]], np.float32)
DENORMALISED = {"ghost", "hififace", "hyperswap", "uniface"}


def _source_shape(spec):
    return {"blendswap": (3, 112, 112), "uniface": (3, 256, 256)}.get(spec.kind, (512,))


def _swapper(tmp_path, name, mode="mean", boost=None, dynamic=False, gain=0.0, weight=0.5):
    spec = CATALOG[name]
    session = Recorder(standins.build_swapper(tmp_path / f"{name}.onnx", spec.size, _source_shape(spec), mode,
                                              gain, dynamic))
    converter = emap = None
    if spec.converter:
        converter = Recorder(standins.build_converter(tmp_path / "conv.onnx", 2 * np.eye(512)[::-1]))
    if spec.kind == "inswapper":
        emap = np.random.default_rng(1).standard_normal((512, 512)).astype(np.float32)
    return Swapper(session, spec, SwapperOptions(name, weight, boost), converter, emap), session


def _source(swapper, frame):
    embedding = np.random.default_rng(2).standard_normal(512).astype(np.float32)
    return swapper.source_input(embedding, frame, KPS)


@pytest.mark.parametrize("name", SWAPPERS)
def test_crop_normalisation_and_channel_order(tmp_path, name):
    swapper, session = _swapper(tmp_path, name)
    frame = real_frame()
    crop = warp_crop(frame, align_matrix(KPS, swapper.template, swapper.size), swapper.size)
    [out] = swapper.swap([crop], _source(swapper, frame))
    spec = CATALOG[name]
    # expected, from FaceFusion's facts: RGB, (x/255 - mean)/std, per-channel mean from the stand-in,
    # de-normalised only for the kinds that output the normalised range, clipped, back to BGR
    rgb = crop[:, :, ::-1].astype(np.float64) / 255.0
    model_in = (rgb - np.array(spec.mean)) / np.array(spec.std)
    value = model_in.mean((0, 1))
    if spec.kind in DENORMALISED:
        value = value * np.array(spec.std) + np.array(spec.mean)
    expected = np.clip(value, 0, 1)[::-1] * 255
    np.testing.assert_allclose(out.reshape(-1, 3).mean(0), expected, atol=0.3)  # float32 means
    assert out.shape == (spec.size, spec.size, 3)
    assert session.feeds[0]["target"].shape == (1, 3, spec.size, spec.size)


@pytest.mark.parametrize("name", ["hyperswap_1a_256", "inswapper_128", "simswap_256", "ghost_1_256"])
def test_zero_output_shows_the_denormalisation(tmp_path, name):
    swapper, _ = _swapper(tmp_path, name, mode="zero")
    frame = real_frame()
    crop = warp_crop(frame, align_matrix(KPS, swapper.template, swapper.size), swapper.size)
    [out] = swapper.swap([crop], _source(swapper, frame))
    spec = CATALOG[name]
    zero = np.array(spec.mean) if spec.kind in DENORMALISED else np.zeros(3)
    np.testing.assert_allclose(out[0, 0], zero[::-1] * 255, atol=1e-3)


def test_the_template_is_the_models(tmp_path):
    swapper, _ = _swapper(tmp_path, "hififace_unofficial_256")
    assert swapper.template is WARP_TEMPLATES["mtcnn_512"]
    matrix = align_matrix(KPS, swapper.template, 256)
    mapped = KPS @ matrix[:, :2].T + matrix[:, 2]
    np.testing.assert_allclose(mapped, WARP_TEMPLATES["mtcnn_512"] * 256, atol=5)


@pytest.mark.parametrize("name", ["inswapper_128", "hyperswap_1a_256", "simswap_unofficial_512"])
def test_pixel_boost_round_trip_is_exact_with_an_identity_model(tmp_path, name):
    spec = CATALOG[name]
    boost = spec.boost_sizes[-1]
    swapper, session = _swapper(tmp_path, name, mode="identity", boost=boost, dynamic=True)
    frame = real_frame()
    crops = [warp_crop(frame, align_matrix(KPS + shift, swapper.template, boost), boost) for shift in (0, 7)]
    outs = swapper.swap(crops, _source(swapper, frame))
    for crop, out in zip(crops, outs):
        assert out.shape == crop.shape
        np.testing.assert_allclose(out, crop, atol=1e-3)
    tiles = (boost // spec.size) ** 2
    assert session.calls == 1 and session.feeds[0]["target"].shape[0] == 2 * tiles  # both faces, one call


def test_fixed_batch_model_gets_one_call_per_tile_and_the_same_result(tmp_path):
    frame = real_frame()
    fixed, fixed_session = _swapper(tmp_path / "a", "hyperswap_1a_256", boost=512)
    dynamic, _ = _swapper(tmp_path / "b", "hyperswap_1a_256", boost=512, dynamic=True)
    crop = warp_crop(frame, align_matrix(KPS, fixed.template, 512), 512)
    source = _source(fixed, frame)
    np.testing.assert_allclose(fixed.swap([crop], source)[0], dynamic.swap([crop], source)[0], atol=1e-3)
    assert fixed_session.calls == 4


def test_source_identity_per_family(tmp_path):
    frame = real_frame()
    embedding = np.random.default_rng(5).standard_normal(512).astype(np.float32) * 3
    unit = embedding / np.linalg.norm(embedding)
    hyper, _ = _swapper(tmp_path, "hyperswap_1a_256")
    np.testing.assert_allclose(hyper.source_input(embedding), unit[None], atol=1e-6)
    insw, _ = _swapper(tmp_path, "inswapper_128")
    np.testing.assert_allclose(insw.source_input(embedding), (embedding @ insw._emap)[None] / np.linalg.norm(embedding),
                               rtol=1e-4, atol=1e-4)
    # the converter stand-in is 2 x a reversed identity: ghost keeps its raw output, simswap/hififace normalise it
    ghost, _ = _swapper(tmp_path, "ghost_3_256")
    np.testing.assert_allclose(ghost.source_input(embedding), 2 * embedding[::-1][None], atol=1e-5)
    simswap, _ = _swapper(tmp_path, "simswap_256")
    np.testing.assert_allclose(simswap.source_input(embedding), unit[::-1][None], atol=1e-6)
    blend, _ = _swapper(tmp_path, "blendswap_256")
    image = blend.source_input(frame=frame, kps=KPS)
    crop = warp_crop(frame, align_matrix(KPS, WARP_TEMPLATES["arcface_112_v2"], 112), 112)
    np.testing.assert_allclose(image[0], crop[:, :, ::-1].transpose(2, 0, 1) / 255.0, atol=1e-6)
    uniface, _ = _swapper(tmp_path, "uniface_256")
    assert uniface.source_input(frame=frame, kps=KPS).shape == (1, 3, 256, 256)
    with pytest.raises(ValueError, match="as an image"):
        blend.source_input(embedding)


def test_the_source_reaches_the_model(tmp_path):
    frame = real_frame()
    swapper, session = _swapper(tmp_path, "blendswap_256", gain=0.2)
    crop = warp_crop(frame, align_matrix(KPS, swapper.template, 256), 256)
    source = swapper.source_input(frame=frame, kps=KPS)
    [out] = swapper.swap([crop], source)
    without, _ = _swapper(tmp_path / "plain", "blendswap_256")
    [plain] = without.swap([crop], source)
    shift = (out - plain).reshape(-1, 3).mean(0)  # BGR, the source image's RGB channel means x 255
    np.testing.assert_allclose(shift[::-1], 0.2 * source[0].mean((1, 2)) * 255, atol=0.3)


def test_weight_mixes_the_target_identity_as_facefusion_does(tmp_path):
    assert weight_factor(0.5) == 0 and weight_factor(0.0) == pytest.approx(0.35)
    assert weight_factor(1.0) == pytest.approx(-0.35)
    source = np.random.default_rng(6).standard_normal((1, 512)).astype(np.float32)
    target = np.random.default_rng(7).standard_normal((2, 512)).astype(np.float32) * 4
    hyper, _ = _swapper(tmp_path, "hyperswap_1a_256", weight=1.0)
    rows = hyper.balance(source, target, 2)
    unit = target / np.linalg.norm(target, axis=1, keepdims=True)
    np.testing.assert_allclose(rows, source * 1.35 - unit * 0.35, atol=1e-5)
    ghost, _ = _swapper(tmp_path, "ghost_1_256", weight=0.0)
    np.testing.assert_allclose(ghost.balance(source, target, 2), source * 0.65 + target * 0.35, atol=1e-5)
    neutral, _ = _swapper(tmp_path, "hyperswap_1a_256")
    np.testing.assert_array_equal(neutral.balance(source, None, 2), np.repeat(source, 2, axis=0))
    with pytest.raises(ValueError, match="embeddings"):
        hyper.balance(source, None, 2)


def test_bad_options_are_clear():
    with pytest.raises(ValueError, match="weight must be 0..1"):
        SwapperOptions(weight=1.5)
    with pytest.raises(ValueError, match="needs its embedding converter crossface_ghost"):
        Swapper(object(), CATALOG["ghost_1_256"], SwapperOptions("ghost_1_256"))
    with pytest.raises(ValueError, match="offers pixel boost"):
        Swapper(object(), CATALOG["simswap_unofficial_512"], SwapperOptions(boost=256), converter=object())


def test_several_sources_average_as_facefusion_does(tmp_path):
    from facefusion_batch.processors.swapper import average_identity

    raws = np.random.default_rng(8).standard_normal((2, 512)).astype(np.float32) * [[1.0], [5.0]]
    raw, unit = average_identity(raws)
    np.testing.assert_allclose(raw, raws.mean(0), atol=1e-6)
    units = raws / np.linalg.norm(raws, axis=1, keepdims=True)
    np.testing.assert_allclose(unit, units.mean(0), atol=1e-6)
    hyper, _ = _swapper(tmp_path, "hyperswap_1a_256")
    np.testing.assert_allclose(hyper.source_input(raw, unit=unit), units.mean(0)[None], atol=1e-6)
    insw, _ = _swapper(tmp_path, "inswapper_128")
    np.testing.assert_allclose(insw.source_input(raw, unit=unit), (raw @ insw._emap)[None] / np.linalg.norm(raw),
                               rtol=1e-4, atol=1e-4)

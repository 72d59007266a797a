"""Enhancer normalisation and CodeFormer's fidelity input; occlusion and region masks from stand-ins with
known regions, checked pixel by pixel after the paste on a real face."""
import numpy as np
import pytest

from processor_helpers import Recorder, real_frame, translated_face
import standins
from facefusion_batch.models.catalog import CATALOG
from facefusion_batch.processors.chain import ProcessorChain
from facefusion_batch.processors.enhancer import Enhancer, EnhancerOptions
from facefusion_batch.processors.masks import MaskOptions, Occluder, Parser, REGION_CLASSES, area_mask
from facefusion_batch.processors.swapper import Swapper, SwapperOptions
from facefusion_batch.faces.geometry import align_matrix, warp_crop

OFFSET = (200, 150)


def _enhancer(tmp_path, name="gfpgan_1.4", mode="identity", weight_input=False, blend=100, weight=0.5,
              dynamic=False):
    spec = CATALOG[name]
    session = Recorder(standins.build_enhancer(tmp_path / f"{name}.onnx", spec.size, mode, weight_input, dynamic))
    return Enhancer(session, spec, EnhancerOptions(name, blend, weight)), session


def test_enhancer_identity_round_trip_is_exact_on_a_real_face(tmp_path):
    enhancer, session = _enhancer(tmp_path)
    frame = real_frame()
    crop = warp_crop(frame, align_matrix(translated_face("ffhq_512", 512, (0, 0)).kps + 60, enhancer.template, 512), 512)
    [out] = enhancer.enhance([crop])
    np.testing.assert_array_equal(out, crop.astype(np.float32))
    fed = session.feeds[0]["input"]
    assert fed.shape == (1, 3, 512, 512) and fed.min() >= -1 and fed.max() <= 1
    np.testing.assert_allclose(fed[0, 0], crop[:, :, 2] / 127.5 - 1, atol=1e-6)  # channel 0 is red


def test_enhancer_mean_output_shows_normalisation(tmp_path):
    enhancer, _ = _enhancer(tmp_path, "gpen_bfr_256", mode="mean")
    crop = np.zeros((256, 256, 3), np.uint8)
    crop[..., 2] = 200  # red in BGR
    [out] = enhancer.enhance([crop])
    np.testing.assert_array_equal(out[0, 0], [0, 0, 200])


def test_codeformer_fidelity_weight_is_fed(tmp_path):
    enhancer, session = _enhancer(tmp_path, "codeformer", weight_input=True, weight=0.2)
    crop = np.full((512, 512, 3), 100, np.uint8)
    [out] = enhancer.enhance([crop])
    assert session.feeds[0]["weight"].dtype == np.float64 and session.feeds[0]["weight"].tolist() == [0.2]
    # identity + weight in [-1, 1] space: 100 -> 100/127.5 - 1 + 0.2 -> back to pixels
    expected = np.rint((100 / 127.5 - 1 + 0.2 + 1) / 2 * 255)
    assert out[0, 0].tolist() == [expected] * 3


def test_enhancer_batches_faces_when_the_model_allows(tmp_path):
    enhancer, session = _enhancer(tmp_path, dynamic=True)
    crops = [np.full((512, 512, 3), v, np.uint8) for v in (10, 90, 250)]
    outs = enhancer.enhance(crops)
    assert session.calls == 1 and [o[0, 0, 0] for o in outs] == [10, 90, 250]
    fixed, fixed_session = _enhancer(tmp_path / "fixed")
    fixed.enhance(crops)
    assert fixed_session.calls == 3


def _black_swapper(tmp_path):
    spec = CATALOG["inswapper_128"]
    session = standins.build_swapper(tmp_path / "inswapper.onnx", 128, mode="zero")
    emap = np.eye(512, dtype=np.float32)
    swapper = Swapper(Recorder(session), spec, SwapperOptions("inswapper_128"), emap=emap)
    return swapper, swapper.source_input(np.ones(512, np.float32))


def test_occlusion_mask_pastes_exactly_the_unoccluded_pixels(tmp_path):
    swapper, source = _black_swapper(tmp_path)
    raw = np.zeros((256, 256), np.float32)
    raw[:, :128] = 1  # the occluder sees the face in the left half only (a hand over the right half)
    occluder_session = Recorder(standins.build_occluder(tmp_path / "xseg_1.onnx", raw))
    occluder = Occluder(occluder_session, CATALOG["xseg_1"])
    chain = ProcessorChain(swapper, None, MaskOptions(("box", "occlusion"), blur=0.0), occluder=occluder)
    frame = real_frame()
    before = frame.copy()
    face = translated_face("arcface_128", 128, OFFSET)
    chain.process(frame, [face], source)
    changed = (frame != before).any(2)
    ox, oy = OFFSET
    outside = changed.copy()
    outside[oy:oy + 128, ox:ox + 64] = False
    assert not outside.any()  # nothing right of the occlusion edge nor outside the crop
    assert (frame[oy + 1:oy + 127, ox + 1:ox + 30] == 0).all()  # the visible face is pasted fully
    assert not changed[oy:oy + 128, ox].any()  # the box mask's 1 px border
    # the occluder got the crop as BGR in [0, 1], NHWC, at its 256 size
    fed = occluder_session.feeds[0]["input"]
    assert fed.shape == (1, 256, 256, 3)
    crop = before[oy:oy + 128, ox:ox + 128].astype(np.float64)
    np.testing.assert_allclose(fed[0].mean((0, 1)), crop.mean((0, 1)) / 255, atol=2e-3)


def test_region_mask_pastes_only_the_chosen_regions(tmp_path):
    swapper, source = _black_swapper(tmp_path)
    classes = np.full((512, 512), 17)  # hair on top
    classes[256:, :] = REGION_CLASSES["skin"]  # skin below
    parser_session = Recorder(standins.build_parser(tmp_path / "bisenet.onnx", classes))
    parser = Parser(parser_session, CATALOG["bisenet_resnet_34"])
    chain = ProcessorChain(swapper, None, MaskOptions(("box", "region"), blur=0.0, regions=("skin", "nose")),
                           parser=parser)
    frame = real_frame()
    before = frame.copy()
    chain.process(frame, [translated_face("arcface_128", 128, OFFSET)], source)
    ox, oy = OFFSET
    changed = (frame != before).any(2)
    assert not changed[:oy + 64].any() and not changed[oy + 128:].any()
    assert (frame[oy + 64 + 30:oy + 127, ox + 1:ox + 127] == 0).all()
    fed = parser_session.feeds[0]["input"]  # RGB, ImageNet mean/std, NCHW at 512
    assert fed.shape == (1, 3, 512, 512)
    crop = swapper.swap([before[oy:oy + 128, ox:ox + 128]], source)[0]  # black: every channel at -mean/std
    np.testing.assert_allclose(fed[0, :, 5, 5], -np.array([0.485, 0.456, 0.406]) / np.array([0.229, 0.224, 0.225]),
                               atol=1e-5)
    assert crop.max() == 0


def test_padding_keeps_the_top_of_the_crop(tmp_path):
    swapper, source = _black_swapper(tmp_path)
    chain = ProcessorChain(swapper, None, MaskOptions(("box",), blur=0.0, padding=(50, 0, 0, 0)))
    frame = real_frame()
    before = frame.copy()
    chain.process(frame, [translated_face("arcface_128", 128, OFFSET)], source)
    ox, oy = OFFSET
    changed = (frame != before).any(2)
    assert not changed[:oy + 64].any() and (frame[oy + 64:oy + 127, ox + 1:ox + 127] == 0).all()


def test_area_mask_is_the_hull_of_the_chosen_landmarks():
    points = np.zeros((68, 2))
    points[48:68] = [[50 + 30 * np.cos(a), 80 + 22 * np.sin(a)] for a in np.linspace(0, 2 * np.pi, 20)]
    mask = area_mask(128, points, ["mouth"])
    assert mask[80, 50] == pytest.approx(1, abs=1e-4) and mask[40, 50] == 0 and mask[80, 90] == 0


def test_mask_options_are_checked():
    with pytest.raises(ValueError, match="box, occlusion, area, region"):
        MaskOptions(("box", "oval"))
    with pytest.raises(ValueError, match="top right bottom left"):
        MaskOptions(padding=(0, 0, 0))
    with pytest.raises(ValueError, match="unknown face mask region/area eyes"):
        MaskOptions(regions=("eyes",))
    with pytest.raises(ValueError, match="xseg"):
        ProcessorChain(object(), None, MaskOptions(("occlusion",)))


def test_area_mask_in_the_chain_follows_the_frame_landmarks(tmp_path):
    swapper, source = _black_swapper(tmp_path)
    chain = ProcessorChain(swapper, None, MaskOptions(("box", "area"), blur=0.0, areas=("mouth",)))
    frame = real_frame()
    before = frame.copy()
    ox, oy = OFFSET
    landmarks = np.zeros((68, 2))
    angles = np.linspace(0, 2 * np.pi, 20, endpoint=False)
    landmarks[48:68] = np.stack([ox + 64 + 30 * np.cos(angles), oy + 95 + 20 * np.sin(angles)], axis=1)
    chain.process(frame, [translated_face("arcface_128", 128, OFFSET)], source, landmarks68=[landmarks])
    changed = (frame != before).any(2)
    assert (frame[oy + 95, ox + 55:ox + 74] == 0).all()  # the mouth's middle is pasted fully
    assert not changed[:oy + 70].any() and not changed[:, :ox + 30].any() and not changed[:, ox + 98:].any()
    with pytest.raises(ValueError, match="68 landmarks"):
        chain.process(frame, [translated_face("arcface_128", 128, OFFSET)], source)


def test_weight_in_the_chain_needs_the_target_embeddings(tmp_path):
    spec = CATALOG["hyperswap_1a_256"]
    session = Recorder(standins.build_swapper(tmp_path / "h.onnx", 256, mode="mean", source_gain=1.0))
    swapper = Swapper(session, spec, SwapperOptions("hyperswap_1a_256", weight=1.0))
    source = swapper.source_input(np.ones(512, np.float32))
    chain = ProcessorChain(swapper, None, MaskOptions())
    face = translated_face("arcface_128", 256, (100, 100))
    with pytest.raises(ValueError, match="embeddings"):
        chain.process(real_frame(), [face], source)
    target = np.zeros((1, 512), np.float32)
    target[0, 0] = 7.0
    chain.process(real_frame(), [face], source, target_embeddings=target)
    fed = session.feeds[-1]["source"][0]
    np.testing.assert_allclose(fed[:2], [1.35 / np.sqrt(512) - 0.35, 1.35 / np.sqrt(512)], atol=1e-5)

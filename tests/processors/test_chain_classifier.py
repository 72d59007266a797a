"""The chain's single paste per face equals FaceFusion's paste-per-processor; classifier and selector."""
import numpy as np
import pytest

from processor_helpers import Recorder, real_frame, translated_face
import standins
from facefusion_batch.faces.types import Face
from facefusion_batch.models.catalog import CATALOG
from facefusion_batch.faces.geometry import align_matrix
from facefusion_batch.processors.chain import ProcessorChain, magnifies
from facefusion_batch.processors.classifier import (Attributes, FaceClassifier, filter_faces, needs_classifier,
                                                    sort_faces)
from facefusion_batch.processors.enhancer import Enhancer, EnhancerOptions
from facefusion_batch.processors.masks import MaskOptions
from facefusion_batch.processors.swapper import Swapper, SwapperOptions

KPS = np.array([[280, 210], [360, 210], [320, 260], [290, 300], [350, 300]], np.float32)


def _face(kps):
    return Face(box=np.array([kps[:, 0].min() - 40, kps[:, 1].min() - 60, kps[:, 0].max() + 40,
                              kps[:, 1].max() + 40], np.float32), score=0.9, kps=kps)


def _models(tmp_path, swapper="hyperswap_1a_256", enhancer="gfpgan_1.4", blend=80, dynamic=True):
    sspec, espec = CATALOG[swapper], CATALOG[enhancer]
    s_session = Recorder(standins.build_swapper(tmp_path / "s.onnx", sspec.size, mode="mean", dynamic_batch=dynamic))
    converter = Recorder(standins.build_converter(tmp_path / "c.onnx", np.eye(512))) if sspec.converter else None
    swap = Swapper(s_session, sspec, SwapperOptions(swapper), converter)
    e_session = Recorder(standins.build_enhancer(tmp_path / "e.onnx", espec.size, "mean", dynamic_batch=dynamic))
    enhance = Enhancer(e_session, espec, EnhancerOptions(enhancer, blend))
    return swap, enhance, s_session, e_session


def _two_pastes(frame, faces, swap, enhance, masks, source):
    """FaceFusion's way: paste the swap into the frame, then warp that frame again for the enhancer."""
    ProcessorChain(swap, None, masks).process(frame, faces, source)
    return ProcessorChain(None, enhance, masks).process(frame, faces)


# A face big enough that the enhancer's crop doesn't enlarge it (eyes 176 px apart vs ffhq_512's 126): the
# chain folds the two pastes into one there.
BIG_KPS = (KPS - [320, 255]) * 2.2 + [320, 250]


@pytest.mark.parametrize("swapper, enhancer", [("hyperswap_1a_256", "gfpgan_1.4"), ("ghost_1_256", "gpen_bfr_256")])
def test_one_paste_per_face_matches_two_pastes(tmp_path, swapper, enhancer):
    swap, enhance, _, _ = _models(tmp_path, swapper, enhancer)
    source = swap.source_input(np.random.default_rng(0).standard_normal(512).astype(np.float32))
    masks = MaskOptions(("box",), blur=0.3)
    faces = [_face(BIG_KPS)]
    chain = ProcessorChain(swap, enhance, masks)
    assert not magnifies(align_matrix(BIG_KPS, enhance.template, enhance.size))  # the fold is what runs
    reference = _two_pastes(real_frame(), faces, swap, enhance, masks, source)
    frame = chain.process(real_frame(), faces, source)
    diff = np.abs(frame.astype(int) - reference.astype(int))
    changed = (frame != real_frame()).any(2)
    assert np.quantile(diff, 0.999) <= 3 and diff.mean() < 1  # the fold doesn't round between the pastes
    assert changed.sum() > 20000  # the face did change


@pytest.mark.parametrize("enhancer", ["gfpgan_1.4", "gpen_bfr_256"])
def test_a_face_the_enhancer_crop_enlarges_is_pasted_twice_as_facefusion_does(tmp_path, enhancer):
    """Small faces (the enhancer's crop has more pixels than the face in the frame) are pasted at frame size
    twice, which is cheaper than folding at crop size, and is exactly FaceFusion's way."""
    swap, enhance, _, _ = _models(tmp_path, "hyperswap_1a_256", enhancer)
    source = swap.source_input(np.random.default_rng(0).standard_normal(512).astype(np.float32))
    masks = MaskOptions(("box",), blur=0.3)
    small = KPS * 0.5 + [160, 120] if enhancer == "gpen_bfr_256" else KPS  # gpen_bfr_256's crop is half the size
    assert magnifies(align_matrix(small, enhance.template, enhance.size))
    reference = _two_pastes(real_frame(), [_face(small)], swap, enhance, masks, source)
    frame = ProcessorChain(swap, enhance, masks).process(real_frame(), [_face(small)], source)
    assert (frame == reference).all() and (frame != real_frame()).any(2).sum() > 2000


def test_magnifies_compares_the_crop_scale_with_one():
    assert magnifies(np.array([[1.2, 0, 5], [0, 1.2, 3]], np.float32))
    assert not magnifies(np.array([[0.6, -0.6, 5], [0.6, 0.6, 3]], np.float32))  # scale 0.85, turned 45 degrees
    assert not magnifies(np.array([[1, 0, 0], [0, 1, 0]], np.float32))


def test_enhancer_alone_with_an_identity_model_leaves_the_frame(tmp_path):
    espec = CATALOG["gfpgan_1.4"]
    enhance = Enhancer(Recorder(standins.build_enhancer(tmp_path / "e.onnx", 512)), espec, EnhancerOptions(blend=100))
    frame = real_frame(640, 800)
    # the face sits so its enhancer crop is frame pixels exactly: warp and paste add no resampling
    out = ProcessorChain(None, enhance, MaskOptions()).process(frame.copy(), [translated_face("ffhq_512", 512, (140, 60))])
    assert np.abs(out.astype(int) - frame.astype(int)).max() <= 1


def test_blend_zero_changes_only_the_swap(tmp_path):
    swap, _, _, _ = _models(tmp_path)
    espec = CATALOG["gfpgan_1.4"]
    enhance = Enhancer(Recorder(standins.build_enhancer(tmp_path / "m.onnx", 512, "mean")), espec,
                       EnhancerOptions(blend=0))
    source = swap.source_input(np.ones(512, np.float32))
    masks = MaskOptions()
    swapped_only = ProcessorChain(swap, None, masks).process(real_frame(), [_face(KPS)], source)
    both = ProcessorChain(swap, enhance, masks).process(real_frame(), [_face(KPS)], source)
    assert np.quantile(np.abs(both.astype(int) - swapped_only.astype(int)), 0.999) <= 3


def test_all_faces_of_a_frame_share_one_call_per_model(tmp_path):
    swap, enhance, s_session, e_session = _models(tmp_path)
    faces = [_face(KPS), _face(KPS + [-200, 60]), _face(KPS * 0.6 + [300, 0])]
    source = swap.source_input(np.ones(512, np.float32))
    ProcessorChain(swap, enhance, MaskOptions()).process(real_frame(), faces, source)
    assert s_session.calls == 1 and s_session.feeds[0]["target"].shape[0] == 3
    assert e_session.calls == 1 and e_session.feeds[0]["input"].shape[0] == 3


def test_swap_mask_reaching_outside_the_enhancer_crop_is_pasted_first(tmp_path):
    # simswap_unofficial_512's arcface_112_v1 crop reaches above gpen_bfr_256's arcface_128 crop
    swap, enhance, _, _ = _models(tmp_path, "simswap_unofficial_512", "gpen_bfr_256")
    source = swap.source_input(np.ones(512, np.float32))
    masks = MaskOptions(("box",), blur=0.3)
    reference = _two_pastes(real_frame(), [_face(KPS)], swap, enhance, masks, source)
    frame = ProcessorChain(swap, enhance, masks).process(real_frame(), [_face(KPS)], source)
    assert np.abs(frame.astype(int) - reference.astype(int)).max() <= 1


def test_classifier_reads_rgb_and_maps_facefusions_classes(tmp_path):
    session = Recorder(standins.build_fairface(tmp_path / "fairface.onnx", age_id=8))
    classifier = FaceClassifier(session, CATALOG["fairface"])
    frame = np.zeros((400, 600, 3), np.uint8)
    frame[:, :300] = (40, 40, 220)  # red (BGR) on the left
    frame[:, 300:] = (40, 220, 40)  # green on the right
    left, right = _face(KPS - [170, 0]), _face(KPS + [130, 0])
    attrs = classifier.classify(frame, [left, right])
    assert attrs[0] == Attributes("female", range(70, 100), "white")
    assert attrs[1] == Attributes("male", range(70, 100), "black")
    assert session.calls == 1


def test_selector_orders_and_filters():
    faces = [Face(np.array(b, np.float32), s, np.zeros((5, 2), np.float32)) for b, s in
             [([100, 50, 200, 150], 0.7), ([10, 80, 50, 120], 0.9), ([300, 10, 420, 170], 0.5)]]
    assert [f.score for f in sort_faces(faces, "left-right")] == [0.9, 0.7, 0.5]
    assert [f.score for f in sort_faces(faces, "right-left")] == [0.5, 0.7, 0.9]
    assert [f.score for f in sort_faces(faces, "top-bottom")] == [0.5, 0.7, 0.9]
    assert [f.score for f in sort_faces(faces, "bottom-top")] == [0.9, 0.7, 0.5]
    assert [f.score for f in sort_faces(faces, "small-large")] == [0.9, 0.7, 0.5]
    assert [f.score for f in sort_faces(faces, "large-small")] == [0.5, 0.7, 0.9]
    assert [f.score for f in sort_faces(faces, "best-worst")] == [0.9, 0.7, 0.5]
    assert [f.score for f in sort_faces(faces, "worst-best")] == [0.5, 0.7, 0.9]
    with pytest.raises(ValueError, match="left-right"):
        sort_faces(faces, "middle-out")
    attrs = [Attributes("female", range(20, 29), "asian"), Attributes("male", range(30, 39), "white"),
             Attributes("female", range(60, 69), "white")]
    assert filter_faces(faces, attrs, gender="female") == [faces[0], faces[2]]
    assert filter_faces(faces, attrs, race="white", gender="female") == [faces[2]]
    assert filter_faces(faces, attrs, age_start=25, age_end=35) == [faces[0], faces[1]]
    assert filter_faces(faces, attrs) == faces
    assert needs_classifier(None, None, None, None) is False and needs_classifier("male", None, None, None)
    with pytest.raises(ValueError, match="female, male"):
        filter_faces(faces, attrs, gender="other")


def test_processor_config_names_models_and_licences():
    from facefusion_batch.processors.config import ProcessorConfig

    plan = ProcessorConfig(("face_swapper", "face_enhancer"), SwapperOptions("ghost_2_256"),
                         EnhancerOptions("codeformer"), MaskOptions(("box", "occlusion", "region")), classify=True)
    assert plan.models() == ["ghost_2_256", "crossface_ghost", "xseg_1", "bisenet_resnet_34", "codeformer", "fairface"]
    assert [s.name for s in plan.not_for_commercial_use()] == ["crossface_ghost", "xseg_1", "bisenet_resnet_34",
                                                               "codeformer"]
    with pytest.raises(ValueError, match="unknown processor frame_enhancer; ffb has face_swapper, face_enhancer"):
        ProcessorConfig(("face_swapper", "frame_enhancer"))
    with pytest.raises(ValueError, match="list the processors as face_swapper face_enhancer"):
        ProcessorConfig(("face_enhancer", "face_swapper"))
    with pytest.raises(ValueError, match="unknown face swapper model 'gfpgan_1.4'; ffb has inswapper_128"):
        ProcessorConfig(swapper=SwapperOptions("gfpgan_1.4"))
    with pytest.raises(ValueError, match="unknown face occluder model"):
        ProcessorConfig(masks=MaskOptions(("occlusion",)), occluder="xseg_9")


def test_no_faces_touch_nothing_and_call_no_model(tmp_path):
    swap, enhance, s_session, e_session = _models(tmp_path)
    frame = real_frame()
    out = ProcessorChain(swap, enhance, MaskOptions()).process(frame.copy(), [], swap.source_input(np.ones(512)))
    np.testing.assert_array_equal(out, frame)
    assert swap.swap([], np.ones((1, 512))) == [] and enhance.enhance([]) == []
    assert s_session.calls == 0 and e_session.calls == 0


def test_build_processors_opens_exactly_the_plans_models(tmp_path):
    from facefusion_batch.processors.build import build_processors
    from facefusion_batch.processors.config import ProcessorConfig

    files = {
        "ghost_1_256": standins.build_swapper(tmp_path / "g.onnx", 256, mode="mean", dynamic_batch=True),
        "crossface_ghost": standins.build_converter(tmp_path / "c.onnx", np.eye(512)),
        "xseg_2": standins.build_occluder(tmp_path / "x.onnx", np.ones((256, 256))),
        "gpen_bfr_512": standins.build_enhancer(tmp_path / "e.onnx", 512, dynamic_batch=True),
        "fairface": standins.build_fairface(tmp_path / "f.onnx"),
    }
    opened = []

    def open_session(name):
        opened.append(name)
        return Recorder(files[name])

    plan = ProcessorConfig(("face_swapper", "face_enhancer"), SwapperOptions("ghost_1_256", boost=512),
                         EnhancerOptions("gpen_bfr_512"), MaskOptions(("box", "occlusion")), occluder="xseg_2",
                         classify=True)
    built = build_processors(plan, open_session)
    assert sorted(opened) == sorted(plan.models())
    source = built.swapper.source_input(np.random.default_rng(0).standard_normal(512).astype(np.float32))
    frame = real_frame()
    out = built.chain.process(frame.copy(), [_face(KPS)], source)
    assert (out != frame).any(2).sum() > 5000
    assert built.classifier.classify(frame, [_face(KPS)])[0].gender in ("female", "male")
    with pytest.raises(ValueError, match="read_emap"):
        build_processors(ProcessorConfig(swapper=SwapperOptions("inswapper_128")), open_session)


def test_overlapping_small_faces_each_see_the_others_swap_like_facefusion(tmp_path):
    """Two small faces whose crops overlap: every swap is pasted before any enhancer crop is taken, as after
    FaceFusion's swapper pass over all faces."""
    swap, enhance, _, _ = _models(tmp_path)
    source = swap.source_input(np.random.default_rng(0).standard_normal(512).astype(np.float32))
    masks = MaskOptions(("box",), blur=0.3)
    faces = [_face(KPS), _face(KPS + [60, 10])]
    reference = _two_pastes(real_frame(), faces, swap, enhance, masks, source)
    frame = ProcessorChain(swap, enhance, masks).process(real_frame(), faces, source)
    assert (frame == reference).all()

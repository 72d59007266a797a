"""Face selector order and filters in the Selection, several sources as one identity, and the journal key of
the processor settings."""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from conftest import FACE_BOX, face_frame
from facefusion_batch.cli import main
from facefusion_batch.engines.base import Selection
from facefusion_batch.faces.tracking import Tracker
from facefusion_batch.faces.types import Face
from facefusion_batch.workflow import processor
from facefusion_batch.processors.swapper import average_identity
from facefusion_batch.settings import FIELDS, with_role

# The settings the journal key held by value before the processor settings came (issue 14), as that version
# listed them: a journal of then must still match.
_SHAPING = ("face_swapper_model", "face_detector_model", "face_detector_size", "face_detector_score",
            "face_detector_min_size", "keypoint_reuse", "reuse_motion_threshold", "redetect_interval",
            "face_selector_mode", "reference_face_distance", "output_video_encoder", "output_video_preset",
            "output_video_quality", "output_image_quality", "output_marking", "chunk_size",
            "output_provenance", "visible_label", "visible_label_position", "visible_label_size",
            "visible_label_opacity")

KPS = np.zeros((5, 2), np.float32)


def face(x: float, size: float, score: float = 0.9) -> Face:
    return Face(np.array([x, 10, x + size, 10 + size], np.float32), score, KPS)


FACES = [face(100, 40, 0.5), face(10, 80, 0.7), face(300, 20, 0.95)]


@pytest.mark.parametrize("order, first", [("large-small", 1), ("small-large", 2), ("left-right", 1),
                                          ("right-left", 2), ("best-worst", 2), ("worst-best", 0)])
def test_mode_one_takes_the_first_face_in_facefusion_order(order, first):
    assert Selection("one", order=order).pick(np.zeros((4, 4, 3), np.uint8), list(FACES), None) == [FACES[first]]


def boxes(faces: list[Face]) -> list[tuple]:
    return sorted(tuple(np.round(f.box).astype(int)) for f in faces)


def test_filters_run_before_the_mode_and_on_tracked_faces():
    keep_small = lambda frame, faces: [f for f in faces if f.area < 3000]  # noqa: E731
    selection = Selection("one", keep=keep_small)
    assert selection.pick(np.zeros((4, 4, 3), np.uint8), list(FACES), None) == [FACES[0]]
    assert Selection("many", keep=keep_small).pick(None, list(FACES), None) == [FACES[0], FACES[2]]
    tracker = Tracker(640, 480)
    tracked = tracker.update(0, list(FACES), True)
    assert boxes(selection.pick_tracked(None, tracked, tracker, True, None)) == boxes([FACES[0]])
    assert boxes(Selection("many", keep=keep_small).pick_tracked(None, tracked, tracker, True, None)) == \
        boxes([FACES[0], FACES[2]])


def test_tracked_mode_one_keeps_the_chosen_track_in_another_order():
    tracker = Tracker(640, 480)
    selection = Selection("one", order="left-right")
    tracked = tracker.update(0, list(FACES), True)
    assert boxes(selection.pick_tracked(None, tracked, tracker, True, None)) == boxes([FACES[1]])
    moved = [face(95, 40, 0.5), face(16, 80, 0.7), face(300, 20, 0.95)]
    tracked = tracker.update(1, moved, True)
    chosen = selection.pick_tracked(None, tracked, tracker, True, None)
    assert len(chosen) == 1 and abs(chosen[0].box[2] - chosen[0].box[0] - 80) < 2  # the same (largest) person
    tracked = tracker.update(2, [face(0, 40, 0.5), face(30, 80, 0.7)], True)  # now another face is leftmost
    chosen = selection.pick_tracked(None, tracked, tracker, True, None)
    assert len(chosen) == 1 and abs(chosen[0].box[2] - chosen[0].box[0] - 80) < 2  # kept while it lives


def test_average_identity_is_facefusions_mean_of_raw_and_of_unit_embeddings():
    rng = np.random.default_rng(0)
    raw = rng.standard_normal((3, 512)).astype(np.float32) * np.array([[1], [5], [9]], np.float32)
    mean_raw, mean_unit = average_identity(raw)
    np.testing.assert_allclose(mean_raw, raw.mean(0), rtol=1e-6)
    np.testing.assert_allclose(mean_unit, (raw / np.linalg.norm(raw, axis=1, keepdims=True)).mean(0), rtol=1e-5)


def test_every_output_shaping_processor_setting_is_in_the_journal_key():
    names = [n for n, f in FIELDS.items() if f.metadata["section"] in ("processors", "face_masker")]
    names += [n for n in FIELDS if n.startswith("face_selector_") and n != "face_selector_mode"]
    assert names and set(names) <= set(with_role("output", "output-unless-default"))


def test_processor_settings_at_their_defaults_leave_the_journal_key_as_it_was():
    """An ffb user's journal from before the processor settings still matches: nothing is redone (runs made as
    then: the invisible watermark, off by default then, off)."""
    from types import SimpleNamespace

    from facefusion_batch.settings import load_settings

    engine = SimpleNamespace(name="neural", model_files=())
    marker = SimpleNamespace(key="m")
    settings = load_settings(None, {}, {"output_watermark": False}).settings
    before = processor.settings_key({"version": processor.__version__, "engine": "neural", "models": [],
                                     "source": "s", "reference": None, "provenance": "m",
                                     **{name: getattr(settings, name) for name in _SHAPING},
                                     "reference_face_distance": 0.6})  # ffb's cosine default before FaceFusion's scale
    assert processor.output_key(settings, "s", engine, marker) == before
    enhanced = load_settings(None, {}, {"processors": "face_swapper face_enhancer", "output_watermark": False}).settings
    assert processor.output_key(enhanced, "s", engine, marker) != before


def _neural(env: Path, *args: str) -> list[str]:
    return ["run", "--engine", "neural", "--json", "-q", *args]


def test_several_sources_change_the_identity_and_the_order_does_not(env, capsys, tmp_path):
    """-s a -s b: one averaged identity (the stand-in swapper's colour follows the source latent)."""
    frame = face_frame()
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    cv2.imwrite(str(a), frame)
    cv2.imwrite(str(b), cv2.flip(frame, 1))
    target = tmp_path / "t.png"
    cv2.imwrite(str(target), frame)
    outputs = {}
    for name, sources in (("a", [a]), ("b", [b]), ("ab", [a, b]), ("ba", [b, a])):
        args = [arg for s in sources for arg in ("-s", str(s))]
        assert main(_neural(env, *args, "-t", str(target), "-o", str(tmp_path / name))) == 0, capsys.readouterr().err
        capsys.readouterr()
        outputs[name] = cv2.imread(str(tmp_path / name / "t.png")).astype(np.int16)
    x1, y1, x2, y2 = FACE_BOX.astype(int)

    def face_of(name: str) -> np.ndarray:
        return outputs[name][y1 + 20:y2 - 20, x1 + 20:x2 - 20]

    assert np.abs(face_of("ab") - face_of("ba")).max() <= 1
    assert np.abs(face_of("ab") - face_of("a")).mean() > 2 and np.abs(face_of("ab") - face_of("b")).mean() > 2


def test_gender_filter_swaps_only_the_matching_faces(env, capsys, tmp_path, neural_models):
    """fairface stand-in: female when the face's red mean exceeds its blue mean; one of the two filters
    keeps the face, the other leaves the image as it was (and needs fairface: named when missing)."""
    import shutil

    import standins

    models = tmp_path / "models"
    shutil.copytree(neural_models, models)
    target = tmp_path / "t.png"
    cv2.imwrite(str(target), face_frame())
    code = main(_neural(env, "--models-path", str(models), "--face-selector-gender", "female", "-s", str(target),
                        "-t", str(target), "-o", str(tmp_path / "none")))
    err = capsys.readouterr().err
    assert code == 3 and "fairface.onnx" in err and "ffb models download fairface" in err
    standins.write_facefusion_hash(standins.build_fairface(models / "fairface.onnx"))
    changed = {}
    for gender in ("female", "male"):
        code = main(_neural(env, "--models-path", str(models), "--face-selector-gender", gender, "-s", str(target),
                            "-t", str(target), "-o", str(tmp_path / gender)))
        summary = json.loads(capsys.readouterr().out)
        assert code == 0, summary
        out = tmp_path / gender / "t.png"
        changed[gender] = out.is_file() and not np.array_equal(cv2.imread(str(out)), cv2.imread(str(target)))
    assert sorted(changed.values()) == [False, True]


def test_a_wavering_filter_answer_does_not_switch_a_tracked_face_on_and_off():
    """The classifier answers 'keep' for the face at x=10 always, never for the one at x=300, and alternates
    for the one at x=100: per frame that face would pop in and out; per track the majority holds it."""
    from facefusion_batch.engines.base import FILTER_LOOKS

    calls: list[int] = []
    flip = iter([True, False] * 20)

    def keep(frame, faces):
        calls.append(len(faces))
        wavering = {id(f) for f in faces if 50 < f.box[0] < 200}
        out = [f for f in faces if f.box[0] < 50]
        if wavering and next(flip):
            out += [f for f in faces if id(f) in wavering]
        return out

    tracker, selection = Tracker(640, 480), Selection("many", keep=keep)
    picked = []
    for index in range(12):
        moved = [face(100 + index, 40, 0.5), face(10 + index, 80, 0.7), face(300 - index, 20, 0.95)]
        tracked = tracker.update(index, moved, True)
        chosen = selection.pick_tracked(None, tracked, tracker, True, None)
        picked.append(sorted("always" if f.box[0] < 50 else "wavering" if f.box[0] < 200 else "never"
                             for f in chosen))
    assert picked == [["always", "wavering"]] * 12, picked
    assert sum(calls) == 3 * FILTER_LOOKS, "each track is classified on at most FILTER_LOOKS frames"


def test_a_new_track_is_classified_on_its_first_frame_even_between_detections():
    keep = lambda frame, faces: [f for f in faces if f.area > 3000]  # noqa: E731
    tracker, selection = Tracker(640, 480), Selection("many", keep=keep)
    tracked = tracker.update(0, [face(10, 80)], True)
    assert len(selection.pick_tracked(None, tracked, tracker, False, None)) == 1
    tracked = tracker.update(1, [face(11, 80), face(300, 20)], True)
    chosen = selection.pick_tracked(None, tracked, tracker, False, None)
    assert len(chosen) == 1 and chosen[0].box[0] < 50  # the new small face was asked, and is not kept

"""The quality benchmark's metric definitions, on synthetic frames (no judge needed)."""
import numpy as np
import pytest

from facefusion_batch.bench import quality as q


def frames(value: int, shape=(40, 60, 3)) -> np.ndarray:
    return np.full(shape, value, np.uint8)


def test_strength_and_flicker_inside_box_only():
    inp = frames(100)
    out = inp.copy()
    out[10:20, 10:20] = 120  # a 10x10 change inside a 20x20 box
    box = (5, 5, 25, 25)
    assert q.strength(inp, out, box) == pytest.approx(20 * 100 / 400)
    assert q.strength(inp, out, (40, 0, 60, 10)) == 0.0
    # The output changes by 20 inside the box from one frame to the next, the input by nothing.
    assert q.added_flicker(inp, inp, inp, out, box) == pytest.approx(5.0)
    # Input motion the output merely follows adds no flicker.
    assert q.added_flicker(inp, out, inp, out, box) == pytest.approx(0.0)
    assert np.isnan(q.strength(inp, out, (70, 50, 80, 60)))  # off the frame


def test_track_stats_counts_misses_toggles_and_jumps():
    strengths = [20, 20, 1, 20, 20, 2, 2, 20]
    flickers = [np.nan, 0.5, 3.0, 15.0, 0.2, 1.0, 0.0, 13.0]
    stats = q.track_stats(strengths, flickers, frames=range(10, 18))
    assert stats.missed == 3 and stats.missed_at == [12, 15, 16]
    assert stats.toggles == 2
    assert stats.jumps == 2 and stats.jumps_at == [13, 17]
    # Flicker is measured where the face is swapped now or was just before (frame 16 is neither).
    assert stats.flicker == [0.5, 3.0, 15.0, 0.2, 1.0, 13.0]
    assert stats.longest_miss == 2  # frames 15 and 16
    assert stats.late == 0 and q.track_stats([1, 2, 20, 1], [np.nan] * 4).late == 2
    assert q.track_stats([1, 2], [np.nan] * 2).late == 0  # never swapped: no first swap to be late for
    assert q.track_stats(strengths, flickers, expected=False).missed == 0
    assert q.track_stats(strengths, flickers, expected=False).longest_miss == 0


def test_longest_run_counts_consecutive_frames_only():
    assert q.longest_run([]) == 0
    assert q.longest_run([7]) == 1
    assert q.longest_run([1, 2, 3, 5, 6]) == 3
    assert q.longest_run([1, 3, 5, 6, 7, 8, 20]) == 4  # a gap (the face out of the picture) starts a new run


def test_jitter_takes_the_camera_motion_out_of_added_flicker():
    rng = np.random.default_rng(1)
    texture = rng.integers(0, 256, (60, 80), dtype=np.uint8)
    soft = np.dstack([np.full((60, 80), 128, np.uint8)] * 3)  # the input face: flat
    sharp = np.dstack([texture] * 3)  # the output face: sharp texture
    camera = np.float64([[1, 0, 3], [0, 1, 0]])  # the picture moves 3 px right

    def pan(frame):
        return np.roll(frame, 3, axis=1)

    box = (20, 10, 60, 50)
    # The sharp output moving rigidly with the camera: much added flicker, no added jitter.
    assert q.added_flicker(soft, pan(soft), sharp, pan(sharp), box) > 30
    assert abs(q.added_jitter(soft, pan(soft), sharp, pan(sharp), box, camera)) < 0.5
    # The output changing on the picture (another texture in the next frame): jitter.
    other = np.dstack([rng.integers(0, 256, (60, 80), dtype=np.uint8)] * 3)
    assert q.added_jitter(soft, pan(soft), sharp, pan(other), box, camera) > 30
    strengths, flickers, jitters = [20, 20, 20], [np.nan, 1.0, 2.0], [np.nan, 0.5, np.nan]
    assert q.track_stats(strengths, flickers, jitters=jitters).jitter == [0.5]


def test_toggles():
    assert q.toggles([False, True, True, False]) == 0
    assert q.toggles([True, False, True, False, False, True]) == 2
    assert q.toggles([]) == 0


def test_switches_reset_at_shot_cuts_and_ignore_gaps():
    chosen = [1, 1, None, 1, 2, 2, 3, 3]
    shots = [0, 0, 0, 0, 0, 0, 1, 1]
    assert q.switches(chosen, shots) == [4]  # the cut to shot 1 is not a switch
    assert q.switches([1, None, 2], [0, 0, 0]) == [2]
    # With presence: taking face 2 after face 1 left the picture is no switch; while 1 is there it is.
    present = [{1, 2}, {1, 2}, {2}, {1, 2}, {1, 2}]
    assert q.switches([1, 1, 2, 2, 1], [0] * 5, present) == [4]
    assert q.switches([1, 1, 2, 2, 1], [0] * 5) == [2, 4]


def test_chosen_track():
    assert q.chosen_track({1: 3.0, 2: 9.0}) == 2
    assert q.chosen_track({1: 3.0}) is None
    assert q.chosen_track({}) is None


def test_nobody_swapped_counts_frames_without_the_sources_person_where_nothing_was_swapped():
    boxes = [{}, {"a": (0, 0, 50, 50)}, {"a": (0, 0, 50, 50), "b": (60, 0, 90, 30)}, {"b": (60, 0, 90, 30)},
             {"b": (60, 0, 90, 30), "c": (0, 0, 70, 70)}, {"b": (60, 0, 90, 30)}]
    people = {"a": "source-person", "b": "other", "c": "third"}
    # Frames 1-2 show the source's own person, whom `one` may have chosen (swapped with itself: no visible change);
    # frame 5 was swapped.
    chosen = [None, None, None, None, None, "b"]
    assert q.nobody_swapped(chosen, boxes, people, "source-person") == [(3, "b"), (4, "c")]
    assert q.nobody_swapped(chosen, boxes, people, "nobody") == [(1, "a"), (2, "a"), (3, "b"), (4, "c")]


def test_background_excludes_grown_boxes():
    inp = frames(50, (100, 100, 3))
    out = inp.copy()
    out[40:60, 40:60] = 250  # only the face changed
    assert q.background_diff(inp, out, [(40, 40, 60, 60)]) == 0.0
    out[50, 37] = 60  # just outside the box, inside its grown swap region
    assert q.background_diff(inp, out, [(40, 40, 60, 60)]) == 0.0
    assert q.background_diff(inp, out, [(40, 40, 60, 60)], grow=0.0) > 0.0
    out[0, 0] = 60
    assert q.background_diff(inp, out, [(40, 40, 60, 60)]) > 0.0


def test_identity_summary_shares():
    # the last face is not found again in the input either (the judge's floor: a small face's view)
    verdicts = [q.Identity(0.4, 0.7, True), q.Identity(0.65, 0.5, True), q.Identity(0.5, 0.6, False),
                q.Identity(0.7, 0.8, True, found_in=False)]
    summary = q.identity_summary(verdicts)
    assert summary["faces"] == 4
    assert summary["accepted"] == pytest.approx(0.5)
    assert summary["closer"] == pytest.approx(0.75)
    assert summary["found"] == pytest.approx(0.75)
    assert summary["found_floor"] == pytest.approx(0.75)
    assert np.isnan(q.identity_summary([])["accepted"]) and np.isnan(q.identity_summary([])["found_floor"])


def test_iou_and_flicker_summary():
    assert q.iou((0, 0, 10, 10), (0, 0, 10, 10)) == 1.0
    assert q.iou((0, 0, 10, 10), (5, 0, 15, 10)) == pytest.approx(1 / 3)
    assert q.iou((0, 0, 1, 1), (2, 2, 3, 3)) == 0.0
    mean, p95 = q.flicker_summary([0.0] * 19 + [10.0])
    assert mean == pytest.approx(0.5) and p95 == pytest.approx(0.5)


def test_yaw_from_five_points():
    # Two corners per eye then the nose base: nose on the midline is frontal, off it is turned.
    frontal = np.array([[70, 50], [60, 50], [30, 50], [40, 50], [50, 70]], float)
    assert q.yaw_from_five(frontal) == pytest.approx(0.0)
    turned = frontal.copy()
    turned[4, 0] = 35  # under one eye's centre (the eye centres are at 65 and 35)
    assert abs(q.yaw_from_five(turned)) == pytest.approx(90.0)
    turned[4, 0] = 50 - 7.5
    assert abs(q.yaw_from_five(turned)) == pytest.approx(30.0)


def test_visible_share_and_face_classes():
    size = (100, 50)
    assert q.visible_share((10, 10, 30, 30), size) == 1.0
    assert q.visible_share((-10, 10, 10, 30), size) == pytest.approx(0.5)  # half off the left edge
    assert q.visible_share((90, 40, 110, 60), size) == pytest.approx(0.25)  # a corner
    assert q.visible_share((200, 10, 220, 30), size) == 0.0
    assert q.visible_share((10, 10, 10, 30), size) == 0.0  # no area
    assert q.face_classes((10, 5, 60, 45), size, 0.0) == ("clear",)
    assert q.face_classes((10, 5, 50, 45), size, 0.0) == ("small",)  # 40 px wide is small
    assert q.face_classes((-5, 5, 45, 45), size, -35.0) == ("edge", "turned")
    assert q.face_classes((10, 5, 60, 45), size, 29.9) == ("clear",)


def test_faint_is_a_touched_miss():
    assert q.is_faint(2.6, 1.4)  # changed 1.2 beyond what the encoder changes, but under the swap threshold
    assert not q.is_faint(1.9, 1.4)  # the encoder's own change
    assert not q.is_faint(5.0, 1.4)  # swapped
    assert q.is_faint(4.9, 0.0)


def test_chroma_loss_measures_a_greyer_face():
    colour = np.zeros((20, 20, 3), np.uint8)
    colour[:] = (60, 110, 200)  # a warm skin-like BGR
    grey = np.full_like(colour, 120)
    box = (0, 0, 20, 20)
    assert q.chroma(grey, box) == pytest.approx(0.0, abs=1.0)
    assert q.chroma_loss(colour, grey, box) > 20
    assert q.chroma_loss(colour, colour, box) == 0.0
    assert np.isnan(q.chroma(colour, (30, 30, 40, 40)))


def test_class_misses_and_lowest_share():
    records = [(("edge",), True), (("edge", "small"), False), (("clear",), False), (("turned",), True)]
    result = q.class_misses(records)
    assert result["edge"] == {"frames": 2, "missed": 1, "share": 0.5}
    assert result["small"]["missed"] == 0 and result["small"]["frames"] == 1
    assert result["turned"]["share"] == 1.0
    assert np.isnan(q.class_misses([])["clear"]["share"])
    groups = {"a": [q.Identity(0.4, 0.7, True)] * 3, "b": [q.Identity(0.4, 0.7, True), q.Identity(0.7, 0.5, True)],
              "c": []}
    assert q.lowest_share(groups) == ("b", 0.5)
    name, share = q.lowest_share({})
    assert name is None and np.isnan(share)


def test_phantoms_are_changed_patches_outside_the_faces():
    rng = np.random.default_rng(3)
    inp = rng.integers(90, 110, (120, 200, 3), dtype=np.uint8)
    out = np.clip(inp.astype(np.int16) + rng.integers(-3, 4, inp.shape), 0, 255).astype(np.uint8)  # encoder noise
    face = (20, 20, 60, 60)
    assert q.phantoms(inp, out, [face]) == 0
    out[30:50, 30:50] = 250  # the real face swapped: not a phantom
    assert q.phantoms(inp, out, [face]) == 0
    out[40:70, 120:150] = 200  # a face pasted on the wall
    assert q.phantoms(inp, out, [face]) == 1
    out[100:104, 10:14] = 200  # a speck is no face
    assert q.phantoms(inp, out, [face]) == 1
    assert q.phantoms(inp, out, [face, (115, 35, 155, 75)]) == 0  # that patch was a known face after all

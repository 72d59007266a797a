"""Whether a face is swapped is decided per face track, not per frame (offline engine, real faces, frames in
order as a video's are): a face hovering at the "turned too far" or the "too faint to see" threshold is left
or swapped for stretches, never switched between the source and itself from frame to frame, and every
face-frame left is counted for the summary."""
from __future__ import annotations

import dataclasses
from typing import Callable

import cv2
import numpy as np
import pytest
from skimage import data

from conftest import faint_when_toned, hopper_processor, run_video
from facefusion_batch.engines import offline
from facefusion_batch.offline import classic
from facefusion_batch.workflow.analysis import thumbnail
from facefusion_batch.workflow.processor import FrameProcessor

SIZE = (320, 240)
FRAMES = 30


@pytest.fixture(scope="module")
def processor(tmp_path_factory) -> FrameProcessor:
    with hopper_processor(tmp_path_factory.mktemp("decisions"), output_watermark=False) as made:
        yield made


def _clip(left: int = 70, speed: int = 1) -> list[np.ndarray]:
    """The astronaut's face (~110 px) drifting `speed` pixels a frame, with sensor noise: its fits, and so its turn
    and its swap's visible change, vary a little from frame to frame, as a real video's do. `left`: where the
    photo's left edge starts (negative: cut by the frame's left edge)."""
    photo = np.ascontiguousarray(data.astronaut()[:, :, ::-1])
    face = cv2.resize(photo[0:260, 90:330], (160, 173), interpolation=cv2.INTER_AREA)
    rng = np.random.default_rng(5)
    frames = []
    for index in range(FRAMES):
        canvas = np.full((SIZE[1], SIZE[0], 3), 90, np.uint8)
        x, y = left + speed * index, 30 + index // 2
        canvas[y:y + face.shape[0], max(x, 0):x + face.shape[1]] = face[:, max(-x, 0):]
        noisy = canvas.astype(np.float32) + rng.normal(0, 2.0, canvas.shape)
        frames.append(np.clip(noisy, 0, 255).astype(np.uint8))
    return frames


def _run(processor: FrameProcessor, frames: list[np.ndarray], at_frame: Callable[[int], None] | None = None
         ) -> list[bool]:
    """Whether each frame's face was swapped (any pixel changed: left faces are left exactly as they are).
    `at_frame(index)` is called before each frame is processed."""
    gate = processor.new_gate()
    swapped = []
    for index, frame in enumerate(frames):
        if at_frame is not None:
            at_frame(index)
        reference, is_new = gate.reference_for(index, thumbnail(frame), frame.shape[1])
        out = processor(frame.copy(), reference, is_new, index)[0]
        swapped.append(bool((out != frame).any()))
    return swapped


def _switches(states: list[bool]) -> int:
    return sum(a != b for a, b in zip(states, states[1:]))


def _recorded(monkeypatch, module, name: str) -> list[float]:
    """Every value `module.name` returns during the run, for choosing a threshold the values straddle."""
    values: list[float] = []
    original = getattr(module, name)

    def record(*args, **kwargs):
        values.append(original(*args, **kwargs))
        return values[-1]

    monkeypatch.setattr(module, name, record)
    return values


def _hovering(values: list[float]) -> float:
    """A threshold that a per-frame decision on `values` would cross back and forth the most."""
    candidates = sorted(values)
    return max(candidates, key=lambda t: _switches([v > t for v in values]))


def test_a_face_whose_swap_hovers_at_the_faint_threshold_is_not_toggled(processor, monkeypatch):
    frames = _clip()
    with monkeypatch.context() as patch:
        changes = _recorded(patch, classic, "visible_change")
        patch.setattr(offline, "FAINT", 0.0)
        assert all(_run(processor, frames)), "the face is found and swapped on every frame"
    threshold = _hovering(changes)
    assert _switches([c >= threshold for c in changes]) >= 4, "premise: per frame, the swap would toggle"
    monkeypatch.setattr(offline, "FAINT", threshold)
    left_before = processor.engine.profiles_left.value
    swapped = _run(processor, frames)
    assert _switches(swapped) <= 1, swapped
    assert processor.engine.profiles_left.value - left_before == swapped.count(False), "every left face-frame counted"


def test_a_face_hovering_at_the_profile_threshold_is_not_toggled(processor, monkeypatch):
    frames = _clip()
    with monkeypatch.context() as patch:
        turns = _recorded(patch, classic, "turn")
        assert all(_run(processor, frames))
    turns = [abs(t) for t in turns]
    threshold = _hovering(turns)
    assert _switches([t > threshold for t in turns]) >= 4, "premise: per frame, the face would toggle"
    monkeypatch.setattr(classic, "PROFILE", threshold)
    left_before = processor.engine.profiles_left.value
    swapped = _run(processor, frames)
    assert _switches(swapped) <= 1, swapped
    assert processor.engine.profiles_left.value - left_before == swapped.count(False)


def test_a_track_turning_away_for_good_is_left_from_then_on(processor, monkeypatch):
    # The same clip judged with a profile threshold the face passes half-way (its turn scaled up from there):
    # swapped until then, left after, with a single switch.
    frames = _clip()
    original = classic.turn
    calls = []

    def turning(points):  # called once per tracked face-frame, in frame order (the track's turn)
        calls.append(None)
        return original(points) + (5.0 if len(calls) > FRAMES // 2 else 0.0)

    monkeypatch.setattr(classic, "turn", turning)
    swapped = _run(processor, frames)
    assert swapped[:FRAMES // 3] == [True] * (FRAMES // 3) and not any(swapped[-FRAMES // 3:]), swapped
    assert _switches(swapped) == 1


def test_a_face_too_faint_while_coming_in_across_the_edge_is_checked_again_till_it_is_in(processor, monkeypatch):
    # Coming in from the left, the face's swap is too faint to see while the edge cuts it (little of it in the
    # picture) and plain once it is in: swapped from the first frame it is wholly in, not RECHECK frames after its
    # first (it was left for as long as it came in).
    frames = _clip(left=-90, speed=6)
    original = classic.visible_change
    state = {"frame": 0, "in": []}

    def visible(before, after, landmarks):
        if (landmarks[:, 0] < 0).any():
            return 1.0
        state["in"].append(state["frame"])
        return original(before, after, landmarks)

    monkeypatch.setattr(classic, "visible_change", visible)
    with monkeypatch.context() as patch:
        patch.setattr(offline, "RECHECK", 1)  # every frame measured: the first frame the face is wholly in
        _run(processor, frames, lambda index: state.update(frame=index))
    first_in = state["in"][0]
    swapped = _run(processor, frames, lambda index: state.update(frame=index))
    assert 2 <= first_in < offline.RECHECK - 2, "premise: the edge cuts the face for a few frames"
    assert swapped == [False] * first_in + [True] * (FRAMES - first_in), swapped


def test_a_face_found_faint_while_cut_is_swapped_once_in_as_a_new_face_would_be(processor, monkeypatch):
    # As above, with a swap that, the face wholly in, changes it by between FAINT * (1 + FAINT_BACK), what a new
    # track's first check asks, and FAINT * (1 + 2 * FAINT_BACK), what a track left as too faint after being swapped
    # asks: never swapped yet, it is swapped from the first frame it is in (it was left 10 frames more: tune split's
    # crowd pan, a turned man coming in at the top edge, a greyscale source).
    frames = _clip(left=-90, speed=6)
    original = classic.visible_change
    state = {"frame": 0, "in": {}}

    def visible(before, after, landmarks):
        if (landmarks[:, 0] < 0).any():
            return 1.0
        state["in"][state["frame"]] = original(before, after, landmarks)
        return state["in"][state["frame"]]

    monkeypatch.setattr(classic, "visible_change", visible)
    with monkeypatch.context() as patch:
        patch.setattr(offline, "RECHECK", 1)
        patch.setattr(offline, "FAINT", 0.0)
        _run(processor, frames, lambda index: state.update(frame=index))
    first_in = min(state["in"])
    faint = 0.999 * min(state["in"].values()) / (1 + offline.FAINT_BACK)  # every check shows to a new face's bar
    assert state["in"][first_in] < faint * (1 + 2 * offline.FAINT_BACK), "premise: and not to a faint one's"
    monkeypatch.setattr(offline, "FAINT", faint)
    swapped = _run(processor, frames, lambda index: state.update(frame=index))
    assert swapped == [False] * first_in + [True] * (FRAMES - first_in), swapped


def test_a_tracks_faint_check_is_the_frames_swap_not_a_second_one(processor, monkeypatch):
    # Every RECHECK frames a track measures its swap's visible change (`settle`); the frame's swap then reuses
    # that swap instead of making it again: one swap per face-frame, and the same pixels as a swap made anew.
    frames = _clip()
    calls = []
    swap_face = classic.swap_face
    monkeypatch.setattr(classic, "swap_face", lambda *a, **k: calls.append(1) or swap_face(*a, **k))
    reused = run_video(processor, frames)
    assert len(calls) == FRAMES and all((out != frame).any() for out, frame in zip(reused, frames))
    settle = processor.engine.settle
    monkeypatch.setattr(processor.engine, "settle", lambda *a: [dataclasses.replace(face, swapped=None)
                                                               for face in settle(*a)])
    calls.clear()
    anew = run_video(processor, frames)
    assert len(calls) > FRAMES, "premise: the checks made swaps of their own"
    assert all((a == b).all() for a, b in zip(reused, anew))


def test_a_swap_turning_faint_mid_track_is_left_not_output_faintly(processor, monkeypatch):
    """A face is swapped visibly or not at all: when a track's swap turns fainter between its checks (the face
    turning away, or shrinking), no frame is output changed by less than FAINT; those frames are left as they
    are and counted. (The band below FAINT once let swaps of 0.9-1 FAINT through: touched, not seen.)"""
    frames = _clip()
    with monkeypatch.context() as patch:
        changes = _recorded(patch, classic, "visible_change")
        patch.setattr(offline, "FAINT", 0.0)
        _run(processor, frames)
    first = changes[0]
    original = classic.visible_change
    fainter = FRAMES // 2 + 3  # not a check frame (those are every RECHECK frames from the first)
    state = {"frame": 0, "measured": {}}

    def measured(before, after, landmarks):  # from frame `fainter` on, the swap changes the face 15 % less
        value = original(before, after, landmarks) * (0.85 if state["frame"] >= fainter else 1.0)
        state["measured"][state["frame"]] = value  # the last measure of a frame is its swap's own
        return value

    monkeypatch.setattr(classic, "visible_change", measured)
    monkeypatch.setattr(offline, "FAINT", 0.98 * first / (1 + offline.FAINT_BACK))  # swapped from the start
    left_before = processor.engine.profiles_left.value
    swapped = _run(processor, frames, lambda index: state.update(frame=index))
    for index, shown in enumerate(swapped):
        if shown:
            assert state["measured"][index] >= offline.FAINT, f"frame {index} output changed faintly"
    assert swapped[:fainter] == [True] * fainter and not any(swapped[fainter:]), swapped
    assert processor.engine.profiles_left.value - left_before == swapped.count(False)


def test_a_turned_track_the_mesh_was_once_unsure_of_is_left_from_then_on(processor, monkeypatch):
    """Faces turned past SURE_PROFILE (up to classic.PROFILE) are swapped while the mesh is sure of them; a track
    found once with a score under _PRESENCE there (a refit's presence: sixth's woman in red, ~70 degrees, whom the
    mesh lost and found from frame to frame) is left for the rest of the track, not swapped on and off."""
    frames = _clip()
    turned = (offline.SURE_PROFILE + classic.PROFILE) / 2
    monkeypatch.setattr(classic, "turn", lambda points: turned)
    assert all(_run(processor, frames)), "premise: a turned face the mesh is sure of is swapped"
    settle = processor.engine.settle

    def unsure_once(frame, faces, source, index):
        if index == FRAMES // 3:
            faces = [dataclasses.replace(face, score=0.3) for face in faces]
        return settle(frame, faces, source, index)

    monkeypatch.setattr(processor.engine, "settle", unsure_once)
    swapped = _run(processor, frames)
    assert swapped == [True] * (FRAMES // 3) + [False] * (FRAMES - FRAMES // 3), swapped


def _run_turned(processor: FrameProcessor, frames: list[np.ndarray], turns: list[float], monkeypatch) -> list[bool]:
    """`_run` with the mesh's turn of frame i's face set to turns[i]."""
    state = {"frame": 0}
    monkeypatch.setattr(classic, "turn", lambda points: turns[state["frame"]])
    return _run(processor, frames, lambda index: state.update(frame=index))


def test_a_turned_track_whose_turn_the_mesh_cannot_hold_is_left_from_then_on(processor, monkeypatch):
    """A turned face fitted at turns far apart on alternate frames (held-out's screaming man in near profile) is
    left once that shows, for the rest of the track; a face turned as far, held steadily, or turning round in a
    second, is swapped throughout."""
    frames = _clip()
    steady = [offline.UNSTEADY_TURN + 0.2] * FRAMES
    assert all(_run_turned(processor, frames, steady, monkeypatch)), "premise: a steady turned face is swapped"
    turning = [2.0 * index / FRAMES for index in range(FRAMES)]  # 0 to 2 (~70 degrees) in a second
    assert all(_run_turned(processor, frames, turning, monkeypatch))
    start = FRAMES // 3
    wobbling = steady[:start] + [offline.UNSTEADY_TURN + (0.8 if index % 2 else 0.2) for index in range(start, FRAMES)]
    swapped = _run_turned(processor, frames, wobbling, monkeypatch)
    assert all(swapped[:start + 1]) and not any(swapped[start + 3:]), swapped
    assert _switches(swapped) == 1
    # A face the frame's edge cuts is fitted at a turn that is a guess (its mesh is extrapolated there): that
    # turn wobbling is no sign of a face the mesh cannot hold (twelfth's 190 px face coming in at the left edge).
    cut = _clip(left=-100)
    assert all(_run_turned(processor, cut, steady, monkeypatch)), "premise: the cut face is swapped"
    assert all(_run_turned(processor, cut, wobbling, monkeypatch))


def test_a_track_too_faint_to_see_toned_is_swapped_as_deep_as_it_needs_to_show(processor, monkeypatch):
    """A small, dim face's swap with the source's detail toned to its light can be too faint to see; that track is
    swapped with the source's detail deeper, as deep as it needs to show and no deeper (the source's own depth on a
    dim face painted its features on, black eye sockets, and they flickered as it moved), on every frame (not left,
    not switched between depths), and only when toned it would not show."""
    frames = _clip()
    swap_face = classic.swap_face
    depths: list[float] = []
    monkeypatch.setattr(classic, "swap_face", faint_when_toned(depths))
    left_before = processor.engine.profiles_left.value
    swapped = _run(processor, frames)
    assert all(swapped) and processor.engine.profiles_left.value == left_before, swapped
    assert depths[:2] == [0.0, 1.0], "the toned swap is measured first, then one at the source's own depth"
    chosen = depths[2]
    assert 0 < chosen < 1, "between them, the least depth that shows"
    assert set(depths[2:]) == {chosen}, "from then on the track is swapped at that depth"
    # A track whose toned swap shows keeps it.
    monkeypatch.setattr(classic, "swap_face",
                        lambda *a, **k: depths.append(k.get("own_depth", 0.0)) or swap_face(*a, **k))
    depths.clear()
    assert all(_run(processor, frames)) and not any(depths)

"""Keypoint reuse: the motion gate, translation tracking, and detector calls saved end to end."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor, TimeoutError

import cv2
import numpy as np
import pytest

from conftest import cpu_session, face_frame, make_clip
from facefusion_batch.cli import main
from facefusion_batch.faces.types import Face
from facefusion_batch.workflow.analysis import SWEEP, SWEEP_FULL, SWEEP_MOVING, MotionGate, motion, thumbnail
from facefusion_batch.workflow.patches import face_patches, track


def shifted(frame: np.ndarray, dx: float, dy: float) -> np.ndarray:
    matrix = np.array([[1, 0, dx], [0, 1, dy]], np.float32)
    return cv2.warpAffine(frame, matrix, (frame.shape[1], frame.shape[0]), borderMode=cv2.BORDER_REFLECT)


FACE = Face(np.array([180, 60, 300, 210], np.float32), 0.9,
            np.array([[212, 120], [268, 120], [240, 150], [218, 180], [262, 180]], np.float32))


def is_new(gate: MotionGate, index: int, frame: np.ndarray) -> bool:
    """Plan a frame; a new reference is "detected" at once, as a worker would."""
    reference, is_new = gate.reference_for(index, thumbnail(frame), frame.shape[1])
    if is_new:
        reference.result.set_result(([FACE], []))
    return is_new


def test_gate_reuses_on_static_frames_and_redetects_on_interval():
    gate = MotionGate(True, threshold=4.0, interval=5)
    assert [is_new(gate, i, face_frame()) for i in range(20)] == [i % 5 == 0 for i in range(20)]
    assert gate.references == 4


def test_gate_redetects_on_motion_and_scene_cut():
    gate = MotionGate(True, threshold=4.0, interval=100)
    frame = face_frame()
    assert is_new(gate, 0, frame)
    assert not is_new(gate, 1, shifted(frame, 0.3, 0)), "sub-pixel drift reuses"
    assert is_new(gate, 2, shifted(frame, 12, 0)), "a real move redetects"
    assert is_new(gate, 3, 255 - frame), "a scene cut redetects"


def test_gate_looks_around_the_previous_references_faces():
    gate = MotionGate(True, threshold=4.0, interval=100)
    frame = face_frame()
    is_new(gate, 0, frame)
    is_new(gate, 1, shifted(frame, 12, 0))  # new reference; from now on motion is measured around FACE
    far = shifted(frame, 12, 0)
    far[:, :120] = 255 - far[:, :120]
    assert not is_new(gate, 2, far), "change far from the faces is ignored"


def test_in_a_pan_the_sweep_for_small_faces_runs_every_sweep_moving_frames_and_on_the_reference_after_it():
    # Every frame a reference (a pan, or reuse off): the sweep's frame and the next (a face it found starts a
    # track the next frame must confirm). The whole picture changes: every SWEEP_MOVING frames, not SWEEP. With
    # reuse on: the first reference at least SWEEP_MOVING frames on.
    assert SWEEP_MOVING < SWEEP
    gate = MotionGate(False, 4.0, 12)
    swept = [i for i in range(3 * SWEEP) if plan_reference(gate, i, along_a_wall(i)).sweep]
    assert swept == [i + k for i in range(0, 3 * SWEEP, SWEEP_MOVING) for k in (0, 1)]
    gate = MotionGate(True, threshold=4.0, interval=5)
    references = {r.index: r for r in (plan_reference(gate, i, along_a_wall(i // 5 * 5)) for i in range(3 * SWEEP))}
    swept = [index for index, r in references.items() if r.sweep]
    firsts, at = [], 0
    while at < 3 * SWEEP:
        firsts.append(at)
        at = -(-(at + SWEEP_MOVING) // 5) * 5  # the first reference (every 5th frame) SWEEP_MOVING frames on
    assert swept == firsts


def along_a_wall(index: int) -> np.ndarray:
    """A pan of 6 px a frame along a busy wall (bricks, posters): the picture changes everywhere."""
    rng = np.random.default_rng(4)
    wall = cv2.resize(rng.integers(0, 256, (12, 160, 3), dtype=np.uint8), (2400, 180), interpolation=cv2.INTER_NEAREST)
    x = 6 * index
    return np.ascontiguousarray(wall[:, x:x + 320])


def test_in_a_still_shot_the_sweep_looks_only_where_the_picture_changed_and_everywhere_every_sweep_full():
    gate = MotionGate(False, 4.0, 12)
    still = face_frame()
    sweeps = {i: plan_reference(gate, i, still).sweep for i in range(2 * SWEEP_FULL + 2)}
    swept = {i: s for i, s in sweeps.items() if s is not None}
    assert sorted(swept) == [0, 1, SWEEP_FULL, SWEEP_FULL + 1, 2 * SWEEP_FULL, 2 * SWEEP_FULL + 1]
    assert all(s.changed is None for s in swept.values()), "those look everywhere"
    gate = MotionGate(False, 4.0, 12)
    plan_reference(gate, 0, still)
    walked_in = still.copy()
    walked_in[20:60, 20:60] = 255 - walked_in[20:60, 20:60]  # something appears in the top-left corner
    sweeps = [plan_reference(gate, i, walked_in).sweep for i in range(1, SWEEP + 2)]
    assert [i + 1 for i, s in enumerate(sweeps) if s is not None] == [1, SWEEP, SWEEP + 1]
    changed = sweeps[SWEEP - 1].changed
    assert changed is not None and sweeps[SWEEP] is sweeps[SWEEP - 1], "the next reference confirms, alike"
    rows, cols = np.nonzero(changed)
    scale = changed.shape[1] / still.shape[1]
    assert rows.min() >= 0 and rows.max() <= 62 * scale + 1 and cols.max() <= 62 * scale + 1


def plan_reference(gate: MotionGate, index: int, frame: np.ndarray | None = None):
    frame = face_frame() if frame is None else frame
    reference, new = gate.reference_for(index, thumbnail(frame), frame.shape[1])
    if new:
        reference.result.set_result(([FACE], []))
    return reference


def test_gate_disabled_detects_every_frame():
    gate = MotionGate(False, 4.0, 12)
    assert all(is_new(gate, i, face_frame()) for i in range(5))


@pytest.mark.parametrize("enabled", [True, False])
def test_planning_a_new_reference_does_not_wait_for_the_one_before(enabled):
    """Detections of consecutive references may run side by side: only measuring motion around the faces of
    the reference before the current one waits for them (and never when reuse is off)."""
    gate = MotionGate(enabled, threshold=4.0, interval=2)
    frame, thumb = face_frame(), thumbnail(face_frame())
    first, is_new = gate.reference_for(0, thumb, frame.shape[1])  # its detection never finishes in this test
    assert is_new
    gate.reference_for(1, thumb, frame.shape[1])  # motion around "everywhere": nothing to wait for
    pool = ThreadPoolExecutor(1)  # the interval makes frame 2 a new reference, without waiting
    try:
        second, is_new = pool.submit(gate.reference_for, 2, thumb, frame.shape[1]).result(timeout=120)
    except TimeoutError:
        first.result.set_result(([FACE], []))  # let the stuck planner go before failing
        raise
    finally:
        pool.shutdown(wait=False)
    assert is_new and second is not first and not first.result.done()
    if enabled:
        first.result.set_result(([FACE], []))  # frame 3 measures motion around `first`'s faces
        assert gate.reference_for(3, thumb, frame.shape[1]) == (second, False)
    else:
        assert gate.reference_for(3, thumb, frame.shape[1])[1]


def test_motion_is_measured_around_the_faces():
    frame = face_frame()
    moved = frame.copy()
    moved[:, :120] = 255 - moved[:, :120]  # far from the face
    boxes = np.array([[180, 60, 300, 210]], np.float32)
    assert motion(thumbnail(moved), thumbnail(frame), boxes, 480) < 1.0
    assert motion(thumbnail(moved), thumbnail(frame), None, 480) > 2.0


def test_track_follows_a_translation():
    frame = face_frame()
    face = Face(FACE.box, 0.9, FACE.kps, landmarks=np.zeros((468, 3), np.float32) + 200)
    patches = face_patches(frame, [face])
    moved = track([face], patches, shifted(frame, 3.0, -2.0))
    assert moved is not None
    np.testing.assert_allclose(moved[0].kps - face.kps, [[3.0, -2.0]] * 5, atol=0.3)
    np.testing.assert_allclose(moved[0].landmarks[0, :2], [203.0, 198.0], atol=0.3)
    assert track([face], patches, np.full_like(frame, 90)) is None


def test_tracked_keypoints_stay_within_2px_of_detection_on_real_faces():
    from facefusion_batch.offline.mediapipe import MODEL_FILES, MediaPipeDetector, MediaPipeLandmarker, asset_path, \
        five_points

    sessions = {role: cpu_session(asset_path(name)) for role, name in MODEL_FILES.items()}
    detector = MediaPipeDetector(sessions["long_range"], sessions["short_range"])
    landmarker = MediaPipeLandmarker(sessions["landmarks"])

    def detect(frame):
        detections = detector.detect([frame])[0]
        points = landmarker.landmarks(frame, detections)
        return [Face(d.box, d.score, five_points(points)[i]) for i, d in enumerate(detections)]

    base = face_frame()
    reference = detect(base)
    patches = face_patches(base, reference)
    for k in range(1, 6):
        frame = shifted(base, 0.6 * k, 0.3 * k)
        tracked = track(reference, patches, frame)
        detected = detect(frame)
        assert tracked is not None and len(detected) == 1
        assert np.linalg.norm(tracked[0].kps - detected[0].kps, axis=1).max() < 2.0


@pytest.mark.parametrize("reuse, limit", [("true", 0.35), ("false", 1.0)])
def test_detector_calls_per_frame_on_a_static_clip(tmp_path, neural_models, source_image, capsys, monkeypatch,
                                                   reuse, limit):
    monkeypatch.setenv("FFB_MODELS_PATH", str(neural_models))
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    monkeypatch.setenv("FFB_KEYPOINT_REUSE", reuse)
    clip = make_clip(tmp_path / "static.mp4", frames=36)
    assert main(["run", "--engine", "neural", "-s", str(source_image), "-t", str(clip), "-o", str(tmp_path / "o"),
                 "--json", "-q"]) == 0
    outcome = json.loads(capsys.readouterr().out)["outcomes"][0]
    per_frame = outcome["detector_calls"] / outcome["frames"]
    assert per_frame <= limit
    if reuse == "false":
        assert per_frame == 1.0


def test_tracking_is_deterministic_and_leaves_the_reference_untouched():
    frame = face_frame()
    patches = face_patches(frame, [FACE])
    kept = patches[0].grey.copy()
    after = shifted(frame, 1.3, 0.7)
    results = {tuple(track([FACE], patches, after)[0].kps.ravel()) for _ in range(5)}
    assert len(results) == 1
    assert np.array_equal(patches[0].grey, kept)


def test_a_frame_waiting_for_a_turn_that_never_comes_gives_up_when_the_video_stops():
    """A failed reference frame that never took its turn must not hang the frames after it (the pool's
    shutdown would wait on them for ever)."""
    import threading
    from concurrent.futures import CancelledError

    from facefusion_batch.workflow.analysis import TrackState

    tracks = TrackState()
    tracks.begin(0)
    with tracks.turn(0, (8, 8, 3)):
        pass
    outcome: list = []

    def later_frame() -> None:
        try:
            with tracks.turn(2, (8, 8, 3)):  # frame 1 never takes its turn
                outcome.append("ran")
        except CancelledError:
            outcome.append("gave up")

    waiter = threading.Thread(target=later_frame)
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and outcome == [], "frame 2 must wait for frame 1"
    tracks.abandon()
    waiter.join(60)
    assert outcome == ["gave up"]
    tracks.skip(3)  # a failing frame after the stop does not wait either

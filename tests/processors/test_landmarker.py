"""The 68-point face landmarker (processors/landmarker.py): FaceFusion's crop geometry, the dark-crop CLAHE,
the inverse to frame pixels on a real face (upright and turned), the 68-from-5 estimate, the score fallback
and `many`'s choice, with stand-ins whose points follow a colour marker in the crop they are fed."""
from __future__ import annotations

import os

import cv2
import numpy as np
import pytest

import standins
from processor_helpers import Recorder, real_frame
from facefusion_batch.faces.geometry import WARP_TEMPLATES, similarity_transform, transform_points
from facefusion_batch.faces.types import Face
from facefusion_batch.processors.landmarker import (Estimator68From5, FaceLandmarker, Fan2dLandmarker,
                                                    LandmarkerOptions, PeppaWutzLandmarker, crop_matrix,
                                                    face_angle, five_from_68, landmarker_crop, landmarker_models,
                                                    optimize_contrast, rotation)

BLUE, RED = (255, 0, 0), (0, 0, 255)  # BGR: the 2dfan4 stand-in follows blue, peppa_wutz's red


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    directory = tmp_path_factory.mktemp("landmarkers")
    return {"2dfan4": standins.build_2dfan4(directory / "2dfan4.onnx"),
            "2dfan4_unsure": standins.build_2dfan4(directory / "2dfan4_unsure.onnx", gain=0.2),
            "peppa_wutz": standins.build_peppa_wutz(directory / "peppa_wutz.onnx"),
            "fan_68_5": standins.build_fan_68_5(directory / "fan_68_5.onnx")}


@pytest.fixture(scope="module")
def real_face():
    """The astronaut's real face in a textured frame, with the box and 5 points MediaPipe finds on it."""
    from facefusion_batch.engines import build_engine
    from facefusion_batch.settings import load_settings

    frame = real_frame()
    engine = build_engine(load_settings(None, {k: v for k, v in os.environ.items() if not k.startswith("FFB_")},
                                        {"engine": "offline"}).settings)
    try:
        faces = engine.detect(frame)
    finally:
        engine.close()
    assert len(faces) == 1
    return frame, Face(box=faces[0].box, score=faces[0].score, kps=faces[0].kps)


def marked(frame: np.ndarray, at, colour=BLUE, radius: int = 5) -> np.ndarray:
    out = frame.copy()
    cv2.circle(out, (int(round(at[0])), int(round(at[1]))), radius, colour, -1, lineType=cv2.LINE_8)
    return out


def disc_centre(frame: np.ndarray, colour) -> np.ndarray:
    """Where a drawn disc's pixels are, as the stand-in weighs them (their mean)."""
    b, g, r = (frame[..., i].astype(int) for i in range(3))
    strong = (b - r > 153) if colour == BLUE else (r - b > 153)
    ys, xs = np.nonzero(strong)
    return np.array([xs.mean(), ys.mean()])


# --- geometry -------------------------------------------------------------------------------------------

def test_the_crop_centres_the_box_and_makes_its_longer_side_195_px():
    box = np.array([100.0, 50.0, 180.0, 250.0])  # 80 wide, 200 tall
    matrix = crop_matrix(box)
    assert np.allclose(transform_points(np.array([[140.0, 150.0]]), matrix), [[128, 128]])
    top, bottom = transform_points(np.array([[140.0, 50.0], [140.0, 250.0]]), matrix)
    assert bottom[1] - top[1] == pytest.approx(195)


@pytest.mark.parametrize("turn", [0, 90, 180, 270])
def test_the_face_angle_is_the_jaw_lines_roll_rounded_to_a_quarter_turn(turn):
    shape = standins.mean_shape_68().astype(np.float64) * 200
    theta = np.radians(turn + 12)  # a slight extra tilt still rounds to the quarter turn
    turned = shape @ np.array([[np.cos(theta), np.sin(theta)], [-np.sin(theta), np.cos(theta)]])
    assert face_angle(turned) == turn
    # the crop turned by that angle is upright again: the jaw line runs left to right
    matrix, canvas = rotation(turn)
    assert canvas == (256, 256)
    jaw = transform_points(turned[[0, 16]], matrix)
    assert jaw[1, 0] - jaw[0, 0] > 0 and abs(jaw[1, 1] - jaw[0, 1]) < 0.25 * (jaw[1, 0] - jaw[0, 0])


def test_five_from_68_are_the_eye_centres_nose_tip_and_mouth_corners():
    assert np.allclose(five_from_68(standins.mean_shape_68()), WARP_TEMPLATES["ffhq_512"], atol=1e-6)


def test_clahe_lifts_a_dark_crop_only():
    bright = real_frame()[100:356, 200:456].copy()
    assert optimize_contrast(bright) is bright  # not dark: untouched (not even a Lab round trip)
    dark = (bright * 0.08).astype(np.uint8)
    lifted = optimize_contrast(dark)
    assert lifted.std() > 1.3 * dark.std() and lifted.mean() > dark.mean() + 5


def test_the_landmarkers_are_fed_the_box_crop_in_the_frames_channel_order(real_face, models):
    frame, face = real_face
    recorder = Recorder(models["2dfan4"])
    Fan2dLandmarker(recorder).detect(frame, [face.box], [0])
    fed = recorder.feeds[0]["input"]
    assert fed.shape == (1, 3, 256, 256) and fed.dtype == np.float32
    crop, _ = landmarker_crop(frame, face.box, 0)
    # BGR as the frame holds it, 0..1, NCHW (FaceFusion does not swap the channels for its landmarkers)
    assert np.allclose(fed[0], crop.transpose(2, 0, 1) / 255.0, atol=1e-6)


def test_a_dark_face_is_fed_with_clahe(real_face, models):
    frame, face = real_face
    dark = (frame * 0.08).astype(np.uint8)
    recorder = Recorder(models["2dfan4"])
    Fan2dLandmarker(recorder).detect(dark, [face.box], [0])
    plain = cv2.warpAffine(dark, crop_matrix(face.box), (256, 256)).transpose(2, 0, 1) / 255.0
    assert recorder.feeds[0]["input"][0].std() > 1.3 * plain.std()


# --- the adapters on a real face ----------------------------------------------------------------------------

@pytest.mark.parametrize("name, colour", [("2dfan4", BLUE), ("peppa_wutz", RED)])
def test_points_come_back_to_frame_pixels_on_a_real_face(real_face, models, name, colour):
    frame, face = real_face
    frame = marked(frame, face.kps[2], colour)  # a marker on the nose: the stand-in's points centre on it
    adapter = (Fan2dLandmarker if name == "2dfan4" else PeppaWutzLandmarker)(Recorder(models[name]))
    (points, score), = adapter.detect(frame, [face.box], [0])
    assert points.shape == (68, 2)
    assert np.allclose(points.mean(0), disc_centre(frame, colour), atol=0.75)
    # size: the stand-in's face is LANDMARK_SPAN crop px wide; the crop is 195 px per box side
    scale = 195 / max(face.box[2] - face.box[0], face.box[3] - face.box[1])
    assert np.allclose(points[16] - points[0], [standins.LANDMARK_SPAN / scale, 0], atol=0.5)
    assert score == pytest.approx(min(1.0, np.interp(min(1, 2 * frame_mean(frame, face)), [0, 0.9 if name == "2dfan4"
                                                                                         else 0.95], [0, 1])), abs=0.02)


def frame_mean(frame: np.ndarray, face: Face) -> float:
    crop, _ = landmarker_crop(frame, face.box, 0)
    return float(crop.mean() / 255)


@pytest.mark.parametrize("turns", [1, 2, 3])
def test_a_turned_face_is_cropped_upright_and_its_points_turn_back(real_face, models, turns):
    frame, face = real_face
    frame = marked(frame, face.kps[2] + [0, 12])
    height, width = frame.shape[:2]
    turned = np.ascontiguousarray(np.rot90(frame, turns))  # counter-clockwise quarter turns

    def turn(points: np.ndarray) -> np.ndarray:
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        w, h = width, height
        for _ in range(turns):
            points = np.stack([points[:, 1], w - 1 - points[:, 0]], axis=1)
            w, h = h, w
        return points

    corners = turn(np.array([[face.box[0], face.box[1]], [face.box[2], face.box[3]]]))
    box = np.concatenate([corners.min(0), corners.max(0)])
    kps = turn(face.kps)
    estimator = Estimator68From5(Recorder(models["fan_68_5"]))
    angle = face_angle(estimator.estimate([kps])[0])
    assert angle == (360 - 90 * turns) % 360  # a counter-clockwise turn of the picture: a clockwise roll
    (points, _), = Fan2dLandmarker(Recorder(models["2dfan4"])).detect(turned, [box], [angle])
    assert np.allclose(points.mean(0), disc_centre(turned, BLUE), atol=0.75)
    # the jaw line (point 0 -> 16) turns with the face: in the frame it is the upright one turned
    scale = 195 / max(face.box[2] - face.box[0], face.box[3] - face.box[1])
    upright = np.array([[0.0, 0.0], [standins.LANDMARK_SPAN / scale, 0.0]])
    expected = turn(upright + [100, 100])
    assert np.allclose(points[16] - points[0], expected[1] - expected[0], atol=0.6)


def test_the_68_from_5_estimate_fits_the_faces_own_5_points():
    template = WARP_TEMPLATES["ffhq_512"].astype(np.float64)
    theta = np.radians(20)
    kps = 180 * template @ np.array([[np.cos(theta), np.sin(theta)], [-np.sin(theta), np.cos(theta)]]) + [300, 90]
    estimator = Estimator68From5(standins_session("fan_68_5"))
    (points,) = estimator.estimate([kps])
    assert np.allclose(five_from_68(points), kps, atol=1e-3)


def test_the_68_from_5_estimate_on_a_real_face(real_face, models):
    frame, face = real_face
    recorder = Recorder(models["fan_68_5"])
    (points,) = Estimator68From5(recorder).estimate([face.kps])
    fed = recorder.feeds[0]["input"]
    assert fed.shape == (1, 5, 2) and fed.dtype == np.float32
    unit = transform_points(face.kps, similarity_transform(face.kps, WARP_TEMPLATES["ffhq_512"]))
    assert np.allclose(fed[0], unit, atol=1e-5)  # the 5 points in the unit ffhq_512 space
    eyes = np.linalg.norm(face.kps[1] - face.kps[0])
    assert np.abs(five_from_68(points) - face.kps).max() < 0.25 * eyes  # the stand-in only moves its shape


def standins_session(name: str):
    from conftest import cpu_session

    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / f"{name}.onnx"
    getattr(standins, f"build_{name}")(path)
    return cpu_session(path)


# --- the score decides; `many` --------------------------------------------------------------------------

def test_a_face_the_landmarker_is_unsure_of_gets_the_68_from_5_estimate(real_face, models):
    frame, face = real_face
    frame = marked(frame, face.kps[2])
    estimator = Estimator68From5(Recorder(models["fan_68_5"]))
    (estimate,) = estimator.estimate([face.kps])
    sure = FaceLandmarker(LandmarkerOptions("2dfan4", 0.5), estimator,
                          [Fan2dLandmarker(Recorder(models["2dfan4"]))])
    unsure = FaceLandmarker(LandmarkerOptions("2dfan4", 0.5), estimator,
                            [Fan2dLandmarker(Recorder(models["2dfan4_unsure"]))])  # score ~0.2
    (found,) = sure.landmarks(frame, [face])
    (fallback,) = unsure.landmarks(frame, [face])
    assert np.allclose(found.mean(0), disc_centre(frame, BLUE), atol=0.75)
    assert np.allclose(fallback, estimate, atol=1e-4)
    assert not np.allclose(found, estimate, atol=5)
    # the threshold is FaceFusion's `score > face_landmarker_score`: a sure landmarker at threshold 1 loses too
    strict = FaceLandmarker(LandmarkerOptions("2dfan4", 1.0), estimator, [Fan2dLandmarker(Recorder(models["2dfan4"]))])
    assert np.allclose(strict.landmarks(frame, [face])[0], estimate, atol=1e-4)


def test_score_zero_runs_no_landmarker(real_face, models):
    frame, face = real_face
    assert landmarker_models("many", 0.0) == ["fan_68_5"]
    assert landmarker_models("many", 0.5) == ["fan_68_5", "2dfan4", "peppa_wutz"]
    recorder = Recorder(models["fan_68_5"])
    landmarker = FaceLandmarker(LandmarkerOptions("2dfan4", 0.0), Estimator68From5(recorder))
    (points,) = landmarker.landmarks(frame, [face])
    assert points.shape == (68, 2) and recorder.calls == 1
    with pytest.raises(ValueError, match="needs the 2dfan4 model"):
        FaceLandmarker(LandmarkerOptions("2dfan4", 0.5), Estimator68From5(recorder))


class Fixed:
    def __init__(self, name: str, points: np.ndarray, score: float) -> None:
        self.name, self.points, self.score = name, points, score

    def detect(self, frame, boxes, angles):
        return [(self.points, self.score) for _ in boxes]


@pytest.mark.parametrize("fan, peppa, winner", [(0.9, 0.95, "2dfan4"), (0.6, 0.79, "2dfan4"), (0.6, 0.81, "peppa"),
                                                (0.3, 0.9, "peppa")])
def test_many_keeps_2dfan4_unless_peppa_wutz_scores_02_higher(real_face, models, fan, peppa, winner):
    frame, face = real_face
    a, b = np.zeros((68, 2)), np.ones((68, 2))
    landmarker = FaceLandmarker(LandmarkerOptions("many", 0.1), Estimator68From5(Recorder(models["fan_68_5"])),
                                [Fixed("2dfan4", a, fan), Fixed("peppa_wutz", b, peppa)])
    (points,) = landmarker.landmarks(frame, [face])
    assert np.array_equal(points, a if winner == "2dfan4" else b)


def test_many_faces_in_one_call(real_face, models):
    frame, face = real_face
    other = Face(box=face.box + [200, 0, 200, 0], score=0.9, kps=face.kps + [200, 0])
    landmarker = FaceLandmarker(LandmarkerOptions("2dfan4", 0.5), Estimator68From5(Recorder(models["fan_68_5"])),
                                [Fan2dLandmarker(Recorder(models["2dfan4"]))])
    together = landmarker.landmarks(frame, [face, other])
    alone = [landmarker.landmarks(frame, [f])[0] for f in (face, other)]
    assert all(np.allclose(x, y, atol=1e-4) for x, y in zip(together, alone))
    assert landmarker.landmarks(frame, []) == []


def test_options_are_checked():
    with pytest.raises(ValueError, match="unknown face landmarker model 'dlib'"):
        LandmarkerOptions("dlib", 0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="0..1"):
        LandmarkerOptions("2dfan4", 1.5)


# --- video: the tracks smooth the landmarks ---------------------------------------------------------------

def test_face_tracks_smooth_jittering_landmarks_on_a_still_face_and_follow_a_moving_one():
    """The neural engine puts the 68 points in `Face.landmarks`, which the face tracks smooth with the
    keypoints and box: a landmarker's per-frame jitter (1.5 px here) mostly leaves the hull on a still face,
    and a moving face is followed (benchmarks/landmark_jitter.py measures the mask's flicker too)."""
    from facefusion_batch.faces.tracking import Tracker

    shape = standins.mean_shape_68().astype(np.float64)
    shape = shape * (150 / (shape[16, 0] - shape[0, 0])) + [100, 60]
    rng = np.random.default_rng(0)

    def run(speed: float) -> tuple[float, float, float]:
        tracker, raw, out, true = Tracker(960, 960), [], [], []
        for index in range(60):
            points = shape + [speed * index, 0]
            landmarks = points + rng.normal(0, 1.5, points.shape)
            box = np.concatenate([points.min(0), points.max(0)]) + rng.normal(0, 1.5, 4)
            face = Face(box=box.astype(np.float32), score=0.9, landmarks=landmarks.astype(np.float32),
                        kps=(five_from_68(points) + rng.normal(0, 1.5, (5, 2))).astype(np.float32))
            (result,) = tracker.update(index, [face], detected=True)
            assert result.face.landmarks.shape == (68, 2)
            raw.append(landmarks), out.append(result.face.landmarks.astype(np.float64)), true.append(points)

        def jitter(series):
            return float(np.sqrt(np.mean([np.sum((b - a - speed * np.array([1, 0])) ** 2, axis=1).mean()
                                          for a, b in zip(series, series[1:])])))
        error = float(np.sqrt(np.mean([np.sum((p - t) ** 2, axis=1).mean() for p, t in zip(out[10:], true[10:])])))
        return jitter(raw), jitter(out), error

    raw, smoothed, error = run(0.0)
    assert smoothed < 0.25 * raw and error < 1.0
    raw, smoothed, error = run(4.0)
    assert smoothed < raw and error < 4.0  # followed: within a px or two of the moving face

"""MediaPipe adapters on real faces: astronaut (NASA) and Grace Hopper (US Navy), both public domain."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import cv2
import matplotlib.cbook
import numpy as np
import pytest
import skimage.data

from conftest import astronaut_photo, cpu_session
from facefusion_batch.faces.geometry import iou
from facefusion_batch.offline import mediapipe as mp

# Hand-checked on the images: eye centres (image-left first), nose tip, mouth corners (image-left first).
ASTRONAUT_FIVE = np.array([[204, 102], [246, 104], [223, 129], [200, 139], [247, 142]], np.float32)
ASTRONAUT_FACE = (178, 75, 275, 175)  # x1, y1, x2, y2 of the face (brow to chin, cheek to cheek)
GRACE_FIVE = np.array([[219, 193], [308, 189], [269, 243], [231, 277], [307, 273]], np.float32)
GRACE_FACE = (165, 135, 365, 335)


def make_session(role: str):
    return cpu_session(mp.asset_path(mp.MODEL_FILES[role]))


@pytest.fixture(scope="module")
def detector() -> mp.MediaPipeDetector:
    return mp.MediaPipeDetector(make_session("long_range"), make_session("short_range"), min_face_size=56)


@pytest.fixture(scope="module")
def landmarker() -> mp.MediaPipeLandmarker:
    return mp.MediaPipeLandmarker(make_session("landmarks"))


@pytest.fixture(scope="module")
def astronaut() -> np.ndarray:
    return astronaut_photo()


@pytest.fixture(scope="module")
def grace() -> np.ndarray:
    path = Path(matplotlib.cbook.get_sample_data("grace_hopper.jpg", asfileobj=False))
    image = cv2.imread(str(path))
    assert image is not None
    return image


# --------------------------------------------------------------------------- pure helpers

def test_anchor_layouts_match_the_models() -> None:
    short = mp.ssd_anchors(mp.SHORT_RANGE_ANCHORS)
    full = mp.ssd_anchors(mp.FULL_RANGE_ANCHORS)
    assert short.shape == (896, 4) and full.shape == (2304, 4)
    # 16x16 cells of 2 anchors, then 8x8 cells of 6; centres at cell middles, fixed unit size.
    np.testing.assert_allclose(short[0], [0.5 / 16, 0.5 / 16, 1, 1])
    np.testing.assert_allclose(short[1], short[0])
    np.testing.assert_allclose(short[512], [0.5 / 8, 0.5 / 8, 1, 1])
    np.testing.assert_allclose(full[48], [0.5 / 48, 1.5 / 48, 1, 1])


def test_weighted_nms_averages_a_cluster_and_keeps_the_best_score() -> None:
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60]], np.float32)
    keypoints = np.zeros((3, 6, 2), np.float32)
    b, _, s = mp.weighted_nms(boxes, keypoints, np.array([0.9, 0.3, 0.8], np.float32), 0.3)
    np.testing.assert_allclose(s, [0.9, 0.8])
    np.testing.assert_allclose(b[0], [0.25, 0.25, 10.25, 10.25], atol=1e-5)
    assert mp.weighted_nms(boxes[:0], keypoints[:0], np.zeros(0, np.float32), 0.3)[0].shape == (0, 4)


def test_tiles_cover_the_frame_with_half_overlap() -> None:
    assert mp.tile_sides(1280, 720, None) == []
    assert mp.tile_sides(1280, 720, 200) == []
    assert mp.tile_sides(1280, 720, 60) == [600]
    sides = mp.tile_sides(3840, 2160, 40)
    assert sides[-1] == 400
    assert all(a / b <= mp.TILE_LEVEL_RATIO + 0.01 for a, b in zip([3840] + sides, sides))
    views = mp.frame_views(0, 1280, 720, 60)
    assert views[0] == mp.View(0, 0, 0, 1280, 720)
    covered = np.zeros((720, 1280), bool)
    for view in views[1:]:
        covered[view.y:view.y + view.height, view.x:view.x + view.width] = True
        right, bottom = view.x + view.width, view.y + view.height
        assert view.inner_edges == (view.x > 0, view.y > 0, right < 1280, bottom < 720)
    assert covered.all()


def test_view_placement_round_trip() -> None:
    whole = mp.place_view(mp.View(0, 0, 0, 1280, 720), 1280, 720, 192)
    assert (whole.width, whole.height, whole.left, whole.top) == (192, 108, 0, 42)
    tile = mp.place_view(mp.View(0, 680, 120, 600, 600), 1280, 720, 192)
    assert (tile.width, tile.height, tile.left, tile.top) == (192, 192, 0, 0)
    for place in (whole, tile):
        frame_point = np.array([900.0, 500.0])
        normalised = ((frame_point * [place.scale_x, place.scale_y] - [place.crop_x, place.crop_y])
                      + [place.left, place.top]) / 192
        np.testing.assert_allclose(mp.input_to_frame(normalised[None], place), [frame_point], atol=1e-3)


@pytest.mark.parametrize("side", [40, 77, 150, 191])
def test_a_small_view_is_enlarged_alone_as_the_whole_frame_enlarged_would_give_it(side: int) -> None:
    # A closer look at a small face enlarges only its view (`enlarged_crop`), not the whole frame: the same pixels
    # as OpenCV's area-mode enlargement of the frame, cropped, within one level (a remap's rounding).
    photo = np.ascontiguousarray(skimage.data.astronaut()[:, :, ::-1])
    frame = cv2.resize(photo, (1280, 720), interpolation=cv2.INTER_AREA)
    for x, y in ((0, 0), (1280 - side, 720 - side), (533, 211)):
        place = mp.place_view(mp.View(0, x, y, side, side), 1280, 720, 192)
        width, height = round(1280 * place.scale_x), round(720 * place.scale_y)
        whole = cv2.resize(frame, (width, height), interpolation=cv2.INTER_AREA)
        wanted = whole[place.crop_y:place.crop_y + place.height, place.crop_x:place.crop_x + place.width]
        made = mp.enlarged_crop(frame, place)
        difference = np.abs(made.astype(int) - wanted.astype(int))
        assert made.shape == wanted.shape and difference.max() <= 1 and difference.mean() < 0.2
        batch, _ = mp.model_inputs([frame], [mp.View(0, x, y, side, side)], 192)
        assert np.abs(batch[0, place.top:place.top + place.height, place.left:place.left + place.width]
                      .astype(int) - wanted[..., ::-1].astype(int)).max() <= 1


@pytest.mark.parametrize("side", [300, 420, 560])
def test_a_small_view_of_a_shrunk_frame_is_shrunk_alone_to_the_same_pixels(side: int) -> None:
    # A look at a view larger than the model's input shrinks only the view (`shrunk_crop`): bit for bit the pixels
    # of OpenCV's area shrink of the whole frame, cropped.
    photo = np.ascontiguousarray(skimage.data.astronaut()[:, :, ::-1])
    frame = cv2.resize(photo, (1280, 720), interpolation=cv2.INTER_AREA)
    for x, y in ((0, 0), (1280 - side, 720 - side), (533, 111)):
        view = mp.View(0, x, y, side, side)
        place = mp.place_view(view, 1280, 720, 192)
        size = (round(1280 * place.scale_x), round(720 * place.scale_y))
        assert mp._shrunk_alone(frame, size)
        whole = cv2.resize(frame, size, interpolation=cv2.INTER_AREA)
        wanted = whole[place.crop_y:place.crop_y + place.height, place.crop_x:place.crop_x + place.width]
        assert np.array_equal(mp.shrunk_crop(frame, size, place), wanted)
        batch, _ = mp.model_inputs([frame], [view], 192)
        assert np.array_equal(batch[0, place.top:place.top + place.height, place.left:place.left + place.width],
                              wanted[..., ::-1])


def test_shrunk_crops_match_opencv_on_any_sizes() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        height, width = (int(v) for v in rng.integers(8, 120, 2))
        image = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        size = (int(rng.integers(2, width)), int(rng.integers(2, height)))
        if not mp._shrunk_alone(image, size):
            continue
        whole = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
        x, y = int(rng.integers(0, size[0])), int(rng.integers(0, size[1]))
        place = mp.Placement(192, size[0] / width, size[1] / height, x, y, int(rng.integers(1, size[0] - x + 1)),
                             int(rng.integers(1, size[1] - y + 1)), 0, 0)
        wanted = whole[place.crop_y:place.crop_y + place.height, place.crop_x:place.crop_x + place.width]
        assert np.array_equal(mp.shrunk_crop(image, size, place), wanted)


def test_roi_matrix_rotates_about_the_centre() -> None:
    matrix = mp.roi_to_frame_matrix(np.array([100.0, 50.0]), 96.0, math.pi / 2, 192)
    np.testing.assert_allclose(matrix @ [96, 96, 1], [100, 50])
    np.testing.assert_allclose(matrix @ [192, 96, 1], [100, 98])  # crop +x points down the frame


def test_five_points_order() -> None:
    mesh = np.zeros((1, mp.NUM_LANDMARKS, 3), np.float32)
    mesh[0, list(mp.RIGHT_EYE_RING), 0] = 10
    mesh[0, list(mp.LEFT_EYE_RING), 0] = 30
    mesh[0, mp.NOSE_TIP] = (20, 20, 0)
    mesh[0, mp.MOUTH_RIGHT_CORNER] = (12, 30, 0)
    mesh[0, mp.MOUTH_LEFT_CORNER] = (28, 30, 0)
    np.testing.assert_allclose(mp.five_points(mesh)[0], [[10, 0], [30, 0], [20, 20], [12, 30], [28, 30]])


# --------------------------------------------------------------------------- real faces

def box_iou(a: np.ndarray, b: np.ndarray) -> float:
    return float(iou(np.asarray(a, np.float32), np.asarray(b, np.float32)[None])[0])


@pytest.mark.parametrize("name", ["astronaut", "grace"])
def test_single_portrait(name: str, detector: mp.MediaPipeDetector, landmarker: mp.MediaPipeLandmarker,
                         request: pytest.FixtureRequest) -> None:
    image = request.getfixturevalue(name)
    face, five = (ASTRONAUT_FACE, ASTRONAUT_FIVE) if name == "astronaut" else (GRACE_FACE, GRACE_FIVE)
    (found,) = detector.detect([image])
    assert len(found) == 1
    detection = found[0]
    assert detection.score > 0.8
    assert box_iou(detection.box, face) > 0.7
    eye_distance = float(np.linalg.norm(five[1] - five[0]))
    # Detector keypoints: eyes, nose tip; mouth centre between the corners.
    np.testing.assert_allclose(detection.keypoints[:3], five[:3], atol=0.2 * eye_distance)
    np.testing.assert_allclose(detection.keypoints[3], five[3:].mean(axis=0), atol=0.25 * eye_distance)
    mesh = landmarker.predict(image, found)
    assert mesh.points.shape == (1, 468, 3) and mesh.presence.shape == (1,)
    assert mesh.presence[0] > 0.9
    np.testing.assert_allclose(mp.five_points(mesh.points)[0], five, atol=0.12 * eye_distance)


@dataclass(frozen=True)
class Paste:
    source: str
    face: float  # pasted face size (detector box side) in pixels
    angle: float  # degrees, counter-clockwise
    centre: tuple[float, float]


PASTES = (Paste("astronaut", 280, 10, (290, 360)), Paste("grace", 160, -15, (720, 190)),
          Paste("astronaut", 100, -8, (700, 560)), Paste("grace", 60, 15, (900, 600)),
          Paste("astronaut", 200, 0, (1100, 330)))


def composite(sources: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], background: int
              ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """A 1280x720 frame with scaled, rotated square face crops; returns it and each face's expected
    (box, five points), transformed from the source image's own detection and landmarks."""
    canvas = np.full((720, 1280, 3), background, np.uint8)
    expected = []
    for paste in PASTES:
        image, box, five = sources[paste.source]
        centre = (box[:2] + box[2:]) / 2
        side = float(max(box[2:] - box[:2]))
        scale = paste.face / side
        matrix = cv2.getRotationMatrix2D((float(centre[0]), float(centre[1])), paste.angle, scale)
        matrix[:, 2] += np.asarray(paste.centre) - centre
        mask = np.zeros(image.shape[:2], np.uint8)
        low, high = (centre - 0.8 * side).astype(int), (centre + 0.8 * side).astype(int)
        cv2.rectangle(mask, tuple(int(v) for v in low), tuple(int(v) for v in high), 255, -1)
        interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
        warped = cv2.warpAffine(image, matrix, (1280, 720), flags=interpolation)
        inside = cv2.warpAffine(mask, matrix, (1280, 720)) > 127
        canvas[inside] = warped[inside]
        half = (box[2:] - box[:2]) * scale / 2
        expected.append((np.concatenate([np.asarray(paste.centre) - half, np.asarray(paste.centre) + half]),
                         five @ matrix[:, :2].T + matrix[:, 2]))
    return canvas, expected


@pytest.fixture(scope="module")
def sources(detector: mp.MediaPipeDetector, landmarker: mp.MediaPipeLandmarker, astronaut: np.ndarray,
            grace: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    out = {}
    for name, image in (("astronaut", astronaut), ("grace", grace)):
        (detection,) = detector.detect([image])[0]
        out[name] = (image, detection.box, mp.five_points(landmarker.landmarks(image, [detection]))[0])
    return out


@pytest.mark.parametrize("background", [128, 0])
def test_composite_finds_every_face(background: int, sources: dict, detector: mp.MediaPipeDetector,
                                    landmarker: mp.MediaPipeLandmarker) -> None:
    frame, expected = composite(sources, background)
    (found,) = detector.detect([frame])
    assert len(found) == len(PASTES), [d.box.round().tolist() for d in found]
    five = mp.five_points(landmarker.landmarks(frame, found))
    for paste, (box, points) in zip(PASTES, expected):
        ious = [box_iou(d.box, box) for d in found]
        match = int(np.argmax(ious))
        assert ious[match] > 0.5, (paste, ious)
        error = np.linalg.norm(five[match] - points, axis=1).max()
        assert error < 0.06 * paste.face, (paste, error)


def test_whole_frame_alone_misses_only_the_smallest(sources: dict) -> None:
    plain = mp.MediaPipeDetector(make_session("long_range"), make_session("short_range"))
    frame, expected = composite(sources, 0)
    (found,) = plain.detect([frame])
    hit = [max(box_iou(d.box, box) for d in found) > 0.5 for box, _ in expected]
    assert all(h for paste, h in zip(PASTES, hit) if paste.face >= 160)


def test_grey_pixels_are_tinted_like_skin_and_coloured_ones_left_as_they_are() -> None:
    batch = np.zeros((2, 4, 4, 3), np.uint8)
    batch[0, 0, 0] = (100, 100, 100)  # grey
    batch[0, 0, 1] = (200, 50, 30)  # coloured
    batch[0, 0, 2] = (106, 100, 100)  # half way to GREY_CHROMA
    batch[1, 1, 1] = (250, 250, 250)
    out = mp.skin_tinted(batch)
    assert out.shape == batch.shape and out.dtype == np.uint8
    assert out[0, 0, 0].tolist() == [round(100 * t) for t in mp.SKIN_TINT]
    assert out[0, 0, 1].tolist() == [200, 50, 30] and out[1, 0, 0].tolist() == [0, 0, 0], "colour and black stay"
    assert 100 < out[0, 0, 2, 0] < out[0, 0, 0, 0] and out[1, 1, 1, 0] == 255


def test_the_grey_map_counts_grey_pixels_that_are_not_dark() -> None:
    frame = np.zeros((40, 80, 3), np.uint8)
    frame[:, :40] = (120, 125, 118)  # grey
    frame[:, 40:60] = (30, 90, 200)  # coloured
    frame[:, 60:] = (10, 10, 10)  # dark
    grey = mp.grey_map(frame)
    assert mp.grey_share(grey, 0, 0, 40, 40) == 1.0 and mp.grey_share(grey, 40, 0, 80, 40) == 0.0
    assert mp.grey_share(grey, 0, 0, 80, 40) == 0.5 and mp.grey_share(grey, 100, 0, 120, 40) == 0.0


def test_no_face_no_detection(detector: mp.MediaPipeDetector, astronaut: np.ndarray) -> None:
    flag = np.ascontiguousarray(astronaut[:250, :130])
    frames = [np.zeros((480, 640, 3), np.uint8), np.full((720, 1280, 3), 128, np.uint8), flag]
    assert detector.detect(frames) == [[], [], []]
    assert detector.detect([]) == []


def test_batched_detect_equals_single(sources: dict, detector: mp.MediaPipeDetector, astronaut: np.ndarray,
                                      grace: np.ndarray) -> None:
    frames = [astronaut, composite(sources, 128)[0], grace, composite(sources, 0)[0]]
    batched = detector.detect(frames)
    for frame, together in zip(frames, batched):
        (alone,) = detector.detect([frame])
        assert len(alone) == len(together)
        for a, b in zip(alone, together):
            np.testing.assert_allclose(a.box, b.box, atol=1e-3)
            np.testing.assert_allclose(a.keypoints, b.keypoints, atol=1e-3)
            assert a.score == pytest.approx(b.score, abs=1e-5)


def test_landmarks_batch_all_faces_of_a_frame(sources: dict, detector: mp.MediaPipeDetector,
                                              landmarker: mp.MediaPipeLandmarker) -> None:
    frame, _ = composite(sources, 128)
    (found,) = detector.detect([frame])
    together = landmarker.predict(frame, found)
    assert together.points.shape == (len(found), 468, 3)
    assert (together.presence > 0.9).all()
    for i, detection in enumerate(found):
        np.testing.assert_allclose(landmarker.landmarks(frame, [detection])[0], together.points[i], atol=1e-2)
    assert landmarker.landmarks(frame, []).shape == (0, 468, 3)


class _Canned:
    """A stand-in for one BlazeFace model: fixed detections per call, and the views it was asked about."""

    size = 192

    def __init__(self, *answers: list[tuple[tuple[float, float, float, float], float]]) -> None:
        self.answers, self.views, self.tinted = list(answers), [], []

    def run(self, frames, views, score_threshold, iou_threshold, floor=None, tinted=()):
        self.views.append(list(views))
        self.tinted.append(list(tinted))
        found = self.answers.pop(0)
        results = []
        for view in views:
            # A frame mirrored out across its edges (mp.mirror) shows the same faces, shrunk and moved.
            pad, factor = (0, 1.0) if frames[view.frame].shape == frames[0].shape else mp.mirror(frames[0], 192)[1:]
            inside = [(tuple(v / factor + pad for v in box), score) for box, score in found
                      if score >= (score_threshold if floor is None else floor)]
            inside = [(box, score) for box, score in inside
                      if view.x <= (box[0] + box[2]) / 2 <= view.x + view.width
                      and view.y <= (box[1] + box[3]) / 2 <= view.y + view.height]
            boxes = np.array([box for box, _ in inside], np.float32).reshape(-1, 4)
            keypoints = np.repeat(((boxes[:, :2] + boxes[:, 2:]) / 2)[:, None, :], 6, axis=1)
            results.append((boxes, keypoints, np.array([s for _, s in inside], np.float32)))
        return results


def _with_models(short: _Canned, long: _Canned) -> mp.MediaPipeDetector:
    plain = mp.MediaPipeDetector(make_session("long_range"), make_session("short_range"))
    plain._short, plain._long = short, long
    return plain


def test_small_short_range_face_is_taken_from_the_full_range_model_on_a_closer_view() -> None:
    # Short range sees a 55 px face of a 640 px frame at 1.7x its size; full range misses it on the whole
    # frame but finds it on a view around it.
    frame = np.zeros((360, 640, 3), np.uint8)
    short = _Canned([((150, -10, 243, 83), 0.6)])
    long = _Canned([], [((164, 9, 219, 64), 0.8)])
    (found,) = _with_models(short, long).detect([frame])
    assert len(found) == 1 and np.allclose(found[0].box, (164, 9, 219, 64))
    (view,) = long.views[1]
    assert view.width == view.height == min(360, int(mp.RECHECK_CONTEXT * 93)) and view.x <= 164 and view.y == 0


def test_small_short_range_face_found_by_full_range_is_not_averaged_with_it() -> None:
    frame = np.zeros((360, 640, 3), np.uint8)
    short = _Canned([((241, 69, 338, 166), 0.55)])
    long = _Canned([((254, 80, 318, 143), 0.8)])
    (found,) = _with_models(short, long).detect([frame])
    assert len(found) == 1 and np.allclose(found[0].box, (254, 80, 318, 143))
    assert len(long.views) == 1  # nothing to look at again


def test_large_or_unconfirmed_short_range_faces_stay() -> None:
    frame = np.zeros((360, 640, 3), np.uint8)
    # A close-up (short range's own range) and a small face the full-range model does not find either.
    short = _Canned([((100, 20, 300, 220), 0.9), ((400, 100, 460, 160), 0.6)])
    long = _Canned([], [])
    (found,) = _with_models(short, long).detect([frame])
    assert sorted(tuple(np.round(d.box)) for d in found) == [(100, 20, 300, 220), (400, 100, 460, 160)]
    assert len(long.views[1]) == 1


def test_a_small_face_scored_below_the_threshold_is_kept_when_a_closer_view_finds_it() -> None:
    # Full range scores a 36 px face of a 640 px frame 0.3 on the whole frame (a handful of its input's pixels)
    # and 0.85 on a view three times its size; a 0.2 box in the texture is no face on its closer view.
    frame = np.zeros((360, 640, 3), np.uint8)
    short = _Canned([])
    long = _Canned([((520, 136, 556, 172), 0.3), ((100, 200, 140, 240), 0.2), ((300, 50, 400, 150), 0.9)],
                   [((521, 135, 559, 174), 0.85)])
    (found,) = _with_models(short, long).detect([frame])
    assert sorted(tuple(np.round(d.box)) for d in found) == [(300, 50, 400, 150), (521, 135, 559, 174)]
    assert [(v.width, v.height) for v in long.views[1]] == [(144, 144), (160, 160)]  # likeliest first


def test_a_sweep_keeps_a_small_face_the_full_range_model_misses_closer_where_the_short_range_one_finds_it() -> None:
    # A 26 px face turned ~50 degrees: a sweep's tile scores it 0.3 and the full-range model finds nothing over it
    # on its closer view; the short-range model, shown the same view, finds it. A candidate neither model finds
    # closer is no face. (Whole-frame candidates, on every reference frame, are not asked twice: CPU.)
    frame = np.zeros((360, 640, 3), np.uint8)
    short = _Canned([((449, 70, 476, 97), 0.75)], [])  # (the second: the edge ring's views)
    long = _Canned([((450, 71, 476, 97), 0.3), ((100, 200, 126, 226), 0.25)], [])
    found = _with_models(short, long).sweep(frame, [])
    assert [tuple(np.round(d.box)) for d in found] == [(449, 70, 476, 97)] and found[0].score == pytest.approx(0.75)
    assert found[0].weak  # only this look found it: a face only where the mesh is sure (engines/offline.py SURE_MESH)
    assert short.views[0] == long.views[1]  # the same views, once each


def test_low_scored_boxes_on_a_found_face_or_large_are_not_looked_at_again() -> None:
    frame = np.zeros((360, 640, 3), np.uint8)
    # An echo of the found face (its centre inside it) and a large doubtful box (full range's own range).
    long = _Canned([((300, 50, 400, 150), 0.9), ((305, 60, 395, 150), 0.3), ((20, 20, 220, 220), 0.3)])
    (found,) = _with_models(_Canned([]), long).detect([frame])
    assert len(found) == 1 and len(long.views) == 1


def test_a_closer_view_that_finds_only_a_face_found_already_adds_nothing() -> None:
    frame = np.zeros((360, 640, 3), np.uint8)
    long = _Canned([((300, 50, 400, 150), 0.9), ((390, 120, 430, 160), 0.25)], [((300, 50, 400, 150), 0.95)])
    (found,) = _with_models(_Canned([]), long).detect([frame])
    assert len(found) == 1 and np.allclose(found[0].box, (300, 50, 400, 150)) and found[0].score == pytest.approx(0.9)


def test_faces_found_on_the_mirrored_frame_are_kept_where_the_edge_cuts_them() -> None:
    # Boxes on a 640 x 360 frame mirrored out by 80 px: a face half out at the left, one wholly inside, a mirror
    # image wholly outside, one barely in, and a cut one centred on a face the frame's own views found.
    boxes = np.array([[30, 100, 130, 200], [280, 100, 380, 200], [0, 100, 60, 160], [690, 100, 790, 200],
                      [620, 20, 720, 120]], np.float32)
    keypoints = np.repeat(((boxes[:, :2] + boxes[:, 2:]) / 2)[:, None, :], 6, axis=1)
    scores = np.full(5, 0.8, np.float32)
    found = [(np.array([[560, -40, 650, 50]], np.float32), np.zeros((1, 6, 2), np.float32), np.ones(1, np.float32))]
    kept, points, _ = mp._cut_by_edge((boxes / 2, keypoints / 2, scores), 40, 2.0, (360, 640, 3), found)
    assert kept.tolist() == [[-50, 20, 50, 120]]  # boxes in the mirrored image, half the frame's size
    assert points[0, 0].tolist() == [0, 70]


@pytest.mark.parametrize("faint", [0.12, 0.08])
def test_a_sweep_sees_again_tinted_only_the_grey_tiles_where_a_face_scored_faintly(faint: float) -> None:
    # A grey picture: its tiles are seen tinted only where the plain view scored a box TINT_HINT or more (a grey
    # face scores so; a grey backdrop's texture less), and there the tinted view finds the face.
    frame = np.full((360, 640, 3), 128, np.uint8)
    long = _Canned([((300, 40, 330, 70), faint)], [((300, 40, 330, 70), 0.7)], [])
    short = _Canned([])  # the edge ring: nothing
    found = _with_models(short, long).sweep(frame, [])
    tiles = long.views[0]
    assert len(tiles) > 4 and long.tinted[0] == []
    if faint < mp.TINT_HINT:
        assert found == [] and len(long.views) == 1
        return
    seen_again = long.views[1]
    assert long.tinted[1] == [True] * len(seen_again) and 0 < len(seen_again) < len(tiles)
    assert all(v.x <= 315 <= v.x + v.width and v.y <= 55 <= v.y + v.height for v in seen_again)
    (face,) = found
    assert np.allclose(face.box, (300, 40, 330, 70)) and face.score == pytest.approx(0.7)


class _SeesTinted:
    """A stand-in full-range model that sees a grey face only tinted: scored `whole` on a tinted view of the whole
    frame, 0.8 on a tinted closer view, nothing untinted. Records each call's tint flags."""

    size = 192

    def __init__(self, box: tuple[float, float, float, float], whole: float) -> None:
        self.box, self.whole, self.tinted = np.array([box], np.float32), whole, []

    def run(self, frames, views, score_threshold, iou_threshold, floor=None, tinted=()):
        flags = list(tinted) or [False] * len(views)
        self.tinted.append(flags)
        results = []
        for view, flag in zip(views, flags):
            score = (self.whole if view.width == frames[view.frame].shape[1] else 0.8) if flag else 0.0
            keep = score >= (score_threshold if floor is None else floor)
            boxes = self.box if keep else np.zeros((0, 4), np.float32)
            keypoints = np.repeat(((boxes[:, :2] + boxes[:, 2:]) / 2)[:, None, :], 6, axis=1)
            results.append((boxes, keypoints, np.full(len(boxes), score, np.float32)))
        return results


@pytest.mark.parametrize("colour", ["none", "frame", "face"])
def test_a_grey_frame_is_seen_tinted_too_and_a_face_scored_faintly_there_is_looked_at_closer_tinted(
        colour: str) -> None:
    # Untinted, the full-range model scores a small grey face nothing on the whole frame; on the mostly grey frame
    # seen tinted too (GREY_WHOLE), it scores 0.3, and a closer look, tinted, finds it. A colour frame is seen as
    # it is only; on a grey frame, what the tinted view scores over a colour face does not count.
    frame = np.full((360, 640, 3), 128, np.uint8)
    if colour == "frame":
        frame[..., 2] = 200
    if colour == "face":
        frame[150:190, 300:340, 2] = 200
    long = _SeesTinted((300, 150, 340, 190), 0.3)
    (found,) = _with_models(_Canned([]), long).detect([frame])
    if colour == "frame":
        assert found == [] and not any(any(flags) for flags in long.tinted)
        return
    assert long.tinted[0][-1] and sum(long.tinted[0]) == 1  # the whole frame, once more, tinted
    if colour == "face":
        assert found == [] and len(long.tinted) == 1
        return
    (face,) = found
    assert np.allclose(face.box, (300, 150, 340, 190)) and face.score == pytest.approx(0.8)


class _Centred:
    """A stand-in short-range model: whatever it is shown, a face of a third of the view at its centre (as
    `_recheck_edges` centres its views on the candidate), scored `score`; the whole frame (its first call) shows
    none. Records the views' sides."""

    size = 128

    def __init__(self, score: float) -> None:
        self.score, self.calls, self.sides = score, 0, []

    def run(self, frames, views, score_threshold, iou_threshold, floor=None, tinted=()):
        self.calls += 1
        results = []
        for view in views:
            side = view.width
            if self.calls > 1:
                self.sides.append(side)
            box = np.array([[side / 3, side / 3, 2 * side / 3, 2 * side / 3]], np.float32)
            keep = self.calls > 1 and self.score >= score_threshold
            boxes = box if keep else np.zeros((0, 4), np.float32)
            keypoints = np.repeat(((boxes[:, :2] + boxes[:, 2:]) / 2)[:, None, :], 6, axis=1)
            results.append((boxes, keypoints, np.full(len(boxes), self.score, np.float32)))
        return results


@pytest.mark.parametrize("closer", [0.9, 0.2])
def test_a_face_the_edge_cuts_scored_low_is_looked_at_again_closer(closer: float) -> None:
    # The mirrored view scores a face cut by the left edge 0.3 (a 60 px face is 14 px of it): the short-range
    # model looks at it again on a view three times its size at full resolution, and it is a face only where
    # found there.
    frame = np.zeros((360, 640, 3), np.uint8)
    short = _Centred(closer)
    long = _Canned([((-30, 100, 30, 160), 0.3)], [])  # (the second: the closer look for small faces)
    (found,) = _with_models(short, long).detect([frame])
    assert short.sides == [180]
    if closer < 0.5:
        assert found == []
    else:
        (face,) = found
        assert np.allclose(face.box, (-30, 100, 30, 160), atol=1) and face.score == pytest.approx(closer)


def test_low_scored_faces_wholly_inside_or_on_a_found_face_are_no_edge_candidates() -> None:
    frame = np.zeros((360, 640, 3), np.uint8)
    # Inside the frame (the closer look for small faces is for those), and cut by the edge but centred on a face
    # found at the threshold.
    long = _Canned([((300, 100, 360, 160), 0.3), ((-40, 20, 60, 120), 0.9), ((-30, 30, 50, 110), 0.35)], [])
    short = _Centred(0.9)
    (found,) = _with_models(short, long).detect([frame])
    assert short.sides == [] and all(d.score >= 0.5 for d in found)


@pytest.mark.parametrize("side", ["left", "right"])
def test_the_mesh_finds_a_face_mostly_cut_off_by_the_side_edge(detector: mp.MediaPipeDetector,
                                                                  landmarker: mp.MediaPipeLandmarker,
                                                                  astronaut: np.ndarray, monkeypatch,
                                                                  side: str) -> None:
    # The frame's edge cuts the astronaut's face, 30 % of it left in frame (a face leaving, looked for by its
    # track). Padded by repeating the edge's pixels, the mesh crop shows streaks where most of the face should be
    # and the mesh says "no face" although its points are on the face; asked again on the frame mirrored out, it
    # says there is one, and the points stay the first fit's.
    (whole,) = [d for d in detector.detect([astronaut])[0] if d.box[2] - d.box[0] > 100]
    share = 0.7 if side == "left" else 0.3
    middle = int(round(whole.box[0] + share * (whole.box[2] - whole.box[0])))
    frame = np.ascontiguousarray(astronaut[:, middle:] if side == "left" else astronaut[:, :middle])
    shift = np.array([middle if side == "left" else 0, 0], np.float32)
    cut = mp.Detection(whole.box - np.tile(shift, 2), whole.score, whole.keypoints - shift)
    found = landmarker.predict(frame, [cut])
    assert found.presence[0] > 0.5
    reference = landmarker.predict(astronaut, [whole]).points[0, :, :2] - shift
    inside = (reference[:, 0] >= 0) & (reference[:, 0] < frame.shape[1])
    error = np.linalg.norm(found.points[0, inside, :2] - reference[inside], axis=1)
    assert np.median(error) < 0.08 * (whole.box[2] - whole.box[0]), np.median(error)
    monkeypatch.setattr(mp, "MIRRORED_RETRY", 0.0)  # the repeated edge alone: the premise
    assert landmarker.predict(frame, [cut]).presence[0] < 0.5

"""Faces found late, followed back through the frames before (workflow/backfill.py) and swapped into them as those
frames are finished (workflow/chunks.py `processed`)."""
from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import cv2
import numpy as np
import pytest

from conftest import astronaut_photo
from facefusion_batch.faces.types import Face
from facefusion_batch.workflow import backfill
from facefusion_batch.workflow.backfill import BACKFILL, History, depth, likeness
from facefusion_batch.workflow.chunks import processed

SIZE = 40  # the face's box


def _texture(seed: int, height: int, width: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    smooth = cv2.GaussianBlur(rng.integers(0, 255, (height, width, 3), dtype=np.uint8).astype(np.float32), (0, 0), 3.0)
    return cv2.normalize(smooth, None, 0, 255, cv2.NORM_MINMAX).astype(np.uint8)  # as smooth as a face, in contrast


BACKDROP = _texture(1, 240, 420)
FACE = _texture(2, SIZE, SIZE)
OTHER = _texture(3, SIZE, SIZE)


def _frame(x: float, y: float = 100, pattern: np.ndarray = FACE, backdrop: np.ndarray = BACKDROP) -> np.ndarray:
    """A 320 x 240 window of the backdrop with `pattern` pasted at (x, y), cut by the frame's edge where it reaches
    beyond it."""
    frame = backdrop[:, :320].copy()
    left, right = int(round(x)), int(round(x)) + SIZE
    inside = slice(max(0, left), min(320, right))
    if inside.start < inside.stop:
        frame[int(y):int(y) + SIZE, inside] = pattern[:, inside.start - left:inside.stop - left]
    return frame


def _face(x: float, y: float = 100, memo: dict | None = None) -> Face:
    box = np.array([x, y, x + SIZE, y + SIZE], np.float32)
    kps = np.array([[x + 12, y + 15], [x + 28, y + 15], [x + 20, y + 22], [x + 14, y + 30], [x + 26, y + 30]],
                   np.float32)
    return Face(box=box, score=0.9, kps=kps, memo={} if memo is None else memo, own_depth=0.25)


def _no_refit(frame, predicted):
    return []


def _play(frames: list[np.ndarray], chosen: list[list[Face]], cuts: tuple[int, ...] = (), exclusive: bool = False,
          refit=_no_refit) -> dict[int, list[tuple[int, Face]]]:
    history = History()
    return {index: history.fills(index, frame, faces, index in cuts, exclusive, refit)
            for index, (frame, faces) in enumerate(zip(frames, chosen))}


def _filled(fills: dict[int, list[tuple[int, Face]]]) -> list[int]:
    """The frames something was filled into, over all turns, as found (nearest the face's first frame first)."""
    return [at for turn in sorted(fills) for at, _ in fills[turn]]


def _found_at(first: int, xs: list[float], memo: dict) -> list[list[Face]]:
    """A track swapped from frame `first` on (nothing chosen before)."""
    return [[] for _ in range(first)] + [[_face(x, memo=memo)] for x in xs[first:]]


LATE = 8
CONFIRMED = LATE + backfill.CONFIRM  # frames enough for a track found on frame LATE to be followed back


def test_a_face_found_late_is_followed_back_to_its_first_frame():
    xs = [60 + 3 * i for i in range(CONFIRMED + 2)]  # moving 3 px a frame over a still backdrop
    fills = _play([_frame(x) for x in xs], _found_at(LATE, xs, {}))
    assert _filled(fills) == list(range(LATE - 1, -1, -1))
    assert [turn for turn, found in fills.items() if found] == [CONFIRMED - 1]  # once confirmed
    for at, face in fills[CONFIRMED - 1]:
        assert abs(face.box[0] - xs[at]) < 2 and abs(face.box[1] - 100) < 2  # within 5 % of its size
        assert face.memo is None and not face.leave and face.own_depth == 0.25  # decided on its frame, as deep
        assert face.motion[0] > 2  # it moved right since the frame before


def test_a_face_swapped_on_fewer_frames_than_confirm_is_not_followed_back():
    # A false detection on the wall for a few frames: its swap is not made longer.
    xs = [60.0] * (CONFIRMED + 2)
    short = _found_at(LATE, xs, {})
    for index in range(CONFIRMED - 1, len(xs)):
        short[index] = []
    assert _filled(_play([_frame(x) for x in xs], short)) == []


def test_the_way_back_ends_at_a_cut_and_at_a_face_chosen_there():
    xs = [60 + 2 * i for i in range(CONFIRMED)]
    frames = [_frame(x) for x in xs]
    chosen = _found_at(LATE, xs, {})
    assert _filled(_play(frames, chosen, cuts=(5,))) == [7, 6, 5]  # frame 5 starts the shot
    assert _filled(_play(frames, chosen, cuts=(LATE,))) == []  # found on a shot's first frame
    # Another face's place on frame 4 (a face chosen there, here one left as it is): not this face's.
    taken = [list(c) for c in chosen]
    taken[4] = [dataclasses.replace(_face(xs[4] + 5, memo={}), leave=True)]
    assert _filled(_play(frames, taken)) == [7, 6, 5]
    # Mode `one`: a frame with any face chosen ends it, wherever that face is.
    elsewhere = [list(c) for c in chosen]
    elsewhere[6] = [dataclasses.replace(_face(250, 20, memo={}), leave=True)]
    assert _filled(_play(frames, elsewhere, exclusive=True)) == [7]
    assert _filled(_play(frames, elsewhere)) == list(range(7, -1, -1))


def test_the_way_back_ends_where_the_face_is_another_picture_or_mostly_out_of_frame():
    xs = [60 + 2 * i for i in range(CONFIRMED)]
    # Before frame 5 something else is there (another face, a hand): the trace must not carry the swap onto it.
    frames = [_frame(x, pattern=OTHER if i < 5 else FACE) for i, x in enumerate(xs)]
    assert _filled(_play(frames, _found_at(LATE, xs, {}))) == [7, 6, 5]
    # Coming in across the right edge, 4 px a frame: followed back while BACK_IN_FRAME of it is in the picture.
    xs = [304 - 4 * i for i in range(CONFIRMED)]  # in frame: 0.4, 0.5, ...
    assert (320 - xs[0]) / SIZE < backfill.BACK_IN_FRAME <= (320 - xs[1]) / SIZE
    assert _filled(_play([_frame(x) for x in xs], _found_at(LATE, xs, {}))) == [7, 6, 5, 4, 3, 2, 1]


def test_a_track_lost_and_found_again_is_filled_where_it_was_lost_but_not_where_it_was_left():
    xs = [60 + 2 * i for i in range(4 + backfill.CONFIRM)]
    frames = [_frame(x) for x in xs]
    memo: dict = {}
    chosen = [[_face(x, memo=memo)] for x in xs]
    chosen[3] = []  # lost on one frame, found again on the next: that frame is filled, and nothing before it
    assert _filled(_play(frames, chosen)) == [3]
    chosen[3] = [dataclasses.replace(_face(xs[3], memo=memo), leave=True)]  # settled as left (turned, too faint)
    assert _filled(_play(frames, chosen)) == []


def test_a_refit_is_taken_only_where_the_face_is_wholly_in_the_picture_and_agrees():
    xs = [60 + 2 * i for i in range(3 + backfill.CONFIRM)]
    asked = []

    def refit(frame, predicted):
        asked.append(predicted[0])
        assert predicted[0].memo is None
        return [_face(float(predicted[0].box[0]) + 1.0, memo=None)]

    fills = _play([_frame(x) for x in xs], _found_at(3, xs, {}), refit=refit)
    assert len(asked) == 3 and _filled(fills) == [2, 1, 0]
    assert abs(fills[2 + backfill.CONFIRM][0][1].box[0] - (xs[2] + 1.0)) < 1.5  # the fit's place


def test_likeness_compares_what_is_in_both_pictures():
    frame = _frame(100)
    assert likeness(frame, _face(100).box, _frame(104), _face(104).box) > 0.95
    assert likeness(frame, _face(100).box, _frame(104, pattern=OTHER), _face(104).box) < 0.5
    assert likeness(frame, _face(100).box, frame, _face(310).box) == 0.0  # too little of it in the picture


def test_frames_are_held_back_as_deep_as_memory_allows():
    assert depth((360, 640, 3)) == BACKFILL
    assert 0 < depth((2160, 3840, 3)) < BACKFILL


class _Counter:
    """A frame function whose frame 5 finds a face to fill into frames 2-4 and frame 7 carries one on to itself;
    records what `finish` is given."""

    def __init__(self) -> None:
        self.finished: list[tuple[int, int]] = []

    def __call__(self, index: int) -> tuple[np.ndarray, int, list[tuple[int, Face]]]:
        frame = np.full((8, 8, 3), index, np.uint8)
        return frame, 0, {5: [(at, _face(0)) for at in (4, 3, 2)], 7: [(7, _face(0))]}.get(index, [])

    def finish(self, frame: np.ndarray, faces: int, fills: list[Face]) -> tuple[np.ndarray, int]:
        self.finished.append((int(frame[0, 0, 0]), len(fills)))
        return frame, faces + len(fills)


def test_every_frame_is_finished_in_order_with_the_faces_found_after_it_or_carried_on_to_it():
    counter = _Counter()
    with ThreadPoolExecutor(2) as pool:
        out = [(int(f[0, 0, 0]), n) for f, n in processed(pool, counter, counter, ((i,) for i in range(10)), 3, 0)]
    assert [i for i, _ in out] == list(range(10))
    assert [n for _, n in out] == [0, 0, 1, 1, 1, 0, 0, 1, 0, 0]


def test_a_confirmed_track_given_up_on_is_carried_on_while_its_face_is_there():
    c = backfill.CONFIRM
    xs = [60 + 3 * i for i in range(c + backfill.ONWARD + 4)]
    memo: dict = {}
    chosen = [[_face(x, memo=memo)] for x in xs[:c]] + [[] for _ in xs[c:]]
    fills = _play([_frame(x) for x in xs], chosen)
    carried = [i for i in range(len(xs)) if fills[i]]
    assert carried == list(range(c, c + backfill.ONWARD))  # at most ONWARD frames since it was last chosen
    for i in carried:
        (at, face), = fills[i]
        # ... within 5 % of its size, and 0.1 px a frame carried
        assert at == i and abs(face.box[0] - xs[i]) < 2 + 0.1 * (i - c) and face.memo is None and face.own_depth == 0.25
    # A track swapped on fewer than CONFIRM frames in a row (a false detection, a frame or two) is not carried on.
    short = [[_face(x, memo=memo)] for x in xs[:c - 1]] + [[] for _ in xs[c - 1:]]
    assert not any(_play([_frame(x) for x in xs], short).values())
    # ... nor onto what replaced it, past half out of the picture, across a cut, after a frame it was left on, or in
    # mode `one` onto a frame with a face chosen.
    frames = [_frame(x, pattern=OTHER if i >= c + 2 else FACE) for i, x in enumerate(xs)]
    assert [i for i, f in _play(frames, chosen).items() if f] == [c, c + 1]
    edge = [282 + 8 * (i - c) for i in range(c + 8)]  # from frame c on: in frame 0.95, 0.75, 0.55, 0.35
    frames = [_frame(x) for x in edge]
    leaving = [[_face(x, memo=memo)] for x in edge[:c]] + [[] for _ in edge[c:]]
    assert [i for i, f in _play(frames, leaving).items() if f] == [c, c + 1, c + 2]
    assert not any(_play(frames, leaving, cuts=(c,)).values())
    left = [list(f) for f in chosen]
    left[c - 1] = [dataclasses.replace(_face(xs[c - 1], memo=memo), leave=True)]
    assert not any(_play([_frame(x) for x in xs], left).values())
    # A cut the tracker did not see (not flagged): another picture around a patch like the face ends it too.
    elsewhere = _texture(4, 240, 420)
    frames = [_frame(x, backdrop=BACKDROP if i < c + 2 else elsewhere) for i, x in enumerate(xs)]
    assert [i for i, f in _play(frames, chosen).items() if f] == [c, c + 1]
    other = [list(f) for f in chosen]
    other[c] = [_face(250, 20, memo={})]
    assert [i for i, f in _play([_frame(x) for x in xs], other, exclusive=True).items() if f] == []



# The astronaut's real face (skimage's photo, 512 x 512) seen through a camera: (x, y) of the photo at the frame's
# centre, `scale` photo pixels to frame pixels, on a 320 x 240 frame.
ASTRONAUT_FACE = np.array([180.0, 70.0, 280.0, 190.0])  # its box on the photo


@pytest.fixture(scope="module")
def astronaut() -> np.ndarray:
    return astronaut_photo()


def _camera(photo: np.ndarray, scale: float, x: float = 220.0, y: float = 130.0) -> tuple[np.ndarray, np.ndarray]:
    """The frame and the face's box on it."""
    matrix = np.array([[scale, 0, 160 - scale * x], [0, scale, 120 - scale * y]])
    frame = cv2.warpAffine(photo, matrix, (320, 240), flags=cv2.INTER_AREA, borderMode=cv2.BORDER_REFLECT)
    return frame, ASTRONAUT_FACE * scale + np.tile(matrix[:, 2], 2)


def _centre(box: np.ndarray) -> np.ndarray:
    return (box[:2] + box[2:]) / 2


def test_a_face_is_matched_to_a_tenth_of_a_pixel_moved_and_grown(astronaut):
    for scale, growth, x in ((0.8, 1.0, 220.0), (0.8, 1.0, 219.3), (0.63, 1.0, 221.7), (0.8, 1.04, 219.6),
                             (0.7, 0.96, 220.4), (1.3, 1.03, 220.0)):
        frame, box = _camera(astronaut, scale)
        later, there = _camera(astronaut, scale * growth, x)
        move = backfill.matched(frame, box, later, growth)
        # scaled template and window sizes rounded each its own way put a still face up to 1.2 px off
        assert np.abs(np.array(move) - (_centre(there) - _centre(box))).max() < 0.2, (scale, growth, x)


def test_a_carried_face_grows_and_shrinks_with_a_zoom(astronaut):
    c = backfill.CONFIRM
    for rate in (1.03, 0.96):
        shots = [_camera(astronaut, 0.6 * rate ** i, 220 + 0.5 * i) for i in range(c + backfill.ONWARD)]
        memo: dict = {}
        chosen = [[dataclasses.replace(_face(0, memo=memo), box=box.astype(np.float32))] for _, box in shots[:c]]
        fills = _play([frame for frame, _ in shots], chosen + [[] for _ in shots[c:]])
        assert [i for i, f in fills.items() if f] == list(range(c, c + backfill.ONWARD)), rate
        for i in range(c, c + backfill.ONWARD):
            (_, face), = fills[i]
            truth = shots[i][1]
            # carried at its size, it was 20 % too large 6 frames into a zoom out of 3 % a frame
            assert abs((face.box[2] - face.box[0]) / (truth[2] - truth[0]) - 1) < 0.02, (rate, i)
            assert np.abs(_centre(face.box) - _centre(truth)).max() < 0.05 * (truth[2] - truth[0]), (rate, i)
    # A picture grown by more than ZOOM_MOST from one frame to the next (a cut to a closer shot) is no zoom to follow.
    shots = [_camera(astronaut, 0.6 if i < c + 2 else 0.6 * (1 + 2 * backfill.ZOOM_MOST)) for i in range(c + 6)]
    memo = {}
    chosen = [[dataclasses.replace(_face(0, memo=memo), box=box.astype(np.float32))] for _, box in shots[:c]]
    fills = _play([frame for frame, _ in shots], chosen + [[] for _ in shots[c:]])
    assert [i for i, f in fills.items() if f] == [c, c + 1]


def test_a_small_soft_face_is_matched_without_a_bias_at_any_size_near_the_match_width(astronaut):
    # Boxes of 27-35 px around MATCH_WIDTH (scaled by 0.9-1), set off by fractions of a pixel: the template and the
    # window sampled on one grid. Scaled each on its own, such a face was found up to 0.26 px off a frame, and
    # followed back 13 frames it drifted off its face (`seventh`'s far crowd).
    worst = 0.0
    for scale in (0.27, 0.3, 0.324, 0.33, 0.35):
        for move in (0.0, 0.4, -0.7):
            for off in (0.0, 0.31, 0.77):
                frame, box = _camera(astronaut, scale)
                later, there = _camera(astronaut, scale, 220 + move / scale)
                frame, later = (cv2.GaussianBlur(f, (0, 0), 1.0) for f in (frame, later))
                found = backfill.matched(frame, box + off, later)
                worst = max(worst, float(np.abs(np.array(found) - (_centre(there) - _centre(box))).max()))
    assert worst < 0.1, worst

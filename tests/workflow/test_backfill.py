"""Faces found late, followed back through the frames before (workflow/backfill.py) and swapped into them as those
frames are finished (workflow/chunks.py `processed`)."""
from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import cv2
import numpy as np

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


def test_a_face_found_late_is_followed_back_to_its_first_frame():
    xs = [60 + 3 * i for i in range(12)]  # moving 3 px a frame over a still backdrop
    frames = [_frame(x) for x in xs]
    memo: dict = {}
    chosen = [[] for _ in range(8)] + [[_face(x, memo=memo)] for x in xs[8:]]
    fills = _play(frames, chosen)
    assert [at for at, _ in fills[8]] == [7, 6, 5, 4, 3, 2, 1, 0]
    for at, face in fills[8]:
        assert abs(face.box[0] - xs[at]) < 2 and abs(face.box[1] - 100) < 2  # within 5 % of its size
        assert face.memo is None and not face.leave and face.own_depth == 0.25  # decided on its frame, as deep
        assert face.motion[0] > 2  # it moved right since the frame before
    assert all(not fills[i] for i in range(9, 12))  # the track goes on: nothing more to fill


def test_the_way_back_ends_at_a_cut_and_at_a_face_chosen_there():
    xs = [60 + 2 * i for i in range(10)]
    frames = [_frame(x) for x in xs]
    memo: dict = {}
    chosen = [[] for _ in range(6)] + [[_face(x, memo=memo)] for x in xs[6:]]
    assert [at for at, _ in _play(frames, chosen, cuts=(3,))[6]] == [5, 4, 3]  # frame 3 starts the shot
    # Another face's place on frame 2 (a face chosen there, here one left as it is): not this face's.
    taken = [list(c) for c in chosen]
    taken[2] = [dataclasses.replace(_face(xs[2] + 5, memo={}), leave=True)]
    assert [at for at, _ in _play(frames, taken)[6]] == [5, 4, 3]
    # Mode `one`: a frame with any face chosen ends it, wherever that face is.
    elsewhere = [list(c) for c in chosen]
    elsewhere[4] = [dataclasses.replace(_face(250, 20, memo={}), leave=True)]
    assert [at for at, _ in _play(frames, elsewhere, exclusive=True)[6]] == [5]
    assert [at for at, _ in _play(frames, elsewhere)[6]] == [5, 4, 3, 2, 1, 0]


def test_the_way_back_ends_where_the_face_is_another_picture_or_mostly_out_of_frame():
    xs = [60 + 2 * i for i in range(10)]
    memo: dict = {}
    chosen = [[] for _ in range(6)] + [[_face(x, memo=memo)] for x in xs[6:]]
    # Before frame 3 something else is there (another face, a hand): the trace must not carry the swap onto it.
    frames = [_frame(x, pattern=OTHER if i < 3 else FACE) for i, x in enumerate(xs)]
    assert [at for at, _ in _play(frames, chosen)[6]] == [5, 4, 3]
    # Coming in across the right edge, 4 px a frame: followed back while half of it is in the picture.
    xs = [302 - 4 * i for i in range(10)]  # in frame: 0.45, 0.55, ...
    frames = [_frame(x) for x in xs]
    chosen = [[] for _ in range(7)] + [[_face(x, memo=memo)] for x in xs[7:]]
    assert [at for at, _ in _play(frames, chosen)[7]] == [6, 5, 4, 3, 2, 1]


def test_no_fill_for_a_track_chosen_on_the_frame_before_or_a_face_left():
    xs = [60 + 2 * i for i in range(8)]
    frames = [_frame(x) for x in xs]
    memo: dict = {}
    chosen = [[_face(x, memo=memo)] for x in xs]
    chosen[3] = []  # lost on one frame, found again on the next: carried on to that frame, nothing else filled
    fills = _play(frames, chosen)
    assert [at for at, _ in fills[3]] == [3] and all(not fills[i] for i in range(8) if i != 3)
    left = [[] for _ in range(4)] + [[_face(x, memo=memo)] for x in xs[4:]]
    left[4] = [Face(**{**left[4][0].__dict__, "leave": True})]  # settled as left (turned, too faint)
    fills = _play(frames, left)
    assert not fills[4] and not fills[5]  # its next frame follows one where it was chosen (left)


def test_a_refit_is_taken_only_where_the_face_is_wholly_in_the_picture_and_agrees():
    xs = [60 + 2 * i for i in range(6)]
    frames = [_frame(x) for x in xs]
    memo: dict = {}
    chosen = [[] for _ in range(3)] + [[_face(x, memo=memo)] for x in xs[3:]]
    asked = []

    def refit(frame, predicted):
        asked.append(predicted[0])
        assert predicted[0].memo is None
        return [_face(float(predicted[0].box[0]) + 1.0, memo=None)]

    fills = _play(frames, chosen, refit=refit)[3]
    assert len(asked) == 3 and [at for at, _ in fills] == [2, 1, 0]
    assert abs(fills[0][1].box[0] - (xs[2] + 1.0)) < 1.5  # the fit's place


def test_likeness_compares_what_is_in_both_pictures():
    frame = _frame(100)
    assert likeness(frame, _face(100).box, _frame(104), _face(104).box) > 0.95
    assert likeness(frame, _face(100).box, _frame(104, pattern=OTHER), _face(104).box) < 0.5
    assert likeness(frame, _face(100).box, frame, _face(310).box) == 0.0  # too little of it in the picture


def test_frames_are_held_back_as_deep_as_memory_allows():
    assert depth((360, 640, 3)) == BACKFILL
    assert 0 < depth((2160, 3840, 3)) < BACKFILL


class _Counter:
    """A frame function whose frame 5 finds a face to fill into frames 2-4; records what `finish` is given."""

    def __init__(self) -> None:
        self.finished: list[tuple[int, int]] = []

    def __call__(self, index: int) -> tuple[np.ndarray, int, list[tuple[int, Face]]]:
        frame = np.full((8, 8, 3), index, np.uint8)
        return frame, 0, [(at, _face(0)) for at in (4, 3, 2)] if index == 5 else []

    def finish(self, frame: np.ndarray, faces: int, fills: list[Face]) -> tuple[np.ndarray, int]:
        self.finished.append((int(frame[0, 0, 0]), len(fills)))
        return frame, faces + len(fills)


def test_every_frame_is_finished_in_order_with_the_faces_found_after_it():
    counter = _Counter()
    with ThreadPoolExecutor(2) as pool:
        out = [(int(f[0, 0, 0]), n) for f, n in processed(pool, counter, counter, ((i,) for i in range(10)), 3, 0)]
    assert [i for i, _ in out] == list(range(10))
    assert [n for _, n in out] == [0, 0, 1, 1, 1, 0, 0, 0, 0, 0]


def test_a_track_given_up_on_is_carried_on_while_its_face_is_there():
    xs = [60 + 3 * i for i in range(16)]
    memo: dict = {}
    chosen = [[_face(x, memo=memo)] for x in xs[:4]] + [[] for _ in xs[4:]]
    fills = _play([_frame(x) for x in xs], chosen)
    carried = [i for i in range(16) if fills[i]]
    assert carried == list(range(4, 4 + backfill.ONWARD))  # at most ONWARD frames since it was last chosen
    for i in carried:
        (at, face), = fills[i]
        assert at == i and abs(face.box[0] - xs[i]) < 2 and face.memo is None and face.own_depth == 0.25
    # ... not onto what replaced it, not past half out of the picture, not across a cut, not after a left frame.
    frames = [_frame(x, pattern=OTHER if i >= 6 else FACE) for i, x in enumerate(xs)]
    assert [i for i, f in _play(frames, chosen).items() if f] == [4, 5]
    xs = [250 + 8 * i for i in range(10)]  # leaving across the right edge: from frame 4 in frame 0.95, 0.75, 0.55, 0.35
    chosen = [[_face(x, memo=memo)] for x in xs[:2]] + [[] for _ in xs[2:]]
    assert [i for i, f in _play([_frame(x) for x in xs], chosen).items() if f] == [2, 3, 4, 5, 6]
    chosen = [[_face(x, memo=memo)] for x in xs[:2]] + [[] for _ in xs[2:]]
    assert not any(_play([_frame(x) for x in xs], chosen, cuts=(2,)).values())
    left = [[_face(60, memo=memo)], [dataclasses.replace(_face(63, memo=memo), leave=True)], [], []]
    assert not any(_play([_frame(60 + 3 * i) for i in range(4)], left).values())

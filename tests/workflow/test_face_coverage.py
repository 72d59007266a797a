"""Every visible face swapped, on real faces through the frame processor (offline engine, frames in order as
a video's are): faces sliding off each edge of the frame, and faces of a few dozen pixels.

A face-frame counts as swapped as the quality benchmark counts it (docs/quality.md): mean |out - in| of at
least 5 grey levels inside the face's true box (the part of it inside the frame).
"""
from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
from skimage import data

from conftest import hopper_processor, run_video
from facefusion_batch.offline.mediapipe import _overlap
from facefusion_batch.workflow.analysis import SWEEP, SWEEP_MOVING
from facefusion_batch.workflow.processor import FrameProcessor

SIZE = (640, 360)
SWAPPED = 5.0


@pytest.fixture(scope="module")
def processor(tmp_path_factory) -> FrameProcessor:
    with hopper_processor(tmp_path_factory.mktemp("coverage")) as made:
        yield made


def _photo(image: np.ndarray, processor: FrameProcessor) -> tuple[np.ndarray, np.ndarray]:
    """A real photo and its face's true box (the detector's, on the photo at full size)."""
    (face,) = processor.engine.detect(image)
    return image, face.box.astype(np.float64)


def _backdrop(width: int, height: int) -> np.ndarray:
    rng = np.random.default_rng(3)
    coarse = rng.integers(30, 220, (height // 8 + 1, width // 8 + 1, 3), dtype=np.uint8)
    return cv2.GaussianBlur(cv2.resize(coarse, (width, height), interpolation=cv2.INTER_CUBIC), (0, 0), 2)


def _place(canvas: np.ndarray, photo: np.ndarray, box: np.ndarray, size: float, centre: tuple[float, float]
           ) -> np.ndarray:
    """Draw the photo scaled so its face is `size` px wide with the face's centre at `centre` (which may lie
    outside the canvas); the face's true box in canvas pixels."""
    scale = size / (box[2] - box[0])
    small = cv2.resize(photo, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    box = box * scale
    shift = np.array([centre[0] - (box[0] + box[2]) / 2, centre[1] - (box[1] + box[3]) / 2])
    matrix = np.array([[1.0, 0, shift[0]], [0, 1.0, shift[1]]])
    height, width = canvas.shape[:2]
    drawn = cv2.warpAffine(small, matrix, (width, height))
    inside = cv2.warpAffine(np.full(small.shape[:2], 255, np.uint8), matrix, (width, height)) == 255
    canvas[inside] = drawn[inside]
    return box + np.tile(shift, 2)


def _grey(image: np.ndarray) -> np.ndarray:
    """A black-and-white copy (3 channels)."""
    return cv2.cvtColor(cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)


def _strength(before: np.ndarray, after: np.ndarray, box: np.ndarray) -> float:
    height, width = before.shape[:2]
    x1, y1 = max(0, int(round(box[0]))), max(0, int(round(box[1])))
    x2, y2 = min(width, int(round(box[2]))), min(height, int(round(box[3])))
    if x2 <= x1 or y2 <= y1:
        return 0.0
    return float(np.abs(after[y1:y2, x1:x2].astype(int) - before[y1:y2, x1:x2].astype(int)).mean())


def _inside(box: np.ndarray) -> float:
    """The share of a box inside the frame."""
    width = max(0.0, min(box[2], SIZE[0]) - max(box[0], 0.0))
    height = max(0.0, min(box[3], SIZE[1]) - max(box[1], 0.0))
    return width * height / ((box[2] - box[0]) * (box[3] - box[1]))




@pytest.mark.parametrize("way", ["leaving", "coming"])
@pytest.mark.parametrize("edge", ["left", "right", "top", "bottom"])
def test_a_face_cut_by_the_edge_of_the_frame_is_swapped_while_much_of_it_is_in_frame(processor, edge, way):
    # The astronaut's 100 px face slides off one edge at 12 px a frame, or comes in across it. The detectors
    # give up on it once the edge cuts ~20 % of its box: leaving, its track is looked for (the mesh fitted
    # where it should be); coming in, it is found on the frame mirrored out across its edges.
    photo, box = _photo(np.ascontiguousarray(data.astronaut()[:, :, ::-1]), processor)
    backdrop = _backdrop(*SIZE)
    direction = {"left": (-1, 0), "right": (1, 0), "top": (0, -1), "bottom": (0, 1)}[edge]
    middle = (SIZE[0] / 2, SIZE[1] / 2)
    reach = (SIZE[0] if direction[0] else SIZE[1]) / 2
    frames, boxes = [], []
    for step in range(math.ceil((reach + 10) / 12)):
        offset = reach - 70 + 12 * step
        canvas = backdrop.copy()
        boxes.append(_place(canvas, photo, box, 100, (middle[0] + direction[0] * offset,
                                                      middle[1] + direction[1] * offset)))
        frames.append(canvas)
    if way == "coming":
        frames, boxes = frames[::-1], boxes[::-1]
    out = run_video(processor, frames)
    seen = [(round(_inside(b), 2), round(_strength(f, o, b), 1)) for f, o, b in zip(frames, out, boxes)]
    # Coming in, a face is found once about half of it is in frame (the chin cut off is the hardest).
    least = 0.45 if way == "leaving" else 0.55
    assert any(inside < least for inside, _ in seen), seen  # the clip reaches past what is checked
    assert all(strength >= SWAPPED for inside, strength in seen if inside >= least), [s for s in seen if s[0] > 0]
    for frame, done, face in zip(frames, out, boxes):  # nothing swapped beside the face (a stale track)
        changed = np.abs(done.astype(int) - frame.astype(int)).max(axis=-1) > 8
        x1, y1, x2, y2 = face
        changed[max(0, int(y1) - 40):max(0, int(y2) + 40), max(0, int(x1) - 40):max(0, int(x2) + 40)] = False
        assert changed.sum() < 30


def test_faces_of_a_few_dozen_pixels_are_found_and_swapped(processor):
    # Faces of 36 px on a 640 x 360 frame: the full-range model scores them below its threshold on the whole
    # frame (they are 11 px of its input) and finds them on a closer view. (Grace Hopper is the source.)
    photo, box = _photo(np.ascontiguousarray(data.astronaut()[:, :, ::-1]), processor)
    frame = _backdrop(*SIZE)
    boxes = [_place(frame, photo, box, 36, centre)
             for centre in ((100, 120), (260, 240), (420, 110), (540, 250), (160, 290))]
    frames = [frame] * 3  # a still shot: the first frame detected, the others tracked from it
    out = run_video(processor, frames)
    strengths = [[round(_strength(frame, o, b), 1) for b in boxes] for o in out]
    assert all(s >= SWAPPED for row in strengths for s in row), strengths
    background = np.abs(out[0].astype(int) - frame.astype(int)).mean(axis=-1)
    for x1, y1, x2, y2 in boxes:
        background[max(0, int(y1) - 20):int(y2) + 20, max(0, int(x1) - 20):int(x2) + 20] = 0
    assert background.max() == 0  # nothing else was taken for a face


@pytest.mark.parametrize("size", [24, 30])
def test_faces_far_below_the_whole_frame_detectors_reach_are_found_by_the_sweep_and_kept(processor, size):
    # Faces of 24-30 px (about 1/25 of the frame's long side) drifting over 30 frames: the whole-frame
    # detectors miss them even on a closer view of their low-scored boxes; the sweep over tiles of the frame
    # finds them on the first frame, and their tracks keep them swapped on every frame until the next sweep.
    photo, box = _photo(np.ascontiguousarray(data.astronaut()[:, :, ::-1]), processor)
    centres = ((100, 120), (260, 240), (420, 110), (540, 250), (160, 290))
    rng = np.random.default_rng(size)
    frames, boxes = [], []
    for index in range(30):
        frame = _backdrop(*SIZE)
        boxes.append([_place(frame, photo, box, size, (x + 0.7 * index, y + 0.3 * index)) for x, y in centres])
        frames.append(np.clip(frame + rng.normal(0, 1.5, frame.shape), 0, 255).astype(np.uint8))
    assert len(processor.engine.detect(frames[0])) < len(centres), "premise: the whole-frame detection misses some"
    out = run_video(processor, frames)
    strengths = [[round(_strength(f, o, b), 1) for b in faces] for f, o, faces in zip(frames, out, boxes)]
    assert all(s >= SWAPPED for row in strengths for s in row), strengths
    for frame, done, faces in zip(frames, out, boxes):  # nothing else taken for a face
        changed = np.abs(done.astype(int) - frame.astype(int)).max(axis=-1) > 8
        for x1, y1, x2, y2 in faces:
            changed[max(0, int(y1) - 12):int(y2) + 12, max(0, int(x1) - 12):int(x2) + 12] = False
        assert changed.sum() == 0


def test_small_faces_in_a_picture_are_found_by_the_sweep(processor):
    photo, box = _photo(np.ascontiguousarray(data.astronaut()[:, :, ::-1]), processor)
    frame = _backdrop(*SIZE)
    boxes = [_place(frame, photo, box, 26, centre) for centre in ((100, 120), (300, 240), (520, 110))]
    assert len(processor.engine.detect(frame)) < len(boxes), "premise: the whole-frame detection misses some"
    out, count = processor.frame(frame.copy())
    assert count == len(boxes) and all(_strength(frame, out, b) >= SWAPPED for b in boxes)


@pytest.mark.parametrize("edge", ["left", "right", "top", "bottom", "top-left", "top-right", "bottom-left",
                                  "bottom-right"])
def test_a_60_px_face_coming_in_across_an_edge_or_a_corner_is_swapped_from_half_in_frame_on(processor, edge):
    # The camera pans (the backdrop moves with the face) so that a 60 px face comes in across an edge or a
    # corner, over 24 frames, until it is whole near that edge. On the mirrored view (shrunk to 192 px) it is
    # ~14 px and scored low: looked at again closer at full resolution it is found from about a third in frame,
    # and its track, once found, is looked for on every frame after (no frame dropped where the detectors blink).
    photo, box = _photo(np.ascontiguousarray(data.astronaut()[:, :, ::-1]), processor)
    size, (width, height) = 60, SIZE
    dx = -1 if "left" in edge else 1 if "right" in edge else 0
    dy = -1 if "top" in edge else 1 if "bottom" in edge else 0
    wall = _backdrop(3 * width, 3 * height)
    start = (width / 2 + dx * (width / 2 + size / 2), height / 2 + dy * (height / 2 + size / 2))  # just outside
    end = (width / 2 + dx * (width / 2 - 0.6 * size), height / 2 + dy * (height / 2 - 0.6 * size))  # whole
    frames, boxes = [], []
    for step in range(24):
        t = step / 23
        centre = (start[0] + (end[0] - start[0]) * t, start[1] + (end[1] - start[1]) * t)
        ox, oy = round(start[0] - centre[0]), round(start[1] - centre[1])
        canvas = wall[height + oy:2 * height + oy, width + ox:2 * width + ox].copy()
        boxes.append(_place(canvas, photo, box, size, centre))
        frames.append(canvas)
    out = run_video(processor, frames)
    seen = [(round(_inside(b), 2), round(_strength(f, o, b), 1)) for f, o, b in zip(frames, out, boxes)]
    assert all(strength >= SWAPPED for inside, strength in seen if inside >= 0.5), seen
    for frame, done, face in zip(frames, out, boxes):  # nothing swapped beside the face
        changed = np.abs(done.astype(int) - frame.astype(int)).max(axis=-1) > 8
        x1, y1, x2, y2 = face
        changed[max(0, int(y1) - 30):max(0, int(y2) + 30), max(0, int(x1) - 30):max(0, int(x2) + 30)] = False
        assert changed.sum() < 30


def test_a_small_face_that_comes_into_a_still_shot_is_found_by_the_sweep_where_the_picture_changed(processor):
    # A still shot (the first sweep finds nothing); from frame 10 a 23 px face moves in the top-right quarter,
    # far below what the whole-frame detectors find. The sweep looks again, only where the picture changed since
    # the first one, SWEEP frames on: it finds the face there, and the face's track keeps it swapped.
    photo, box = _photo(np.ascontiguousarray(data.astronaut()[:, :, ::-1]), processor)
    backdrop = _backdrop(*SIZE)
    rng = np.random.default_rng(5)
    frames, boxes = [], []
    for index in range(SWEEP + 12):
        frame = backdrop.copy()
        boxes.append(_place(frame, photo, box, 23, (480 + 0.5 * index, 90)) if index >= 10 else None)
        frames.append(np.clip(frame + rng.normal(0, 1.5, frame.shape), 0, 255).astype(np.uint8))
    assert len(processor.engine.detect(frames[-1])) == 0, "premise: the whole-frame detection misses it"
    out = run_video(processor, frames)
    strengths = [round(_strength(f, o, b), 1) for f, o, b in zip(frames, out, boxes) if b is not None]
    assert all(s >= SWAPPED for s in strengths[SWEEP - 10 + 1:]), strengths


def test_a_small_face_that_comes_in_while_the_camera_pans_is_found_by_the_next_sweep_of_a_moving_shot(processor):
    # Black-and-white footage: the camera pans 8 px a frame along a wall, and a 30 px face on it comes in across
    # the right edge from frame 3 on. The whole-frame detectors do not find it (on a grey picture they miss faces
    # of 26-34 px), the sweep's tiles do. The picture changes everywhere: the sweep looks again SWEEP_MOVING
    # frames after the first (not SWEEP), finds the face, and its track keeps it swapped.
    photo, box = _photo(_grey(data.astronaut()[:, :, ::-1]), processor)
    (width, height), step = SIZE, 8
    count = SWEEP + 4
    wall = _grey(_backdrop(width + step * count + 40, height))
    face = _place(wall, photo, box, 30, (width + 40, 90))
    rng = np.random.default_rng(9)
    frames, boxes = [], []
    for index in range(count):
        x = step * index
        frames.append(np.clip(wall[:, x:x + width] + rng.normal(0, 1.5, (height, width, 3)), 0, 255).astype(np.uint8))
        boxes.append(face - (x, 0, x, 0))
    assert not any(processor.engine.detect(f) for f in frames[:SWEEP]), "premise: the whole-frame detection misses it"
    assert _inside(boxes[2]) == 0.0 and _inside(boxes[8]) == 1.0 and SWEEP_MOVING < SWEEP
    out = run_video(processor, frames)
    strengths = [round(_strength(f, o, b), 1) for f, o, b in zip(frames, out, boxes)]
    assert all(s >= SWAPPED for s in strengths[SWEEP_MOVING:]), strengths


def test_a_small_face_in_black_and_white_footage_is_found_by_the_sweep_seeing_grey_as_skin(processor):
    # An 18 px face in black-and-white footage: on the sweep's tile the full-range model scores it too low even for
    # a closer look; on the tile seen again with its grey pixels tinted like skin (mediapipe.GREY_CHROMA), found.
    photo, box = _photo(_grey(data.astronaut()[:, :, ::-1]), processor)
    frame = _grey(_backdrop(*SIZE))
    face = _place(frame, photo, box, 18, (330, 150))
    found = processor.engine.sweep(frame, [])
    assert [f.box for f in found if _overlap(f.box, face)], found


@pytest.mark.parametrize("edge", ["left", "right", "top", "bottom"])
def test_a_small_face_the_edge_cuts_is_found_by_the_sweep_on_views_mirrored_out_across_the_edges(processor, edge):
    # A soft 30 px face with 55 % of its box in frame, the rest cut away by the edge, in a still shot: on the mirrored
    # whole frame (shrunk to 192 px) it is 7 px, on the sweep's tiles half a face (both score it 0-0.2); on the
    # sweep's views along the edges, the frame mirrored out across them, its mirror image completes it.
    photo, box = _photo(np.ascontiguousarray(data.astronaut()[:, :, ::-1]), processor)
    size, (width, height) = 30, SIZE
    out_by = 0.45 * size  # the part of the box beyond the edge, in pixels (the box is about square)
    centre = {"left": (size / 2 - out_by, 150), "right": (width - size / 2 + out_by, 200),
              "top": (400, size / 2 - out_by), "bottom": (250, height - size / 2 + out_by)}[edge]
    rng = np.random.default_rng(7)
    backdrop = _backdrop(width, height)
    face = _place(backdrop, photo, box, size, centre)
    backdrop = cv2.GaussianBlur(backdrop, (0, 0), 0.6)  # soft, as a face far from the lens or enlarged
    frames = [np.clip(backdrop + rng.normal(0, 1.5, backdrop.shape), 0, 255).astype(np.uint8) for _ in range(4)]
    out = run_video(processor, frames)
    assert 0.5 <= _inside(face) <= 0.7
    strengths = [round(_strength(f, o, face), 1) for f, o in zip(frames, out)]
    assert all(s >= SWAPPED for s in strengths), strengths
    for frame, done in zip(frames, out):  # nothing swapped beside the face (its mirror image is not a face)
        changed = np.abs(done.astype(int) - frame.astype(int)).max(axis=-1) > 8
        x1, y1, x2, y2 = face
        changed[max(0, int(y1) - 12):max(0, int(y2) + 12), max(0, int(x1) - 12):max(0, int(x2) + 12)] = False
        assert changed.sum() == 0


def test_small_faces_only_the_sweep_finds_stay_swapped_through_a_long_still_shot(processor):
    # 24 px faces in a still shot: the whole-frame detectors miss them, the first sweep finds them, and nothing
    # moves after, so no sweep looks again before SWEEP_FULL frames. The mesh finds them on every frame where
    # their tracks say (refits as sure as a detection keep a track); they were dropped REFIT_SPAN frames after
    # the sweep's reference (from frame ~48), unswapped until the next full sweep.
    photo, box = _photo(np.ascontiguousarray(data.astronaut()[:, :, ::-1]), processor)
    rng = np.random.default_rng(24)
    backdrop = _backdrop(*SIZE)
    boxes = [_place(backdrop, photo, box, 24, centre) for centre in ((100, 120), (420, 110), (160, 290))]
    frames = [np.clip(backdrop + rng.normal(0, 1.5, backdrop.shape), 0, 255).astype(np.uint8) for _ in range(60)]
    assert len(processor.engine.detect(frames[0])) < len(boxes), "premise: the whole-frame detection misses some"
    out = run_video(processor, frames)
    strengths = [[round(_strength(f, o, b), 1) for b in boxes] for f, o in zip(frames, out)]
    assert all(s >= SWAPPED for row in strengths for s in row), strengths

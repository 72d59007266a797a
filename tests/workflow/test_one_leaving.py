"""Mode `one` on a pan that takes its face out of the picture, and the swap of a face the frame's edge cuts, on real
faces through the offline engine (the tune split's `t_group_pan_one`, docs/quality.md).

A face-frame counts as swapped as the quality benchmark counts it: mean |out - in| of at least 5 grey levels
inside the face's true box (its part in frame). Grace Hopper is the source; the faces are the astronaut's.
"""
from __future__ import annotations

import cv2
import numpy as np
import pytest
from skimage import data

from conftest import hopper_processor, run_video
from facefusion_batch.faces import tracking
from facefusion_batch.workflow.processor import FrameProcessor

SIZE = (640, 360)
SWAPPED = 5.0
STEP = 12  # px a frame the camera pans


@pytest.fixture(scope="module")
def processor(tmp_path_factory) -> FrameProcessor:
    with hopper_processor(tmp_path_factory.mktemp("one"), face_selector_mode="one") as made:
        yield made


def _pan(processor) -> tuple[list[np.ndarray], list[list[np.ndarray]]]:
    """A wall with two astronauts (faces 110 and 90 px) panned past: the larger face leaves at the left edge
    while the smaller one stays in the picture. Frames and, per frame, the two faces' true boxes."""
    photo = np.ascontiguousarray(data.astronaut()[:, :, ::-1])
    (face,) = processor.engine.detect(photo)
    box = face.box.astype(np.float64)
    rng = np.random.default_rng(5)
    width, height = SIZE
    wall = cv2.GaussianBlur(cv2.resize(rng.integers(40, 210, (height // 8, width // 2, 3), dtype=np.uint8),
                                       (4 * width, height), interpolation=cv2.INTER_CUBIC), (0, 0), 2)
    placed = []
    for size, centre in ((110, (260, 170)), (90, (560, 190))):
        scale = size / (box[2] - box[0])
        small = cv2.resize(photo, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        at = box * scale
        shift = np.array([centre[0] - (at[0] + at[2]) / 2, centre[1] - (at[1] + at[3]) / 2])
        matrix = np.array([[1.0, 0, shift[0]], [0, 1.0, shift[1]]])
        drawn = cv2.warpAffine(small, matrix, (wall.shape[1], height))
        inside = cv2.warpAffine(np.full(small.shape[:2], 255, np.uint8), matrix, (wall.shape[1], height)) == 255
        wall[inside] = drawn[inside]
        placed.append(at + np.tile(shift, 2))
    frames, boxes = [], []
    for step in range(28):
        offset = STEP * step
        frames.append(np.ascontiguousarray(wall[:, offset:offset + width]))
        boxes.append([b - np.array([offset, 0, offset, 0]) for b in placed])
    return frames, boxes


def _inside(box: np.ndarray) -> float:
    width = max(0.0, min(box[2], SIZE[0]) - max(box[0], 0.0))
    height = max(0.0, min(box[3], SIZE[1]) - max(box[1], 0.0))
    return width * height / ((box[2] - box[0]) * (box[3] - box[1]))


def _strength(before: np.ndarray, after: np.ndarray, box: np.ndarray) -> float:
    x1, y1 = max(0, int(round(box[0]))), max(0, int(round(box[1])))
    x2, y2 = min(SIZE[0], int(round(box[2]))), min(SIZE[1], int(round(box[3])))
    if x2 <= x1 or y2 <= y1:
        return 0.0
    return float(np.abs(after[y1:y2, x1:x2].astype(int) - before[y1:y2, x1:x2].astype(int)).mean())


def test_one_takes_the_next_face_smoothly_as_its_face_leaves_the_picture(processor):
    # Its face (the larger) is swapped while most of it is in frame; as it leaves, the other face is taken, its
    # swap fading in over a few frames (no pop), and no frame has nobody swapped while a face is half in frame.
    frames, boxes = _pan(processor)
    out = run_video(processor, frames)
    seen = [(round(_inside(big), 2), round(_strength(f, o, big), 1), round(_strength(f, o, small), 1))
            for f, o, (big, small) in zip(frames, out, boxes)]
    assert any(inside < 0.3 for inside, _, _ in seen), seen  # the clip reaches past what is checked
    assert all(first >= SWAPPED for inside, first, _ in seen if inside >= 0.65), seen  # never switched early
    # Every frame where less of the leaving face than LEAVING is in the picture has the other face swapped, and
    # every frame has one of the two swapped.
    assert all(second >= SWAPPED for inside, _, second in seen if inside < tracking.LEAVING), seen
    assert all(max(first, second) >= SWAPPED for _, first, second in seen), seen
    full = max(second for _, _, second in seen)
    steps = [b - a for (_, _, a), (_, _, b) in zip(seen, seen[1:])]
    assert max(steps) < 0.7 * full, seen  # faded in, not switched on at once


def test_a_swap_fades_out_towards_the_edge_of_the_frame_that_cuts_its_face(processor):
    # Where the edge cuts a face, its mesh is extrapolated beyond it: the swap fades out towards that edge (the
    # source's eyes and glasses smeared along it before), while the face's middle stays swapped.
    frames, boxes = _pan(processor)
    out = run_video(processor, frames)
    cut = [(i, big) for i, (big, _) in enumerate(boxes) if 0.6 <= _inside(big) < 0.8]
    assert cut
    for index, big in cut:
        size = big[2] - big[0]
        rows = slice(int(big[1] + 0.3 * size), int(big[3] - 0.2 * size))
        change = np.abs(out[index].astype(int) - frames[index].astype(int)).mean(axis=2)[rows]
        edge, middle = change[:, :4].mean(), change[:, int(big[2] - 0.5 * size):int(big[2] - 0.3 * size)].mean()
        assert middle >= SWAPPED and edge < 0.35 * middle, (index, edge, middle)

"""Faces found late, swapped into the frames before they were found.

A face the detectors first see some frames after it came into view (a soft face a later sweep finds, a dim one found
only once wholly in the picture, one coming in across the edge) stays unswapped until then. Each chunk's tracks keep
its last frames as they were decoded (`History`); once a track has been swapped on a few frames in a row, its face on
the first of them is followed back through them by matching its picture (fitted again where the engine can), frame
by frame, for as long as it is the same face, in the picture and nobody else's place. A track swapped so long and
then given up on (the detectors and the mesh lost a soft face still there) is carried on by the same matching. The
frames are held back before they are finished (`workflow/chunks.py`), so those faces are swapped into them too.
Every decision is made in frame order on one chunk's frames: a resumed or split run makes the same.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Callable, Sequence

import cv2
import numpy as np

from facefusion_batch.faces.geometry import iou
from facefusion_batch.faces.types import Face
from facefusion_batch.workflow.patches import scale_face, shift_face

# Frames a face is followed back at most: a small face the whole-frame detectors miss is found by the sweep, which
# looks every SWEEP_MOVING to SWEEP (12-24) frames (workflow/analysis.py).
BACKFILL = 30  # (24 before the first frame of a track's CONFIRM)
BACKFILL_BYTES = 256 << 20  # ... fewer where that many decoded frames would take more memory (a 4K video: 10)
# Normalised correlation of a face's grey box with the box where it was first swapped below which a frame's face is
# not that face any more (turned, covered, or the trace slipped onto the background).
SAME_FACE = 0.6
LIKENESS_WIDTH = 24  # the boxes are compared at this width
LIKENESS_SHARE = 0.4  # ... where this share of the box or more is in the picture in both frames
# How far a face is looked for on the frame before, in parts of its size, each way: a fast pan moves a small face by
# more than half its size a frame (the tune split's crowd pan: 20 px a frame, 36 px faces).
SEARCH = 0.75
MATCH_WIDTH = 32  # faces are matched at this width at most
STEP_MATCH = 0.5  # ... and not followed to a place correlated less than this with where they were a frame later
# A track is followed back once it was swapped on this many frames in a row: a false detection swapped for a frame or
# two (a patch of wall) is not made longer. Its first frame is followed back from.
CONFIRM = 6
# A track swapped on CONFIRM frames in a row up to a frame and not chosen on the next (the detectors and the mesh lost
# a soft face still in the picture: seventh split's far crowd, a blurred 30 px woman the mesh saw at presence 0.2-0.4
# and then not, left for the last 20 frames) is carried on by the same matching, for at most this many frames since
# it was last chosen (till a sweep has looked again, in a still shot too: workflow/analysis.py SWEEP), while it is like
# that face as it was then. Not a track swapped on fewer frames: carried on, false detections swapped for a frame or
# two (a patch of wall) were made longer (e04506f, taken out in f468611).
ONWARD = 24
# ... where the picture around it (its box grown by this much of its size each way, within the frame) moved with it,
# within AROUND_AGREES of its size: a cut the tracker did not see (a group, then a close-up of like tones: `fresh`
# split) ended every track, and a face of the group was carried on to a patch of the close-up like it.
AROUND = 1.0
AROUND_AGREES = 0.25
# ... and grown or shrunk as that picture did (a zoom: carried at its size, a face on `blind`'s zoom out outgrew its
# face by 20 % in 6 frames), its scale told from corners followed there (at most ZOOM_POINTS, matched at most
# ZOOM_WIDTH wide, ZOOM_AGREE of them needed to tell); one that changed by more than ZOOM_MOST a frame is no zoom
# to follow (another picture) and ends the carrying.
ZOOM_POINTS = 64
ZOOM_WIDTH = 128
ZOOM_AGREE = 8
ZOOM_MOST = 0.15
# A face less than this share of its box inside the frame is not followed further back. The detectors' boxes are
# tighter than the face (tests/workflow/test_small_faces.py's 34 px face coming in at the right: 28 px, 2.5 px further
# out): at 0.5, traced exactly, it was let go 4 frames after half of it was in.
BACK_IN_FRAME = 0.45
REFIT_AGREES = 0.5  # IoU of a fit on the face's traced place with that place for the fit to be taken
TAKEN = 0.25  # share of a traced box over the box of a face chosen on that frame that makes it that face's place

Refit = Callable[[np.ndarray, Sequence[Face]], "list[Face] | None"]


def depth(shape: tuple[int, ...]) -> int:
    """How many frames of this shape a chunk holds back for faces found late."""
    frame_bytes = int(np.prod(shape))
    return max(0, min(BACKFILL, BACKFILL_BYTES // max(1, frame_bytes)))


@dataclass
class _Seen:
    """One frame that had its turn: as decoded, the places of the faces chosen on it (swapped or left, and those
    filled in or carried on since), by track, whether it starts a new shot, and the faces swapped on it."""

    index: int
    frame: np.ndarray
    taken: dict[int, np.ndarray]
    cut: bool
    shown: dict[int, Face]  # swapped on it, by track (or carried on to it)


class History:
    """The latest frames of one chunk, in frame order (at most `depth` of them), to follow faces found late back
    through. Used during the frames' turns only."""

    def __init__(self) -> None:
        self._seen: collections.deque[_Seen] = collections.deque()
        self._depth: int | None = None
        # By track: the run of frames it is swapped on, up to now: (its first frame, its face there, its length).
        self._runs: dict[int, tuple[int, Face, int]] = {}
        # By track swapped on CONFIRM frames in a row: the latest frame it was chosen and swapped on, its face there.
        self._confirmed: dict[int, tuple[int, Face]] = {}

    def fills(self, index: int, frame: np.ndarray, chosen: Sequence[Face], cut: bool, exclusive: bool,
              refit: Refit) -> list[tuple[int, Face]]:
        """Frame `index`'s turn, its faces `chosen` (settled): the faces to swap into this frame and the frames
        before it, (frame index, face): for each track swapped on CONFIRM frames in a row up to this one, its face
        on the first of them followed back; for each confirmed track swapped on the frame before (or carried on to
        it) and not chosen on this one, its face carried on to this frame (`_onward`). `cut`: the frame starts a new
        shot (nothing before it is followed or carried); `exclusive`: one face a frame (mode `one`), so a frame with
        any face chosen ends the way back and carries nothing on."""
        if self._depth is None:
            self._depth = depth(frame.shape)
        latest = self._seen[-1] if self._seen else None
        if latest is None or latest.index != index - 1 or cut:
            self._runs, self._confirmed, latest = {}, {}, None
        taken = {_key(face): face.box for face in chosen}
        shown = {_key(face): face for face in chosen if not face.leave}
        self._runs = {key: (self._runs[key][0], self._runs[key][1], self._runs[key][2] + 1) if key in self._runs
                      else (index, face, 1) for key, face in shown.items()}
        self._confirmed = {key: found for key, found in self._confirmed.items() if index - found[0] <= ONWARD}
        self._confirmed.update({key: (index, shown[key]) for key, run in self._runs.items() if run[2] >= CONFIRM})
        fills: list[tuple[int, Face]] = []
        for key, face in latest.shown.items() if latest is not None and not (exclusive and taken) else ():
            if key not in taken and key in self._confirmed:
                carried = self._onward(key, face, latest.frame, frame, taken)
                if carried is not None:
                    taken[key], shown[key] = carried.box, carried
                    fills.append((index, carried))
        self._seen.append(_Seen(index, frame, taken, cut, shown))
        while len(self._seen) > self._depth:
            self._seen.popleft()
        confirmed = [(key, start, face) for key, (start, face, length) in self._runs.items() if length == CONFIRM]
        if confirmed:
            by_index = {seen.index: seen for seen in self._seen}
            for key, start, face in confirmed:
                if start not in by_index:
                    continue
                for at, filled in self._back(face, start, exclusive, refit):
                    by_index[at].taken[key] = filled.box  # its place now, for the next face followed back
                    fills.append((at, filled))
        return fills

    def _onward(self, key: int, face: Face, before: np.ndarray, frame: np.ndarray, taken: dict[int, np.ndarray]
                ) -> Face | None:
        """A confirmed track's `face` swapped on the frame `before` and not chosen on this `frame`, carried on to it
        where it is still the face its track was last chosen with, in the picture (BACK_IN_FRAME), in no chosen face's
        place, and moved and grown as the picture around it did; None where not."""
        size = float(max(face.box[2] - face.box[0], face.box[3] - face.box[1]))
        height, width = frame.shape[:2]
        grown = np.clip(face.box + AROUND * size * np.array([-1, -1, 1, 1]), 0, (width, height, width, height))
        around = matched(before, grown, frame)
        if around is None:
            return None
        growth = zoom(before, grown, frame, around) or 1.0
        if abs(np.log(growth)) > np.log1p(ZOOM_MOST):
            return None
        shift = matched(before, face.box, frame, growth)
        if shift is None or max(abs(around[0] - shift[0]), abs(around[1] - shift[1])) > AROUND_AGREES * size:
            return None
        moved = scale_face(shift_face(face, *shift), growth)
        if _share(moved.box, frame.shape) < BACK_IN_FRAME or _on_taken(moved.box, taken):
            return None
        at, last = self._confirmed[key]
        then = next((seen for seen in self._seen if seen.index == at), None)
        if then is None or likeness(then.frame, last.box, frame, moved.box) < SAME_FACE:
            return None
        return _filled(moved, last, shift)

    def _back(self, face: Face, start: int, exclusive: bool, refit: Refit) -> list[tuple[int, Face]]:
        """`face` (on frame `start`) followed back through the frames held before it, as long as it is that face
        (see the module)."""
        key, found = _key(face), []
        first = next(seen for seen in self._seen if seen.index == start)
        if first.cut:
            return found
        current, current_frame, expected = face, first.frame, start - 1
        for seen in reversed(self._seen):
            if seen.index >= start:
                continue
            if seen.index != expected or key in seen.taken or (exclusive and seen.taken):
                break
            shift = matched(current_frame, current.box, seen.frame)
            if shift is None:
                break
            moved = shift_face(current, *shift)
            share = _share(moved.box, seen.frame.shape)
            if share < BACK_IN_FRAME or _on_taken(moved.box, seen.taken):
                break
            if likeness(first.frame, face.box, seen.frame, moved.box) < SAME_FACE:
                break
            # Fitted again where the face is wholly in the picture: one the edge cuts is placed further out and
            # narrower by the mesh the more of it is cut (faces/tracking.py HOLD_CUT), and moves with the picture.
            # The way back goes on from the fit's box only where the face it came from was cut (placed by the mesh
            # as above); elsewhere from where matching, exact to a tenth of a pixel, put it: a soft small face's fits
            # change by 2-4 % of it from fit to fit (docs/quality.md, session 27).
            fitted = refit(seen.frame, [_bare(moved)]) if share >= 1.0 else []
            if fitted and iou(moved.box, fitted[0].box[None])[0] >= REFIT_AGREES:
                box = fitted[0].box if _share(current.box, current_frame.shape) < 1.0 else moved.box
                moved = dataclasses.replace(moved, box=box, kps=fitted[0].kps, landmarks=fitted[0].landmarks)
            found.append((seen.index, _filled(moved, face, (-shift[0], -shift[1]))))
            if seen.cut:
                break  # the first frame of its shot
            current, current_frame, expected = moved, seen.frame, seen.index - 1
        return found


def matched(frame: np.ndarray, box: np.ndarray, before: np.ndarray, growth: float = 1.0
            ) -> tuple[float, float] | None:
    """Where the picture inside `box` on `frame` (its part in the picture) is on the frame `before`, grown there by
    `growth`, as the move of the box's centre (x, y in frame pixels): the best normalised correlation within SEARCH
    of its size, refined to a fraction of a pixel; None where nothing there is like it. The face's own box is
    matched, no margin around it: a face walking past a still backdrop moves with its face, not with the backdrop."""
    height, width = frame.shape[:2]
    x1, y1, x2, y2 = (float(v) for v in box)
    size = max(x2 - x1, y2 - y1)
    left, top, right, bottom = _pixels(box, frame.shape)
    if right - left < 4 or bottom - top < 4 or _share(box, frame.shape) < BACK_IN_FRAME:
        return None  # a sliver by the edge matches too many places
    scale = min(1.0, MATCH_WIDTH / size)
    reach = int(np.ceil(SEARCH * size))
    # Both scaled by the same factor (not to rounded sizes: a still face was found up to 1.2 px off, a drift of as
    # much a frame followed), so a place in either maps exactly to the frame; and, where it is not grown, the template
    # cut from `frame` scaled over the window's own region, so that the two are sampled on one grid (a scale near 1
    # blurs by the grid's phase: a 27 px face, scaled by 0.99 on its own, was found 0.2-0.35 px off a frame).
    # The search window may reach beyond the frame (a face coming in across the edge): filled with the picture's mean.
    region = (left - reach, top - reach, right + reach, bottom + reach)
    window = _grey_at(before, region, scale)
    if growth == 1.0:
        at_x, at_y = round(reach * scale), round(reach * scale)
        template = _grey_at(frame, region, scale)[at_y:at_y + max(1, round((bottom - top) * scale)),
                                                  at_x:at_x + max(1, round((right - left) * scale))]
        origin = np.array([left - reach + at_x / scale, top - reach + at_y / scale])
    else:
        template = _grey_at(frame, (left, top, right, bottom), scale * growth)
        origin = np.array([left, top], float)
    if template.shape[0] > window.shape[0] or template.shape[1] > window.shape[1] or template.std() < 1.0:
        return None
    scores = cv2.matchTemplate(window, template, cv2.TM_CCOEFF_NORMED)
    _, best, _, (x, y) = cv2.minMaxLoc(scores)
    if best < STEP_MATCH:
        return None
    # ... refined to a fraction of a pixel at the place found (ECC, over the part of the window in the picture): a face
    # drifting half a pixel a frame, followed back 20 frames, must not drift away from its face.
    found = window[y:y + template.shape[0], x:x + template.shape[1]]
    inside = np.zeros(window.shape, np.uint8)  # where the window is in the picture: the fine match's mask
    inside[max(0, int(np.ceil((reach - top) * scale))):max(0, int((height + reach - top) * scale)),
           max(0, int(np.ceil((reach - left) * scale))):max(0, int((width + reach - left) * scale))] = 1
    inside = inside[y:y + template.shape[0], x:x + template.shape[1]]
    fine_x = fine_y = 0.0
    with contextlib.suppress(cv2.error):  # not converging: the whole pixel found
        _, warp = cv2.findTransformECC(template, found, np.eye(2, 3, dtype=np.float32), cv2.MOTION_TRANSLATION,
                                       (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 30, 1e-3), inside, 1)
        if max(abs(warp[0, 2]), abs(warp[1, 2])) <= 1.0:
            fine_x, fine_y = float(warp[0, 2]), float(warp[1, 2])
    # The template's centre (on `frame`) and where it lies on `before`; the box's centre moves with it, and away from
    # it by `growth`.
    extent = np.array(template.shape[1::-1], float) / (scale * growth)
    centre = origin + extent / 2
    there = np.array([left - reach + (x + fine_x) / scale, top - reach + (y + fine_y) / scale]) + extent * growth / 2
    moved = there - centre + (growth - 1) * (np.array([x1 + x2, y1 + y2]) / 2 - centre)
    return float(moved[0]), float(moved[1])


def zoom(frame: np.ndarray, box: np.ndarray, later: np.ndarray, shift: tuple[float, float]) -> float | None:
    """How much the picture inside `box` on `frame` grew on the frame `later`, where it moved by `shift` (a zoom in:
    above 1): the scale of the similarity that best maps corners found there onto where they are followed to; None
    where too few are found or agree to tell."""
    left, top, right, bottom = _pixels(box, frame.shape)
    if right - left < 8 or bottom - top < 8:
        return None
    scale = min(1.0, ZOOM_WIDTH / max(right - left, bottom - top))
    dx, dy = int(round(shift[0])), int(round(shift[1]))
    there = (left + dx, top + dy, right + dx, bottom + dy)  # where it moved to (the frame's mean beyond its edge)
    a = _grey_at(frame, (left, top, right, bottom), scale).astype(np.uint8)
    b = _grey_at(later, there, scale).astype(np.uint8)
    corners = cv2.goodFeaturesToTrack(a, ZOOM_POINTS, 0.01, 3)
    if corners is None or len(corners) < ZOOM_AGREE:
        return None
    followed, status, _ = cv2.calcOpticalFlowPyrLK(a, b, corners, None, winSize=(9, 9), maxLevel=2)
    kept = status.ravel() == 1
    if kept.sum() < ZOOM_AGREE:
        return None
    similarity, inliers = cv2.estimateAffinePartial2D(corners[kept], followed[kept], method=cv2.RANSAC,
                                                      ransacReprojThreshold=1.0)
    if similarity is None or inliers is None or int(inliers.sum()) < ZOOM_AGREE:
        return None
    return float(np.hypot(similarity[0, 0], similarity[1, 0]))


def _pixels(box: np.ndarray, shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """The whole pixels a box covers inside a frame of `shape`: left, top, right, bottom."""
    return (max(0, int(box[0])), max(0, int(box[1])), min(shape[1], int(np.ceil(box[2]))),
            min(shape[0], int(np.ceil(box[3]))))


def _grey_at(frame: np.ndarray, region: tuple[int, int, int, int], scale: float) -> np.ndarray:
    """The grey picture of a region of the frame (the picture's mean beyond its edge), scaled."""
    left, top, right, bottom = region
    height, width = frame.shape[:2]
    inside = frame[max(0, top):min(height, bottom), max(0, left):min(width, right)]
    grey = cv2.cvtColor(inside, cv2.COLOR_BGR2GRAY).astype(np.float32)
    if (left, top, right, bottom) != (max(0, left), max(0, top), min(width, right), min(height, bottom)):
        grey = cv2.copyMakeBorder(grey, max(0, -top), max(0, bottom - height), max(0, -left), max(0, right - width),
                                  cv2.BORDER_CONSTANT, value=float(grey.mean()))
    if scale == 1.0:
        return grey
    # By the factor itself (the size rounded from it): a place on the result maps to the frame exactly.
    return cv2.resize(grey, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA if scale < 1.0 else cv2.INTER_LINEAR)


def likeness(frame: np.ndarray, box: np.ndarray, other: np.ndarray, other_box: np.ndarray) -> float:
    """Normalised correlation of two face boxes' grey pictures (each box's part inside both frames, mapped onto
    each other), -1 to 1; 0 where too little of them is in the picture to compare."""
    low, high = _visible(box, frame.shape), _visible(other_box, other.shape)
    start, stop = np.maximum(low[:2], high[:2]), np.minimum(low[2:], high[2:])  # in parts of the box, 0..1
    if (stop - start).min() <= 0 or np.prod(stop - start) < LIKENESS_SHARE:
        return 0.0
    pictures = []
    for image, (x1, y1, x2, y2) in ((frame, box), (other, other_box)):
        width, height = x2 - x1, y2 - y1
        left, top = int(round(x1 + start[0] * width)), int(round(y1 + start[1] * height))
        right, bottom = int(round(x1 + stop[0] * width)), int(round(y1 + stop[1] * height))
        crop = image[max(0, top):max(top + 1, bottom), max(0, left):max(left + 1, right)]
        pictures.append(crop)
    size = (LIKENESS_WIDTH, max(4, round(LIKENESS_WIDTH * (stop[1] - start[1]) / (stop[0] - start[0]) *
                                         (box[3] - box[1]) / max(1e-6, box[2] - box[0]))))
    a, b = (cv2.cvtColor(cv2.resize(p, size, interpolation=cv2.INTER_AREA), cv2.COLOR_BGR2GRAY).astype(np.float32)
            for p in pictures)
    return float(cv2.matchTemplate(a, b, cv2.TM_CCOEFF_NORMED)[0, 0])


def _visible(box: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The part of a box inside a frame, in parts of the box (x1, y1, x2, y2 from 0 to 1)."""
    x1, y1, x2, y2 = (float(v) for v in box)
    width, height = max(x2 - x1, 1e-6), max(y2 - y1, 1e-6)
    return np.array([(max(0.0, x1) - x1) / width, (max(0.0, y1) - y1) / height,
                     (min(float(shape[1]), x2) - x1) / width, (min(float(shape[0]), y2) - y1) / height])


def _share(box: np.ndarray, shape: tuple[int, ...]) -> float:
    """The share of a box inside the frame."""
    part = _visible(box, shape)
    return float(max(0.0, part[2] - part[0]) * max(0.0, part[3] - part[1]))


def _on_taken(box: np.ndarray, taken: dict[int, np.ndarray]) -> bool:
    """Whether a traced face's box lies over a face chosen on that frame (TAKEN of it or more)."""
    area = max(1e-6, float((box[2] - box[0]) * (box[3] - box[1])))
    return any(_overlap(box, other) >= TAKEN * area for other in taken.values())


def _overlap(a: np.ndarray, b: np.ndarray) -> float:
    """The area two boxes share."""
    return float(max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1])))


def _key(face: Face) -> int:
    """A face's track (its memo, one per track), or the face itself where it has none."""
    return id(face.memo) if face.memo is not None else id(face)


def _bare(face: Face) -> Face:
    """A face with nothing of its track's: what an engine fits anew."""
    return dataclasses.replace(face, memo=None, leave=False, swapped=None)


def _filled(moved: Face, found: Face, motion: tuple[float, float]) -> Face:
    """The face to swap into a frame before its track was found: decided on that frame alone (no track's memo: a
    face turned too far there is left), as deep and as shown as where it was found."""
    return dataclasses.replace(moved, memo=None, leave=False, mirror=False, swapped=None, own_depth=found.own_depth,
                               opacity=found.opacity, motion=motion)

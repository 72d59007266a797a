"""Work avoided: faces found on a reference frame are reused, tracked by translation, while the picture
around them barely changes; detection runs again on motion, on a scene cut and every `redetect_interval`.

The decision is made in frame order by the dispatcher from tiny grey thumbnails (cheap, computed by the
reader thread); detection and tracking run on the worker threads. A frame that reuses a reference waits on
that reference's detection, which was submitted earlier to the same FIFO pool, so it never deadlocks.
"""
from __future__ import annotations

import contextlib
import threading
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field

import cv2
import numpy as np

from facefusion_batch.faces.tracking import Handover, Tracked, Tracker
from facefusion_batch.faces.types import Face
from facefusion_batch.video.pixels import every_nth
from facefusion_batch.workflow.backfill import History
from facefusion_batch.workflow.patches import Patch, face_patches, picture_shift

THUMB_WIDTH = 96
# The patches of faces near the frame's edge (patches.TRACK_WIDTH wide at most elsewhere), measured on every frame
# whether held or not (`TrackState.edge_moves`), this wide: at 192 a 300 px face's cost 2.5 ms a frame at 720p (a
# close-up whose chin touches the edge), at 64 0.3 ms.
EDGE_WIDTH = 64
# Every this many frames a reference frame also sweeps the frame for small faces (the engine's `sweep`: several
# detector inputs), and so does the reference right after it (a face found once starts a track that the next
# frame must confirm); tracks keep what it finds in between. The sweep looks only where the picture changed since
# the last one (`Sweep`: a face that was not there could not appear where nothing moved), and everywhere at least
# every SWEEP_FULL frames.
SWEEP = 24
SWEEP_FULL = 96
SWEEP_CHANGE = 12.0  # grey levels a thumbnail pixel must change by since the last sweep for the sweep to look there
# ... and every SWEEP_MOVING frames where MOVING_SHARE of the picture or more changed since the last sweep (the camera
# pans or zooms: faces come in at every edge). Blind split's zoom out: a 60-75 px greyscale face that came in across
# the top edge, which the whole-frame detectors never scored above 0.12 and a sweep's tile scores 0.5, was unswapped
# for 25 frames, from one sweep to the next. A sweep costs ~17 whole-frame detections (188 ms at 640 x 360 here):
# in moving shots this adds one every 24 frames (+12 % CPU on three moving clips); still shots are as before.
SWEEP_MOVING = 12
MOVING_SHARE = 0.25
SCENE_CUT = 6.0  # a reference is dropped when the whole thumbnail changes this many times the threshold


def thumbnail(frame: np.ndarray) -> np.ndarray:
    """Small grey float32 image for motion checks."""
    step = max(1, frame.shape[1] // (THUMB_WIDTH * 4))
    small = every_nth(frame, step)
    height = max(1, round(small.shape[0] * THUMB_WIDTH / small.shape[1]))
    grey = cv2.cvtColor(cv2.resize(small, (THUMB_WIDTH, height), interpolation=cv2.INTER_AREA),
                        cv2.COLOR_BGR2GRAY)
    return grey.astype(np.float32)


def motion(thumb: np.ndarray, reference: np.ndarray, boxes: np.ndarray | None, frame_width: int) -> float:
    """Mean absolute grey change between thumbnails around `boxes` (frame pixels), or everywhere."""
    diff = np.abs(thumb - reference)
    if boxes is None or len(boxes) == 0:
        return float(diff.mean())
    scale = thumb.shape[1] / frame_width
    mask = np.zeros(diff.shape, bool)
    for x1, y1, x2, y2 in boxes * scale:
        pad_x, pad_y = (x2 - x1) * 0.25, (y2 - y1) * 0.25
        mask[max(0, int(y1 - pad_y)):int(np.ceil(y2 + pad_y)) + 1,
             max(0, int(x1 - pad_x)):int(np.ceil(x2 + pad_x)) + 1] = True
    return float(diff[mask].mean()) if mask.any() else float(diff.mean())


@dataclass
class Reference:
    """A frame whose faces were (or are being) detected; later frames track from it."""

    index: int
    thumb: np.ndarray
    result: Future = field(default_factory=Future)  # -> (faces, their patches)
    ahead: bool = False  # analysed by a task of its own, ahead of its frame's turn
    tracks: TrackState | None = None  # the face tracks of its gate's frames
    sweep: Sweep | None = None  # also look for small faces the whole-frame detectors miss (see SWEEP)


@dataclass(frozen=True)
class Sweep:
    """Where a reference's sweep for small faces looks: `changed`, a boolean grid over the frame (a thumbnail's
    pixels; True where the picture changed since the last sweep), or everywhere (None)."""

    changed: np.ndarray | None = None


class TrackState:
    """The face tracks of one gate's (one chunk's) frames, updated strictly in frame order.

    Frames are processed on several threads; each finds its faces in parallel, then takes its `turn`, which
    waits until the frame before it had its turn. A frame's predecessors were submitted to the same FIFO
    pool before it, so they are running or done and the wait always ends (a failed frame still takes its
    turn, see `skip`).
    """

    def __init__(self, smooth: bool = True) -> None:
        self._smooth = smooth
        self._next: int | None = None
        self._done = threading.Condition()
        self._abandoned = False
        self.tracker: Tracker | None = None
        self._handover: Handover | None = None  # from the chunk before, recorded with it
        self._before: tuple[TrackState, int] | None = None  # ... or its tracks, done once frame `end` - 1 is
        # The neighbourhoods of the faces near the frame's edge on the latest frame that had its turn, by track.
        self._edges: tuple[int, dict[int, tuple[Face, Patch]]] = (-1, {})
        self.history = History()  # its latest frames, to follow faces found late back through (workflow/backfill.py)

    def follow(self, before: TrackState | Handover | None, start: int) -> None:
        """This gate's frames start at `start` and continue the chunk before: its tracks (processed in this
        run, done with frame `start` - 1) or its recorded handover (None: a fresh start). Only mode `one`'s
        choice is carried over (faces/tracking.py `Handover`)."""
        if isinstance(before, TrackState):
            self._before = (before, start)
        else:
            self._handover = before

    def handover(self) -> Handover | None:
        """What the next chunk needs from this one's tracks, once its last frame had its turn."""
        handover = self.tracker.handover() if self.tracker is not None else None
        # Through its record even in memory: an uninterrupted run hands over exactly what a resumed one reads.
        return Handover.from_json(handover.to_json()) if handover is not None else None

    def _inherited(self) -> Handover | None:
        if self._before is None:
            return self._handover
        before, end = self._before
        with before._done:
            before._done.wait_for(lambda: before._abandoned or (before._next is not None and before._next >= end))
            if before._next is None or before._next < end:
                raise CancelledError(f"frame {end}: the video stopped before the chunk before it was done")
        return before.handover()

    @contextlib.contextmanager
    def turn(self, index: int, shape: tuple[int, ...] | None):
        """Hold frame `index`'s turn; yields the tracker (made for frames of `shape` on the first turn).
        CancelledError when the video was stopped before the frames ahead of it took theirs."""
        with self._done:
            self._done.wait_for(lambda: self._abandoned or (self._next is not None and self._next >= index))
            if self._abandoned and (self._next is None or self._next < index):
                raise CancelledError(f"frame {index}: the video stopped before its turn")
        try:
            if self.tracker is None and shape is not None:
                self.tracker = Tracker(shape[1], shape[0], self._smooth, self._inherited())
            yield self.tracker
        finally:
            with self._done:
                self._next = index + 1
                self._done.notify_all()

    def edge_moves(self, index: int, frame: np.ndarray) -> dict[int, np.ndarray]:
        """How the picture moved around each face near the frame's edge from frame `index` - 1 to this `frame`, by
        track (faces/tracking.py EDGE_NEAR; during frame `index`'s turn)."""
        at, patches = self._edges
        if at != index - 1:
            return {}
        moves = {}
        for track_id, (face, patch) in patches.items():
            shift = picture_shift(patch, frame, face)
            if shift is not None:
                moves[track_id] = np.array(shift)
        return moves

    def keep_edges(self, index: int, frame: np.ndarray, tracked: list[Tracked]) -> None:
        """Keep the neighbourhoods of `tracked`, frame `index`'s faces near its edge, for the next frame's
        `edge_moves`."""
        faces = [item.face for item in tracked]
        self._edges = (index, {item.track: (item.face, patch)
                               for item, patch in zip(tracked, face_patches(frame, faces, EDGE_WIDTH))})

    def begin(self, index: int) -> None:
        """The gate's first frame is `index` (set when it is planned, before any frame can take a turn)."""
        with self._done:
            if self._next is None:
                self._next = index
                self._done.notify_all()

    def skip(self, index: int) -> None:
        """Frame `index` failed: let the frames after it have their turns."""
        with contextlib.suppress(CancelledError), self.turn(index, None):
            pass

    def abandon(self) -> None:
        """The video stopped: frames still waiting for a turn (one before them will never come) give up."""
        with self._done:
            self._abandoned = True
            self._done.notify_all()


class MotionGate:
    """Decides, frame by frame in order, whether a frame starts a new reference or reuses the last one.

    Motion is measured around the faces of the reference *before* the current one: that detection has
    usually finished, so the decision never depends on thread timing and a re-run makes the same choices.
    Its faces are waited for only when a later frame's motion is measured (never when reuse is off), so
    planning a new reference does not wait for the one before it.
    """

    def __init__(self, enabled: bool, threshold: float, interval: int, tracks: TrackState | None = None) -> None:
        self._enabled, self._threshold, self._interval = enabled, threshold, interval
        self.tracks = tracks
        self._reference: Reference | None = None
        self._previous: Reference | None = None  # whose faces `_boxes` will be, not fetched yet
        self._boxes: np.ndarray | None = None  # faces of the previous reference; None: look everywhere
        self.references = 0
        self._swept: int | None = None  # the frame of the latest sweep
        self._swept_thumb: np.ndarray | None = None  # its thumbnail
        self._sweep: Sweep | None = None  # where it looked
        self._full: int | None = None  # the frame of the latest sweep that looked everywhere

    def reference_for(self, index: int, thumb: np.ndarray, frame_width: int) -> tuple[Reference, bool]:
        """(reference to use, whether this frame is a new reference and must be detected)."""
        ref = self._reference
        if ref is None or not self._enabled or self._needs_detection(index, thumb, ref, frame_width):
            self._previous, self._boxes = (ref if self._enabled else None), None
            ref = self._reference = Reference(index, thumb, tracks=self.tracks, sweep=self._sweep_for(index, thumb))
            if self.tracks is not None:
                self.tracks.begin(index)
            self.references += 1
            return ref, True
        return ref, False

    def _sweep_for(self, index: int, thumb: np.ndarray) -> Sweep | None:
        """The sweep a new reference frame makes, if any (see SWEEP)."""
        if self._swept is not None and index == self._swept + 1:
            return self._sweep  # the reference right after a sweep confirms what it found, where it looked
        if (self._full is None or index - self._full >= SWEEP_FULL or self._swept_thumb is None
                or thumb.shape != self._swept_thumb.shape):
            sweep, self._full = Sweep(), index
        elif index - self._swept >= SWEEP_MOVING:
            changed = cv2.absdiff(thumb, self._swept_thumb) > SWEEP_CHANGE
            if not changed.any():
                return None  # nothing moved since the last sweep: no face can have come in
            if index - self._swept < SWEEP and changed.mean() < MOVING_SHARE:
                return None  # not a moving shot: the next sweep is SWEEP frames on
            sweep = Sweep(cv2.dilate(changed.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool))
        else:
            return None
        self._swept, self._swept_thumb, self._sweep = index, thumb, sweep
        return sweep

    def _needs_detection(self, index: int, thumb: np.ndarray, ref: Reference, frame_width: int) -> bool:
        if index - ref.index >= self._interval or thumb.shape != ref.thumb.shape:
            return True
        if motion(thumb, ref.thumb, None, frame_width) > SCENE_CUT * self._threshold:
            return True
        if self._previous is not None:
            self._boxes, self._previous = _boxes_of(self._previous), None
        return motion(thumb, ref.thumb, self._boxes, frame_width) > self._threshold


def _boxes_of(reference: Reference | None) -> np.ndarray | None:
    if reference is None:
        return None
    try:
        faces = reference.result.result()[0]
    except Exception:  # noqa: BLE001 - the reference's own frame raises it and fails the video; never a signal
        return None
    return np.array([f.box for f in faces], np.float32).reshape(-1, 4)

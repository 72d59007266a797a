"""Face tracks across frames: association, coasting through short misses, shot cuts, landmark smoothing.

Pure and single-threaded: the pipeline feeds `Tracker.update` the faces of each frame in frame order (see
workflow/analysis.py `TrackState`), and swaps the faces it returns. A fresh tracker starts at every chunk,
so a resumed run, which analyses each chunk alone, makes the same choices as an uninterrupted one. Only mode
`one`'s choice crosses a chunk boundary, as a `Handover` recorded with the finished chunk (see its docstring).

Smoothing: each track keeps filtered points (mesh landmarks, the 5 keypoints and the box corners, so all
stay consistent) and a velocity. A frame's raw points are blended into the prediction (filtered + velocity)
in two parts: their pose (position, size, roll) with a weight that is small when the fit differs from the
prediction only by fitting noise and the face is still or moves slowly (a re-detection on a still shot eases in
over a few frames instead of ticking; a small face drifting slowly keeps its motion without the noise) and 1
when the face or the camera really moves (so nothing lags); their shape (expression, turn)
with a weight set by how much the shape itself changed, so that on a pan fitting noise does not pass through.
A fit whose shape disagrees with the track (a mesh that went wrong) is rejected: the track keeps its own shape
at the fit's position until fits agree again or the disagreement persists.
"""
from __future__ import annotations

import base64
import dataclasses
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

import numpy as np

from facefusion_batch.faces.geometry import nose_turn, similarity_factors
from facefusion_batch.faces.types import Face

MATCH_IOU = 0.25  # a face continues a track when its box overlaps the track's predicted box this much
CONTAINED = 0.8  # ... or when the smaller of the two boxes lies this much inside the other
# ... unless one is this many times the other's size and the picture there changed as at a cut (CUT_CHANGE): a new
# face, not the track's fit gone wrong (a cut between shots of like tones that `is_cut` missed: a group, then a
# close-up, the track of a face of the group took the close-up's face as its outlier and kept its own size there).
APART = 2.0
COAST = 6  # frames a confirmed track is carried through detection misses with its motion
# A track carried through a miss or more takes a face no track took that lies on its way: within WAY_NEAR of its size
# of the line from where it was last placed to where its motion carries it, and of its size within WAY_SIZE. A face
# that slowed is found behind where its motion says: thirteenth's street woman (23 px, the camera's tilt slowing from
# 8 to 1 px a frame), carried 3 frames at 9 px a frame, was found 18 px behind that (the boxes overlap by 0.12), and
# started a track of its own, asked afresh whether its swap shows, while the carried one was swapped below her face.
WAY_NEAR = 0.25
WAY_SIZE = 1.4
STILL_ALPHA = 0.2  # blend weight of a new fit into a still track (fitting noise eases in over ~5 frames)
NOISE = 0.015  # fit differences below this share of the face size count as noise
MOVE = 0.06  # differences from this share of the face size on are followed at once
SPEED = 0.02  # motion of this share of the face size per frame is followed at once
# ... measured against at least this many pixels: a small face's fits are noisier for its size (a 30 px face in
# a crowd: 1-4 % of it from fit to fit), and one drifting and rolling slowly with the camera (1-2 % of its size a
# frame) took every fit as it came, noise and all, so that the swaps shimmered on the faces (the eighth split's
# far wall: motion-compensated flicker p95 2.77 / 4.64 -> 1.85 / 2.87). Faces this size and larger: as before.
SLOW_SIZE = 100.0
# A fit's shape (expression, turn) is judged against at least this many pixels too: a 30 px face's mesh changes shape
# by 2-4 % of it from fit to fit, and taken as change (weights up to 0.6) that noise passed into the track, whose swap
# shimmered (tune split's far crowd and crowd pan, added flicker p95 +2.73 / +1.94 -> +2.56 / +1.64). Its pose (place,
# size, roll) is not: eased in more slowly, the tracks of a crowd in a pan lagged their faces.
SHAPE_NOISE_SIZE = 60.0
# The lips' points are eased in by their own change, not the whole mesh's: a mouth that opens or closes as the person
# speaks moves a few of the mesh's points a good share of the face, which over all of it was fitting noise's size
# (STILL_ALPHA), so the swap's lips followed the mouth frames late (real talking videos, `benchmarks/lipsync.py`).
# Their most moved point sets their weight (`blend_weight` of it, against the face's size as the shape's is).
# Only on a face turned less than LIPS_TURN (the nose tip's offset from the middle of the cheeks, in half cheek-widths:
# ~25 degrees), fit and track both: on a turned face the mesh's far half of the mouth is a guess that swings from fit
# to fit, and followed at once it made the swap's mouth jump (a held-out split's turned faces in a pan).
# By the track's point count (landmarks, then 5 keypoints and 2 box corners): the face mesh's 40 lip points
# (MediaPipe's lips) and its cheeks and nose tip (234, 454; 1). Not the neural engine's 68 points (its area mask's
# only): with a landmarker's per-frame jitter (1.5 px on a 150 px face) the most moved of their 20 lip points passed
# that jitter through (tests/processors/test_landmarker.py), and no talking video was measured with them.
LIPS = {468 + 7: np.array([61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291, 409, 270, 269, 267, 0, 37, 39, 40, 185,
                           78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308, 415, 310, 311, 312, 13, 82, 81, 80, 191])}
TURN_POINTS = {468 + 7: (234, 454, 1)}
LIPS_TURN = 0.5
OUTLIER = 0.08  # shape residual (after a similarity fit) above this share of the face size is an outlier
SCALE_JUMP = 0.15  # a size change beyond this (log ratio) from one frame to the next is an outlier
OFFSET_JUMP = 0.3  # ... and so is a move of this share of the face size beyond the predicted motion
RELOCK = 8  # consecutive outliers after which the fits are believed (the face did change)
# Consecutive rejected fits whose sizes differ by less than this (log ratio) agree on the face's size: a small face's
# mesh fitted at 27 px and then 32-33 px on five frames running (twelfth's 30 px face on the far wall) kept the
# track at 27 and it jumped when a fit was next accepted.
SIZE_AGREE = 0.05
VELOCITY_GAIN = 0.5
MAX_ZOOM = 0.03  # per-frame scale changes beyond this share, or rolls beyond MAX_ROLL radians, are not motion
MAX_ROLL = 0.03
MIN_SPAN = 3  # zoom and roll are measured between detected fits at least this many frames apart (fit noise) ...
# ... times SLOW_SIZE over the face's size for a smaller face: the noise of a 30 px face's fits (its size and roll off
# by 2-3 % from fit to fit), measured over three frames, read as a zoom of 1.6 % and a roll of 0.02 a frame, which the
# track carried on between fits (the camera of the tune split's far crowd zooms 0.3 % a frame): its faces swelled and
# turned until a fit was rejected and the track jumped 2 px (added flicker +13.7 on a sunglassed face).
REFIT_SPAN = 30  # frames a track is looked for by refits after the detector last saw it ...
# ... or a refit the engine is as sure of as of a detection (its score, e.g. the face mesh's presence, at least
# SURE_REFIT): a small face only the sweep finds, in a still shot, was dropped REFIT_SPAN frames after the sweep's
# reference although the mesh still found it on every frame, and unswapped until the next sweep (nothing moved,
# so none looked for 96 frames).
SURE_REFIT = 0.5
# A small face's track (its box under GRACE_SIZE pixels) looked for where it should be and not found (`missing`) is
# carried on for up to LOST_GRACE frames, looked for on each, where the detector or a sure refit saw it within the
# last 2 * LOST_GRACE frames and its face lies wholly inside the frame: on a soft 30 px face the mesh's presence
# jumps between 0.1 and 0.9 as its crop moves by a pixel, and a face the detector had seen on the frame before
# (eleventh split's far wall) was left unswapped for 13 frames when one refit said no face, until the next sweep
# found it again. Not a larger face: the mesh does not blink on it, and one it loses has turned away or left (a
# 56 px face turning to profile, carried, was swapped as a smear above its face: sixth split's tilt).
LOST_GRACE = 3
GRACE_SIZE = 48.0
IN_FRAME = 0.3  # a track is looked for while this share of its face's box is inside the frame
LEAVING = 0.4  # mode `one`: its face with less than this share of its landmarks inside the frame is leaving the
# picture (less than half: at half of its box, estimated from the face's size when last wholly in frame, `one` took the
# next face a frame or two before half of the leaving one had gone: a switch between two faces both half in the
# picture, on the pans of the tenth and eleventh splits; see `_seen_share`)
# A face the frame's edge cuts by more than HOLD_CUT (of the span of its landmarks, see `_extent`) is held: where its
# track saw it cut by no more than SHAPED_CUT before, its points move with the picture around it (the pipeline's
# phase correlation of the face's neighbourhood from the frame before: `update`'s `moves`), its shape and size as
# they were, instead of following fits. The detectors and the mesh, seeing part of a face (the mirrored view
# completes it with its mirror image), place it ever further out of the frame and narrower as it leaves: a 35 px
# face half out at the left edge was fitted 5-10 px out and 30 % narrow, its swap covered a strip by the edge,
# changed it by less than FAINT and was left for the last 9 of its frames (tune split's far crowd). Not a face cut
# a little (a close-up's chin): its mouth would stop moving. Faces within EDGE_NEAR of their size of the edge are
# measured, so the first frame that cuts one by HOLD_CUT is held too.
HOLD_CUT = 0.2
SHAPED_CUT = 0.05
EDGE_NEAR = 0.25
# ... where the picture's move agrees with the track's own motion within HOLD_AGREE of the face's size: phase
# correlation over the sliver of a face still in frame can peak anywhere (a 22 px strip under a pan of 22 px a frame
# peaked at no move, 0.5-1.0 strong, and the face was held by the edge after it had gone).
HOLD_AGREE = 0.15
# A held track seen by neither detector nor refit for HOLD_SPAN frames ends (a face leaving, not a patch of wall
# kept): a soft 34 px face leaving at half a pixel a frame was seen by neither for its last 13 frames half in frame.
HOLD_SPAN = 24
EDGE_FADE = (IN_FRAME, 0.4)  # a swap fades out as its face's share in frame falls from the second to the first
FADE_IN = 3  # frames over which mode `one`'s next choice within a shot fades in (from 2 / (FADE_IN + 1))
CUT_HISTOGRAM = 0.5  # L1 distance of normalised grey histograms (0..2) above which two frames are a cut
CUT_CHANGE = 25.0  # ... and mean absolute grey change above which


def is_cut(previous: np.ndarray | None, current: np.ndarray) -> bool:
    """Whether two small grey thumbnails (float, 0..255) lie on either side of a hard cut: the picture changed
    a lot *and* its grey-level distribution did (a pan changes pixels but keeps the distribution), the more
    the picture changed the less."""
    if previous is None or previous.shape != current.shape:
        return previous is not None
    change = float(np.abs(current - previous).mean())
    if change < CUT_CHANGE:
        return False
    bins = np.linspace(0, 256, 33)
    a = np.histogram(previous, bins)[0] / previous.size
    b = np.histogram(current, bins)[0] / current.size
    # The larger the change, the less of a histogram change it needs (a cut between two shots of similar
    # tones); the pan of a textured scene changes the histogram hardly at all.
    return float(np.abs(a - b).sum()) > CUT_HISTOGRAM * CUT_CHANGE / change


def _points(face: Face) -> np.ndarray:
    """All of a face's points as one float64 array: landmarks (with depth), keypoints, box corners."""
    parts = []
    if face.landmarks is not None:
        parts.append(_pad(face.landmarks))
    parts.append(_pad(face.kps))
    parts.append(_pad(face.box.reshape(2, 2)))
    return np.concatenate(parts)


def _pad(points: np.ndarray) -> np.ndarray:
    points = np.asarray(points, np.float64)
    if points.shape[1] == 3:
        return points
    return np.concatenate([points, np.zeros((len(points), 1))], axis=1)


def _face(template: Face, points: np.ndarray, memo: dict | None = None,
          motion: np.ndarray | None = None) -> Face:
    """`template` with its points replaced by `points` (as laid out by `_points`), and its track's `memo` and
    `motion`."""
    at = 0
    landmarks = None
    if template.landmarks is not None:
        count, columns = template.landmarks.shape
        landmarks = points[:count, :columns].astype(template.landmarks.dtype)
        at = count
    kps = points[at:at + len(template.kps), :2].astype(template.kps.dtype)
    box = points[at + len(template.kps):, :2].reshape(4).astype(template.box.dtype)
    moved = template.motion if motion is None else (float(motion[0]), float(motion[1]))
    return dataclasses.replace(template, box=box, kps=kps, landmarks=landmarks, memo=memo, motion=moved)


def _extent(points: np.ndarray, template: Face) -> np.ndarray:
    """The box a face's points (laid out as `template`'s, see `_points`) span: its landmarks' where it has them
    (the face itself; a detector's box on a small soft face can be twice its size), else its box."""
    if template.landmarks is None:
        return points[-2:, :2].reshape(4)
    xy = points[:len(template.landmarks), :2]
    return np.concatenate([xy.min(axis=0), xy.max(axis=0)])


def _size(points: np.ndarray) -> float:
    xy = points[:, :2]
    return float(max(np.ptp(xy[:, 0]), np.ptp(xy[:, 1]), 1.0))


def shape_residual(a: np.ndarray, b: np.ndarray) -> float:
    """RMS distance between point sets `a` and `b` (x, y) after the best similarity transform of `b` onto
    `a`, as a share of `a`'s size: how different their shapes are, whatever their position and scale."""
    a2, b2 = a[:, :2] - a[:, :2].mean(axis=0), b[:, :2] - b[:, :2].mean(axis=0)
    za, zb = a2[:, 0] + 1j * a2[:, 1], b2[:, 0] + 1j * b2[:, 1]
    denominator = float(np.vdot(zb, zb).real)
    if denominator < 1e-9:
        return float("inf")
    scale = np.vdot(zb, za) / denominator  # complex: rotation and scale
    return float(np.sqrt(np.mean(np.abs(za - scale * zb) ** 2)) / _size(a))


def disagrees(prediction: np.ndarray, raw: np.ndarray, moves: bool = False) -> bool:
    """Whether a new fit is implausible for the track in one step: another shape, or a size or position
    jump no real motion between two frames makes. `moves`: the fit is where the detector found the face,
    and a position jump is the face's (or the camera's) real motion, faster than the track knew."""
    if len(raw) != len(prediction):
        return False
    size = _size(prediction)
    scale = _size(raw) / size
    offset = float(np.linalg.norm(raw[:, :2].mean(axis=0) - prediction[:, :2].mean(axis=0))) / size
    return (shape_residual(prediction, raw) > OUTLIER or abs(np.log(scale)) > SCALE_JUMP
            or (offset > OFFSET_JUMP and not moves))


def _turn(points: np.ndarray) -> float:
    """How far a face with these track points (`LIPS`' layouts) is turned, either way (`geometry.nose_turn`)."""
    return abs(nose_turn(*(points[i, :2] for i in TURN_POINTS[len(points)])))


def _rms(a: np.ndarray, b: np.ndarray) -> float:
    """RMS distance between corresponding points (x, y) of `a` and `b`."""
    return float(np.sqrt(np.mean(np.sum((a[:, :2] - b[:, :2]) ** 2, axis=1))))


def _moved(points: np.ndarray, turn: complex, shift: np.ndarray) -> np.ndarray:
    """A float64 copy of `points` turned and scaled by `turn` about their centre (depth scaled alike), then
    shifted by `shift`."""
    moved = points.astype(np.float64, copy=True)
    if turn != 1:
        centre = moved[:, :2].mean(axis=0)
        z = (moved[:, 0] - centre[0]) + 1j * (moved[:, 1] - centre[1])
        z *= turn
        moved[:, 0], moved[:, 1] = z.real + centre[0], z.imag + centre[1]
        if moved.shape[1] > 2:
            moved[:, 2] *= abs(turn)
    moved[:, :2] += shift
    return moved


def _posed(points: np.ndarray, target: np.ndarray) -> np.ndarray:
    """`points` moved by the similarity (shift, scale, roll; depth scaled alike) that best takes them onto
    `target`: `target`'s pose with `points`' shape."""
    shift = target[:, :2].mean(axis=0) - points[:, :2].mean(axis=0)
    return _moved(points, complex(similarity_factors(points, target)), shift)


def blend_weight(difference: float, speed: float) -> float:
    """Weight of a new fit (0..1) from its difference to the prediction and the track's speed, both as
    shares of the face size: STILL_ALPHA for noise on a still face, 1 for real motion or change."""
    change = np.clip((difference - NOISE) / (MOVE - NOISE), 0.0, 1.0)
    moving = np.clip(speed / SPEED, 0.0, 1.0)
    return float(STILL_ALPHA + (1 - STILL_ALPHA) * max(change, moving))


@dataclass
class Track:
    id: int
    face: Face  # latest raw face (the template for output faces)
    points: np.ndarray  # filtered points
    raw: np.ndarray  # latest accepted raw points
    raw_at: int = 0  # ... and their frame (a rejected fit in between leaves them older than `last`)
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(2))  # centroid motion, pixels per frame
    # ... and as its fits (detected ones too) move: where to look for it next (the velocity, learnt from moved
    # copies of a fit only, keeps the smoothing steady; this follows a fast pan, where every frame is detected)
    motion: np.ndarray = field(default_factory=lambda: np.zeros(2))
    similarity: complex = 1 + 0j  # per-frame scale and rotation about the centre (from detected fits)
    fitted: np.ndarray | None = None  # the last detected fit's points, and its frame
    fitted_at: int = 0
    first: int = 0
    last: int = 0  # last frame with a face of its own
    confirmed: int = 0  # last frame the detector (or a refit as sure, SURE_REFIT) saw it
    hits: int = 1
    outliers: int = 0
    rejected_size: float | None = None  # the size of the latest fit rejected, in a run of rejected fits
    # Its face's box's width and height when last wholly inside the frame: the face's size where the frame's
    # edge cuts it (its fit, extrapolated beyond the edge, shrinks or swells as it goes).
    whole: tuple[float, float] | None = None
    shaped: bool = False  # seen with no more than SHAPED_CUT of its face out of the frame (see HOLD_CUT)
    matches: list[float] = field(default_factory=list)  # reference-mode distances measured on it
    votes: list[bool] = field(default_factory=list)  # face-selector filter answers (kept or not) measured on it
    memo: dict = field(default_factory=dict)  # handed to the engine with its faces (`Face.memo`)

    def eased(self, shift: np.ndarray, size: float) -> np.ndarray:
        """`shift` (a move of the face, x and y) as much of it as the track takes: `blend_weight` of its length and the
        track's speed, both as shares of the face's `size`."""
        return blend_weight(float(np.linalg.norm(shift)) / size, self.speed(size)) * shift

    def speed(self, size: float) -> float:
        """How fast the face moves, zooms or rolls: the largest, as a share of its size per frame (of SLOW_SIZE,
        for a smaller face)."""
        share = size / max(size, SLOW_SIZE)
        return share * max(float(np.linalg.norm(self.velocity)) / size, abs(abs(self.similarity) - 1),
                           abs(float(np.angle(self.similarity))))

    def expected(self, frames: int = 1) -> np.ndarray:
        """`predicted`, moved on by the fits' own motion instead of the smoothing's velocity: where to look."""
        moved = self.predicted(frames)
        moved[:, :2] += (self.motion - self.velocity) * frames
        return moved

    def predicted(self, frames: int = 1) -> np.ndarray:
        """The filtered points moved on `frames` frames: turned and scaled about their centre by the
        per-frame similarity (zoom, roll) seen between detections, and shifted by the velocity."""
        return _moved(self.points, self.similarity ** frames, self.velocity * frames)


@dataclass(frozen=True)
class Handover:
    """What mode `one` carries from one chunk to the next: the chosen face's box in the chunk's last frame and
    the thumbnail of the chunk's last reference frame. The next chunk's tracker prefers the face over that box
    for its first choice, unless its first frame is a cut from that thumbnail. It is recorded with the
    finished chunk (`to_json`), so a resumed run starts the next chunk from exactly what an uninterrupted one
    hands over in memory (that one goes through `to_json` too)."""

    box: tuple[float, float, float, float]
    thumb: np.ndarray  # grey, float32 of whole grey levels (workflow/analysis.py `thumbnail`)

    def to_json(self) -> dict:
        grey = np.clip(np.rint(self.thumb), 0, 255).astype(np.uint8)
        return {"box": [float(v) for v in self.box], "thumb": [*grey.shape, base64.b64encode(grey.tobytes()).decode()]}

    @classmethod
    def from_json(cls, data: object) -> Handover | None:
        """The handover recorded by `to_json`; None for anything else (a sidecar from an older version)."""
        try:
            box = tuple(float(v) for v in data["box"])  # type: ignore[index]
            height, width, encoded = data["thumb"]  # type: ignore[index]
            grey = np.frombuffer(base64.b64decode(encoded), np.uint8).reshape(int(height), int(width))
        except (TypeError, KeyError, ValueError):
            return None
        return cls(box, grey.astype(np.float32)) if len(box) == 4 else None  # type: ignore[arg-type]


@dataclass(frozen=True)
class Tracked:
    """One face to swap in a frame: its track, the smoothed face, and whether it was carried (no face of
    its own in this frame)."""

    track: int
    face: Face
    coasting: bool = False


class Tracker:
    """Face tracks over consecutive frames of one chunk; `update` must be called in frame order."""

    def __init__(self, width: int, height: int, smooth: bool = True, handover: Handover | None = None) -> None:
        self._width, self._height, self._smooth = width, height, smooth
        self.tracks: dict[int, Track] = {}
        self._next_id = 0
        # The chunk before's last reference: a cut between it and this chunk's first frame is found as any.
        self._thumb: np.ndarray | None = handover.thumb if handover is not None else None
        self._handover = handover  # until the first choice, or a cut
        self._last: dict[int, np.ndarray] = {}  # the boxes of the latest frame's faces, by track
        self.chosen: int | None = None  # mode `one`: the track chosen for the current shot
        self.leaving: set[int] = set()  # mode `one`: tracks chosen before, let go as their faces left the picture
        self._chosen_at: int | None = None  # the frame where `one`'s current choice fades in from (None: at once)
        self._index = -1  # the latest frame's
        self._shot_start: int | None = None  # the current shot's first frame in this chunk
        self.cuts = 0
        self.coasted = 0  # face-frames swapped through a detection miss
        self._looked: tuple[int, set[int]] = (-1, set())  # the tracks `missing` said to look for, and the frame
        self.rejected = 0  # fits rejected as outliers

    def update(self, index: int, faces: list[Face], detected: bool, thumb: np.ndarray | None = None,
               refits: list[Face] | None = None, moves: Mapping[int, np.ndarray] | None = None) -> list[Tracked]:
        """The frame's faces joined to tracks (smoothed), plus confirmed tracks carried through a miss.
        `refits` are faces found again at tracks' predicted places (see `missing`): they continue their
        tracks but do not count as seen by the detector. A track looked for there and not found is not
        carried: the face is not where its motion says (it moved otherwise, or left). None: nothing could be
        looked for (the engine cannot refit), and missed tracks are carried with their motion. `moves`: how the
        picture moved since the frame before around faces `near_edge` there (x, y by track), for faces the
        frame's edge cuts (see EDGE_NEAR)."""
        moves = moves or {}
        faces = self._own_faces(index, faces)
        own = len(faces)
        looked = self._looked[1] if refits is not None and self._looked[0] == index else set()
        faces = faces + list(refits or [])
        before = self._thumb
        if thumb is not None:
            if is_cut(self._thumb, thumb):
                self.tracks.clear()
                self.chosen = None
                self.leaving.clear()
                self._shot_start = None
                self._handover = None
                self.cuts += 1
            self._thumb = thumb
        self._index = index
        if self._shot_start is None:
            self._shot_start = index
        # A track held by the edge (see HOLD_CUT) takes any fit that overlaps it: its face's fits drift out of the
        # frame, and one that drifted off it would start a second track beyond the edge.
        held = {track.id for track in self.tracks.values() if self._holds(track, index, moves)}
        pairs = self._associate(index, faces, (before, thumb) if thumb is not None else None, held, own)
        result: list[Tracked] = []
        # Faces that continue tracks first: a face no track takes that lies on one of them is that face seen
        # twice (an oversized second box), not a face to start a track on.
        for face_index in sorted(range(len(faces)), key=lambda i: i not in pairs):
            face, track = faces[face_index], pairs.get(face_index)
            if track is None:
                if face_index >= own or _on_any(face.box, [t.face.box for t in result]):
                    continue  # a refit that continues no track, or a second box on a face
                track = self._start(index, face)
            elif face_index >= own and _on_any(face.box, [f.box for f in faces[:own]]):
                del self.tracks[track.id]  # the refit found a face the detector has (in another track): one face
                continue
            else:
                if self._holds(track, index, moves, _points(face)):
                    self._hold(track, index, moves[track.id])
                else:
                    self._follow(track, index, face, detected, refit=face_index >= own)
                if face_index < own or face.score >= SURE_REFIT:
                    track.confirmed = index
            result.append(Tracked(track.id, _face(track.face, track.points, track.memo, track.motion)))
            if self._share(result[-1].face.box) >= 1.0:
                box = result[-1].face.box
                track.whole = (float(box[2] - box[0]), float(box[3] - box[1]))
            track.shaped = track.shaped or self._share(_extent(track.points, track.face)) >= 1 - SHAPED_CUT
        seen = {t.track for t in result}
        for track in list(self.tracks.values()):
            if track.id in seen:
                continue
            gap = index - track.last
            if track.id in held and index - track.confirmed <= HOLD_SPAN:
                self._hold(track, index, moves[track.id])
                if self._in_frame(track.points):
                    result.append(Tracked(track.id, _face(track.face, track.points, track.memo, track.motion)))
                    continue
                del self.tracks[track.id]  # left the picture
                continue
            # Carried on as its fits moved (`expected`, as `missing` looks for it), not by the smoothing's
            # velocity, which learns only from frames that were not detected: in a fast pan, every frame detected,
            # it stayed 0 and a face that left at the edge was carried on the wall where it had been, swapped.
            predicted = track.expected(gap)
            # Carried only while wholly inside the frame: a face the edge cuts that the mesh did not find again
            # where it should be (`missing`) is on its way out, and its motion is not known well enough.
            lost = track.id in looked and (gap > LOST_GRACE or index - track.confirmed > 2 * LOST_GRACE
                                           or track.face.box[2] - track.face.box[0] >= GRACE_SIZE)
            if (gap > COAST or track.hits < 2 or not self._whole(predicted) or lost
                    or _on_any(_face(track.face, predicted).box, [t.face.box for t in result])):
                del self.tracks[track.id]  # gone, or a second track on a face swapped already
                continue
            self.coasted += 1
            result.append(Tracked(track.id, _face(track.face, predicted, track.memo, track.motion),
                                  coasting=True))
        self._last = {t.track: t.face.box for t in result}
        return result

    def cut(self, thumb: np.ndarray) -> bool:
        """Whether a frame with this thumbnail starts a new shot (nothing changes until `update`)."""
        return is_cut(self._thumb, thumb)

    def missing(self, index: int, faces: list[Face]) -> list[Face]:
        """Where the tracks that none of `faces` continues are predicted to be in frame `index`: regions to look
        at again before a face is declared gone. A track seen on one frame only is looked for on the next (a
        face coming in across the edge, found once by the detectors, is often missed by them on the frame after:
        the mesh fitted where it was finds it), not carried (`update`)."""
        faces = self._own_faces(index, faces)
        matched = {track.id for track in self._associate(index, faces).values()}
        found, looked = [], set()
        for track in self.tracks.values():
            if (track.id in matched or (track.hits < 2 and index - track.last > 1) or index - track.last > COAST
                    or index - track.confirmed > REFIT_SPAN):
                continue
            predicted = _face(track.face, track.expected(index - track.last))
            if self._in_frame(track.expected(index - track.last)) and not _on_any(predicted.box,
                                                                                   [f.box for f in faces]):
                found.append(predicted)
                looked.add(track.id)
        self._looked = (index, looked)
        return found

    def _own_faces(self, index: int, faces: list[Face]) -> list[Face]:
        """`faces` less those with a template mesh (`Face.templated`) on a track whose face was fitted: the track's
        own mesh is the better, and it looks for its face itself where the detector did not fit one (`missing`)."""
        if not any(face.templated for face in faces):
            return faces
        fitted = [_face(t.face, t.expected(index - t.last)).box for t in self.tracks.values() if not t.face.templated]
        return [face for face in faces if not (face.templated and _on_any(face.box, fitted))]

    def _associate(self, index: int, faces: list[Face], thumbs: tuple[np.ndarray | None, np.ndarray] | None = None,
                   held: Collection[int] = (), own: int | None = None) -> dict[int, Track]:
        """Which track each face continues. `thumbs`: the previous reference's thumbnail and this frame's, on a
        reference frame (see APART). `held`: tracks that take any face overlapping theirs. `own`: how many of `faces`
        (the first) are the detector's, which a carried track may take on its way (see WAY_NEAR); None: all."""
        pairs: list[tuple[float, int, int]] = []
        for track in self.tracks.values():
            predicted = _face(track.face, track.expected(index - track.last)).box
            for face_index, face in enumerate(faces):
                overlap = _iou(predicted, face.box)
                # A fit much larger or smaller than the track but around it is the track gone wrong (an
                # outlier to reject), not another face to swap as well; so is one centred on it (a face
                # coming into the frame, first found small, then whole). Not where the picture changed as at
                # a cut (APART).
                if ((overlap >= MATCH_IOU or _contained(predicted, face.box) >= CONTAINED
                     or _on_any(predicted, [face.box]) or (track.id in held and overlap > 0))
                        and not (overlap < MATCH_IOU and self._new_face(predicted, face.box, thumbs))):
                    pairs.append((overlap, face_index, track.id))
        chosen: dict[int, Track] = {}
        used: set[int] = set()

        def take(ranked: list[tuple[float, int, int]]) -> None:
            for _, face_index, track_id in ranked:
                if face_index not in chosen and track_id not in used:
                    chosen[face_index] = self.tracks[track_id]
                    used.add(track_id)

        take(sorted(pairs, reverse=True))  # the best overlaps first, then faces on carried tracks' way
        take(sorted(self._on_their_way(index, faces[:own], chosen, used)))
        return chosen

    def _on_their_way(self, index: int, faces: list[Face], chosen: Collection[int], used: Collection[int]
                      ) -> list[tuple[float, int, int]]:
        """(distance, face index, track id) of each face no track took that lies on the way of a track carried
        through a miss or more (see WAY_NEAR), the distance as a share of the track's size."""
        found = []
        for track in self.tracks.values():
            gap = index - track.last
            if track.id in used or gap < 2:
                continue
            was = _face(track.face, track.points).box
            now = _face(track.face, track.expected(gap)).box
            width = float(now[2] - now[0])
            if width <= 0:
                continue
            for face_index, face in enumerate(faces):
                if face_index in chosen:
                    continue
                if abs(np.log(float(face.box[2] - face.box[0]) / width)) > np.log(WAY_SIZE):
                    continue
                apart = _from_segment((face.box[:2] + face.box[2:]) / 2, (was[:2] + was[2:]) / 2,
                                      (now[:2] + now[2:]) / 2) / width
                if apart <= WAY_NEAR:
                    found.append((apart, face_index, track.id))
        return found

    def _new_face(self, predicted: np.ndarray, box: np.ndarray,
                  thumbs: tuple[np.ndarray | None, np.ndarray] | None) -> bool:
        """Whether a face box APART times a track's size (or a part of it), both wholly in frame, is a new face:
        the picture over the larger changed by CUT_CHANGE grey levels or more since the previous reference."""
        if thumbs is None or thumbs[0] is None or thumbs[0].shape != thumbs[1].shape:
            return False
        sizes = sorted(float(max(b[2] - b[0], b[3] - b[1])) for b in (predicted, box))
        if sizes[1] < APART * sizes[0] or self._share(predicted) < 1.0 or self._share(box) < 1.0:
            return False
        before, now = thumbs
        scale = now.shape[1] / self._width
        x1, y1 = (np.minimum(predicted[:2], box[:2]) * scale).astype(int)
        x2, y2 = np.ceil(np.maximum(predicted[2:], box[2:]) * scale).astype(int) + 1
        region = (slice(max(y1, 0), y2), slice(max(x1, 0), x2))
        return float(np.abs(now[region] - before[region]).mean()) >= CUT_CHANGE

    def _start(self, index: int, face: Face) -> Track:
        points = _points(face)
        track = Track(self._next_id, face, points, points, raw_at=index, first=index, last=index, confirmed=index,
                      fitted=points, fitted_at=index,
                      motion=self._common_motion(index))
        self.tracks[track.id] = track
        self._next_id += 1
        return track

    def _common_motion(self, index: int) -> np.ndarray:
        """Where a face seen once is looked for next: as the faces tracked up to the frame before move (their
        fits' median motion; none: still). A camera pan moves every face alike, a small face by most of its size
        from frame to frame, and a new track looked for where it was is not found there (the mesh, fitted half a
        face off a 30 px face, says "no face") and ends."""
        moving = [t.motion for t in self.tracks.values() if t.hits >= 2 and t.last >= index - 1]
        return np.median(moving, axis=0) if moving else np.zeros(2)

    def _follow(self, track: Track, index: int, face: Face, detected: bool, refit: bool = False) -> None:
        raw = _points(face)
        gap = max(1, index - track.last)
        prediction = track.predicted(gap)
        size = _size(prediction)
        # Rejected: a fit that disagrees with the track, unless the frame's edge cuts the face (its fits are
        # extrapolated there, and change as it comes in or goes). A refit is judged against where it was looked
        # for (`expected`: as its fits move), not against the smoothing's prediction, which lags a fast pan by
        # most of a small face's size: there every refit was rejected and the track left behind its face.
        reference = track.expected(gap) if refit else prediction
        if (disagrees(reference, raw, moves=not refit) and track.outliers < RELOCK and self._whole(prediction)
                and self._whole(raw)):
            # A fit that disagrees with the track (a mesh gone wrong): the track keeps its own shape, its box moved
            # to where the detector's box is (the face's motion), or where a refit was looked for, as much as a moved
            # copy's shift would move it (a still face's fitting noise eases in: re-centred at once, a 30 px face's
            # track jumped 2 px). Kept where the smoothing's prediction says, it lagged a fast pan and was swapped
            # on the wall beside its face.
            track.outliers += 1
            self.rejected += 1
            # Nor does it go on zooming or rolling as the fits did before it: carried on through a run of
            # rejected fits, that drift took the track ever further from every fit, so it never agreed again
            # (held-out's screaming 44 px face: the track grew to 57 px over 15 frames).
            track.similarity = 1 + 0j
            anchor = reference if refit else raw
            track.points = prediction.copy()
            # Its size eases towards rejected fits of the face's shape that agree with each other on theirs (see
            # SIZE_AGREE), as a still face's fits ease in.
            raw_size = _size(raw)
            if (track.rejected_size is not None and abs(np.log(raw_size / track.rejected_size)) < SIZE_AGREE
                    and shape_residual(reference, raw) <= OUTLIER):
                track.points = _moved(track.points, (raw_size / size) ** STILL_ALPHA, np.zeros(2))
            track.rejected_size = raw_size
            track.points[:, :2] += track.eased(anchor[-2:, :2].mean(axis=0) - track.points[-2:, :2].mean(axis=0),
                                               size)  # box corners
        else:
            relocked, track.outliers, track.rejected_size = track.outliers >= RELOCK, 0, None
            span = MIN_SPAN * max(1.0, SLOW_SIZE / size)  # see MIN_SPAN
            # Per frame since the fit it is measured from: after a rejected fit that is more than `gap` back (a
            # 23 px face tilted into view at 12 px a frame, one fit rejected, the next measured as a 28 px step: the
            # track coasted on at 21 px a frame, swapped below its face, and the face started a track of its own).
            step = (raw[:, :2].mean(axis=0) - track.raw[:, :2].mean(axis=0)) / max(1, index - track.raw_at)
            track.motion = track.motion + VELOCITY_GAIN * (step - track.motion)
            if not detected:  # a translation of the same fit: its motion is the face's motion
                track.velocity = track.velocity + VELOCITY_GAIN * (step - track.velocity)
            elif track.fitted is not None and len(track.fitted) == len(raw) and index - track.fitted_at >= span:
                step = complex(similarity_factors(track.fitted, raw)) ** (1 / (index - track.fitted_at))
                if abs(abs(step) - 1) < MAX_ZOOM and abs(np.angle(step)) < MAX_ROLL:
                    track.similarity = track.similarity + VELOCITY_GAIN * (step - track.similarity)
            if len(raw) != len(prediction) or not self._smooth or relocked:
                # Believed after RELOCK rejected fits: the whole fit, also where it is a moved copy of the latest
                # detected one (whose shape and size the track would otherwise keep rejecting).
                track.points = raw
            elif not detected:
                # A moved copy of an older fit: only its position is news; shape, size and roll are the
                # track's own, carried on by the similarity seen between detections.
                track.points = prediction.copy()
                track.points[:, :2] += track.eased(raw[:, :2].mean(axis=0) - prediction[:, :2].mean(axis=0), size)
            else:
                # The fit's pose (position, size, roll) follows as the face or the camera moves; its shape
                # (expression, turn) only as the shape itself changes: on a pan, fitting noise in the shape
                # would otherwise pass straight through and the swapped texture would shimmer on the face.
                posed = _posed(prediction, raw)
                weight = blend_weight(_rms(posed, prediction) / size, track.speed(size))
                shape = raw - posed
                shape_weight = blend_weight(_rms(raw, posed) / max(size, SHAPE_NOISE_SIZE), 0.0)
                change = shape_weight * shape
                lips = LIPS.get(len(raw))
                if lips is not None and max(_turn(raw), _turn(prediction)) < LIPS_TURN:  # see LIPS
                    moved = float(np.linalg.norm(shape[lips, :2], axis=1).max())
                    lip_weight = blend_weight(moved / max(size, SHAPE_NOISE_SIZE), 0.0)
                    change[lips] = max(shape_weight, lip_weight) * shape[lips]
                track.points = prediction + weight * (posed - prediction) + change
            if detected and (track.fitted is None or len(track.fitted) != len(raw) or index - track.fitted_at >= span):
                track.fitted, track.fitted_at = raw, index  # the next measure's start, at least `span` frames back
            track.raw, track.raw_at = raw, index
            track.face = face
        track.last = index
        track.hits += 1

    def _holds(self, track: Track, index: int, moves: Mapping[int, np.ndarray], raw: np.ndarray | None = None
               ) -> bool:
        """Whether `track` is held this frame (see HOLD_CUT): seen with its face in frame once, placed on the frame
        before, the picture's move there measured and agreeing with its motion (HOLD_AGREE), and its face (where it
        was, or its fit `raw`) cut by the frame's edge by more than HOLD_CUT; at all, where it has no fit here."""
        if not (track.id in moves and track.shaped and track.last == index - 1
                and np.linalg.norm(moves[track.id] - track.motion) <= HOLD_AGREE * _size(track.points)):
            return False
        if raw is None:  # no face of its own here, and not wholly in frame where it goes (so not carried)
            return not (self._whole(track.expected(1)) and self._whole(_moved(track.points, 1, moves[track.id])))
        return any(self._share(_extent(points, track.face)) < 1 - HOLD_CUT for points in (track.points, raw))

    def _hold(self, track: Track, index: int, move: np.ndarray) -> None:
        """Move a held track's points by `move`, the picture's move around it, its shape and size as they were."""
        move = np.asarray(move, np.float64)
        track.points = _moved(track.points, 1, move)
        track.raw, track.raw_at = track.points, index
        track.velocity, track.motion = move.copy(), move.copy()
        track.similarity, track.fitted, track.outliers, track.rejected_size = 1 + 0j, None, 0, None
        track.last = index
        track.hits += 1

    def near_edge(self, tracked: list[Tracked]) -> list[Tracked]:
        """The faces within EDGE_NEAR of their size of the frame's edge, or cut by it: where the pipeline measures
        how the picture moves to the next frame (`update`'s `moves`). Not carried ones: a track is held only from a
        frame it was placed on."""
        near = []
        for item in tracked:
            if item.coasting:
                continue
            x1, y1, x2, y2 = (float(v) for v in item.face.box)
            margin = EDGE_NEAR * max(x2 - x1, y2 - y1)
            if x1 < margin or y1 < margin or x2 > self._width - margin or y2 > self._height - margin:
                near.append(item)
        return near

    def _visible_area(self, box: np.ndarray) -> float:
        """The area of a face box inside the frame: a face cut by the frame's edge (its fit extrapolated
        beyond it) is not the largest because its box reaches out of the picture."""
        x1, y1, x2, y2 = (float(v) for v in box)
        return max(0.0, min(x2, self._width) - max(x1, 0.0)) * max(0.0, min(y2, self._height) - max(y1, 0.0))

    def _whole(self, points: np.ndarray) -> bool:
        """Whether a face's points (its box among them) lie wholly inside the frame."""
        low, high = points[:, :2].min(axis=0), points[:, :2].max(axis=0)
        return bool(low.min() >= 0 and high[0] <= self._width and high[1] <= self._height)

    def _in_frame(self, points: np.ndarray) -> bool:
        """Whether enough of a face (the box its points span) is inside the frame to carry or look for: a
        face leaving the picture stays swapped, the part of it still in frame, until little of it is left
        (the detector gives up on a face cut by the edge long before that; the mesh, fitted on the track's
        predicted place, does not)."""
        low, high = points[:, :2].min(axis=0), points[:, :2].max(axis=0)
        area = float(np.prod(np.maximum(high - low, 1e-6)))
        return self._visible_area(np.concatenate([low, high])) >= IN_FRAME * area

    def choose_one(self, tracked: list[Tracked], first: Callable[[list[Tracked]], Tracked] | None = None
                   ) -> list[Tracked]:
        """Mode `one`: the shot's chosen track, kept while it lives and its face is in the picture. Chosen by
        `first` (default: the face largest by what of it is inside the frame) among the faces mostly in frame
        (`LEAVING`; any, when none is). When the chosen face is leaving the picture (less than `LEAVING` of it
        in frame) and another face is in it, that one is taken, fading in over `FADE_IN` frames, while the face
        leaving stays swapped, fading out with its share in frame (`opacity`), until its track ends: no frame
        without a swap, no swap switched off or on at once. A choice made after the shot's first frame fades
        in too; one carried over from the chunk before does not."""
        first = first or (lambda items: max(items, key=lambda t: self._visible_area(t.face.box)))
        present = {t.track: t for t in tracked}
        self.leaving &= set(present)
        if self.chosen in present and self._seen_share(present[self.chosen]) < LEAVING:
            staying = [t for t in tracked if t.track != self.chosen and t.track not in self.leaving
                       and self._seen_share(t) >= LEAVING]
            if staying:
                self.leaving.add(self.chosen)
                self.chosen, self._chosen_at = first(staying).track, self._index
        if self.chosen not in present:
            if not present:
                return []
            carried = self.carried(tracked)
            if carried is not None:
                self.chosen, self._chosen_at = carried, None
            else:
                fresh = [t for t in tracked if t.track not in self.leaving] or tracked
                candidates = [t for t in fresh if self._seen_share(t) >= LEAVING] or fresh
                self.chosen = first(candidates).track
                self._chosen_at = self._index if self._index != self._shot_start else None
        chosen = [present[self.chosen]]
        chosen += [present[track] for track in sorted(self.leaving)
                   if track != self.chosen and self._seen_share(present[track]) < LEAVING]
        return chosen

    def faded(self, item: Tracked) -> Face:
        """A tracked face to swap, with how much of its swap to show (`opacity`)."""
        opacity = self.opacity(item)
        return item.face if opacity >= 1.0 else dataclasses.replace(item.face, opacity=opacity)

    def opacity(self, item: Tracked) -> float:
        """How much of a tracked face's swap to show: all of it, but less as its face leaves the picture (its
        share in frame from `EDGE_FADE[1]` down to `EDGE_FADE[0]`, where its track is given up: the mesh is
        extrapolated ever further beyond the edge, and the swap does not stop at once), and mode `one`'s next
        choice fading in."""
        low, high = EDGE_FADE
        share = min(1.0, max(0.0, (self._in_picture(item) - low) / (high - low)))
        if item.track == self.chosen and self._chosen_at is not None:
            share = min(share, (self._index - self._chosen_at + 2) / (FADE_IN + 1))
        return share

    def _seen_share(self, item: Tracked) -> float:
        """How much of a tracked face's features are in the picture (mode `one`'s measure of a face leaving): the
        share of its landmarks inside the frame, or of its box (`_in_picture`) where it has none. The box reaches
        over the forehead, which the frame's top edge cuts first: a face 255 px wide cut by the top and right edges,
        55 % of it in frame by the judge's box (brows to chin), its eyes in the picture, read 0.39 by its box (0.54
        of its landmarks), and `one` took another face while it was still half in the picture (ninth split's pan)."""
        landmarks = item.face.landmarks
        if landmarks is None:
            return self._in_picture(item)
        x, y = landmarks[:, 0], landmarks[:, 1]
        return float(np.mean((x >= 0) & (x <= self._width) & (y >= 0) & (y <= self._height)))

    def _in_picture(self, item: Tracked) -> float:
        """The share of a tracked face inside the frame: of its box, made as large as the face was when last
        wholly in frame where the edge cuts it (a fit extrapolated beyond the edge is no measure of what is)."""
        x1, y1, x2, y2 = (float(v) for v in item.face.box)
        track = self.tracks.get(item.track)
        if track is not None and track.whole is not None:
            x1, x2 = _grown(x1, x2, track.whole[0], self._width)
            y1, y2 = _grown(y1, y2, track.whole[1], self._height)
        return self._share(np.array([x1, y1, x2, y2]))

    def _share(self, box: np.ndarray) -> float:
        """The share of a face box inside the frame."""
        area = float(max(box[2] - box[0], 1e-6) * max(box[3] - box[1], 1e-6))
        return self._visible_area(box) / area

    def carried(self, tracked: list[Tracked]) -> int | None:
        """For the first choice after a handover (no cut since): the track overlapping the box the chunk
        before chose most (MATCH_IOU at least), else None. Used once: later choices are the shot's own."""
        handover, self._handover = self._handover, None
        if handover is None:
            return None
        box = np.array(handover.box, np.float32)
        overlaps = [(_iou(box, t.face.box), t.track) for t in tracked]
        best = max(overlaps, default=(0.0, None))
        return best[1] if best[0] >= MATCH_IOU else None

    def handover(self) -> Handover | None:
        """What the next chunk needs to keep this chunk's choice (mode `one`): None when nothing is chosen in
        the latest frame."""
        if self.chosen is None or self.chosen not in self._last or self._thumb is None:
            return None
        return Handover(tuple(float(v) for v in self._last[self.chosen]), self._thumb)  # type: ignore[arg-type]


def _grown(low: float, high: float, size: float, end: float) -> tuple[float, float]:
    """A box's span along one axis made at least `size` long out beyond the frame's edge (0 or `end`) it crosses."""
    if low < 0:
        return min(low, high - size), high
    if high > end:
        return low, max(high, low + size)
    return low, high


def _on_any(box: np.ndarray, boxes: list[np.ndarray]) -> bool:
    """Whether a face box is one of `boxes`' faces: its centre inside one of them, or one's centre inside it."""
    centre = (box[:2] + box[2:]) / 2
    for other in boxes:
        middle = (other[:2] + other[2:]) / 2
        if ((other[:2] <= centre) & (centre <= other[2:])).all() or ((box[:2] <= middle) & (middle <= box[2:])).all():
            return True
    return False


def _contained(a: np.ndarray, b: np.ndarray) -> float:
    """Share of the smaller of two boxes that lies inside the other."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return float(ix * iy / smaller) if smaller > 0 else 0.0


def _from_segment(point: np.ndarray, start: np.ndarray, end: np.ndarray) -> float:
    """How far `point` lies from the line segment from `start` to `end` (all x, y)."""
    along = end - start
    length = float(along @ along)
    share = 0.0 if length <= 0 else float(np.clip((point - start) @ along / length, 0.0, 1.0))
    return float(np.linalg.norm(point - (start + share * along)))


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter / union) if union > 0 else 0.0

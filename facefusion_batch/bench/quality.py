"""Output-quality metrics (definitions in docs/quality.md), as pure functions over frames and boxes.

`benchmarks/quality.py` feeds them frames of clips whose true face boxes it knows, plus the distances an
independent face-recognition judge measured; nothing here needs the judge, so the unit tests run anywhere.
Frames are uint8 BGR (or grey) arrays of one size; boxes are x1, y1, x2, y2 in frame pixels.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Sequence

import cv2
import numpy as np

SWAPPED = 5.0  # mean |out - in| inside the box at or above which a face-frame counts as swapped
JUMP = 12.0  # added flicker above which a swapped face-frame is a jump
ACCEPT = 0.6  # judge distance below which two faces are the same person
FAINT = 1.0  # change beyond the encoder's own at or above which an unswapped face-frame was touched (faint)
SMALL = 40.0  # face width (pixels) at or below which a face is small
TURNED = 30.0  # |yaw| (degrees) from which a face is turned
PRESENT_SHARE = 0.5  # share of a face box inside the frame from which the face counts as present
CLASSES = ("edge", "small", "turned", "clear")  # face-frame classes; a face may be edge, small and turned at once


def _region(shape: tuple[int, ...], box: Sequence[float]) -> tuple[slice, slice] | None:
    height, width = shape[:2]
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    x1, y1, x2, y2 = max(0, x1), max(0, y1), min(width, x2), min(height, y2)
    if x2 - x1 < 1 or y2 - y1 < 1:
        return None
    return slice(y1, y2), slice(x1, x2)


def mean_abs(a: np.ndarray, b: np.ndarray, box: Sequence[float]) -> float:
    """Mean absolute difference of `a` and `b` inside `box` (grey levels, all channels); nan if empty."""
    region = _region(a.shape, box)
    if region is None:
        return float("nan")
    return float(np.abs(a[region].astype(np.int16) - b[region].astype(np.int16)).mean())


def strength(inp: np.ndarray, out: np.ndarray, box: Sequence[float]) -> float:
    """How much the output changed the face in `box`."""
    return mean_abs(inp, out, box)


def added_flicker(in_prev: np.ndarray, in_cur: np.ndarray, out_prev: np.ndarray, out_cur: np.ndarray,
                  box: Sequence[float]) -> float:
    """Frame-to-frame change inside `box` the output has beyond the input's own."""
    return mean_abs(out_cur, out_prev, box) - mean_abs(in_cur, in_prev, box)


def added_jitter(in_prev: np.ndarray, in_cur: np.ndarray, out_prev: np.ndarray, out_cur: np.ndarray,
                 box: Sequence[float], camera: np.ndarray) -> float:
    """Added flicker with the camera's motion taken out: the previous frame is first moved by `camera` (the
    2x3 affine map from its pixels to the current frame's). A swapped face that moves rigidly with the
    picture scores about 0 however sharp it is; what remains is the face changing on the picture (landmark
    jitter, colour or mask changes)."""
    size = (in_cur.shape[1], in_cur.shape[0])

    def moved(frame: np.ndarray) -> np.ndarray:
        return cv2.warpAffine(frame, np.asarray(camera, np.float64), size, flags=cv2.INTER_CUBIC,
                              borderMode=cv2.BORDER_REFLECT)

    return mean_abs(out_cur, moved(out_prev), box) - mean_abs(in_cur, moved(in_prev), box)


def visible_share(box: Sequence[float], size: tuple[int, int]) -> float:
    """Share of `box`'s area inside a frame of `size` (width, height)."""
    x1, y1, x2, y2 = box
    area = (x2 - x1) * (y2 - y1)
    if area <= 0:
        return 0.0
    w = max(0.0, min(x2, size[0]) - max(x1, 0.0))
    h = max(0.0, min(y2, size[1]) - max(y1, 0.0))
    return w * h / area


def face_classes(box: Sequence[float], size: tuple[int, int], yaw: float) -> tuple[str, ...]:
    """The classes of a present face-frame: `edge` (cut by the frame's edge), `small` (at most SMALL px wide),
    `turned` (|yaw| at least TURNED degrees), or `clear` when none of those."""
    found = []
    if visible_share(box, size) < 1.0:
        found.append("edge")
    if box[2] - box[0] <= SMALL:
        found.append("small")
    if abs(yaw) >= TURNED:
        found.append("turned")
    return tuple(found) or ("clear",)


def is_faint(strength_out: float, strength_floor: float) -> bool:
    """An unswapped face-frame that was touched all the same: its change is under SWAPPED but at least FAINT
    above what the encoder alone changes there (a swap too faint to see, neither done nor left)."""
    return strength_out < SWAPPED and strength_out - strength_floor >= FAINT


def chroma(frame: np.ndarray, box: Sequence[float]) -> float:
    """Mean colourfulness inside `box`: the distance of CIELAB's a, b from grey (8-bit LAB units)."""
    region = _region(frame.shape, box)
    if region is None:
        return float("nan")
    lab = cv2.cvtColor(np.ascontiguousarray(frame[region]), cv2.COLOR_BGR2LAB).astype(np.float32)
    return float(np.hypot(lab[..., 1] - 128, lab[..., 2] - 128).mean())


def chroma_loss(inp: np.ndarray, out: np.ndarray, box: Sequence[float]) -> float:
    """How much colour the output face lost against the input (positive: greyer, e.g. a greyscale source's
    colour carried into a colour scene)."""
    return chroma(inp, box) - chroma(out, box)


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


@dataclass
class TrackStats:
    """Temporal metrics of one face track over the frames it is present in."""

    frames: int = 0
    swapped: int = 0
    missed: int = 0  # present but not swapped (only where swapping was expected)
    toggles: int = 0  # swapped -> not -> swapped
    jumps: int = 0
    flicker: list[float] = field(default_factory=list)  # added flicker of each judged face-frame
    jitter: list[float] = field(default_factory=list)  # added jitter of the same face-frames, where known
    missed_at: list[int] = field(default_factory=list)
    jumps_at: list[int] = field(default_factory=list)
    longest_miss: int = 0  # the most consecutive frames it was missed in (only where swapping was expected)
    late: int = 0  # ... and those before its first swapped frame, where it was swapped at all (a face found late)


def track_stats(strengths: Sequence[float], flickers: Sequence[float], frames: Sequence[int] | None = None,
                expected: bool = True, jitters: Sequence[float] | None = None) -> TrackStats:
    """Metrics of one track: `strengths[i]` of its i-th present frame, `flickers[i]` the added flicker
    since the previous frame (nan where there is none: first frame, after a cut), `jitters[i]` its added
    jitter (see `added_jitter`; nan where unknown). `expected`: the face should be swapped in every frame
    (mode many); otherwise misses are not counted."""
    frames = list(range(len(strengths))) if frames is None else list(frames)
    stats = TrackStats(frames=len(strengths))
    swapped = [s >= SWAPPED for s in strengths]
    stats.swapped = sum(swapped)
    if expected:
        stats.missed_at = [f for f, s in zip(frames, swapped) if not s]
        stats.missed = len(stats.missed_at)
        stats.longest_miss = longest_run(stats.missed_at)
        stats.late = next((index for index, s in enumerate(swapped) if s), 0)
    stats.toggles = toggles(swapped)
    for index, (frame, flick) in enumerate(zip(frames, flickers)):
        if not np.isfinite(flick):
            continue
        if swapped[index] or (index > 0 and swapped[index - 1]):
            stats.flicker.append(float(flick))
            if jitters is not None and np.isfinite(jitters[index]):
                stats.jitter.append(float(jitters[index]))
        if swapped[index] and flick > JUMP:
            stats.jumps += 1
            stats.jumps_at.append(frame)
    return stats


def longest_run(frames: Sequence[int]) -> int:
    """The length of the longest run of consecutive numbers in `frames` (ascending frame numbers)."""
    longest = run = 0
    for index, frame in enumerate(frames):
        run = run + 1 if index and frame == frames[index - 1] + 1 else 1
        longest = max(longest, run)
    return longest


def toggles(swapped: Sequence[bool]) -> int:
    """Times a track went swapped -> not swapped -> swapped again."""
    count, seen, off = 0, False, False
    for s in swapped:
        if s:
            if seen and off:
                count += 1
            seen, off = True, False
        elif seen:
            off = True
    return count


def switches(chosen: Sequence[int | None], shots: Sequence[int],
             present: Sequence[Collection[object]] | None = None) -> list[int]:
    """Frame indices where mode `one` swapped a different track than the last one it swapped in the same
    shot (`chosen[i]`: the track swapped in frame i, None for none). With `present` (the tracks present in
    each frame), a change counts only while the last track is still present: after its face left the
    picture, `one` taking another is no switch."""
    at, last, shot = [], None, None
    for index, (track, current) in enumerate(zip(chosen, shots)):
        if current != shot:
            last, shot = None, current
        if track is None:
            continue
        if last is not None and track != last and (present is None or last in present[index]):
            at.append(index)
        last = track
    return at


def chosen_track(strengths: dict[int, float]) -> int | None:
    """The track mode `one` swapped in a frame: the most changed face, if any face changed enough."""
    if not strengths:
        return None
    track, value = max(strengths.items(), key=lambda item: item[1])
    return track if value >= SWAPPED else None


def nobody_swapped(chosen: Sequence[int | None], boxes: Sequence[dict], people: dict, person: str
                   ) -> list[tuple[int, object]]:
    """Mode `one`'s frames where no face was swapped (`chosen` None, see `chosen_track`) although a face was there,
    none of the source's person: (frame, the largest face's track). `one` may have chosen the source's own face,
    which swapped with itself changes too little to be seen as swapped: such frames are no miss."""
    found = []
    for t, (track, faces) in enumerate(zip(chosen, boxes)):
        if track is None and faces and all(people[k] != person for k in faces):
            found.append((t, max(faces, key=lambda k: faces[k][2] - faces[k][0])))
    return found


def phantoms(inp: np.ndarray, out: np.ndarray, boxes: Sequence[Sequence[float]], grow: float = 0.3,
             level: float = 12.0, min_area: int = 150) -> int:
    """Patches the output changed where no face is: connected regions of at least `min_area` pixels, outside
    every box grown by `grow`, whose mean channel change exceeds `level` grey levels (a face pasted on the
    wall by a track that outlived its face, or a false detection swapped). Encoder noise stays far below."""
    change = np.abs(inp.astype(np.int16) - out.astype(np.int16)).mean(axis=2) > level
    for x1, y1, x2, y2 in boxes:
        w, h = x2 - x1, y2 - y1
        region = _region(inp.shape, (x1 - grow * w, y1 - grow * h, x2 + grow * w, y2 + grow * h))
        if region is not None:
            change[region] = False
    change = cv2.morphologyEx(change.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    count, _, stats, _ = cv2.connectedComponentsWithStats(change, connectivity=8)
    return int(sum(stats[i, cv2.CC_STAT_AREA] >= min_area for i in range(1, count)))


def background_diff(inp: np.ndarray, out: np.ndarray, boxes: Sequence[Sequence[float]], grow: float = 0.3
                    ) -> float:
    """Mean |out - in| outside every box grown by `grow` of its size on each side (the swap regions)."""
    keep = np.ones(inp.shape[:2], bool)
    for x1, y1, x2, y2 in boxes:
        w, h = x2 - x1, y2 - y1
        region = _region(inp.shape, (x1 - grow * w, y1 - grow * h, x2 + grow * w, y2 + grow * h))
        if region is not None:
            keep[region] = False
    if not keep.any():
        return float("nan")
    return float(np.abs(inp.astype(np.int16) - out.astype(np.int16))[keep].mean())


@dataclass(frozen=True)
class Identity:
    """The judge's verdict on one output face."""

    to_source: float  # descriptor distance output face - source face
    to_target: float  # output face - the original face at that place
    found: bool  # the judge re-detected a face there in the output
    # ... and in the input, the same way (its own floor: a view around a small face found in the whole frame is not
    # always found again, swapped or not)
    found_in: bool = True


def identity_summary(verdicts: Sequence[Identity]) -> dict[str, float]:
    """Shares: accepted as the source, closer to source than target, still found as a face, and found again in the
    input by the same look (`found_floor`: the judge's own floor for `found`)."""
    if not verdicts:
        return {"faces": 0, "accepted": float("nan"), "closer": float("nan"), "found": float("nan"),
                "found_floor": float("nan")}
    n = len(verdicts)
    return {"faces": n,
            "accepted": sum(v.to_source < ACCEPT for v in verdicts) / n,
            "closer": sum(v.to_source < v.to_target for v in verdicts) / n,
            "found": sum(v.found for v in verdicts) / n,
            "found_floor": sum(v.found_in for v in verdicts) / n}


def class_misses(records: Sequence[tuple[tuple[str, ...], bool]]) -> dict[str, dict[str, float]]:
    """Per class: present face-frames, missed ones and their share, from (classes, missed) per face-frame."""
    result = {}
    for name in CLASSES:
        hits = [missed for classes, missed in records if name in classes]
        result[name] = {"frames": len(hits), "missed": sum(hits),
                        "share": sum(hits) / len(hits) if hits else float("nan")}
    return result


def lowest_share(groups: dict[str, Sequence[Identity]], key: str = "accepted") -> tuple[str | None, float]:
    """The group (e.g. source identity) whose judged faces have the lowest `key` share, and that share."""
    shares = {name: identity_summary(v)[key] for name, v in groups.items() if v}
    if not shares:
        return None, float("nan")
    name = min(shares, key=lambda n: shares[n])
    return name, shares[name]


def flicker_summary(values: Sequence[float]) -> tuple[float, float]:
    """Mean and 95th percentile of added flicker."""
    if len(values) == 0:
        return float("nan"), float("nan")
    array = np.asarray(values, np.float64)
    return float(array.mean()), float(np.percentile(array, 95))


def yaw_from_five(points: np.ndarray) -> float:
    """Rough yaw in degrees from dlib's 5 points (two corners per eye, then the nose base): how far the
    nose sits off the eyes' midline, as a share of the half eye distance. Frontal 0; sign = direction."""
    eye_a, eye_b = points[0:2].mean(axis=0), points[2:4].mean(axis=0)
    axis = eye_b - eye_a
    half = np.linalg.norm(axis) / 2
    if half < 1e-6:
        return 90.0
    offset = float((points[4] - (eye_a + eye_b) / 2) @ (axis / np.linalg.norm(axis)))
    return float(np.degrees(np.arcsin(np.clip(offset / half, -1.0, 1.0))))

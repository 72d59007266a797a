"""Output quality of ffb, judged by an independent face-recognition model (dlib), on clips made from real faces.

    pip install -e '.[quality]'        # dlib-bin + face-recognition-models: the judge, never used by ffb
    python benchmarks/quality.py [--split tune|heldout|fresh|blind|fifth|sixth|seventh|eighth|ninth|tenth|eleventh
                                  |twelfth|thirteenth|fourteenth|turned|both]
                                 [--quick] [--save FILE] [--sheets DIR] [--cli]
    python benchmarks/quality.py --split twelfth --corpus-only --sheets DIR   # the corpus alone, no ffb

The corpus (benchmarks/quality_corpus.py) has twelve splits with no source identity and no target photo in
common: `tune`, to tune ffb on, `heldout`, to judge it by and never to tune on, `fresh`, built once the
held-out split had been run and looked at, `blind`, built once `fresh` had been too: judged once at the end
of a session, never tuned on, `fifth`, built once `blind` had been judged (first judged in session 12),
`sixth`, built once `fifth` had been judged (first judged in session 13), `seventh`, built once `sixth` had
been judged (first judged in session 14), `eighth`, built once `seventh` had been judged (first judged in session
15), `ninth`, built once `eighth` had been judged (first judged in session 16), `tenth`, built once `ninth` had
been judged (first judged in session 17), `eleventh`, built once `tenth` had been judged (first judged in
session 18; nobody ran ffb on either when it was built), and `twelfth`, built once `eleventh` had been judged (in
session 19; nobody ran ffb on it when it was built), and `thirteenth`, held out by footage only (built in session
23 by a helper session from the other splits' photos, composed into clips of its own; judged only till session
38), and `fourteenth`, held out the same way (built in session 24 by a helper session; never tuned on).
Since session 33 `fifth`, `seventh` and `fresh` are read and tuned on beside `tune` (docs/quality.md "Session 33"):
ten splits were held out. Since session 38 `thirteenth` is read and tuned on too (nine are held out). `turned`
(session 37) is for tuning too: sources turned 26-49 degrees cut from the tuning splits' photos (as they are,
greyscale and shaded on their far side, low resolution) on `tune`'s footage
(`both` is tune and held-out; `--corpus-only` renders a split's clips with their true boxes and runs no ffb).
Each has four sources and six or more clips (640x360, 25 fps, lossless H.264 so the input is exact) composed
from real photos that packages ship: group pans and zooms where faces enter and leave at every
edge and are cut by it, a group from afar (faces of 20-40 px), turned heads, a static group shot with a hard cut to a close-up, a close-up, the group pan again in
mode `one`, and images. Every clip runs with two sources. The generator knows every face's true box in every
frame, so the temporal metrics need no detector. Metrics (docs/quality.md): identity (judge distance to
source and original, face still found, against the judge's own floor: the input's faces found again the same way;
per source, with the lowest), background change against the
encoder's own floor (the input re-encoded with the same settings), per-track temporal metrics (missed
face-frames by class: edge, small, turned, clear; faint swaps; toggles, added flicker, jumps, `one`-mode
switches), ffb's own count of faces left as near profile, and colour lost on swapped faces. Contact sheets
(PNG, a folder per split) show the worst faces overall and per source, missed faces by class, strips around
each jump/switch/miss and turned faces zoomed.
"""
from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np

import quality_corpus as corpus
from quality_corpus import MIN_FACE, SIZE, Clip, Photo, camera_step, render
from facefusion_batch.bench import quality as q
from facefusion_batch.video import ffmpeg
from facefusion_batch.video.probe import probe

FPS = 25
JUDGE_EVERY = 8
LOST_PER_RUN = 4  # the lost-faces sheet (lost.png): at most this many faces of a run,
LOST_SHOWN = 48  # and this many in all
NEVER_FRAMES = 8  # a face present this many frames or more and swapped in none of them is "never swapped"
MISSED_FACES = 12  # the faces missed in the most frames, named in the report (which face, who, which frames) ...
MISSED_TABLE = 4  # ... this many of them in its table


# ---------------------------------------------------------------- the judge (dlib; benchmark only)

class Judge:
    """dlib's frontal face detector (upsampled once) and ResNet descriptor. Results are remembered by image
    content, so the input frames that several sources' runs share are judged once."""

    def __init__(self) -> None:
        try:
            import dlib
            import face_recognition_models as frm
        except ImportError:
            sys.exit("the judge needs dlib: pip install -e '.[quality]' (dlib-bin, face-recognition-models)")
        self._dlib = dlib
        self._detector = dlib.get_frontal_face_detector()
        self._shape = dlib.shape_predictor(frm.pose_predictor_five_point_model_location())
        self._net = dlib.face_recognition_model_v1(frm.face_recognition_model_location())
        self._memo: dict[tuple, object] = {}

    def _remembered(self, kind: str, bgr: np.ndarray, extra, compute):
        key = (kind, hashlib.blake2b(np.ascontiguousarray(bgr).data, digest_size=16).digest(), bgr.shape, extra)
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def detect(self, bgr: np.ndarray) -> list[tuple[float, float, float, float]]:
        def compute():
            rgb = np.ascontiguousarray(bgr[:, :, ::-1])
            return [(r.left(), r.top(), r.right(), r.bottom()) for r in self._detector(rgb, 1)]
        return self._remembered("detect", bgr, None, compute)

    def detect_near(self, bgr: np.ndarray, box) -> list[tuple[float, float, float, float]]:
        """Faces found in a view around `box` (a box's width and height on each side), in frame pixels: the
        same detector as `detect`, on less picture."""
        x1, y1, x2, y2 = box
        w, h = x2 - x1, y2 - y1
        left, top = max(0, int(x1 - w)), max(0, int(y1 - h))
        view = bgr[top:min(bgr.shape[0], int(y2 + h)), left:min(bgr.shape[1], int(x2 + w))]
        if view.size == 0:
            return []
        return [(a + left, b + top, c + left, d + top) for a, b, c, d in self.detect(view)]

    def found_near(self, bgr: np.ndarray, box) -> tuple[bool, tuple]:
        """Whether a face is found in a view around `box` overlapping it (IoU >= 0.3), and its box (else `box`)."""
        match = max(self.detect_near(bgr, box), key=lambda b: q.iou(b, box), default=None)
        found = match is not None and q.iou(match, box) >= 0.3
        return found, (match if found else box)

    def describe_source(self, bgr: np.ndarray) -> np.ndarray | None:
        """The descriptor of a source photo's widest face (what a swap is judged against), or None without one."""
        found = self.detect(bgr)
        return self.describe(bgr, max(found, key=lambda b: b[2] - b[0])) if found else None

    def _rect(self, box):
        return self._dlib.rectangle(*(int(round(v)) for v in box))

    def describe(self, bgr: np.ndarray, box) -> np.ndarray:
        def compute():
            rgb = np.ascontiguousarray(bgr[:, :, ::-1])
            shape = self._shape(rgb, self._rect(box))
            return np.array(self._net.compute_face_descriptor(rgb, shape))
        return self._remembered("describe", bgr, tuple(int(round(v)) for v in box), compute)

    def five(self, bgr: np.ndarray, box) -> np.ndarray:
        shape = self._shape(np.ascontiguousarray(bgr[:, :, ::-1]), self._rect(box))
        return np.array([(p.x, p.y) for p in shape.parts()], np.float64)


def write_lossless(frames: list[np.ndarray], path: Path) -> None:
    command = [ffmpeg.ffmpeg_binary(), "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "bgr24",
               "-s", f"{SIZE[0]}x{SIZE[1]}", "-r", str(FPS), "-i", "-", "-c:v", "libx264", "-qp", "0",
               "-preset", "veryfast", "-pix_fmt", "yuv420p", str(path)]
    subprocess.run(command, input=b"".join(f.tobytes() for f in frames), check=True)


def read_frames(path: Path) -> list[np.ndarray]:
    info = probe(path)
    raw = subprocess.run(ffmpeg.decode_command(path), capture_output=True, check=True).stdout
    size = info.width * info.height * 3
    return [np.frombuffer(raw[i:i + size], np.uint8).reshape(info.height, info.width, 3)
            for i in range(0, len(raw) - size + 1, size)]


def encoder_floor(frames: list[np.ndarray], source: Path, settings, work: Path) -> list[np.ndarray]:
    """The input frames through ffb's own encoder settings and nothing else."""
    info = probe(source)
    options = ffmpeg.EncodeOptions(ffmpeg.resolve_encoder(settings.output_video_encoder, "mp4"),
                                   settings.output_video_preset, settings.output_video_quality)
    out = work / f"floor-{source.stem}.mp4"
    command = ffmpeg.encode_command(out, info.width, info.height, Fraction(FPS), options, info.colour,
                                    ffmpeg.output_pixel_format(info.width, info.height, info.pixel_format), "mp4")
    subprocess.run(command, input=b"".join(f.tobytes() for f in frames), check=True)
    return read_frames(out)


# ---------------------------------------------------------------- running ffb

def run_ffb(jobs: list[tuple[str, str, Path, Path]], sources: dict[str, Path], engine: str, work: Path,
            use_cli: bool, watermark: bool) -> dict[Path, tuple[float, int]]:
    """Run each (source, mode, target, output dir); returns (seconds, profiles_left) per output dir. Without
    `watermark`, ffb's invisible watermark (on by default, ~1.8 grey levels over the whole frame) is off, so
    the background metric measures the swap alone."""
    done = {}
    if use_cli:
        for source, mode, target, out in jobs:
            started = time.perf_counter()
            result = subprocess.run([sys.executable, "-m", "facefusion_batch", "run", "-s", str(sources[source]),
                                     "-t", str(target), "-o", str(out), "--engine", engine, "--json",
                                     "--face-selector-mode", mode, "--temp-path", str(work / "temp"),
                                     *(() if watermark else ("--no-watermark",))], check=True,
                                    capture_output=True, text=True)
            outcomes = json.loads(result.stdout).get("outcomes", [{}])
            done[out] = (time.perf_counter() - started, int(outcomes[0].get("profiles_left", 0)))
        return done
    from facefusion_batch.runner.driver import run_batch
    from facefusion_batch.engines import build_engine
    from facefusion_batch.executors.local import LocalExecutor
    from facefusion_batch.workflow.processor import prepare
    from facefusion_batch.runner.progress import QuietReporter
    from facefusion_batch.settings import load_settings

    def settings_for(mode: str, out: Path):
        return load_settings(None, os.environ, {"engine": engine, "face_selector_mode": mode,
                                                "temp_path": work / "temp", "output_path": out,
                                                "output_watermark": watermark}).settings

    shared = build_engine(settings_for("many", work / "out"))
    for source, mode, target, out in jobs:
        settings = settings_for(mode, out)
        processor = prepare(settings, sources[source], print, engine=shared)
        started = time.perf_counter()
        with LocalExecutor(settings, sources[source], processor=processor) as executor:
            result = run_batch(settings, [str(target)], executor, QuietReporter())
        if result.failed:
            sys.exit(f"ffb failed on {target}: {[o.reason for o in result.outcomes]}")
        done[out] = (time.perf_counter() - started, sum(o.profiles_left for o in result.outcomes))
    return done


# ---------------------------------------------------------------- scoring

@dataclass
class Scored:
    """One run of ffb: a clip or image with one source."""

    name: str  # clip@source
    clip: str
    source: str
    mode: str
    identity: list[q.Identity] = field(default_factory=list)
    worst: list[tuple[float, np.ndarray, np.ndarray, str, str]] = field(default_factory=list)  # dist, in, out,
    # label, person: the judged faces, each person's worst kept for the sheets
    small: list[bool] = field(default_factory=list)  # per identity verdict: the true face at most q.SMALL px wide
    turned: list[bool] = field(default_factory=list)  # per identity verdict: the true face turned (yaw >= q.TURNED)
    tracks: dict[tuple[int, int], q.TrackStats] = field(default_factory=dict)
    people: dict[tuple[int, int], str] = field(default_factory=dict)  # who each track's face is
    classes: list[tuple[tuple[str, ...], bool]] = field(default_factory=list)  # per present face-frame (many)
    faint: int = 0  # missed face-frames changed faintly (see q.is_faint)
    chroma_loss: list[float] = field(default_factory=list)  # swapped judged face-frames
    switches: list[int] = field(default_factory=list)  # `one` took another face while its own was present
    switches_any: int = 0  # `one` took another face at all (also after its own left the picture)
    background: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    events: list[tuple[str, int, tuple[int, int]]] = field(default_factory=list)  # kind, frame, track
    misses: list[tuple[str, np.ndarray, np.ndarray, str]] = field(default_factory=list)  # class, in, out, label
    turned_crops: list[tuple[np.ndarray, np.ndarray, str]] = field(default_factory=list)
    # Judged faces the judge finds in the input but not again in the output (what `found` counts against): in, out,
    # label. What they look like says why (a smudge, a flat cheek, a source's sunglasses), which the share cannot.
    lost: list[tuple[np.ndarray, np.ndarray, str]] = field(default_factory=list)
    frames: int = 0
    floor_flicker: list[float] = field(default_factory=list)  # the encoder's own added flicker in face boxes
    phantom_frames: int = 0  # frames where the output changed a face-sized patch where no face is
    worst_background: tuple[float, int] = (0.0, -1)  # the frame whose background changed most: (change, frame)
    profiles_left: int = 0  # ffb's own count of face-frames it left unswapped as near profile
    seconds: float = 0.0


def face_crop(frame: np.ndarray, box, size: int = 112, margin: float = 0.25) -> np.ndarray:
    x1, y1, x2, y2 = box
    w, h = x2 - x1, y2 - y1
    side = max(w, h) * (1 + 2 * margin)
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    matrix = np.array([[size / side, 0, size / 2 - cx * size / side], [0, size / side, size / 2 - cy * size / side]])
    return cv2.warpAffine(frame, matrix, (size, size), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_CONSTANT)


def judge_frame(judge: Judge, inp: np.ndarray, out: np.ndarray, source_descriptor: np.ndarray,
                target_people: list[tuple[tuple, str, float]], mode: str, source_person: str,
                scored: Scored, label: str) -> None:
    """Identity verdicts for the faces the judge finds in `inp` (not those of the source's own person)."""
    found_in = judge.detect(inp)
    candidates = []
    for box in found_in:
        person = max(target_people, key=lambda tp: q.iou(tp[0], box), default=None)
        matched = person is not None and q.iou(person[0], box) > 0.3
        name = person[1] if matched else "?"
        turned = matched and abs(person[2]) >= q.TURNED
        if name == source_person:
            continue
        width = (person[0][2] - person[0][0]) if matched else (box[2] - box[0])  # the true box's, where known
        candidates.append((q.strength(inp, out, box), box, name, width, turned))
    if mode == "one":  # only the face `one` chose is meant to change
        candidates = [max(candidates, key=lambda c: c[0])] if candidates else []
        candidates = [c for c in candidates if c[0] >= q.SWAPPED]
    for change, box, name, width, turned in candidates:
        found, out_box = judge.found_near(out, box)
        d_out = judge.describe(out, out_box)
        d_in = judge.describe(inp, box)
        verdict = q.Identity(float(np.linalg.norm(d_out - source_descriptor)), float(np.linalg.norm(d_out - d_in)),
                             found, judge.found_near(inp, box)[0])
        scored.identity.append(verdict)
        if verdict.found_in and not found:
            scored.lost.append((face_crop(inp, box), face_crop(out, out_box),
                                f"{label} d={verdict.to_source:.2f}"))
        scored.small.append(width <= q.SMALL)
        scored.turned.append(turned)
        if change >= q.SWAPPED:
            scored.chroma_loss.append(q.chroma_loss(inp, out, box))
        scored.worst.append((verdict.to_source, face_crop(inp, box), face_crop(out, out_box),
                             f"{label} d={verdict.to_source:.2f}{'' if found else ' lost'}", f"{scored.name}/{name}"))


def _moved(frame: np.ndarray, step: np.ndarray) -> np.ndarray:
    return cv2.warpAffine(frame, step, (frame.shape[1], frame.shape[0]), flags=cv2.INTER_CUBIC,
                          borderMode=cv2.BORDER_REFLECT)


def score_clip(clip: Clip, source: str, person: str, inp: list[np.ndarray], out: list[np.ndarray],
               floor: list[np.ndarray], judge: Judge, source_descriptor: np.ndarray) -> Scored:
    scored = Scored(f"{clip.name}@{source}", clip.name, source, clip.mode, frames=len(inp))
    if len(out) != len(inp):
        sys.exit(f"{clip.name}@{source}: output has {len(out)} frames, input {len(inp)}")
    series: dict[tuple[int, int], tuple[list, list, list, list]] = {}
    chosen: list[int | None] = []
    moved_in = moved_out = None
    for t, boxes in enumerate(clip.boxes):
        strengths = {}
        same_shot = t > 0 and clip.shot_of[t - 1] == clip.shot_of[t]
        if same_shot and boxes:  # the previous frames moved by the camera's step, once for every face
            step = camera_step(clip.cameras[t - 1], clip.cameras[t])
            moved_in, moved_out = _moved(inp[t - 1], step), _moved(out[t - 1], step)
        for track, box in boxes.items():
            s = q.strength(inp[t], out[t], box)
            strengths[track] = s
            if same_shot:
                flick = q.added_flicker(inp[t - 1], inp[t], out[t - 1], out[t], box)
                jitter = q.mean_abs(out[t], moved_out, box) - q.mean_abs(inp[t], moved_in, box)
                scored.floor_flicker.append(q.added_flicker(inp[t - 1], inp[t], floor[t - 1], floor[t], box))
            else:
                flick = jitter = float("nan")
            if clip.mode == "many" and clip.people[track] != person:  # a face of the source's own person
                missed = s < q.SWAPPED                                  # changes little when swapped: not counted
                kinds = q.face_classes(box, SIZE, clip.yaw[track])
                scored.classes.append((kinds, missed))
                if missed:
                    faint = q.is_faint(s, q.strength(inp[t], floor[t], box))
                    scored.faint += faint
                    kind = "faint" if faint else kinds[0]
                    if sum(m[0] == kind for m in scored.misses) < 6 and t % 3 == 0:
                        scored.misses.append((kind, face_crop(inp[t], box, 96), face_crop(out[t], box, 96),
                                              f"{clip.name[:9]} {kind} #{t} {s:.1f}"))
            values = series.setdefault(track, ([], [], [], []))
            values[0].append(s)
            values[1].append(flick)
            values[2].append(t)
            values[3].append(jitter)
        chosen.append(q.chosen_track(strengths) if clip.mode == "one" else None)
        scored.background.append(q.background_diff(inp[t], out[t], clip.near[t]))
        scored.phantom_frames += q.phantoms(inp[t], out[t], clip.near[t]) > 0
        if np.isfinite(scored.background[-1]) and scored.background[-1] > scored.worst_background[0]:
            scored.worst_background = (scored.background[-1], t)
        scored.floor.append(q.background_diff(inp[t], floor[t], clip.near[t]))
    for track, (strengths, flickers, frames, jitters) in series.items():
        expected = clip.mode == "many" and clip.people[track] != person
        stats = q.track_stats(strengths, flickers, frames, expected=expected, jitters=jitters)
        scored.tracks[track] = stats
        scored.people[track] = clip.people[track]
        scored.events += [("miss", f, track) for f in stats.missed_at] + [("jump", f, track) for f in stats.jumps_at]
    if clip.mode == "one":
        scored.switches = q.switches(chosen, clip.shot_of, [set(boxes) for boxes in clip.boxes])
        scored.switches_any = len(q.switches(chosen, clip.shot_of))
        scored.events += [("switch", f, chosen[f]) for f in scored.switches]
        scored.events += [("none", t, track) for t, track in q.nobody_swapped(chosen, clip.boxes, clip.people, person)]
    for t in range(0, len(inp), JUDGE_EVERY):
        people = [(box, clip.people[track], clip.yaw[track]) for track, box in clip.boxes[t].items()]
        judge_frame(judge, inp[t], out[t], source_descriptor, people, clip.mode, person, scored,
                    f"{clip.name}@{source}#{t}")
        for track, box in clip.boxes[t].items():
            shown = sum(text.startswith(f"{clip.name}:{track[0]}.{track[1]}@") for *_, text in scored.turned_crops)
            if abs(clip.yaw[track]) >= q.TURNED and shown < 2 and t % (JUDGE_EVERY * 2) == 0:
                scored.turned_crops.append((face_crop(inp[t], box, 160), face_crop(out[t], box, 160),
                                      f"{clip.name}:{track[0]}.{track[1]}@{source}#{t} yaw {clip.yaw[track]:+.0f}"))
    return scored


def score_image(name: str, photo: Photo, source: str, person: str, inp: np.ndarray, out: np.ndarray, mode: str,
                judge: Judge, source_descriptor: np.ndarray) -> Scored:
    scored = Scored(f"{name}@{source}", name, source, mode, frames=1)
    judge_frame(judge, inp, out, source_descriptor, list(zip(photo.boxes, photo.people, photo.yaw)), mode, person,
                scored, f"{name}@{source}")
    scored.background.append(q.background_diff(inp, out, photo.boxes))
    scored.phantom_frames += q.phantoms(inp, out, photo.boxes) > 0
    size = (inp.shape[1], inp.shape[0])
    for box, yaw, face_person in zip(photo.boxes, photo.yaw, photo.people):
        s = q.strength(inp, out, box)
        if mode == "many" and box[2] - box[0] >= MIN_FACE and face_person != person:
            scored.classes.append((q.face_classes(box, size, yaw), s < q.SWAPPED))
            scored.faint += q.is_faint(s, 0.0)
        if abs(yaw) >= q.TURNED:
            scored.turned_crops.append((face_crop(inp, box, 160), face_crop(out, box, 160),
                                  f"{name}@{source} yaw {yaw:+.0f}"))
    return scored


# ---------------------------------------------------------------- report

def block(items: list[Scored]) -> dict:
    """The metrics of some runs together."""
    many = [s for s in items if s.mode == "many"]
    identity = q.identity_summary([v for s in many for v in s.identity])
    large = q.identity_summary([v for s in many for v, small in zip(s.identity, s.small) if not small])
    turned = q.identity_summary([v for s in many for v, t in zip(s.identity, s.turned) if t])
    identity_one = q.identity_summary([v for s in items if s.mode == "one" for v in s.identity])
    tracks = [t for s in items for t in s.tracks.values()]
    flicker = q.flicker_summary([f for t in tracks for f in t.flicker])
    jitter = q.flicker_summary([f for t in tracks for f in t.jitter])
    records = [r for s in many for r in s.classes]
    present, missed = len(records), sum(m for _, m in records)
    background = [b for s in items for b in s.background if np.isfinite(b)]
    floor = [b for s in items for b in s.floor if np.isfinite(b)]
    chroma = [c for s in items for c in s.chroma_loss if np.isfinite(c)]
    by_source: dict[str, list[q.Identity]] = {}
    for s in many:
        by_source.setdefault(s.source, []).extend(s.identity)
    lowest, lowest_share = q.lowest_share(by_source)
    worst = max(((t.longest_miss, f"{s.name} face {track[0]}.{track[1]}") for s in many
                 for track, t in s.tracks.items()), default=(0, "-"))
    return {
        "faces_judged": identity["faces"], "accepted": identity["accepted"], "closer": identity["closer"],
        "found": identity["found"], "found_floor": identity["found_floor"], "accepted_one": identity_one["accepted"],
        "accepted_large": large["accepted"],
        "accepted_turned": turned["accepted"], "faces_judged_turned": turned["faces"],
        # `found` and its floor apart for faces over q.SMALL px and for turned ones: where the swaps lose faces the
        # judge still finds in the input, and where the judge's own look is what loses them.
        "found_large": large["found"], "found_floor_large": large["found_floor"],
        "found_turned": turned["found"], "found_floor_turned": turned["found_floor"],
        "lowest_source": lowest, "lowest_source_accepted": lowest_share,
        "face_frames": present, "missed": missed, "missed_share": missed / present if present else float("nan"),
        "faint": sum(s.faint for s in many), "profiles_left": sum(s.profiles_left for s in items),
        # Misses ffb's own profile count does not explain (its count may hold faces not counted present here).
        "missed_not_left": max(0, missed - sum(s.profiles_left for s in many)),
        "classes": q.class_misses(records),
        "one_frames_none": sum(1 for s in items if s.mode == "one" for e in s.events if e[0] == "none"),
        # The worst a viewer sees of a face left as it is: the longest run of frames one face was missed in (and
        # where), and how many faces present NEVER_FRAMES frames or more were never swapped at all.
        "longest_miss": worst[0], "longest_miss_face": worst[1],
        # ... and the faces missed in the most frames: which, who, how many of the frames it was present in, from when
        # to when (what to look at first, and whether it is one face's or many).
        "missed_faces": [f"{name} face {track[0]}.{track[1]} {who}: {t.missed} of {t.frames} frames "
                         f"({t.missed_at[0]}-{t.missed_at[-1]})" for _, name, track, who, t in sorted(
                             ((-t.missed, s.name, track, s.people.get(track, "?"), t) for s in many
                              for track, t in s.tracks.items() if t.missed), key=lambda row: row[:3])][:MISSED_FACES],
        "never_swapped": sum(1 for s in many for t in s.tracks.values()
                             if t.frames >= NEVER_FRAMES and t.missed == t.frames),
        # Missed face-frames before a face's first swap (faces found late: coming in at an edge, or seen only
        # later), apart from those left after it.
        "missed_late": sum(t.late for s in many for t in s.tracks.values()),
        "toggles": sum(t.toggles for t in tracks), "jumps": sum(t.jumps for t in tracks),
        "flicker_mean": flicker[0], "flicker_p95": flicker[1], "jitter_mean": jitter[0], "jitter_p95": jitter[1],
        "floor_flicker_mean": q.flicker_summary([f for s in items for f in s.floor_flicker])[0],
        "switches": sum(len(s.switches) for s in items if s.mode == "one"),
        "switches_any": sum(s.switches_any for s in items if s.mode == "one"),
        "phantom_frames": sum(s.phantom_frames for s in items),
        "background": float(np.mean(background)) if background else float("nan"),
        "floor": float(np.mean(floor)) if floor else float("nan"),
        "chroma_loss": float(np.mean(chroma)) if chroma else float("nan"),
        "seconds": sum(s.seconds for s in items),
    }


def summary(rows: list[Scored]) -> dict:
    def grouped(key) -> dict:
        names = list(dict.fromkeys(key(s) for s in rows))
        return {name: block([s for s in rows if key(s) == name]) for name in names}

    return {"total": block(rows), "clips": grouped(lambda s: s.clip), "sources": grouped(lambda s: s.source),
            "runs": {s.name: block([s]) for s in rows}}


GOALS = (  # the table: key, text, test
    ("missed_share", "missed face-frames <= 1 %", lambda v: v <= 0.01),
    ("accepted", "judge accepts (many) >= 80 %", lambda v: v >= 0.8),
    ("lowest_source_accepted", "no source below 60 %", lambda v: v >= 0.6),
    ("found", "still found as a face >= 95 %", lambda v: v >= 0.95),
    ("flicker_mean", "added flicker mean <= 0.5", lambda v: v <= 0.5),
    ("flicker_p95", "added flicker p95 <= 2.0", lambda v: v <= 2.0),
    ("switches", "`one` switches 0", lambda v: v == 0),
)

COLUMNS = (("faces_judged", "judged", "{:.0f}"), ("accepted", "accept", "{:.0%}"), ("accepted_large", "acc>40", "{:.0%}"),
           ("accepted_turned", "acc.turn", "{:.0%}"),
           ("closer", "closer", "{:.0%}"),
           ("found", "found", "{:.0%}"), ("found_floor", "found.in", "{:.0%}"), ("accepted_one", "acc.one", "{:.0%}"),
           ("missed", "missed", "{:.0f}"),
           ("face_frames", "of", "{:.0f}"), ("missed_share", "miss%", "{:.1%}"), ("faint", "faint", "{:.0f}"),
           ("profiles_left", "profile", "{:.0f}"),
           ("missed_not_left", "miss-prof", "{:.0f}"), ("longest_miss", "miss.run", "{:.0f}"),
           ("never_swapped", "never", "{:.0f}"), ("missed_late", "late", "{:.0f}"),
           ("one_frames_none", "one:none", "{:.0f}"),
           ("toggles", "toggles", "{:.0f}"), ("jumps", "jumps", "{:.0f}"), ("flicker_mean", "flick", "{:+.2f}"),
           ("flicker_p95", "p95", "{:+.2f}"), ("jitter_p95", "jit95", "{:+.2f}"), ("switches", "switch", "{:.0f}"),
           ("switches_any", "sw.any", "{:.0f}"),
           ("phantom_frames", "phantom", "{:.0f}"), ("background", "bg", "{:.2f}"), ("floor", "floor", "{:.2f}"), ("chroma_loss", "grey", "{:+.1f}"))


def _cell(value, fmt: str) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "-"
    return fmt.format(value)


def table(report: dict) -> str:
    lines = []
    for section in ("clips", "sources"):
        lines.append(f"{'per ' + section[:-1]:<22}" + "".join(f"{title:>10}" for _, title, _ in COLUMNS))
        for name, values in [*report[section].items(), ("TOTAL", report["total"])]:
            lines.append(f"{name[:22]:<22}" + "".join(f"{_cell(values.get(k), fmt):>10}" for k, _, fmt in COLUMNS))
        lines.append("")
    total = report["total"]
    lines.append("missed by class (many): " + ", ".join(
        f"{name} {c['missed']}/{c['frames']} ({_cell(c['share'], '{:.1%}')})" for name, c in total["classes"].items()))
    for key, text, test in GOALS:
        value = total[key]
        ok = value is not None and np.isfinite(value) and test(value)
        shown = _cell(value, "{:.1%}" if "share" in key or "accept" in key or key == "found"
                      else "{:.0f}" if key == "switches" else "{:+.2f}")
        extra = f" ({total['lowest_source']})" if key == "lowest_source_accepted" else ""
        if key == "found" and total.get("found_floor") is not None:  # reports saved before it have none
            floor = _cell(total["found_floor"], "{:.1%}")
            extra = f" (the judge's own floor, the input's faces found again the same way: {floor})"
        lines.append(f"{'ok ' if ok else 'NO '} {text}: {shown}{extra}")
    lines.append(f"    background {total['background']:.2f} vs encoder floor {total['floor']:.2f} "
                 f"(goal within 0.1); closer {_cell(total['closer'], '{:.0%}')}; "
                 f"faint swaps {total['faint']}; profiles left {total['profiles_left']}; "
                 f"frames with a phantom swap {total['phantom_frames']}")
    lines.append(f"    longest run a face was left as it is: {total['longest_miss']} frames "
                 f"({total['longest_miss_face']}); faces never swapped: {total['never_swapped']}")
    lines.append(f"    missed before a face's first swap (found late): {total.get('missed_late', '-')}")
    if total.get("found_large") is not None:  # reports saved before it have none
        lines.append("    still found, by class (the judge's floor): " + ", ".join(
            f"{name} {_cell(total[f'found{key}'], '{:.1%}')} ({_cell(total[f'found_floor{key}'], '{:.1%}')})"
            for name, key in ((f"faces over {q.SMALL:g} px", "_large"), ("turned", "_turned"))))
    if total.get("missed_faces"):  # reports saved before it have none
        lines.append("    faces missed most: " + "; ".join(total["missed_faces"][:MISSED_TABLE]))
    return "\n".join(lines)


def _label(image: np.ndarray, text: str) -> np.ndarray:
    image = image.copy()
    cv2.putText(image, text, (3, image.shape[0] - 5), cv2.FONT_HERSHEY_SIMPLEX, 0.33, (0, 0, 0), 2, cv2.LINE_AA)
    cv2.putText(image, text, (3, image.shape[0] - 5), cv2.FONT_HERSHEY_SIMPLEX, 0.33, (255, 255, 255), 1,
                cv2.LINE_AA)
    return image


def _grid(cells: list[np.ndarray], columns: int) -> np.ndarray:
    h, w = cells[0].shape[:2]
    rows = -(-len(cells) // columns)
    sheet = np.full((rows * (h + 4), columns * (w + 4), 3), 40, np.uint8)
    for i, cell in enumerate(cells):
        r, c = divmod(i, columns)
        sheet[r * (h + 4):r * (h + 4) + h, c * (w + 4):c * (w + 4) + w] = cell
    return sheet


def sheets(rows: list[Scored], clip_frames: dict[str, tuple[Clip, list, list]], directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []

    def write(name: str, cells: list[np.ndarray], columns: int) -> None:
        if cells:
            written.append(directory / name)
            cv2.imwrite(str(written[-1]), _grid(cells, columns))

    def worst_of(items: list[Scored], count: int) -> list:  # the worst judged faces, one per run and person
        kept: dict[str, tuple] = {}
        for w in (w for s in items for w in s.worst):
            if w[4] not in kept or w[0] > kept[w[4]][0]:
                kept[w[4]] = w
        return sorted(kept.values(), key=lambda w: -w[0])[:count]

    worst = worst_of(rows, 24)
    write("worst_identity.png", [c for d, a, b, text, _ in worst for c in (_label(a, "in"), _label(b, text))], 8)
    by_source = []
    for source in dict.fromkeys(s.source for s in rows):  # each source's worst four, beside its photo's name
        mine = worst_of([s for s in rows if s.source == source], 4)
        cells = [c for d, a, b, text, _ in mine for c in (_label(a, "in"), _label(b, text))]
        by_source += cells + [np.zeros((112, 112, 3), np.uint8)] * (8 - len(cells))
    write("worst_by_source.png", by_source, 8)
    misses = sorted((m for s in rows for m in s.misses), key=lambda m: m[0])
    write("misses.png", [c for kind, a, b, text in misses for c in (_label(a, "in"), _label(b, text))], 8)
    strips = []
    for s in rows:
        if s.name not in clip_frames:
            continue
        clip, inp, out = clip_frames[s.name]
        seen = set()
        for kind, frame, track in sorted(s.events, key=lambda e: (e[0] != "switch", e[0] != "jump", e[1])):
            if len(strips) >= 16 * 2 or (kind, track, frame // 12) in seen or sum(k == kind for k, *_ in seen) >= 2:
                continue
            seen.add((kind, track, frame // 12))
            span = [t for t in range(frame - 3, frame + 4) if 0 <= t < len(inp)]
            box = clip.boxes[frame].get(track) if track is not None else None
            if box is None:
                continue
            strips.append([_label(face_crop(inp[t], box, 96), f"in {t}") for t in span]
                          + [np.zeros((96, 96, 3), np.uint8)] * (7 - len(span)))
            strips.append([_label(face_crop(out[t], box, 96), f"{kind} {s.name[:10]}" if t == frame else str(t))
                           for t in span] + [np.zeros((96, 96, 3), np.uint8)] * (7 - len(span)))
    write("events.png", [c for row in strips for c in row], 7)
    backgrounds = []  # the runs whose background changed most: input, output, |out - in| x 8 with faces boxed
    for s in sorted((s for s in rows if s.name in clip_frames and s.worst_background[1] >= 0),
                    key=lambda s: -s.worst_background[0])[:4]:
        clip, inp, out = clip_frames[s.name]
        t = s.worst_background[1]
        diff = np.clip(8 * np.abs(out[t].astype(np.int16) - inp[t].astype(np.int16)), 0, 255).astype(np.uint8)
        for x1, y1, x2, y2 in clip.near[t]:
            cv2.rectangle(diff, (int(x1), int(y1)), (int(x2), int(y2)), (0, 255, 0), 1)
        backgrounds += [_label(inp[t], f"in {s.name} #{t}"), _label(out[t], "out"),
                        _label(diff, f"|out-in| x8, bg {s.worst_background[0]:.2f}")]
    write("background.png", backgrounds, 3)
    write("turned.png", [c for s in rows for a, b, text in s.turned_crops
                         for c in (_label(a, "in"), _label(b, text))][:32], 8)
    lost = [item for s in rows for item in s.lost[:LOST_PER_RUN]]  # a few of every run's, so each source shows
    write("lost.png", [c for a, b, text in lost[:LOST_SHOWN] for c in (_label(a, "in"), _label(b, text))], 8)
    return written


# ---------------------------------------------------------------- main

def run_split(split_name: str, args, settings, judge: Judge) -> dict:
    started = time.perf_counter()
    split = corpus.build_split(split_name, judge, settings.cache_path / "quality", args.quick)
    seeds = corpus.clip_seeds(split.clips)
    if args.only:
        split.clips = [c for c in split.clips if any(fnmatch.fnmatch(c.name, p) for p in args.only)]
        split.images = [i for i in split.images if any(fnmatch.fnmatch(i[0], p) for p in args.only)]
    work = (args.keep / split_name) if args.keep else Path(tempfile.mkdtemp(prefix=f"ffb-quality-{split_name}-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        sources, descriptors = {}, {}
        for name, (image, _) in split.sources.items():
            sources[name] = work / f"source-{name}.png"
            cv2.imwrite(str(sources[name]), image)
            descriptors[name] = judge.describe_source(image)
            if descriptors[name] is None:
                sys.exit(f"the judge finds no face in source {name}")
        jobs, inputs, rendered = [], {}, {}
        for clip in split.clips:
            key = tuple(id(shot) for shot in clip.shots)
            if key in rendered:  # the same shots in another mode: one rendering, one input file
                twin = rendered[key]
                clip.frames, clip.boxes, clip.near, clip.shot_of = twin.frames, twin.boxes, twin.near, twin.shot_of
                clip.people, clip.yaw, clip.cameras = twin.people, twin.yaw, twin.cameras
                inputs[clip.name] = inputs[twin.name]
            else:
                render(clip, seeds[clip.name])
                inputs[clip.name] = work / f"{clip.name}.mp4"
                write_lossless(clip.frames, inputs[clip.name])
                rendered[key] = clip
            for source in clip.sources:
                jobs.append((source, clip.mode, inputs[clip.name], work / f"out-{clip.name}@{source}"))
        for name, photo, mode, names in split.images:
            path = work / f"{name}.png"
            cv2.imwrite(str(path), photo.image)
            for source in names:
                jobs.append((source, mode, path, work / f"out-{name}@{source}"))
        made = time.perf_counter()
        done = run_ffb(jobs, sources, args.engine, work, args.cli, args.watermark)
        ran = time.perf_counter()
        rows, clip_frames = [], {}
        for clip in split.clips:
            inp = read_frames(inputs[clip.name])
            floor = encoder_floor(inp, inputs[clip.name], settings, work)
            for source in clip.sources:
                out_dir = work / f"out-{clip.name}@{source}"
                out = read_frames(out_dir / inputs[clip.name].name)
                row = score_clip(clip, source, split.sources[source][1], inp, out, floor, judge, descriptors[source])
                row.seconds, row.profiles_left = done[out_dir]
                rows.append(row)
                clip_frames[row.name] = (clip, inp, out)
        for name, photo, mode, names in split.images:
            for source in names:
                out_dir = work / f"out-{name}@{source}"
                out = cv2.imread(str(out_dir / f"{name}.png"))
                row = score_image(name, photo, source, split.sources[source][1], photo.image, out, mode, judge,
                                  descriptors[source])
                row.seconds, row.profiles_left = done[out_dir]
                rows.append(row)
        report = summary(rows)
        report["split"] = split_name
        report["quick"] = args.quick
        report["watermark"] = args.watermark
        report["time"] = {"make": made - started, "ffb": ran - made, "score": time.perf_counter() - ran}
        report["corpus"] = {
            "sources": {name: person for name, (_, person) in split.sources.items()},
            "clips": {c.name: {"mode": c.mode, "sources": c.sources, "frames": len(c.frames),
                               "people": sorted(set(c.people.values()))} for c in split.clips},
            "images": {name: {"mode": mode, "sources": names, "people": photo.people}
                       for name, photo, mode, names in split.images}}
        report["sheets"] = [str(p) for p in sheets(rows, clip_frames, args.sheets / split_name)]
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return report


def corpus_sheets(split_name: str, args, settings, judge: Judge) -> list[Path]:
    """The corpus of a split without ffb: per clip, 12 of its frames with every face's true box (green clear,
    yellow cut by the edge, cyan small, magenta turned; thin grey: touching the frame but not present, labelled
    with the person and yaw), and its images with their boxes; and a count of its face-frames by class. Only to
    check the corpus itself (boxes, annotations): nothing of ffb runs."""
    started = time.perf_counter()
    split = corpus.build_split(split_name, judge, settings.cache_path / "quality", args.quick)
    seeds = corpus.clip_seeds(split.clips)
    folder = args.sheets / f"corpus-{split_name}"
    folder.mkdir(parents=True, exist_ok=True)
    colours = {"clear": (0, 200, 0), "edge": (0, 220, 255), "small": (255, 220, 0), "turned": (255, 0, 255)}

    def drawn(image, boxes, near, people, yaws, scale):
        out = cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
        for box in near:
            cv2.rectangle(out, *(tuple(int(round(v * scale)) for v in pair) for pair in (box[:2], box[2:])),
                          (150, 150, 150), 1)
        for key, box in boxes.items():
            classes = q.face_classes(box, image.shape[1::-1], yaws[key])
            colour = colours["turned" if "turned" in classes else classes[0]]
            corner = tuple(int(round(v * scale)) for v in box[:2])
            cv2.rectangle(out, corner, tuple(int(round(v * scale)) for v in box[2:]), colour, 2)
            cv2.putText(out, f"{people[key]} {yaws[key]:.0f}", (corner[0], max(10, corner[1] - 3)),
                        cv2.FONT_HERSHEY_SIMPLEX, 0.35, colour, 1)
        return out

    written, counts = [], {}
    for clip in split.clips:
        render(clip, seeds[clip.name])
        picks = np.linspace(0, len(clip.frames) - 1, 12).round().astype(int)
        tiles = []
        for i in picks:
            tile = drawn(clip.frames[i], clip.boxes[i], clip.near[i], clip.people, clip.yaw, 0.5)
            cv2.putText(tile, str(i), (4, 14), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (255, 255, 255), 1)
            tiles.append(tile)
        sheet = np.vstack([np.hstack(tiles[r:r + 4]) for r in range(0, 12, 4)])
        written.append(folder / f"{clip.name}.png")
        cv2.imwrite(str(written[-1]), sheet)
        tally = counts.setdefault(clip.name, {"frames": len(clip.frames)})
        for boxes in clip.boxes:
            for key, box in boxes.items():
                for kind in q.face_classes(box, SIZE, clip.yaw[key]):
                    tally[kind] = tally.get(kind, 0) + 1
        widths = [b[2] - b[0] for boxes in clip.boxes for b in boxes.values()]
        tally["width"] = (round(min(widths)), round(max(widths))) if widths else None
    for name, photo, mode, names in split.images:
        keys = {i: box for i, box in enumerate(photo.boxes)}
        scale = min(1.0, 1280 / photo.image.shape[1])
        written.append(folder / f"{name}.png")
        cv2.imwrite(str(written[-1]), drawn(photo.image, keys, [], dict(enumerate(photo.people)),
                                            dict(enumerate(photo.yaw)), scale))
    for name, (image, person) in split.sources.items():
        written.append(folder / f"source-{name}.png")
        cv2.imwrite(str(written[-1]), image)
    for name, tally in counts.items():
        print(name, tally)
    print(f"corpus of {split_name}: built and rendered in {time.perf_counter() - started:.0f} s; sheets in {folder}")
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="tune", choices=(*corpus.SPLITS, "both"),
                        help="which split of the corpus (tune on `tune`, `fifth`, `seventh`, `fresh`, "
                             "`thirteenth` and `turned` (turned sources); `heldout`, `blind`, `sixth`, `eighth`, "
                             "`ninth`, `tenth`, `eleventh`, `twelfth`, `fourteenth` are for judging, never for "
                             "tuning; `both`: tune and heldout)")
    parser.add_argument("--corpus-only", action="store_true",
                        help="no ffb: render the split's clips and write sheets of their frames with the true "
                             "boxes (to check the corpus itself), into SHEETS/corpus-SPLIT")
    parser.add_argument("--quick", action="store_true", help="half the frames, one source per clip (iteration, ~3 min a split)")
    parser.add_argument("--only", nargs="+", metavar="PATTERN",
                        help="only the clips and images whose names match (fnmatch patterns, e.g. 't_crowd*'): "
                             "iteration on one class of failure; the split's totals are those clips' only")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--sheets", type=Path, default=Path("quality-sheets"),
                        help="contact sheets go here, a folder per split")
    parser.add_argument("--engine", default="offline", choices=("auto", "neural", "offline"))
    parser.add_argument("--cli", action="store_true", help="run ffb as a subprocess instead of in-process")
    parser.add_argument("--watermark", action="store_true",
                        help="keep ffb's invisible watermark on (its default; off here so `bg` measures the swap)")
    parser.add_argument("--keep", type=Path, help="keep the clips and outputs in this folder")
    parser.add_argument("--save", type=Path, help="also write the report as JSON to this file")
    parser.add_argument("--table", type=Path, help="print the table of a report saved with --save, and exit")
    args = parser.parse_args()
    if args.table:
        saved = json.loads(args.table.read_text())
        for report in saved.values() if "total" not in saved else [saved]:
            print(f"== {report.get('split', '?')}\n{table(report)}")
        return 0
    from facefusion_batch.settings import load_settings

    settings = load_settings(None, os.environ, {"engine": args.engine}).settings
    judge = Judge()
    splits = ("tune", "heldout") if args.split == "both" else (args.split,)
    if args.corpus_only:
        for name in splits:
            corpus_sheets(name, args, settings, judge)
        return 0
    reports = {name: run_split(name, args, settings, judge) for name in splits}
    saved = reports[splits[0]] if len(splits) == 1 else reports
    if args.save:
        args.save.write_text(json.dumps(saved, indent=1, default=float))
    if args.json:
        print(json.dumps(saved, indent=1, default=float))
    else:
        for name, report in reports.items():
            print(f"== split {name}{' (quick)' if args.quick else ''}")
            print(table(report))
            print(f"time: make {report['time']['make']:.0f} s, ffb {report['time']['ffb']:.0f} s, "
                  f"score {report['time']['score']:.0f} s; sheets: {', '.join(report['sheets'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

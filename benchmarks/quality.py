"""Output quality of ffb, judged by an independent face-recognition model (dlib), on clips made from real faces.

    pip install -e '.[quality]'        # dlib-bin + face-recognition-models: the judge, never used by ffb
    python benchmarks/quality.py [--quick] [--json] [--sheets DIR] [--engine offline] [--cli]

Clips (640x360, 25 fps, lossless H.264 so the input is exact) are composed from real photos: a group of six
(insightface 2.1's t1.jpg, turned and tilted faces) under a camera pan/zoom/roll, a still shot with sensor
noise, and three shots joined by hard cuts; images too. The generator knows every face's true box in every
frame, so the temporal metrics need no detector. Sources are four identities (Grace Hopper, Eileen Collins,
two faces from t1), never the same person as the faces they replace. Metrics (docs/quality.md): identity
(judge distance to source and original, face still found), background change against the encoder's own
floor (the input re-encoded with the same settings), and per-track temporal metrics (missed face-frames,
toggles, added flicker, jumps, `one`-mode switches). Contact sheets (PNG) show the worst faces, strips
around each jump/switch/miss and turned faces zoomed.

The insightface wheel is fetched once with `pip download --no-deps insightface==2.1` into the cache (its
images are read from the wheel at run time, never committed); pass --insightface-wheel to use a copy.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np

from facefusion_batch.bench import quality as q
from facefusion_batch.video import ffmpeg
from facefusion_batch.video.probe import probe

ROOT = Path(__file__).resolve().parents[1]
SIZE = (640, 360)
FPS = 25
NOISE = 1.5  # sensor noise, grey levels
JUDGE_EVERY = 8
MIN_FACE = 24  # true faces smaller than this (pixels) are not counted as present
TURNED = 30.0  # yaw (degrees) from which a face counts as turned


# ---------------------------------------------------------------- the judge (dlib; benchmark only)

class Judge:
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

    def detect(self, bgr: np.ndarray) -> list[tuple[float, float, float, float]]:
        rgb = np.ascontiguousarray(bgr[:, :, ::-1])
        return [(r.left(), r.top(), r.right(), r.bottom()) for r in self._detector(rgb, 1)]

    def _rect(self, box):
        return self._dlib.rectangle(*(int(round(v)) for v in box))

    def describe(self, bgr: np.ndarray, box) -> np.ndarray:
        rgb = np.ascontiguousarray(bgr[:, :, ::-1])
        shape = self._shape(rgb, self._rect(box))
        return np.array(self._net.compute_face_descriptor(rgb, shape))

    def five(self, bgr: np.ndarray, box) -> np.ndarray:
        shape = self._shape(np.ascontiguousarray(bgr[:, :, ::-1]), self._rect(box))
        return np.array([(p.x, p.y) for p in shape.parts()], np.float64)


# ---------------------------------------------------------------- real faces

@dataclass
class Photo:
    name: str  # also the identity of its main face
    image: np.ndarray
    boxes: list[tuple[float, float, float, float]]  # true faces, in photo pixels
    people: list[str]  # identity of each box
    yaw: list[float] = field(default_factory=list)


def insightface_images(cache: Path, wheel: Path | None) -> dict[str, np.ndarray]:
    if wheel is None:
        cache.mkdir(parents=True, exist_ok=True)
        found = sorted(cache.glob("insightface-2.1-*.whl"))
        if not found:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "insightface==2.1",
                            "-d", str(cache)], check=True)
            found = sorted(cache.glob("insightface-2.1-*.whl"))
        wheel = found[0]
    images = {}
    with zipfile.ZipFile(wheel) as archive:
        for name in ("t1.jpg", "Tom_Hanks_54745.png"):
            data = np.frombuffer(archive.read(f"insightface/data/images/{name}"), np.uint8)
            images[name] = cv2.imdecode(data, cv2.IMREAD_COLOR)
    return images


def crop(image: np.ndarray, box, margin: float) -> np.ndarray:
    x1, y1, x2, y2 = box
    w, h = x2 - x1, y2 - y1
    height, width = image.shape[:2]
    return image[max(0, int(y1 - margin * h)):min(height, int(y2 + margin * h)),
                 max(0, int(x1 - margin * w)):min(width, int(x2 + margin * w))].copy()


T1_PEOPLE = ("t1-rachel", "t1-monica", "t1-ross", "t1-chandler", "t1-joey", "t1-phoebe")


def photos(judge: Judge, cache: Path, wheel: Path | None) -> tuple[dict[str, Photo], dict[str, np.ndarray]]:
    """Target photos (with true boxes and each face's yaw) and source images by identity."""
    from skimage import data

    extra = insightface_images(cache, wheel)
    t1 = extra["t1.jpg"]
    t1_boxes = sorted(judge.detect(t1), key=lambda b: b[0])  # left to right: the order of T1_PEOPLE
    order = [0, 2, 3, 4, 5, 6]
    if len(t1_boxes) != 6:
        sys.exit(f"the judge found {len(t1_boxes)} faces in t1.jpg, expected 6")
    # Left to right the boxes are Rachel, Monica, Ross, Chandler, Joey, Phoebe.
    astronaut = cv2.cvtColor(data.astronaut(), cv2.COLOR_RGB2BGR)
    astronaut_box = max(judge.detect(astronaut), key=lambda b: (b[2] - b[0]) * -b[1])
    hopper = cv2.imread(str(ROOT / "examples" / "source.jpg"))
    hopper_box = judge.detect(hopper)[0]
    targets = {
        "t1": Photo("t1", t1, t1_boxes, list(T1_PEOPLE)),
        "astronaut": Photo("astronaut", astronaut, [astronaut_box], ["collins"]),
        "hopper": Photo("hopper", hopper, [hopper_box], ["hopper"]),
    }
    for photo in targets.values():
        photo.yaw = [q.yaw_from_five(judge.five(photo.image, box)) for box in photo.boxes]
    del order
    sources = {"hopper": hopper, "collins": astronaut,
               "t1-ross": crop(t1, t1_boxes[2], 0.8), "t1-chandler": crop(t1, t1_boxes[3], 0.8)}
    return targets, sources


# ---------------------------------------------------------------- clips with known boxes

@dataclass
class Shot:
    photo: Photo
    frames: int
    start: tuple[float, float, float, float]  # camera: centre x, centre y (photo px), view width (photo px), roll
    end: tuple[float, float, float, float]


@dataclass
class Clip:
    name: str
    shots: list[Shot]
    mode: str
    source: str
    frames: list[np.ndarray] = field(default_factory=list)
    boxes: list[dict[tuple[int, int], tuple[float, float, float, float]]] = field(default_factory=list)
    shot_of: list[int] = field(default_factory=list)
    people: dict[tuple[int, int], str] = field(default_factory=dict)
    yaw: dict[tuple[int, int], float] = field(default_factory=dict)
    cameras: list[np.ndarray] = field(default_factory=list)  # per frame: photo pixels -> frame pixels


def camera(shot: Shot, t: float) -> np.ndarray:
    """2x3 matrix taking photo pixels to frame pixels at time t in [0, 1] (smooth ease in/out)."""
    s = 0.5 - 0.5 * math.cos(math.pi * t)
    cx, cy, view, roll = (a + (b - a) * s for a, b in zip(shot.start, shot.end))
    scale = SIZE[0] / view
    matrix = cv2.getRotationMatrix2D((cx, cy), roll, scale)
    matrix[:, 2] += (SIZE[0] / 2 - cx, SIZE[1] / 2 - cy)
    return matrix


def camera_step(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The 2x3 map from frame pixels under camera `before` to frame pixels under camera `after`."""
    return (np.vstack([after, (0, 0, 1)]) @ np.linalg.inv(np.vstack([before, (0, 0, 1)])))[:2]


def render(clip: Clip, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for shot_index, shot in enumerate(clip.shots):
        for face, person in enumerate(shot.photo.people):
            clip.people[(shot_index, face)] = person
            clip.yaw[(shot_index, face)] = shot.photo.yaw[face]
        for i in range(shot.frames):
            matrix = camera(shot, i / max(1, shot.frames - 1))
            clip.cameras.append(matrix)
            frame = cv2.warpAffine(shot.photo.image, matrix, SIZE, flags=cv2.INTER_CUBIC,
                                   borderMode=cv2.BORDER_REFLECT)
            noise = rng.normal(0, NOISE, frame.shape)
            clip.frames.append(np.clip(frame + noise, 0, 255).astype(np.uint8))
            boxes = {}
            scale = math.hypot(*matrix[0, :2])
            for face, (x1, y1, x2, y2) in enumerate(shot.photo.boxes):
                cx, cy = matrix @ ((x1 + x2) / 2, (y1 + y2) / 2, 1)
                w, h = (x2 - x1) * scale / 2, (y2 - y1) * scale / 2
                box = (cx - w, cy - h, cx + w, cy + h)
                if box[0] >= 0 and box[1] >= 0 and box[2] <= SIZE[0] and box[3] <= SIZE[1] and 2 * w >= MIN_FACE:
                    boxes[(shot_index, face)] = box
            clip.boxes.append(boxes)
            clip.shot_of.append(shot_index)


def clips(targets: dict[str, Photo], quick: bool) -> list[Clip]:
    t1, astro, hopper = targets["t1"], targets["astronaut"], targets["hopper"]
    n = (lambda frames: max(8, frames // 3)) if quick else (lambda frames: frames)
    pan = [Shot(t1, n(100), (560, 470, 1180, -3.0), (760, 420, 860, 4.0))]
    return [
        Clip("group_pan", pan, "many", "hopper"),
        Clip("group_pan_one", pan, "one", "collins"),
        Clip("still", [Shot(astro, n(60), (256, 200, 620, 0.0), (256, 200, 620, 0.0))], "one", "t1-ross"),
        Clip("cuts", [Shot(astro, n(30), (240, 190, 700, 0.0), (230, 180, 560, 2.0)),
                      Shot(t1, n(30), (1010, 300, 560, 0.0), (1060, 290, 520, -3.0)),
                      Shot(hopper, n(30), (200, 260, 640, 0.0), (210, 250, 560, 0.0))], "one", "t1-chandler"),
    ]


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
            use_cli: bool) -> dict[str, float]:
    """Run each (source, mode, target, output dir); returns seconds per job."""
    seconds = {}
    if use_cli:
        for source, mode, target, out in jobs:
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "facefusion_batch", "run", "-s", str(sources[source]),
                            "-t", str(target), "-o", str(out), "--engine", engine,
                            "--face-selector-mode", mode, "--temp-path", str(work / "temp")], check=True,
                           stdout=subprocess.DEVNULL)
            seconds[f"{target.stem}:{mode}"] = time.perf_counter() - started
        return seconds
    from facefusion_batch.runner.driver import run_batch
    from facefusion_batch.engines import build_engine
    from facefusion_batch.executors.local import LocalExecutor
    from facefusion_batch.workflow.processor import prepare
    from facefusion_batch.runner.progress import QuietReporter
    from facefusion_batch.settings import load_settings

    def settings_for(mode: str, out: Path):
        return load_settings(None, os.environ, {"engine": engine, "face_selector_mode": mode,
                                                "temp_path": work / "temp", "output_path": out}).settings

    shared = build_engine(settings_for("many", work / "out"))
    for source, mode, target, out in jobs:
        settings = settings_for(mode, out)
        processor = prepare(settings, sources[source], print, engine=shared)
        started = time.perf_counter()
        with LocalExecutor(settings, sources[source], processor=processor) as executor:
            result = run_batch(settings, [str(target)], executor, QuietReporter())
        seconds[f"{target.stem}:{mode}"] = time.perf_counter() - started
        if result.failed:
            sys.exit(f"ffb failed on {target}: {[o.reason for o in result.outcomes]}")
    return seconds


# ---------------------------------------------------------------- scoring

@dataclass
class Scored:
    name: str
    mode: str
    identity: list[q.Identity] = field(default_factory=list)
    worst: list[tuple[float, np.ndarray, np.ndarray, str]] = field(default_factory=list)  # dist, in, out, label
    tracks: dict[tuple[int, int], q.TrackStats] = field(default_factory=dict)
    switches: list[int] = field(default_factory=list)
    background: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    events: list[tuple[str, int, tuple[int, int]]] = field(default_factory=list)  # kind, frame, track
    turned: list[tuple[np.ndarray, np.ndarray, str]] = field(default_factory=list)
    frames: int = 0
    redetect_flicker: list[float] = field(default_factory=list)  # still clip: largest change - median change
    floor_flicker: list[float] = field(default_factory=list)  # the encoder's own added flicker in face boxes


def face_crop(frame: np.ndarray, box, size: int = 112, margin: float = 0.25) -> np.ndarray:
    x1, y1, x2, y2 = box
    w, h = x2 - x1, y2 - y1
    side = max(w, h) * (1 + 2 * margin)
    cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
    matrix = np.array([[size / side, 0, size / 2 - cx * size / side], [0, size / side, size / 2 - cy * size / side]])
    return cv2.warpAffine(frame, matrix, (size, size), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_CONSTANT)


def judge_frame(judge: Judge, inp: np.ndarray, out: np.ndarray, source_descriptor: np.ndarray,
                target_people: list[tuple[tuple, str]] | None, mode: str, source_person: str,
                scored: Scored, label: str) -> None:
    """Identity verdicts for the faces the judge finds in `inp`."""
    found_in = judge.detect(inp)
    found_out = judge.detect(out)
    candidates = []
    for box in found_in:
        if target_people is not None:  # skip a face of the source's own person
            person = max(target_people, key=lambda tp: q.iou(tp[0], box), default=None)
            if person is not None and q.iou(person[0], box) > 0.3 and person[1] == source_person:
                continue
        candidates.append((q.strength(inp, out, box), box))
    if mode == "one":  # only the face `one` chose is meant to change
        candidates = [max(candidates, key=lambda c: c[0])] if candidates else []
        candidates = [c for c in candidates if c[0] >= q.SWAPPED]
    for _, box in candidates:
        match = max(found_out, key=lambda b: q.iou(b, box), default=None)
        found = match is not None and q.iou(match, box) >= 0.3
        out_box = match if found else box
        d_out = judge.describe(out, out_box)
        d_in = judge.describe(inp, box)
        verdict = q.Identity(float(np.linalg.norm(d_out - source_descriptor)), float(np.linalg.norm(d_out - d_in)),
                             found)
        scored.identity.append(verdict)
        scored.worst.append((verdict.to_source, face_crop(inp, box), face_crop(out, out_box),
                             f"{label} d={verdict.to_source:.2f}{'' if found else ' lost'}"))


def score_clip(clip: Clip, inp: list[np.ndarray], out: list[np.ndarray], floor: list[np.ndarray], judge: Judge,
               source_descriptor: np.ndarray) -> Scored:
    scored = Scored(clip.name, clip.mode, frames=len(inp))
    if len(out) != len(inp):
        sys.exit(f"{clip.name}: output has {len(out)} frames, input {len(inp)}")
    series: dict[tuple[int, int], tuple[list, list, list, list]] = {}
    chosen: list[int | None] = []
    for t, boxes in enumerate(clip.boxes):
        strengths = {}
        step = camera_step(clip.cameras[t - 1], clip.cameras[t]) if t > 0 else None
        for track, box in boxes.items():
            s = q.strength(inp[t], out[t], box)
            strengths[track] = s
            same_shot = t > 0 and clip.shot_of[t - 1] == clip.shot_of[t]
            flick = q.added_flicker(inp[t - 1], inp[t], out[t - 1], out[t], box) if same_shot else float("nan")
            jitter = q.added_jitter(inp[t - 1], inp[t], out[t - 1], out[t], box, step) if same_shot else float("nan")
            if same_shot:
                scored.floor_flicker.append(q.added_flicker(inp[t - 1], inp[t], floor[t - 1], floor[t], box))
            values = series.setdefault(track, ([], [], [], []))
            values[0].append(s)
            values[1].append(flick)
            values[2].append(t)
            values[3].append(jitter)
        chosen.append(q.chosen_track(strengths) if clip.mode == "one" else None)
        all_boxes = list(boxes.values())
        scored.background.append(q.background_diff(inp[t], out[t], all_boxes))
        scored.floor.append(q.background_diff(inp[t], floor[t], all_boxes))
    for track, (strengths, flickers, frames, jitters) in series.items():
        stats = q.track_stats(strengths, flickers, frames, expected=clip.mode == "many", jitters=jitters)
        scored.tracks[track] = stats
        scored.events += [("miss", f, track) for f in stats.missed_at] + [("jump", f, track) for f in stats.jumps_at]
        if clip.name == "still":  # a tick: one frame's output change stands out from the clip's usual change
            changes = [q.mean_abs(out[t], out[t - 1], clip.boxes[t][track]) for t in frames if t > 0]
            scored.redetect_flicker.append(max(changes) - float(np.median(changes)))
    if clip.mode == "one":
        scored.switches = q.switches(chosen, clip.shot_of)
        scored.events += [("switch", f, chosen[f]) for f in scored.switches]
        # Frames where `one` swapped nothing although a face was there.
        scored.events += [("miss", t, max(clip.boxes[t], key=lambda k: clip.boxes[t][k][2] - clip.boxes[t][k][0]))
                          for t in range(len(chosen)) if chosen[t] is None and clip.boxes[t]]
    for t in range(0, len(inp), JUDGE_EVERY):
        people = [(box, clip.people[track]) for track, box in clip.boxes[t].items()]
        judge_frame(judge, inp[t], out[t], source_descriptor, people, clip.mode, clip.source, scored,
                    f"{clip.name}#{t}")
        for track, box in clip.boxes[t].items():
            shown = sum(text.startswith(f"{clip.name}:{track[0]}.{track[1]}#") for *_, text in scored.turned)
            if abs(clip.yaw[track]) >= TURNED and shown < 3 and t % (JUDGE_EVERY * 2) == 0:
                scored.turned.append((face_crop(inp[t], box, 224), face_crop(out[t], box, 224),
                                      f"{clip.name}:{track[0]}.{track[1]}#{t} yaw {clip.yaw[track]:+.0f}"))
    return scored


def score_image(name: str, photo: Photo, inp: np.ndarray, out: np.ndarray, mode: str, source: str,
                judge: Judge, source_descriptor: np.ndarray) -> Scored:
    scored = Scored(name, mode, frames=1)
    judge_frame(judge, inp, out, source_descriptor, list(zip(photo.boxes, photo.people)), mode, source,
                scored, name)
    scored.background.append(q.background_diff(inp, out, photo.boxes))
    for box, yaw in zip(photo.boxes, photo.yaw):
        if abs(yaw) >= TURNED:
            scored.turned.append((face_crop(inp, box, 224), face_crop(out, box, 224), f"{name} yaw {yaw:+.0f}"))
    return scored


# ---------------------------------------------------------------- report

def summary(rows: list[Scored]) -> dict:
    def block(items: list[Scored]) -> dict:
        identity = q.identity_summary([v for s in items for v in s.identity])
        tracks = [t for s in items for t in s.tracks.values()]
        flicker = q.flicker_summary([f for t in tracks for f in t.flicker])
        jitter = q.flicker_summary([f for t in tracks for f in t.jitter])
        present = sum(t.frames for s in items if s.mode == "many" for t in s.tracks.values())
        missed = sum(t.missed for s in items for t in s.tracks.values())
        one_missed = sum(1 for s in items if s.mode == "one" for e in s.events if e[0] == "miss")
        background = [b for s in items for b in s.background if np.isfinite(b)]
        floor = [b for s in items for b in s.floor if np.isfinite(b)]
        return {
            "faces_judged": identity["faces"], "accepted": identity["accepted"], "closer": identity["closer"],
            "found": identity["found"],
            "face_frames": present, "missed": missed,
            "missed_share": missed / present if present else float("nan"),
            "one_frames_none": one_missed,
            "toggles": sum(t.toggles for t in tracks), "jumps": sum(t.jumps for t in tracks),
            "flicker_mean": flicker[0], "flicker_p95": flicker[1],
            "jitter_mean": jitter[0], "jitter_p95": jitter[1],
            "floor_flicker_mean": q.flicker_summary([f for s in items for f in s.floor_flicker])[0],
            "switches": sum(len(s.switches) for s in items),
            "background": float(np.mean(background)) if background else float("nan"),
            "floor": float(np.mean(floor)) if floor else float("nan"),
            "redetect_flicker_max": max((f for s in items for f in s.redetect_flicker), default=float("nan")),
        }

    def per_track(scored: Scored) -> dict:
        """Added flicker per true face (shot.face): where a clip's p95 comes from."""
        result = {}
        for (shot, face), stats in sorted(scored.tracks.items()):
            mean, p95 = q.flicker_summary(stats.flicker)
            jitter_mean, jitter_p95 = q.flicker_summary(stats.jitter)
            result[f"{shot}.{face}"] = {"flicker_mean": mean, "flicker_p95": p95, "jitter_mean": jitter_mean,
                                        "jitter_p95": jitter_p95, "frames": stats.frames, "swapped": stats.swapped}
        return result

    return {"total": block(rows), "clips": {s.name: block([s]) for s in rows},
            "tracks": {s.name: per_track(s) for s in rows if s.tracks}}


COLUMNS = (("faces_judged", "judged", "{:.0f}"), ("accepted", "accept", "{:.0%}"), ("closer", "closer", "{:.0%}"),
           ("found", "found", "{:.0%}"), ("missed", "missed", "{:.0f}"), ("face_frames", "of", "{:.0f}"),
           ("one_frames_none", "one:none", "{:.0f}"), ("toggles", "toggles", "{:.0f}"), ("jumps", "jumps", "{:.0f}"),
           ("flicker_mean", "flick", "{:+.2f}"), ("flicker_p95", "p95", "{:+.2f}"),
           ("floor_flicker_mean", "enc.flk", "{:+.2f}"), ("jitter_mean", "jit", "{:+.2f}"),
           ("jitter_p95", "jit95", "{:+.2f}"), ("switches", "switch", "{:.0f}"),
           ("background", "bg", "{:.2f}"), ("floor", "floor", "{:.2f}"), ("redetect_flicker_max", "tick", "{:.2f}"))


def table(report: dict) -> str:
    header = f"{'clip':<16}" + "".join(f"{title:>9}" for _, title, _ in COLUMNS)
    lines = [header]
    for name, block in [*report["clips"].items(), ("TOTAL", report["total"])]:
        cells = []
        for key, _, fmt in COLUMNS:
            value = block.get(key, float("nan"))  # (reports saved before a column existed)
            cells.append(f"{'-' if isinstance(value, float) and not np.isfinite(value) else fmt.format(value):>9}")
        lines.append(f"{name:<16}" + "".join(cells))
    return "\n".join(lines)


def _label(image: np.ndarray, text: str) -> np.ndarray:
    image = image.copy()
    cv2.putText(image, text, (3, image.shape[0] - 5), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (0, 0, 0), 2, cv2.LINE_AA)
    cv2.putText(image, text, (3, image.shape[0] - 5), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (255, 255, 255), 1,
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
    worst = sorted((w for s in rows for w in s.worst), key=lambda w: -w[0])[:16]
    if worst:
        cells = [c for d, a, b, text in worst for c in (_label(a, "in"), _label(b, text))]
        written.append(directory / "worst_identity.png")
        cv2.imwrite(str(written[-1]), _grid(cells, 8))
    strips = []
    for s in rows:
        if s.name not in clip_frames:
            continue
        clip, inp, out = clip_frames[s.name]
        seen = set()
        for kind, frame, track in sorted(s.events, key=lambda e: (e[0] != "switch", e[0] != "jump", e[1])):
            if len(strips) >= 14 * 2 or (kind, track, frame // 6) in seen:
                continue
            seen.add((kind, track, frame // 6))
            span = [t for t in range(frame - 3, frame + 4) if 0 <= t < len(inp)]
            box = clip.boxes[frame].get(track) if track is not None else None
            if box is None:
                continue
            strips.append([_label(face_crop(inp[t], box, 96), f"in {t}") for t in span]
                          + [np.zeros((96, 96, 3), np.uint8)] * (7 - len(span)))
            strips.append([_label(face_crop(out[t], box, 96), f"{kind} {s.name[:8]}" if t == frame else str(t))
                           for t in span] + [np.zeros((96, 96, 3), np.uint8)] * (7 - len(span)))
    if strips:
        written.append(directory / "events.png")
        cv2.imwrite(str(written[-1]), _grid([c for row in strips for c in row], 7))
    turned = [c for s in rows for a, b, text in s.turned for c in (_label(a, "in"), _label(b, text))][:16]
    if turned:
        written.append(directory / "turned.png")
        cv2.imwrite(str(written[-1]), _grid(turned, 4))
    if "still" in clip_frames:  # the still shot around re-detections: output minus its first frame, x8
        clip, inp, out = clip_frames["still"]
        box = next(iter(clip.boxes[0].values()))
        cells = []
        for t in [11, 12, 13, 23, 24, 25]:
            if t < len(out):
                diff = np.clip(128 + 8 * (out[t].astype(np.int16) - out[t - 1].astype(np.int16)), 0, 255)
                cells += [_label(face_crop(out[t], box, 160), f"out {t}"),
                          _label(face_crop(diff.astype(np.uint8), box, 160), f"x8 diff {t}-{t - 1}")]
        if cells:
            written.append(directory / "still_redetect.png")
            cv2.imwrite(str(written[-1]), _grid(cells, 4))
    return written


# ---------------------------------------------------------------- main

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a third of the frames (a smoke test, ~2 min)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--sheets", type=Path, default=Path("quality-sheets"), help="contact sheets go here")
    parser.add_argument("--engine", default="offline", choices=("auto", "neural", "offline"))
    parser.add_argument("--cli", action="store_true", help="run ffb as a subprocess instead of in-process")
    parser.add_argument("--insightface-wheel", type=Path, help="insightface-2.1 wheel (else fetched once)")
    parser.add_argument("--keep", type=Path, help="keep the clips and outputs in this folder")
    parser.add_argument("--save", type=Path, help="also write the report as JSON to this file")
    parser.add_argument("--table", type=Path, help="print the table of a report saved with --save, and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text())))
        return 0
    from facefusion_batch.settings import load_settings

    settings = load_settings(None, os.environ, {"engine": args.engine}).settings
    started = time.perf_counter()
    judge = Judge()
    targets, source_images = photos(judge, settings.cache_path / "quality", args.insightface_wheel)
    work = args.keep or Path(tempfile.mkdtemp(prefix="ffb-quality-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        sources = {}
        descriptors = {}
        for name, image in source_images.items():
            sources[name] = work / f"source-{name}.png"
            cv2.imwrite(str(sources[name]), image)
            box = max(judge.detect(image), key=lambda b: b[2] - b[0])
            descriptors[name] = judge.describe(image, box)
        clip_list = clips(targets, args.quick)
        jobs, inputs = [], {}
        for index, clip in enumerate(clip_list):
            path = work / f"{clip.name.split('_one')[0]}.mp4"
            if path not in inputs.values():
                render(clip, index)
                write_lossless(clip.frames, path)
            else:
                twin = next(c for c in clip_list if c.name == path.stem)
                clip.frames, clip.boxes, clip.shot_of = twin.frames, twin.boxes, twin.shot_of
                clip.people, clip.yaw, clip.cameras = twin.people, twin.yaw, twin.cameras
            inputs[clip.name] = path
            jobs.append((clip.source, clip.mode, path, work / f"out-{clip.name}"))
        images = [("t1_image", targets["t1"], "many", "collins"), ("astronaut_image", targets["astronaut"], "one",
                                                                     "t1-chandler")]
        for name, photo, mode, source in images:
            path = work / f"{name}.png"
            cv2.imwrite(str(path), photo.image)
            jobs.append((source, mode, path, work / f"out-{name}"))
        made = time.perf_counter()
        seconds = run_ffb(jobs, sources, args.engine, work, args.cli)
        ran = time.perf_counter()
        rows, clip_frames = [], {}
        for clip in clip_list:
            inp = read_frames(inputs[clip.name])
            out = read_frames(work / f"out-{clip.name}" / inputs[clip.name].name)
            floor = encoder_floor(inp, inputs[clip.name], settings, work)
            rows.append(score_clip(clip, inp, out, floor, judge, descriptors[clip.source]))
            clip_frames[clip.name] = (clip, inp, out)
        for name, photo, mode, source in images:
            out = cv2.imread(str(work / f"out-{name}" / f"{name}.png"))
            rows.append(score_image(name, photo, photo.image, out, mode, source, judge, descriptors[source]))
        report = summary(rows)
        report["seconds"] = {"make": made - started, "ffb": ran - made, "score": time.perf_counter() - ran,
                             "jobs": seconds}
        report["yaw"] = {p: round(y, 1) for photo in targets.values() for p, y in zip(photo.people, photo.yaw)}
        report["sheets"] = [str(p) for p in sheets(rows, clip_frames, args.sheets)]
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.save:
        args.save.write_text(json.dumps(report, indent=1, default=float))
    if args.json:
        print(json.dumps(report, indent=1, default=float))
    else:
        print(table(report))
        print(f"time: make {report['seconds']['make']:.0f} s, ffb {report['seconds']['ffb']:.0f} s, "
              f"score {report['seconds']['score']:.0f} s; sheets: {', '.join(report['sheets'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

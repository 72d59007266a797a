"""How much the area mask's edge flickers on video: 68-point landmarks with per-frame noise, raw (what each
frame's landmarker call gives) vs through ffb's face tracks (faces/tracking.py, which smooth the landmarks
with the keypoints and box), on a still face and on a moving one.

    python benchmarks/landmark_jitter.py [--noise 1.5] [--frames 120] [--speed 3]

The face is `tests/standins.py`'s 68-point shape, 150 px wide (a face in a 480p frame). Each frame's fit
is the true points plus Gaussian noise of `--noise` px per coordinate (a landmarker's jitter; 2dfan4 sees
a 256 crop, so ~1 crop px is ~0.6 frame px here), and the 5 keypoints and box carry their own noise of the
same size. Reported, over the lower-face + mouth hull the area mask pastes:
- jitter: RMS frame-to-frame motion of the hull's points beyond the face's own motion (px);
- flicker: share of the hull's edge band whose mask value changes by more than 0.1 from one frame to the
  next (the softened hull, drawn as processors/masks.py draws it);
- error: RMS distance of the points to the truth (px), so smoothing that lags a moving face shows.
The `true` rows (no noise) are the floor: a moving face's hull changes by subpixel rasterisation alone.
Pure CPU and deterministic (seeded); not part of CI.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import standins  # noqa: E402

from facefusion_batch.faces.geometry import hull_mask  # noqa: E402
from facefusion_batch.faces.tracking import Tracker  # noqa: E402
from facefusion_batch.faces.types import Face  # noqa: E402
from facefusion_batch.processors.landmarker import five_from_68  # noqa: E402
from facefusion_batch.processors.masks import AREA_POINTS  # noqa: E402

AREA = [i for area in ("lower-face", "mouth") for i in AREA_POINTS[area]]
SIZE = 480  # the frame the masks are drawn on (square, for simplicity)


def truth(frames: int, speed: float) -> list[np.ndarray]:
    shape = standins.mean_shape_68().astype(np.float64)
    shape = shape * (150 / (shape[16, 0] - shape[0, 0]))  # 150 px from jaw point 0 to 16
    start = np.array([120.0, 140.0]) - shape.min(0)
    return [shape + start + [speed * i, 0.4 * speed * i] for i in range(frames)]


def fits(points: list[np.ndarray], noise: float, seed: int = 0) -> list[Face]:
    rng = np.random.default_rng(seed)
    faces = []
    for p in points:
        landmarks = p + rng.normal(0, noise, p.shape)
        kps = five_from_68(p) + rng.normal(0, noise, (5, 2))
        low, high = p.min(0), p.max(0)
        box = np.concatenate([low, high]) + rng.normal(0, noise, 4)
        faces.append(Face(box=box.astype(np.float32), score=0.9, kps=kps.astype(np.float32),
                          landmarks=landmarks.astype(np.float32)))
    return faces


def tracked(faces: list[Face]) -> list[np.ndarray]:
    tracker = Tracker(SIZE * 2, SIZE * 2)
    out = []
    for index, face in enumerate(faces):
        (result,) = tracker.update(index, [face], detected=True)
        out.append(result.face.landmarks.astype(np.float64))
    return out


def measure(points: list[np.ndarray], true: list[np.ndarray]) -> tuple[float, float, float]:
    steps = [(b[AREA] - a[AREA]) - (tb[AREA] - ta[AREA]) for a, b, ta, tb in zip(points, points[1:], true, true[1:])]
    jitter = float(np.sqrt(np.mean([np.sum(s ** 2, axis=1).mean() for s in steps])))
    error = float(np.sqrt(np.mean([np.sum((p[AREA] - t[AREA]) ** 2, axis=1).mean() for p, t in zip(points, true)])))
    flicker = []
    for a, b, ta, tb in zip(points, points[1:], true, true[1:]):
        # drawn in a window that follows the true face, so only the fit's own wobble changes the mask
        ma = hull_mask(320, a[AREA] - ta[AREA].min(0) + 40)
        mb = hull_mask(320, b[AREA] - tb[AREA].min(0) + 40)
        band = ((ma > 0.02) & (ma < 0.98)) | ((mb > 0.02) & (mb < 0.98))
        flicker.append(float((np.abs(ma - mb)[band] > 0.1).mean()) if band.any() else 0.0)
    return jitter, float(np.mean(flicker)), error


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noise", type=float, default=1.5)
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--speed", type=float, default=3.0, help="px per frame of the moving face")
    args = parser.parse_args()
    print(f"noise {args.noise} px, {args.frames} frames; lower-face + mouth hull")
    print(f"{'face':<8} {'landmarks':<9} {'jitter px':>9} {'flicker':>8} {'error px':>9}")
    for label, speed in (("still", 0.0), ("moving", args.speed)):
        true = truth(args.frames, speed)
        faces = fits(true, args.noise)
        for name, points in (("true", true), ("raw", [f.landmarks.astype(np.float64) for f in faces]),
                             ("tracked", tracked(faces))):
            jitter, flicker, error = measure(points, true)
            print(f"{label:<8} {name:<9} {jitter:>9.2f} {flicker:>8.1%} {error:>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

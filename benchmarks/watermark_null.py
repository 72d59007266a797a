"""The watermark reader on pictures that carry no mark: how close it comes to reading one.

    python benchmarks/watermark_null.py

Reads skimage's photos and Matplotlib's Grace Hopper at 360p, 720p and 1080p as JPEG quality 75 and 90, a flat
grey and a random-noise picture, and the example clips (`examples/clips`, as videos: the mean of the frames
`ffb verify` samples; and their first frame as JPEG quality 75). For each it records every decode the
reader makes (each candidate period, each of the sync's highest peaks): the highest sync z, how many decodes
matched their check bits by chance, and the highest bits z among those (a mark needs BITS_Z). JSON on stdout.
"""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

from facefusion_batch.provenance import verify, watermark as wm

CLIPS = Path(__file__).resolve().parent.parent / "examples" / "clips"


def jpeg(frame: np.ndarray, quality: int) -> np.ndarray:
    return cv2.imdecode(cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, quality])[1], cv2.IMREAD_COLOR)


def pictures() -> list[tuple[str, np.ndarray]]:
    """(name, luma) of every unmarked picture read."""
    import matplotlib
    from skimage import data

    photos = {name: np.ascontiguousarray(getattr(data, name)()[..., ::-1])
              for name in ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry")}
    photos["hopper"] = cv2.imread(str(Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"))
    items = [(f"{name}_{size[1]}p_q{quality}", wm.luma(jpeg(cv2.resize(photo, size, interpolation=cv2.INTER_AREA),
                                                            quality)))
             for name, photo in photos.items() for size in ((640, 360), (1280, 720), (1920, 1080))
             for quality in (75, 90)]
    items += [("grey", np.full((360, 640), 128, np.float32)),
              ("noise", wm.luma(np.random.default_rng(0).integers(0, 255, (360, 640, 3), dtype=np.uint8)))]
    for clip in sorted(CLIPS.iterdir()):
        frames = list(verify.frames_of(clip))
        items += [(clip.name, sum(wm.luma(f) for f in frames) / len(frames)),
                  (f"{clip.name}_frame0_q75", wm.luma(jpeg(frames[0], 75)))]
    return items


def main() -> None:
    decodes: list[tuple[float, int | None, float]] = []
    original = wm._decode

    def recording(folded: np.ndarray) -> list[tuple[float, int | None, float]]:
        found = original(folded)
        decodes.extend(found)
        return found

    wm._decode = recording
    rows, found = {}, 0
    for name, gray in pictures():
        decodes.clear()
        reading = wm.read_gray(gray)
        passed = [bits for _, payload, bits in decodes if payload is not None]
        rows[name] = {"found": reading.found, "decodes": len(decodes), "check_passed": len(passed),
                      "sync_z_max": round(max((z for z, _, _ in decodes), default=0.0), 2),
                      "bits_z_max_of_check_passed": round(max(passed, default=0.0), 2)}
        found += reading.found
    print(json.dumps({"pictures": len(rows), "found": found,
                      "sync_z_max": max(r["sync_z_max"] for r in rows.values()),
                      "decodes": sum(r["decodes"] for r in rows.values()),
                      "check_passed": sum(r["check_passed"] for r in rows.values()),
                      "bits_z_max_of_check_passed": max(r["bits_z_max_of_check_passed"] for r in rows.values()),
                      "needed": {"sync_z": wm.SYNC_MIN, "bits_z": wm.BITS_Z}, "each": rows}, indent=1))


if __name__ == "__main__":
    main()

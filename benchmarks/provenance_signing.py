"""Signing cost per output: how long `Marker.place` (C2PA sign + rename) takes on a 50 MB MP4, a small
clip, a WebM (sidecar: hashes the whole file), a JPEG and a PNG, against a plain rename; and the visible
label's cost per frame.

    python benchmarks/provenance_signing.py [--repeat 5]

Media are made with the product's ffmpeg in a temp dir; the local signing credential is created there too.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

from facefusion_batch.marking import marking_tags
from facefusion_batch.provenance import credentials
from facefusion_batch.provenance.label import VisibleLabel
from facefusion_batch.provenance.manifest import Stamp
from facefusion_batch.provenance.sign import Marker
from facefusion_batch.video.ffmpeg import ffmpeg_binary


def make_media(directory: Path) -> dict[str, Path]:
    ff = ffmpeg_binary()
    media = {
        "mp4 50 MB (720p, 40 s, audio)": (directory / "big.mp4", ["-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25:duration=40",
                                            "-f", "lavfi", "-i", "sine=duration=40", "-c:v", "libx264", "-preset",
                                            "ultrafast", "-b:v", "10M", "-movflags", "+faststart"]),
        "mp4 small (360p, 2 s)": (directory / "small.mp4", ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25:duration=2",
                                     "-f", "lavfi", "-i", "sine=duration=2", "-c:v", "libx264", "-preset",
                                     "ultrafast", "-movflags", "+faststart"]),
        "webm 10 s (sidecar)": (directory / "clip.webm", ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25:duration=10",
                                   "-c:v", "libvpx-vp9", "-deadline", "realtime", "-b:v", "2M"]),
    }
    paths = {}
    for name, (path, args) in media.items():
        subprocess.run([ff, "-v", "error", "-y", *args, str(path)], check=True)
        paths[name] = path
    frame = cv2.resize(cv2.imread(str(Path(__file__).parents[1] / "examples" / "source.jpg")), (1920, 1080))
    for suffix in ("jpg", "png"):
        path = directory / f"still.{suffix}"
        cv2.imwrite(str(path), frame)
        paths[f"{suffix} 1080p"] = path
    return paths


def time_place(marker: Marker, original: Path, repeat: int) -> tuple[float, int]:
    """Median seconds of one place (copy made before each run, not timed), and the output's growth."""
    times, growth = [], 0
    for index in range(repeat):
        partial = original.with_name(f".{original.stem}.ffb-bench.tmp{original.suffix}")
        output = original.with_name(f"out_{index}{original.suffix}")
        shutil.copyfile(original, partial)
        start = time.perf_counter()
        marker.place(partial, output, parent=original, parent_sha256="0" * 64)
        times.append(time.perf_counter() - start)
        growth = output.stat().st_size - original.stat().st_size
        sidecar = output.with_name(output.name + ".c2pa")
        growth += sidecar.stat().st_size if sidecar.exists() else 0
    return statistics.median(times), growth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ffb-bench-sign-") as tmp:
        directory = Path(tmp)
        credential = credentials.local_credential(directory / "cache")
        tags = marking_tags("neural", ["inswapper_128"])
        signer = Marker("c2pa", tags, Stamp("neural", ("inswapper_128",), "inswapper_128", "0" * 64), credential)
        plain = Marker("metadata", tags)
        print(f"{'output':32} {'size MB':>8} {'rename ms':>10} {'c2pa ms':>9} {'manifest kB':>12}")
        for name, path in make_media(directory).items():
            rename, _ = time_place(plain, path, args.repeat)
            signed, growth = time_place(signer, path, args.repeat)
            print(f"{name:32} {path.stat().st_size / 1e6:8.1f} {rename * 1000:10.2f} {signed * 1000:9.1f} "
                  f"{growth / 1000:12.1f}")
        label = VisibleLabel("AI-generated")
        for width, height in ((1280, 720), (1920, 1080), (3840, 2160)):
            frame = np.random.default_rng(0).integers(0, 256, (height, width, 3), dtype=np.uint8)
            label.draw(frame)  # the first call renders the label for this size
            start = time.perf_counter()
            for _ in range(200):
                label.draw(frame)
            print(f"visible label {width}x{height}: {(time.perf_counter() - start) / 200 * 1e6:.0f} us per frame")


if __name__ == "__main__":
    main()

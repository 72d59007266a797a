"""The watermark at several strengths on the test's clip and on examples/clips/group.mp4: what each change
of tests/provenance/test_watermark.py leaves readable, and frames to look at.

    python benchmarks/watermark_strengths.py [--work DIR] [--strengths 0.8,1.0,1.2,1.4,1.6]

Swaps Grace Hopper into the test's 360p clip (skimage's coffee with NASA's astronaut over it, 100 frames, a
strip at the bottom changing each frame) and
into group.mp4 once with `ffb run --no-watermark`, then for each strength: marks every frame of the outputs
(as ffb does, with `watermark.STRENGTH` set), encodes them as ffb does (x264 veryfast CRF 10), makes the
test's five copies (CRF 28; scaled to 50 %; a centred 10 % crop; a 3 s excerpt; frame 2 s as JPEG q75) and
reads each as `ffb verify` does. Writes group.mp4's frame 40 at each strength as PNG (`group_<strength>.png`)
to compare at 1x (a strength of 0 gives the unmarked frame). A table on stdout: bits z of each correct read, `-` (best sync z) where nothing was read,
WRONG for a wrong payload.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np

from facefusion_batch.provenance import verify, watermark as wm
from facefusion_batch.video.ffmpeg import SWS_FLAGS, ffmpeg_binary

ROOT = Path(__file__).resolve().parent.parent
PAYLOAD = 0x5EED1234
COPIES = ("crf28", "half", "crop10", "excerpt3s", "jpeg")
FF = [ffmpeg_binary(), "-v", "error", "-y"]


def test_frame(width: int = 640, height: int = 360) -> np.ndarray:
    """tests/provenance/test_watermark.py's real_frame: the astronaut's photo over skimage's coffee."""
    from skimage import data

    frame = cv2.resize(np.ascontiguousarray(data.coffee()[:, :, ::-1]), (width, height))
    side = height * 2 // 3
    face = cv2.resize(np.ascontiguousarray(data.astronaut()[:, :, ::-1]), (side, side))
    frame[height // 6:height // 6 + side, width // 3:width // 3 + side] = face
    return frame


def encode(frames: list[np.ndarray], out: Path, crf: int = 10, preset: str = "veryfast") -> Path:
    height, width = frames[0].shape[:2]
    subprocess.run([*FF, "-f", "rawvideo", "-pix_fmt", "bgr24", "-s", f"{width}x{height}", "-r", "25", "-i", "-",
                    *SWS_FLAGS, "-c:v", "libx264", "-preset", preset, "-crf", str(crf), "-pix_fmt", "yuv420p",
                    str(out)], input=b"".join(f.tobytes() for f in frames), check=True)
    return out


def decode(path: Path) -> list[np.ndarray]:
    """Every frame, converted as ffb converts (ffmpeg, accurate rounding)."""
    from facefusion_batch.video.probe import probe

    info = probe(path)
    raw = subprocess.run([*FF, "-i", str(path), "-map", "0:v:0", *SWS_FLAGS, "-f", "rawvideo", "-pix_fmt", "bgr24",
                          "-"], capture_output=True, check=True).stdout
    return list(np.frombuffer(raw, np.uint8).reshape(-1, info.height, info.width, 3).copy())


def copies(clip: Path, folder: Path, width: int, height: int) -> dict[str, Path]:
    out = {}
    for name, pre, post in (("crf28", [], []), ("half", [], ["-vf", f"scale={width // 2}:{height // 2}"]),
                            ("crop10", [], ["-vf", f"crop={width * 9 // 10}:{height * 9 // 10}:{width // 20}:"
                                                   f"{height // 20}"]),
                            ("excerpt3s", ["-ss", "0.5", "-t", "3"], [])):
        out[name] = folder / f"copy_{name}.mp4"
        subprocess.run([*FF, *pre, "-i", str(clip), *post, "-map_metadata", "-1", "-c:v", "libx264", "-crf", "28",
                        "-an", str(out[name])], check=True)
    png = folder / "frame.png"
    subprocess.run([*FF, "-ss", "2", "-i", str(clip), "-frames:v", "1", str(png)], check=True)
    out["jpeg"] = folder / "copy_jpeg.jpg"
    cv2.imwrite(str(out["jpeg"]), cv2.imread(str(png)), [cv2.IMWRITE_JPEG_QUALITY, 75])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "ffb" / "watermark-strengths")
    parser.add_argument("--strengths", default="0.8,1.0,1.2,1.4,1.6")
    options = parser.parse_args()
    work, inputs = options.work, options.work / "in"
    inputs.mkdir(parents=True, exist_ok=True)
    still = test_frame()
    clip = [still.copy() for _ in range(100)]
    for index, frame in enumerate(clip):
        frame[-20:] = (index * 7) % 255  # as the test's clip: a strip that changes each frame
    encode(clip, inputs / "clip.mp4", crf=12, preset="ultrafast")
    (inputs / "group.mp4").write_bytes((ROOT / "examples" / "clips" / "group.mp4").read_bytes())
    import matplotlib

    source = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
    env = {**os.environ, "FFB_CACHE_PATH": str(work / "cache"), "FFB_TEMP_PATH": str(work / "tmp"),
           "FFB_ENGINE": "offline"}
    subprocess.run([sys.executable, "-m", "facefusion_batch", "run", "-q", "--force", "--no-watermark", "-s",
                    str(source), "-t", str(inputs), "-o", str(work / "out")], env=env, check=True)
    print("strength | clip: " + " ".join(COPIES) + " | group: " + " ".join(COPIES))
    for strength in (float(s) for s in options.strengths.split(",")):
        wm.STRENGTH = strength
        marker = wm.Watermarker(PAYLOAD)
        cells = []
        for name in ("clip", "group"):
            folder = work / f"{strength}" / name
            folder.mkdir(parents=True, exist_ok=True)
            frames = [marker.mark(f) for f in decode(work / "out" / f"{name}.mp4")]
            clip = encode(frames, folder / "marked.mp4")
            if name == "group":
                cv2.imwrite(str(work / f"group_{strength}.png"), decode(clip)[40])
            for copy in copies(clip, folder, frames[0].shape[1], frames[0].shape[0]).values():
                reading = wm.read_frames(verify.frames_of(copy))
                cells.append(f"{reading.bits_z:.1f}" if reading.found and reading.payload == PAYLOAD else
                             "WRONG" if reading.found else f"-({reading.sync_z:.1f})")
        print(f"{strength} | " + " ".join(cells[:5]) + " | " + " ".join(cells[5:]), flush=True)


if __name__ == "__main__":
    main()

"""Benchmark clips: a real face on a tripod (sub-pixel drift, sensor noise) with an audio track, cached.

Each clip is composed from a face photo (by default the source photo, mirrored so the swap has a face
to change) over a textured backdrop made at the clip's own resolution, so every size has fine detail to
encode. Clips are cached by resolution, length and photo content, and made again only when one of those
changes.
"""
from __future__ import annotations

import hashlib
import math
import subprocess
from pathlib import Path
from typing import Iterator

import cv2
import numpy as np

from facefusion_batch.errors import MediaError
from facefusion_batch.media import read_image, temp_name
from facefusion_batch.video import ffmpeg

RESOLUTIONS: dict[str, tuple[int, int]] = {
    "240p": (426, 240), "360p": (640, 360), "480p": (854, 480), "540p": (960, 540), "720p": (1280, 720),
    "1080p": (1920, 1080), "1440p": (2560, 1440), "4k": (3840, 2160),
}
# The sizes a range such as 240p..4k steps through: every size above (FaceFusion's benchmark's included).
LADDER: tuple[str, ...] = ("240p", "360p", "480p", "540p", "720p", "1080p", "1440p", "4k")
ALIASES = {"2160p": "4k"}  # FaceFusion's name of 4k
FPS = 25
_VERSION = b"ffb-bench-clip-2"  # change when the composition changes, so cached clips are remade
# Backdrop blobs per (row, column). Coarser blobs (9 x 16) drew false detections (score ~0.59) beside the
# head on some frames, so runs swapped different numbers of faces.
_BLOBS = (18, 32)
_HEAD = 0.8  # the photo's height as a share of the frame height
_DRIFT = (0.35, 0.25)  # peak drift in pixels (x, y): a tripod, not a hand
_NOISE = 1.5  # sensor noise, standard deviation in grey levels


def frame_count(seconds: float) -> int:
    return max(2, round(seconds * FPS))


def clip_path(directory: Path, resolution: str, seconds: float, face: Path, mirror: bool) -> Path:
    """Where the clip for these inputs is cached: the name carries everything it depends on."""
    digest = hashlib.sha256(_VERSION + bytes([mirror]) + face.read_bytes()).hexdigest()[:12]
    return directory / f"talking_head_{resolution}_{frame_count(seconds)}f_{digest}.mp4"


def ensure_clip(directory: Path, resolution: str, seconds: float, face: Path, mirror: bool) -> tuple[Path, bool]:
    """The cached clip, made first if missing; (path, whether it was made now)."""
    path = clip_path(directory, resolution, seconds, face, mirror)
    if path.exists():
        return path, False
    directory.mkdir(parents=True, exist_ok=True)
    photo = read_image(face)
    make_clip(path, RESOLUTIONS[resolution], frame_count(seconds), photo[:, ::-1] if mirror else photo)
    return path, True


def compose(photo: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """The still: the photo, edges feathered, standing at the bottom centre of a textured backdrop."""
    width, height = size
    rng = np.random.default_rng(7)
    coarse = rng.integers(60, 190, (*_BLOBS, 1)) + rng.integers(-15, 16, (*_BLOBS, 3))  # a muted room
    coarse = coarse.astype(np.float32)
    backdrop = cv2.resize(coarse, (width, height), interpolation=cv2.INTER_CUBIC)
    fine = cv2.GaussianBlur(rng.normal(0, 14, (height, width)).astype(np.float32), (0, 0), 1.2)
    backdrop += fine[..., None]
    head_h = round(height * _HEAD)
    head_w = min(width, round(photo.shape[1] * head_h / photo.shape[0]))
    head = cv2.resize(photo, (head_w, head_h), interpolation=cv2.INTER_AREA if head_h < photo.shape[0]
                      else cv2.INTER_CUBIC).astype(np.float32)
    feather = max(2.0, 0.12 * head_w)
    xs = np.minimum(np.arange(head_w), np.arange(head_w)[::-1]) / feather
    ys = np.arange(head_h) / feather
    alpha = np.clip(np.minimum(xs[None, :], ys[:, None]), 0, 1)[..., None]
    left, top = (width - head_w) // 2, height - head_h
    region = backdrop[top:, left:left + head_w]
    backdrop[top:, left:left + head_w] = region * (1 - alpha) + head * alpha
    return np.clip(backdrop, 0, 255).astype(np.uint8)


def frames(still: np.ndarray, count: int) -> Iterator[np.ndarray]:
    """Frames of the still drifting by a fraction of a pixel, each with fresh sensor noise."""
    rng = np.random.default_rng(11)
    height, width = still.shape[:2]
    for index in range(count):
        t = index / FPS
        dx = _DRIFT[0] * math.sin(2 * math.pi * 0.37 * t)
        dy = _DRIFT[1] * math.sin(2 * math.pi * 0.23 * t + 1.0)
        moved = cv2.warpAffine(still, np.float32([[1, 0, dx], [0, 1, dy]]), (width, height),
                               flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
        noise = rng.standard_normal((height, width, 1), dtype=np.float32) * _NOISE
        yield np.clip(moved + noise, 0, 255).astype(np.uint8)


def make_clip(path: Path, size: tuple[int, int], count: int, photo: np.ndarray) -> None:
    """Encode the clip (H.264 yuv420p, 25 fps, AAC tone) to `path`, atomically."""
    width, height = size
    seconds = count / FPS
    partial = temp_name(path)
    command = [ffmpeg.ffmpeg_binary(), "-v", "error", "-nostdin", "-y",
               "-f", "rawvideo", "-pix_fmt", "bgr24", "-s", f"{width}x{height}", "-r", str(FPS), "-i", "-",
               "-f", "lavfi", "-i", f"sine=frequency=220:sample_rate=48000:duration={seconds:.3f}",
               *ffmpeg.SWS_FLAGS, "-c:v", "libx264", "-preset", "veryfast", "-crf", "18", "-pix_fmt", "yuv420p",
               "-c:a", "aac", "-b:a", "96k", "-shortest", str(partial)]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        try:
            for frame in frames(compose(photo, size), count):
                process.stdin.write(frame.tobytes())  # type: ignore[union-attr]
            process.stdin.close()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass
        error = process.stderr.read()  # type: ignore[union-attr]
        if process.wait() != 0:
            raise MediaError(f"{path}: making the benchmark clip failed ({ffmpeg.error_line(error)})")
        partial.replace(path)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        partial.unlink(missing_ok=True)

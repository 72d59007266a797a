"""Probe a video with ffmpeg alone (the wheel's ffmpeg ships without ffprobe).

One ffmpeg run: stream facts come from its description of the input; frame count and exact frame rate
come from the packet timestamps of a stream copy, which costs no decoding.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from facefusion_batch.errors import MediaError
from facefusion_batch.video import ffmpeg
from facefusion_batch.video.ffmpeg import Colour

_DURATION = re.compile(r"Duration: (\d+):(\d+):(\d+(?:\.\d+)?)")
_VIDEO = re.compile(r"Stream #0:(\d+)[^:]*: Video: (\w+).*?, (\w+)(?:\(([^)]*)\))?, (\d+)x(\d+)")
_AUDIO = re.compile(r"Stream #0:\d+[^:]*: Audio: (\w+)")
_ROTATION = re.compile(r"rotation of (-?\d+(?:\.\d+)?) degrees", re.IGNORECASE)
_TB = re.compile(r"^#tb (\d+): (\d+)/(\d+)", re.MULTILINE)
_RANGES = {"tv", "pc"}


@dataclass(frozen=True)
class VideoInfo:
    """What the pipeline needs to know about one video. width/height are as displayed (rotation applied)."""

    path: Path
    width: int
    height: int
    fps: Fraction
    frame_count: int
    duration: float
    rotation: int
    codec: str
    pixel_format: str
    colour: Colour
    audio_codec: str | None
    variable_frame_rate: bool
    timing_shift: float = 0.0  # seconds frames move when written at a constant `fps`


def probe(path: Path) -> VideoInfo:
    """Describe `path`, raising MediaError with a reason a user can act on."""
    if path.is_symlink() and not path.exists():
        raise MediaError(f"{path}: broken symbolic link")
    if path.is_file() and path.stat().st_size == 0:
        raise MediaError(f"{path}: file is empty")
    limit = probe_limit(path)
    try:
        run = subprocess.run(ffmpeg.probe_command(path), capture_output=True, timeout=limit)
    except subprocess.TimeoutExpired:
        raise MediaError(f"{path}: probing took over {limit:.0f} s (a stalled disk or network mount, or not a "
                         "file at all?)") from None
    text, errors = ffmpeg.split_levels(run.stderr)
    text = text.split("Stream mapping:")[0]  # the input's description; the output's follows
    video = _VIDEO.search(text)
    if video is None:
        if "Input #0" in text:
            raise MediaError(f"{path}: has no video stream (audio only?)")
        raise MediaError(f"{path}: not a readable video, or damaged ({ffmpeg.error_line(errors)})")
    codec, pix_fmt, colour_text = video.group(2), video.group(3), video.group(4) or ""
    width, height = int(video.group(5)), int(video.group(6))
    rotation = _rotation(text[video.start():])
    if rotation % 180:
        width, height = height, width
    audio = _AUDIO.search(text)
    if run.returncode != 0:
        raise MediaError(f"{path}: damaged video stream ({ffmpeg.error_line(errors)})")
    count, fps, vfr, shift = frame_timing(run.stdout.decode("ascii", "replace"))
    if count == 0:
        raise MediaError(f"{path}: the video stream has no frames")
    return VideoInfo(path=path, width=width, height=height, fps=fps, frame_count=count,
                     duration=_duration(text) or float(count / fps), rotation=rotation, codec=codec,
                     pixel_format=pix_fmt, colour=parse_colour(colour_text),
                     audio_codec=audio.group(1) if audio else None, variable_frame_rate=vfr,
                     timing_shift=shift)


def probe_limit(path: Path) -> float:
    """Seconds a probe may take: it reads every packet, so a minute plus the file at 10 MB/s."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    return 60 + size / 10_000_000


def _rotation(stream_text: str) -> int:
    # Only the side data that belongs to the video stream: stop at the next stream.
    head = stream_text.split("Stream #", 2)
    match = _ROTATION.search("Stream #".join(head[:2]))
    return int(round(float(match.group(1)))) % 360 if match else 0


def _duration(text: str) -> float | None:
    match = _DURATION.search(text)
    if not match:
        return None
    hours, minutes, seconds = match.groups()
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def parse_colour(text: str) -> Colour:
    """Parse the part in brackets after the pixel format, e.g. 'tv, bt709/unknown/unknown, progressive'."""
    rng = matrix = primaries = transfer = None
    for token in (t.strip() for t in text.split(",")):
        if token in _RANGES:
            rng = token
        elif token.startswith(("bt", "smpte", "fcc", "gbr", "ycgco", "unknown")):
            parts = token.split("/")
            if len(parts) == 1:
                parts = parts * 3
            matrix, primaries, transfer = (None if p == "unknown" else p for p in parts[:3])
    return Colour(matrix=matrix, primaries=primaries, transfer=transfer, range=rng)


def frame_timing(framecrc: str) -> tuple[int, Fraction, bool, float]:
    """Frame count, frame rate, whether the rate varies, and how far (seconds) frames would move if
    written at that constant rate; from `-f framecrc` packet lines."""
    tb_match = _TB.search(framecrc)
    timebase = Fraction(int(tb_match.group(2)), int(tb_match.group(3))) if tb_match else Fraction(1, 1000)
    pts: list[int] = []
    for line in framecrc.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 4 and fields[0] == "0":
            pts.append(int(fields[2]))
    if not pts:
        return 0, Fraction(25), False, 0.0
    pts.sort()
    steps = sorted(b - a for a, b in zip(pts, pts[1:]) if b > a)
    if not steps:
        return len(pts), Fraction(25), False, 0.0
    median = steps[len(steps) // 2]
    fps = (1 / (median * timebase)).limit_denominator(1001)
    variable = steps[0] * 2 < median or steps[-1] > median * 2
    if not variable:
        return len(pts), fps, False, 0.0
    fps = (Fraction(len(pts) - 1) / ((pts[-1] - pts[0]) * timebase)).limit_denominator(1001)
    shift = max(abs(float((p - pts[0]) * timebase) - i / float(fps)) for i, p in enumerate(pts))
    return len(pts), fps, True, shift

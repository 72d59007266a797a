"""Hostile and odd targets for `ffb run`, each paired with the outcome ffb should report for it.

`build_corpus(directory)` writes every case (tiny files, a few frames, built with ffmpeg in a few seconds)
and returns {path relative to `directory`: Expected}. A case's expectation is what a careful batch tool
should do, not necessarily what ffb does today: tools/hostile_report.py shows the difference.

The symlink loop `loop -> .` is written too but has no entry: it is not a target, and the only thing
expected of it is that discovery neither follows it nor hangs.
"""
from __future__ import annotations

import os
import socket
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

import cv2
import numpy as np

from conftest import astronaut_face, face_frame, grace_hopper
from facefusion_batch.video.ffmpeg import SWS_FLAGS, ffmpeg_binary

Status = Literal["done", "no_face", "failed"]


@dataclass(frozen=True)
class Expected:
    """What ffb should report for a target; `reason_contains` is matched case-insensitively."""

    status: Status
    reason_contains: str | None = None


DONE = Expected("done")
NOT_VIDEO = Expected("failed", "no video stream")

# Frames per clip: enough to have a middle, few enough to stay tiny and quick.
FRAMES = 8


def _frames(image: np.ndarray, count: int) -> list[np.ndarray]:
    """`count` copies of `image` with a strip that changes each frame, so no two frames are identical."""
    frames = []
    for i in range(count):
        frame = image.copy()
        frame[-12:, :] = (i * 29) % 255
        frames.append(frame)
    return frames


def _background(height: int = 272, width: int = 480) -> np.ndarray:
    rng = np.random.default_rng(7)
    return cv2.GaussianBlur(rng.integers(40, 200, (height, width, 3), dtype=np.uint8), (0, 0), 3)


def _portrait_face_frame() -> np.ndarray:
    """A 272x480 (w x h) upright portrait frame with the astronaut's face, as a phone shows it."""
    frame = _background(480, 272)
    frame[150:330, 61:211] = cv2.resize(astronaut_face(), (150, 180))
    return frame


def _ffmpeg(*args: str, stdin: bytes | None = None) -> None:
    no_stdin = [] if stdin is not None else ["-nostdin"]
    subprocess.run([ffmpeg_binary(), "-v", "error", "-y", *no_stdin, *args], input=stdin, check=True)


def _encode(path: Path, frames: list[np.ndarray], video: list[str], audio: list[str] | None = None,
            fps: int = 25, output: list[str] | None = None, seconds: float | None = None) -> Path:
    """Encode BGR `frames` with `video` codec args; `audio` codec args add a sine tone `seconds` long
    (default: as long as the frames at `fps`)."""
    height, width = frames[0].shape[:2]
    command = ["-f", "rawvideo", "-pix_fmt", "bgr24", "-s", f"{width}x{height}", "-r", str(fps), "-i", "-"]
    if audio is not None:
        seconds = len(frames) / fps if seconds is None else seconds
        command += ["-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=44100:duration={seconds}", *audio]
    _ffmpeg(*command, *SWS_FLAGS, *video, *(output or []), str(path),
            stdin=b"".join(np.ascontiguousarray(f).tobytes() for f in frames))
    return path


X264 = ["-c:v", "libx264", "-preset", "ultrafast", "-crf", "26"]
H264 = [*X264, "-pix_fmt", "yuv420p"]
AAC = ["-c:a", "aac", "-b:a", "32k"]


def _face_clip(path: Path, video: list[str] = H264, audio: list[str] | None = AAC,
               output: list[str] | None = None) -> Path:
    return _encode(path, _frames(face_frame(), FRAMES), video, audio, output=output)


def _write_bytes(data: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(data)


def _truncated(faststart: bool) -> Callable[[Path], None]:
    """A valid clip cut to half its bytes: without faststart the index (moov) is lost, with it the media."""

    def build(path: Path) -> None:
        whole = path.with_name(f".whole-{path.name}")
        _face_clip(whole, output=["-movflags", "+faststart"] if faststart else None)
        data = whole.read_bytes()
        whole.unlink()
        path.write_bytes(data[: len(data) // 2])

    return build


def _png_as_mp4(path: Path) -> None:
    ok, png = cv2.imencode(".png", face_frame())
    assert ok
    path.write_bytes(png.tobytes())


def _audio_only(codec: list[str]) -> Callable[[Path], None]:
    return lambda path: _ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=0.5",
                                *codec, str(path))


def _variable_rate(path: Path) -> None:
    """20 frames: the first 10 at 25 fps, the rest at 25/3 fps, timestamps kept as they are (a phone's VFR)."""
    _encode(path, _frames(face_frame(), 20), [*H264, "-vf", "setpts='if(lt(N,10),N,10+(N-10)*3)/(25*TB)'",
                                              "-fps_mode", "vfr"], AAC, seconds=1.52)


def _odd_size(path: Path) -> None:
    """479x271 in MPEG-4 part 2 (it takes odd sizes in 4:2:0; libx264 refuses them)."""
    image = cv2.resize(face_frame(), (479, 271))
    _encode(path, _frames(image, FRAMES), ["-c:v", "mpeg4", "-q:v", "4", "-pix_fmt", "yuv420p"], AAC)


def _rotated(path: Path) -> None:
    """Stored landscape 480x272, tagged like a phone held upright (display rotation -90): shows 272x480."""
    stored = cv2.rotate(_portrait_face_frame(), cv2.ROTATE_90_COUNTERCLOCKWISE)
    plain = path.with_name(f".plain-{path.name}")
    _encode(plain, _frames(stored, FRAMES), H264, AAC)
    _ffmpeg("-display_rotation", "-90", "-i", str(plain), "-map", "0", "-c", "copy", str(path))
    plain.unlink()


def _huge_png(path: Path) -> None:
    """A 12000x12000 1-bit grey PNG written directly (a few kB on disk, 144 megapixels decoded)."""
    size = 12000
    row = b"\x00" + b"\x00" * (size // 8)  # filter byte + one row of black pixels
    compressor = zlib.compressobj(9)
    idat = b"".join(compressor.compress(row) for _ in range(size)) + compressor.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", size, size, 1, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b""))


def _dangling(path: Path) -> None:
    os.symlink("missing-target.mp4", path)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _link_to(device: str) -> Callable[[Path], None]:
    return lambda path: os.symlink(device, path)


def _socket(path: Path) -> None:
    """A Unix socket's file stays behind once its server is gone, as a crashed daemon leaves it."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()


def _unreadable(path: Path) -> None:
    _face_clip(path)
    path.chmod(0)


# Root reads a file without read permission; anyone else must get a clear failure, journaled.
UNREADABLE = DONE if os.geteuid() == 0 else Expected("failed", "permission denied")
NOT_REGULAR = "not a regular file"


def _long_name(length: int) -> str:
    stem = "long-name-"
    return stem + "x" * (length - len(stem) - len(".mp4")) + ".mp4"


# (path relative to the corpus directory, builder, expectation)
CASES: list[tuple[str, Callable[[Path], object], Expected]] = [
    ("plain.mp4", _face_clip, DONE),  # control: if this fails, nothing else means much
    ("no_face.mp4", lambda p: _encode(p, _frames(_background(), FRAMES), H264, AAC),
     Expected("no_face", "no face")),
    ("zero_bytes.mp4", _write_bytes(b""), Expected("failed", "empty")),
    ("truncated.mp4", _truncated(faststart=False), Expected("failed", "not a readable video, or damaged")),
    ("truncated_faststart.mp4", _truncated(faststart=True), Expected("failed", "damaged")),
    ("text.mp4", _write_bytes(b"This is not a video.\nJust some notes someone saved as .mp4.\n"),
     Expected("failed", "not a readable video")),
    # ffmpeg reads it by content, as one frame: a one-frame video with a face is a fair result.
    ("png_renamed.mp4", _png_as_mp4, DONE),
    ("audio_only.mp4", _audio_only(["-c:a", "aac", "-b:a", "32k"]), NOT_VIDEO),
    ("audio_only.mkv", _audio_only(["-c:a", "libopus", "-b:a", "32k"]), NOT_VIDEO),
    # Written at a constant rate (raw frames carry no timestamps); the summary says how far frames moved.
    ("variable_rate.mp4", _variable_rate, Expected("done", "variable frame rate")),
    ("odd_size_479x271.mp4", _odd_size, DONE),
    ("rotated_phone.mp4", _rotated, DONE),
    ("ten_bit.mp4", lambda p: _face_clip(p, [*X264, "-pix_fmt", "yuv420p10le", "-profile:v", "high10"]), DONE),
    ("yuv444.mp4", lambda p: _face_clip(p, [*X264, "-pix_fmt", "yuv444p"]), DONE),
    ("one_frame.mp4", lambda p: _encode(p, _frames(face_frame(), 1), H264, AAC), DONE),
    (_long_name(200), _face_clip, DONE),
    (_long_name(250), _face_clip, DONE),  # legal (< 255 bytes), but leaves little room for temp names
    ("dir with spaces/vidéo ünï.mp4", _face_clip, DONE),
    ("dangling.mp4", _dangling, Expected("failed", "broken symbolic link")),
    ("huge.png", _huge_png, Expected("failed", "downscale")),
    ("vp9.webm", lambda p: _face_clip(p, ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8",
                                          "-crf", "40", "-b:v", "0", "-pix_fmt", "yuv420p"],
                                      ["-c:a", "libopus", "-b:a", "32k"]), DONE),
    ("xvid.avi", lambda p: _face_clip(p, ["-c:v", "mpeg4", "-q:v", "5"], ["-c:a", "libmp3lame", "-b:a", "32k"]),
     DONE),
    ("h264_opus.mkv", lambda p: _face_clip(p, audio=["-c:a", "libopus", "-b:a", "32k"]), DONE),
    ("flac_audio.mp4", lambda p: _face_clip(p, audio=["-c:a", "flac"]), DONE),
    ("pcm_audio.mp4", lambda p: _face_clip(p, audio=["-c:a", "pcm_s16le"]), DONE),
    # Files that are no regular files: reading one would never end (and the hung run would keep the lock).
    ("fifo.mp4", _fifo, Expected("failed", "FIFO")),
    ("dev_zero_link.mp4", _link_to("/dev/zero"), Expected("failed", NOT_REGULAR)),
    ("dev_null_link.png", _link_to("/dev/null"), Expected("failed", NOT_REGULAR)),
    ("socket.mov", _socket, Expected("failed", "socket")),
    ("self_link_loop.mp4", _link_to("self_link_loop.mp4"), Expected("failed", "symbolic link loop")),
    ("unreadable.mp4", _unreadable, UNREADABLE),
    # A directory named like a video is a directory: what is inside it is processed.
    ("folder.mp4/inside.mp4", _face_clip, DONE),
    # Rich markup in a path ("[/x]" closes a tag that was never opened) is printed literally.
    ("markup[/x] name.mp4", _face_clip, DONE),
]


def build_corpus(directory: Path) -> dict[str, Expected]:
    """Write every case into `directory`; return {relative path: expected outcome of `ffb run`}."""
    directory.mkdir(parents=True, exist_ok=True)
    expected: dict[str, Expected] = {}
    for name, build, outcome in CASES:
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        build(path)
        expected[name] = outcome
    os.symlink(".", directory / "loop")
    return expected


def build_multi_face_source(path: Path) -> Path:
    """A source image with two faces of different sizes: the astronaut (larger) left, Grace Hopper right."""
    canvas = _background(420, 720)
    canvas[40:400, 30:330] = cv2.resize(astronaut_face(), (300, 360))
    hopper = grace_hopper()
    canvas[120:360, 440:640] = cv2.resize(hopper, (200, 240))
    if not cv2.imwrite(str(path), canvas):
        raise OSError(f"can't write {path}")
    return path


"""Generate the example media in ``examples/`` from public-domain images.

Deterministic and rerunnable: ``python tools/make_examples.py`` rewrites the same bytes each time.

- ``examples/source.jpg``: Grace Hopper (official US Navy photo) from matplotlib's sample data.
- ``examples/clips/*``: short clips built from scikit-image's ``astronaut`` (NASA photo), each with a
  synthesized AAC audio track so the pipeline's audio path is exercised.
"""

from __future__ import annotations

import math
import subprocess
import tempfile
import wave
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import imageio_ffmpeg
import matplotlib
import numpy as np
from skimage import data as skimage_data

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FPS = 25
SECONDS = 3.0
# Where the astronaut's face sits in the 512x512 photo (measured by eye): centre and head patch.
FACE_CENTRE = (226.0, 135.0)
HEAD_PATCH = (145, 10, 310, 215)  # x0, y0, x1, y1: hair to chin, a little neck

FrameAt = Callable[[float], np.ndarray]


@dataclass(frozen=True)
class Clip:
    """One example clip: its file name, frame size, frame generator and audio signal."""

    name: str
    size: tuple[int, int]  # width, height
    frame_at: FrameAt  # t in [0, 1) -> BGR uint8 frame
    audio: Callable[[int], np.ndarray]  # sample rate -> (samples, channels) float in [-1, 1]
    sample_rate: int


def astronaut_bgr() -> np.ndarray:
    """The astronaut photo as BGR uint8."""
    return np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])


def smoothstep(t: float) -> float:
    """Ease in and out, so motion starts and stops gently like a real camera move."""
    return t * t * (3.0 - 2.0 * t)


def lerp(pair: tuple[float, float], k: float) -> float:
    """The value ``k`` of the way from ``pair[0]`` to ``pair[1]``."""
    return pair[0] + (pair[1] - pair[0]) * k


def similarity(scale: float, angle_deg: float, src_centre: tuple[float, float],
               dst_centre: tuple[float, float]) -> np.ndarray:
    """2x3 matrix that scales/rotates about ``src_centre`` and puts it at ``dst_centre``."""
    matrix = cv2.getRotationMatrix2D(src_centre, angle_deg, scale)
    matrix[:, 2] += np.subtract(dst_centre, src_centre)
    return matrix


def camera_move(image: np.ndarray, size: tuple[int, int], scale: tuple[float, float],
                angle: tuple[float, float], centre: tuple[tuple[float, float], tuple[float, float]]) -> FrameAt:
    """Frames of a camera move over ``image``: scale, roll and face position interpolated over time."""

    def frame_at(t: float) -> np.ndarray:
        k = smoothstep(t)
        zoom = lerp(scale, k)
        dst = (lerp((centre[0][0], centre[1][0]), k), lerp((centre[0][1], centre[1][1]), k))
        matrix = similarity(zoom, lerp(angle, k), FACE_CENTRE, dst)
        return cv2.warpAffine(image, matrix, size, flags=cv2.INTER_AREA if zoom < 1 else cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_REFLECT101)

    return frame_at


def head_sprite(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The astronaut's head cut out with a feathered elliptical alpha mask (float32 in [0, 1])."""
    x0, y0, x1, y1 = HEAD_PATCH
    patch = image[y0:y1, x0:x1].astype(np.float32)
    alpha = np.zeros(patch.shape[:2], np.float32)
    centre = (round(FACE_CENTRE[0]) - x0, round(FACE_CENTRE[1]) - y0 - 15)
    cv2.ellipse(alpha, centre, (76, 100), 0, 0, 360, 1.0, -1)
    alpha = cv2.GaussianBlur(alpha, (0, 0), 6)
    return patch, alpha


def group_scene(image: np.ndarray, size: tuple[int, int]) -> FrameAt:
    """Several astronaut heads (one mirrored) at different scales, drifting slowly over a soft backdrop."""
    width, height = size
    backdrop = cv2.GaussianBlur(cv2.resize(image[:260, 280:], size, interpolation=cv2.INTER_AREA), (0, 0), 12)
    patch, alpha = head_sprite(image)
    # (centre x, centre y, scale, mirrored, drift x, drift y) for each head.
    heads = [(95, 170, 0.80, False, 14, -6), (245, 200, 0.95, True, -10, 8),
             (400, 160, 1.05, False, 8, 10), (560, 205, 0.75, True, -12, -8)]

    def frame_at(t: float) -> np.ndarray:
        canvas = backdrop.astype(np.float32)
        phase = math.sin(2 * math.pi * t * 0.5)
        for cx, cy, scale, mirrored, dx, dy in heads:
            sprite, mask = (patch[:, ::-1], alpha[:, ::-1]) if mirrored else (patch, alpha)
            src_centre = (sprite.shape[1] / 2, sprite.shape[0] / 2)
            matrix = similarity(scale, 3.0 * phase * (-1 if mirrored else 1), src_centre,
                                (cx + dx * phase, cy + dy * phase))
            warped = cv2.warpAffine(np.ascontiguousarray(sprite), matrix, size, flags=cv2.INTER_LINEAR)
            weight = cv2.warpAffine(np.ascontiguousarray(mask), matrix, size, flags=cv2.INTER_LINEAR)[..., None]
            canvas = canvas * (1 - weight) + warped * weight
        return np.clip(canvas + 0.5, 0, 255).astype(np.uint8)

    return frame_at


def tones(frequencies: tuple[float, ...], channels: int) -> Callable[[int], np.ndarray]:
    """A sequence of notes, one per frequency, each with a soft attack and decay."""

    def make(rate: int) -> np.ndarray:
        n = int(rate * SECONDS)
        t = np.arange(n) / rate
        note = (t * len(frequencies) / SECONDS).astype(int)
        freq = np.asarray(frequencies)[note]
        local = (t * len(frequencies) / SECONDS) % 1.0
        envelope = np.minimum(local / 0.05, 1.0) * np.exp(-3.0 * local)
        mono = 0.4 * envelope * np.sin(2 * math.pi * freq * t)
        if channels == 1:
            return mono[:, None]
        # Right channel a fifth higher, so a swapped channel order would be audible.
        right = 0.4 * envelope * np.sin(2 * math.pi * freq * 1.5 * t)
        return np.stack([mono, right], axis=1)

    return make


def chirp(low: float, high: float) -> Callable[[int], np.ndarray]:
    """A mono exponential sweep from ``low`` to ``high`` Hz over the clip."""

    def make(rate: int) -> np.ndarray:
        t = np.arange(int(rate * SECONDS)) / rate
        k = math.log(high / low) / SECONDS
        phase = 2 * math.pi * low * (np.exp(k * t) - 1) / k
        fade = np.minimum(1.0, np.minimum(t, SECONDS - t) / 0.1)
        return (0.4 * fade * np.sin(phase))[:, None]

    return make


def write_wav(path: Path, samples: np.ndarray, rate: int) -> None:
    """Write float samples in [-1, 1] as 16-bit PCM WAV."""
    pcm = np.clip(np.round(samples * 32767), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(samples.shape[1])
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(pcm.tobytes())


def encode_command(ffmpeg: str, size: tuple[int, int], audio: Path, output: Path) -> list[str]:
    """ffmpeg arguments: raw BGR frames on stdin + a WAV -> H.264 yuv420p + AAC, reproducible bytes."""
    return [
        ffmpeg, "-hide_banner", "-loglevel", "error", "-y",
        "-f", "rawvideo", "-pix_fmt", "bgr24", "-s", f"{size[0]}x{size[1]}", "-r", str(FPS), "-i", "-",
        "-i", str(audio), "-map", "0:v", "-map", "1:a",
        # swscale's RGB->YUV default is BT.601 limited range; say so in the stream.
        "-vf", "setparams=range=tv:color_primaries=smpte170m:color_trc=smpte170m:colorspace=smpte170m",
        "-c:v", "libx264", "-preset", "medium", "-crf", "28", "-pix_fmt", "yuv420p",
        "-c:a", "aac", "-b:a", "96k", "-shortest",
        "-map_metadata", "-1", "-fflags", "+bitexact", "-flags:v", "+bitexact", "-flags:a", "+bitexact",
        "-movflags", "+faststart", str(output),
    ]


def frames(clip: Clip) -> Iterator[np.ndarray]:
    """All frames of ``clip``."""
    count = round(FPS * SECONDS)
    for index in range(count):
        yield clip.frame_at(index / count)


def encode(clip: Clip, output: Path) -> None:
    """Render ``clip`` to ``output``."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "audio.wav"
        write_wav(wav, clip.audio(clip.sample_rate), clip.sample_rate)
        command = encode_command(imageio_ffmpeg.get_ffmpeg_exe(), clip.size, wav, output)
        with subprocess.Popen(command, stdin=subprocess.PIPE) as process:
            assert process.stdin is not None
            for frame in frames(clip):
                process.stdin.write(frame.tobytes())
            process.stdin.close()
            if process.wait() != 0:
                raise RuntimeError(f"ffmpeg failed writing {output}")


def make_source(output: Path) -> None:
    """Grace Hopper, head and shoulders, 400 px wide."""
    image = cv2.imread(str(Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"))
    crop = image[0:480, 56:456]
    output.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(output), crop, [cv2.IMWRITE_JPEG_QUALITY, 90])


def clips() -> list[Clip]:
    """The example clips."""
    image = astronaut_bgr()
    pan = camera_move(image, (640, 360), (1.45, 1.6), (0.0, 2.0), ((260.0, 175.0), (380.0, 185.0)))
    zoom = camera_move(image, (480, 270), (0.9, 1.45), (-10.0, 8.0), ((150.0, 130.0), (250.0, 140.0)))
    return [
        Clip("clips/astronaut_pan.mp4", (640, 360), pan, tones((440.0, 554.4, 659.3), 2), 48000),
        Clip("clips/astronaut_zoom.mov", (480, 270), zoom, chirp(200.0, 2000.0), 44100),
        Clip("clips/group.mp4", (640, 360), group_scene(image, (640, 360)),
             tones((261.6, 329.6, 392.0, 523.3), 2), 48000),
    ]


def main() -> None:
    """Write every example file."""
    make_source(EXAMPLES / "source.jpg")
    for clip in clips():
        encode(clip, EXAMPLES / clip.name)
    for path in sorted(EXAMPLES.rglob("*")):
        if path.is_file():
            print(f"{path.relative_to(EXAMPLES)}\t{path.stat().st_size} bytes")


if __name__ == "__main__":
    main()

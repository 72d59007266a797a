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

Status = Literal["done", "no_face", "failed", "skipped"]


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


def face_clip(path: Path, frames: int = FRAMES) -> Path:
    """A clip of `frames` frames with a face and a tone."""
    return _encode(path, _frames(face_frame(), frames), H264, AAC)


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


def _huge_png(path: Path, width: int = 12000, height: int | None = None) -> None:
    """A 12000x12000 (or `width`x`height`) 1-bit grey PNG written directly (a few kB on disk, 144
    megapixels decoded)."""
    height = width if height is None else height
    row = b"\x00" + b"\x00" * ((width + 7) // 8)  # filter byte + one row of black pixels
    compressor = zlib.compressobj(9)
    idat = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
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


def _long_name(length: int, suffix: str = ".mp4") -> str:
    stem = "long-name-"
    return stem + "x" * (length - len(stem) - len(suffix)) + suffix


def _gop_clip(path: Path, frames: int = 30) -> Path:
    """`frames` frames with B-frames and a keyframe every 10, so a cut lands mid-GOP."""
    return _encode(path, _frames(face_frame(), frames), [*H264, "-g", "10", "-bf", "2"], AAC)


def _edit_list_cut(path: Path) -> None:
    """Cut without re-encoding from mid-GOP: the MP4 stores the frames from the keyframe before the cut and
    an edit list that shows only those after it (as a phone's or an editor's quick trim writes)."""
    clip = _gop_clip(path.with_name(f".clip-{path.name}"))
    _ffmpeg("-ss", "0.5", "-t", "0.5", "-i", str(clip), "-c", "copy", str(path))
    clip.unlink()


def _no_pts_avi(path: Path) -> None:
    """Raw H.264 (an elementary stream has no timestamps) stored in AVI as it is: packets carry no pts."""
    raw = path.with_name(f".raw-{path.name}.h264")
    _encode(raw, _frames(face_frame(), FRAMES), [*H264, "-bf", "0", "-f", "h264"])
    _ffmpeg("-i", str(raw), "-c", "copy", str(path))
    raw.unlink()


def _sar_clip(path: Path, sar: str = "4/3", extra: list[str] | None = None) -> Path:
    """Non-square pixels: stored 360x272, shown 480x272 (SAR 4:3), as DV and anamorphic DVDs are."""
    image = cv2.resize(face_frame(), (360, 272))
    return _encode(path, _frames(image, FRAMES), [*H264, "-vf", f"setsar={sar}", *(extra or [])], AAC)


def _rotated_sar(path: Path) -> None:
    """Non-square pixels on a phone-rotated clip: the aspect ratio turns with the picture."""
    plain = path.with_name(f".plain-{path.name}")
    stored = cv2.rotate(cv2.resize(_portrait_face_frame(), (272, 360)), cv2.ROTATE_90_COUNTERCLOCKWISE)
    _encode(plain, _frames(stored, FRAMES), [*H264, "-vf", "setsar=4/3"], AAC)
    _ffmpeg("-display_rotation", "-90", "-i", str(plain), "-map", "0", "-c", "copy", str(path))
    plain.unlink()


def _interlaced(order: str) -> Callable[[Path], None]:
    """Interlaced H.264 (fields coded separately) tagged top or bottom field first."""
    params = "tff=1" if order == "tt" else "bff=1"
    return lambda path: _face_clip(path, [*H264, "-flags", "+ildct+ilme", "-x264-params", params,
                                          "-field_order", order])


def _tags(primaries: str, transfer: str, matrix: str, range_: str) -> list[str]:
    """Encoder args converting to `matrix`/`range_` and tagging the frames with all four colour properties
    (ffmpeg 7+ takes the tags from the frames: `-color_primaries` alone on the encoder is ignored)."""
    return ["-vf", f"scale=out_color_matrix={matrix}:out_range={range_},setparams=color_primaries={primaries}:"
                   f"color_trc={transfer}:colorspace={matrix}:range={range_}"]


def _colour_tagged(path: Path) -> None:
    """Full-range BT.709 with every tag set (a camera's log of how to show it)."""
    _face_clip(path, [*X264, "-pix_fmt", "yuvj420p", *_tags("bt709", "bt709", "bt709", "pc")])


def _tagged(primaries: str, transfer: str, matrix: str, range_: str = "tv",
            video: list[str] = H264) -> Callable[[Path], None]:
    return lambda path: _face_clip(path, [*video, *_tags(primaries, transfer, matrix, range_)])


# HDR10 mastering display (P3-D65 primaries, 1000 / 0.0001 cd/m²) and content light level, in x265 notation.
MASTER_DISPLAY = "G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)"
MAX_CLL = "1000,400"
X265 = ["-c:v", "libx265", "-preset", "ultrafast", "-crf", "28"]


def _hdr10(path: Path, master_display: bool = True) -> None:
    """HEVC Main10, BT.2020 / PQ, with HDR10 static metadata in its SEI (as a camera or grading tool writes)."""
    metadata = f"hdr10=1:master-display={MASTER_DISPLAY}:max-cll={MAX_CLL}" if master_display else "hdr10=0"
    _face_clip(path, [*X265, "-pix_fmt", "yuv420p10le", "-tag:v", "hvc1", "-x265-params", f"log-level=error:{metadata}",
                      *_tags("bt2020", "smpte2084", "bt2020nc", "tv")])


def _vp9_pq(path: Path) -> None:
    """VP9 profile 2 (10-bit) BT.2020 / PQ in WebM, as HDR video is streamed."""
    _face_clip(path, ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-crf", "40", "-b:v", "0",
                      "-pix_fmt", "yuv420p10le", *_tags("bt2020", "smpte2084", "bt2020nc", "tv")],
               ["-c:a", "libopus", "-b:a", "32k"])


def _hlg(path: Path) -> None:
    """HEVC Main10 BT.2020 / HLG (a phone's HDR video: no static metadata)."""
    _face_clip(path, [*X265, "-pix_fmt", "yuv420p10le", "-x265-params", "log-level=error",
                      *_tags("bt2020", "arib-std-b67", "bt2020nc", "tv")])


def _cover_jpeg(path: Path) -> Path:
    cv2.imwrite(str(path), cv2.resize(grace_hopper(), (64, 80)))
    return path


def _cover_art_first(path: Path) -> None:
    """A cover picture (attached JPEG) as the file's first video stream, the real video after it."""
    clip = _face_clip(path.with_name(f".clip-{path.name}"))
    cover = _cover_jpeg(path.with_name(f".cover-{path.name}.jpg"))
    _ffmpeg("-i", str(cover), "-i", str(clip), "-map", "0", "-map", "1", "-c", "copy",
            "-disposition:v:0", "attached_pic", str(path))
    clip.unlink()
    cover.unlink()


def _streams_before_video(path: Path) -> None:
    """Matroska with audio, a subtitle and an attachment before the video stream."""
    clip = _face_clip(path.with_name(f".clip-{path.name}"))
    subs = _srt(path.with_name(f".subs-{path.name}.srt"))
    font = path.with_name(f".font-{path.name}.ttf")
    font.write_bytes(b"not really a font, but any attachment will do")
    _ffmpeg("-i", str(clip), "-i", str(subs), "-map", "0:a", "-map", "1", "-map", "0:v", "-c", "copy",
            "-attach", str(font), "-metadata:s:t", "mimetype=application/x-truetype-font", str(path))
    for leftover in (clip, subs, font):
        leftover.unlink()


def _audio_with_cover(path: Path) -> None:
    """Music with cover art, named .mp4: its only video stream is a still picture, not a video."""
    audio = path.with_name(f".audio-{path.name}.m4a")
    _audio_only(["-c:a", "aac", "-b:a", "32k"])(audio)
    cover = _cover_jpeg(path.with_name(f".cover-{path.name}.jpg"))
    _ffmpeg("-i", str(audio), "-i", str(cover), "-map", "0", "-map", "1", "-c", "copy",
            "-disposition:v:0", "attached_pic", str(path))
    audio.unlink()
    cover.unlink()


def _timecode_track(path: Path) -> None:
    """A camera's QuickTime file: a timecode data track (tmcd) beside the video and audio."""
    _face_clip(path, output=["-timecode", "01:00:00:00"])


def _two_audio_tracks(path: Path) -> None:
    """An MP4 with a dub: AAC and FLAC audio tracks (FLAC is converted for MP4, the AAC copied)."""
    clip = _face_clip(path.with_name(f".clip-{path.name}"))
    _ffmpeg("-i", str(clip), "-f", "lavfi", "-i", "sine=frequency=660:duration=0.32", "-map", "0", "-map", "1:a",
            "-c:v", "copy", "-c:a:0", "copy", "-c:a:1", "flac", str(path))
    clip.unlink()


def _two_angles(path: Path) -> None:
    """Two camera angles (two real video streams): the first is processed, the summary names the other."""
    first = _face_clip(path.with_name(f".a-{path.name}"))
    second = _face_clip(path.with_name(f".b-{path.name}"), audio=None)
    _ffmpeg("-i", str(first), "-i", str(second), "-map", "0", "-map", "1:v", "-c", "copy", str(path))
    first.unlink()
    second.unlink()


def _start_offset(path: Path) -> None:
    """The video starts 0.4 s after the audio (a stream start offset): the output must keep them in sync."""
    clip = _face_clip(path.with_name(f".clip-{path.name}"), audio=None)
    _ffmpeg("-itsoffset", "0.4", "-i", str(clip), "-f", "lavfi", "-i", "sine=frequency=440:duration=0.72",
            "-map", "0:v", "-map", "1:a", "-c:v", "copy", *AAC, str(path))
    clip.unlink()


def _srt(path: Path) -> Path:
    path.write_text("1\n00:00:00,000 --> 00:00:00,200\nHello\n\n2\n00:00:00,200 --> 00:00:00,300\nWorld\n")
    return path


def _with_subtitles(codec: str) -> Callable[[Path], None]:
    """A clip with a text subtitle stream in the container's own subtitle format."""

    def build(path: Path) -> None:
        clip = path.with_name(f".clip-{path.name}")
        if path.suffix == ".webm":
            _face_clip(clip, ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-crf", "40",
                              "-b:v", "0", "-pix_fmt", "yuv420p"], ["-c:a", "libopus", "-b:a", "32k"])
        else:
            _face_clip(clip)
        subs = _srt(path.with_name(f".subs-{path.name}.srt"))
        _ffmpeg("-i", str(clip), "-i", str(subs), "-map", "0", "-map", "1", "-c", "copy", "-c:s", codec,
                str(path))
        clip.unlink()
        subs.unlink()

    return build


def _alpha_plane(height: int, width: int) -> np.ndarray:
    """Opaque in the middle (where the face is), fading to transparent at the sides."""
    ramp = np.clip(np.abs(np.linspace(-1.0, 1.0, width)) * -400 + 400, 0, 255).astype(np.uint8)
    return np.repeat(ramp[None, :], height, axis=0)


def _rgba(path: Path) -> None:
    """A still with an alpha channel (a cut-out on a transparent background)."""
    from PIL import Image

    frame = face_frame()
    rgba = np.dstack([frame[:, :, ::-1], _alpha_plane(*frame.shape[:2])])
    Image.fromarray(rgba, "RGBA").save(path, **({"lossless": True} if path.suffix == ".webp" else {}))


def _png_to_gif(path: Path) -> None:
    from PIL import Image

    with Image.open(path.with_suffix(".png")) as image:
        image.save(path)
    path.with_suffix(".png").unlink()


def _animated(path: Path, durations: list[int] | int = 80) -> None:
    """Four frames, 80 ms each (or `durations`), looping; with transparency where the format has it."""
    from PIL import Image

    frames = []
    for frame in _frames(cv2.resize(face_frame(), (240, 136)), 4):
        alpha = _alpha_plane(*frame.shape[:2])
        if path.suffix == ".gif":  # Pillow drops RGBA's alpha when it makes the palette: mark index 255 ourselves
            indices = np.asarray(Image.fromarray(frame[:, :, ::-1].copy()).quantize(255)).copy()
            palette = Image.fromarray(frame[:, :, ::-1].copy()).quantize(255).getpalette()[:765]
            indices[alpha < 128] = 255
            paletted = Image.fromarray(indices, "P")
            paletted.putpalette(palette + [0] * (768 - len(palette)))
            frames.append(paletted)
        else:
            frames.append(Image.fromarray(np.dstack([frame[:, :, ::-1], alpha]), "RGBA"))
    options = {"lossless": True} if path.suffix == ".webp" else {"transparency": 255} if path.suffix == ".gif" else {}
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=durations, loop=0, **options)


# Zero-delay frames (a GIF "flash", an APNG's instant first frame): kept at 0, not made 100 ms (issue 26).
ZERO_DELAYS = [0, 80, 0, 40]


def _zero_delays(path: Path) -> None:
    _animated(path, ZERO_DELAYS)


# (path relative to the corpus directory, builder, expectation)
CASES: list[tuple[str, Callable[[Path], object], Expected]] = [
    ("plain.mp4", _face_clip, DONE),  # control: if this fails, nothing else means much
    # Other names of one file are one target, done once under its own name (issue 26, class 1).
    ("latest.mp4", lambda p: os.symlink("plain.mp4", p), Expected("skipped", "the same file as")),
    ("z_hard_link_of_plain.mp4", lambda p: os.link(p.parent / "plain.mp4", p), Expected("skipped", "hard link")),
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
    # 251..255 bytes: ffb's temp and sidecar suffixes must not push them past the limit (issue 26, class 5).
    (_long_name(255), _face_clip, DONE),
    (_long_name(253, ".png"), lambda p: cv2.imwrite(str(p), face_frame()), DONE),
    # A format that keeps its C2PA manifest in a sidecar: <name>.c2pa can't be named past 250 bytes.
    (_long_name(250, ".mkv"), _face_clip, DONE),
    (_long_name(251, ".mkv"), _face_clip, Expected("failed", "C2PA sidecar can't be named")),
    ("dir with spaces/vidéo ünï.mp4", _face_clip, DONE),
    ("dangling.mp4", _dangling, Expected("failed", "broken symbolic link")),
    ("huge.png", _huge_png, Expected("failed", "downscale")),
    # Past Pillow's own bomb limit: the message gives the real size, not a stand-in (issue 26, class 5).
    ("bomb_30000x30000.png", lambda p: _huge_png(p, 30000), Expected("failed", "image is 30000x30000")),
    ("bomb_200000x1000.png", lambda p: _huge_png(p, 200000, 1000), Expected("failed", "image is 200000x1000")),
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
    # Valid files whose layout or picture a careless probe gets wrong (issue 10, class 4).
    ("edit_list_cut.mp4", _edit_list_cut, DONE),
    ("no_pts.avi", _no_pts_avi, DONE),
    ("sar_4_3.mp4", _sar_clip, DONE),
    ("rotated_sar.mp4", _rotated_sar, DONE),
    ("interlaced_tff.mp4", _interlaced("tt"), DONE),
    ("interlaced_bff.mkv", _interlaced("bb"), DONE),
    ("colour_tagged_full_range.mp4", _colour_tagged, DONE),
    # Colour primaries, transfer, matrix and range are kept in every container (issue 26, class 3).
    ("bt709.mp4", _tagged("bt709", "bt709", "bt709"), DONE),
    ("bt601.mkv", _tagged("smpte170m", "smpte170m", "smpte170m"), DONE),
    ("bt601_pal.mov", _tagged("bt470bg", "bt709", "bt470bg"), DONE),
    ("srgb_full_range.avi", _tagged("bt709", "iec61966-2-1", "bt709", "pc"), DONE),
    # HDR stays HDR where libx265 writes it (auto picks it): 10-bit, PQ/HLG, HDR10 metadata kept.
    ("hdr10.mp4", _hdr10, DONE),
    ("hdr10.mkv", _hdr10, DONE),
    ("hlg.mov", _hlg, DONE),
    # WebM's encoder (VP9 here) can't carry HDR10 metadata: a real tone-map to SDR, said in the note.
    ("hdr_pq_vp9.webm", _vp9_pq, Expected("done", "tone-mapped to SDR")),
    # Marked outputs can't hold MP4 cover art beside the marking tags: the note says the cover is gone.
    ("cover_art_first.mp4", _cover_art_first, Expected("done", "cover picture not kept")),
    ("audio_with_cover.mp4", _audio_with_cover, NOT_VIDEO),
    ("timecode_track.mov", _timecode_track, DONE),
    ("streams_before_video.mkv", _streams_before_video, DONE),
    ("start_offset.mp4", _start_offset, DONE),
    ("two_audio_tracks.mp4", _two_audio_tracks, DONE),
    ("two_angles.mkv", _two_angles, Expected("done", "only the first video stream was processed; 1 more")),
    # MPEG-TS content under an .mp4 name: streams under a program, timestamps starting at 1.4 s.
    ("transport_stream.mp4", lambda p: _face_clip(p, output=["-f", "mpegts"]), DONE),
    # Subtitles are kept (class 11): converted to the container's own text format where needed.
    ("subtitles.mkv", _with_subtitles("srt"), DONE),
    ("subtitles.mp4", _with_subtitles("mov_text"), DONE),
    ("subtitles.webm", _with_subtitles("webvtt"), DONE),
    # Transparency and animation are kept (class 11): every frame processed, alpha put back.
    ("rgba.png", _rgba, DONE),
    ("rgba.webp", _rgba, DONE),
    ("still.gif", lambda p: cv2.imwrite(str(p.with_suffix(".png")), face_frame()) and _png_to_gif(p), DONE),
    ("animated.gif", _animated, DONE),
    ("animated.webp", _animated, DONE),
    ("animated.png", _animated, DONE),
    ("zero_delay.gif", _zero_delays, DONE),
    ("zero_delay.png", _zero_delays, DONE),
    ("zero_delay.webp", _zero_delays, DONE),
]


# Files `ffb verify` must judge (issue 26, class 4): data that claims to be a C2PA manifest and does not
# parse is a damaged manifest (exit 1); JUMBF of another owner and ordinary files claim none.
def jpeg_with_app11(path: Path, segment: bytes | None = None) -> Path:
    """A JPEG of the face frame, with `segment` as an APP11 segment right after its start marker."""
    cv2.imwrite(str(path), face_frame())
    if segment is not None:
        data = path.read_bytes()
        path.write_bytes(data[:2] + b"\xff\xeb" + struct.pack(">H", len(segment) + 2) + segment + data[2:])
    return path


def jumbf_app11(label: bytes, payload: bytes, sequence: int = 1) -> bytes:
    """An APP11 payload: JPEG's common identifier, box instance, packet sequence, then a JUMBF superbox
    whose description box carries `label`."""
    description = b"jumd" + bytes(16) + b"\x03" + label + b"\0"
    description = struct.pack(">I", len(description) + 4) + description
    box = b"jumb" + description + payload
    return b"JP" + b"\x00\x01" + struct.pack(">I", sequence) + struct.pack(">I", len(box) + 4) + box


def mp4_with_uuid_box(path: Path, body: bytes) -> Path:
    """A face clip with a top-level `uuid` box (`body`: its 16-byte id and data) after its ftyp."""
    _face_clip(path)
    data = path.read_bytes()
    ftyp = struct.unpack(">I", data[:4])[0]
    box = struct.pack(">I", 8 + len(body)) + b"uuid" + body
    path.write_bytes(data[:ftyp] + box + data[ftyp:])
    return path


def png_with_chunk(path: Path, kind: bytes, body: bytes) -> Path:
    """A PNG of the face frame with a chunk `kind` (correct CRC) after its IHDR."""
    cv2.imwrite(str(path), face_frame())
    data = path.read_bytes()
    chunk = struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    end_of_ihdr = 8 + 8 + 13 + 4
    path.write_bytes(data[:end_of_ihdr] + chunk + data[end_of_ihdr:])
    return path


def webp_with_chunk(path: Path, body: bytes) -> Path:
    """A WebP of the face frame with a RIFF `C2PA` chunk holding `body` at its end."""
    cv2.imwrite(str(path), face_frame(), [cv2.IMWRITE_WEBP_QUALITY, 80])
    data = path.read_bytes()
    chunk = b"C2PA" + struct.pack("<I", len(body)) + body + b"\0" * (len(body) & 1)
    riff = data[12:] + chunk
    path.write_bytes(b"RIFF" + struct.pack("<I", len(riff) + 4) + b"WEBP" + riff)
    return path


C2PA_UUID = bytes.fromhex("d8fec3d61b0e483c92975828877ec481")
_NOISE = np.random.default_rng(26).integers(0, 256, 400, dtype=np.uint8).tobytes()

MANIFEST_CASES: list[tuple[str, Callable[[Path], object], Literal["none", "damaged"]]] = [
    ("app11_random.jpg", lambda p: jpeg_with_app11(p, _NOISE), "damaged"),
    ("jumbf_c2pa_garbled.jpg", lambda p: jpeg_with_app11(p, jumbf_app11(b"c2pa", _NOISE)), "damaged"),
    ("jumbf_jpeg360.jpg", lambda p: jpeg_with_app11(p, jumbf_app11(b"jpeg360", _NOISE)), "none"),
    ("uuid_c2pa_random.mp4", lambda p: mp4_with_uuid_box(p, C2PA_UUID + _NOISE), "damaged"),
    ("uuid_other.mp4", lambda p: mp4_with_uuid_box(p, bytes(16) + _NOISE), "none"),
    ("cabx_random.png", lambda p: png_with_chunk(p, b"caBX", _NOISE), "damaged"),
    ("text_chunk.png", lambda p: png_with_chunk(p, b"tEXt", b"Comment\0hello"), "none"),
    ("c2pa_chunk_random.webp", lambda p: webp_with_chunk(p, _NOISE), "damaged"),
    ("plain.jpg", jpeg_with_app11, "none"),
]


def build_manifest_corpus(directory: Path) -> dict[str, str]:
    """Write every MANIFEST_CASES file into `directory`; return {name: "none" | "damaged"}."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, build, _ in MANIFEST_CASES:
        build(directory / name)
    return {name: expected for name, _, expected in MANIFEST_CASES}


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


def noise_face_png(path: Path, size: int = 1100) -> Path:
    """A `size`x`size` PNG of noise with a face in it: ~3.6 MB at 1100, so a few fill a 10 MB disk."""
    picture = np.random.default_rng(5).integers(0, 255, (size, size, 3), dtype=np.uint8)
    face = face_frame()
    picture[100:100 + face.shape[0], 50:50 + face.shape[1]] = face
    if not cv2.imwrite(str(path), picture):
        raise OSError(f"can't write {path}")
    return path


# A sitecustomize for an ffb subprocess: once the frames of a target named clip.mp4 are processed, and
# before its output is published, the file $FFB_TEST_UPLOAD is renamed over it (an upload landing by
# write-then-rename at the worst moment).
RENAME_OVER = '''
import os
from pathlib import Path

from facefusion_batch.workflow import job

_real = job.encode_video


def _encoding(path, *args, **kwargs):
    encoded = _real(path, *args, **kwargs)
    upload = Path(os.environ["FFB_TEST_UPLOAD"])
    if upload.exists() and Path(path).name == "clip.mp4":
        os.replace(upload, path)
    return encoded


job.encode_video = _encoding
'''


def build_multi_face_source(path: Path) -> Path:
    """A source image with two faces of different sizes: the astronaut (larger) left, Grace Hopper right."""
    canvas = _background(420, 720)
    canvas[40:400, 30:330] = cv2.resize(astronaut_face(), (300, 360))
    hopper = grace_hopper()
    canvas[120:360, 440:640] = cv2.resize(hopper, (200, 240))
    if not cv2.imwrite(str(path), canvas):
        raise OSError(f"can't write {path}")
    return path


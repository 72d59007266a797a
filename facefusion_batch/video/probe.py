"""Probe a video with ffmpeg alone (the wheel's ffmpeg ships without ffprobe).

One ffmpeg run, no decoding: a stream copy of the video stream into `framecrc`, ffmpeg's machine-readable
packet list. Its header gives the codec, stored size, sample aspect ratio and time base; its lines give
every packet's timestamps and flags, so the frame count is the frames *presented* (packets an edit list
cuts away carry the discard flag and are not counted) and the rate is exact. Only what framecrc does not
carry (pixel format, colour tags, field order, rotation, the other streams) comes from ffmpeg's
description of the input, read field by field for the one stream the copy mapped.

Why not PyAV: a second FFmpeg build in the process, 30+ MB, whose demuxer could count frames differently
from the ffmpeg binary that decodes them; this way the probe and the decoder are the same program.
"""
from __future__ import annotations

import dataclasses
import re
import subprocess
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

from facefusion_batch.errors import MediaError
from facefusion_batch.video import ffmpeg
from facefusion_batch.video.ffmpeg import Colour, Picture

_DURATION = re.compile(r"^\s*Duration: (\d+):(\d+):(\d+(?:\.\d+)?)")
_STREAM = re.compile(r"^( {2,})Stream #0:(\d+)\S*: (\w+): (.*)$")  # deeper under a "Program" in some builds
_MAPPING = re.compile(r"^  Stream #0:(\d+) -> #0:0\b")
_ROTATION = re.compile(r"^\s*display ?matrix: rotation of (-?\d+(?:\.\d+)?) degrees", re.IGNORECASE)
_TIMECODE = re.compile(r"^\s+timecode\s*: (\d{2}:\d{2}:\d{2}[:;.]\d{2,3})\s*$")
_HEADER = re.compile(r"^#(\w+) 0: (.*)$")
_SIZE = re.compile(r"^(\d+)x(\d+)\b")
_PIXEL_FORMAT = re.compile(r"^([a-z][a-z0-9_]*)(?:\((.*)\))?$")
_RATE = re.compile(r"^(\d+(?:\.\d+)?)(k?) (fps|tbr)$")
_RANGES = {"tv", "pc"}
_FIELD_ORDERS = {"top first": "tt", "bottom first": "bb", "top coded first (swapped)": "tb",
                 "bottom coded first (swapped)": "bt", "progressive": "progressive"}
_NOPTS = -(1 << 63)
_DISCARD = 0x4  # AV_PKT_FLAG_DISCARD: decoded for the frames after it, never shown


@dataclass(frozen=True)
class VideoInfo:
    """What the pipeline needs to know about one video. width/height are as displayed (rotation applied);
    frame_count counts the frames shown (an edit list may hide some that are stored)."""

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
    sar: Fraction = Fraction(1)  # sample aspect ratio of the stored frames
    field_order: str = "progressive"  # or tt, bb, tb, bt as ffmpeg's -field_order names them
    subtitle_codecs: tuple[str, ...] = ()
    start_time: float = 0.0  # seconds from the file's start to the first frame shown
    timecode: str | None = None  # a camera's start timecode (HH:MM:SS:FF), from a timecode track or tag
    audio_codecs: tuple[str, ...] = ()  # every audio track's codec, in order (audio_codec is the first's)
    attachments: int = 0  # files attached to the container (Matroska: fonts for styled subtitles)
    covers: tuple[int, ...] = ()  # stream indexes of cover pictures (attached JPEG/PNG)
    other_videos: int = 0  # video streams besides the one processed and the covers (other angles)

    @property
    def picture(self) -> Picture:
        """Aspect and interlacing of the frames as decoded (a quarter turn swaps the aspect ratio)."""
        sar = 1 / self.sar if self.rotation % 180 else self.sar
        return Picture(sar=sar, field_order=self.field_order)


class Timing(NamedTuple):
    """What the packets say: frames shown, rate, whether it varies, how far frames move when written at
    that constant rate, the first frame's time and the duration (seconds; None when packets lack times)."""

    count: int
    fps: Fraction
    variable: bool
    shift: float
    start: float
    duration: float | None


@dataclass
class _Stream:
    kind: str  # Video, Audio, Subtitle, Data, Attachment
    description: str
    indent: int = 2
    extra: list[str] = field(default_factory=list)  # the indented lines under it (metadata, side data)


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
    streams, mapped, duration_text = describe_input(text)
    header, packets = split_framecrc(run.stdout.decode("ascii", "replace"))
    # Builds before framecrc's version 2 header name no media type; a picture size means video.
    if header.get("media_type", "video" if "dimensions" in header else None) != "video":
        if "Input #0" in text:
            raise MediaError(f"{path}: has no video stream (audio only?)")
        raise MediaError(f"{path}: not a readable video, or damaged ({ffmpeg.error_line(errors)})")
    if run.returncode != 0:
        raise MediaError(f"{path}: damaged video stream ({ffmpeg.error_line(errors)})")
    stream = streams.get(mapped) if mapped is not None else None
    facts = video_facts(stream.description if stream else "")
    width, height = _size(header.get("dimensions", "")) or facts["size"] or (0, 0)
    if not width or not height:
        raise MediaError(f"{path}: the video stream has no picture size; it can't be decoded")
    rotation = _rotation(stream.extra if stream else [])
    if rotation % 180:
        width, height = height, width
    timing = packet_timing(_timebase(header), packets, facts["rate"])
    if timing.count == 0:
        raise MediaError(f"{path}: the video stream has no frames")
    audios = _codecs(streams, "Audio")
    colour = facts["colour"]
    if colour.hdr:
        colour = _with_hdr_metadata(path, colour, "\n".join(stream.extra if stream else []), limit)
    return VideoInfo(path=path, width=width, height=height, fps=timing.fps, frame_count=timing.count,
                     duration=timing.duration or duration_text or float(timing.count / timing.fps),
                     rotation=rotation, codec=header.get("codec_id") or facts["codec"],
                     pixel_format=facts["pixel_format"], colour=colour,
                     audio_codec=audios[0] if audios else None, variable_frame_rate=timing.variable,
                     timing_shift=timing.shift, sar=_sar(header.get("sar", "")) or facts["sar"] or Fraction(1),
                     field_order=facts["field_order"], subtitle_codecs=_codecs(streams, "Subtitle"),
                     start_time=timing.start, audio_codecs=audios,
                     attachments=sum(s.kind == "Attachment" for s in streams.values()),
                     covers=tuple(i for i, s in streams.items() if _is_cover(s)),
                     other_videos=max(0, sum(s.kind == "Video" and not _is_cover(s) for s in streams.values()) - 1),
                     timecode=_timecode([stream] * bool(stream) + list(streams.values())))


def _with_hdr_metadata(path: Path, colour: Colour, described: str, limit: float) -> Colour:
    """`colour` with the HDR10 static metadata of the stream: from the container's side data when the
    description shows it, else from the first decoded frame (HEVC carries it in SEI messages)."""
    master, light = ffmpeg.parse_hdr_metadata(described)
    if master is None and light is None:
        try:
            run = subprocess.run(ffmpeg.hdr_probe_command(path), capture_output=True, timeout=limit)
        except subprocess.TimeoutExpired:
            raise MediaError(f"{path}: reading its HDR metadata took over {limit:.0f} s") from None
        master, light = ffmpeg.parse_hdr_metadata(run.stderr.decode("utf-8", "replace"))
    return dataclasses.replace(colour, master_display=master, max_cll=light)


def probe_limit(path: Path) -> float:
    """Seconds a probe may take: it reads every packet, so a minute plus the file at 10 MB/s."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    return 60 + size / 10_000_000


def _is_cover(stream: _Stream) -> bool:
    return stream.kind == "Video" and stream.description.rstrip().endswith("(attached pic)")


def _codecs(streams: dict[int, _Stream], kind: str) -> tuple[str, ...]:
    """The codec names of the streams of one kind, in file order."""
    return tuple(s.description.split(" ", 1)[0].rstrip(",") for s in streams.values() if s.kind == kind)


def describe_input(text: str) -> tuple[dict[int, _Stream], int | None, float | None]:
    """The input's streams by index, the index of the stream mapped to the output, and the duration, from
    ffmpeg's description (info-level text without level tags). Only the input's own section is read, and
    only lines at the places ffmpeg puts them, so metadata text can't pose as a stream."""
    streams: dict[int, _Stream] = {}
    mapped = duration = None
    section = "before"
    current: _Stream | None = None
    for line in text.splitlines():
        if line.startswith("Input #0"):
            section = "input"
            continue
        if line.startswith("Stream mapping:"):
            section = "mapping"
            continue
        if line.startswith("Output #"):
            break
        if section == "mapping":
            match = _MAPPING.match(line)
            if match and mapped is None:
                mapped = int(match.group(1))
            continue
        if section != "input":
            continue
        match = _STREAM.match(line)
        if match:
            current = streams[int(match.group(2))] = _Stream(match.group(3), match.group(4), len(match.group(1)))
        elif current is not None and line.startswith(" " * (current.indent + 1)):
            current.extra.append(line)
        else:
            current = None
            found = _DURATION.match(line)
            if found and duration is None:
                hours, minutes, seconds = found.groups()
                duration = int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    return streams, mapped, duration


def split_top(text: str) -> list[str]:
    """Split at the commas outside brackets: 'h264 (High), yuv420p(tv, bt709), 64x48' -> 3 fields."""
    fields, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            fields.append(text[start:index].strip())
            start = index + 1
    fields.append(text[start:].strip())
    return [f for f in fields if f]


def video_facts(description: str) -> dict:
    """Codec, pixel format, colour, field order, stored size, SAR and nominal rate from a video stream's
    description, e.g. 'h264 (High) (avc1 / 0x31637661), yuv420p(tv, bt709, top first), 1920x1080
    [SAR 4:3 DAR 16:9], 25 fps, 25 tbr'; each missing or unexpected field gets a neutral value."""
    fields = split_top(description)
    facts: dict = {"codec": fields[0].split(" ", 1)[0] if fields else "unknown", "pixel_format": "unknown",
                   "colour": Colour(), "field_order": "progressive", "size": None, "sar": None, "rate": None}
    for index, text in enumerate(fields[1:], 1):
        size = _SIZE.match(text)
        if size and facts["size"] is None:
            facts["size"] = _size(text)
            sar = re.search(r"SAR (\d+):(\d+)", text)
            facts["sar"] = _sar(f"{sar.group(1)}/{sar.group(2)}") if sar else None
            pixel = _PIXEL_FORMAT.match(fields[index - 1]) if index >= 2 else None
            if pixel:
                facts["pixel_format"] = pixel.group(1)
                facts["colour"] = parse_colour(pixel.group(2) or "")
                facts["field_order"] = parse_field_order(pixel.group(2) or "")
        elif text.startswith("SAR ") and facts["sar"] is None:  # some builds print it as its own field
            sar = re.match(r"SAR (\d+):(\d+)", text)
            facts["sar"] = _sar(f"{sar.group(1)}/{sar.group(2)}") if sar else None
        rate = _RATE.match(text)
        if rate and facts["rate"] is None:
            value = Fraction(rate.group(1)) * (1000 if rate.group(2) else 1)
            facts["rate"] = value.limit_denominator(1001) if 0 < value <= 1000 else None
    return facts


def parse_colour(text: str) -> Colour:
    """Parse the part in brackets after the pixel format, e.g. 'tv, bt709/unknown/unknown, progressive'."""
    rng = matrix = primaries = transfer = None
    for token in (t.strip() for t in text.split(",")):
        if token in _RANGES:
            rng = token
        elif token.startswith(("bt", "smpte", "fcc", "gbr", "ycgco", "unknown", "reserved", "iec", "log",
                               "linear", "gamma", "chroma-derived", "ictcp", "jedec", "ebu", "film", "arib")):
            parts = token.split("/")
            if len(parts) == 1:
                parts = parts * 3
            matrix, primaries, transfer = (None if p in ("unknown", "reserved") else p for p in parts[:3])
    return Colour(matrix=matrix, primaries=primaries, transfer=transfer, range=rng)


def parse_field_order(text: str) -> str:
    for token in (t.strip() for t in text.split(",")):
        if token in _FIELD_ORDERS:
            return _FIELD_ORDERS[token]
    return "progressive"


def _rotation(extra: list[str]) -> int:
    """The display rotation ffmpeg applies when decoding: quarter turns only (within a degree, as its
    autorotate judges); other angles it leaves alone, so they count as 0."""
    for line in extra:
        match = _ROTATION.match(line)
        if match:
            angle = float(match.group(1)) % 360
            turns = round(angle / 90)
            return (turns * 90) % 360 if abs(angle - turns * 90) < 1 else 0
    return 0


def _timecode(streams: list[_Stream]) -> str | None:
    """The first timecode tag: the video stream's own, else a timecode (data) track's."""
    for stream in streams:
        for line in stream.extra:
            match = _TIMECODE.match(line)
            if match:
                return match.group(1)
    return None


def _size(text: str) -> tuple[int, int] | None:
    """'WxH' as (W, H); None unless both are known (non-zero)."""
    match = _SIZE.match(text.strip())
    size = (int(match.group(1)), int(match.group(2))) if match else None
    return size if size and all(size) else None


def _sar(text: str) -> Fraction | None:
    """A sample aspect ratio 'n/d'; None when unknown (0/1, 0/0) or unreasonable."""
    try:
        value = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        return None
    return value if Fraction(1, 100) <= value <= 100 else None


def split_framecrc(framecrc: str) -> tuple[dict[str, str], list[list[str]]]:
    """({header key: value} of output stream 0, [fields of each of its packet lines])."""
    header: dict[str, str] = {}
    packets: list[list[str]] = []
    for line in framecrc.splitlines():
        if line.startswith("#"):
            match = _HEADER.match(line)
            if match:
                header.setdefault(match.group(1), match.group(2).strip())
        elif line.strip():
            fields = [f.strip() for f in line.split(",")]
            if len(fields) >= 5 and fields[0] == "0":
                packets.append(fields)
    return header, packets


def _timebase(header: dict[str, str]) -> Fraction:
    try:
        value = Fraction(header.get("tb", "1/1000"))
    except (ValueError, ZeroDivisionError):
        return Fraction(1, 1000)
    return value if value > 0 else Fraction(1, 1000)


def frame_timing(framecrc: str, nominal: Fraction | None = None) -> Timing:
    """Timing of the frames shown, from `-f framecrc` output (see packet_timing)."""
    header, packets = split_framecrc(framecrc)
    return packet_timing(_timebase(header), packets, nominal)


def packet_timing(timebase: Fraction, packets: list[list[str]], nominal: Fraction | None = None) -> Timing:
    """Timing of the frames shown, from framecrc packet lines: packets flagged discard (hidden by an edit
    list) are not counted. Packets without timestamps (raw streams muxed as they are) get the stream's
    `nominal` rate (25 when unknown)."""
    fallback = nominal if nominal and nominal > 0 else Fraction(25)
    shown: list[int | None] = []
    ends: list[int] = []
    for fields in packets:
        flags = next((int(f[2:], 16) for f in fields[5:] if f.startswith("F=0x")), 0)
        if flags & _DISCARD:
            continue
        dts, pts, duration = (_int(f) for f in fields[1:4])
        stamp = pts if pts is not None else dts
        shown.append(stamp)
        if stamp is not None and duration is not None and duration > 0:
            ends.append(stamp + duration)
    count = len(shown)
    stamps = sorted(s for s in shown if s is not None)
    if count == 0:
        return Timing(0, fallback, False, 0.0, 0.0, None)
    start = float(stamps[0] * timebase) if stamps else 0.0
    if len(stamps) < count:  # some packets carry no time: no rate can be read from them
        return Timing(count, fallback, False, 0.0, start, None)
    steps = sorted(b - a for a, b in zip(stamps, stamps[1:]) if b > a)
    end = max([stamps[-1], *ends])
    duration = float((end - stamps[0]) * timebase) or None
    if not steps:
        return Timing(count, fallback, False, 0.0, start, None)
    median = steps[len(steps) // 2]
    fps = _sane(1 / (median * timebase)) or fallback
    variable = steps[0] * 2 < median or steps[-1] > median * 2
    if not variable:
        return Timing(count, fps, False, 0.0, start, duration)
    # Written at a constant rate, frames move: take whichever rate moves them least in all, the usual step
    # (a constant-rate clip with a gap, e.g. a cut) or the average (a phone's rate that really varies).
    average = _sane(Fraction(count - 1) / ((stamps[-1] - stamps[0]) * timebase)) or fps
    _, fps = min((sum(_moves(stamps, timebase, rate)), rate) for rate in (fps, average))
    return Timing(count, fps, True, max(_moves(stamps, timebase, fps)), start, duration)


def _moves(stamps: list[int], timebase: Fraction, fps: Fraction) -> list[float]:
    """How far (seconds) each frame moves when frames are written `fps` apart."""
    return [abs(float((p - stamps[0]) * timebase) - i / float(fps)) for i, p in enumerate(stamps)]


def _int(text: str) -> int | None:
    try:
        value = int(text)
    except ValueError:
        return None
    return None if value == _NOPTS else value


def _sane(fps: Fraction) -> Fraction | None:
    """`fps` as a rate an encoder takes (denominator up to 1001), or None when it is no usable rate."""
    fps = fps.limit_denominator(1001)
    return fps if Fraction(1, 1001) <= fps <= 1000 else None

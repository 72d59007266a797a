"""ffmpeg discovery, pure command builders and one runner.

Builders return argument lists and never run anything, so unit tests check them without ffmpeg.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Mapping, Sequence

from facefusion_batch.errors import MediaError

# Audio codecs each container can take as they are; anything else is re-encoded to the fallback.
_AUDIO_COPY = {
    "mp4": ({"aac", "mp3", "alac", "ac3", "eac3"}, ["-c:a", "aac", "-b:a", "192k"]),
    "mov": ({"aac", "mp3", "alac", "ac3", "eac3", "pcm_s16le", "pcm_s24le"}, ["-c:a", "aac", "-b:a", "192k"]),
    "mkv": (None, []),  # Matroska holds every codec
    "webm": ({"opus", "vorbis"}, ["-c:a", "libopus", "-b:a", "160k"]),
    "avi": ({"mp3", "ac3", "pcm_s16le"}, ["-c:a", "libmp3lame", "-b:a", "192k"]),
}
_VIDEO_CONTAINER_CODECS = {"webm": {"libvpx-vp9"}}
# Default swscale rounding shifts every pixel by ~2 grey levels on each RGB<->YUV pass; these don't.
SWS_FLAGS = ["-sws_flags", "accurate_rnd+full_chroma_int"]
_COLOUR_MATRICES = {"bt709", "bt470bg", "smpte170m", "bt2020nc", "fcc", "smpte240m"}
# The names `setparams` takes (ffmpeg's own, as it prints them when describing a stream).
_PRIMARIES = {"bt709", "bt470m", "bt470bg", "smpte170m", "smpte240m", "film", "bt2020", "smpte428", "smpte431",
              "smpte432", "jedec-p22", "ebu3213"}
_TRANSFERS = {"bt709", "bt470m", "bt470bg", "smpte170m", "smpte240m", "linear", "log100", "log316",
              "iec61966-2-4", "bt1361e", "iec61966-2-1", "bt2020-10", "bt2020-12", "smpte2084", "smpte428",
              "arib-std-b67"}
# Transfers of high dynamic range video: PQ (HDR10) and HLG.
HDR_TRANSFERS = {"smpte2084", "arib-std-b67"}
# Encoders that keep HDR: 10-bit, and the HDR10 static metadata re-emitted through their parameters.
_HDR_ENCODERS = {"libx265"}
# Containers that hold HEVC, where `auto` picks libx265 for an HDR source so that it stays HDR.
_HEVC_CONTAINERS = {"mp4", "mov", "mkv"}


# Oldest ffmpeg ffb is tested with (`-fps_mode`, `-display_rotation`, level-tagged logs).
MIN_VERSION = (6, 0)
_VERSION = re.compile(r"ffmpeg version\s+n?(\d+)\.(\d+)")
# The process's ffmpeg, chosen once by `use_ffmpeg` at start-up (like a signal handler, a process-level
# choice: the pure command builders below name it without every caller passing settings down).
_chosen: list[str] = []


@dataclass(frozen=True)
class FfmpegInfo:
    """Which ffmpeg is in use: its path, where it came from, version and the hardware encoders it lists."""

    path: str
    origin: str  # "bundled" (imageio-ffmpeg), "setting" (ffmpeg_path) or "PATH"
    version: str
    hardware_encoders: tuple[str, ...]


def ffmpeg_binary() -> str:
    """The ffmpeg of this process: the one `use_ffmpeg` chose, else the bundled (tested) binary of the
    imageio-ffmpeg wheel, else the first on PATH."""
    if _chosen:
        return _chosen[0]
    return _default_ffmpeg()[0]


@functools.lru_cache(maxsize=None)
def _default_ffmpeg() -> tuple[str, str]:
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe(), "bundled"
    except (ImportError, RuntimeError):  # pragma: no cover - imageio-ffmpeg is a dependency
        found = shutil.which("ffmpeg")
        if found:
            return found, "PATH"
    raise MediaError("ffmpeg not found: pip install imageio-ffmpeg (or set ffmpeg_path)")


def use_ffmpeg(configured: Path | None) -> str | None:
    """Choose this process's ffmpeg: `configured` (the ffmpeg_path setting), checked to run and be at least
    MIN_VERSION (SettingsError naming ffmpeg_path otherwise); None: the default, found when first needed
    (off the start-up path: the first probe runs beside the model loading). Returns the configured path."""
    from facefusion_batch.errors import SettingsError

    if configured is None:
        _chosen.clear()
        return None
    path = str(configured)
    minimum = ".".join(map(str, MIN_VERSION))
    fix = (f"set ffmpeg_path (--ffmpeg-path, FFB_FFMPEG_PATH) to an ffmpeg {minimum} or newer, or leave it "
           "empty for the bundled one")
    try:
        version = ffmpeg_version(path)
    except (OSError, subprocess.SubprocessError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise SettingsError(f"ffmpeg_path {path}: can't run it ({reason}); {fix}") from None
    if not version:
        raise SettingsError(f"ffmpeg_path {path}: not an ffmpeg (`-version` names none); {fix}")
    number = version_tuple(version)
    if number is not None and number < MIN_VERSION:
        raise SettingsError(f"ffmpeg_path {path}: ffmpeg {version} is older than {minimum}; {fix}")
    _chosen[:] = [path]
    return path


def version_tuple(version: str) -> tuple[int, int] | None:
    """(major, minor) of an ffmpeg version string; None for a git build (`N-12345-g...`), taken as new."""
    match = _VERSION.match(f"ffmpeg version {version}")
    return (int(match.group(1)), int(match.group(2))) if match else None


@functools.lru_cache(maxsize=8)
def ffmpeg_version(path: str) -> str:
    """The version an ffmpeg reports ("" when its output names none). OSError when it can't be run."""
    out = subprocess.run([path, "-hide_banner", "-version"], capture_output=True, timeout=30).stdout
    first = out.decode("utf-8", "replace").splitlines()[:1]
    return first[0].split()[2] if first and first[0].startswith("ffmpeg version ") and len(first[0].split()) > 2 \
        else ""


def describe_ffmpeg() -> FfmpegInfo:
    """The process's ffmpeg: path, origin, version and the hardware encoders it lists."""
    path = ffmpeg_binary()
    origin = "setting" if _chosen and _chosen[0] != _default_ffmpeg()[0] else _default_ffmpeg()[1]
    try:
        listing = subprocess.run([path, "-hide_banner", "-encoders"], capture_output=True, timeout=30).stdout
        return FfmpegInfo(path, origin, ffmpeg_version(path), hardware_encoders(listing.decode("utf-8", "replace")))
    except (OSError, subprocess.SubprocessError):
        return FfmpegInfo(path, origin, "", ())


def encoder_problem(encoder: str) -> str | None:
    """Why this process's ffmpeg can't encode with `encoder` (its own words, and what is missing), or None:
    a one-frame trial encode, so that a batch fails once at start rather than on every target."""
    command = [ffmpeg_binary(), "-v", "error", "-nostdin", "-f", "lavfi", "-i", "color=c=gray:s=256x256:r=1",
               "-frames:v", "1", "-c:v", encoder, "-pix_fmt", "yuv420p", "-f", "null", "-"]
    try:
        proc = subprocess.run(command, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"ffmpeg could not be run ({getattr(exc, 'strerror', None) or exc})"
    if proc.returncode == 0:
        return None
    text = proc.stderr.decode("utf-8", "replace")
    reason = error_line(proc.stderr)
    if "Unknown encoder" in text or "Requested encoder" in text or "encoder not found" in text.lower():
        return f"this ffmpeg ({ffmpeg_binary()}) has no {encoder} encoder built in ({reason})"
    if encoder.endswith("_nvenc"):
        return f"it needs an NVIDIA GPU with its driver, and this machine's won't load ({reason})"
    return reason


_HARDWARE = re.compile(r"^\s*V[\w.]{5}\s+((?:h264|hevc)_(?:nvenc|qsv|amf|vaapi|videotoolbox))\b", re.MULTILINE)


def hardware_encoders(encoders_listing: str) -> tuple[str, ...]:
    """The H.264/HEVC hardware encoders an `ffmpeg -encoders` listing names (built in: whether the machine
    has the hardware is another matter)."""
    return tuple(_HARDWARE.findall(encoders_listing))


def hardware_decoding(hwaccels_listing: str) -> tuple[str, ...]:
    """The hardware decoding methods an `ffmpeg -hwaccels` listing names (cuda: NVDEC)."""
    lines = hwaccels_listing.splitlines()
    start = next((i + 1 for i, line in enumerate(lines) if line.strip().lower().startswith("hardware acceleration")),
                 len(lines))
    return tuple(line.strip() for line in lines[start:] if line.strip())


def coder_report(decoder_codec: str, encoder: str) -> dict[str, str]:
    """What a run decodes and encodes with, and whether this ffmpeg could use NVIDIA's NVDEC and NVENC here:
    ffb decodes in software (libavcodec); NVENC is used only when output_video_encoder names it."""
    path = ffmpeg_binary()
    try:
        accels = subprocess.run([path, "-hide_banner", "-hwaccels"], capture_output=True, timeout=30).stdout
        listing = subprocess.run([path, "-hide_banner", "-encoders"], capture_output=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        accels = listing = b""
    has_cuda = "cuda" in hardware_decoding(accels.decode("utf-8", "replace"))
    built = "h264_nvenc" in hardware_encoders(listing.decode("utf-8", "replace"))
    problem = encoder_problem("h264_nvenc") if built else None
    return {
        "decoder": f"{decoder_codec} in software (libavcodec)",
        "encoder": encoder + (" (NVENC)" if encoder.endswith("_nvenc") else " (CPU)"),
        "nvdec": ("this ffmpeg has the cuda hwaccel (NVDEC); ffb does not decode with it yet" if has_cuda
                  else "this ffmpeg has no cuda hwaccel (no NVDEC)"),
        "nvenc": ("h264_nvenc works here" if built and problem is None
                  else f"h264_nvenc is built in but does not work here: {problem}" if built
                  else "this ffmpeg has no NVENC encoder built in"),
    }


@dataclass(frozen=True)
class Colour:
    """Colour properties of the source stream, kept on the output so untouched pixels stay put."""

    matrix: str | None = None
    primaries: str | None = None
    transfer: str | None = None
    range: str | None = None  # "tv" or "pc"
    # HDR10 static metadata in x265's notation: mastering display "G(x,y)B(x,y)R(x,y)WP(x,y)L(max,min)"
    # (chromaticities in 0.00002, luminance in 0.0001 cd/m²) and content light level "MaxCLL,MaxFALL".
    master_display: str | None = None
    max_cll: str | None = None

    @property
    def hdr(self) -> bool:
        """High dynamic range: a PQ (HDR10) or HLG transfer."""
        return self.transfer in HDR_TRANSFERS


# What a tone-mapped HDR video becomes: SDR in BT.709.
SDR_BT709 = Colour(matrix="bt709", primaries="bt709", transfer="bt709", range="tv")


def keeps_hdr(encoder: str) -> bool:
    """Whether ffb writes HDR with this encoder (10-bit and HDR10 metadata); other encoders get SDR."""
    return encoder in _HDR_ENCODERS


def output_colour(colour: Colour, encoder: str) -> Colour:
    """The colour the output is written in: the source's, except HDR through an encoder that can't keep
    it, which is tone-mapped to SDR BT.709."""
    return SDR_BT709 if colour.hdr and not keeps_hdr(encoder) else colour


def tone_map_filter() -> str:
    """HDR (PQ or HLG) to SDR BT.709, a real tone-map in linear light: linearise (100 cd/m² reference
    white), convert BT.2020 primaries to BT.709, compress highlights with the Hable curve (its peak from
    the mastering metadata when the frames carry it), then BT.709's transfer, as 8-bit RGB."""
    return ("zscale=t=linear:npl=100,format=gbrpf32le,zscale=p=bt709,tonemap=tonemap=hable:desat=0,"
            "zscale=t=bt709:m=bt709:r=pc,format=gbrp")


@dataclass(frozen=True)
class Picture:
    """How the source's pictures are to be shown, kept on the output: sample aspect ratio (of the frames as
    decoded, rotation applied) and interlacing ("progressive", "tt" top field first, "bb" bottom first)."""

    sar: Fraction = Fraction(1)
    field_order: str = "progressive"


def local(path: Path) -> str:
    """`path` as ffmpeg must be given it: absolute and `file:` prefixed, so that no name is read as a
    protocol or URL (`concat:a|b`, `pipe:1`, `http://...`, `subfile,,...`, `data:...`)."""
    return "file:" + os.path.abspath(path)


@dataclass(frozen=True)
class EncodeOptions:
    encoder: str
    preset: str
    quality: int  # 0..100, higher is better

    def rate_args(self) -> list[str]:
        crf = round(51 - self.quality * 0.51)
        if self.encoder in ("libx264", "libx265"):
            return ["-preset", self.preset, "-crf", str(crf)]
        if self.encoder == "libvpx-vp9":
            return ["-crf", str(round(63 - self.quality * 0.63)), "-b:v", "0", "-row-mt", "1"]
        return ["-cq", str(crf)]  # NVENC


# The video stream ffb processes: the first that is not a cover picture (`V`, unlike `v`, skips those).
VIDEO_STREAM = "0:V:0"


def probe_command(path: Path) -> list[str]:
    """One run that describes the input on stderr (every line tagged with its log level, so the
    description and the errors can be told apart) and writes the video stream's facts (codec, size,
    sample aspect ratio, time base) and per-packet timestamps and flags to stdout as framecrc, a
    machine-readable format, without decoding."""
    return [ffmpeg_binary(), "-hide_banner", "-nostdin", "-nostats", "-loglevel", "level+info", "-i", local(path),
            "-map", VIDEO_STREAM, "-c", "copy", "-f", "framecrc", "pipe:1"]


_LEVEL = re.compile(r"^((?:\[[^\]]*@ 0x[0-9a-f]+\] ?)*)\[(\w+)\] ?")


def split_levels(stderr: bytes) -> tuple[str, bytes]:
    """(the info-level text without tags, the error lines as ffmpeg's `-v error` would print them) of a
    log written with `-loglevel level+...`."""
    info, errors = [], []
    for line in stderr.decode("utf-8", "replace").splitlines():
        match = _LEVEL.match(line)
        if match is None:
            info.append(line)
            continue
        prefix, level = match.group(1), match.group(2)
        if level in ("error", "fatal", "panic"):
            errors.append(prefix + line[match.end():])
        else:
            info.append(line[match.end():])
    return "\n".join(info), "\n".join(errors).encode()


def decode_command(path: Path, pixel_format: str = "bgr24", tone_map: bool = False, select: str | None = None
                   ) -> list[str]:
    """Raw frames (`pixel_format`) of the first video stream on stdout, rotation applied, one per source
    frame (or those the `select` filter keeps: a trim, a frame rate); HDR tone-mapped to SDR BT.709 when
    `tone_map` (see tone_map_filter)."""
    chain = [f for f in (select, tone_map_filter() if tone_map else None) if f]
    filters = ["-vf", ",".join(chain)] if chain else []
    return [ffmpeg_binary(), "-v", "error", "-nostdin", "-i", local(path), "-map", VIDEO_STREAM, *SWS_FLAGS,
            *filters, "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", pixel_format, "pipe:1"]


def hdr_probe_command(path: Path) -> list[str]:
    """Decode the first frame and describe it (showinfo), for the HDR10 static metadata it carries:
    HEVC keeps it in the bitstream's SEI, where the stream description does not show it."""
    return [ffmpeg_binary(), "-hide_banner", "-nostdin", "-nostats", "-i", local(path), "-map", VIDEO_STREAM,
            "-frames:v", "1", "-vf", "showinfo", "-f", "null", "-"]


_NUMBER = r"\s*(\d+(?:\.\d+)?)"
_MASTERING = re.compile(
    r"mastering display[^\n]*?" + "".join(rf"{c}\({_NUMBER}[,\s]{_NUMBER}\)\s*" for c in ("r", "g", "b", "wp"))
    + rf"min_luminance={_NUMBER},\s*max_luminance={_NUMBER}", re.IGNORECASE)
_LIGHT_LEVEL = re.compile(r"content light level[^\n]*?MaxCLL=(\d+),\s*MaxFALL=(\d+)", re.IGNORECASE)


def _xy(x: float, y: float) -> str:
    """A CIE 1931 chromaticity in x265's units of 0.00002."""
    return f"({round(x * 50000)},{round(y * 50000)})"


def parse_hdr_metadata(text: str) -> tuple[str | None, str | None]:
    """(mastering display, content light level) in x265's notation (see Colour) from ffmpeg's description
    of a frame's or stream's side data; None for what it does not carry."""
    master = light = None
    found = _MASTERING.search(text)
    if found:
        rx, ry, gx, gy, bx, by, wx, wy, low, high = (float(v) for v in found.groups())
        master = (f"G{_xy(gx, gy)}B{_xy(bx, by)}R{_xy(rx, ry)}WP{_xy(wx, wy)}"
                  f"L({round(high * 10000)},{round(low * 10000)})")
    found = _LIGHT_LEVEL.search(text)
    if found:
        light = f"{int(found.group(1))},{int(found.group(2))}"
    return master, light


def sample_command(path: Path, step: int, width: int, height: int) -> list[str]:
    """Frames 0, step, 2 step, ... of the first video stream as raw BGR at width x height on stdout (the
    content gate's samples, the watermark reader's frames)."""
    return [ffmpeg_binary(), "-v", "error", "-nostdin", "-i", local(path), "-map", VIDEO_STREAM,
            "-vf", f"select='not(mod(n\\,{step}))',scale={width}:{height}", "-fps_mode", "passthrough",
            "-f", "rawvideo", "-pix_fmt", "bgr24", "pipe:1"]


def colour_args(colour: Colour) -> list[str]:
    """Tag the output like the source (the conversion back with its matrix is in `video_filters`)."""
    args: list[str] = []
    if colour.matrix in _COLOUR_MATRICES:
        args += ["-colorspace", colour.matrix]
    if colour.primaries:
        args += ["-color_primaries", colour.primaries]
    if colour.transfer:
        args += ["-color_trc", colour.transfer]
    if colour.range:
        args += ["-color_range", colour.range]
    return args


def setparams_filter(colour: Colour) -> str | None:
    """Tag the frames with the colour's primaries, transfer, matrix and range. Encoders take these from
    the frames (ffmpeg 7+ ignores `-color_primaries`/`-color_trc` on an encoder fed by a filter graph),
    so this is what reaches the bitstream."""
    params = []
    if colour.primaries in _PRIMARIES:
        params.append(f"color_primaries={colour.primaries}")
    if colour.transfer in _TRANSFERS:
        params.append(f"color_trc={colour.transfer}")
    if colour.matrix in _COLOUR_MATRICES:  # the matrices the output is converted with (never RGB's gbr)
        params.append(f"colorspace={colour.matrix}")
    if colour.range in ("tv", "pc"):
        params.append(f"range={colour.range}")
    return "setparams=" + ":".join(params) if params else None


def video_filters(colour: Colour, picture: Picture, size: tuple[int, int] | None = None) -> list[str]:
    """The encoder's one filter chain: the output `size` when scaled, RGB back to YUV with the source's
    matrix and range, the source's colour tags and its sample aspect ratio."""
    filters = [f"scale={size[0]}:{size[1]}"] if size else []
    if colour.matrix in _COLOUR_MATRICES:
        out_range = "full" if colour.range == "pc" else "limited"
        filters.append(f"scale=out_color_matrix={colour.matrix}:out_range={out_range}")
    tags = setparams_filter(colour)
    if tags:
        filters.append(tags)
    if picture.sar != 1:
        filters.append(f"setsar={picture.sar.numerator}/{picture.sar.denominator}")
    return ["-vf", ",".join(filters)] if filters else []


def hdr_args(encoder: str, colour: Colour) -> list[str]:
    """HDR10 static metadata (mastering display, content light level) for an encoder that keeps HDR:
    the raw frames piped to it carry none, so it is given as x265 parameters."""
    if not colour.hdr or not keeps_hdr(encoder):
        return []
    params = ["log-level=error"]
    if colour.master_display or colour.max_cll:
        params.append("hdr10=1")
    if colour.master_display:
        params.append(f"master-display={colour.master_display}")
    if colour.max_cll:
        params.append(f"max-cll={colour.max_cll}")
    return ["-x265-params", ":".join(params)]


_FIELD_ORDERS = ("tt", "bb", "tb", "bt")  # ffmpeg's names: which field is coded first, which shown first


def field_args(encoder: str, picture: Picture) -> list[str]:
    """Interlaced sources stay interlaced: x264 codes the fields in the source's order (its frames keep
    the two fields as they came); every encoder tags the order."""
    if picture.field_order not in _FIELD_ORDERS:
        return []
    args = ["-field_order", picture.field_order]
    if encoder == "libx264":
        args = ["-x264-params", "tff=1" if picture.field_order.startswith("t") else "bff=1", *args]
    return args


def stream_tags(colour: Colour, picture: Picture) -> list[str]:
    """The source's colour and field-order tags for the joined stream: containers that keep them outside
    the bitstream (Matroska) take them from here, the bitstream alone can't say 'tv' range."""
    args = field_args("copy", picture) + colour_args(colour)
    return args


def codec_tag_args(encoder: str, container: str) -> list[str]:
    """HEVC in MP4/MOV tagged hvc1 (parameter sets in the sample description), which Apple's players need;
    ffmpeg's default, hev1, they don't play."""
    if encoder in ("libx265", "hevc_nvenc") and container in ("mp4", "mov"):
        return ["-tag:v", "hvc1"]
    return []


def output_pixel_format(width: int, height: int, source_pixel_format: str, ten_bit: bool = False) -> str:
    """4:2:0 where it can be (widest playback support); 4:4:4 for 4:4:4/RGB sources and for odd sizes,
    which 4:2:0 can't represent, so the output keeps the input's exact size. `ten_bit` (HDR kept) gives
    the 10-bit variant."""
    if width % 2 or height % 2 or source_pixel_format.startswith(("yuv444", "yuvj444", "gbr", "rgb", "bgr")):
        return "yuv444p10le" if ten_bit else "yuv444p"
    return "yuv420p10le" if ten_bit else "yuv420p"


def resolve_encoder(encoder: str, container: str, colour: Colour = Colour()) -> str:
    """`auto`: VP9 for WebM (the only codec family it holds that we encode); HEVC (libx265) for an HDR
    source where the container holds it, so the output stays HDR; H.264 elsewhere."""
    if encoder != "auto":
        return encoder
    if container == "webm":
        return "libvpx-vp9"
    return "libx265" if colour.hdr and container in _HEVC_CONTAINERS else "libx264"


def encode_command(out: Path, width: int, height: int, fps: Fraction, options: EncodeOptions,
                   colour: Colour, pixel_format: str, container: str, picture: Picture = Picture(),
                   input_format: str = "bgr24", size: tuple[int, int] | None = None) -> list[str]:
    """Encode raw BGR frames (`input_format`: bgr24, or bgr48le for HDR) of width x height from stdin into a
    video-only file bound for `container`, scaled to `size` when given."""
    # AVI has no presentation timestamps: B-frames would show every frame late.
    no_bframes = ["-bf", "0"] if container == "avi" else []
    return [ffmpeg_binary(), "-v", "error", "-nostdin", "-y",
            "-f", "rawvideo", "-pix_fmt", input_format, "-s", f"{width}x{height}", "-r", str(fps), "-i", "pipe:0",
            *SWS_FLAGS, *video_filters(colour, picture, size), *colour_args(colour), "-c:v", options.encoder,
            *options.rate_args(), *no_bframes, *field_args(options.encoder, picture),
            *hdr_args(options.encoder, colour), "-pix_fmt", pixel_format, local(out)]


def concat_list(chunks: Sequence[Path]) -> str:
    """Text of an ffmpeg concat-demuxer list (paths quoted for the demuxer)."""
    lines = []
    for chunk in chunks:
        escaped = local(chunk).replace("'", "'\\''")
        lines.append(f"file '{escaped}'")
    return "\n".join(lines) + "\n"


def container_of(path: Path) -> str:
    ext = path.suffix.lower().lstrip(".")
    return {"m4v": "mp4", "qt": "mov"}.get(ext, ext)


def audio_args(container: str, audio_codec: str | None) -> list[str]:
    """Copy the original audio where the container takes it, else re-encode it."""
    if audio_codec is None:
        return []
    allowed, fallback = _AUDIO_COPY.get(container, (None, []))
    if allowed is None or audio_codec in allowed:
        return ["-c:a", "copy"]
    return fallback


def audio_track_args(container: str, codecs: Sequence[str]) -> list[str]:
    """`audio_args` for each audio track on its own (a dub in another codec is converted alone)."""
    args: list[str] = []
    for index, codec in enumerate(codecs):
        args += [f"{flag}:{index}" if flag.startswith(("-c:a", "-b:a")) else flag
                 for flag in audio_args(container, codec)]
    return args


def check_encoder(container: str, encoder: str) -> str | None:
    """A reason the encoder can't go into the container, or None."""
    allowed = _VIDEO_CONTAINER_CODECS.get(container)
    if allowed is not None and encoder not in allowed:
        return f"{encoder} can't be stored in .{container}; set output_video_encoder to one of {sorted(allowed)}"
    return None


_TEXT_SUBTITLES = {"subrip", "srt", "ass", "ssa", "mov_text", "webvtt", "text", "microdvd", "subviewer",
                   "sami", "realtext", "jacosub", "mpl2", "pjs", "vplayer", "stl", "eia_608"}
# Subtitle codec each container stores text subtitles in (None: it keeps every codec as it is).
_SUBTITLE_CODEC = {"mkv": None, "mp4": "mov_text", "mov": "mov_text", "webm": "webvtt"}


def subtitle_args(container: str, codecs: Sequence[str]) -> tuple[list[str], list[str]]:
    """(ffmpeg args mapping the original's subtitle streams that `container` can hold, converted where it
    needs; the codecs of those it can't hold). Picture subtitles (DVD, Blu-ray) only fit Matroska."""
    if not codecs:
        return [], []
    if container not in _SUBTITLE_CODEC:
        return [], list(codecs)
    target = _SUBTITLE_CODEC[container]
    args: list[str] = []
    dropped: list[str] = []
    for index, codec in enumerate(codecs):
        if target is None:  # Matroska: anything but MP4's own text format goes in as it is
            convert = "subrip" if codec == "mov_text" else "copy"
            args += ["-map", f"1:s:{index}", f"-c:s:{len(args) // 4}", convert]
        elif codec in _TEXT_SUBTITLES:
            args += ["-map", f"1:s:{index}", f"-c:s:{len(args) // 4}", target]
        else:
            dropped.append(codec)
    return args, dropped


def cover_args(container: str, covers: Sequence[int], tagged: bool) -> list[str]:
    """Map the original's cover pictures where they can be kept: MP4 keeps them as cover art, but not
    with the free-form metadata tags the AI marking needs (`tagged`: its muxer writes one kind or the
    other); Matroska keeps covers as attachments of its own kind, MOV and the rest drop them. What
    isn't kept `finish` reports."""
    if container != "mp4" or tagged:
        return []
    args: list[str] = []
    for number, index in enumerate(covers, 1):
        args += ["-map", f"1:{index}", f"-disposition:v:{number}", "attached_pic"]
    return args


def mux_command(list_file: Path, original: Path, out: Path, container: str, audio_codec: str | None,
                tags: Mapping[str, str], subtitles: Sequence[str] = (), video_start: float = 0.0,
                video_tags: Sequence[str] = (), timecode: str | None = None,
                audio_codecs: Sequence[str] = (), covers: Sequence[int] = (),
                window: tuple[float, float] | None = None) -> list[str]:
    """Join encoded chunks, add the original's audio, the `subtitles` (codecs of its subtitle streams) the
    container holds, its attachments (Matroska: the fonts of styled subtitles) and metadata plus `tags`,
    write `out`. The video starts at `video_start` seconds, as in the original, so that it stays in sync
    with the audio and subtitles; `video_tags` (see stream_tags) describe it; a `timecode` becomes the
    output's (a timecode track in MOV/MP4). `audio_codecs` (every track's) choose copy or conversion per
    track; without them `audio_codec` decides for all. `covers` (stream indexes of the original's cover
    pictures) are kept where the container holds them as such (see cover_args). A `window` (start, length in
    seconds) takes the original's audio and subtitles from there only: a trimmed video's (starting at 0)."""
    metadata: list[str] = []
    for key, value in tags.items():
        metadata += ["-metadata", f"{key}={value}"]
    covered = cover_args(container, covers, bool(tags))
    # Free-form metadata tags keep the original's own keys too; MP4 cover art needs them off.
    flags = ["-movflags", "+faststart" if covered else "+faststart+use_metadata_tags"] \
        if container in ("mp4", "mov") else []
    fmt = {"mkv": "matroska"}.get(container, container)
    offset = ["-itsoffset", f"{video_start:.6f}"] if video_start and window is None else []
    seek = ["-ss", f"{window[0]:.6f}", "-t", f"{window[1]:.6f}"] if window is not None else []
    if timecode:
        metadata += ["-timecode", timecode]
    return [ffmpeg_binary(), "-v", "error", "-nostdin", "-y",
            *offset, "-f", "concat", "-safe", "0", "-i", local(list_file), *seek, "-i", local(original),
            "-map", "0:v:0", "-map", "1:a?", "-map_metadata", "1", "-c:v", "copy", *video_tags,
            *(audio_track_args(container, audio_codecs) if audio_codecs else audio_args(container, audio_codec)),
            *subtitle_args(container, subtitles)[0],
            *(["-map", "1:t?", "-c:t", "copy"] if container == "mkv" else []), *covered,
            *metadata, *flags,
            "-f", fmt, local(out)]


def run(args: Sequence[str], what: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run ffmpeg; on failure raise MediaError with its last stderr line."""
    try:
        proc = subprocess.run(list(args), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise MediaError(f"{what}: ffmpeg timed out") from None
    if proc.returncode != 0:
        raise MediaError(f"{what}: {error_line(proc.stderr)}")
    return proc


_PREFIX = re.compile(r"^(\[[^\]]*@ 0x[0-9a-f]+\] ?)+")
_CONSEQUENCES = ("Error opening input file", "Error opening output file", "At least one output",
                 "Conversion failed", "Nothing was written", "Task finished", "Terminating thread",
                 "Error closing", "Error muxing", "Error sending frames", "Error while opening encoder")


def error_line(stderr: bytes) -> str:
    """The line of ffmpeg's log that names the cause (with -v error the first one), without its
    `[component @ 0x...]` prefix; the lines that only report consequences are skipped."""
    lines = [_PREFIX.sub("", ln).strip() for ln in stderr.decode("utf-8", "replace").splitlines()]
    lines = [ln for ln in lines if ln]
    causes = [ln for ln in lines if not ln.startswith(_CONSEQUENCES) and "misdetection possible" not in ln]
    return (causes or lines or ["ffmpeg failed"])[0]

"""Probe and plan, the first phases of a video's workflow: the video's facts (trimmed, re-timed and scaled as
the output keeps it), the encoder for its container, and the temp and output space it needs, all checked
before any frame is decoded."""
from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass
from pathlib import Path

from facefusion_batch.concurrency import concurrency_of
from facefusion_batch.errors import NoSpace, TargetError
from facefusion_batch.settings import Settings
from facefusion_batch.timing import Timings, timed
from facefusion_batch.video import ffmpeg
from facefusion_batch.video.ffmpeg import Colour, EncodeOptions
from facefusion_batch.video.probe import VideoInfo, probe
from facefusion_batch.video.reshape import Reshape


@dataclass(frozen=True)
class JobOptions:
    temp_root: Path
    chunk_size: int
    frame_format: str
    threads: int
    in_flight: int
    encode: EncodeOptions
    transport: str = "temp"
    timings: Timings | None = None  # stage times go here when set (ffb benchmark)
    reshape: Reshape = Reshape()  # the frames, rate and size the output keeps


def job_options(settings: Settings, timings: Timings | None = None) -> JobOptions:
    """The options every video of a run is processed with."""
    concurrency = concurrency_of(settings)
    return JobOptions(temp_root=settings.temp_path, chunk_size=settings.chunk_size,
                      frame_format=settings.temp_frame_format, threads=concurrency.frame_threads,
                      in_flight=concurrency.frames_in_flight, transport=settings.frame_transport,
                      encode=EncodeOptions(settings.output_video_encoder, settings.output_video_preset,
                                           settings.output_video_quality), timings=timings,
                      reshape=reshape_of(settings))


def reshape_of(settings: Settings) -> Reshape:
    """The part, rate and size of the targets a video output keeps (FaceFusion's trim and output options)."""
    return Reshape(settings.trim_frame_start, settings.trim_frame_end, settings.output_video_fps,
                   settings.output_video_scale)


def size_text(size: float) -> str:
    """Bytes as a person reads them: GB from 1 GB, else MB (kB below 1 MB)."""
    if size >= 1e9:
        return f"{size / 1e9:.1f} GB"
    return f"{size / 1e6:.0f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"


def check_space(directory: Path, needed: int, what: str, fix: str, disk: str = "temp") -> None:
    free = shutil.disk_usage(directory).free
    if free >= needed:
        return
    if disk == "output":
        raise NoSpace(f"{what}: output disk full ({directory}): needs ~{size_text(needed)} free, has "
                      f"{size_text(free)}; {fix}", disk)
    raise NoSpace(f"{what}: needs ~{size_text(needed)} free in {directory}, has {size_text(free)}; {fix}", disk)


SPOOL_BYTES = 512 * 1024 ** 2  # decoded frames waiting on disk, at most (a few frames for 4K)


def spool_ahead(info: VideoInfo, options: JobOptions) -> int:
    """Frames the reader may decode ahead of processing: a chunk, within SPOOL_BYTES, when spooling to
    disk; just enough to keep the workers busy in memory."""
    if options.transport != "temp":
        return options.in_flight
    fit = SPOOL_BYTES // (info.width * info.height * 3)
    return max(2 * options.in_flight, min(options.chunk_size, fit))


def estimate(info: VideoInfo, options: JobOptions) -> tuple[int, int]:
    """(temp bytes, output bytes) one video needs: spooled frames (never more than the video has) + encoded
    chunks, and the output."""
    frame_bytes = info.width * info.height * 3
    spooled = min(spool_ahead(info, options), max(1, info.frame_count))
    spool = frame_bytes * spooled if options.transport == "temp" else 0
    encoded = max(info.path.stat().st_size * 2, 2_000_000)
    return spool + encoded, encoded


@dataclass(frozen=True)
class VideoPlan:
    """A probed video, its output, the job options with the encoder resolved for the container, and the
    colour the output is written in (the source's, or SDR when HDR is tone-mapped for an encoder that
    can't keep it). `info` is the video as its frames reach processing (trimmed, at the output rate; see
    video.reshape), `source` the target as probed."""

    info: VideoInfo
    out: Path
    container: str
    options: JobOptions
    colour: Colour
    source: VideoInfo | None = None

    @property
    def select(self) -> str | None:
        """The decoder's filter choosing the frames processed (None: all of them)."""
        return self.options.reshape.frame_filter(self.source or self.info)

    @property
    def size(self) -> tuple[int, int] | None:
        """The output's size when it is scaled."""
        return self.options.reshape.size(self.info)

    @property
    def tone_mapped(self) -> bool:
        return self.info.colour.hdr and not self.colour.hdr


def plan_video(path: Path, out: Path, options: JobOptions, info: VideoInfo | None = None) -> VideoPlan:
    """Probe (unless `info` is given) and check one video target before any work: encoder for the
    container, disk space."""
    if info is None:
        with timed(options.timings, "probe"):
            info = probe(path)
    container = ffmpeg.container_of(out)
    encoder = ffmpeg.resolve_encoder(options.encode.encoder, container, info.colour)
    encode = dataclasses.replace(options.encode, encoder=encoder)
    reason = ffmpeg.check_encoder(container, encode.encoder)
    if reason:
        raise TargetError(f"{path}: {reason}")
    options = dataclasses.replace(options, encode=encode)
    source, info = info, options.reshape.applied(info)
    if info.frame_count <= 0 and options.reshape.trims:
        start, end = options.reshape.window(source.frame_count)
        raise TargetError(f"{path}: trim_frame_start {start} .. trim_frame_end {end} keeps no frame of its "
                          f"{source.frame_count}; set a range within the video")
    temp_need, out_need = estimate(info, options)
    options.temp_root.mkdir(parents=True, exist_ok=True)
    check_space(options.temp_root, temp_need, str(path), "set temp_path to a larger disk or lower chunk_size")
    check_space(out.parent, out_need, str(path), "free space there or choose another --output; the next run does "
                "it", "output")
    return VideoPlan(info, out, container, options, ffmpeg.output_colour(info.colour, encoder), source)

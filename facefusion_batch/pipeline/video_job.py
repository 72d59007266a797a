"""One video: probe, decode, process frames on the pool, encode in chunks, mux audio, verify, rename."""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Protocol

import numpy as np

from facefusion_batch.errors import MediaError, TargetError
from facefusion_batch.media import temp_name
from facefusion_batch.pipeline.analysis import MotionGate, Reference
from facefusion_batch.pipeline.frames import Spool, load, ordered_map, read_frames
from facefusion_batch.timing import Timings, timed, timed_iter
from facefusion_batch.video import ffmpeg
from facefusion_batch.video.ffmpeg import EncodeOptions
from facefusion_batch.video.probe import VideoInfo, probe

class FrameProcessor(Protocol):
    def new_gate(self) -> MotionGate:
        """A motion gate for one video."""

    def __call__(self, frame: np.ndarray, reference: Reference, is_new: bool) -> tuple[np.ndarray, int]:
        """Swap faces in `frame`; returns (frame, faces swapped)."""


@dataclass
class Counters:
    frames: int = 0
    frames_with_faces: int = 0
    references: int = 0  # frames on which faces were detected (not reused)
    first_frame_seconds: float = 0.0  # from the start of the target to its first processed frame
    stage_seconds: dict[str, float] = field(default_factory=dict)
    note: str = ""  # something the user should know about a finished output
    resumed_frames: int = 0  # frames taken from chunks an interrupted run had finished


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


def check_space(directory: Path, needed: int, what: str, fix: str) -> None:
    free = shutil.disk_usage(directory).free
    if free < needed:
        raise TargetError(f"{what}: needs ~{needed / 1e9:.1f} GB free in {directory}, has {free / 1e9:.1f} GB; "
                          f"{fix}")


SPOOL_BYTES = 512 * 1024 ** 2  # decoded frames waiting on disk, at most (a few frames for 4K)


def spool_ahead(info: VideoInfo, options: JobOptions) -> int:
    """Frames the reader may decode ahead of processing: a chunk, within SPOOL_BYTES, when spooling to
    disk; just enough to keep the workers busy in memory."""
    if options.transport != "temp":
        return options.in_flight
    fit = SPOOL_BYTES // (info.width * info.height * 3)
    return max(2 * options.in_flight, min(options.chunk_size, fit))


def estimate(info: VideoInfo, options: JobOptions) -> tuple[int, int]:
    """(temp bytes, output bytes) one video needs: spooled frames + encoded chunks, and the output."""
    frame_bytes = info.width * info.height * 3
    spool = frame_bytes * spool_ahead(info, options) if options.transport == "temp" else 0
    encoded = max(info.path.stat().st_size * 2, 10_000_000)
    return spool + encoded, encoded


def process_video(path: Path, out: Path, frame_fn: FrameProcessor, tags: dict[str, str], options: JobOptions,
                  on_frames: Callable[[int], None], on_start: Callable[[int], None],
                  resume_key: str | None = None) -> Counters:
    """Swap faces through a whole video into `out` (written under a temp name, renamed on success).

    With a `resume_key` (a hash of the input's content and every setting that shapes the output) the
    workspace is `ffb-<key>` in the temp dir: chunks encoded by an earlier, interrupted run with the same
    key are reused, and an interruption keeps this run's finished chunks for the next.
    """
    with timed(options.timings, "probe"):
        info = probe(path)
    container = ffmpeg.container_of(out)
    encode = dataclasses.replace(options.encode, encoder=ffmpeg.resolve_encoder(options.encode.encoder, container))
    reason = ffmpeg.check_encoder(container, encode.encoder)
    if reason:
        raise TargetError(f"{path}: {reason}")
    options = dataclasses.replace(options, encode=encode)
    temp_need, out_need = estimate(info, options)
    options.temp_root.mkdir(parents=True, exist_ok=True)
    check_space(options.temp_root, temp_need, str(path), "set temp_path to a larger disk or lower chunk_size")
    check_space(out.parent, out_need, str(path), "free space in the output directory")
    on_start(info.frame_count)
    if resume_key:
        workspace = options.temp_root / f"ffb-{resume_key}"
        workspace.mkdir(exist_ok=True)
    else:
        workspace = Path(tempfile.mkdtemp(prefix="ffb-", dir=options.temp_root))
    partial = temp_name(out)
    keep_chunks = False
    try:
        counters, chunks = _transcode(info, workspace, frame_fn, options, on_frames, container)
        if counters.frames_with_faces == 0:
            shutil.copyfile(path, partial)  # nothing to swap: the original goes through untouched
        else:
            with timed(options.timings, "encode"):
                _mux(info, chunks, workspace, partial, container, tags)
            with timed(options.timings, "verify"):
                _verify(partial, info, counters.frames)
            if info.variable_frame_rate:
                counters.note = (f"variable frame rate: written at a constant {float(info.fps):.3f} fps, frames "
                                 f"moved by up to {info.timing_shift * 1000:.0f} ms")
        partial.replace(out)
        return counters
    except KeyboardInterrupt:
        keep_chunks = resume_key is not None  # finished chunks wait for the next run; the rest goes
        raise
    finally:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        if keep_chunks:
            keep = {p for chunk, _, _ in finished_chunks(workspace, options.chunk_size)
                    for p in (chunk, chunk.with_suffix(".json"))}
            shutil.rmtree(workspace / "frames", ignore_errors=True)
            for stray in set(workspace.iterdir()) - keep:
                stray.unlink(missing_ok=True)
        else:
            shutil.rmtree(workspace, ignore_errors=True)


def finished_chunks(workspace: Path, chunk_size: int) -> list[tuple[Path, int, int]]:
    """(chunk file, frames, frames with faces) of the leading run of complete chunks in `workspace`."""
    found = []
    while True:
        chunk = workspace / f"chunk_{len(found):05d}.mp4"
        try:
            meta = json.loads(chunk.with_suffix(".json").read_text())
        except (OSError, ValueError):
            break
        if not chunk.is_file():
            break
        found.append((chunk, int(meta["frames"]), int(meta["faces"])))
        if meta["frames"] != chunk_size:
            break  # the video's last, short chunk
    return found


def _transcode(info: VideoInfo, workspace: Path, frame_fn: FrameProcessor, options: JobOptions,
               on_frames: Callable[[int], None], container: str) -> tuple[Counters, list[Path]]:
    counters = Counters()
    done = finished_chunks(workspace, options.chunk_size)
    chunks = [chunk for chunk, _, _ in done]
    counters.frames = sum(frames for _, frames, _ in done)
    counters.frames_with_faces = sum(faces for _, _, faces in done)
    counters.resumed_frames = start = counters.frames
    on_frames(start)
    ahead = spool_ahead(info, options)
    frames_dir = workspace / "frames"
    shutil.rmtree(frames_dir, ignore_errors=True)
    frames_dir.mkdir()
    with open(workspace / "decode.log", "wb") as log:
        decoder = subprocess.Popen(ffmpeg.decode_command(info.path), stdout=subprocess.PIPE, stderr=log)
    # Spooled frames are copied to disk at once, so two buffers do; in memory every frame ahead or in
    # flight holds its buffer until it is encoded.
    buffers = ahead + options.in_flight + 3 if options.transport == "memory" else 2
    decoded = read_frames(decoder.stdout, info.width, info.height, buffers=buffers)
    # Frames of reused chunks are decoded and dropped: exact, and far cheaper than processing them.
    frames = timed_iter(itertools.islice(decoded, start, None), options.timings, "decode")
    spool = Spool(frames, options.transport, frames_dir, options.frame_format, ahead, options.timings)
    encoder: _Encoder | None = None
    started = time.perf_counter()
    gates: list[MotionGate] = []

    def planned():
        # A fresh gate per chunk: every chunk is analysed alone, so a resumed run makes the same choices.
        for index, (payload, thumb) in enumerate(spool, start):
            if index % options.chunk_size == 0 or not gates:
                gates.append(frame_fn.new_gate())
            yield (payload, *gates[-1].plan(index, thumb, info.width))

    def work(payload, reference: Reference, is_new: bool) -> tuple[np.ndarray, int]:
        with timed(options.timings, "decode"):
            frame = load(payload)
        return frame_fn(frame, reference, is_new)

    finished = False
    try:
        with ThreadPoolExecutor(options.threads, thread_name_prefix="ffb-frame") as pool:
            for frame, swapped in ordered_map(pool, work, planned(), options.in_flight):
                if not counters.frames:
                    counters.first_frame_seconds = time.perf_counter() - started
                with timed(options.timings, "encode"):
                    if counters.frames % options.chunk_size == 0:
                        if encoder:
                            encoder.close()
                        chunks.append(workspace / f"chunk_{len(chunks):05d}.mp4")
                        encoder = _Encoder(chunks[-1], info, options.encode, workspace, container)
                    encoder.write(frame, swapped > 0)
                counters.frames += 1
                counters.frames_with_faces += swapped > 0
                on_frames(1)
        if encoder:
            with timed(options.timings, "encode"):
                encoder.close()
            encoder = None
        finished = True
    finally:
        _stop(decoder, kill=not finished)
        spool.close()
        if encoder:
            encoder.kill()
    log = (workspace / "decode.log").read_bytes()
    if decoder.returncode not in (0, None) or counters.frames == 0:
        raise MediaError(f"{info.path}: decoding failed after {counters.frames} frames ({ffmpeg.error_line(log)})")
    if counters.frames < info.frame_count - 1 or b"partial file" in log:
        raise MediaError(f"{info.path}: damaged or truncated: only {counters.frames} of {info.frame_count} frames "
                         f"could be decoded ({ffmpeg.error_line(log) if log.strip() else 'missing data'})")
    counters.stage_seconds["transcode"] = time.perf_counter() - started
    counters.references = sum(gate.references for gate in gates)
    return counters, chunks


def _stop(process: subprocess.Popen, kill: bool) -> None:
    if process.poll() is None:
        if kill:
            process.kill()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout:
        process.stdout.close()


class _Encoder:
    """One ffmpeg encoder process for one chunk, fed raw BGR frames on stdin. The chunk is written under a
    `.part` name and, once the encoder succeeded, renamed and described in a JSON sidecar: only then does it
    count as finished for a resumed run."""

    def __init__(self, out: Path, info: VideoInfo, options: EncodeOptions, workspace: Path, container: str) -> None:
        self._path = info.path
        self._out = out
        self._part = out.with_name(f"{out.stem}.part{out.suffix}")
        self._frames = self._faces = 0
        self._log_path = workspace / f"{out.stem}.log"
        pixel_format = ffmpeg.output_pixel_format(info.width, info.height, info.pixel_format)
        with open(self._log_path, "wb") as log:
            command = ffmpeg.encode_command(self._part, info.width, info.height, info.fps, options, info.colour,
                                            pixel_format, container)
            self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stderr=log)
        self._stdin: IO[bytes] = self._process.stdin  # type: ignore[assignment]

    def write(self, frame: np.ndarray, has_faces: bool) -> None:
        self._frames += 1
        self._faces += has_faces
        try:
            self._stdin.write(memoryview(np.ascontiguousarray(frame)).cast("B"))
        except (BrokenPipeError, OSError):
            self.kill()
            raise self._failure() from None

    def close(self) -> None:
        try:
            self._stdin.close()
        except BrokenPipeError:
            pass
        if self._process.wait() != 0:
            raise self._failure()
        self._part.replace(self._out)
        meta = self._out.with_suffix(".json")
        tmp = meta.with_name(meta.name + ".tmp")
        tmp.write_text(json.dumps({"frames": self._frames, "faces": self._faces}))
        tmp.replace(meta)

    def _failure(self) -> MediaError:
        return MediaError(f"{self._path}: encoding failed ({ffmpeg.error_line(self._log_path.read_bytes())})")

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()


def _mux(info: VideoInfo, chunks: list[Path], workspace: Path, partial: Path, container: str,
         tags: dict[str, str]) -> None:
    listing = workspace / "chunks.txt"
    listing.write_text(ffmpeg.concat_list(chunks), encoding="utf-8")
    ffmpeg.run(ffmpeg.mux_command(listing, info.path, partial, container, info.audio_codec, tags),
               f"{info.path}: joining chunks and audio")


def _verify(partial: Path, info: VideoInfo, frames: int) -> None:
    """Check the result rather than trusting ffmpeg's exit code: frame count and audio stream."""
    result = probe(partial)
    if result.frame_count != frames:
        raise MediaError(f"{info.path}: output has {result.frame_count} frames, expected {frames}")
    if info.audio_codec and not result.audio_codec:
        raise MediaError(f"{info.path}: the audio track was lost while muxing ({info.audio_codec})")

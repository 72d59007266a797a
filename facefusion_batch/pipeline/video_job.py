"""One video: probe, decode, process frames on the pool, encode in chunks; then (`Encoded.finish`) mux audio,
verify, rename."""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools
import json
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Protocol

import numpy as np

from facefusion_batch.errors import MediaError, TargetError
from facefusion_batch.media import temp_name
from facefusion_batch.pipeline.analysis import MotionGate, Reference
from facefusion_batch.pipeline.frames import Spool, load, ordered_map
from facefusion_batch.pipeline.lookahead import Prepared
from facefusion_batch.timing import Timings, timed, timed_iter
from facefusion_batch.video import ffmpeg
from facefusion_batch.video.decoder import Decoder
from facefusion_batch.video.ffmpeg import EncodeOptions
from facefusion_batch.video.probe import VideoInfo, probe

# Moves a finished hidden output (partial, output, modified) into place, signing it first where the run
# signs; returns a note for the summary. Without one the partial is just renamed.
Seal = Callable[[Path, Path, bool], str]


class FrameProcessor(Protocol):
    def new_gate(self) -> MotionGate:
        """A motion gate for one video."""

    def analyse(self, frame: np.ndarray, reference: Reference) -> None:
        """Detect a new reference's faces and set its result (a task of its own, ahead of its frame)."""

    def __call__(self, frame: np.ndarray, reference: Reference, is_new: bool, index: int
                 ) -> tuple[np.ndarray, int]:
        """Swap faces in frame `index` of the video; returns (frame, faces swapped)."""


@dataclass
class Counters:
    frames: int = 0
    frames_with_faces: int = 0
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


def size_text(size: float) -> str:
    """Bytes as a person reads them: GB from 1 GB, else MB (kB below 1 MB)."""
    if size >= 1e9:
        return f"{size / 1e9:.1f} GB"
    return f"{size / 1e6:.0f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"


def check_space(directory: Path, needed: int, what: str, fix: str) -> None:
    free = shutil.disk_usage(directory).free
    if free < needed:
        raise TargetError(f"{what}: needs ~{size_text(needed)} free in {directory}, has {size_text(free)}; {fix}")


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
    """A probed video, its output, and the job options with the encoder resolved for the container."""

    info: VideoInfo
    out: Path
    container: str
    options: JobOptions

    @property
    def chunk_count(self) -> int:
        """Chunks by the probe's frame count (the decoder decides the last one's length)."""
        return max(1, -(-self.info.frame_count // self.options.chunk_size))


def plan_video(path: Path, out: Path, options: JobOptions, info: VideoInfo | None = None) -> VideoPlan:
    """Probe (unless `info` is given) and check one video target before any work: encoder for the
    container, disk space."""
    if info is None:
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
    return VideoPlan(info, out, container, options)


@dataclass
class Encoded:
    """A video whose frames are all processed and encoded into chunks in `workspace`; `finish` joins them
    into the output. Finishing needs no frame worker, so a batch does it while the next video starts."""

    plan: VideoPlan
    workspace: Path
    counters: Counters
    tags: dict[str, str]
    resumable: bool = False  # the workspace is keyed for resuming: an interruption keeps its chunks
    seal: Seal | None = None

    def finish(self) -> Counters:
        """Join, verify and rename into place (see finish_video); the workspace goes either way, except
        for the finished chunks of a resumable one when interrupted."""
        keep_chunks = False
        try:
            self.counters.note = finish_video(self.plan, self.workspace, self.tags, self.seal)
            return self.counters
        except KeyboardInterrupt:
            keep_chunks = self.resumable
            raise
        finally:
            if keep_chunks:
                tidy_workspace(self.workspace)
            else:
                shutil.rmtree(self.workspace, ignore_errors=True)


def encode_video(path: Path, out: Path, frame_fn: FrameProcessor, tags: dict[str, str], options: JobOptions,
                 on_frames: Callable[[int], None], on_start: Callable[[int], None],
                 resume_key: str | None = None, prepared: Prepared | None = None,
                 on_decoded: Callable[[], None] | None = None, seal: Seal | None = None) -> Encoded:
    """Swap faces through a whole video into encoded chunks, ready to be joined into `out`.

    With a `resume_key` (a hash of the input's content and every setting that shapes the output) the
    workspace is `ffb-<key>` in the temp dir: chunks encoded by an earlier, interrupted run with the same
    key are reused, and an interruption keeps this run's finished chunks for the next. `prepared` is the
    video probed (and its decoder started) ahead of time; `on_decoded` is called once it is all decoded.
    `seal` moves the finished output into place (signing it; see finish_video).
    """
    decoder = prepared.decoder if prepared else None
    try:
        plan = plan_video(path, out, options, prepared.info if prepared else None)
        on_start(plan.info.frame_count)
        if resume_key:
            workspace = options.temp_root / f"ffb-{resume_key}"
            if workspace.is_symlink():  # a predictable name: never work (or delete) through a link put there
                workspace.unlink()
            workspace.mkdir(exist_ok=True)
        else:
            workspace = Path(tempfile.mkdtemp(prefix="ffb-", dir=options.temp_root))
        keep_chunks = encoded = False
        try:
            counters = encode_chunks(plan, workspace, frame_fn, on_frames, decoder=decoder, on_decoded=on_decoded)
            encoded = True
            return Encoded(plan, workspace, counters, tags, resumable=resume_key is not None, seal=seal)
        except KeyboardInterrupt:
            keep_chunks = resume_key is not None  # finished chunks wait for the next run; the rest goes
            raise
        finally:
            if keep_chunks:
                tidy_workspace(workspace)
            elif not encoded:
                shutil.rmtree(workspace, ignore_errors=True)
    finally:
        if decoder is not None:  # not needed after all (every chunk was finished), or already stopped
            decoder.stop(kill=True)


def tidy_workspace(workspace: Path) -> None:
    """Keep only finished chunks (and the end marker): what a later run can reuse."""
    keep = {p for index in range(len(list(workspace.glob("chunk_*.json"))) + 1)
            if chunk_meta(workspace, index) for p in (chunk_path(workspace, index),
                                                      chunk_path(workspace, index).with_suffix(".json"))}
    keep.add(workspace / "end.json")
    shutil.rmtree(workspace / "frames", ignore_errors=True)
    for stray in set(workspace.iterdir()) - keep:
        if stray.is_file():
            stray.unlink(missing_ok=True)


def chunk_path(workspace: Path, index: int) -> Path:
    return workspace / f"chunk_{index:05d}.mp4"


def chunk_meta(workspace: Path, index: int) -> dict | None:
    """{"frames", "faces"} of a finished chunk, or None when it isn't finished."""
    chunk = chunk_path(workspace, index)
    try:
        meta = json.loads(chunk.with_suffix(".json").read_text())
    except (OSError, ValueError):
        return None
    return meta if chunk.is_file() else None


def write_json(path: Path, data: dict) -> None:
    """Write JSON under a temp name and rename: a reader sees the whole file or none."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def end_frames(workspace: Path) -> int | None:
    """The video's frame count once a run has decoded to its end, else None."""
    try:
        return int(json.loads((workspace / "end.json").read_text())["frames"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def encode_chunks(plan: VideoPlan, workspace: Path, frame_fn: FrameProcessor, on_frames: Callable[[int], None],
                  first: int = 0, last: int | None = None, decoder: Decoder | None = None,
                  on_decoded: Callable[[], None] | None = None) -> Counters:
    """Process and encode chunks `first` .. `last` - 1 (None: to the end of the video) into `workspace`,
    skipping those already finished. Reaching the end writes `end.json` with the video's frame count.
    `decoder` is one already started on the video (from its first frame); `on_decoded` is called once the
    video has been decoded to its end."""
    options = plan.options
    counters = Counters()
    resume = first
    while (last is None or resume < last) and (meta := chunk_meta(workspace, resume)):
        counters.frames += meta["frames"]
        counters.frames_with_faces += meta["faces"]
        resume += 1
        if meta["frames"] < options.chunk_size:
            return counters  # that was the video's last chunk
    counters.resumed_frames = counters.frames
    on_frames(counters.frames)
    if (last is not None and resume >= last) or (end_frames(workspace) or -1) == resume * options.chunk_size:
        return counters  # nothing left in the range, or the video ended exactly with the last finished chunk
    processed = _transcode(plan, workspace, frame_fn, on_frames, resume, last, decoder, on_decoded)
    counters.frames += processed.frames
    counters.frames_with_faces += processed.frames_with_faces
    return counters


def finish_video(plan: VideoPlan, workspace: Path, tags: dict[str, str], seal: Seal | None = None) -> str:
    """Join the finished chunks with the original audio into the output (or copy the original through
    when no frame had a face), verify it, and rename it into place, through `seal` when given (which signs
    it first; a signing failure leaves nothing at the output). Returns a note for the summary."""
    info = plan.info
    total = end_frames(workspace)
    if total is None:
        raise MediaError(f"{info.path}: the video's last chunk is missing; run again to finish it")
    metas, chunks, index = [], [], 0
    while sum(m["frames"] for m in metas) < total:
        meta = chunk_meta(workspace, index)
        if meta is None:
            raise MediaError(f"{info.path}: chunk {index} is missing; run again to finish it")
        metas.append(meta)
        chunks.append(chunk_path(workspace, index))
        index += 1
    partial = temp_name(plan.out)
    partial.unlink(missing_ok=True)  # ffmpeg and copyfile would write through a link planted there
    note = ""
    modified = any(m["faces"] for m in metas)
    try:
        if not modified:
            shutil.copyfile(info.path, partial)  # nothing to swap: the original goes through untouched
        else:
            with timed(plan.options.timings, "encode"):
                _mux(info, chunks, workspace, partial, plan.container, tags)
            with timed(plan.options.timings, "verify"):
                _verify(partial, info, total)
            notes = []
            if info.variable_frame_rate:
                notes.append(f"variable frame rate: written at a constant {float(info.fps):.3f} fps, frames "
                             f"moved by up to {info.timing_shift * 1000:.0f} ms")
            if info.covers and not ffmpeg.cover_args(plan.container, info.covers, bool(tags)):
                why = "with the AI marking tags" if plan.container == "mp4" else f"in .{plan.container}"
                notes.append(f"cover picture not kept (it can't be stored {why})")
            if info.other_videos:
                notes.append(f"only the first video stream was processed; {info.other_videos} more not kept")
            dropped = ffmpeg.subtitle_args(plan.container, info.subtitle_codecs)[1]
            if dropped:
                notes.append(f"subtitles not kept: .{plan.container} can't hold {', '.join(dropped)}; "
                             "write .mkv to keep them")
            note = "; ".join(notes)
        if seal is None:
            partial.replace(plan.out)
        else:
            note = "; ".join(filter(None, [note, seal(partial, plan.out, modified)]))
    finally:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
    return note


def _transcode(plan: VideoPlan, workspace: Path, frame_fn: FrameProcessor, on_frames: Callable[[int], None],
               first: int, last: int | None, decoder: Decoder | None, on_decoded: Callable[[], None] | None
               ) -> Counters:
    """Decode the video, process frames of chunks `first` .. `last` - 1 on the pool, encode each chunk."""
    info, options = plan.info, plan.options
    counters = Counters()
    start = first * options.chunk_size
    stop = None if last is None else last * options.chunk_size
    ahead = spool_ahead(info, options)
    frames_dir = workspace / "frames"
    shutil.rmtree(frames_dir, ignore_errors=True)
    frames_dir.mkdir()
    decoder = decoder or Decoder(info, options.temp_root)
    # Spooled frames are copied to disk at once, so two buffers do; in memory every frame ahead, planned
    # or in flight holds its buffer until it is encoded.
    buffers = ahead + 2 * options.in_flight + 3 if options.transport == "memory" else 2
    # Frames before the range are decoded and dropped unconverted: exact, and far cheaper than processing.
    decoded = decoder.frames(buffers, skip=start)
    frames = timed_iter(decoded if stop is None else itertools.islice(decoded, stop - start), options.timings,
                        "decode")
    spool = Spool(frames, options.transport, frames_dir, options.frame_format, ahead, options.timings,
                  on_end=on_decoded if stop is None else None)
    encoder: _Encoder | None = None
    gates: list[MotionGate] = []

    def planned():
        # A fresh gate per chunk: every chunk is analysed alone, so resumed and split runs choose alike.
        for index, (payload, thumb) in enumerate(spool, start):
            if index % options.chunk_size == 0 or not gates:
                gates.append(frame_fn.new_gate())
            yield (payload, *gates[-1].plan(index, thumb, info.width), index)

    preloaded: dict[int, np.ndarray] = {}  # reference frames loaded by their analysis, by frame index

    def analyse(payload, reference: Reference) -> None:
        try:
            with timed(options.timings, "decode"):
                frame = load(payload)
            preloaded[reference.index] = frame
            frame_fn.analyse(frame, reference)
        except BaseException as exc:
            if not reference.result.done():  # frames waiting on the reference would wait for ever
                reference.result.set_exception(exc)
            raise

    def work(payload, reference: Reference, is_new: bool, index: int) -> tuple[np.ndarray, int]:
        if is_new and reference.ahead:
            failure = reference.result.exception()  # waits for the analysis
            if failure is not None:
                raise failure
            frame = preloaded.pop(reference.index)
        else:
            with timed(options.timings, "decode"):
                frame = load(payload)
        with timed(options.timings, "frame"):  # frames in the processor now: the metrics' frames in flight
            return frame_fn(frame, reference, is_new, index)

    analyses: list[tuple[Future, Reference]] = []

    def analysed_ahead(pool: ThreadPoolExecutor):
        """The planned frames, `in_flight` behind planning: a new reference is queued for analysis as it is
        planned, so frames after it rarely wait for its faces."""
        window: collections.deque = collections.deque()
        for payload, reference, is_new, index in planned():
            if is_new:
                reference.ahead = True
                analyses.append((pool.submit(analyse, payload, reference), reference))
            window.append((payload, reference, is_new, index))
            if len(window) > options.in_flight:
                yield window.popleft()
        yield from window

    finished = False
    index = start
    try:
        with ThreadPoolExecutor(options.threads, thread_name_prefix="ffb-frame") as pool:
            try:
                for frame, swapped in ordered_map(pool, work, analysed_ahead(pool), options.in_flight):
                    with timed(options.timings, "encode"):
                        if index % options.chunk_size == 0:
                            if encoder:
                                encoder.close()
                            encoder = _Encoder(chunk_path(workspace, index // options.chunk_size), info,
                                               options.encode, workspace, plan.container)
                        encoder.write(frame, swapped > 0)
                    index += 1
                    counters.frames += 1
                    counters.frames_with_faces += swapped > 0
                    on_frames(1)
            finally:  # stopped early: analyses not started are dropped, and whoever waits on them is told
                for analysis, reference in analyses:
                    if analysis.cancel():
                        reference.result.set_exception(CancelledError())
                for gate in gates:  # frames waiting for a turn that a failed or dropped frame won't take
                    if gate.tracks is not None:
                        gate.tracks.abandon()
        if encoder:
            with timed(options.timings, "encode"):
                encoder.close()
            encoder = None
        finished = True
    finally:
        reached_end = decoder.finished or stop is None
        decoder.stop(kill=not finished or not reached_end)
        spool.close()
        if encoder:
            encoder.kill()
    log = decoder.messages()
    if stop is None or index < stop:  # the decoder ran out: this was the end of the video
        if decoder.returncode != 0 or index == 0:
            raise MediaError(f"{info.path}: decoding failed after {index} frames ({ffmpeg.error_line(log)})")
        if index < info.frame_count - 1 or b"partial file" in log:
            raise MediaError(f"{info.path}: damaged or truncated: {_shortfall(info, index)} "
                             f"({ffmpeg.error_line(log) if log.strip() else 'missing data'})")
        write_json(workspace / "end.json", {"frames": index})
    return counters


def _shortfall(info: VideoInfo, decoded: int) -> str:
    """What a damaged video lacks. The probe counts the frames present, so when all of them decoded the
    file itself is cut short; its header's duration says by how much, when it says more."""
    if decoded < info.frame_count - 1:
        return f"only {decoded} of its {info.frame_count} frames could be decoded"
    declared = round(info.duration * float(info.fps))
    if declared > decoded + 1:
        return f"the file ends early: its header promises ~{declared} frames, only {decoded} are in it"
    return f"the file ends early (its {decoded} frames decoded, but data after them is missing)"


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
                                            pixel_format, container, info.picture)
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
        write_json(self._out.with_suffix(".json"), {"frames": self._frames, "faces": self._faces})

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
    ffmpeg.run(ffmpeg.mux_command(listing, info.path, partial, container, info.audio_codec, tags,
                                  info.subtitle_codecs, info.start_time,
                                  ffmpeg.stream_tags(info.colour, info.picture), info.timecode,
                                  info.audio_codecs, info.covers),
               f"{info.path}: joining chunks and audio")


def _verify(partial: Path, info: VideoInfo, frames: int) -> None:
    """Check the result rather than trusting ffmpeg's exit code: frame count and audio stream."""
    result = probe(partial)
    if result.frame_count != frames:
        raise MediaError(f"{info.path}: output has {result.frame_count} frames, expected {frames}")
    if info.audio_codec and not result.audio_codec:
        raise MediaError(f"{info.path}: the audio track was lost while muxing ({info.audio_codec})")
    if len(result.audio_codecs) < len(info.audio_codecs):
        raise MediaError(f"{info.path}: {len(info.audio_codecs) - len(result.audio_codecs)} of "
                         f"{len(info.audio_codecs)} audio tracks were lost while muxing")

"""One video's workflow. Its phases, in order, and where each is:

    probe, plan   plan_video      the video's facts; the encoder for its container; temp and output space
    decode        _spool          ffmpeg decodes frames ahead into a spool (temp files, or memory)
    analyse       _FrameStages    reference frames' faces detected ahead of their turn; tracks follow them
    process       _FrameStages    every frame swapped on the frame pool, handed on in order
    encode        _ChunkWriter    frames encoded into chunks of chunk_size as they come (the Workspace)
    join          finish_video    the chunks and the original audio muxed into a hidden partial
    verify        _verify         the partial decodes to the frames the video has
    seal          Seal            signed where the run signs, and renamed into place

`encode_video` runs probe to encode for a whole video and returns it `Encoded`, whose `finish` runs join to
seal (the local executor does that on another thread while the next target's frames run); a Ray worker runs
`encode_chunks` for a segment of chunks and `finish_video` for the join. `workflow.job` calls these for a
target, and every executor calls `workflow.job`.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools
import shutil
import subprocess
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Iterator, Protocol

import numpy as np

from facefusion_batch.concurrency import concurrency_of
from facefusion_batch.errors import MediaError, NoSpace, TargetError
from facefusion_batch.faces.tracking import Handover
from facefusion_batch.listing import listed
from facefusion_batch.media import temp_name
from facefusion_batch.workflow.analysis import MotionGate, Reference, TrackState
from facefusion_batch.workflow.frames import Spool, load, ordered_map
from facefusion_batch.workflow.lookahead import Prepared
from facefusion_batch.workflow.workspace import Workspace
from facefusion_batch.settings import Settings
from facefusion_batch.timing import Timings, timed, timed_iter
from facefusion_batch.video import ffmpeg
from facefusion_batch.video.decoder import DEEP, Decoder, deepen
from facefusion_batch.video.ffmpeg import Colour, EncodeOptions
from facefusion_batch.video.probe import VideoInfo, probe

# Moves a finished hidden output (partial, output, modified) into place, signing it first where the run
# signs; returns a note for the summary. Without one the partial is just renamed.
Seal = Callable[[Path, Path, bool], str]


class FrameFunction(Protocol):
    """What a video's frames are processed with (workflow.processor.FrameProcessor is one)."""

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


def job_options(settings: Settings, timings: Timings | None = None) -> JobOptions:
    """The options every video of a run is processed with."""
    concurrency = concurrency_of(settings)
    return JobOptions(temp_root=settings.temp_path, chunk_size=settings.chunk_size,
                      frame_format=settings.temp_frame_format, threads=concurrency.frame_threads,
                      in_flight=concurrency.frames_in_flight, transport=settings.frame_transport,
                      encode=EncodeOptions(settings.output_video_encoder, settings.output_video_preset,
                                           settings.output_video_quality), timings=timings)


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
    can't keep it)."""

    info: VideoInfo
    out: Path
    container: str
    options: JobOptions
    colour: Colour

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
    temp_need, out_need = estimate(info, options)
    options.temp_root.mkdir(parents=True, exist_ok=True)
    check_space(options.temp_root, temp_need, str(path), "set temp_path to a larger disk or lower chunk_size")
    check_space(out.parent, out_need, str(path), "free space there or choose another --output; the next run does "
                "it", "output")
    return VideoPlan(info, out, container, options, ffmpeg.output_colour(info.colour, encoder))


@dataclass
class Encoded:
    """A video whose frames are all processed and encoded into chunks in `workspace`; `finish` joins them
    into the output. Finishing needs no frame worker, so a batch does it while the next video starts."""

    plan: VideoPlan
    workspace: Workspace
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
                self.workspace.tidy()
            else:
                self.workspace.remove()


def encode_video(path: Path, out: Path, frame_fn: FrameFunction, tags: dict[str, str], options: JobOptions,
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
        if decoder is not None and decoder.tone_map != plan.tone_mapped:  # started before the plan said
            decoder.stop(kill=True)
            decoder = None
        on_start(plan.info.frame_count)
        if resume_key:
            workspace = Workspace.of(options.temp_root, resume_key).make()
        else:
            workspace = Workspace.fresh(options.temp_root)
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
                workspace.tidy()
            elif not encoded:
                workspace.remove()
    finally:
        if decoder is not None:  # not needed after all (every chunk was finished), or already stopped
            decoder.stop(kill=True)


def encode_chunks(plan: VideoPlan, workspace: Workspace, frame_fn: FrameFunction, on_frames: Callable[[int], None],
                  first: int = 0, last: int | None = None, decoder: Decoder | None = None,
                  on_decoded: Callable[[], None] | None = None, before: Workspace | None = None) -> Counters:
    """Process and encode chunks `first` .. `last` - 1 (None: to the end of the video) into `workspace`,
    skipping those already finished. Reaching the end writes `end.json` with the video's frame count.
    `decoder` is one already started on the video (from its first frame); `on_decoded` is called once the
    video has been decoded to its end. The first chunk processed continues mode `one`'s choice from the
    finished chunk before it, looked for in `workspace`, then in `before` (a Ray segment's shared workspace,
    where the segment before may or may not have published it yet: without it the choice starts afresh)."""
    resume = workspace.resume(plan.options.chunk_size, first, last)
    counters = Counters(resume.frames, resume.faces, resumed_frames=resume.frames)
    on_frames(resume.frames)
    if resume.done:
        return counters  # nothing left in the range, or the video ended with the last finished chunk
    handover = None
    if resume.index > 0:
        source = workspace if workspace.finished(resume.index - 1) is not None else before
        handover = Handover.from_json(source.handover(resume.index - 1)) if source is not None else None
    processed = _transcode(plan, workspace, frame_fn, on_frames, resume.index, last, decoder, on_decoded, handover)
    counters.frames += processed.frames
    counters.frames_with_faces += processed.frames_with_faces
    return counters


def finish_video(plan: VideoPlan, workspace: Workspace, tags: dict[str, str], seal: Seal | None = None) -> str:
    """Join the finished chunks with the original audio into the output (or copy the original through
    when no frame had a face), verify it, and rename it into place, through `seal` when given (which signs
    it first; a signing failure leaves nothing at the output). Returns a note for the summary."""
    info = plan.info
    chunks, metas = workspace.chunks(str(info.path))
    total = workspace.end()
    partial = temp_name(plan.out)
    partial.unlink(missing_ok=True)  # ffmpeg and copyfile would write through a link planted there
    note = ""
    modified = any(m["faces"] for m in metas)
    try:
        if not modified:
            shutil.copyfile(info.path, partial)  # nothing to swap: the original goes through untouched
        else:
            with timed(plan.options.timings, "encode"):
                _mux(plan, chunks, workspace, partial, tags)
            with timed(plan.options.timings, "verify"):
                _verify(partial, info, total)
            notes = []
            if plan.tone_mapped:
                notes.append(f"HDR ({info.colour.transfer}) tone-mapped to SDR BT.709: "
                             f"{plan.options.encode.encoder} can't keep HDR; write .mp4, .mov or .mkv with "
                             "output_video_encoder libx265 (or auto) to keep it")
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
                notes.append(f"subtitles not kept: .{plan.container} can't hold {listed(dropped)}; "
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


def _transcode(plan: VideoPlan, workspace: Workspace, frame_fn: FrameFunction, on_frames: Callable[[int], None],
               first: int, last: int | None, decoder: Decoder | None, on_decoded: Callable[[], None] | None,
               handover: Handover | None = None) -> Counters:
    """Process and encode the frames of chunks `first` .. `last` - 1, in stages connected by bounded
    windows: decode (ffmpeg) -> spool (reader thread) -> plan references (motion gate) -> analyse them
    ahead (pool) -> swap in order (pool, `in_flight` at most) -> chunk writer (one encoder per chunk)."""
    info, options = plan.info, plan.options
    start = first * options.chunk_size
    stop = None if last is None else last * options.chunk_size
    decoder = decoder or Decoder(info, options.temp_root, tone_map=plan.tone_mapped)
    # HDR kept: the frames are processed at 8 bits; their 16-bit pixels, decoded again, go to the encoder
    # wherever processing left a pixel as it was.
    deep = Decoder(info, options.temp_root) if plan.colour.hdr else None
    spool = _spool(plan, workspace, decoder, start, stop, on_decoded)
    stages = _FrameStages(plan, frame_fn, handover)
    writer = _ChunkWriter(plan, workspace, start, on_frames, stages.handover,
                          deep.frames(2, skip=start, deep=True) if deep else None)
    finished = False
    try:
        with ThreadPoolExecutor(options.threads, thread_name_prefix="ffb-frame") as pool:
            try:
                planned = stages.analysed_ahead(pool, stages.planned(spool, start))
                for frame, swapped in ordered_map(pool, stages.work, planned, options.in_flight):
                    writer.write(frame, swapped)
            finally:
                stages.cancel_pending()
        writer.close()
        finished = True
    finally:
        reached_end = decoder.finished or stop is None
        decoder.stop(kill=not finished or not reached_end)
        if deep is not None:
            deep.stop(kill=True)
        spool.close()
        writer.kill()
    if stop is None or writer.index < stop:  # the decoder ran out: this was the end of the video
        _check_complete(info, decoder, writer.index)
        workspace.mark_end(writer.index)
    return writer.counters


def _spool(plan: VideoPlan, workspace: Workspace, decoder: Decoder, start: int, stop: int | None,
           on_decoded: Callable[[], None] | None) -> Spool:
    """Frames `start` .. `stop` - 1 decoded and spooled ahead of processing (to disk, or in memory)."""
    info, options = plan.info, plan.options
    ahead = spool_ahead(info, options)
    shutil.rmtree(workspace.frames_dir, ignore_errors=True)
    workspace.frames_dir.mkdir()
    # Spooled frames are copied to disk at once, so two buffers do; in memory every frame ahead, planned
    # or in flight holds its buffer until it is encoded.
    buffers = ahead + 2 * options.in_flight + 3 if options.transport == "memory" else 2
    # Frames before the range are decoded and dropped unconverted: exact, and far cheaper than processing.
    decoded = decoder.frames(buffers, skip=start)
    frames = timed_iter(decoded if stop is None else itertools.islice(decoded, stop - start), options.timings,
                        "decode")
    return Spool(frames, options.transport, workspace.frames_dir, options.frame_format, ahead, options.timings,
                 on_end=on_decoded if stop is None else None)


class _FrameStages:
    """Planning, analysis ahead and processing of one range of frames (the middle stages of `_transcode`).
    Reference frames loaded for their analysis wait in `preloaded` for their turn to be processed."""

    def __init__(self, plan: VideoPlan, frame_fn: FrameFunction, handover: Handover | None = None) -> None:
        self._info, self._options, self._frame_fn = plan.info, plan.options, frame_fn
        self._handover = handover  # recorded by the chunk before the range
        self._preloaded: dict[int, np.ndarray] = {}  # reference frames loaded by their analysis, by index
        self._analyses: list[tuple[Future, Reference]] = []
        self._tracks: dict[int, TrackState] = {}  # the face tracks of the gates planned so far, by chunk

    def planned(self, spool: Spool, start: int) -> Iterator[tuple[object, Reference, bool, int]]:
        """(payload, reference, is_new, index) per frame. A fresh gate per chunk: every chunk is analysed
        alone, so resumed and split runs choose alike; only mode `one`'s choice is handed over to the next
        chunk, the same in memory as recorded on disk."""
        gate: MotionGate | None = None
        for index, (payload, thumb) in enumerate(spool, start):
            if index % self._options.chunk_size == 0 or gate is None:
                gate = self._frame_fn.new_gate()
                if gate.tracks is not None:
                    chunk = index // self._options.chunk_size
                    gate.tracks.follow(self._tracks.get(chunk - 1, self._handover), index)
                    self._tracks[chunk] = gate.tracks
            yield (payload, *gate.reference_for(index, thumb, self._info.width), index)

    def handover(self, chunk: int) -> dict | None:
        """The handover chunk `chunk` records (all its frames processed), as stored."""
        tracks = self._tracks.get(chunk)
        handover = tracks.handover() if tracks is not None else None
        return handover.to_json() if handover is not None else None

    def analysed_ahead(self, pool: ThreadPoolExecutor, planned: Iterator[tuple[object, Reference, bool, int]]
                       ) -> Iterator[tuple[object, Reference, bool, int]]:
        """The planned frames, `in_flight` behind planning: a new reference is queued for analysis as it is
        planned, so frames after it rarely wait for its faces."""
        window: collections.deque = collections.deque()
        for payload, reference, is_new, index in planned:
            if is_new:
                reference.ahead = True
                self._analyses.append((pool.submit(self._analyse, payload, reference), reference))
            window.append((payload, reference, is_new, index))
            if len(window) > self._options.in_flight:
                yield window.popleft()
        yield from window

    def work(self, payload: object, reference: Reference, is_new: bool, index: int) -> tuple[np.ndarray, int]:
        try:
            if is_new and reference.ahead:
                failure = reference.result.exception()  # waits for the analysis
                if failure is not None:
                    raise failure
                frame = self._preloaded.pop(reference.index)
            else:
                with timed(self._options.timings, "decode"):
                    frame = load(payload)
        except BaseException:
            if reference.tracks is not None:  # the frames after this one wait for its turn in the tracks
                reference.tracks.skip(index)
            raise
        with timed(self._options.timings, "frame"):  # frames in the processor now: the metrics' frames in flight
            return self._frame_fn(frame, reference, is_new, index)

    def cancel_pending(self) -> None:
        """The range is over (or stopped early): analyses not started are dropped and whoever waits on them
        is told; frames still waiting for a track turn give up."""
        for analysis, reference in self._analyses:
            if analysis.cancel():
                reference.result.set_exception(CancelledError())
        for tracks in self._tracks.values():  # frames waiting for a turn that a failed or dropped frame won't take
            tracks.abandon()

    def _analyse(self, payload: object, reference: Reference) -> None:
        try:
            with timed(self._options.timings, "decode"):
                frame = load(payload)
            self._preloaded[reference.index] = frame
            self._frame_fn.analyse(frame, reference)
        except BaseException as exc:
            if not reference.result.done():  # frames waiting on the reference would wait for ever
                reference.result.set_exception(exc)
            raise


class _ChunkWriter:
    """The last stage: frames in order into one encoder per chunk of the workspace, counted."""

    def __init__(self, plan: VideoPlan, workspace: Workspace, start: int, on_frames: Callable[[int], None],
                 handover: Callable[[int], dict | None] = lambda chunk: None,
                 deep: Iterator[np.ndarray] | None = None) -> None:
        self._plan, self._workspace, self._on_frames = plan, workspace, on_frames
        self._handover = handover  # what a chunk, once written, records for the next
        self._deep = deep  # the same frames at 16 bits (HDR kept), from `start`
        self.index = start  # the next frame's index in the video
        self.counters = Counters()
        self._encoder: _Encoder | None = None

    def write(self, frame: np.ndarray, swapped: int) -> None:
        options = self._plan.options
        with timed(options.timings, "encode"):
            if self.index % options.chunk_size == 0:
                if self._encoder:
                    self._encoder.close()
                self._encoder = _Encoder(self._workspace, self.index // options.chunk_size, self._plan.info,
                                         options.encode, self._plan.container, self._plan.colour, self._handover)
            assert self._encoder is not None
            if self._deep is not None:
                precise = next(self._deep, None)
                if precise is None:
                    raise MediaError(f"{self._plan.info.path}: the 16-bit decoding ended at frame {self.index}")
                frame = deepen(precise, frame)
            self._encoder.write(frame, swapped > 0)
        self.index += 1
        self.counters.frames += 1
        self.counters.frames_with_faces += swapped > 0
        self._on_frames(1)

    def close(self) -> None:
        """Finish the last chunk."""
        if self._encoder:
            with timed(self._plan.options.timings, "encode"):
                self._encoder.close()
            self._encoder = None

    def kill(self) -> None:
        """Stop an unfinished chunk's encoder (nothing of it counts as finished)."""
        if self._encoder:
            self._encoder.kill()


def _check_complete(info: VideoInfo, decoder: Decoder, frames: int) -> None:
    """The decoder ran out after `frames` frames: MediaError unless that is the whole video."""
    log = decoder.messages()
    if decoder.returncode != 0 or frames == 0:
        raise MediaError(f"{info.path}: decoding failed after {frames} frames ({ffmpeg.error_line(log)})")
    if frames < info.frame_count - 1 or b"partial file" in log:
        raise MediaError(f"{info.path}: damaged or truncated: {_shortfall(info, frames)} "
                         f"({ffmpeg.error_line(log) if log.strip() else 'missing data'})")


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

    def __init__(self, workspace: Workspace, index: int, info: VideoInfo, options: EncodeOptions,
                 container: str, colour: Colour, handover: Callable[[int], dict | None] = lambda chunk: None
                 ) -> None:
        self._path, self._handover = info.path, handover
        self._workspace, self._index = workspace, index
        self._out = out = workspace.chunk(index)
        self._part = out.with_name(f"{out.stem}.part{out.suffix}")
        self._frames = self._faces = 0
        self._log_path = workspace.path / f"{out.stem}.log"
        pixel_format = ffmpeg.output_pixel_format(info.width, info.height, info.pixel_format, ten_bit=colour.hdr)
        with open(self._log_path, "wb") as log:
            command = ffmpeg.encode_command(self._part, info.width, info.height, info.fps, options, colour,
                                            pixel_format, container, info.picture,
                                            DEEP if colour.hdr else "bgr24")
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
        self._workspace.record_chunk(self._index, self._frames, self._faces, self._handover(self._index))

    def _failure(self) -> MediaError:
        return MediaError(f"{self._path}: encoding failed ({ffmpeg.error_line(self._log_path.read_bytes())})")

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()


def _mux(plan: VideoPlan, chunks: list[Path], workspace: Workspace, partial: Path, tags: dict[str, str]) -> None:
    info, container = plan.info, plan.container
    listing = workspace.path / "chunks.txt"
    listing.write_text(ffmpeg.concat_list(chunks), encoding="utf-8")
    video_tags = ffmpeg.stream_tags(plan.colour, info.picture) + ffmpeg.codec_tag_args(plan.options.encode.encoder,
                                                                                       container)
    ffmpeg.run(ffmpeg.mux_command(listing, info.path, partial, container, info.audio_codec, tags,
                                  info.subtitle_codecs, info.start_time, video_tags, info.timecode,
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

"""Decode, analyse, process and encode, the middle phases of a video's workflow, for a range of its chunks:
ffmpeg decodes frames ahead into a spool; reference frames' faces are detected ahead of their turn and tracks
follow them; every frame is swapped on the frame pool and handed on in order, held back a few frames for faces
found late (workflow/backfill.py) and finished (labelled, marked) on the pool; frames are encoded into chunks of
chunk_size in the workspace as they come. A finished chunk is what a resumed run or another worker reuses."""
from __future__ import annotations

import collections
import itertools
import shutil
import subprocess
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Callable, Iterator, Protocol

import numpy as np

from facefusion_batch.errors import MediaError
from facefusion_batch.faces.tracking import Handover
from facefusion_batch.faces.types import Face
from facefusion_batch.timing import timed, timed_iter
from facefusion_batch.video import ffmpeg
from facefusion_batch.video.decoder import DEEP, Decoder, deepen
from facefusion_batch.video.ffmpeg import Colour, EncodeOptions
from facefusion_batch.video.probe import VideoInfo
from facefusion_batch.workflow import backfill
from facefusion_batch.workflow.analysis import MotionGate, Reference, TrackState
from facefusion_batch.workflow.frames import Spool, load, ordered_map
from facefusion_batch.workflow.video_plan import VideoPlan, spool_ahead
from facefusion_batch.workflow.workspace import Workspace


class FrameFunction(Protocol):
    """What a video's frames are processed with (workflow.processor.FrameProcessor is one)."""

    def new_gate(self) -> MotionGate:
        """A motion gate for one video."""

    def analyse(self, frame: np.ndarray, reference: Reference) -> None:
        """Detect a new reference's faces and set its result (a task of its own, ahead of its frame)."""

    def __call__(self, frame: np.ndarray, reference: Reference, is_new: bool, index: int
                 ) -> tuple[np.ndarray, int, list[tuple[int, Face]]]:
        """Swap faces in frame `index` of the video; returns (frame, faces swapped, faces found late to swap into the
        frames before it, and faces carried on to swap into this one: (index, face), workflow/backfill.py), the frame
        not final until `finish`ed."""

    def finish(self, frame: np.ndarray, faces: int, fills: list[Face]) -> tuple[np.ndarray, int]:
        """A frame made final once the frames after it were processed: `fills` (faces found later and followed back
        to it, or carried on to it) swapped; returns (frame, faces swapped)."""


@dataclass
class Counters:
    frames: int = 0
    frames_with_faces: int = 0
    note: str = ""  # something the user should know about a finished output
    resumed_frames: int = 0  # frames taken from chunks an interrupted run had finished


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


def _transcode(plan: VideoPlan, workspace: Workspace, frame_fn: FrameFunction, on_frames: Callable[[int], None],
               first: int, last: int | None, decoder: Decoder | None, on_decoded: Callable[[], None] | None,
               handover: Handover | None = None) -> Counters:
    """Process and encode the frames of chunks `first` .. `last` - 1, in stages connected by bounded
    windows: decode (ffmpeg) -> spool (reader thread) -> plan references (motion gate) -> analyse them
    ahead (pool) -> swap in order (pool, `in_flight` at most) -> held back (`backfill.depth`) -> finish (pool,
    `in_flight` at most) -> chunk writer (one encoder per chunk)."""
    info, options = plan.info, plan.options
    start = first * options.chunk_size
    stop = None if last is None else last * options.chunk_size
    decoder = decoder or Decoder(info, options.temp_root, tone_map=plan.tone_mapped, select=plan.select)
    # HDR kept: the frames are processed at 8 bits; their 16-bit pixels, decoded again, go to the encoder
    # wherever processing left a pixel as it was.
    deep = Decoder(info, options.temp_root, select=plan.select) if plan.colour.hdr else None
    spool = _spool(plan, workspace, decoder, start, stop, on_decoded)
    stages = _FrameStages(plan, frame_fn, handover)
    writer = _ChunkWriter(plan, workspace, start, on_frames, stages.handover,
                          deep.frames(2, skip=start, deep=True) if deep else None)
    finished = False
    try:
        with ThreadPoolExecutor(options.threads, thread_name_prefix="ffb-frame") as pool:
            try:
                planned = stages.analysed_ahead(pool, stages.planned(spool, start))
                for frame, swapped in processed(pool, frame_fn, stages.work, planned, options.in_flight, start):
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


def processed(pool: ThreadPoolExecutor, frame_fn: FrameFunction, work: Callable[..., tuple[np.ndarray, int, list]],
              planned: Iterator[tuple], in_flight: int, start: int) -> Iterator[tuple[np.ndarray, int]]:
    """Frames `start`, ... processed on the pool (`work` of each planned item), in order, each finished there
    (`frame_fn.finish`) once held back behind the frames after it that may swap a face found late into it
    (workflow/backfill.py)."""
    return ordered_map(pool, frame_fn.finish, _held_back(ordered_map(pool, work, planned, in_flight), start), in_flight)


def _held_back(results: Iterator[tuple[np.ndarray, int, list[tuple[int, Face]]]], start: int
               ) -> Iterator[tuple[np.ndarray, int, list[Face]]]:
    """Processed frames `start`, ... handed on `backfill.depth` frames late, each with the faces found late on
    later frames and followed back to it, and the faces carried on to it."""
    held: collections.deque[tuple[np.ndarray, int, list[Face]]] = collections.deque()
    keep: int | None = None
    for index, (frame, faces, fills) in enumerate(results, start):
        if keep is None:
            keep = backfill.depth(frame.shape)
        held.append((frame, faces, []))
        for at, face in fills:  # held: frames index - len(held) + 1 .. index
            held[at - index + len(held) - 1][2].append(face)
        while len(held) > keep:
            yield held.popleft()
    yield from held


def _spool(plan: VideoPlan, workspace: Workspace, decoder: Decoder, start: int, stop: int | None,
           on_decoded: Callable[[], None] | None) -> Spool:
    """Frames `start` .. `stop` - 1 decoded and spooled ahead of processing (to disk, or in memory)."""
    info, options = plan.info, plan.options
    ahead = spool_ahead(info, options)
    shutil.rmtree(workspace.frames_dir, ignore_errors=True)
    workspace.frames_dir.mkdir()
    # Spooled frames are copied to disk at once, so two buffers do; in memory every frame ahead, planned
    # or in flight holds its buffer until it is encoded.
    # ... and every frame held back for faces found late (workflow/backfill.py) and being finished.
    held = backfill.depth((info.height, info.width, 3)) + options.in_flight
    buffers = ahead + 2 * options.in_flight + 3 + held if options.transport == "memory" else 2
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
                                         options.encode, self._plan.container, self._plan.colour, self._handover,
                                         self._plan.size)
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
                 container: str, colour: Colour, handover: Callable[[int], dict | None] = lambda chunk: None,
                 size: tuple[int, int] | None = None) -> None:
        self._path, self._handover = info.path, handover
        self._workspace, self._index = workspace, index
        self._out = out = workspace.chunk(index)
        self._part = out.with_name(f"{out.stem}.part{out.suffix}")
        self._frames = self._faces = 0
        self._log_path = workspace.path / f"{out.stem}.log"
        width, height = size or (info.width, info.height)
        pixel_format = ffmpeg.output_pixel_format(width, height, info.pixel_format, ten_bit=colour.hdr)
        with open(self._log_path, "wb") as log:
            command = ffmpeg.encode_command(self._part, info.width, info.height, info.fps, options, colour,
                                            pixel_format, container, info.picture,
                                            DEEP if colour.hdr else "bgr24", size)
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

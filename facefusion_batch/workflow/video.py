"""One video's workflow: the three ways a video goes through its phases, and the only code any executor
calls to run them (through `workflow.job`, which adds what is the target's: the content gate, the output's
identity check, the outcome). The phases, in order, and the module of each:

    probe, plan                          video_plan   the video's facts; the encoder; temp and output space
    decode, analyse, process, encode     chunks       frames decoded ahead, faces found and followed, swapped
                                                      on the frame pool, encoded into chunks as they come
    join, verify, seal                   finish       chunks and audio muxed into a hidden partial, checked to
                                                      decode to the frames the video has, signed and renamed

A whole video (`encode_video`, then `Encoded.finish`: the local executor finishes one video on another
thread while the next one's frames run); a segment of a video split across pool workers (`encode_segment`);
the join of a split video (`join_segments`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from facefusion_batch.video.probe import VideoInfo
from facefusion_batch.workflow.chunks import Counters, FrameFunction, encode_chunks
from facefusion_batch.workflow.finish import Seal, finish_video
from facefusion_batch.workflow.lookahead import Prepared
from facefusion_batch.workflow.video_plan import JobOptions, VideoPlan, plan_video
from facefusion_batch.workflow.workspace import Workspace


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
        if decoder is not None and (decoder.tone_map, decoder.select) != (plan.tone_mapped, plan.select):
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


def encode_segment(path: Path, out: Path, frame_fn: FrameFunction, options: JobOptions, shared: Workspace,
                   scratch: Workspace, first: int, last: int | None, on_frames: Callable[[int], None],
                   info: VideoInfo | None = None) -> int:
    """Chunks `first` .. `last` - 1 (None: to the end) of a video split across pool workers, encoded in a
    `scratch` workspace on this node's temp_path (spooled frames stay on local disk) and published to the
    `shared` one; returns the range's frames. Chunks another attempt already published are not done again;
    a retry on the same node also reuses the scratch's finished chunks. `info`: the driver's probe."""
    plan = plan_video(path, out, options, info)
    size = plan.options.chunk_size
    done = shared.make().resume(size, first, last)
    on_frames(done.frames)
    if done.done:
        return done.frames
    # Mode `one` continues its choice from this segment's own chunk before the resume point only: the
    # segment before may or may not have published its last chunk yet, and an output must not depend on
    # which node finished first. A segment's first chunk chooses afresh.
    own = shared if done.index > first else None
    frames = encode_chunks(plan, scratch.make(), frame_fn, on_frames, done.index, last, before=own).frames
    scratch.publish(shared, size, done.index, last)
    return done.frames + frames


def join_segments(path: Path, out: Path, staged: Path, options: JobOptions, shared: Workspace,
                  tags: dict[str, str], seal: Seal | None, info: VideoInfo | None = None) -> tuple[str, int, int]:
    """The join of a split video: its segments' chunks in `shared` and the original audio joined into
    `staged` (the hidden name this attempt writes for `out`), verified and sealed; returns (note for the
    summary, frames, frames with faces)."""
    plan = plan_video(path, out, options, info)
    note = finish_video(dataclasses.replace(plan, out=staged), shared, tags, seal)
    return (note, *shared.totals(plan.options.chunk_size))

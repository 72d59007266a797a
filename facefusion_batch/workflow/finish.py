"""Join, verify and seal, the last phases of a video's workflow: the finished chunks and the original audio are
muxed into a hidden partial, the partial is checked to decode to the frames the video has, and it is signed
(where the run signs) and renamed into place."""
from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Callable

from facefusion_batch.errors import MediaError
from facefusion_batch.listing import listed
from facefusion_batch.media import temp_name
from facefusion_batch.timing import timed
from facefusion_batch.video import ffmpeg
from facefusion_batch.video.probe import VideoInfo, probe
from facefusion_batch.workflow.video_plan import VideoPlan
from facefusion_batch.workflow.workspace import Workspace


# Moves a finished hidden output (partial, output, modified) into place, signing it first where the run
# signs; returns a note for the summary. Without one the partial is just renamed.
Seal = Callable[[Path, Path, bool], str]


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
        if not modified and plan.options.reshape.identity:
            shutil.copyfile(info.path, partial)  # nothing to swap: the original goes through untouched
        elif not modified:  # nothing swapped, but cut, re-timed or scaled as asked: no AI marking
            with timed(plan.options.timings, "encode"):
                _mux(plan, chunks, workspace, partial, {})
            _verify(partial, info, total)
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


def _mux(plan: VideoPlan, chunks: list[Path], workspace: Workspace, partial: Path, tags: dict[str, str]) -> None:
    info, container = plan.info, plan.container
    listing = workspace.path / "chunks.txt"
    listing.write_text(ffmpeg.concat_list(chunks), encoding="utf-8")
    video_tags = ffmpeg.stream_tags(plan.colour, info.picture) + ffmpeg.codec_tag_args(plan.options.encode.encoder,
                                                                                       container)
    ffmpeg.run(ffmpeg.mux_command(listing, info.path, partial, container, info.audio_codec, tags,
                                  info.subtitle_codecs, info.start_time, video_tags, info.timecode,
                                  info.audio_codecs, info.covers,
                                  plan.options.reshape.audio_window(plan.source or info)),
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

"""One target through the pipeline with a frame processor: an image at once, a video in two steps (its frames
into encoded chunks, then `complete()` joins, verifies and renames; the local executor overlaps the second
step with the next target's first). Nothing here reports an outcome or touches the journal: the run driver
does that."""
from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Callable, Protocol

from facefusion_batch.errors import MediaError, TargetError
from facefusion_batch.media import read_picture, scale_picture, temp_name, write_picture
from facefusion_batch.workflow.identity import Pin, Stamp
from facefusion_batch.workflow.lookahead import Prepared
from facefusion_batch.workflow.outcome import NO_FACE, Outcome, failed
from facefusion_batch.workflow.output_guard import prepare_output
from facefusion_batch.workflow.processor import FrameProcessor
from facefusion_batch.workflow.finish import Seal
from facefusion_batch.workflow.video import encode_segment, encode_video, join_segments
from facefusion_batch.workflow.video_plan import job_options
from facefusion_batch.workflow.workspace import Workspace
from facefusion_batch.provenance.content_gate import Verdict
from facefusion_batch.targets import Target, not_regular
from facefusion_batch.timing import timed
from facefusion_batch.video.probe import VideoInfo, probe

Completion = Callable[[], Outcome]


class TargetProgress(Protocol):
    def start(self, total: int) -> None:
        """The target's frame count is known (1 for an image)."""

    def advance(self, frames: int) -> None: ...


def begin(processor: FrameProcessor, target: Target, progress: TargetProgress, resume_key: str | None = None,
          ready: Callable[[], Prepared | None] | None = None, on_decoded: Callable[[], None] | None = None,
          content: str | None = None, read: Stamp | None = None) -> Completion:
    """Process a target's frames; returns its completion: a call (safe on another thread, and to be made
    exactly once) that finishes the output and gives the outcome. `ready` gives the video probed and its
    decoder started ahead of time (its failure is the target's); `on_decoded` is called once it is all
    decoded. `content` is the target's sha256 when the journal has it (recorded in the output's manifest),
    `read` the file's identity when it was hashed (else taken now): the output is published only while the
    target is still what was read (`identity.Pin`). The content gate looks at the target first: a flagged
    one is `blocked`, with nothing written."""
    pin = Pin(target.path, read, content) if read is not None else Pin.now(target.path, content)
    engine = processor.engine
    started = time.perf_counter()
    calls, profiles = engine.detector_calls(), profiles_left(engine)
    gate = processor.gate_record

    def failed_with(exc: Exception) -> Outcome:
        return failed(target, exc, processor.settings.temp_path, started, gate)

    def outcome(swapped: int, frames: int, note: str) -> Outcome:
        status = "done" if swapped else "no_face"
        note = "; ".join(filter(None, [note, profile_note(profiles_made)]))
        mark = processor.watermark.hex if swapped and processor.watermark else ""
        return Outcome(str(target.path), status, str(target.output), note if swapped else NO_FACE, frames,
                       time.perf_counter() - started, calls_made, profiles_made, gate, mark)

    prepared: Prepared | None = None

    def release() -> None:
        """The video prepared ahead will not be encoded: its decoder goes, and the next video's may start."""
        if prepared is not None and prepared.decoder is not None:
            prepared.decoder.stop(kill=True)
        if on_decoded is not None:
            on_decoded()

    try:
        refuse_special(target)
        prepared = ready() if ready else None
        try:
            info = prepared.info if prepared is not None else None
            processor = processor.for_target(target.path, content, info)  # its watermark; hashes the target if need be
            verdict = gate_verdict(processor, target, info)
            if not verdict.flagged:
                prepare_output(processor.settings.output_dir, target.output, target.path)
                processor.marker.check_output(target.path, target.output)
        except BaseException:
            release()
            raise
        if verdict.flagged:
            release()
            blocked = Outcome(str(target.path), "blocked", reason=f"{target.path}: {verdict.reason}",
                              seconds=time.perf_counter() - started, content_gate=gate)
            return lambda: blocked
        if target.kind == "image":
            progress.start(1)
            swapped, note = process_image(processor, target, content, pin)
            progress.advance(1)
            calls_made, profiles_made = engine.detector_calls() - calls, profiles_left(engine) - profiles
            return lambda: outcome(swapped, 1, note)
        encoded = encode_video(target.path, target.output, processor, processor.tags,
                               job_options(processor.settings, processor.timings), progress.advance,
                               progress.start, resume_key, prepared, on_decoded,
                               checked(processor.seal(target.path, content), pin))
        calls_made, profiles_made = engine.detector_calls() - calls, profiles_left(engine) - profiles
    except Exception as exc:  # noqa: BLE001 - whatever one target raises is its failure, not the batch's
        result = failed_with(exc)
        return lambda: result
    finally:
        engine.pool.after_target()

    def complete() -> Outcome:
        try:
            counters = encoded.finish()
        except Exception as exc:  # noqa: BLE001 - see above
            return failed_with(exc)
        note = counters.note
        if counters.resumed_frames:
            note = "; ".join(filter(None, [f"resumed: {counters.resumed_frames} frames reused from an "
                                           "interrupted run", note]))
        return outcome(counters.frames_with_faces, counters.frames, note)

    return complete


def refuse_special(target: Target) -> None:
    """Raise for a target that is no regular file (a FIFO, a device, a link to /dev/zero): reading it would
    never end."""
    reason = not_regular(target.path)
    if reason:
        raise TargetError(reason)


def gate_verdict(processor: FrameProcessor, target: Target, info: VideoInfo | None = None) -> Verdict:
    """The content gate's verdict on a target (not flagged when the gate does not run); `info`: the video
    as probed already."""
    gate = processor.gate
    if gate is None or gate.status != "checked":
        return Verdict(False)
    if target.kind == "image":
        with timed(processor.timings, "gate"):
            return gate.check_picture(read_picture(target.path, error=MediaError).frames)
    info = info or probe(target.path)
    with timed(processor.timings, "gate"):
        return gate.check_video(target.path, info.width, info.height, float(info.fps))


def profiles_left(engine: object) -> int:
    """Face-frames the engine has left as they are so far because they were turned too far to swap well, or
    their swap would have been too faint to show the source (the offline engine counts them; an engine
    without the count: 0)."""
    counter = getattr(engine, "profiles_left", None)
    return int(counter.value) if counter is not None else 0


def profile_note(count: int) -> str:
    """The summary's note for `count` face-frames left unswapped in strong profile, turned with an unsteady fit
    (engines/offline.py UNSTEADY) or as too faint a swap ('' for none)."""
    if count <= 0:
        return ""
    return (f"{count} face-frame{'s' if count != 1 else ''} turned too far to swap (near profile, turned with a "
            "fit that will not hold still, or too faint a change to show the source) left as they are")


def checked(seal: Seal, pin: Pin) -> Seal:
    """`seal`, once `pin` has found the target still what was read (else `identity.Changed`, nothing placed)."""
    def place(partial: Path, output: Path, modified: bool) -> str:
        pin.check()
        return seal(partial, output, modified)
    return place


def process_image(processor: FrameProcessor, target: Target, content: str | None = None,
                  pin: Pin | None = None) -> tuple[int, str]:
    """Swap the faces of a picture (every frame of an animated one; alpha kept, see media) into its output
    (a copy when it has none); returns (faces swapped, note for the summary). `pin`: what was read, checked
    before the output is placed."""
    pin = pin or Pin.now(target.path, content)
    picture = read_picture(target.path, error=MediaError)
    frames, swapped = [], 0
    for frame in picture.frames:
        frame, faces = processor.frame(frame)
        frames.append(frame)
        swapped += faces
    notes: list[str] = []
    scale = processor.settings.output_image_scale
    if swapped:
        seal = checked(processor.seal(target.path, content), pin)
        write_picture(scale_picture(picture.with_frames(frames), scale), target.output,
                      processor.settings.output_image_quality, processor.tags or None,
                      lambda partial, output: notes.append(seal(partial, output, True)))
    elif scale != 1.0:  # no face: unchanged but for its size, as FaceFusion writes it (nothing swapped: no mark)
        write_picture(scale_picture(picture, scale), target.output, processor.settings.output_image_quality, None,
                      lambda partial, output: (pin.check(), partial.replace(output)))
    else:
        partial = temp_name(target.output)
        partial.unlink(missing_ok=True)  # copyfile would write through a link planted there
        try:
            shutil.copyfile(target.path, partial)
            pin.check()
            partial.replace(target.output)
        finally:
            partial.unlink(missing_ok=True)
    return swapped, "; ".join(filter(None, notes))


class SegmentItem(Protocol):
    """Chunks `first` .. `last` - 1 (None: to the end) of a video (executors.work_items.Segment is one)."""

    target: Target
    key: str
    first: int
    last: int | None
    info: VideoInfo | None


class JoinItem(Protocol):
    """A split video's join into the hidden `staged` output (executors.work_items.Join is one)."""

    target: Target
    key: str
    staged: Path
    info: VideoInfo | None


def segment(processor: FrameProcessor, item: SegmentItem, shared: Workspace,
            on_frames: Callable[[int], None]) -> Outcome:
    """A segment of a video split across pool workers (see video.encode_segment), as the target's outcome."""
    engine, settings = processor.engine, processor.settings
    started, calls, profiles = time.perf_counter(), engine.detector_calls(), profiles_left(engine)
    target = item.target
    scratch = Workspace.scratch(settings.temp_path, item.key, item.first)
    try:
        processor = processor.for_target(target.path, info=item.info)  # the same watermark as a whole target's
        frames = encode_segment(target.path, target.output, processor, job_options(settings, processor.timings),
                                shared, scratch, item.first, item.last, on_frames, item.info)
    except Exception as exc:  # noqa: BLE001 - one target's failure, whatever it is, is not the batch's
        return failed(target, exc, processor.settings.temp_path, started)
    finally:
        engine.pool.after_target()
    scratch.remove()
    return Outcome(str(target.path), "done", frames=frames, seconds=time.perf_counter() - started,
                   detector_calls=engine.detector_calls() - calls,
                   profiles_left=profiles_left(engine) - profiles)


def join(processor: FrameProcessor, item: JoinItem, shared: Workspace) -> Outcome:
    """The join of a video split across pool workers (see video.join_segments), as the target's outcome.
    The content gate looks at the video first (its segments were swapped on several workers at once, so a
    flagged video is caught here: blocked, nothing written)."""
    started = time.perf_counter()
    target = item.target
    gate = processor.gate_record
    try:
        processor = processor.marked_for(target.path)  # the watermark the segments carry, named in the manifest
        verdict = gate_verdict(processor, target, item.info)
        if verdict.flagged:
            return Outcome(str(target.path), "blocked", reason=f"{target.path}: {verdict.reason}",
                           seconds=time.perf_counter() - started, content_gate=gate)
        note, frames, faces = join_segments(target.path, target.output, item.staged,
                                            job_options(processor.settings, processor.timings), shared,
                                            processor.tags, processor.seal(target.path), item.info)
    except Exception as exc:  # noqa: BLE001 - as in segment
        return failed(target, exc, processor.settings.temp_path, started)
    status, reason = ("done", note) if faces else ("no_face", NO_FACE)
    mark = processor.watermark.hex if faces and processor.watermark else ""
    return Outcome(str(target.path), status, str(item.staged), reason, frames, time.perf_counter() - started,
                   content_gate=gate, watermark=mark)

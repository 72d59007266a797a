"""A batch: one engine and one source for many targets; each target's failure is recorded, not fatal."""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import shutil
import sqlite3
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from facefusion_batch import __version__
from facefusion_batch.errors import MediaError, OutputError, TargetError
from facefusion_batch.media import read_picture, temp_name, write_picture
from facefusion_batch.memory import apply_memory_limit
from facefusion_batch.pipeline.analysis import MotionGate, Reference, TrackState, face_patches, track
from facefusion_batch.models.store import sha256_of
from facefusion_batch.pipeline.engine import FaceEngine, Selection, build_engine, build_selection
from facefusion_batch.pipeline import guard
from facefusion_batch.pipeline.journal import FINISHED, UNREADABLE, Journal, settings_key
from facefusion_batch.pipeline.lock import RunLock
from facefusion_batch.pipeline.lookahead import Lookahead
from facefusion_batch.pipeline.guard import GuardedReporter
from facefusion_batch.pipeline.output_guard import prepare_output
from facefusion_batch.pipeline.progress import Reporter
from facefusion_batch.pipeline.source_cache import Record
from facefusion_batch.pipeline.video_job import JobOptions, Seal, encode_video
from facefusion_batch.provenance.label import VisibleLabel
from facefusion_batch.provenance.sign import Marker
from facefusion_batch.settings import Settings
from facefusion_batch.targets import Target, discover, not_regular
from facefusion_batch.timing import Timings, timed
from facefusion_batch.video.ffmpeg import EncodeOptions, use_ffmpeg


STATUSES = ("done", "no_face", "skipped", "failed")
STALE_WORKSPACE_DAYS = 7
NO_FACE = "no face found; copied through unchanged"
INTERRUPTED = "interrupted; finished chunks are kept for the next run, partial outputs removed"


@dataclass
class Outcome:
    target: str
    status: str  # done | no_face | skipped | failed
    output: str | None = None
    reason: str = ""
    frames: int = 0
    seconds: float = 0.0
    detector_calls: int = 0


@dataclass
class _Finishing:
    """A video being finished on the batch's finishing thread."""

    target: Target
    content: str  # the journal's content hash ("" without a journal)
    future: Future


@dataclass
class BatchResult:
    engine: str
    models: list[str]
    providers: list[str]
    outcomes: list[Outcome] = field(default_factory=list)
    source_embeddings_computed: int = 0
    detector_calls: int = 0
    interrupted: bool = False

    @property
    def failed(self) -> int:
        return sum(o.status == "failed" for o in self.outcomes)

    def to_dict(self) -> dict:
        counts = {s: sum(o.status == s for o in self.outcomes) for s in STATUSES}
        return {**asdict(self), "counts": counts, "ok": self.failed == 0 and not self.interrupted}


def check_output_dir(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        # a hidden temp name (`.*.tmp` with `.ffb-`): one a killed run leaves is swept like its partial outputs
        probe = directory / f".ffb-write-test-{time.monotonic_ns()}.tmp"
        probe.write_bytes(b"")
        probe.unlink(missing_ok=True)  # a run sweeping the tree may have taken it already
    except OSError as exc:
        raise OutputError(f"{directory}: output directory is not writable ({exc.strerror}); pass --output "
                          "with a directory you can write to") from None


def state_dir(settings: Settings) -> Path:
    """Where the journal and the lock of an output tree live."""
    return settings.state_path or settings.output_dir / ".ffb"


def open_state(settings: Settings, wait: bool, reporter: Reporter) -> tuple[RunLock, Journal]:
    """Lock the output tree (before any model loads, so a second run leaves at once) and open its journal;
    then clear what killed runs left: hidden partial outputs and old abandoned workspaces."""
    check_output_dir(settings.output_dir)
    lock = RunLock(state_dir(settings) / "lock")
    lock.acquire(wait=wait, on_wait=reporter.message)
    # With an output file (-o result.mp4) its directory is not ffb's to search: only the file's own partials.
    output_file = settings.output_file
    partials = (settings.output_dir.glob(f".{output_file.stem}.ffb-*.tmp*") if output_file
                else settings.output_path.rglob(".*.tmp*"))
    for partial in partials:
        if ".ffb-" in partial.name and partial.is_file():
            partial.unlink(missing_ok=True)
    remove_stale_workspaces(settings.temp_path)
    return lock, Journal(state_dir(settings) / "journal.sqlite")


def remove_stale_workspaces(root: Path) -> None:
    """Remove workspaces (`ffb-*`) abandoned for STALE_WORKSPACE_DAYS: their targets will not resume."""
    cutoff = time.time() - STALE_WORKSPACE_DAYS * 86400
    with contextlib.suppress(OSError):
        for workspace in root.glob("ffb-*"):
            with contextlib.suppress(OSError):
                if workspace.is_dir() and workspace.stat().st_mtime < cutoff:
                    shutil.rmtree(workspace, ignore_errors=True)


def job_options(settings: Settings, timings: Timings | None = None) -> JobOptions:
    threads = settings.execution_thread_count
    return JobOptions(temp_root=settings.temp_path, chunk_size=settings.chunk_size,
                      frame_format=settings.temp_frame_format, threads=threads,
                      in_flight=threads * settings.execution_queue_count, transport=settings.frame_transport,
                      encode=EncodeOptions(settings.output_video_encoder, settings.output_video_preset,
                                           settings.output_video_quality), timings=timings)


# Settings that shape an output (the rest only change speed, paths or logging).
_SHAPING = ("face_swapper_model", "face_detector_model", "face_detector_size", "face_detector_score",
            "face_detector_min_size", "keypoint_reuse", "reuse_motion_threshold", "redetect_interval",
            "face_selector_mode", "reference_face_distance", "output_video_encoder", "output_video_preset",
            "output_video_quality", "output_image_quality", "output_marking", "chunk_size",
            "output_provenance", "visible_label", "visible_label_position", "visible_label_size",
            "visible_label_opacity")


def _when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def os_reason(target: Target, exc: OSError) -> str:
    return guard.os_reason(target.path, exc)


def refuse_special(target: Target) -> None:
    """Raise for a target that is no regular file (a FIFO, a device, a link to /dev/zero): reading it would
    never end."""
    reason = not_regular(target.path)
    if reason:
        raise TargetError(reason)


def claim(journal: Journal, target: Target, output_key: str, force: bool, retry_failed: bool,
          hashed: str | None = None) -> tuple[Outcome | None, str, str]:
    """The journal's decision on a target: (an outcome when it is skipped or can't be read, else None; its
    content hash; its resume key). A target to be done is recorded as `running` (the caller records the end).
    `hashed` is the file's sha256 when it was computed ahead of time. A target that can't be read at all is
    recorded as failed, so later runs skip it until it changes (a chmod counts)."""
    try:
        content = journal.cached_hash(target.path)
        if content is None:
            refuse_special(target)  # before any read
            content = hashed or sha256_of(target.path)
    except (TargetError, OSError) as exc:
        reason = guard.failure_reason(target.path, exc)
        with contextlib.suppress(OSError, sqlite3.Error):  # e.g. nothing at all at that path any more
            journal.record(target.path, target.output, UNREADABLE, output_key, "failed", reason)
        return Outcome(str(target.path), "failed", reason=reason), UNREADABLE, ""
    skip = _skip(journal, target, content, output_key, force, retry_failed)
    if skip is not None:
        return skip, content, ""
    journal.record(target.path, target.output, content, output_key, "running")
    return None, content, settings_key({"content": content, "settings": output_key, "output": str(target.output)})


def _skip(journal: Journal, target: Target, content: str | None, output_key: str, force: bool,
          retry_failed: bool) -> Outcome | None:
    """The skip outcome the journal gives a target with this content hash (None: unknown, i.e. changed).
    A changed or new target is always work; `retry_failed` also retries unchanged failures."""
    entry = None if force or content is None else journal.is_current(target.path, target.output, content,
                                                                       output_key)
    last_failed = entry is not None and entry.status == "failed"
    if entry and entry.status in FINISHED:
        return Outcome(str(target.path), "skipped", str(target.output),
                       f"unchanged since it was {entry.status} ({_when(entry.updated)}); --force redoes it")
    if last_failed and not retry_failed:
        return Outcome(str(target.path), "skipped",
                       reason=f"failed before and unchanged; --retry-failed tries again: {entry.reason}")
    return None


def needs_hash(journal: Journal | None, target: Target) -> bool:
    """Whether the journal will have to hash `target` (it has no current value for the file)."""
    if journal is None:
        return False
    try:
        return journal.cached_hash(target.path) is None
    except OSError:
        return False


def prepare_first(settings: Settings, specs: Sequence[str], journal: Journal | None) -> Lookahead:
    """A Lookahead already preparing the batch's first video (hash, probe, decoder), to be handed to
    `Batch.run`: started before the engine is built, it is ready when the models have loaded."""
    lookahead = Lookahead(settings.temp_path)
    try:
        targets, _ = discover(specs, settings.output_dir, settings.output_file)
    except Exception:  # noqa: BLE001 - run() meets it again and reports it
        return lookahead
    first = next((t for t in targets if t.kind == "video"), None)
    if first is not None:
        lookahead.prepare(first.path, hash_content=needs_hash(journal, first))
        lookahead.current_decoded()  # no decoder runs yet
    return lookahead


class Batch:
    """Holds the engine, the prepared source and the selection for a run over many targets."""

    def __init__(self, settings: Settings, source: Path, reporter: Reporter,
                 engine: FaceEngine | None = None) -> None:
        self.settings = settings
        self.reporter: Reporter = GuardedReporter(reporter)  # a display failure never ends the batch
        self.timings: Timings | None = None  # set by callers that measure stages (ffb benchmark)
        check_output_dir(settings.output_dir)
        use_ffmpeg(settings.ffmpeg_path)  # this process's ffmpeg (a Ray or benchmark worker's too)
        apply_memory_limit(settings.system_memory_limit)
        self.engine = engine or build_engine(settings)
        self.source: Record = self.engine.prepare_source(source)
        faces_in_source = int(self.source.get("faces", 1))
        if faces_in_source > 1:
            self.reporter.message(f"{source}: {faces_in_source} faces in the source image; using the largest")
        self.selection: Selection = build_selection(settings, self.engine)
        source_sha256 = sha256_of(source)
        self.marker = Marker.for_run(settings, self.engine.name, self.engine.models, source_sha256)
        self.tags = self.marker.tags
        self.label = (VisibleLabel(settings.visible_label, settings.visible_label_position,
                                   settings.visible_label_size, settings.visible_label_opacity)
                      if settings.visible_label else None)
        self.output_key = settings_key(self._output_shaping(source_sha256))
        # Set while `run` goes through its targets: the next video is made ready during the current one.
        self._lookahead: Lookahead | None = None
        # The next video to prepare, and whether it needs hashing.
        self._following: Callable[[], tuple[Target, bool] | None] | None = None

    def _output_shaping(self, source_sha256: str) -> dict:
        """Everything an output depends on besides the target itself (the journal's settings key)."""
        s = self.settings
        models = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in self.engine.model_files]
        reference = s.reference_face_path
        return {
            "version": __version__, "engine": self.engine.name, "models": models,
            "source": source_sha256, "reference": sha256_of(reference) if reference else None,
            "provenance": self.marker.key, **{name: getattr(s, name) for name in _SHAPING},
        }

    def new_gate(self) -> MotionGate:
        s = self.settings
        return MotionGate(s.keypoint_reuse, s.reuse_motion_threshold, s.redetect_interval, TrackState())

    def analyse(self, frame: np.ndarray, reference: Reference) -> None:
        """Detect the faces of a new reference frame and keep what tracking needs; frames waiting on the
        reference get the result, or the failure."""
        try:
            with timed(self.timings, "detect"):
                faces = self.engine.detect(frame)
            with timed(self.timings, "track"):
                patches = face_patches(frame, faces) if self.settings.keypoint_reuse else []
        except BaseException as exc:
            reference.result.set_exception(exc)
            raise
        reference.result.set_result((faces, patches))

    def __call__(self, frame: np.ndarray, reference: Reference, is_new: bool, index: int | None = None
                 ) -> tuple[np.ndarray, int]:
        """Process frame `index` of a video: a new reference is analysed (unless that was done ahead), any
        other frame tracks the reference's faces; the faces then join their face tracks (in frame order)."""
        tracks = reference.tracks if index is not None else None
        # Cuts are looked for on reference frames only: the gate makes every frame that changed that much a
        # new reference, and has its thumbnail already.
        thumb = reference.thumb if is_new else None
        try:
            faces, detected = self._faces(frame, reference, is_new)
        except BaseException:
            if tracks is not None:
                tracks.skip(index)
            raise
        if tracks is None:
            return self.swap(frame, faces)
        with tracks.turn(index, frame.shape) as tracker, timed(self.timings, "track"):
            # Look again where a tracked face should be before declaring it gone.
            missing = [] if thumb is not None and tracker.cut(thumb) else tracker.missing(index, faces)
            refits = self.engine.refit(frame, missing) if missing else []
            tracked = tracker.update(index, faces, detected, thumb, refits)
            chosen = self.selection.pick_tracked(frame, tracked, tracker, detected, self.engine)
        return self.swap_faces(frame, chosen)

    def _faces(self, frame: np.ndarray, reference: Reference, is_new: bool) -> tuple[list, bool]:
        """The frame's faces, and whether they were detected on it (not moved from a reference)."""
        if is_new:
            if not reference.ahead:
                self.analyse(frame, reference)
            return reference.result.result()[0], True
        ref_faces, patches = reference.result.result()
        with timed(self.timings, "track"):
            faces = track(ref_faces, patches, frame) if ref_faces else []
        if faces is None:
            with timed(self.timings, "detect"):
                return self.engine.detect(frame), True
        return faces, False

    def frame(self, frame: np.ndarray) -> tuple[np.ndarray, int]:
        """Process a single picture: detect, select, swap."""
        with timed(self.timings, "detect"):
            faces = self.engine.detect(frame)
        return self.swap(frame, faces)

    def swap(self, frame: np.ndarray, faces: list) -> tuple[np.ndarray, int]:
        with timed(self.timings, "swap"):
            faces = self.selection.pick(frame, faces, self.engine)
        return self.swap_faces(frame, faces)

    def swap_faces(self, frame: np.ndarray, faces: list) -> tuple[np.ndarray, int]:
        with timed(self.timings, "swap"):
            if faces:
                frame = self.engine.swap(frame, faces, self.source)
        if faces and self.timings is not None:
            self.timings.count("faces", len(faces))
        if self.label is not None:
            frame = self.label.draw(frame)
        return frame, len(faces)

    def seal(self, target: Path, content: str | None = None) -> Seal:
        """How a finished output of `target` is moved into place: signed first where this run signs
        (`content` is the target's sha256 when known)."""
        return functools.partial(self.marker.place, parent=target, parent_sha256=content or None)

    def run(self, specs: Sequence[str], journal: Journal | None = None, force: bool = False,
            retry_failed: bool = False, lookahead: Lookahead | None = None) -> BatchResult:
        """Process every target. With a journal, unchanged finished targets are skipped (`force` redoes
        them), earlier failures are skipped until their file changes (`retry_failed` runs them again).
        No exception from one target ends the batch: it becomes that target's failure. Only an interruption
        (KeyboardInterrupt, SystemExit) ends it early, with `interrupted` set.

        While one video is being processed the next is prepared (see Lookahead; pass one from
        `prepare_first` to have the first video prepared while the engine loaded), and once its frames are
        done it is joined, verified and renamed on a thread of its own while the next one starts."""
        targets, rejected = discover(specs, self.settings.output_dir, self.settings.output_file)
        result = BatchResult(self.engine.name, list(self.engine.models), self.engine.pool.active_providers())
        result.outcomes += [Outcome(str(r.path), "failed", reason=f"{r.path}: {r.reason}") for r in rejected]
        for outcome in result.outcomes:
            self.reporter.message(outcome.reason)
        self.reporter.expect(len(targets))
        finishing: _Finishing | None = None
        current: Target | None = None  # the target being started (named when interrupted)
        try:
            with lookahead or Lookahead(self.settings.temp_path) as self._lookahead, \
                    ThreadPoolExecutor(1, thread_name_prefix="ffb-finish") as finisher:
                try:
                    for index, target in enumerate(targets):
                        current = target
                        self._following = functools.partial(self._next_to_run, targets[index + 1:], journal,
                                                            force, retry_failed)
                        begun = self._guarded(target, journal, functools.partial(
                            self._claim_and_begin, target, journal, force, retry_failed))
                        if finishing is not None:
                            current = finishing.target  # an interruption now cuts this one's finishing
                            result.outcomes.append(self._settle(finishing, journal))
                            finishing = None
                        if isinstance(begun, Outcome):  # skipped, or unreadable before it began
                            self._report(begun)
                            result.outcomes.append(begun)
                        else:
                            finishing = _Finishing(target, begun[1], finisher.submit(begun[0]))
                        current = None
                except BaseException:
                    if finishing is not None:  # also on Ctrl-C: the output being joined is completed
                        cut, current = current, finishing.target  # named if its own finishing was cut
                        result.outcomes.append(self._settle(finishing, journal, interrupted=True))
                        current = cut
                    raise
                if finishing is not None:
                    current = finishing.target
                    result.outcomes.append(self._settle(finishing, journal))
        except (KeyboardInterrupt, SystemExit):
            result.interrupted = True
            result.outcomes.append(Outcome(str(current.path) if current else "(batch)", "failed", reason=INTERRUPTED))
        finally:
            self._lookahead = self._following = None
        result.source_embeddings_computed = self.engine.cache.computed
        result.detector_calls = self.engine.detector_calls()
        result.providers = self.engine.pool.active_providers()
        return result

    def _next_to_run(self, rest: Sequence[Target], journal: Journal | None, force: bool, retry_failed: bool
                     ) -> tuple[Target, bool] | None:
        """The next video of the batch that `claim` is expected to let run, judged without hashing it (a file
        whose size or mtime changed counts as changed), and whether the journal will have to hash it."""
        for target in rest:
            if target.kind != "video":
                continue
            if journal is None:
                return target, False
            try:
                cached = journal.cached_hash(target.path)
            except OSError:
                return target, False  # claim will report it
            if _skip(journal, target, cached, self.output_key, force, retry_failed) is None:
                return target, cached is None
        return None

    def _claim_and_begin(self, target: Target, journal: Journal | None, force: bool, retry_failed: bool
                         ) -> Outcome | tuple[Callable[[], Outcome], str]:
        """A skipped target's outcome, or (the completion of the begun target, its content hash)."""
        if journal is None:
            return self.begin(target), ""
        hashed = self._lookahead.content_hash(target.path) if self._lookahead else None
        skip, content, resume = claim(journal, target, self.output_key, force, retry_failed, hashed)
        if skip is not None:
            return skip
        try:
            return self.begin(target, resume, content), content
        except (KeyboardInterrupt, SystemExit):
            self._record(journal, target, content, Outcome(str(target.path), "interrupted", reason="interrupted"))
            raise

    def _guarded(self, target: Target, journal: Journal | None,
                 work: Callable[[], Outcome | tuple[Callable[[], Outcome], str]]
                 ) -> Outcome | tuple[Callable[[], Outcome], str]:
        """`work` for one target; whatever it raises (short of an interruption) is that target's failure,
        journaled here (the caller reports it)."""
        try:
            return work()
        except Exception as exc:  # noqa: BLE001 - one target's failure, whatever it is, is not the batch's
            outcome = Outcome(str(target.path), "failed", reason=guard.failure_reason(target.path, exc))
            self._record(journal, target, UNREADABLE, outcome)
            return outcome

    def _settle(self, finishing: _Finishing, journal: Journal | None, interrupted: bool = False) -> Outcome:
        """Wait for a target's completion, then report and journal its outcome (on the batch's thread).
        A failure while the run is being interrupted is journaled as interrupted, not failed: Ctrl-C in a
        terminal also kills ffb's ffmpeg processes, so the failure may be the signal's, and the next run
        must try again."""
        outcome = finishing.future.result()
        self._report(outcome)
        if interrupted and outcome.status == "failed":
            outcome.reason += " (while the run was interrupted: the next run tries again)"
            self._record(journal, finishing.target, finishing.content,
                         dataclasses.replace(outcome, status="interrupted"))
        else:
            self._record(journal, finishing.target, finishing.content, outcome)
        return outcome

    def _record(self, journal: Journal | None, target: Target, content: str, outcome: Outcome) -> None:
        """Journal a target's outcome; a journal that can't be written is said, and the batch goes on."""
        if journal is None:
            return
        try:
            journal.record(target.path, target.output, content, self.output_key, outcome.status, outcome.reason,
                           outcome.frames, outcome.seconds)
        except Exception as exc:  # noqa: BLE001 - the outcome is in the summary; next run redoes the target
            self.reporter.message(guard.one_line(f"{target.path}: not recorded in the journal "
                                                 f"({type(exc).__name__}: {exc}); the next run does it again"))

    def _report(self, outcome: Outcome) -> None:
        self.reporter.finish(outcome.status, outcome.target)
        if outcome.status == "failed":
            self.reporter.message(outcome.reason)

    def one(self, target: Target, resume_key: str | None = None) -> Outcome:
        """Process one target to the end and report it."""
        outcome = self.begin(target, resume_key)()
        self._report(outcome)
        return outcome

    def begin(self, target: Target, resume_key: str | None = None, content: str | None = None
              ) -> Callable[[], Outcome]:
        """Process a target's frames; returns its completion: a call (safe on another thread, and to be
        made exactly once) that finishes the output and gives the outcome. Nothing is reported here.
        `content` is the target's sha256 when the journal has it (recorded in the output's manifest)."""
        started = time.perf_counter()
        calls = self.engine.detector_calls()
        lookahead = self._lookahead

        def failed(exc: Exception) -> Outcome:
            reason = (guard.disk_full_reason(target.path, exc, self.settings.temp_path, target.output)
                      or guard.failure_reason(target.path, exc))
            return Outcome(str(target.path), "failed", reason=reason, seconds=time.perf_counter() - started)

        def outcome(swapped: int, frames: int, note: str) -> Outcome:
            status = "done" if swapped else "no_face"
            return Outcome(str(target.path), status, str(target.output), note if swapped else NO_FACE, frames,
                           time.perf_counter() - started, calls_made)

        try:
            refuse_special(target)
            prepared = lookahead.take(target.path) if lookahead and target.kind == "video" else None
            self._prepare_following()
            prepare_output(self.settings.output_dir, target.output, target.path)
            if target.kind == "image":
                self.reporter.start(str(target.path), 1)
                swapped, note = self.image(target, content)
                calls_made = self.engine.detector_calls() - calls
                return lambda: outcome(swapped, 1, note)
            encoded = encode_video(target.path, target.output, self, self.tags,
                                   job_options(self.settings, self.timings), self.reporter.advance,
                                   lambda total: self.reporter.start(str(target.path), total), resume_key,
                                   prepared, lookahead.current_decoded if lookahead else None,
                                   self.seal(target.path, content))
            calls_made = self.engine.detector_calls() - calls
        except Exception as exc:  # noqa: BLE001 - see run: the target's failure
            result = failed(exc)
            return lambda: result
        finally:
            self.engine.pool.after_target()

        def complete() -> Outcome:
            try:
                counters = encoded.finish()
            except Exception as exc:  # noqa: BLE001 - see run: the target's failure
                return failed(exc)
            note = counters.note
            if counters.resumed_frames:
                note = "; ".join(filter(None, [f"resumed: {counters.resumed_frames} frames reused from an "
                                               "interrupted run", note]))
            return outcome(counters.frames_with_faces, counters.frames, note)

        return complete

    def _prepare_following(self) -> None:
        """Have the lookahead make the next video ready. Only speed depends on it: when it fails, that video
        is prepared in its turn, and fails there if it must."""
        if self._lookahead is None or self._following is None:
            return
        try:
            following = self._following()
            if following:
                self._lookahead.prepare(following[0].path, hash_content=following[1])
        except Exception:  # noqa: BLE001 - see above; an interruption still ends the run
            pass

    def image(self, target: Target, content: str | None = None) -> tuple[int, str]:
        """Swap one image target (every frame of an animated one; alpha kept, see media) into its output;
        returns (faces swapped, note for the summary)."""
        picture = read_picture(target.path, error=MediaError)
        frames, swapped = [], 0
        for frame in picture.frames:
            frame, faces = self.frame(frame)
            frames.append(frame)
            swapped += faces
        notes: list[str] = []
        if swapped:
            seal = self.seal(target.path, content)
            write_picture(picture.with_frames(frames), target.output, self.settings.output_image_quality,
                          self.tags or None, lambda partial, output: notes.append(seal(partial, output, True)))
        else:
            partial = temp_name(target.output)
            partial.unlink(missing_ok=True)  # copyfile would write through a link planted there
            shutil.copyfile(target.path, partial)
            partial.replace(target.output)
        self.reporter.advance(1)
        return swapped, "; ".join(filter(None, notes))

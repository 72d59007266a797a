"""Segments and joins made in this process, as a Ray worker makes them."""
from __future__ import annotations

import errno
import json
import os

import numpy as np
import pytest

from conftest import decode_all, make_clip
from facefusion_batch.cli import main
from facefusion_batch.executors.work_items import Join, Segment
from facefusion_batch.workflow import job
from facefusion_batch.workflow.job import join as join_segments, segment as encode_segment
from facefusion_batch.workflow import finish, video, video_plan
from facefusion_batch.workflow import processor as processor_module
from facefusion_batch.workflow.outcome import Outcome
from facefusion_batch.workflow.processor import prepare
from facefusion_batch.workflow.workspace import Workspace
from facefusion_batch.settings import load_settings
from facefusion_batch.targets import Target
from facefusion_batch.video.probe import probe


def test_segments_and_join_use_the_drivers_probe(env, source_image, monkeypatch):
    """The driver probed the video: a worker must not read the whole file again per segment."""
    clip = make_clip(env / "v.mp4", frames=25)
    info = probe(clip)
    settings = load_settings(None, os.environ, {"chunk_size": 10, "output_path": env / "out"}).settings
    batch = prepare(settings, source_image, print)
    (env / "out").mkdir()
    probed = []
    real = video_plan.probe
    for module in (video_plan, finish, job, processor_module):  # every place a worker could probe from
        monkeypatch.setattr(module, "probe", lambda path: probed.append(path) or real(path))
    target, shared = Target(clip, "video", env / "out" / "v.mp4"), Workspace(env / "shared")
    for first, last in ((0, 2), (2, None)):
        assert encode_segment(batch, Segment(target, "k", first, last, info), shared, lambda n: None).status == "done"
    staged = env / "out" / ".v.staged.mp4"
    outcome = join_segments(batch, Join(target, "k", staged, info), shared)
    assert outcome.status == "done" and outcome.frames == 25
    assert clip not in probed and len(probed) == 1, "only the joined output is probed, to verify it"
    assert main(["run", "-s", str(source_image), "-t", str(clip), "-o", str(env / "whole"), "--chunk-size", "10",
                 "-q"]) == 0
    assert np.array_equal(decode_all(staged), decode_all(env / "whole" / "v.mp4"))


def _segment_setup(env, source_image):
    clip = make_clip(env / "v.mp4", frames=12)
    settings = load_settings(None, os.environ, {"chunk_size": 10, "output_path": env / "out"}).settings
    (env / "out").mkdir()
    target = Target(clip, "video", env / "out" / "v.mp4")
    return prepare(settings, source_image, print), target, probe(clip), Workspace(env / "shared")


@pytest.mark.parametrize("error, says", [
    (RuntimeError("boom"), "unexpected RuntimeError"),
    (KeyError("k"), "unexpected KeyError"),
    (OSError(errno.ENOSPC, "No space left on device"), "temp disk full"),
])
def test_a_worker_item_failure_of_any_kind_is_that_items_one_line(env, source_image, monkeypatch, error, says):
    """As in the local executor: whatever a segment or join raises becomes its failed Outcome naming the
    target, not an exception that reaches the Ray driver as a crashed task."""
    batch, target, info, shared = _segment_setup(env, source_image)

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(video, "encode_chunks", fail)
    outcome = encode_segment(batch, Segment(target, "k", 0, None, info), shared, lambda n: None)
    assert outcome.status == "failed" and says in outcome.reason and str(target.path) in outcome.reason
    assert "\n" not in outcome.reason
    monkeypatch.setattr(video, "finish_video", fail)
    outcome = join_segments(batch, Join(target, "k", env / "out" / ".v.staged.mp4", info), shared)
    assert outcome.status == "failed" and says in outcome.reason


@pytest.mark.parametrize("signal_like", [KeyboardInterrupt, SystemExit])
def test_a_worker_never_swallows_an_interruption(env, source_image, monkeypatch, signal_like):
    batch, target, info, shared = _segment_setup(env, source_image)

    def interrupt(*args, **kwargs):
        raise signal_like()

    monkeypatch.setattr(video, "encode_chunks", interrupt)
    with pytest.raises(signal_like):
        encode_segment(batch, Segment(target, "k", 0, None, info), shared, lambda n: None)


class _Finished:
    """The driver's side, as the Ray executor's `_done` sees it: what it was told of each target."""

    def __init__(self) -> None:
        self.outcomes: dict[int, object] = {}

    def finished(self, index, outcome, journal_status=None) -> None:
        self.outcomes[index] = outcome


def test_a_split_video_on_ray_reports_the_faces_left_in_profile_as_a_whole_one(env, source_image, monkeypatch,
                                                                                capsys):
    """Segments count the face-frames the offline engine left in profile; the Ray executor sums them into the
    joined video's outcome (count and note), as the local executor reports them for the whole video."""
    from facefusion_batch.executors import pooled, ray_executor
    from facefusion_batch.executors.ray_pool import Done
    from facefusion_batch.offline import classic

    monkeypatch.setattr(classic, "PROFILE", -1.0)  # every face counts as turned too far
    clip = make_clip(env / "v.mp4", frames=25)
    settings = load_settings(None, os.environ, {"engine": "offline", "chunk_size": 10,
                                                "output_path": env / "out"}).settings
    processor = prepare(settings, source_image, print)
    (env / "out").mkdir()
    info, target, shared = probe(clip), Target(clip, "video", env / "out" / "v.mp4"), Workspace(env / "shared")
    items = [Segment(target, "k", 0, 2, info), Segment(target, "k", 2, None, info),
             Join(target, "k", env / "out" / ".v.staged.mp4", info)]
    outcomes = [encode_segment(processor, items[0], shared, lambda n: None),
                encode_segment(processor, items[1], shared, lambda n: None)]
    assert [o.profiles_left for o in outcomes] == [20, 5]
    outcomes.append(join_segments(processor, items[2], shared))
    executor = ray_executor.RayExecutor(settings, source_image)
    work = executor._work = _Finished()
    job = pooled._Job(0, target, target, "k", split=True, pieces=2)
    for dispatch, (item, outcome) in enumerate(zip(items, outcomes)):
        executor.attempts[dispatch] = pooled._Task(job, item, sent=item, dispatch=dispatch)
        executor._done(Done(None, dispatch, outcome))
    whole = work.outcomes[0]
    assert whole.status == "done" and whole.profiles_left == 25
    assert ("25 face-frames turned too far to swap (near profile, turned with a fit that will not hold still, or too "
            "faint a change to show the source) left as they are") in whole.reason
    assert main(["run", "--engine", "offline", "-s", str(source_image), "-t", str(clip), "-o", str(env / "whole"),
                 "--chunk-size", "10", "-q", "--json"]) == 0
    local = json.loads(capsys.readouterr().out)["outcomes"][0]
    assert (local["profiles_left"], local["reason"]) == (whole.profiles_left, whole.reason), "as the local executor"


def test_a_whole_target_on_ray_keeps_its_own_profile_note(env, source_image, monkeypatch):
    from facefusion_batch.executors import pooled, ray_executor
    from facefusion_batch.executors.work_items import Whole
    from facefusion_batch.executors.ray_pool import Done

    settings = load_settings(None, os.environ, {"output_path": env / "out"}).settings
    target = Target(env / "p.png", "image", env / "out" / "p.png")
    (env / "out").mkdir()
    staged = env / "out" / ".p.staged.png"
    staged.write_bytes(b"png")
    note = ("1 face-frame turned too far to swap (near profile, turned with a fit that will not hold still, or "
            "too faint a change to show the source) left as they are")
    executor = ray_executor.RayExecutor(settings, source_image)
    work = executor._work = _Finished()
    job = pooled._Job(0, target, target, "k")
    item = Whole(target, staged, "k")
    executor.attempts[0] = pooled._Task(job, item, sent=item, dispatch=0)
    executor._done(Done(None, 0, Outcome(str(target.path), "done", str(staged), note, 1, profiles_left=1)))
    assert (work.outcomes[0].reason, work.outcomes[0].profiles_left) == (note, 1)


def test_a_ray_output_is_not_placed_when_its_target_was_replaced_meanwhile(env, source_image):
    """Issue 26, class 1: the driver checks the target is still what was read before it places the staged
    output a worker made."""
    from facefusion_batch.executors import pooled, ray_executor
    from facefusion_batch.executors.work_items import Whole
    from facefusion_batch.executors.ray_pool import Done
    from facefusion_batch.workflow.identity import Pin

    settings = load_settings(None, os.environ, {"output_path": env / "out"}).settings
    target = Target(env / "p.png", "image", env / "out" / "p.png")
    target.path.write_bytes(b"the picture that was read")
    (env / "out").mkdir()
    staged = env / "out" / ".p.staged.png"
    staged.write_bytes(b"png")
    executor = ray_executor.RayExecutor(settings, source_image)
    work = executor._work = _Finished()
    job = pooled._Job(0, target, target, "k", pin=Pin.now(target.path, "0" * 64))
    (env / "upload.png").write_bytes(b"another picture, renamed over it")
    os.replace(env / "upload.png", target.path)
    item = Whole(target, staged, "k")
    executor.attempts[0] = pooled._Task(job, item, sent=item, dispatch=0)
    executor._done(Done(None, 0, Outcome(str(target.path), "done", str(staged), "", 1)))
    outcome = work.outcomes[0]
    assert outcome.status == "failed" and "changed while it was processed" in outcome.reason
    assert outcome.cause == "changed" and not target.output.exists() and not staged.exists()


def test_a_join_takes_no_reference_face(env, source_image, monkeypatch):
    """Reference mode without a reference photo: each segment takes the target's reference face (it swaps
    frames), the join only joins: it must not decode the reference frame and detect its faces again."""
    clip = make_clip(env / "v.mp4", frames=25)
    info = probe(clip)
    settings = load_settings(None, os.environ, {"chunk_size": 10, "output_path": env / "out", "engine": "neural",
                                                "face_selector_mode": "reference"}).settings
    batch = prepare(settings, source_image, print)
    (env / "out").mkdir()
    decoded = []
    real = processor_module.frame_at
    monkeypatch.setattr(processor_module, "frame_at", lambda *a, **k: decoded.append(a[1]) or real(*a, **k))
    target, shared = Target(clip, "video", env / "out" / "v.mp4"), Workspace(env / "shared")
    for first, last in ((0, 2), (2, None)):
        assert encode_segment(batch, Segment(target, "k", first, last, info), shared, lambda n: None).status == "done"
    assert decoded == [0, 0]
    outcome = join_segments(batch, Join(target, "k", env / "out" / ".v.staged.mp4", info), shared)
    assert outcome.status == "done" and outcome.frames == 25
    assert decoded == [0, 0], "the join decoded the reference frame again"

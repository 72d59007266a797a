"""`--face-selector-mode one` keeps its person across chunk boundaries (issue 13): the chosen face's box is
handed over to the next chunk, in memory and recorded with the finished chunk, unless a cut is there."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from conftest import astronaut_face, decode_all, grace_hopper
from facefusion_batch.faces.tracking import Handover, Tracker
from facefusion_batch.faces.types import Face
from facefusion_batch.workflow import chunks as chunks_phase
from facefusion_batch.workflow import video_plan
from facefusion_batch.workflow.video_plan import job_options
from facefusion_batch.workflow.processor import prepare
from facefusion_batch.workflow.workspace import Workspace
from facefusion_batch.settings import load_settings
from facefusion_batch.video.ffmpeg import SWS_FLAGS, ffmpeg_binary

W, H, FRAMES, CHUNK = 480, 272, 20, 10
LEFT, RIGHT = (80, 85, 160, 175), (318, 80, 402, 175)  # where the two faces are (x1, y1, x2, y2), all frames


def two_faces(t: int, cut: bool) -> np.ndarray:
    """Frame `t`: the astronaut on the left shrinks, her mirror image on the right grows; the right one is the
    larger from frame ~7 on. With `cut`, frames from CHUNK on are another shot (another background) where
    it is the other way round: the right one starts larger, the left is the larger from frame ~CHUNK + 7."""
    rng = np.random.default_rng(1)
    frame = cv2.GaussianBlur(rng.integers(40, 200, (H, W, 3), dtype=np.uint8), (0, 0), 3)
    left, right = round(150 - 1.5 * t), round(128 + 1.5 * t)
    if cut and t >= CHUNK:
        frame = 255 - frame // 3
        left, right = round(128 + 1.5 * (t - CHUNK)), round(150 - 1.5 * (t - CHUNK))
    face = astronaut_face()
    for image, height, centre in ((face, left, 120), (face[:, ::-1], right, 360)):
        width = round(height * image.shape[1] / image.shape[0])
        x, y = centre - width // 2, (H - height) // 2
        frame[y:y + height, x:x + width] = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
    return frame


def make_two_face_clip(path: Path, cut: bool = False, frames: int = FRAMES) -> Path:
    command = [ffmpeg_binary(), "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "bgr24", "-s", f"{W}x{H}",
               "-r", "25", "-i", "-", *SWS_FLAGS, "-c:v", "libx264", "-preset", "ultrafast", "-crf", "12",
               "-pix_fmt", "yuv420p", str(path)]
    subprocess.run(command, input=b"".join(two_faces(t, cut).tobytes() for t in range(frames)), check=True)
    return path


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """The offline engine (real face detection) in mode `one`, chunks of CHUNK frames, a Grace Hopper source."""
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    monkeypatch.setenv("FFB_TEMP_PATH", str(tmp_path / "tmp"))
    monkeypatch.setenv("FFB_EXECUTION_THREAD_COUNT", "2")
    source = tmp_path / "grace.png"
    cv2.imwrite(str(source), grace_hopper())
    settings = load_settings(None, os.environ, {"engine": "offline", "face_selector_mode": "one",
                                                "chunk_size": CHUNK, "output_path": tmp_path / "out"}).settings
    (tmp_path / "out").mkdir()
    processor = prepare(settings, source, print)
    yield settings, processor
    processor.engine.close()


def encode(settings, processor, clip: Path, workspace: Workspace, last: int | None = None) -> np.ndarray:
    plan = video_plan.plan_video(clip, clip.with_suffix(".out.mp4"), job_options(settings))
    # the processor for this target, as job.begin and the Ray worker use it (with the target's watermark)
    chunks_phase.encode_chunks(plan, workspace.make(), processor.for_target(clip), lambda n: None, last=last)
    chunks = range(-(-plan.info.frame_count // CHUNK))
    return np.concatenate([decode_all(workspace.chunk(i)) for i in chunks if workspace.finished(i)])


def swapped(output: np.ndarray, clip: Path) -> list[str]:
    """Per frame, which face was swapped: L, R, or '' (the other region is left as it was)."""
    original = decode_all(clip).astype(np.int16)
    which = []
    for out, before in zip(output.astype(np.int16), original):
        changed = [float(np.abs(out[y1:y2, x1:x2] - before[y1:y2, x1:x2]).mean()) for x1, y1, x2, y2 in (LEFT, RIGHT)]
        which.append("".join(name for name, change in zip("LR", changed) if change > 4.0))
    return which


def test_one_keeps_the_face_it_chose_in_the_chunk_before(tmp_path, offline):
    clip = make_two_face_clip(tmp_path / "pair.mp4")
    which = swapped(encode(*offline, clip, Workspace(tmp_path / "ws")), clip)
    assert which == ["L"] * FRAMES, "the right face became the larger in chunk 2, same shot: the left stays"


def test_after_a_cut_at_the_boundary_one_chooses_afresh_and_keeps_that(tmp_path, offline):
    clip = make_two_face_clip(tmp_path / "cut.mp4", cut=True, frames=3 * CHUNK)
    which = swapped(encode(*offline, clip, Workspace(tmp_path / "ws")), clip)
    # A new shot at frame CHUNK: its largest face (the right one), kept into the third chunk, where the left
    # one has become the larger.
    assert which == ["L"] * CHUNK + ["R"] * (2 * CHUNK)


def test_a_resumed_run_hands_over_what_an_uninterrupted_one_does(tmp_path, offline):
    clip = make_two_face_clip(tmp_path / "pair.mp4")
    whole = encode(*offline, clip, Workspace(tmp_path / "whole"))
    resumed = Workspace(tmp_path / "resumed")
    encode(*offline, clip, resumed, last=1)  # stopped after the first chunk: the next run goes on from its record
    assert resumed.finished(0) and not resumed.finished(1)
    assert resumed.handover(0) is not None
    again = encode(*offline, clip, resumed)
    assert np.array_equal(again, whole), "frame for frame"
    assert swapped(again, clip) == ["L"] * FRAMES


def box_face(x: float, y: float, size: float) -> Face:
    box = np.array([x, y, x + size, y + size], np.float32)
    kps = np.array([[x + size * u, y + size * v] for u, v in
                    ((0.3, 0.4), (0.7, 0.4), (0.5, 0.6), (0.35, 0.8), (0.65, 0.8))], np.float32)
    return Face(box=box, kps=kps, score=0.9)


SCENE = np.random.default_rng(0).uniform(0, 255, (54, 96)).astype(np.float32).round()


@pytest.mark.parametrize("order", ["large-small", "left-right"])
def test_the_first_choice_after_a_handover_is_the_face_over_its_box(order):
    from facefusion_batch.engines.base import Selection

    faces = [box_face(100, 100, 130), box_face(600, 100, 120)]  # the first is the larger and the left-most
    tracker = Tracker(2000, 1000, handover=Handover((605.0, 100.0, 725.0, 222.0), SCENE))
    tracked = tracker.update(0, faces, detected=True, thumb=SCENE + 3)
    (chosen,) = Selection("one", order=order).pick_tracked(SCENE, tracked, tracker, True, None)
    assert chosen.box[0] == pytest.approx(600)
    assert Handover.from_json(tracker.handover().to_json()).box == pytest.approx((600, 100, 720, 220))
    fresh = Tracker(2000, 1000)  # no handover: the order decides
    (chosen,) = Selection("one", order=order).pick_tracked(SCENE, fresh.update(0, faces, True, SCENE), fresh, True, None)
    assert chosen.box[0] == pytest.approx(100)


def test_a_handover_is_dropped_at_a_cut_and_when_no_face_is_over_its_box():
    faces = [box_face(600, 100, 130), box_face(100, 100, 120)]
    cut = Tracker(2000, 1000, handover=Handover((100.0, 100.0, 220.0, 220.0), SCENE))
    (chosen,) = cut.choose_one(cut.update(0, faces, True, thumb=np.full_like(SCENE, 250)))
    assert chosen.face.box[0] == pytest.approx(600) and cut.cuts == 1
    elsewhere = Tracker(2000, 1000, handover=Handover((1500.0, 600.0, 1620.0, 720.0), SCENE))
    (chosen,) = elsewhere.choose_one(elsewhere.update(0, faces, True, thumb=SCENE))
    assert chosen.face.box[0] == pytest.approx(600)


def test_a_handover_survives_its_record_exactly_and_a_foreign_record_is_ignored():
    handover = Handover((1.25, 2.5, 100.125, 90.0), SCENE)
    again = Handover.from_json(json.loads(json.dumps(handover.to_json())))
    assert again.box == handover.box and again.thumb.dtype == np.float32 and np.array_equal(again.thumb, SCENE)
    for foreign in (None, {}, {"box": [1, 2, 3]}, {"box": [1, 2, 3, 4], "thumb": [2, 2, "!!"]}, [1, 2]):
        assert Handover.from_json(foreign) is None


def test_a_ray_segment_chooses_afresh_at_its_start_whatever_order_segments_finish(tmp_path, offline):
    """A segment's output must not depend on whether the segment before had published its last chunk: its
    first chunk chooses afresh (a retried segment continues from its own published chunks)."""
    from facefusion_batch.executors.work_items import Segment
    from facefusion_batch.workflow.job import segment as encode_segment
    from facefusion_batch.targets import Target
    from facefusion_batch.video.probe import probe

    settings, processor = offline
    clip = make_two_face_clip(tmp_path / "pair.mp4")
    target, info = Target(clip, "video", tmp_path / "out" / "pair.mp4"), probe(clip)

    def frames(shared: Workspace) -> np.ndarray:
        return np.concatenate([decode_all(shared.chunk(i)) for i in range(FRAMES // CHUNK)])

    def segments(shared: Workspace, order: list[tuple[int, int | None]]) -> list[str]:
        for first, last in order:
            assert encode_segment(processor, Segment(target, "k", first, last, info), shared,
                                  lambda n: None).status == "done"
        return swapped(frames(shared), clip)

    in_order, reversed_ = Workspace(tmp_path / "shared"), Workspace(tmp_path / "reversed")
    assert segments(in_order, [(0, 1), (1, None)]) == ["L"] * CHUNK + ["R"] * CHUNK
    assert segments(reversed_, [(1, None), (0, 1)]) == ["L"] * CHUNK + ["R"] * CHUNK
    assert np.array_equal(frames(in_order), frames(reversed_))
    # A segment retried after its first chunk was published continues from it, as a local resume does.
    retried = Workspace(tmp_path / "retried")
    assert encode_segment(processor, Segment(target, "k", 0, 1, info), retried, lambda n: None).status == "done"
    assert segments(retried, [(0, None)]) == ["L"] * FRAMES
    whole = encode(settings, processor.for_target(clip), clip, Workspace(tmp_path / "whole"))  # watermarked as a segment
    assert np.array_equal(frames(retried), whole)

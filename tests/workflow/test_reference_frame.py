"""Reference mode without a reference photo, as FaceFusion: the reference face is the face at
reference_face_position (in face_selector_order) of each target's frame reference_frame_number (an image target:
the image itself). Facts from FaceFusion 3.8.1: workflows/core.conditional_get_reference_vision_frame,
face_selector.select_faces, face_creator.get_one_face (the last face when the position is past them)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from conftest import face_frame, decode_all
from facefusion_batch.cli import main
from facefusion_batch.faces.types import Face
from facefusion_batch.video.ffmpeg import SWS_FLAGS, ffmpeg_binary
from facefusion_batch.video.probe import probe
from facefusion_batch.video.decoder import frame_at


def write_video(path: Path, frames: list[np.ndarray]) -> Path:
    height, width = frames[0].shape[:2]
    subprocess.run([ffmpeg_binary(), "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "bgr24", "-s",
                    f"{width}x{height}", "-r", "25", "-i", "-", *SWS_FLAGS, "-c:v", "libx264", "-preset", "ultrafast",
                    "-crf", "10", "-pix_fmt", "yuv420p", str(path)], input=b"".join(f.tobytes() for f in frames),
                   check=True)
    return path


def other_face() -> np.ndarray:
    return np.roll(face_frame(), 60, axis=1)  # another face at the detector's box (tests/workflow/test_run_neural)


def run(args: list[str], capsys) -> tuple[int, dict, str]:
    code = main(["run", "--engine", "neural", "--json", "-q", "--face-selector-mode", "reference", *args])
    captured = capsys.readouterr()
    return code, json.loads(captured.out.splitlines()[-1]) if captured.out.strip() else {}, captured.err


def changed_frames(before: Path, after: Path) -> list[bool]:
    a, b = decode_all(before).astype(np.int16), decode_all(after).astype(np.int16)
    return [bool(np.abs(x - y).mean() > 2.0) for x, y in zip(a, b)]


def test_each_target_gives_its_own_reference(env, source_image, capsys):
    """Two videos of two people: each one's frame 0 is its own reference, so both are swapped; with a reference
    photo of the first person only the first is."""
    first = write_video(env / "first.mp4", [face_frame()] * 4)
    second = write_video(env / "second.mp4", [other_face()] * 4)
    targets = ["-t", str(first), "-t", str(second)]
    code, summary, err = run(["-s", str(source_image), *targets, "-o", str(env / "out")], capsys)
    assert code == 0 and summary["counts"]["done"] == 2, err
    assert all(changed_frames(video, env / "out" / video.name) == [True] * 4 for video in (first, second))
    code, summary, err = run(["-s", str(source_image), *targets, "-o", str(env / "photo"), "--reference-face",
                              str(source_image)], capsys)
    assert code == 0 and (summary["counts"]["done"], summary["counts"]["no_face"]) == (1, 1), err


def test_the_reference_frame_number_is_that_frame(env, source_image, capsys):
    """Frames 0-2 show no face, 3-5 a face: frame 0 gives no reference face (that target fails, nothing is
    written), frame 4 does."""
    blank = np.full_like(face_frame(), 90)
    clip = write_video(env / "fade.mp4", [blank] * 3 + [face_frame()] * 3)
    code, summary, err = run(["-s", str(source_image), "-t", str(clip), "-o", str(env / "out")], capsys)
    assert code == 1 and "no face in frame 0 to take as the reference face" in summary["outcomes"][0]["reason"]
    assert not (env / "out" / "fade.mp4").exists()
    code, summary, err = run(["-s", str(source_image), "-t", str(clip), "-o", str(env / "four"),
                              "--reference-frame-number", "4"], capsys)
    assert code == 0 and summary["counts"]["done"] == 1, err
    assert changed_frames(clip, env / "four" / "fade.mp4") == [False] * 3 + [True] * 3
    code, summary, err = run(["-s", str(source_image), "-t", str(clip), "-o", str(env / "past"),
                              "--reference-frame-number", "40"], capsys)
    assert code == 1 and "reference_frame_number 40 is past its 6 frames" in summary["outcomes"][0]["reason"]


def test_an_image_target_is_its_own_reference(env, source_image, capsys):
    image = env / "t.png"
    cv2.imwrite(str(image), face_frame())
    code, summary, err = run(["-s", str(source_image), "-t", str(image), "-o", str(env / "out")], capsys)
    assert code == 0 and summary["counts"]["done"] == 1, err


def test_the_offline_engine_refuses_reference_mode(offline_env, source_image, capsys):
    code = main(["run", "--engine", "offline", "-s", str(source_image), "-t", str(source_image), "-o",
                 str(offline_env / "o"), "--face-selector-mode", "reference"])
    assert code == 2 and "reference_frame_number) needs the neural engine" in capsys.readouterr().err


def test_frame_at_reads_that_frame(tmp_path):
    frames = [np.full((48, 64, 3), 20 * i, np.uint8) for i in range(6)]
    info = probe(write_video(tmp_path / "n.mp4", frames))
    assert abs(int(frame_at(info, 4, tmp_path).mean()) - 80) <= 2
    with pytest.raises(Exception, match="has no frame 6"):
        frame_at(info, 6, tmp_path)


class TwoFaces:
    """An engine's detect and embed for a frame with two faces: left (x 10..50) and right (x 100..150)."""

    def detect(self, frame: np.ndarray) -> list[Face]:
        if not frame.any():
            return []
        return [Face(np.array([100, 0, 150, 60], np.float32), 0.9, np.zeros((5, 2), np.float32)),
                Face(np.array([10, 0, 50, 40], np.float32), 0.8, np.zeros((5, 2), np.float32))]

    def embed(self, frame: np.ndarray, faces: list[Face]) -> np.ndarray:
        return np.array([[1.0, 0.0] if face.box[0] == 10 else [0.0, 1.0] for face in faces])


@pytest.mark.parametrize("order, position, expected", [
    ("left-right", 0, [1, 0]), ("left-right", 1, [0, 1]), ("left-right", 9, [0, 1]),  # past the faces: the last
    ("large-small", 0, [0, 1]), ("small-large", 0, [1, 0]), ("worst-best", 0, [1, 0]),
])
def test_the_position_counts_the_frames_faces_in_order(order, position, expected):
    from facefusion_batch.engines.base import Selection

    frame = np.ones((60, 160, 3), np.uint8)
    chosen = Selection("reference", None, 0.6, order).referring_to(frame, position, TwoFaces())
    assert chosen is not None and chosen.reference.tolist() == expected
    assert Selection("reference", None, 0.6, order).referring_to(np.zeros_like(frame), 0, TwoFaces()) is None


def test_each_video_is_probed_once_in_reference_mode(env, source_image, capsys, monkeypatch):
    """The reference frame is read with the probe the lookahead made for the video (no second probe), and a
    video whose reference frame fails lets the next one go on."""
    import importlib

    probed: list[str] = []
    for module in ("facefusion_batch.workflow.video_plan", "facefusion_batch.workflow.lookahead",
                   "facefusion_batch.workflow.processor", "facefusion_batch.workflow.finish",
                   "facefusion_batch.workflow.job"):
        loaded = importlib.import_module(module)
        original = loaded.probe
        monkeypatch.setattr(loaded, "probe", lambda path, _o=original: probed.append(Path(path).name) or _o(path))
    blank = np.full_like(face_frame(), 90)
    clips = [write_video(env / "fade.mp4", [blank] * 3 + [face_frame()] * 3),
             write_video(env / "first.mp4", [face_frame()] * 4), write_video(env / "second.mp4", [other_face()] * 4)]
    code, summary, err = run(["-s", str(source_image), *[str(c) for c in clips], "-o", str(env / "out")], capsys)
    assert code == 1 and (summary["counts"]["done"], summary["counts"]["failed"]) == (2, 1), err
    names = [c.name for c in clips]
    assert sorted(p for p in probed if p in names) == sorted(names), probed  # outputs are probed when verified

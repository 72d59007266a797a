"""The content gate: FaceFusion's nsfw_1/2/3 (stand-ins with their interfaces) or the bundled open_nsfw check
the source and each target before any swap; a flagged target is `blocked`, journaled, re-checked next run."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import c2pa
import cv2
import numpy as np
import pytest

import standins
from conftest import face_frame, grace_hopper, make_clip
from facefusion_batch.cli import main
from facefusion_batch.models.catalog import CATALOG
from facefusion_batch.provenance import content_gate as cg
from facefusion_batch.provenance.manifest import SWAP_ASSERTION

MAGENTA = (255, 0, 255)  # what the stand-ins call explicit (mean R - G of the picture above 0.3)


def magenta(height: int = 272, width: int = 480) -> np.ndarray:
    return np.full((height, width, 3), MAGENTA, np.uint8)


def run(args: list[str], capsys) -> tuple[int, dict]:
    code = main(["run", "--json", "-q", *args])
    captured = capsys.readouterr()
    summary = json.loads(captured.out) if captured.out.strip().startswith("{") else {}
    return code, {**summary, "stderr": captured.err}


def journal(out: Path) -> dict[str, tuple]:
    with sqlite3.connect(out / ".ffb" / "journal.sqlite") as db:
        rows = db.execute("SELECT target, status, reason, content_gate, watermark FROM targets").fetchall()
    return {Path(row[0]).name: row[1:] for row in rows}


def manifest_swap(path: Path) -> dict:
    with c2pa.Reader("video/mp4" if path.suffix == ".mp4" else "image/jpeg", open(path, "rb")) as reader:
        active = json.loads(reader.json())["manifests"][json.loads(reader.json())["active_manifest"]]
    return next(a["data"] for a in active["assertions"] if a["label"] == SWAP_ASSERTION)


@pytest.fixture
def gated_env(env_with, tmp_path) -> Path:
    """Offline engine, with FaceFusion's three content analysers (stand-ins) in models_path."""
    models = standins.build_nsfw_set(tmp_path / "models")
    return env_with(models, engine="offline")


# ---------------------------------------------------------------------------------------------------- units

def test_facefusion_input_fits_and_normalises_like_facefusion():
    frame = np.full((100, 200, 3), (0, 128, 255), np.uint8)  # BGR: red 255, green 128, blue 0
    tensor = cg.facefusion_input(frame, CATALOG["nsfw_2"])
    assert tensor.shape == (1, 3, 384, 384) and tensor.dtype == np.float32
    # fitted: 384 x 192 of content centred, zero padding above and below (which normalises to -1 for nsfw_2)
    assert np.allclose(tensor[0, :, 0, 0], -1.0) and np.allclose(tensor[0, :, 192, 192], [1.0, 128 / 127.5 - 1, -1])
    assert np.allclose(tensor[0, 0, 95, 192], -1.0) and np.allclose(tensor[0, 0, 96, 192], 1.0)


def test_two_of_three_flag_a_frame(tmp_path):
    """FaceFusion's rule: a frame is explicit when at least two of the three models say so."""
    from facefusion_batch.models.sessions import SessionPool
    from facefusion_batch.settings import load_settings

    for flagging, expected in ((("nsfw_1",), False), (("nsfw_1", "nsfw_3"), True), (("nsfw_2", "nsfw_3"), True),
                               ((), False)):
        models = standins.build_nsfw_set(tmp_path / "-".join(flagging or ("none",)), flagging)
        settings = load_settings(None, {}, {"models_path": models, "cache_path": tmp_path / "cache"}).settings
        gate = cg.build_gate(settings, SessionPool(settings))
        assert gate.record == "checked (nsfw_1+nsfw_2+nsfw_3)"
        assert gate.flags(magenta()) is expected, flagging
        assert gate.flags(face_frame()) is False


def test_open_nsfw_is_bundled_and_calls_real_faces_safe(tmp_path):
    """Without FaceFusion's models the gate runs Yahoo's open_nsfw shipped with ffb; real photos score safe."""
    from facefusion_batch.models.sessions import SessionPool
    from facefusion_batch.settings import load_settings
    from skimage import data

    settings = load_settings(None, {}, {"models_path": tmp_path, "cache_path": tmp_path / "cache"}).settings
    pool = SessionPool(settings)
    gate = cg.build_gate(settings, pool)
    assert gate.record == "checked (open_nsfw)"
    for photo in (data.astronaut()[:, :, ::-1], grace_hopper(), face_frame()):
        score = pool.get(cg.ASSET).run(None, {"input:0": cg.open_nsfw_input(np.ascontiguousarray(photo))})[0]
        assert score.shape == (1, 2) and abs(score.sum() - 1) < 1e-4 and score[0, 1] < 0.2
        assert gate.flags(np.ascontiguousarray(photo)) is False


def test_video_is_flagged_above_ten_percent_of_one_frame_a_second(tmp_path):
    """Samples are the frames whose number is a multiple of int(fps); more than 10 % flagged blocks."""
    from facefusion_batch.models.sessions import SessionPool
    from facefusion_batch.settings import load_settings
    from facefusion_batch.video.ffmpeg import ffmpeg_binary
    import subprocess

    models = standins.build_nsfw_set(tmp_path / "models")
    settings = load_settings(None, {}, {"models_path": models, "cache_path": tmp_path / "cache"}).settings
    gate = cg.build_gate(settings, SessionPool(settings))

    def clip(name: str, explicit: set[int], frames: int = 110) -> Path:
        path = tmp_path / name
        video = b"".join((magenta(64, 64) if i in explicit else np.full((64, 64, 3), 90, np.uint8)).tobytes()
                         for i in range(frames))
        subprocess.run([ffmpeg_binary(), "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "bgr24", "-s", "64x64",
                        "-r", "10", "-i", "-", "-c:v", "libx264", "-crf", "10", str(path)], input=video, check=True)
        return path

    # 11 samples (frames 0, 10, ..., 100); explicit frames between samples are never looked at
    assert not gate.check_video(clip("between.mp4", set(range(1, 10))), 64, 64, 10.0).flagged
    assert not gate.check_video(clip("one.mp4", {50}), 64, 64, 10.0).flagged  # 1 of 11: 9 %
    verdict = gate.check_video(clip("two.mp4", {50, 60}), 64, 64, 10.0)  # 2 of 11: 18 %
    assert verdict.flagged and "2 of 11 sampled frames" in verdict.reason


def test_sample_command_selects_every_step_th_frame():
    from facefusion_batch.video.ffmpeg import sample_command

    command = sample_command(Path("in.mp4"), 25, 640, 360)
    assert "select='not(mod(n\\,25))',scale=640:360" in command and command[-1] == "pipe:1"
    assert command[command.index("-fps_mode") + 1] == "passthrough"


def test_corrupt_facefusion_model_is_an_error_at_start(tmp_path):
    from facefusion_batch.errors import ModelError
    from facefusion_batch.models.sessions import SessionPool
    from facefusion_batch.settings import load_settings

    models = standins.build_nsfw_set(tmp_path / "models")
    (models / "nsfw_2.onnx").write_bytes(b"not a model")
    settings = load_settings(None, {}, {"models_path": models, "cache_path": tmp_path / "cache"}).settings
    with pytest.raises(ModelError, match="nsfw_2"):
        cg.build_gate(settings, SessionPool(settings))


# ---------------------------------------------------------------------------------------------- whole runs

def test_flagged_targets_are_blocked_journaled_and_rechecked(gated_env, source_image, capsys):
    env = gated_env
    inputs = env / "in"
    inputs.mkdir()
    cv2.imwrite(str(inputs / "a_explicit.jpg"), magenta())
    make_clip(inputs / "b_explicit.mp4", frames=30, image=magenta())
    make_clip(inputs / "c_face.mp4", frames=8)
    out = env / "out"
    code, summary = run(["-s", str(source_image), "-t", str(inputs), "-o", str(out)], capsys)
    assert code == 0, summary  # blocked is the gate's decision, not a failure
    outcomes = {Path(o["target"]).name: o for o in summary["outcomes"]}
    assert summary["counts"] == {"done": 1, "no_face": 0, "skipped": 0, "blocked": 2, "failed": 0,
                                 "interrupted": 0}
    assert outcomes["a_explicit.jpg"]["status"] == "blocked"
    assert "the image is flagged as explicit" in outcomes["a_explicit.jpg"]["reason"]
    assert "sampled frames flagged as explicit" in outcomes["b_explicit.mp4"]["reason"]
    assert "\n" not in outcomes["b_explicit.mp4"]["reason"]
    assert outcomes["c_face.mp4"]["status"] == "done"
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["c_face.mp4"]  # nothing partial
    record = journal(out)
    assert record["a_explicit.jpg"][0] == "blocked" and record["b_explicit.mp4"][0] == "blocked"
    assert record["c_face.mp4"][2] == "checked (nsfw_1+nsfw_2+nsfw_3)"
    assert manifest_swap(out / "c_face.mp4")["content_gate"] == "checked (nsfw_1+nsfw_2+nsfw_3)"

    # the next run checks the blocked targets again (the finished one is skipped)
    code, summary = run(["-s", str(source_image), "-t", str(inputs), "-o", str(out)], capsys)
    statuses = {Path(o["target"]).name: o["status"] for o in summary["outcomes"]}
    assert statuses == {"a_explicit.jpg": "blocked", "b_explicit.mp4": "blocked", "c_face.mp4": "skipped"}

    # with the gate off they are processed, and their outputs say the gate was off
    code, summary = run(["-s", str(source_image), "-t", str(inputs), "-o", str(out), "--content-gate", "off"],
                        capsys)
    statuses = {Path(o["target"]).name: o["status"] for o in summary["outcomes"]}
    assert statuses["a_explicit.jpg"] == statuses["b_explicit.mp4"] == "no_face"
    assert statuses["c_face.mp4"] == "done"  # the gate setting is in the journal key: redone, recorded as off
    assert journal(out)["c_face.mp4"][2] == "off by setting"
    assert manifest_swap(out / "c_face.mp4")["content_gate"] == "off by setting"


def test_flagged_source_stops_the_run(gated_env, capsys):
    """A source photo the gate flags (it has a face: the gate, not the detector, refuses it) is exit 4."""
    source = gated_env / "source.png"
    frame = face_frame()
    x1, y1, x2, y2 = 180, 60, 300, 210  # conftest.FACE_BOX: keep the face, paint the rest magenta
    flagged = magenta()
    flagged[y1:y2, x1:x2] = frame[y1:y2, x1:x2]
    cv2.imwrite(str(source), flagged)
    (gated_env / "in").mkdir()
    make_clip(gated_env / "in" / "c.mp4", frames=4)
    code, summary = run(["-s", str(source), "-t", str(gated_env / "in"), "-o", str(gated_env / "out")], capsys)
    assert code == 4
    assert f"{source}: the content gate (nsfw_1+nsfw_2+nsfw_3) flags this source image" in summary["stderr"]
    assert not (gated_env / "out" / "c.mp4").exists()


def test_gate_not_available_is_recorded(offline_env, source_image, capsys, monkeypatch):
    """No FaceFusion models and no bundled model: the run works and each output says the gate did not run."""
    monkeypatch.setattr(cg, "ASSET", offline_env / "missing.onnx")
    image = offline_env / "p.jpg"
    cv2.imwrite(str(image), face_frame())
    code, summary = run(["-s", str(source_image), "-t", str(image), "-o", str(offline_env / "out")], capsys)
    assert code == 0 and summary["outcomes"][0]["status"] == "done"
    assert summary["outcomes"][0]["content_gate"] == "not available"
    assert journal(offline_env / "out")["p.jpg"][2] == "not available"
    assert manifest_swap(offline_env / "out" / "p.jpg")["content_gate"] == "not available"

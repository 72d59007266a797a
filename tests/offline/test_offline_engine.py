"""`ffb run` with the offline engine on real faces: the default of a fresh install."""
from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from conftest import FACE_BOX, decode_all, face_frame, faint_when_toned, grace_hopper, make_clip
from facefusion_batch.cli import main
from facefusion_batch.video.probe import probe


@pytest.fixture
def env(offline_env, tmp_path):
    source = tmp_path / "hopper.jpg"
    cv2.imwrite(str(source), grace_hopper())
    return tmp_path, source


def test_auto_picks_offline_and_swaps_a_real_face(env, capsys):
    tmp_path, source = env
    (tmp_path / "clips").mkdir()
    clip = make_clip(tmp_path / "clips" / "a.mp4", frames=12)
    photo = tmp_path / "clips" / "b.png"
    cv2.imwrite(str(photo), face_frame())
    code = main(["run", "-s", str(source), "-t", str(tmp_path / "clips"), "-o", str(tmp_path / "out"), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.err.splitlines()[0].startswith("engine: offline")
    summary = json.loads(captured.out)
    assert summary["engine"] == "offline" and summary["counts"]["done"] == 2
    assert summary["source_embeddings_computed"] == 1, "the source is prepared once for both targets"
    before, after = decode_all(clip), decode_all(tmp_path / "out" / "a.mp4")
    assert after.shape == before.shape and probe(tmp_path / "out" / "a.mp4").audio_codec == "aac"
    diff = np.abs(after.astype(int) - before.astype(int)).mean(axis=(0, -1))
    x1, y1, x2, y2 = FACE_BOX.astype(int)
    # (The colour transfer keeps the target's skin and shading, so the change is in the features: ~11.)
    assert diff[y1 + 40:y2 - 30, x1 + 25:x2 - 25].mean() > 8, "the face itself changes"
    outside = np.ones(diff.shape, bool)
    outside[y1 - 10:y2 + 10, x1 - 10:x2 + 10] = False
    outside[-24:] = False
    assert diff[outside].mean() < 3.0, "the rest of the frame stays within encode noise"


def test_second_run_reuses_the_cached_source(env, capsys):
    tmp_path, source = env
    image = tmp_path / "t.png"
    cv2.imwrite(str(image), face_frame())
    for out, computed in (("o1", 1), ("o2", 0)):
        assert main(["run", "-s", str(source), "-t", str(image), "-o", str(tmp_path / out), "--json", "-q"]) == 0
        assert json.loads(capsys.readouterr().out)["source_embeddings_computed"] == computed


def test_source_without_face(env, capsys):
    tmp_path, _ = env
    blank = tmp_path / "wall.png"
    cv2.imwrite(str(blank), np.full((240, 320, 3), (90, 120, 150), np.uint8))
    assert main(["run", "--engine", "offline", "-s", str(blank), "-t", str(blank), "-o", str(tmp_path / "o")]) == 4
    assert "wall.png: no face found in the source image" in capsys.readouterr().err


def test_reference_mode_needs_neural(env, capsys):
    tmp_path, source = env
    code = main(["run", "--engine", "offline", "-s", str(source), "-t", str(source), "-o", str(tmp_path / "o"),
                 "--reference-face", str(source)])
    assert code == 2 and "needs the neural engine" in capsys.readouterr().err


def test_refit_finds_a_face_at_its_predicted_place_and_nothing_where_there_is_none(env):
    from skimage import data as skimage_data

    from facefusion_batch.engines import build_engine
    from facefusion_batch.settings import load_settings

    tmp_path, _ = env
    engine = build_engine(load_settings(None, {}, {"engine": "offline", "cache_path": tmp_path / "cache"}).settings)
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    face = max(engine.detect(frame), key=lambda f: f.area)
    moved = np.ascontiguousarray(np.roll(frame, (6, 9), axis=(0, 1)))  # the face moved; the old place predicted
    found = engine.refit(moved, [face])
    assert len(found) == 1
    shift = found[0].landmarks[:, :2].mean(axis=0) - face.landmarks[:, :2].mean(axis=0)
    assert shift == pytest.approx((9, 6), abs=2)
    assert engine.refit(np.full_like(frame, 90), [face]) == []


def test_a_tracks_refit_needs_less_face_presence_than_a_new_face(env):
    # On a small face the mesh's presence goes up and down from frame to frame; a track looked for where its face
    # should be and not found ends. Where the mesh is unsure (presence 0.3), a track's refit continues it; a
    # detection does not start a face.
    from skimage import data as skimage_data

    from facefusion_batch.engines import build_engine
    from facefusion_batch.engines.offline import REFIT_PRESENCE, _PRESENCE
    from facefusion_batch.offline.mediapipe import FaceMesh
    from facefusion_batch.settings import load_settings

    tmp_path, _ = env
    engine = build_engine(load_settings(None, {}, {"engine": "offline", "cache_path": tmp_path / "cache"}).settings)
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    face = max(engine.detect(frame), key=lambda f: f.area)
    unsure = (REFIT_PRESENCE + _PRESENCE) / 2
    predict = engine._landmarker.predict
    engine._landmarker.predict = lambda image, found, **kw: FaceMesh(predict(image, found, **kw).points,
                                                                    np.full(len(found), unsure, np.float32))
    assert len(engine.refit(frame, [face])) == 1
    assert engine.detect(frame) == []


@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_a_tracks_face_the_mesh_misses_but_the_detectors_see_is_carried_there(env, scale):
    # A face smeared by a whip pan, or small and dim: the detectors score it 0.5-0.8, the mesh's presence is
    # 0.01-0.15, and a track looked for where its face should be and not found ends (tune split's crowds: 31
    # face-frames more were missed, and their faces toggled between swapped and not). The detectors looking where
    # the track says (the short-range model for a large face, the full-range one closer for a small one) keep it:
    # its predicted mesh, moved as the detection's eyes moved. Where they see nothing, nothing is carried.
    from skimage import data as skimage_data

    from facefusion_batch.engines import build_engine
    from facefusion_batch.offline.mediapipe import FaceMesh
    from facefusion_batch.settings import load_settings

    tmp_path, _ = env
    engine = build_engine(load_settings(None, {}, {"engine": "offline", "cache_path": tmp_path / "cache"}).settings)
    astronaut = cv2.resize(skimage_data.astronaut()[:, :, ::-1], None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)
    frame = np.full((640, 720, 3), 128, np.uint8)
    frame[100:100 + astronaut.shape[0], 60:60 + astronaut.shape[1]] = astronaut
    face = max(engine.detect(frame), key=lambda f: f.area)
    moved = np.ascontiguousarray(np.roll(frame, (3, 4), axis=(0, 1)))
    predict = engine._landmarker.predict
    engine._landmarker.predict = lambda image, found, **kw: FaceMesh(predict(image, found, **kw).points,
                                                                    np.zeros(len(found), np.float32))
    carried = engine.refit(moved, [face])
    assert len(carried) == 1 and carried[0].score >= 0.5  # the detector's score
    shift = carried[0].landmarks[:, :2] - face.landmarks[:, :2]
    assert np.ptp(shift, axis=0).max() < 1e-3  # the track's own mesh, moved
    assert shift[0] == pytest.approx((4, 3), abs=1.5 + 2 * scale)
    assert engine.refit(np.full_like(frame, 128), [face]) == []


def test_second_mesh_fit_only_where_the_detector_box_disagrees_with_the_mesh(env):
    from skimage import data as skimage_data

    from facefusion_batch.engines import offline as offline_engine
    from facefusion_batch.engines import build_engine
    from facefusion_batch.settings import load_settings

    assert offline_engine._agree(np.array([100, 100, 200, 200.0]), np.array([102, 101, 201, 203.0]))
    assert not offline_engine._agree(np.array([100, 100, 200, 200.0]), np.array([100, 110, 200, 210.0]))
    assert not offline_engine._agree(np.array([100, 100, 200, 200.0]), np.array([90, 90, 210, 210.0]))

    tmp_path, _ = env
    engine = build_engine(load_settings(None, {}, {"engine": "offline", "cache_path": tmp_path / "cache"}).settings)
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    calls = []
    original = engine.refit
    engine.refit = lambda image, faces: calls.append(len(faces)) or original(image, faces)
    (face,) = engine.detect(frame)
    refitted = original(frame, [face])  # what a second fit on the mesh's own box gives
    assert calls == []  # a frontal face: the detector box and the mesh agree, one fit is enough
    assert np.abs(refitted[0].landmarks[:, :2] - face.landmarks[:, :2]).max() < 0.03 * (face.box[2] - face.box[0])


def test_faces_left_in_profile_are_counted_in_the_summary(env, capsys, monkeypatch):
    from facefusion_batch.offline import classic

    tmp_path, source = env
    (tmp_path / "clips").mkdir()
    make_clip(tmp_path / "clips" / "a.mp4", frames=12)
    cv2.imwrite(str(tmp_path / "clips" / "b.png"), face_frame())
    cv2.imwrite(str(tmp_path / "frontal.png"), face_frame())
    assert main(["run", "-s", str(source), "-t", str(tmp_path / "frontal.png"), "-o", str(tmp_path / "o1"),
                 "--json"]) == 0
    assert "profile" not in json.loads(capsys.readouterr().out)["outcomes"][0]["reason"]
    monkeypatch.setattr(classic, "PROFILE", -1.0)  # every face counts as turned too far
    code = main(["run", "-s", str(source), "-t", str(tmp_path / "clips"), "-o", str(tmp_path / "o2"), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    reasons = {o["target"].rsplit("/", 1)[-1]: o["reason"] for o in json.loads(captured.out)["outcomes"]}
    assert "12 face-frames turned too far to swap" in reasons["a.mp4"]
    assert "1 face-frame turned too far to swap" in reasons["b.png"]
    assert main(["run", "-s", str(source), "-t", str(tmp_path / "frontal.png"), "-o", str(tmp_path / "o3")]) == 0
    assert "1 face-frame turned too far to swap" in capsys.readouterr().out, "the human summary says it too"


def test_a_swap_too_faint_to_see_is_left_and_counted(env, capsys, monkeypatch):
    """A face the swap would change by less than FAINT (mean grey levels, brows to chin) is no swap a viewer
    sees: it is left exactly as it was and counted with the faces left, so the summary says so."""
    from facefusion_batch.engines import offline

    tmp_path, source = env
    photo = tmp_path / "p.png"
    cv2.imwrite(str(photo), face_frame())
    assert main(["run", "-s", str(source), "-t", str(photo), "-o", str(tmp_path / "o1"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["outcomes"][0].get("profiles_left", 0) == 0, "a clear swap is kept"
    monkeypatch.setattr(offline, "FAINT", 1e9)  # no swap is visible enough
    assert main(["run", "-s", str(source), "-t", str(photo), "-o", str(tmp_path / "o2"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    outcome = summary["outcomes"][0]
    assert outcome["profiles_left"] == 1 and "1 face-frame" in outcome["reason"]
    # Left as it was: the face changes no more than the rest of the picture (the output's own colour handling).
    change = np.abs(cv2.imread(str(tmp_path / "o2" / "p.png")).astype(int) - face_frame()).mean(axis=-1)
    x1, y1, x2, y2 = FACE_BOX.astype(int)
    outside = np.ones(change.shape, bool)
    outside[y1:y2, x1:x2] = False
    assert change[y1:y2, x1:x2].mean() < change[outside].mean() + 0.5


def test_a_source_face_turned_past_about_35_degrees_gets_a_notice():
    from pathlib import Path

    from facefusion_batch.engines.offline import source_notice
    from test_classic import yawed

    reference = np.load(Path(__file__).parents[1] / "data" / "mediapipe_reference.npz")
    mesh = reference["landmarks/landmarks"].reshape(468, 3).astype(np.float64)  # a real, frontal face's mesh
    assert source_notice(mesh) is None and source_notice(yawed(mesh, 20)) is None
    assert "turned to one side" in source_notice(yawed(mesh, 45)) and source_notice(yawed(mesh, -45))


def test_the_notice_on_a_turned_source_is_said_when_the_run_starts(tmp_path, monkeypatch):
    from facefusion_batch.engines import offline
    from facefusion_batch.settings import load_settings
    from facefusion_batch.workflow.processor import prepare

    source = tmp_path / "hopper.png"
    cv2.imwrite(str(source), grace_hopper())
    settings = load_settings(None, {}, {"engine": "offline", "cache_path": tmp_path / "cache",
                                        "temp_path": tmp_path / "temp"}).settings
    for limit, told in ((offline.SOURCE_TURNED, False), (-1.0, True)):  # -1: any face is "turned too far"
        monkeypatch.setattr(offline, "SOURCE_TURNED", limit)
        messages: list[str] = []
        prepare(settings, source, messages.append).engine.close()
        assert any(m.startswith(f"{source}: its face is turned") for m in messages) is told, messages


def test_an_image_face_too_faint_to_see_toned_is_swapped_deeper(env, capsys, monkeypatch):
    """An image's face whose swap, the source's detail toned to its light, would be too faint to see is swapped with
    the source's detail as deep as it needs to show, where its own depth does (engines/offline.py "Deep swaps"), not
    left."""
    from facefusion_batch.offline import classic

    tmp_path, source = env
    photo = tmp_path / "p.png"
    cv2.imwrite(str(photo), face_frame())
    depths: list[float] = []
    monkeypatch.setattr(classic, "swap_face", faint_when_toned(depths))
    assert main(["run", "-s", str(source), "-t", str(photo), "-o", str(tmp_path / "o"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["outcomes"][0].get("profiles_left", 0) == 0
    assert depths[:2] == [0.0, 1.0] and 0 < depths[-1] < 1, "toned, the source's own depth, then the least that shows"
    x1, y1, x2, y2 = FACE_BOX.astype(int)
    change = np.abs(cv2.imread(str(tmp_path / "o" / "p.png")).astype(int) - face_frame())[y1:y2, x1:x2].mean()
    assert change > 5, "the deep swap shows"

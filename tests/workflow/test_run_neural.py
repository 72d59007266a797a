"""End to end through `ffb run` (in-process) with stand-in neural models of the real tensor layouts."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import cv2
import numpy as np

from conftest import FACE_BOX, decode_all, face_frame, make_clip, run_local
from facefusion_batch.cli import main
from facefusion_batch.video.ffmpeg import ffmpeg_binary
from facefusion_batch.video.probe import probe


def run_json(args: list[str], capsys) -> tuple[int, dict]:
    code = main(["run", "--engine", "neural", "--json", "-q", *args])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip().startswith("{") else {}


def inside_outside(a: np.ndarray, b: np.ndarray, margin: int = 8, signed: bool = False) -> tuple[float, float]:
    """Mean (abs) difference inside the face box and outside it (+margin), static part of the frames."""
    diff = (b.astype(np.int16) - a.astype(np.int16)).mean(axis=-1)
    diff = diff if signed else np.abs(diff)
    x1, y1, x2, y2 = FACE_BOX.astype(int)
    inside = diff[..., y1 + 20:y2 - 20, x1 + 20:x2 - 20].mean()
    mask = np.ones(diff.shape[-2:], bool)
    mask[y1 - margin:y2 + margin, x1 - margin:x2 + margin] = False
    mask[-24:, :] = False  # the moving strip is re-encoded twice; compare the static part
    return float(inside), float(diff[..., mask].mean())


def test_video_end_to_end(env, source_image, capsys):
    (env / "clips").mkdir()
    clip = make_clip(env / "clips" / "talk.mp4", frames=40, fps="30000/1001")
    code, summary = run_json(["-s", str(source_image), "-t", str(clip), "-o", str(env / "out"),
                              "--chunk-size", "16"], capsys)
    assert code == 0, summary
    out = env / "out" / "talk.mp4"
    before, after = probe(clip), probe(out)
    assert after.frame_count == before.frame_count == 40
    assert after.fps == before.fps
    assert abs(after.duration - before.duration) < 0.05
    assert after.audio_codec == "aac"
    inside, outside = inside_outside(decode_all(clip), decode_all(out))
    assert inside > 20, "the face region must change"
    assert outside < 3.0, "pixels away from the face must stay within encode noise"
    assert abs(inside_outside(decode_all(clip), decode_all(out), signed=True)[1]) < 0.5, "no colour shift"
    assert summary["counts"] == {"done": 1, "no_face": 0, "skipped": 0, "blocked": 0, "failed": 0}
    assert not list((env / "tmp").iterdir()), "temp files are removed"
    assert [p.name for p in (env / "out").iterdir() if p.name.startswith(".")] == [".ffb"], "no partial outputs"


def test_output_is_marked_as_ai_modified(env, source_image, capsys):
    clip = make_clip(env / "a.mp4", frames=5)
    assert run_json(["-s", str(source_image), "-t", str(clip), "-o", str(env / "out")], capsys)[0] == 0
    tags = subprocess.run([ffmpeg_binary(), "-hide_banner", "-i", str(env / "out" / "a.mp4")],
                          capture_output=True, text=True).stderr
    assert "ai_modified     : true" in tags and "ai_models       : inswapper_128" in tags
    assert "compositeWithTrainedAlgorithmicMedia" in tags


def test_no_marking_flag(env, source_image, capsys):
    clip = make_clip(env / "a.mp4", frames=3)
    assert run_json(["-s", str(source_image), "-t", str(clip), "-o", str(env / "out"), "--no-marking"], capsys)[0] == 0
    tags = subprocess.run([ffmpeg_binary(), "-hide_banner", "-i", str(env / "out" / "a.mp4")],
                          capture_output=True, text=True).stderr
    assert "ai_modified" not in tags


def test_chunking_does_not_change_frames(env, source_image, capsys):
    clip = make_clip(env / "a.mp4", frames=23)
    for chunk, out in ((5, "small"), (1000, "big")):
        assert run_json(["-s", str(source_image), "-t", str(clip), "-o", str(env / out), "--chunk-size",
                         str(chunk), "--output-video-quality", "100"], capsys)[0] == 0
    small, big = decode_all(env / "small" / "a.mp4"), decode_all(env / "big" / "a.mp4")
    assert small.shape == big.shape == (23, 272, 480, 3)
    assert np.abs(small.astype(int) - big.astype(int)).mean() < 1.0


def test_memory_transport_matches_temp(env, source_image):
    from facefusion_batch.settings import load_settings

    clip = make_clip(env / "a.mp4", frames=10)
    outputs = []
    for transport in ("temp", "memory"):
        settings = load_settings(None, os.environ, {"engine": "neural", "output_path": env / transport,
                                                    "frame_transport": transport}).settings
        result = run_local(settings, source_image, [str(clip)])
        assert result.failed == 0
        outputs.append(decode_all(env / transport / "a.mp4"))
    assert np.array_equal(outputs[0], outputs[1])


def test_image_target_and_directory_batch_with_bad_files(env, source_image, capsys):
    clips = env / "clips"
    (clips / "sub").mkdir(parents=True)
    make_clip(clips / "sub" / "good.mp4", frames=6)
    cv2.imwrite(str(clips / "photo.jpg"), face_frame())
    (clips / "corrupt.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + os.urandom(2000))
    (clips / "empty.png").write_bytes(b"")
    (clips / "notes.txt").write_text("ignored: not media")
    plain = np.full((200, 300, 3), 90, np.uint8)
    cv2.imwrite(str(clips / "noface.png"), plain)
    code, summary = run_json(["-s", str(source_image), "-t", str(clips), "-o", str(env / "out")], capsys)
    assert code == 1
    status = {Path(o["target"]).name: o for o in summary["outcomes"]}
    assert status["good.mp4"]["status"] == "done"
    assert status["photo.jpg"]["status"] == "done"
    assert status["noface.png"]["status"] == "no_face"
    assert status["corrupt.mp4"]["status"] == "failed" and "corrupt.mp4" in status["corrupt.mp4"]["reason"]
    assert status["empty.png"]["status"] == "failed" and "empty" in status["empty.png"]["reason"]
    assert "notes.txt" not in status
    out = env / "out"
    assert (out / "sub" / "good.mp4").is_file(), "outputs mirror the input tree"
    assert (out / "noface.png").read_bytes() == (clips / "noface.png").read_bytes(), "no face: copied unchanged"
    assert not (out / "corrupt.mp4").exists() and not (out / "empty.png").exists()
    assert sorted(p.name for p in out.rglob(".*")) == [".ffb"]
    swapped = cv2.imread(str(out / "photo.jpg"))
    from PIL import Image
    assert "AI-modified" in Image.open(out / "photo.jpg").getexif().get(0x010E, "")
    x1, y1, x2, y2 = FACE_BOX.astype(int)
    assert np.abs(swapped[y1 + 20:y2 - 20, x1 + 20:x2 - 20].astype(int) - face_frame()[y1 + 20:y2 - 20, x1 + 20:x2 - 20]).mean() > 20


def test_source_embedding_is_cached_across_runs(env, source_image, capsys):
    image = env / "t.png"
    cv2.imwrite(str(image), face_frame())
    first = run_json(["-s", str(source_image), "-t", str(image), "-o", str(env / "o1")], capsys)[1]
    second = run_json(["-s", str(source_image), "-t", str(image), "-o", str(env / "o2")], capsys)[1]
    assert first["source_embeddings_computed"] == 1
    assert second["source_embeddings_computed"] == 0
    assert np.array_equal(cv2.imread(str(env / "o1" / "t.png")), cv2.imread(str(env / "o2" / "t.png")))


def test_source_without_face_is_a_clear_error(env, capsys, tmp_path):
    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((300, 400, 3), 128, np.uint8))
    assert main(["run", "--engine", "neural", "-s", str(blank), "-t", str(blank), "-o", str(tmp_path / "o")]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "blank.png: no face found in the source image" in err
    blank.write_bytes(b"garbage")
    assert main(["run", "--engine", "neural", "-s", str(blank), "-t", str(blank), "-o", str(tmp_path / "o")]) == 4
    assert "blank.png: not a readable image" in capsys.readouterr().err


def test_missing_model_names_file_and_fix(tmp_path, source_image, capsys, monkeypatch):
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    code = main(["run", "--engine", "neural", "--models-path", str(tmp_path / "none"), "-s", str(source_image),
                 "-t", str(source_image), "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 3
    # one line naming every missing file and the one command that fetches them all
    assert "inswapper_128.onnx, arcface_w600k_r50.onnx, scrfd_2.5g.onnx not found" in err
    assert "ffb models download inswapper_128 arcface_w600k_r50 scrfd_2.5g" in err and err.count("\n") == 1


def test_corrupt_model_is_detected(tmp_path, neural_models, source_image, capsys, monkeypatch):
    models = tmp_path / "models"
    models.mkdir()
    for f in neural_models.iterdir():
        (models / f.name).write_bytes(f.read_bytes())
    (models / "scrfd_2.5g.onnx").write_bytes(b"broken")
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    code = main(["run", "--engine", "neural", "--models-path", str(models), "-s", str(source_image),
                 "-t", str(source_image), "-o", str(tmp_path / "o")])
    assert code == 3 and "CRC32" in capsys.readouterr().err


def test_unwritable_output_dir(env, source_image, capsys):
    blocker = env / "file"
    blocker.write_text("x")
    code = main(["run", "--engine", "neural", "-s", str(source_image), "-t", str(source_image),
                 "-o", str(blocker / "out")])
    assert code == 5 and "not writable" in capsys.readouterr().err


def test_yoloface_detector_end_to_end(env, source_image, capsys):
    image = env / "t.png"
    cv2.imwrite(str(image), face_frame())
    code, summary = run_json(["-s", str(source_image), "-t", str(image), "-o", str(env / "o"),
                              "--face-detector-model", "yoloface"], capsys)
    assert code == 0 and summary["models"] == ["inswapper_128", "arcface_w600k_r50", "yoloface_8n"]


def test_reference_mode_swaps_only_matching_faces(env, source_image, capsys, tmp_path):
    image = env / "t.png"
    cv2.imwrite(str(image), face_frame())
    other = tmp_path / "other.png"
    cv2.imwrite(str(other), np.roll(face_frame(), 60, axis=1))  # a different face crop at the detector's box
    args = ["-s", str(source_image), "-t", str(image)]
    same = run_json(args + ["-o", str(env / "same"), "--reference-face", str(source_image)], capsys)[1]
    diff = run_json(args + ["-o", str(env / "diff"), "--reference-face", str(other)], capsys)[1]
    assert same["counts"]["done"] == 1
    assert diff["counts"]["no_face"] == 1


def test_print_settings_and_usage_errors(env, capsys):
    assert main(["run", "--print-settings", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    row = next(row for row in rows if row["key"] == "execution_thread_count")
    assert row == {"section": "execution", "key": "execution_thread_count", "value": "2", "origin": "environment",
                   "role": "engine"}
    assert main(["run", "-t", "x"]) == 2
    assert "--source" in capsys.readouterr().err


def test_rotated_phone_video_keeps_display_orientation(env, source_image, capsys):
    plain = make_clip(env / "plain.mp4", frames=6)
    rotated = env / "phone.mp4"
    subprocess.run([ffmpeg_binary(), "-v", "error", "-display_rotation", "90", "-i", str(plain), "-c", "copy",
                    str(rotated)], check=True)
    assert run_json(["-s", str(source_image), "-t", str(rotated), "-o", str(env / "out")], capsys)[0] == 0
    before, after = decode_all(rotated), decode_all(env / "out" / "phone.mp4")
    assert after.shape == before.shape == (6, 480, 272, 3)
    same = np.abs(after.astype(int) - before).mean()
    flipped = np.abs(after[:, ::-1, ::-1].astype(int) - before).mean()
    assert same < 10 and flipped > 3 * same, (same, flipped)  # the face changed; orientation did not


def test_strict_memory_strategy_reloads_sessions_per_target(env, source_image):
    from facefusion_batch.workflow.processor import prepare
    from facefusion_batch.settings import load_settings

    images = []
    for name in ("a.png", "b.png"):
        cv2.imwrite(str(env / name), face_frame())
        images.append(str(env / name))
    # tolerant: detector, recogniser, swapper once. strict: detector + recogniser for the source, the
    # swapper for target 1, then everything is dropped and target 2 reloads detector and swapper (the content
    # gate, off here, would add its own model's session to the same pool).
    for strategy, loads in (("tolerant", 3), ("strict", 5)):
        settings = load_settings(None, os.environ, {"engine": "neural", "video_memory_strategy": strategy,
                                                    "output_path": env / strategy, "content_gate": "off"}).settings
        processor = prepare(settings, source_image, print)
        assert run_local(settings, source_image, images, processor=processor).failed == 0
        assert processor.engine.pool.loads == loads


def test_micro_batched_swapper_through_the_engine(env, source_image, monkeypatch):
    from facefusion_batch.workflow.processor import prepare
    from facefusion_batch.settings import load_settings

    clip = make_clip(env / "a.mp4", frames=8)
    outputs = []
    for batch_size in (1, 8):
        settings = load_settings(None, os.environ, {"engine": "neural", "batch_size": batch_size,
                                                    "output_path": env / f"b{batch_size}"}).settings
        processor = prepare(settings, source_image, print)
        assert run_local(settings, source_image, [str(clip)], processor=processor).failed == 0
        batcher = processor.engine._swapper.batcher
        assert (batcher is None) == (batch_size == 1)
        outputs.append(decode_all(env / f"b{batch_size}" / "a.mp4"))
    assert list((env / "cache" / "dynamic").glob("inswapper_128.dynamic-*.onnx")), "patched model cached"
    assert np.abs(outputs[0].astype(int) - outputs[1]).mean() < 0.5

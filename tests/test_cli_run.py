"""`ffb run` as newcomers, FaceFusion users and cron jobs call it: bad sources, -o FILE, several -s, --json
lines and error objects, path settings, stray FFB_ variables."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import cv2
import pytest

from conftest import face_frame, make_clip
from facefusion_batch.cli import main


def run_json(capsys, *args: str) -> tuple[int, list[dict], str]:
    code = main(["run", "--json", "-q", *args])
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    return code, [json.loads(line) for line in lines], captured.err


def _dir(tmp_path: Path) -> Path:
    path = tmp_path / "a-directory"
    path.mkdir()
    return path


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty.jpg"
    path.write_bytes(b"")
    return path


def _text(tmp_path: Path) -> Path:
    path = tmp_path / "notes.jpg"
    path.write_text("not a picture\n")
    return path


def _video(tmp_path: Path) -> Path:
    return make_clip(tmp_path / "face.mp4", frames=2, audio=False)


def _dangling(tmp_path: Path) -> Path:
    path = tmp_path / "gone.jpg"
    path.symlink_to(tmp_path / "nowhere.jpg")
    return path


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.jpg"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("make, says", [
    (lambda tmp: tmp / "nope.jpg", "source image not found"),
    (_dir, "is a directory, not an image"),
    (_empty, "file is empty"),
    (_text, "not a readable image"),
    (_video, "not a readable image"),
    (_dangling, "source image not found (a broken symbolic link)"),
    (_fifo, "not a regular file"),
])
def test_unusable_source_is_exit_4_with_one_line(env, capsys, make, says):
    source = make(env)
    clip = make_clip(env / "a.mp4", frames=2, audio=False)
    code, lines, err = run_json(capsys, "-s", str(source), "-t", str(clip), "-o", str(env / "out"))
    assert code == 4
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert err.startswith(f"ffb: error: {source}: {says}") and "--source" in err
    assert lines[0]["ok"] is False and lines[0]["exit_code"] == 4 and says in lines[0]["error"]
    assert not (env / "out").exists()


def test_several_sources_are_averaged_on_neural_and_refused_on_offline(env, source_image, capsys):
    other = env / "other.png"
    cv2.imwrite(str(other), cv2.flip(face_frame(), 1))
    clip = make_clip(env / "a.mp4", frames=2, audio=False)
    code, lines, err = run_json(capsys, "-s", str(source_image), "-s", str(other), "-t", str(clip),
                                "-o", str(env / "out"))
    assert code == 0, err
    assert lines[0]["counts"]["done"] == 1
    code, lines, err = run_json(capsys, "--engine", "offline", "-s", str(source_image), "-s", str(other), "-t",
                                str(clip), "-o", str(env / "out2"))
    assert code == 2 and lines[0]["exit_code"] == 2
    assert "several sources" in err and "neural engine only" in err and err.strip().count("\n") == 0
    assert not (env / "out2" / "a.mp4").exists()


def test_output_file_with_one_target(env, source_image, capsys):
    clip = make_clip(env / "a.mp4", frames=4)
    result = env / "result.mp4"
    code, lines, _ = run_json(capsys, "-s", str(source_image), "-t", str(clip), "-o", str(result))
    assert code == 0
    assert result.is_file() and lines[0]["outcomes"][0]["output"] == str(result)
    # a video can change container on the way, as with an output directory
    code, lines, _ = run_json(capsys, "-s", str(source_image), "-t", str(clip), "-o", str(env / "sub" / "r.mkv"))
    assert code == 0 and (env / "sub" / "r.mkv").is_file()
    assert not list(env.glob("*.tmp*"))


def test_output_file_of_an_image(env, source_image, capsys):
    image = env / "photo.png"
    cv2.imwrite(str(image), face_frame())
    code, lines, _ = run_json(capsys, "-s", str(source_image), "-t", str(image), "-o", str(env / "swapped.jpg"))
    assert code == 0 and cv2.imread(str(env / "swapped.jpg")) is not None


@pytest.mark.parametrize("targets, says", [
    (["a.mp4", "b.mp4"], "names one output file, but the targets give 2 files"),
    (["dir"], "names one output file, but the targets give 2 files"),
    (["photo.png"], "is a video file name but"),
])
def test_output_file_with_the_wrong_targets_is_exit_2(env, source_image, capsys, targets, says):
    make_clip(env / "a.mp4", frames=2, audio=False)
    make_clip(env / "b.mp4", frames=2, audio=False)
    (env / "dir").mkdir()
    for name in ("x.mp4", "y.mp4"):
        make_clip(env / "dir" / name, frames=2, audio=False)
    cv2.imwrite(str(env / "photo.png"), face_frame())
    args = [a for t in targets for a in ("-t", str(env / t))]
    code, lines, err = run_json(capsys, "-s", str(source_image), *args, "-o", str(env / "result.mp4"))
    assert code == 2 and says in err and lines[0]["exit_code"] == 2
    assert not (env / "result.mp4").exists()


def test_output_file_never_overwrites_its_target(env, source_image, capsys):
    clip = make_clip(env / "a.mp4", frames=2, audio=False)
    before = clip.read_bytes()
    code, lines, _ = run_json(capsys, "-s", str(source_image), "-t", str(clip), "-o", str(clip))
    assert code == 1 and "would overwrite an input" in lines[0]["outcomes"][0]["reason"]
    assert clip.read_bytes() == before


def test_json_summary_is_one_line_per_run_with_time_and_id(env, source_image, capsys):
    clip = make_clip(env / "a.mp4", frames=4)
    first = run_json(capsys, "-s", str(source_image), "-t", str(clip), "-o", str(env / "out"))
    second = run_json(capsys, "-s", str(source_image), "-t", str(clip), "-o", str(env / "out"))
    iso = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
    for code, lines, _ in (first, second):
        assert code == 0 and len(lines) == 1
        line = lines[0]
        assert iso.match(line["started"]) and iso.match(line["finished"]) and line["started"] <= line["finished"]
        assert line["ok"] is True and line["exit_code"] == 0 and line["command"] == "run"
        assert line["engine"] == "neural" and line["version"]
    assert first[1][0]["run_id"] != second[1][0]["run_id"]
    assert first[1][0]["counts"]["done"] == 1 and second[1][0]["counts"]["skipped"] == 1


@pytest.mark.parametrize("setup, args, code", [
    ("lock", [], 6),
    ("", ["--execution-thread-count", "0"], 2),
    ("", ["--engine", "neural", "--models-path", "{tmp}/no-models"], 3),
    ("", ["--output-video-quality", "500"], 2),
])
def test_json_error_object_on_every_early_exit(env, source_image, capsys, setup, args, code):
    clip = make_clip(env / "a.mp4", frames=2, audio=False)
    if setup == "lock":
        from facefusion_batch.runner.lock import RunLock

        lock = RunLock(env / "out" / ".ffb" / "lock")
        lock.acquire(wait=False, on_wait=print)
    args = [a.replace("{tmp}", str(env)) for a in args]
    try:
        got, lines, err = run_json(capsys, "-s", str(source_image), "-t", str(clip), "-o", str(env / "out"), *args)
    finally:
        if setup == "lock":
            lock.release()
    assert got == code
    assert len(lines) == 1 and lines[0]["ok"] is False and lines[0]["exit_code"] == code
    assert lines[0]["error"] and lines[0]["error"] in err and lines[0]["run_id"]


def test_json_error_object_from_other_commands(env, capsys):
    assert main(["status", str(env / "never"), "--json"]) == 2
    line = json.loads(capsys.readouterr().out)
    assert line["command"] == "status" and "no journal" in line["error"]


def test_queue_count_and_inference_slots_have_flags(env, capsys):
    assert main(["run", "--print-settings", "--json", "--execution-queue-count", "5",
                 "--execution-inference-slots", "3"]) == 0
    rows = {row["key"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["execution_queue_count"]["value"] == "5" and rows["execution_queue_count"]["origin"] == "flag"
    assert rows["execution_inference_slots"]["value"] == "3"


def test_stray_ffb_variable_warns_once_and_the_run_goes_on(env, source_image, capsys, monkeypatch):
    monkeypatch.setenv("FFB_SOMETHING_ELSE", "1")
    clip = make_clip(env / "a.mp4", frames=2, audio=False)
    code, lines, err = run_json(capsys, "-s", str(source_image), "-t", str(clip), "-o", str(env / "out"))
    assert code == 0 and err.count("FFB_SOMETHING_ELSE") == 1 and "warning" in err
    monkeypatch.setenv("FFB_CHUNK_SIZE", "many")  # a known setting with a bad value stays an error
    code, lines, err = run_json(capsys, "-s", str(source_image), "-t", str(clip), "-o", str(env / "out"))
    assert code == 2 and "FFB_CHUNK_SIZE" in err


@pytest.mark.parametrize("name", ["temp_path", "cache_path", "models_path", "state_path"])
def test_a_path_setting_naming_a_file_is_one_error_before_any_work(env, source_image, capsys, monkeypatch, name):
    blocker = env / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv(f"FFB_{name.upper()}", str(blocker / "below") if name == "cache_path" else str(blocker))
    clip = make_clip(env / "a.mp4", frames=2, audio=False)
    code, lines, err = run_json(capsys, "-s", str(source_image), "-t", str(clip), "-o", str(env / "out"))
    assert code == 2 and err.startswith(f"ffb: error: {name} ") and "is a file, not a directory" in err
    assert not (env / "out").exists()  # nothing was started


def test_default_section_in_a_profile_is_refused(env, capsys, tmp_path):
    profile = tmp_path / "p.ini"
    profile.write_text("[DEFAULT]\nbogus = 1\n")
    assert main(["run", "--profile", str(profile), "--print-settings"]) == 2
    assert "[DEFAULT] is not supported" in capsys.readouterr().err


def test_interrupt_names_the_target(env, source_image, tmp_path):
    """SIGINT during a long video: the summary names that video, not "(batch)"."""
    clip = make_clip(env / "long.mp4", frames=400, audio=False)
    command = [sys.executable, "-m", "facefusion_batch", "run", "-s", str(source_image), "-t", str(clip),
               "-o", str(env / "out"), "--json", "--chunk-size", "8"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "FFB_EXECUTION_THREAD_COUNT": "1"})
    # wait until frames are being written (a chunk of the workspace exists), then interrupt
    import time

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list((env / "tmp").glob("ffb-*/*.mp4")) and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    line = json.loads(out)
    assert proc.returncode == 130 and line["exit_code"] == 130
    assert [o["target"] for o in line["outcomes"]] == [str(clip)]
    assert "interrupted" in line["outcomes"][0]["reason"]


@pytest.mark.parametrize("args", [["--engine", "bogus"], ["--execution-thread-count", "abc"], ["--no-such-flag"]])
def test_json_error_object_on_usage_errors(capsys, args):
    assert main(["run", "--json", *args]) == 2
    captured = capsys.readouterr()
    line = json.loads(captured.out)
    assert line["ok"] is False and line["exit_code"] == 2 and line["command"] == "run" and line["error"]
    assert "Traceback" not in captured.err


def test_facefusion_style_several_sources_after_one_s_are_refused(env, source_image, capsys):
    """FaceFusion's `-s a.jpg b.jpg`: b.jpg must not become a target that gets the face swapped in."""
    other = env / "other.png"
    cv2.imwrite(str(other), face_frame())
    before = other.read_bytes()
    clip = make_clip(env / "a.mp4", frames=2, audio=False)
    code, lines, err = run_json(capsys, "-s", str(source_image), str(other), "-t", str(clip), "-o", str(env / "out"))
    assert code == 2 and "several sources" in err and f"if {other} is a target, pass it with -t" in err
    assert f"-s {source_image} -s {other}" in err
    assert lines[0]["exit_code"] == 2 and other.read_bytes() == before and not (env / "out").exists()
    # a video right after the source is a positional target, as ever
    code, lines, _ = run_json(capsys, "-s", str(source_image), str(clip), "-o", str(env / "out"))
    assert code == 0 and lines[0]["counts"]["done"] == 1


@pytest.mark.parametrize("args", [["-o", ""], ["--output="], ["-o", " "], ["--temp-path", ""], ["-t", ""]])
def test_an_empty_path_flag_is_refused_not_read_as_the_working_directory(tmp_path, capsys, monkeypatch, args,
                                                                          source_image):
    """An unset $OUT in a cron line (`ffb run ... -o $OUT`) must not write into the working directory, nor
    an unset $IN take every file there (issue 26, class 6)."""
    monkeypatch.chdir(tmp_path)
    clip = make_clip(tmp_path / "a.mp4", frames=2, audio=False)
    target = [] if args[0] in ("-t",) else ["-t", str(clip)]
    code, lines, err = run_json(capsys, "--engine", "offline", "-s", str(source_image), *target, *args)
    assert code == 2 and lines[0]["exit_code"] == 2
    flag = args[0].rstrip("=")
    assert err.strip().count("\n") == 0 and f"{flag} is empty" in err and "unset variable" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.mp4", "source.png"], "nothing written here"

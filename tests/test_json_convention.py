"""One JSON convention for every `--json` (facefusion_batch/jsonlines.py): one document per line, never
indented; times ISO-8601 UTC; paths absolute; warnings and errors inside the document, and only there when
stderr is stdout's file (the cron recipe `-q --json >> log 2>&1`)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cv2
import pytest

from conftest import face_frame
from facefusion_batch.cli import main
from facefusion_batch.jsonlines import TIME_KEYS, dumps, utc

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
PATH_KEYS = {"target", "output", "path", "file", "journal"}


def check_convention(out: str) -> list[Any]:
    """Every line of `out` one JSON document in the convention; returns them."""
    lines = out.splitlines()
    assert lines, "no JSON printed"
    documents = []
    for line in lines:
        assert line.strip() and line == line.strip(), f"not one document per line: {line!r}"
        documents.append(json.loads(line))
        _walk(documents[-1])
    return documents


def _walk(data: Any, key: str = "") -> None:
    if isinstance(data, dict):
        for k, v in data.items():
            _walk(v, k)
    elif isinstance(data, list):
        for item in data:
            _walk(item, key)
    elif key in TIME_KEYS and data is not None:
        assert isinstance(data, str) and ISO_UTC.match(data), f"{key}: {data!r} is not ISO-8601 UTC"
    elif key in PATH_KEYS and isinstance(data, str) and data and not data.startswith("("):
        assert os.path.isabs(data), f"{key}: {data!r} is not absolute"


@pytest.fixture
def done_run(offline_env, tmp_path, monkeypatch, capsys) -> Path:
    """An offline run over one image, from inside the tmp dir with relative paths; returns the output dir."""
    monkeypatch.chdir(tmp_path)
    cv2.imwrite("face.png", face_frame())
    cv2.imwrite("target.png", face_frame())
    assert main(["run", "-s", "face.png", "-t", "target.png", "-o", "out", "--output-provenance", "metadata",
                 "-q"]) == 0
    capsys.readouterr()
    return tmp_path / "out"


COMMANDS = {
    "run": ["run", "-s", "face.png", "-t", "target.png", "-o", "out2", "--output-provenance", "metadata", "-q"],
    "run --print-settings": ["run", "--print-settings"],
    "run error": ["run", "-s", "missing.png", "-t", "target.png", "-o", "out3"],
    "run usage error": ["run", "--no-such-flag"],
    "FaceFusion command": ["job-list"],
    "status": ["status", "out"],
    "status error": ["status", "nowhere"],
    "verify": ["verify", "out"],
    "models list": ["models", "list"],
    "models verify": ["models", "verify"],
    "detect-gpus": ["detect-gpus"],
    "benchmark error": ["benchmark", "99p"],
}


@pytest.mark.parametrize("name", COMMANDS)
def test_every_commands_json_keeps_the_convention(done_run, capsys, monkeypatch, name):
    (done_run.parent / "bin").mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(done_run.parent / "bin"))  # no nvidia-smi: detect-gpus says so
    code = main([*COMMANDS[name], "--json"])
    documents = check_convention(capsys.readouterr().out)
    assert len(documents) == 1
    document = documents[0]
    if "error" in name or name == "FaceFusion command":
        expected = 4 if name == "run error" else 2  # an unusable source is 4
        assert code == expected and document["ok"] is False and document["exit_code"] == expected
        assert document["error"]
        assert ISO_UTC.match(document["started"]) and document["warnings"] == []
    else:
        assert code == 0, document
    if name == "status":
        row = document[0]
        assert row["target"] == str(done_run.parent / "target.png") and row["output"] == str(done_run /
                                                                                            "target.png")
    if name == "run":
        outcome = document["outcomes"][0]
        assert outcome["target"] == str(done_run.parent / "target.png")
        assert outcome["output"] == str(done_run.parent / "out2" / "target.png")


def test_run_and_status_give_the_same_path_form(done_run, capsys, monkeypatch):
    """The journal keeps an output relative to where its run started: status finds it from anywhere."""
    monkeypatch.chdir(done_run / "..")
    os.makedirs("elsewhere", exist_ok=True)
    monkeypatch.chdir("elsewhere")
    assert main(["status", str(done_run), "--json"]) == 0
    row = check_convention(capsys.readouterr().out)[0][0]
    assert row["output"] == str(done_run / "target.png") and row["target"] == str(done_run.parent / "target.png")


def test_verify_journal_time_is_iso_utc(done_run, capsys):
    assert main(["verify", str(done_run / "target.png"), "--json"]) == 0
    finding = check_convention(capsys.readouterr().out)[0][0]
    assert finding["journal"] and ISO_UTC.match(finding["journal"]["updated"])


def test_the_cron_recipe_log_holds_json_lines_only(offline_env, tmp_path):
    """`ffb run -q --json ... >> log 2>&1` with a profile warning, a FaceFusion flag ffb ignores and the
    engine's note: the log is JSON lines, and those warnings are in `warnings`."""
    cv2.imwrite(str(tmp_path / "face.png"), face_frame())
    cv2.imwrite(str(tmp_path / "target.png"), face_frame())
    profile = tmp_path / "facefusion.ini"
    profile.write_text("[frame_distribution]\ntarget_frame_amount = 2\n")
    log = tmp_path / "ffb.log"
    for attempt in ("ok", "error"):
        source = "face.png" if attempt == "ok" else "missing.png"
        command = (f"{sys.executable} -m facefusion_batch run -q --json -p facefusion.ini -s {source} "
                   f"-t target.png -o out --face-tracker-score 0.2 --output-provenance metadata >> ffb.log 2>&1")
        subprocess.run(command, shell=True, cwd=tmp_path, env=os.environ, timeout=300)
    ok, error = check_convention(log.read_text())
    assert ok["ok"] is True and error["ok"] is False and error["exit_code"] == 4
    warnings = " | ".join(ok["warnings"])
    assert "--face-tracker-score 0.2" in warnings and "target_frame_amount" in warnings
    assert "engine auto: offline" in warnings
    assert "--face-tracker-score 0.2" in " ".join(error["warnings"])


def test_with_stderr_apart_the_warnings_are_said_there_too(offline_env, tmp_path):
    cv2.imwrite(str(tmp_path / "face.png"), face_frame())
    done = subprocess.run([sys.executable, "-m", "facefusion_batch", "run", "-q", "--json", "-s", "face.png", "-t",
                           "face.png", "-o", "out", "--face-tracker-score", "0.2", "--output-provenance",
                           "metadata"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    summary = check_convention(done.stdout)[0]
    assert "--face-tracker-score 0.2" in " ".join(summary["warnings"])
    assert "ffb: warning: FaceFusion options ffb does not have" in done.stderr


def test_watch_prints_a_line_per_file_as_it_finishes(env, source_image, tmp_path):
    """kill -9 after the first file: its line is already in the output, whole."""
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    out_file = tmp_path / "watch.jsonl"
    with open(out_file, "wb") as out, open(tmp_path / "watch.err", "wb") as err:
        process = subprocess.Popen([sys.executable, "-m", "facefusion_batch", "watch", "--json", "-s",
                                    str(source_image), "-t", str(incoming), "-o", str(tmp_path / "out"), "--settle",
                                    "0.5"], stdout=out, stderr=err)
    try:
        cv2.imwrite(str(tmp_path / "a.png"), face_frame())
        shutil.move(str(tmp_path / "a.png"), incoming / "a.png")
        deadline = time.monotonic() + 120
        while not out_file.read_text().endswith("\n"):
            assert process.poll() is None, (tmp_path / "watch.err").read_text()[-2000:]
            assert time.monotonic() < deadline, "no line for the file"
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    line = check_convention(out_file.read_text())
    assert len(line) == 1 and line[0]["command"] == "watch" and line[0]["event"] == "target"
    assert line[0]["target"] == str(incoming / "a.png") and line[0]["status"] == "done"
    assert line[0]["output"] == str(tmp_path / "out" / "a.png") and ISO_UTC.match(line[0]["time"])


def test_emitter_units():
    assert utc(0) == "1970-01-01T00:00:00.000Z"
    assert dumps({"updated": 1.5, "path": Path("x"), "n": {"time": 0}}) == \
        json.dumps({"updated": "1970-01-01T00:00:01.500Z", "path": os.path.abspath("x"),
                    "n": {"time": "1970-01-01T00:00:00.000Z"}})
    assert "\n" not in dumps({"a": [1, {"b": "c\nd"}]})

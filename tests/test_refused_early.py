"""A run refused at settings time (a misspelt target, a model missing, the offline engine asked for what it
can't do, an encoder that won't load) is a usage or model error said before anything is written: no OUT/.ffb,
no engine loaded."""
from __future__ import annotations

import json

import cv2
import pytest

from conftest import face_frame
from facefusion_batch.cli import main


@pytest.mark.parametrize("args, code, says", [
    (["-t", "clipz/"], 2, "clipz/: no such file or directory; check the target path (-t)"),
    (["-t", "real.png", "missing.png"], 2, "missing.png: no such file or directory"),
    (["-t", "real.png", "--reference-face", "real.png"], 2, "--reference-face needs the neural engine"),
    (["-t", "real.png", "--processors", "face_swapper", "face_enhancer"], 2, "the offline engine can't do"),
    (["-t", "real.png", "--face-swapper-model", "hyperswap_1a_256"], 3, "hyperswap_1a_256.onnx"),
    (["-t", "real.png", "--face-selector-gender", "auto"], 2, "the offline engine can't do"),
])
def test_refused_runs_write_nothing(offline_env, source_image, tmp_path, monkeypatch, capsys, args, code, says):
    monkeypatch.chdir(tmp_path)
    cv2.imwrite("real.png", face_frame())
    assert main(["run", "-s", str(source_image), "-o", "out", "--json", *args]) == code
    captured = capsys.readouterr()
    assert says in json.loads(captured.out)["error"] and says in captured.err
    assert not (tmp_path / "out").exists(), "a refused run must leave no OUT/.ffb"


def test_a_glob_that_matches_nothing_is_no_usage_error(offline_env, source_image, tmp_path, capsys):
    """cron's `-t 'incoming/*.mp4'` on an empty folder: nothing to do, not a mistake in the command."""
    (tmp_path / "incoming").mkdir()
    code = main(["run", "-s", str(source_image), "-t", str(tmp_path / "incoming" / "*.mp4"), "-o",
                 str(tmp_path / "out"), "--json", "-q"])
    assert code in (0, 1) and "no such file" not in capsys.readouterr().err

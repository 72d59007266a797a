"""Smaller FaceFusion-user points (issue 23 item 10): --version, on/off flags given a value, FaceFusion's
job-list advice, a misspelt model name, `ffb models download` without a network."""
from __future__ import annotations

import pytest

from facefusion_batch import __version__
from facefusion_batch.cli import main
from facefusion_batch.facefusion_flags import COMMANDS


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_flag(capsys, flag):
    assert main([flag]) == 0
    assert capsys.readouterr().out.strip() == f"ffb {__version__}"


@pytest.mark.parametrize("args, says", [
    (["--many-faces", "true"], "--many-faces true: --many-faces is an on/off flag and takes no value ('true' would "
                               "be read as a target); write --many-faces alone to turn it on"),
    (["--keypoint-reuse", "false"], "write --keypoint-reuse alone to turn it on, --no-keypoint-reuse to turn it off"),
    (["--force", "yes"], "--force is an on/off flag"),
])
def test_an_on_off_flag_given_a_value_is_refused(capsys, tmp_path, args, says):
    assert main(["run", "-s", "face.jpg", "-t", str(tmp_path), *args]) == 2
    assert says in capsys.readouterr().err


def test_run_help_shows_no_value_beside_a_flag(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["run", "--help"]) == 0
    text = capsys.readouterr().out
    assert [line for line in text.splitlines() if "<bool>" in line and "--help" not in line] == []
    assert "--many-faces" in text


def test_job_list_advice_names_a_real_option(capsys, tmp_path):
    assert main(["job-list", "queued"]) == 2
    err = capsys.readouterr().err
    assert "ffb status OUTPUT_DIR" in err and "-o OUTPUT" not in COMMANDS["job-list"]
    assert main(["status", "--help"]) == 0  # the advice's form is the command's own: a positional directory
    assert "ffb status [options] [output]" in " ".join(capsys.readouterr().out.lower().split())


def test_a_misspelt_model_name_gets_did_you_mean(capsys, tmp_path):
    assert main(["models", "download", "inswaper_128", "--models-path", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown model inswaper_128 (did you mean inswapper_128?)" in err
    assert err.count(",") < 5, "no list of every model name"


@pytest.mark.parametrize("flag, value, meant", [("--face-swapper-model", "inswaper_128", "inswapper_128"),
                                                ("--face-selector-order", "large-smal", "large-small")])
def test_a_misspelt_choice_flag_gets_did_you_mean(capsys, monkeypatch, flag, value, meant):
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["run", flag, value]) == 2
    assert f"(did you mean {meant}?)" in capsys.readouterr().err


def test_download_without_network_names_every_missing_file(capsys, tmp_path, monkeypatch):
    """Nothing listens on the mirror: every file not there is named once, with the three ways out."""
    monkeypatch.setenv("FFB_DOWNLOAD_MIRROR", "http://127.0.0.1:9/models")
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    assert main(["models", "download", "--models-path", str(tmp_path / "models"), "-q"]) == 3
    err = capsys.readouterr().err
    for name in ("inswapper_128", "arcface_w600k_r50", "scrfd_2.5g"):
        assert f"{name}.onnx" in err and f"{name}.hash" in err, name
    assert "download_mirror" in err and "--models-path at an existing FaceFusion .assets/models" in err
    assert err.count("ffb: error:") == 1


def test_download_keeps_what_is_there(capsys, tmp_path, monkeypatch, neural_models):
    monkeypatch.setenv("FFB_DOWNLOAD_MIRROR", "http://127.0.0.1:9/models")
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    assert main(["models", "download", "inswapper_128", "scrfd_2.5g", "--models-path", str(neural_models)]) == 0
    assert "(already there)" in capsys.readouterr().err

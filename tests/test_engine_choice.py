"""No silent engine switch: a run that asks for a neural model (a model flag, a models path, a model file
that is there but damaged) never produces an offline result; `auto` says why it runs offline; a FaceFusion
.assets/models with FaceFusion's own defaults runs the neural engine on them."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from facefusion_batch.cli import main
from facefusion_batch.models.catalog import CATALOG
from facefusion_batch.settings import FACEFUSION_DEFAULTS, load_settings

SHIPPED = Path(__file__).parents[1] / "facefusion.ini"


@pytest.fixture
def fresh(offline_env, source_image) -> Path:
    """A fresh install: no model anywhere (models_path at its default, empty)."""
    return offline_env


def _run(capsys, fresh: Path, source_image: Path, *args: str) -> tuple[int, dict, str]:
    code = main(["run", "--json", "-q", "-s", str(source_image), "-t", str(source_image), "-o", str(fresh / "out"),
                 *args])
    captured = capsys.readouterr()
    return code, json.loads(captured.out.strip().splitlines()[-1]), captured.err


@pytest.mark.parametrize("args, files", [
    (["--face-swapper-model", "inswapper_128", "--face-detector-model", "yolo_face"],
     ("inswapper_128.onnx", "arcface_w600k_r50.onnx", "yoloface_8n.onnx")),
    (["--face-swapper-model", "hyperswap_1a_256"], ("hyperswap_1a_256.onnx", "arcface_w600k_r50.onnx",
                                                    "scrfd_2.5g.onnx")),
    (["--face-detector-model", "scrfd"], ("inswapper_128.onnx", "scrfd_2.5g.onnx")),
])
def test_a_model_flag_never_gives_an_offline_result(fresh, source_image, capsys, args, files):
    code, summary, err = _run(capsys, fresh, source_image, *args)
    assert code == 3 and summary["exit_code"] == 3 and summary.get("engine") != "offline"
    for name in files:
        assert name in err, name
    assert "ffb models download" in err and not (fresh / "out").exists()


def test_a_models_path_asks_for_the_neural_engine(fresh, source_image, capsys, tmp_path):
    empty = tmp_path / "facefusion" / ".assets" / "models"
    empty.mkdir(parents=True)
    code, _, err = _run(capsys, fresh, source_image, "--models-path", str(empty))
    assert code == 3 and f"not found in {empty}" in err
    assert "inswapper_128.onnx, arcface_w600k_r50.onnx, scrfd_2.5g.onnx" in err


def test_a_damaged_model_is_exit_3_not_offline(fresh, source_image, capsys, neural_models, monkeypatch, tmp_path):
    """The default models directory holds the models, one of them damaged: exit 3 naming it (as `ffb models
    verify` does), never the offline engine."""
    default = tmp_path / "xdg" / "ffb" / "models"
    shutil.copytree(neural_models, default)
    (default / "scrfd_2.5g.onnx").write_bytes(b"broken")
    code, _, err = _run(capsys, fresh, source_image)
    assert code == 3 and "scrfd_2.5g" in err and "CRC32" in err
    assert main(["models", "verify"]) == 3


def test_auto_says_why_it_runs_offline(fresh, source_image, capsys):
    code, summary, err = _run(capsys, fresh, source_image)
    assert code == 0 and summary["engine"] == "offline"
    notes = [line for line in err.splitlines() if "engine auto: offline" in line]
    assert len(notes) == 1 and notes[0].startswith("ffb: warning: ")  # said under -q too
    assert "holds none of the neural engine's models" in notes[0] and "ffb models download" in notes[0]
    code, summary, err = _run(capsys, fresh, source_image, "--engine", "offline", "--force")
    assert code == 0 and "engine auto" not in err  # chosen: nothing to explain


def test_ffbs_own_profile_at_its_defaults_does_not_ask_for_neural(fresh, source_image, capsys):
    """The shipped facefusion.ini writes every setting at its default: that asks for nothing."""
    code, summary, _ = _run(capsys, fresh, source_image, "--profile", str(SHIPPED))
    assert code == 0 and summary["engine"] == "offline"


def test_print_settings_says_what_asked_for_the_neural_engine(fresh, capsys):
    assert main(["run", "--face-swapper-model", "inswapper_128", "--print-settings", "--json"]) == 0
    rows = {row["key"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["engine"]["value"] == "neural"
    assert rows["engine"]["origin"] == "auto: neural, as face_swapper_model (flag) asks for a neural model"


def test_facefusion_models_dir_with_facefusions_defaults_runs_neural(fresh, source_image, capsys, tmp_path):
    """FaceFusion 3.8.1's defaults: hyperswap_1a_256, yoloface_8n and arcface_w600k_r50, and nothing of
    ffb's defaults (inswapper_128, scrfd_2.5g): the neural engine on FaceFusion's."""
    import numpy as np

    import standins
    from conftest import FRAME_H, FRAME_W, detector_faces

    models = tmp_path / "facefusion" / ".assets" / "models"
    models.mkdir(parents=True)
    standins.build_swapper(models / "hyperswap_1a_256.onnx", 256, mode="identity")
    standins.build_yoloface(models / "yoloface_8n.onnx", detector_faces(640 / max(FRAME_W, FRAME_H)))
    standins.build_arcface(models / "arcface_w600k_r50.onnx")
    for model in models.glob("*.onnx"):
        standins.write_facefusion_hash(model)
    code, summary, err = _run(capsys, fresh, source_image, "--models-path", str(models))
    assert code == 0, err
    assert summary["engine"] == "neural" and {"hyperswap_1a_256", "yoloface_8n"} <= set(summary["models"])
    assert "holds FaceFusion's default models, not ffb's: using face_swapper_model hyperswap_1a_256, " \
           "face_detector_model yoloface" in err
    # a model asked for by name is used, or its absence is the error: never FaceFusion's in its place
    code, _, err = _run(capsys, fresh, source_image, "--models-path", str(models), "--face-swapper-model",
                        "inswapper_128", "--force")
    assert code == 3 and "inswapper_128.onnx" in err
    assert np is not None


def test_facefusion_defaults_table_names_catalog_files():
    for name, (own, facefusion, facefusion_file) in FACEFUSION_DEFAULTS.items():
        assert own in {spec.file for spec in CATALOG.values()}
        assert facefusion_file in {spec.file for spec in CATALOG.values()}
    settings = load_settings(None, {}, {}).settings
    assert CATALOG[settings.face_swapper_model].file == FACEFUSION_DEFAULTS["face_swapper_model"][0]


def test_the_systemd_unit_can_read_its_models():
    """ProtectHome=yes hides every home directory, where models_path's default lies: the unit must set
    models_path outside them, readable by the service (it would otherwise never find a model)."""
    unit = (Path(__file__).parents[1] / "docs" / "deploy" / "ffb-watch.service").read_text()
    lines = [line.strip() for line in unit.splitlines()]
    assert "ProtectHome=yes" in lines
    models = next(line.split("=", 2)[2] for line in lines if line.startswith("Environment=FFB_MODELS_PATH="))
    assert not models.startswith(("/home", "/root", "/run/user", "~"))
    readable = " ".join(line.split("=", 1)[1] for line in lines
                        if line.startswith(("ReadOnlyPaths=", "ReadWritePaths=")))
    assert models in readable.split()

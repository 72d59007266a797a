"""Model files that are present but wrong (issue 10, class 9): each is refused with exit 3, naming the
file, what is wrong and which model it is not, before any session or protobuf parser sees it."""
from __future__ import annotations

import shutil

import pytest

import standins
from conftest import detector_faces
from facefusion_batch.cli import main
from facefusion_batch.errors import ModelError
from facefusion_batch.models.catalog import CATALOG
from facefusion_batch.models.signature import check_model, read_signature

BUILDERS = {
    "inswapper_128": standins.build_inswapper,
    "inswapper_128_fp16": standins.build_inswapper_fp16,
    "arcface_w600k_r50": standins.build_arcface,
    "scrfd_2.5g": lambda path: standins.build_scrfd(path, detector_faces(1.0)),
    "yoloface_8n": lambda path: standins.build_yoloface(path, detector_faces(1.0)),
    "retinaface_10g": lambda path: standins.build_retinaface(path, detector_faces(1.0)),
    "yunet_2023_mar": lambda path: standins.build_yunet(path, detector_faces(1.0)),
}
# A valid model of another kind for each: what a mixed-up download folder holds.
IMPOSTOR = {"inswapper_128": "arcface_w600k_r50", "inswapper_128_fp16": "scrfd_2.5g",
            "arcface_w600k_r50": "inswapper_128", "scrfd_2.5g": "yoloface_8n", "yoloface_8n": "scrfd_2.5g",
            "retinaface_10g": "yunet_2023_mar", "yunet_2023_mar": "retinaface_10g"}


# The engine's own models carry a full signature; the processor models (issue 14) are checked for damage
# only until their real files' output lists are confirmed.
SIGNED = sorted(name for name, spec in CATALOG.items() if spec.inputs)


def test_every_signed_catalog_model_has_a_standin():
    assert set(BUILDERS) == set(SIGNED)
    assert {"inswapper_128", "arcface_w600k_r50", "scrfd_2.5g", "yoloface_8n"} <= set(SIGNED)
    assert all(CATALOG[name].outputs for name in SIGNED)


def test_truncated_processor_model_is_named_damaged(tmp_path):
    unsigned = sorted(set(CATALOG) - set(SIGNED))
    whole = tmp_path / "whole.onnx"
    standins.build_arcface(whole)
    for name in unsigned:
        path = tmp_path / CATALOG[name].file
        path.write_bytes(whole.read_bytes()[: len(whole.read_bytes()) // 2])
        with pytest.raises(ModelError, match="is damaged"):
            check_model(CATALOG[name], path)


@pytest.mark.parametrize("name", SIGNED)
def test_standin_matches_its_catalog_signature(tmp_path, name):
    path = tmp_path / CATALOG[name].file
    BUILDERS[name](path)
    check_model(CATALOG[name], path)


def test_dynamic_batch_swapper_matches(tmp_path):
    path = tmp_path / "inswapper_128.onnx"
    standins.build_inswapper(path, dynamic_batch=True)
    check_model(CATALOG["inswapper_128"], path)
    inputs, _ = read_signature(path)
    assert [str(i) for i in inputs] == ["target (?,3,128,128)", "source (?,512)"]


@pytest.mark.parametrize("name", SIGNED)
@pytest.mark.parametrize("keep", [0.5, 0.97, 0.001])
def test_truncated_model_is_named_damaged(tmp_path, name, keep):
    whole = tmp_path / "whole.onnx"
    BUILDERS[name](whole)
    data = whole.read_bytes()
    path = tmp_path / CATALOG[name].file
    path.write_bytes(data[: max(1, int(len(data) * keep))])
    with pytest.raises(ModelError) as error:
        check_model(CATALOG[name], path)
    message = str(error.value)
    assert message.startswith(f"{path} is damaged (") and f"ffb models download {name}" in message
    assert error.value.exit_code == 3


@pytest.mark.parametrize("name", SIGNED)
def test_another_valid_model_under_the_name_is_refused(tmp_path, name):
    path = tmp_path / CATALOG[name].file
    BUILDERS[IMPOSTOR[name]](path)
    with pytest.raises(ModelError) as error:
        check_model(CATALOG[name], path)
    message = str(error.value)
    assert message.startswith(f"{path} is not {name}: expected inputs ")
    assert "; found inputs " in message and f"ffb models download {name}" in message


@pytest.mark.parametrize("data, reason", [
    (b"\xff\xd8\xff\xe0 a JPEG, not a model", "damaged"),
    (b"just some text that is not a model\n", "damaged"),
])
def test_not_onnx_at_all(tmp_path, data, reason):
    path = tmp_path / "inswapper_128.onnx"
    path.write_bytes(data)
    with pytest.raises(ModelError, match=reason):
        check_model(CATALOG["inswapper_128"], path)


@pytest.mark.parametrize("damage", ["truncated", "impostor"])
def test_run_exits_3_with_one_line(env, neural_models, source_image, capsys, monkeypatch, damage):
    models = env / "models"
    shutil.copytree(neural_models, models)
    monkeypatch.setenv("FFB_MODELS_PATH", str(models))
    swapper = models / "inswapper_128.onnx"
    if damage == "truncated":
        swapper.write_bytes(swapper.read_bytes()[: swapper.stat().st_size // 2])
    else:
        shutil.copyfile(models / "arcface_w600k_r50.onnx", swapper)
    (models / "inswapper_128.hash").unlink(missing_ok=True)  # no sidecar: only the signature can tell
    code = main(["run", "-s", str(source_image), "-t", str(source_image), "-o", str(env / "out")])
    err = capsys.readouterr().err
    assert code == 3
    assert "Traceback" not in err and str(swapper) in err
    assert ("is damaged (truncated" if damage == "truncated" else "is not inswapper_128") in err


def test_models_verify_names_a_wrong_file(env, neural_models, capsys, monkeypatch):
    models = env / "models"
    shutil.copytree(neural_models, models)
    monkeypatch.setenv("FFB_MODELS_PATH", str(models))
    shutil.copyfile(models / "scrfd_2.5g.onnx", models / "arcface_w600k_r50.onnx")
    (models / "arcface_w600k_r50.hash").unlink(missing_ok=True)
    assert main(["models", "verify", "--json"]) == 3
    import json
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["arcface_w600k_r50"]["status"] == "corrupt"
    assert "is not arcface_w600k_r50" in rows["arcface_w600k_r50"]["detail"]
    assert rows["inswapper_128"]["status"] in ("ok", "unverified")

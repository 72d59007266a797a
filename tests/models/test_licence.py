"""Licence facts as the user sees them: `ffb models list` columns, --json fields and the once-per-run notice."""
from __future__ import annotations

import json

import pytest

from facefusion_batch.cli import main
from facefusion_batch.models.catalog import CATALOG, PROCESSOR_MODELS
from facefusion_batch.models.licence import commercial_use, non_commercial_notice

# FaceFusion 3.8.1's `__metadata__` licence per model (processors/modules/*/core.py, face_detector.py, ...).
FACEFUSION_LICENCES = {
    "inswapper_128": "Non-Commercial", "hyperswap_1a_256": "ResearchRAIL", "simswap_256": "Non-Commercial",
    "ghost_1_256": "Apache-2.0", "blendswap_256": "Non-Commercial", "uniface_256": "Unknown",
    "hififace_unofficial_256": "Unknown", "gfpgan_1.4": "Apache-2.0", "gpen_bfr_512": "Non-Commercial",
    "codeformer": "S-Lab-1.0", "restoreformer_plus_plus": "Apache-2.0", "fairface": "CC-BY-4.0",
    "arcface_w600k_r50": "Non-Commercial", "scrfd_2.5g": "Non-Commercial", "yoloface_8n": "GPL-3.0",
}


@pytest.mark.parametrize("name, licence", FACEFUSION_LICENCES.items())
def test_licence_names_are_facefusions(name, licence):
    assert CATALOG[name].licence.startswith(licence)


def test_commercial_column_is_yes_no_or_unknown():
    assert commercial_use(CATALOG["inswapper_128"]) == "no"
    assert commercial_use(CATALOG["codeformer"]) == "no"
    assert commercial_use(CATALOG["gpen_bfr_2048"]) == "no"
    assert commercial_use(CATALOG["gfpgan_1.4"]) == "yes"
    assert commercial_use(CATALOG["xseg_2"]) == "unknown"
    # Every "Non-Commercial"/"ResearchRAIL" licence says no; every "Unknown"/unstated one says unknown.
    for spec in CATALOG.values():
        text = spec.licence.lower()
        if "non-commercial" in text or "researchrail" in text:
            assert spec.commercial is False, spec.name
        if text.startswith("unknown"):
            assert spec.commercial is None, spec.name


def test_notice_names_barred_and_unknown_models_once():
    line = non_commercial_notice(["hyperswap_1a_256", "gfpgan_1.4", "xseg_1", "hyperswap_1a_256"])
    assert line is not None and "\n" not in line
    assert line.count("hyperswap_1a_256") == 1 and "ResearchRAIL" in line
    assert "not licensed for commercial use: hyperswap_1a_256 [ResearchRAIL (FaceFusion)]" in line
    assert "no licence stated, check before commercial use: xseg_1" in line and line.endswith("(see `ffb models list`)")
    assert "gfpgan_1.4" not in line


def test_no_notice_when_every_model_allows_commercial_use():
    assert non_commercial_notice(["ghost_1_256", "crossface_ghost"]) is not None  # the converter is unstated
    assert non_commercial_notice(["ghost_1_256", "gfpgan_1.4", "restoreformer_plus_plus"]) is None
    assert non_commercial_notice([]) is None


def test_models_list_json_has_role_size_and_licence(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    (tmp_path / "codeformer.onnx").write_bytes(b"x" * 2_500_000)  # present, not an ONNX graph: corrupt
    assert main(["models", "list", "--models-path", str(tmp_path), "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert set(rows) == set(CATALOG) and len(rows) >= len(PROCESSOR_MODELS) + 5
    assert rows["codeformer"]["role"] == "face_enhancer" and rows["codeformer"]["size_bytes"] == 2_500_000
    assert rows["codeformer"]["commercial"] == "no" and rows["codeformer"]["status"] == "corrupt"
    assert rows["hyperswap_1a_256"] == {**rows["hyperswap_1a_256"], "role": "face_swapper", "status": "missing",
                                        "size_bytes": None, "commercial": "no"}
    assert rows["xseg_3"]["role"] == "face_occluder" and rows["xseg_3"]["commercial"] == "unknown"
    assert rows["gfpgan_1.4"]["commercial"] == "yes" and rows["gfpgan_1.4"]["licence"].startswith("Apache-2.0")


def test_models_list_table_shows_licence_columns(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    (tmp_path / "codeformer.onnx").write_bytes(b"x" * 2_500_000)
    assert main(["models", "list", "--models-path", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "commercial" in out and "licence" in out
    line = next(line for line in out.splitlines() if "codeformer" in line and "│" in line)
    assert " enhancer " in line and "corrupt" in line and "2.5" in line and " no " in line
    assert "S-Lab-1.0" in line
    assert any(text.startswith("codeformer: ") for text in out.splitlines())  # the corrupt file's reason

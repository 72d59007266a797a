"""FaceFusion's processor, mask and selector flags on `ffb run`: names, multi-value forms, choices."""
from __future__ import annotations

import json
import typing

import pytest

from facefusion_batch import settings as settings_module
from facefusion_batch.cli import join_multi_values, main
from facefusion_batch.models.catalog import CATALOG
from facefusion_batch.processors.classifier import GENDERS, ORDERS, RACES
from facefusion_batch.processors.masks import AREA_POINTS, MASK_TYPES, REGION_CLASSES
from facefusion_batch.processors.config import PROCESSORS


def settings_rows(capsys, *args: str) -> dict[str, str]:
    assert main(["run", *args, "--print-settings", "--json"]) == 0
    return {row["key"]: row["value"] for row in json.loads(capsys.readouterr().out)}


def test_choices_are_the_catalog_and_processor_lists():
    """settings.py can't import the catalog (it sits below it): its Literals must list the same names."""
    def family(name: str) -> tuple[str, ...]:
        return tuple(n for n, spec in CATALOG.items() if spec.family == name)

    assert set(settings_module.choices("face_swapper_model")) == set(family("swapper"))
    assert settings_module.choices("face_enhancer_model") == family("enhancer")
    assert settings_module.choices("face_occluder_model") == ("many", *family("occluder"))  # many: all three
    assert settings_module.choices("face_parser_model") == family("parser")
    assert settings_module.choices("processors") == PROCESSORS
    assert settings_module.choices("face_mask_types") == MASK_TYPES
    assert settings_module.choices("face_mask_regions") == tuple(REGION_CLASSES)
    assert settings_module.choices("face_mask_areas") == tuple(AREA_POINTS)
    assert settings_module.choices("face_selector_order") == ORDERS
    assert settings_module.choices("face_selector_gender") == ("auto", *GENDERS)  # auto: the source face's
    assert settings_module.choices("face_selector_race") == ("auto", *RACES)
    sizes = {size for spec in CATALOG.values() for size in spec.boost_sizes}
    assert sizes <= set(settings_module.PIXEL_BOOST_SIZES)


def test_facefusion_multi_value_flags_take_every_word_up_to_the_next_flag():
    args = ["run", "--processors", "face_swapper", "face_enhancer", "-t", "a.mp4", "--face-mask-types=box",
            "--face-mask-types", "occlusion", "region", "--face-mask-padding", "1", "2", "--", "--processors"]
    assert join_multi_values(args) == ["run", "--processors", "face_swapper face_enhancer", "-t", "a.mp4",
                                       "--face-mask-types", "box occlusion region", "--face-mask-padding", "1 2",
                                       "--", "--processors"]
    assert join_multi_values(["models", "--processors", "a", "b"]) == ["models", "--processors", "a", "b"]


@pytest.mark.parametrize("target", ["clip.mp4", "clips/", "photo.JPG", "existing"])
def test_a_target_after_a_multi_value_flag_stays_a_target(tmp_path, monkeypatch, target):
    """`ffb run -s f.jpg --processors face_swapper face_enhancer clips/*.mp4`: the shell's file names are targets,
    not processors (argparse would take them as processor names)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "existing").mkdir()
    args = ["run", "-s", "f.jpg", "--processors", "face_swapper", "face_enhancer", target, "--face-mask-regions",
            "skin", "nose", target]
    assert join_multi_values(args) == ["run", "-s", "f.jpg", "--processors", "face_swapper face_enhancer", target,
                                       "--face-mask-regions", "skin nose", target]


def test_processor_flags_reach_the_settings(capsys):
    rows = settings_rows(
        capsys, "--processors", "face_swapper", "face_enhancer", "--face-swapper-model", "hyperswap_1a_256",
        "--face-swapper-weight", "0.3", "--face-swapper-pixel-boost", "512x512", "--face-enhancer-model",
        "codeformer", "--face-enhancer-blend", "60", "--face-enhancer-weight", "0.7", "--face-mask-types", "box",
        "occlusion", "region", "--face-mask-blur", "0.5", "--face-mask-padding", "5", "10", "--face-mask-regions",
        "skin", "nose", "--face-mask-areas", "mouth", "--face-occluder-model", "xseg_3", "--face-parser-model",
        "bisenet_resnet_18", "--face-selector-order", "left-right", "--face-selector-gender", "female",
        "--face-selector-race", "asian", "--face-selector-age-start", "20", "--face-selector-age-end", "60")
    assert rows["processors"] == "face_swapper face_enhancer"
    assert (rows["face_swapper_model"], rows["face_swapper_weight"], rows["face_swapper_pixel_boost"]) == \
        ("hyperswap_1a_256", "0.3", "512x512")
    assert (rows["face_enhancer_model"], rows["face_enhancer_blend"], rows["face_enhancer_weight"]) == \
        ("codeformer", "60", "0.7")
    assert rows["face_mask_types"] == "box occlusion region" and rows["face_mask_padding"] == "5 10 5 10"
    assert (rows["face_mask_regions"], rows["face_mask_areas"], rows["face_mask_blur"]) == ("skin nose", "mouth", "0.5")
    assert (rows["face_occluder_model"], rows["face_parser_model"]) == ("xseg_3", "bisenet_resnet_18")
    assert (rows["face_selector_order"], rows["face_selector_gender"], rows["face_selector_race"]) == \
        ("left-right", "female", "asian")
    assert (rows["face_selector_age_start"], rows["face_selector_age_end"]) == ("20", "60")


def test_defaults_keep_earlier_runs_unchanged(capsys):
    rows = settings_rows(capsys)
    assert (rows["processors"], rows["face_swapper_model"], rows["face_mask_types"]) == \
        ("face_swapper", "inswapper_128", "box")
    assert (rows["face_selector_order"], rows["face_swapper_pixel_boost"], rows["face_selector_gender"]) == \
        ("large-small", "", "")


@pytest.mark.parametrize("args, says", [
    (["--processors", "face_swapper", "frame_enhancer"], "'frame_enhancer' is not one of: face_swapper, face_enhancer"),
    (["--face-mask-types", "box", "hands"], "'hands' is not one of: box, occlusion, area, region"),
    (["--face-swapper-pixel-boost", "300x300"], "is not one of: 128x128"),
    (["--face-mask-padding", "1", "2", "3", "4", "5"], "give 1 to 4 percentages"),
])
def test_bad_processor_flags_are_one_line_exit_2(capsys, args, says):
    assert main(["run", *args, "--print-settings"]) == 2
    err = capsys.readouterr().err
    assert says in err and err.strip().count("\n") == 0


def test_help_lists_the_facefusion_flags(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["run", "--help"]) == 0
    text = capsys.readouterr().out
    for flag in ("--processors", "--face-swapper-model", "--face-enhancer-blend", "--face-mask-types",
                 "--face-occluder-model", "--face-selector-order", "--face-selector-age-start"):
        assert flag in text, flag

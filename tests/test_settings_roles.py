"""Every setting declares its role where it is declared; the journal key, the watch's rebuild decision, ranges,
--print-settings and docs/settings.md are derived from that declaration."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from facefusion_batch import settings as settings_module
from facefusion_batch.cli import main
from facefusion_batch.errors import SettingsError
from facefusion_batch.workflow import processor
from facefusion_batch.settings import (DECLARED, FIELDS, ROLES, Settings, engine_changed, load_settings,
                                       parse_value, with_role)

PACKAGE = Path(settings_module.__file__).parent


def test_every_setting_declares_a_role():
    undeclared = [name for name in FIELDS if name not in DECLARED]
    assert not undeclared, f"settings without a declared role: {undeclared}"
    assert {d.role for d in DECLARED.values()} <= set(ROLES)


def test_a_field_without_a_role_is_refused_where_it_is_declared():
    with pytest.raises(TypeError, match="role"):
        settings_module._spec("misc", "A setting that says nothing of what it changes.", 1)
    with pytest.raises(ValueError, match="role 'shape'"):
        settings_module._spec("misc", "A made-up role.", 1, role="shape")

    @dataclass(frozen=True)
    class Bare:
        plain: int = field(default=1)  # declared without _spec: no role

    assert "declared" not in Bare.__dataclass_fields__["plain"].metadata


def _key(flags: dict, monkeypatch) -> str:
    monkeypatch.setattr(processor, "__version__", "pinned")
    engine = SimpleNamespace(name="neural", model_files=())
    marker = SimpleNamespace(key={"mode": "c2pa", "signer": "f"})
    return processor.output_key(load_settings(None, {}, flags).settings, "abc", engine, marker)


# Keys the hand-kept lists gave before the roles were declared (computed with that code), when the invisible
# watermark was off by default: journals written by those runs still match runs made as they were (the
# watermark off), so nothing finished is redone after the change.
@pytest.mark.parametrize("flags, key", [
    ({}, "aeea60adfa95ec8fcd60"),
    ({"face_selector_mode": "many"}, "86cd0aa39951cd62d7db"),
    ({"processors": "face_swapper face_enhancer"}, "ef4574011389cc115240"),
    ({"output_video_quality": 40, "chunk_size": 60}, "f2aea4f3f69ce54bc1da"),
    ({"execution_thread_count": 3, "frame_transport": "memory", "batch_size": 4}, "aeea60adfa95ec8fcd60"),
])
def test_journal_keys_of_earlier_runs_are_unchanged(flags, key, monkeypatch):
    assert _key({**flags, "output_watermark": False}, monkeypatch) == key


def test_the_watermark_on_by_default_redoes_what_was_made_without_it(monkeypatch):
    """The watermark went on by default: a target finished when it was off (the key above) is redone with the
    mark, and a change of the mark's strength changes the key too."""
    assert _key({}, monkeypatch) != "aeea60adfa95ec8fcd60"
    on = _key({}, monkeypatch)
    monkeypatch.setattr(processor, "STRENGTH", 1.6)
    assert _key({}, monkeypatch) != on


@pytest.mark.parametrize("flags", [{"temp_frame_format": "jpg"}, {"c2pa_on_failure": "metadata"}])
def test_settings_that_were_in_no_list_now_shape_the_key_when_set(flags, monkeypatch):
    """jpg temp frames are lossy: switching to them redoes the targets (before, they were silently skipped)."""
    assert _key(flags, monkeypatch) != _key({}, monkeypatch)


@pytest.mark.parametrize("flags", [{"execution_thread_count": 2}, {"log_level": "error"}, {"ray_workers": 3},
                                   {"frame_transport": "memory"}, {"execution_providers": "cpu"}])
def test_run_and_engine_settings_leave_the_key_alone(flags, monkeypatch):
    assert _key(flags, monkeypatch) == _key({}, monkeypatch)


def test_every_output_setting_is_in_the_key(monkeypatch):
    """Changing any output setting (to another valid value) changes the key."""
    samples = {"face_swapper_pixel_boost": "256x256", "face_mask_padding": "5", "face_selector_gender": "male",
               "face_selector_race": "asian", "face_selector_age_start": 10, "face_selector_age_end": 90,
               "visible_label": "AI", "reference_face_distance": 0.2, "face_detector_size": 320,
               "trim_frame_start": 5, "trim_frame_end": 50, "output_video_fps": 30,
               "reference_frame_number": 3, "reference_face_position": 1, "face_detector_angles": "0 90",
               "face_detector_margin": "5", "output_pattern": "{target_name}-x{target_extension}"}
    base = _key({}, monkeypatch)
    for name in with_role("output", "output-unless-default"):
        if DECLARED[name].keyed is not None and name != "reference_face_distance":
            continue  # keyed through what it stands for (a file's hash, the signer), tested where that is made
        value = samples.get(name, _another(name))
        assert value is not None, f"no sample value for {name}"
        assert _key({name: value}, monkeypatch) != base, name


def _another(name: str):
    choices = settings_module.choices(name)
    default = FIELDS[name].default
    if choices:
        return next(c for c in choices if (c,) != default and c != default)
    if isinstance(default, bool):
        return not default
    if isinstance(default, (int, float)):
        low, high = DECLARED[name].range or (0, 1000)
        return type(default)(low) if default != low else type(default)(high)
    return None


@pytest.mark.parametrize("name", ["output_image_quality", "output_video_quality", "visible_label",
                                  "face_selector_mode", "face_selector_order", "chunk_size", "log_level",
                                  "reuse_motion_threshold"])
def test_a_reload_that_changes_only_output_or_run_settings_keeps_the_engine(name):
    old = Settings()
    value = {"visible_label": "AI", "face_selector_mode": "many"}.get(name, _another(name))
    assert not engine_changed(old, Settings(**{name: value})), name


@pytest.mark.parametrize("change", [{"face_detector_model": "yoloface"}, {"execution_providers": ("cuda", "cpu")},
                                    {"models_path": Path("elsewhere")}, {"face_swapper_model": "simswap_256"},
                                    {"batch_size": 4}, {"face_mask_types": ("box", "occlusion")}])
def test_a_reload_that_changes_an_engine_setting_rebuilds_it(change):
    assert engine_changed(Settings(), Settings(**change))


def test_what_the_engine_reads_of_the_settings_is_declared_engine():
    """Every setting read where the engine is built (engines, models, processors, faces, offline) declares it:
    a new one left out would be kept across a watch reload on an engine built without it."""
    read: dict[str, set[str]] = {}
    folders = ("engines", "models", "processors", "faces", "offline")
    for path in (p for folder in folders for p in (PACKAGE / folder).rglob("*.py")):
        if path.name == "base.py" and path.parent.name == "engines":
            continue  # the face selection, rebuilt on every reload by processor.prepare
        for name in re.findall(r"(?:settings|_settings|\bs)\.([a-z_0-9]+)", path.read_text()):
            if name in FIELDS:
                read.setdefault(name, set()).add(str(path.relative_to(PACKAGE)))
    # concurrency_of, as the engine uses it (slots, intra-op and OpenCV threads, the micro-batch)
    read.update({n: {"concurrency.py"} for n in ("execution_providers", "execution_thread_count",
                                                "execution_inference_slots", "batch_size")})
    assert len(read) > 20
    wrong = {name: where for name, where in read.items() if not DECLARED[name].engine}
    assert not wrong, f"read by the engine but not declared engine=True: {wrong}"


def test_ranges_come_from_the_declaration():
    assert DECLARED["output_image_quality"].range == (0, 100)
    with pytest.raises(SettingsError, match="out of range 0..100"):
        parse_value("output_image_quality", "101", "--output-image-quality")
    assert parse_value("output_image_quality", "100", "x") == 100


def test_facefusion_names_are_declared():
    assert settings_module.FROM_FACEFUSION == {"workflow_strategy": "frame_transport"}
    assert settings_module.facefusion_name("face_detector_size") == "face_detector_size"
    assert settings_module.facefusion_name("keypoint_reuse") is None
    assert load_settings(None, {}, {}).settings.execution_device_ids == (0,)


def test_the_former_single_device_id_is_still_read():
    """execution_device_id (one id) was ffb's name before several were taken: old profiles, environments and
    callers still work, and a process's sessions use the first id."""
    assert load_settings(None, {"FFB_EXECUTION_DEVICE_ID": "2"}, {}).settings.execution_device_ids == (2,)
    assert load_settings(None, {}, {"execution_device_id": 1}).settings.execution_device_id == 1
    several = load_settings(None, {}, {"execution_device_ids": "1 0", "execution_providers": "cuda",
                                       "executor": "processes"}).settings
    assert several.execution_device_ids == (1, 0) and several.execution_device_id == 1


def test_print_settings_shows_each_settings_role(capsys):
    assert main(["run", "--print-settings", "--json"]) == 0
    rows = {row["key"]: row for row in json.loads(capsys.readouterr().out) if "role" in row}
    assert set(rows) == set(FIELDS)
    assert rows["temp_frame_format"]["role"] == "output-unless-default"
    assert rows["execution_providers"]["role"] == "engine" and rows["log_level"]["role"] == "run"

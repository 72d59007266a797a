"""FaceFusion 3.8.1's options (facefusion.ini keys and their command-line flags) and what ffb does with each.

A FaceFusion user's ini is read as an ffb profile, and their command line by `ffb run`. Options ffb has a
setting for are used (some under another name, and in FaceFusion's value formats: `640x640`, `yolo_face`,
`jpeg`). The others are recognised: one that would not change the output (logging, downloads, a value that is
FaceFusion's default anyway) is reported once as ignored; one that would, and that ffb can't honour, is an error
naming it and what to do instead.
"""
from __future__ import annotations

from dataclasses import dataclass

from facefusion_batch.errors import SettingsError

# The stock file's sections and keys, in its order (facts of FaceFusion 3.8.1's facefusion.ini).
LAYOUT: dict[str, tuple[str, ...]] = {
    "paths": ("temp_path", "jobs_path", "source_paths", "target_path", "output_path"),
    "patterns": ("source_pattern", "target_pattern", "output_pattern"),
    "face_detector": ("face_detector_model", "face_detector_size", "face_detector_margin", "face_detector_angles",
                      "face_detector_score"),
    "face_landmarker": ("face_landmarker_model", "face_landmarker_score"),
    "face_selector": ("face_selector_mode", "face_selector_order", "face_selector_age_start",
                      "face_selector_age_end", "face_selector_gender", "face_selector_race",
                      "reference_face_position", "reference_face_distance", "reference_frame_number"),
    "face_tracker": ("face_tracker_score",),
    "face_masker": ("face_occluder_model", "face_parser_model", "face_mask_types", "face_mask_areas",
                    "face_mask_regions", "face_mask_blur", "face_mask_padding"),
    "voice_extractor": ("voice_extractor_model",),
    "frame_extraction": ("trim_frame_start", "trim_frame_end", "temp_frame_format", "temp_pixel_format"),
    "frame_distribution": ("target_frame_amount",),
    "output_creation": ("output_image_quality", "output_image_scale", "output_audio_encoder",
                        "output_audio_quality", "output_audio_volume", "output_video_encoder",
                        "output_video_preset", "output_video_quality", "output_video_scale", "output_video_fps"),
    "workflow": ("workflow_mode", "workflow_strategy"),
    "processors": ("processors", "age_modifier_model", "age_modifier_direction", "background_remover_model",
                   "background_remover_fill_color", "background_remover_despill_color",
                   "deep_swapper_model", "deep_swapper_morph", "expression_restorer_model",
                   "expression_restorer_factor", "expression_restorer_areas", "face_debugger_items",
                   "face_editor_model", "face_editor_eyebrow_direction", "face_editor_eye_gaze_horizontal",
                   "face_editor_eye_gaze_vertical", "face_editor_eye_open_ratio", "face_editor_lip_open_ratio",
                   "face_editor_mouth_grim", "face_editor_mouth_pout", "face_editor_mouth_purse",
                   "face_editor_mouth_smile", "face_editor_mouth_position_horizontal",
                   "face_editor_mouth_position_vertical", "face_editor_head_pitch", "face_editor_head_yaw",
                   "face_editor_head_roll", "face_enhancer_model", "face_enhancer_blend", "face_enhancer_weight",
                   "face_swapper_model", "face_swapper_pixel_boost", "face_swapper_weight",
                   "frame_colorizer_model", "frame_colorizer_size", "frame_colorizer_blend",
                   "frame_enhancer_model", "frame_enhancer_blend", "lip_syncer_model", "lip_syncer_weight"),
    "uis": ("open_browser", "ui_layouts", "ui_workflow"),
    "download": ("download_providers", "download_scope"),
    "benchmark": ("benchmark_mode", "benchmark_resolutions", "benchmark_cycle_count"),
    "execution": ("execution_device_ids", "execution_providers", "execution_thread_count"),
    "memory": ("video_memory_strategy",),
    "misc": ("log_level", "halt_on_error"),
}

# Keys of earlier FaceFusion 3.x ini files that 3.8.1 no longer has, still found in users' files.
EARLIER: dict[str, tuple[str, ...]] = {"output_creation": ("output_image_resolution", "output_video_resolution",
                                                           "skip_audio"),
                                       "frame_extraction": ("keep_temp",)}

@dataclass(frozen=True)
class Unsupported:
    """A FaceFusion option ffb does not have: how many values its flag takes ('+': one or more, 0: none), the
    values that ask for what ffb does anyway (None: any value, the option never changes the output), and what
    to do instead."""

    nargs: int | str
    same: tuple[str, ...] | None
    instead: str


_AUDIO = "ffb keeps each target's audio as it is, copied where the container takes it"
_SIZE = "FaceFusion 3.3 replaced it by output_video_scale and output_image_scale, which ffb has: set those"
_NO_UI = "ffb has no UI"

# FaceFusion options (ini key; the flag is --key-with-dashes) that ffb has no setting for.
UNSUPPORTED: dict[str, Unsupported] = {
    "source_paths": Unsupported("+", None, "pass --source"),
    "target_path": Unsupported(1, None, "pass --target"),
    "source_pattern": Unsupported(1, None, "pass --source"),
    "target_pattern": Unsupported(1, None, "pass --target with a glob"),
    "jobs_path": Unsupported(1, None, "ffb keeps its journal in <output>/.ffb"),
    "voice_extractor_model": Unsupported(1, None, "only FaceFusion's lip syncer uses it"),
    "keep_temp": Unsupported(0, None, "ffb keeps a video's finished chunks until it is done, to resume"),
    "output_video_resolution": Unsupported(1, (), _SIZE),  # FaceFusion 3.0-3.2's, still in scripts
    "output_image_resolution": Unsupported(1, (), _SIZE),
    "skip_audio": Unsupported(0, ("false",), "ffb keeps each target's audio; remove it afterwards"),
    "output_audio_encoder": Unsupported(1, None, _AUDIO),
    "output_audio_quality": Unsupported(1, None, _AUDIO),
    "output_audio_volume": Unsupported(1, ("100",), _AUDIO),
    "open_browser": Unsupported(0, None, _NO_UI),
    "ui_layouts": Unsupported("+", None, _NO_UI),
    "ui_workflow": Unsupported(1, None, _NO_UI),
    "download_providers": Unsupported("+", None, "ffb downloads with `ffb models download`; set "
                                                 "download_mirror for a mirror"),
    "download_scope": Unsupported(1, None, "ffb downloads with `ffb models download`"),
    "benchmark_mode": Unsupported(1, None, "see ffb benchmark --help"),
    "benchmark_resolutions": Unsupported("+", None, "see ffb benchmark --help"),
    "benchmark_cycle_count": Unsupported(1, None, "see ffb benchmark --help"),
    "halt_on_error": Unsupported(0, None, "ffb records a failed target, goes on, and exits 1 at the end"),
    "face_tracker_score": Unsupported(1, None, "ffb follows each face across frames itself: see its "
                                               "keypoint_reuse and redetect_interval"),
    "target_frame_amount": Unsupported(1, None, "ffb's face tracks span the frames around each one itself"),
    "temp_pixel_format": Unsupported(1, ("bgr24",), "ffb keeps an image's alpha channel but not a video's; "
                                                    "set it to bgr24 or drop it"),
    "workflow_mode": Unsupported(1, None, "ffb takes each target as an image or a video by its kind, as auto does"),
}

# Options of FaceFusion's other processors: they do nothing without their processor (which ffb refuses by
# name in `processors`), in FaceFusion too.
_OTHER_PROCESSORS = {"age_modifier", "background_remover", "deep_swapper", "expression_restorer", "face_debugger",
                     "face_editor", "frame_colorizer", "frame_enhancer", "lip_syncer"}
for _key in LAYOUT["processors"]:
    _processor = next((p for p in _OTHER_PROCESSORS if _key.startswith(p + "_")), None)
    if _processor:
        UNSUPPORTED[_key] = Unsupported("+" if _key.endswith(("_areas", "_items", "_color")) else 1, None,
                                        f"only FaceFusion's {_processor} processor uses it")


def flag(key: str) -> str:
    """FaceFusion's command-line flag of an ini key."""
    return "--" + key.replace("_", "-")


def unsupported_note(key: str, value: str, shown: str, setting: str) -> str:
    """The note listing a FaceFusion option ffb has no setting for (`shown`: its name as the user wrote it);
    SettingsError naming `setting` (the option with its value) when ignoring it would change the output."""
    return f"{shown} ({ignored_because(key, value, setting)})"


def ignored_because(key: str, value: str, setting: str) -> str:
    """Why ffb may ignore FaceFusion option `key` set to `value` (what ffb does instead); SettingsError naming
    `setting` when ignoring it would change the output."""
    option = UNSUPPORTED[key]  # every LAYOUT key ffb lacks is in UNSUPPORTED (a test checks it)
    if option.same is not None and " ".join(value.replace(",", " ").split()) not in option.same:
        raise SettingsError(f"{setting}: FaceFusion's option, which ffb does not have; {option.instead}")
    return option.instead


def is_facefusion_key(section: str, key: str) -> bool:
    return key in LAYOUT.get(section, ()) or key in EARLIER.get(section, ())


def section_of(key: str) -> str | None:
    """The FaceFusion section a key belongs in (None: not a FaceFusion key)."""
    return next((section for layout in (LAYOUT, EARLIER) for section, keys in layout.items() if key in keys), None)

"""FaceFusion 3.8.1's facefusion.ini: every section and key, and what ffb does with each.

A FaceFusion user's ini is read as an ffb profile. Keys ffb has a setting for are used (some under another
name, and in FaceFusion's value formats: `640x640`, `yolo_face`, `jpeg`); the others are recognised and
reported once as ignored, never as errors.
"""
from __future__ import annotations

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
    "face_masker": ("face_occluder_model", "face_parser_model", "face_mask_types", "face_mask_areas",
                    "face_mask_regions", "face_mask_blur", "face_mask_padding"),
    "voice_extractor": ("voice_extractor_model",),
    "frame_extraction": ("trim_frame_start", "trim_frame_end", "temp_frame_format", "keep_temp"),
    "output_creation": ("output_image_quality", "output_image_scale", "output_audio_encoder",
                        "output_audio_quality", "output_audio_volume", "output_video_encoder",
                        "output_video_preset", "output_video_quality", "output_video_scale", "output_video_fps"),
    "processors": ("processors", "age_modifier_model", "age_modifier_direction", "background_remover_model",
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
    "memory": ("video_memory_strategy", "system_memory_limit"),
    "misc": ("log_level", "halt_on_error"),
}

# FaceFusion keys read into an ffb setting of another name.
RENAMED: dict[str, str] = {"execution_device_ids": "execution_device_id"}

# What to do instead, for FaceFusion keys whose purpose ffb serves another way.
INSTEAD: dict[str, str] = {
    "source_paths": "pass --source",
    "target_path": "pass --target",
    "source_pattern": "pass --source",
    "target_pattern": "pass --target with a glob",
    "output_pattern": "outputs mirror the target tree under --output",
    "jobs_path": "ffb keeps its journal in <output>/.ffb",
    "keep_temp": "ffb keeps a video's finished chunks until it is done, to resume",
    "halt_on_error": "ffb records a failed target and goes on",
    "download_providers": "set download_mirror",
    "trim_frame_start": "trim the video first",
    "trim_frame_end": "trim the video first",
}


def is_facefusion_key(section: str, key: str) -> bool:
    return key in LAYOUT.get(section, ())


def section_of(key: str) -> str | None:
    """The FaceFusion section a key belongs in (None: not a FaceFusion key)."""
    return next((section for section, keys in LAYOUT.items() if key in keys), None)


def ignored_note(key: str) -> str:
    """The note listing a FaceFusion key ffb doesn't use (with what to do instead, where there is a way)."""
    instead = INSTEAD.get(key)
    return key + (f" ({instead})" if instead else "")

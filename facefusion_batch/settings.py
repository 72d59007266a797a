"""Settings: one frozen object built from defaults < profile (ini or TOML) < FFB_* environment < flags.

Every setting is declared once, as a field of `Settings` whose `Declaration` (in the field's metadata) says
its profile section, help, role (what changing it does: `ROLES`), range, FaceFusion name and whether the engine
is built from it. The profile loaders, the environment reader, the journal key, the watch's rebuild decision,
`--print-settings`, docs/settings.md and the CLI all read that one declaration, and `Literal` types are the
single list of allowed choices.
"""
from __future__ import annotations

import configparser
import dataclasses
import difflib
import os
import string
import sys
import tempfile
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

from facefusion_batch import facefusion_ini
from facefusion_batch.errors import SettingsError
from facefusion_batch.listing import Problems, capped, listed

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

Engine = Literal["auto", "neural", "offline"]
ExecutionProvider = Literal["cpu", "cuda", "tensorrt"]
FaceDetectorModel = Literal["scrfd", "yoloface", "retinaface", "yunet", "many"]  # many: the first three at once
FaceSelectorMode = Literal["many", "one", "reference"]
# Processor choices: FaceFusion 3.8.1's names (a test checks them against models.catalog and processors/).
Processor = Literal["face_swapper", "face_enhancer"]
FaceSwapperModel = Literal[
    "hyperswap_1a_256", "hyperswap_1b_256", "hyperswap_1c_256", "inswapper_128", "inswapper_128_fp16",
    "simswap_256", "simswap_unofficial_512", "ghost_1_256", "ghost_2_256", "ghost_3_256", "blendswap_256",
    "uniface_256", "hififace_unofficial_256"]
FaceEnhancerModel = Literal["gfpgan_1.2", "gfpgan_1.3", "gfpgan_1.4", "gpen_bfr_256", "gpen_bfr_512",
                            "gpen_bfr_1024", "gpen_bfr_2048", "codeformer", "restoreformer_plus_plus"]
FaceMaskType = Literal["box", "occlusion", "area", "region"]
FaceMaskRegion = Literal["skin", "left-eyebrow", "right-eyebrow", "left-eye", "right-eye", "glasses", "nose",
                         "mouth", "upper-lip", "lower-lip"]
FaceMaskArea = Literal["upper-face", "lower-face", "mouth"]
FaceOccluderModel = Literal["many", "xseg_1", "xseg_2", "xseg_3"]
FaceLandmarkerModel = Literal["many", "2dfan4", "peppa_wutz"]
FaceParserModel = Literal["bisenet_resnet_18", "bisenet_resnet_34"]
FaceSelectorOrder = Literal["left-right", "right-left", "top-bottom", "bottom-top", "small-large", "large-small",
                            "best-worst", "worst-best"]
FaceSelectorGender = Literal["auto", "female", "male"]  # auto: the source face's (as FaceFusion)
FaceSelectorRace = Literal["auto", "white", "black", "latino", "asian", "indian", "arabic"]
PIXEL_BOOST_SIZES = (128, 256, 384, 512, 768, 1024)  # every model's own sizes are a subset (checked at start)
VideoEncoder = Literal["auto", "libx264", "libx265", "libvpx-vp9", "h264_nvenc", "hevc_nvenc"]
VideoPreset = Literal[
    "ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"
]
TempFrameFormat = Literal["bmp", "png", "jpg", "tiff"]
FrameTransport = Literal["temp", "memory"]
VideoMemoryStrategy = Literal["strict", "moderate", "tolerant"]
LogLevel = Literal["error", "info"]
ExecutorKind = Literal["local", "processes", "ray"]
FaceWork = Literal["auto", "cpu", "device"]
OutputProvenance = Literal["c2pa", "metadata", "off"]
C2paOnFailure = Literal["fail", "metadata"]
LabelPosition = Literal["bottom-right", "bottom-left", "top-right", "top-left"]
ContentGate = Literal["auto", "off"]


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ffb"


# What a setting changes, declared with the setting (the journal key, the watch's rebuild decision,
# --print-settings and docs/settings.md are derived from it; a test fails for a field without one).
Role = Literal["output", "output-unless-default", "engine", "run"]
ROLES: dict[str, str] = {
    "output": "shapes the output: its value is in the journal key, so changing it redoes finished targets",
    "output-unless-default": "shapes the output; in the journal key when not at its default (so journals "
                             "written before the setting existed still match)",
    "engine": "how the engine is built (models, providers, sessions, threads); not in the journal key, which "
              "records the engine and model files actually used",
    "run": "only how the run goes (speed, paths, logging, scheduling); never redoes a finished target",
}


@dataclass(frozen=True)
class Declaration:
    """A setting's declaration: where it is written, what it changes, what it may be."""

    section: str  # profile section
    help: str
    role: Role
    engine: bool  # the engine is built from it: a new value needs another engine (the watch rebuilds)
    range: tuple[float, float] | None  # inclusive bounds of a number
    facefusion: str | None  # FaceFusion's key for it when named otherwise there (else ini keys match names)
    keyed: str | None  # an output setting the journal key holds under this entry in another form (a hash...)
    fixed: bool  # held for a long run's life: ffb watch can't change it on SIGHUP (lock, journal, outputs)


def _spec(section: str, help: str, default: Any = dataclasses.MISSING, *, role: Role, engine: bool = False,
          range: tuple[float, float] | None = None, facefusion: str | None = None, keyed: str | None = None,
          fixed: bool = False, default_factory: Any = None) -> Any:
    """A Settings field with its declaration; `role` is required (see ROLES)."""
    if role not in ROLES:
        raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
    if keyed is not None and role != "output":
        raise ValueError("only an output setting is keyed in another form")
    declared = Declaration(section, help, role, engine or role == "engine", range, facefusion, keyed, fixed)
    meta = {"section": section, "help": help, "declared": declared}
    if default_factory is not None:
        return field(default_factory=default_factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Settings:
    """Everything a run depends on. Build it with `load_settings`; pass it down, never mutate it."""

    temp_path: Path = _spec("paths", "Directory for extracted frames and chunks (fast local disk).",
                            default_factory=lambda: Path(tempfile.gettempdir()),
                            role="run")
    output_path: Path = _spec("paths", "Directory that receives the outputs (mirrors the target tree); with one "
                              "target it may name the output file (result.mp4), as in FaceFusion.",
                              default_factory=lambda: Path("output"),
                              role="run", fixed=True)
    models_path: Path = _spec("paths", "Directory of .onnx model files; a FaceFusion .assets/models works.",
                              default_factory=lambda: _default_cache() / "models",
                              role="engine")
    cache_path: Path = _spec("paths", "Directory for the source-face cache.",
                             default_factory=_default_cache,
                             role="engine")
    state_path: Path | None = _spec("paths", "Directory for the journal and lock (default: <output>/.ffb).", None,
                                    role="run", fixed=True)
    shared_path: Path | None = _spec(
        "paths", "Ray executor: directory every node mounts at the same path, where the chunks of a video split "
        "across workers meet (default: temp_path, which is then shared).", None,
        role="run")
    ffmpeg_path: Path | None = _spec(
        "paths", "ffmpeg executable to use (default: the one bundled with ffb, from imageio-ffmpeg); checked "
        "against the minimum version at start-up.", None,
        role="run")

    download_mirror: str = _spec("download", "Base URL to fetch model files from instead of the FaceFusion "
                                 "release (a mirror holding the same file names).", "",
                                 role="run")

    engine: Engine = _spec("face_swapper", "auto: neural when its models are present, else offline.",
                           "auto",
                           role="engine")
    processors: tuple[Processor, ...] = _spec(
        "processors", "FaceFusion's processors, in order: face_swapper, then optionally face_enhancer (the "
        "enhancer runs on the swapped faces only; neural engine).", ("face_swapper",),
        role="output-unless-default", engine=True)
    face_swapper_model: FaceSwapperModel = _spec(
        "processors", "Neural swapper model (FaceFusion's file names). ffb's default stays inswapper_128, so "
        "runs of earlier versions are unchanged; FaceFusion 3.8.1 defaults to hyperswap_1a_256 (set it here).",
        "inswapper_128",
        role="output", engine=True)
    face_swapper_weight: float = _spec(
        "processors", "Source/target identity balance 0..1 (FaceFusion's meaning: 0.5 the source as is, towards 1 "
        "more of the target's own identity; blendswap/uniface have none: a warning says so).", 0.5,
        role="output-unless-default", engine=True, range=(0.0, 1.0))
    face_swapper_pixel_boost: str = _spec(
        "processors", "Crop size the swapper works at, e.g. 512x512: the crop is tiled into model-size patches "
        "(a multiple of the model's size, up to 1024x1024); empty: the model's own size.", "",
        role="output-unless-default", engine=True)
    face_enhancer_model: FaceEnhancerModel = _spec("processors", "Face enhancer model (with processors "
                                                   "face_enhancer).", "gfpgan_1.4",
                                                   role="output-unless-default", engine=True)
    face_enhancer_blend: int = _spec("processors", "How much of the enhanced face replaces the swapped one, "
                                     "0..100.", 80,
                                     role="output-unless-default", engine=True, range=(0, 100))
    face_enhancer_weight: float = _spec("processors", "CodeFormer's fidelity input 0..1 (other enhancers have "
                                        "none and ignore it, as in FaceFusion).", 0.5,
                                        role="output-unless-default", engine=True, range=(0.0, 1.0))

    face_detector_model: FaceDetectorModel = _spec("face_detector", "Neural face detector.", "scrfd",
                                                   role="output", engine=True)
    face_detector_size: int = _spec("face_detector", "Detector input size in pixels (square).", 640,
                                    role="output", engine=True, range=(64, 2048))
    face_detector_score: float = _spec("face_detector", "Minimum detection score, 0..1.", 0.5,
                                       role="output", engine=True, range=(0.0, 1.0))
    face_detector_angles: tuple[int, ...] = _spec(
        "face_detector", "Angles the frame is also turned to before detecting (0 90 180 270; each one more "
        "detector run) to find faces lying on their side or upside down, as FaceFusion.", (0,),
        role="output-unless-default", engine=True)
    face_detector_margin: tuple[int, ...] = _spec(
        "face_detector", "Black margin around the frame while detecting, top right bottom left in percent of "
        "the frame's side (1 to 4 numbers 0..100, as CSS; 100: half the side), as FaceFusion: finds faces cut "
        "by the frame's edge.", (0, 0, 0, 0),
        role="output-unless-default", engine=True)
    face_detector_min_size: int = _spec(
        "face_detector", "Offline engine: also find faces down to this many pixels by scanning tiles on every "
        "detected frame (slower; 0: tiles every 24 frames, 12 in a moving shot, find faces down to ~1/25 of the "
        "frame's long side).", 0,
        role="output", engine=True, range=(0, 4096))

    keypoint_reuse: bool = _spec(
        "face_tracker", "Reuse (and track) faces found on a reference frame while motion stays small.", True,
        role="output")
    reuse_motion_threshold: float = _spec(
        "face_tracker", "Mean grey-level change around the faces (0..255) above which faces are detected anew.",
        4.0,
        role="output", range=(0.0, 255.0))
    redetect_interval: int = _spec("face_tracker", "Detect at least every this many frames (catches new faces).",
                                   12,
                                   role="output", range=(1, 10000))

    face_selector_mode: FaceSelectorMode = _spec(
        "face_selector", "many: every face; one: the largest; reference: faces like --reference-face.", "one",
        role="output")
    reference_face_path: Path | None = _spec("face_selector", "Image of the face to replace (reference mode).",
                                             None,
                                             role="output", keyed="reference")
    reference_face_distance: float = _spec(
        "face_selector", "How unlike the reference face a face may be and still be swapped, 0..1 (lower is "
        "stricter): FaceFusion's scale, half the cosine distance of the face embeddings.", 0.3,
        role="output", keyed="reference_face_distance", range=(0.0, 1.0))
    reference_frame_number: int = _spec(
        "face_selector", "Reference mode without --reference-face: the frame of each video target (from 0) whose "
        "face at reference_face_position is the face to replace (an image target: the image), as FaceFusion.", 0,
        role="output-unless-default", range=(0, 10 ** 9))
    reference_face_position: int = _spec(
        "face_selector", "Which face of the reference frame, counted from 0 in face_selector_order (the last when "
        "there are fewer), as FaceFusion.", 0,
        role="output-unless-default", range=(0, 10 ** 6))
    face_selector_order: FaceSelectorOrder = _spec(
        "face_selector", "Order of the faces of a frame; mode one takes the first (large-small: the largest).",
        "large-small",
        role="output-unless-default")
    face_selector_gender: FaceSelectorGender | None = _spec(
        "face_selector", "Swap only faces classified as this gender (auto: the source face's; needs the fairface "
        "model; neural engine).",
        None,
        role="output-unless-default", engine=True)
    face_selector_race: FaceSelectorRace | None = _spec(
        "face_selector", "Swap only faces classified as this race (auto: the source face's; needs the fairface "
        "model; neural engine).",
        None,
        role="output-unless-default", engine=True)
    face_selector_age_start: int | None = _spec(
        "face_selector", "Swap only faces whose classified age bracket reaches this age or more (fairface).", None,
        role="output-unless-default", engine=True, range=(0, 100))
    face_selector_age_end: int | None = _spec(
        "face_selector", "Swap only faces whose classified age bracket starts below this age (fairface).", None,
        role="output-unless-default", engine=True, range=(0, 100))

    face_mask_types: tuple[FaceMaskType, ...] = _spec(
        "face_masker", "Masks combined for the paste (the strictest wins): box, occlusion (hands and hair in "
        "front of the face stay; face_occluder_model), region (face_parser_model, face_mask_regions), area (the "
        "hull of face_mask_areas' 68 landmarks; face_landmarker_model; neural engine).", ("box",),
        role="output-unless-default", engine=True)
    face_mask_blur: float = _spec("face_masker", "Blur of the box mask's edge, 0..1.", 0.3,
                                  role="output-unless-default", engine=True, range=(0.0, 1.0))
    face_mask_padding: tuple[int, ...] = _spec(
        "face_masker", "Box mask padding in percent of the crop: top right bottom left (1 to 4 numbers, as in "
        "CSS and FaceFusion).", (0, 0, 0, 0),
        role="output-unless-default", engine=True)
    face_mask_regions: tuple[FaceMaskRegion, ...] = _spec(
        "face_masker", "Face parts the region mask keeps.", ("skin", "left-eyebrow", "right-eyebrow", "left-eye",
                                                           "right-eye", "glasses", "nose", "mouth", "upper-lip",
                                                           "lower-lip"),
        role="output-unless-default", engine=True)
    face_mask_areas: tuple[FaceMaskArea, ...] = _spec("face_masker", "Face areas the area mask keeps.",
                                                      ("upper-face", "lower-face", "mouth"),
                                                      role="output-unless-default", engine=True)
    face_occluder_model: FaceOccluderModel = _spec("face_masker", "Occlusion mask model (many: xseg_1, xseg_2 and "
                                                   "xseg_3, the strictest wins).", "xseg_1",
                                                   role="output-unless-default", engine=True)
    face_parser_model: FaceParserModel = _spec("face_masker", "Region mask model.", "bisenet_resnet_34",
                                               role="output-unless-default", engine=True)
    face_landmarker_model: FaceLandmarkerModel = _spec(
        "face_landmarker", "68-point landmarker for the area mask: 2dfan4, peppa_wutz, or many (both; the better "
        "score wins). Always with fan_68_5, the 68-from-5 estimate.", "2dfan4",
        role="output-unless-default", engine=True)
    face_landmarker_score: float = _spec(
        "face_landmarker", "Landmarker score 0..1 a face needs, else its 68 points come from the 68-from-5 "
        "estimate (0: the landmarker does not run).", 0.5,
        role="output-unless-default", engine=True, range=(0.0, 1.0))

    output_video_encoder: VideoEncoder = _spec(
        "output_creation", "ffmpeg video encoder; auto: libvpx-vp9 for .webm, libx265 for HDR in .mp4/.mov/.mkv "
        "(keeps it HDR), libx264 elsewhere.", "auto",
        role="output")
    output_video_preset: VideoPreset = _spec("output_creation", "Encoder speed/size preset.", "veryfast",
                                             role="output")
    output_video_quality: int = _spec("output_creation", "Video quality 0..100 (maps to CRF; higher is better).", 80,
                                      role="output", range=(0, 100))
    output_image_quality: int = _spec("output_creation", "JPEG/WebP quality 0..100 for image targets.", 95,
                                      role="output", range=(0, 100))
    output_image_scale: float = _spec(
        "output_creation", "Size of image targets' outputs as a multiple of the target's, 0.25..8 (FaceFusion's; "
        "sides rounded to even pixels as FaceFusion does); 1: the target's size.", 1.0,
        role="output-unless-default", range=(0.25, 8.0))
    output_video_fps: float | None = _spec(
        "output_creation", "Frame rate of video outputs, 1..60: frames dropped, or repeated to raise it, the "
        "duration kept (FaceFusion's); unset: the target's.", None,
        role="output-unless-default", range=(1.0, 60.0))
    output_video_scale: float = _spec(
        "output_creation", "Size of video outputs as a multiple of the target's, 0.25..8 (FaceFusion's; sides "
        "rounded to even pixels; frames are processed at the target's size); 1: the target's size.", 1.0,
        role="output-unless-default", range=(0.25, 8.0))
    output_pattern: str = _spec(
        "patterns", "Name of each output in its directory, from FaceFusion's placeholders {target_name} (the "
        "target's name without extension) and {target_extension} (its extension, with the dot); may hold "
        "subdirectories. Empty: the target's own name.", "",
        role="output-unless-default", fixed=True)
    output_marking: bool = _spec("output_creation", "Mark outputs as AI-modified at all (false, or --no-marking: "
                                 "no metadata, no C2PA, whatever output_provenance says).", True,
                                 role="output")

    output_provenance: OutputProvenance = _spec(
        "provenance", "c2pa: signed C2PA content credentials plus metadata marking; metadata: container/EXIF "
        "metadata only; off: no marking.", "c2pa",
        role="output")
    c2pa_certificate: Path | None = _spec(
        "provenance", "PEM certificate chain (signer first) to sign C2PA manifests with; unset: a local signing "
        "certificate created once under cache_path.", None,
        role="output", keyed="provenance")
    c2pa_private_key: Path | None = _spec("provenance", "PEM private key of c2pa_certificate (unencrypted).", None,
                                          role="output", keyed="provenance")
    c2pa_timestamp_url: str = _spec(
        "provenance", "RFC 3161 time-stamp authority (http/https URL) asked for a trusted signing time, so that "
        "signatures stay valid after the certificate expires; empty: none (signing stays offline).", "",
        role="run")
    c2pa_on_failure: C2paOnFailure = _spec(
        "provenance", "When signing an output fails: fail that target (nothing is written), or keep it with "
        "metadata marking only and a warning.", "fail",
        role="output-unless-default")
    visible_label: str = _spec("provenance", "Text drawn on every frame/image of a swapped output, e.g. "
                                             "AI-generated (empty: no visible label).", "",
                               role="output")
    visible_label_position: LabelPosition = _spec("provenance", "Corner of the visible label.", "bottom-right",
                                                  role="output")
    visible_label_size: float = _spec("provenance", "Height of the visible label's text as a fraction of the "
                                                    "frame height.", 0.03,
                                      role="output", range=(0.01, 0.25))
    visible_label_opacity: float = _spec("provenance", "Opacity of the visible label, 0..1.", 0.8,
                                         role="output", range=(0.05, 1.0))
    output_watermark: bool = _spec(
        "provenance", "Embed an invisible watermark carrying the output's 32-bit id in every frame of a swapped "
        "output (survives re-encoding, scaling and cropping; off with marking off too; docs/provenance.md says what "
        "it survives and what it does not).", True,
        role="output", keyed="watermark")
    content_gate: ContentGate = _spec(
        "provenance", "Check the source image and sampled frames of each target for explicit content before any "
        "swap; a flagged target is blocked. auto: FaceFusion's nsfw_1/2/3 from models_path when all three are "
        "there, else the bundled open_nsfw model; off: no check (recorded in each output).", "auto",
        role="output-unless-default")

    trim_frame_start: int | None = _spec(
        "frame_extraction", "Videos: the first frame kept (from 0); the output is the part kept, its audio cut "
        "to match (FaceFusion's); unset: the first.", None,
        role="output-unless-default", range=(0, 10 ** 9))
    trim_frame_end: int | None = _spec(
        "frame_extraction", "Videos: the frame the part kept ends before (FaceFusion's, exclusive); unset: the "
        "end.", None,
        role="output-unless-default", range=(0, 10 ** 9))
    chunk_size: int = _spec("frame_extraction", "Frames extracted and encoded per chunk (bounds temp disk).",
                            240,
                            role="output", range=(1, 100000))
    temp_frame_format: TempFrameFormat = _spec("frame_extraction", "Image format of extracted frames.", "bmp",
                                               role="output-unless-default")
    frame_transport: FrameTransport = _spec(
        "frame_extraction", "temp: frames are spooled through temp_path in chunks; memory: frames pass in memory "
        "only (no temp frame files).", "temp",
        role="run", facefusion="workflow_strategy")

    execution_providers: tuple[ExecutionProvider, ...] = _spec(
        "execution", "ONNX Runtime providers in order of preference.", ("cpu",),
        role="engine")
    execution_device_ids: tuple[int, ...] = _spec(
        "execution", "GPU indices for CUDA/TensorRT; several (0 1 2 3) spread the workers of --executor processes "
        "over those GPUs.", (0,),
        role="engine", range=(0, 64))
    tensorrt_fp16: bool = _spec("execution", "Let TensorRT build FP16 engines (faster; cached in cache_path).", True,
                                role="engine")
    cuda_fp16: bool = _spec(
        "execution", "With cuda (not tensorrt, which has tensorrt_fp16), run the swapper, enhancer and mask "
        "models from fp16 copies made once in cache_path, each used only where its output stays within 1 % of "
        "the fp32 model's; files FaceFusion ships in fp16 are used as they are.", True, role="engine")
    face_work: FaceWork = _spec(
        "execution", "Where the per-face work around the models runs (crop warps, masks, pastes, enhancer "
        "blend): device: ONNX graphs on the execution provider, the frame sent to the GPU once (not with the area "
        "mask); cpu: numpy/OpenCV; auto: device with cuda/tensorrt where it can, cpu otherwise.", "auto",
        role="engine")
    execution_thread_count: int = _spec("execution", "Frame worker threads.",
                                        default_factory=lambda: min(8, os.cpu_count() or 1),
                                        role="engine", range=(1, 256))
    execution_queue_count: int = _spec("execution", "Frames in flight per worker thread.", 2,
                                       role="run", range=(1, 64))
    execution_inference_slots: int = _spec(
        "execution", "Concurrent model calls allowed (0: 2 on a GPU, thread count on CPU).", 0,
        role="engine", range=(0, 256))
    batch_size: int = _spec("execution", "Max crops per model call gathered from all worker threads; 1: no "
                                         "micro-batching; 0: 8 on a GPU, 1 on CPU (where batching measured "
                                         "slower than parallel single calls).", 0,
                            role="engine", range=(0, 256))
    batch_wait_ms: float = _spec("execution", "How long a model call waits for more crops to fill a batch.", 2.0,
                                 role="engine", range=(0.0, 1000.0))
    executor: ExecutorKind = _spec("execution", "local: this process, frames on threads; processes: worker "
                                            "processes on this machine, each with its own sessions, spread over "
                                            "execution_device_ids; ray: spread the batch over a Ray cluster "
                                            "(pip install 'facefusion-batch[ray]').", "local",
                               role="run", fixed=True)
    workers: int = _spec("execution", "Worker processes of --executor processes, each with execution_thread_count "
                                      "frame threads; 0: planned from the cores, the GPUs and their free memory "
                                      "(docs/performance.md).", 0,
                         role="run", fixed=True, range=(0, 1024))
    worker_retries: int = _spec("execution", "--executor processes: times a work item is retried after its worker "
                                             "process died (and times a dead worker is started again).", 2,
                                role="run", range=(0, 100))
    ray_address: str = _spec("execution", "Ray cluster to join: auto (the one this machine belongs to) or "
                                          "ray://host:10001; empty: start Ray on this machine.", "",
                             role="run", fixed=True)
    ray_workers: int = _spec("execution", "Ray workers, each holding one loaded engine; 0: one per ray_num_gpus "
                                          "GPUs of the cluster, or one per execution_thread_count CPUs.", 0,
                             role="run", range=(0, 100000))
    ray_num_gpus: float = _spec("execution", "GPUs each Ray worker reserves (0.5: two workers per GPU); needs a "
                                             "GPU execution provider when above 0.", 0.0,
                                role="run", range=(0.0, 64.0))
    ray_num_cpus: float = _spec("execution", "CPUs each Ray worker reserves.", 1.0,
                                role="run", range=(0.0, 1024.0))
    ray_segment_chunks: int = _spec(
        "execution", "Chunks per segment when a video is split across Ray workers; 0: split a video only when "
        "workers are free, one segment per free worker.", 0,
        role="run", range=(0, 100000))
    ray_max_retries: int = _spec("execution", "Times a work item is retried on another worker after its worker "
                                              "died (and times a dead worker is restarted).", 2,
                                 role="run", range=(0, 100))

    video_memory_strategy: VideoMemoryStrategy = _spec(
        "memory", "strict: free sessions after each target; moderate: GPU arena shrinks after each call; "
        "tolerant: keep sessions and arenas.", "moderate",
        role="engine")
    system_memory_limit: int = _spec("memory", "Process data-segment limit in GB (0: no limit).", 0,
                                     role="run", range=(0, 4096))

    log_level: LogLevel = _spec("misc", "info: progress and notes on stderr; error: only errors and the summary.",
                              "info",
                                role="run")

    # What runs at once (threads, frames in flight, slots, batches) is derived in facefusion_batch.concurrency.

    @property
    def output_file(self) -> Path | None:
        """The output file when output_path names one (a media extension, and not an existing directory)."""
        from facefusion_batch.media import kind_of

        path = self.output_path
        return path if kind_of(path) is not None and not path.is_dir() else None

    @property
    def execution_device_id(self) -> int:
        """The GPU this process's sessions use: the first of execution_device_ids (each worker process of
        --executor processes gets settings naming its own one)."""
        return self.execution_device_ids[0]

    @property
    def output_dir(self) -> Path:
        """The directory that receives the outputs (the output file's directory when output_path names one)."""
        return self.output_path.parent if self.output_file is not None else self.output_path


FIELDS: dict[str, dataclasses.Field] = {f.name: f for f in dataclasses.fields(Settings)}
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(f.metadata["section"] for f in FIELDS.values()))
_HINTS = typing.get_type_hints(Settings)
DECLARED: dict[str, Declaration] = {name: f.metadata["declared"] for name, f in FIELDS.items()
                                    if "declared" in f.metadata}
_RANGES: dict[str, tuple[float, float]] = {name: d.range for name, d in DECLARED.items() if d.range is not None}


def with_role(*roles: Role) -> tuple[str, ...]:
    """The settings of these roles, in declaration order."""
    return tuple(name for name, d in DECLARED.items() if d.role in roles)


ENGINE_SETTINGS: tuple[str, ...] = tuple(name for name, d in DECLARED.items() if d.engine)
FIXED_SETTINGS: tuple[str, ...] = tuple(name for name, d in DECLARED.items() if d.fixed)
# FaceFusion ini keys read into an ffb setting of another name.
FROM_FACEFUSION: dict[str, str] = {d.facefusion: name for name, d in DECLARED.items() if d.facefusion}
# ffb's former names of settings, still read from profiles, the environment and flags.
FORMER_NAMES: dict[str, str] = {"execution_device_id": "execution_device_ids"}


def engine_changed(old: Settings, new: Settings) -> bool:
    """Whether `new` needs another engine than `old`: a setting the engine is built from differs."""
    return any(getattr(old, name) != getattr(new, name) for name in ENGINE_SETTINGS)


def facefusion_name(name: str) -> str | None:
    """FaceFusion's key for a setting (None: ffb's own)."""
    declared = DECLARED[name].facefusion
    return declared or (name if facefusion_ini.section_of(name) else None)


def _optional(hint: Any) -> Any:
    """X for an `X | None` hint, else None."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
        return next(a for a in args if a is not type(None))
    return None


def choices(name: str) -> tuple[str, ...]:
    """Allowed values of a choice setting (empty for free-form settings)."""
    hint = _HINTS[name]
    if typing.get_origin(hint) is tuple:
        hint = typing.get_args(hint)[0]
    hint = _optional(hint) or hint
    return typing.get_args(hint) if typing.get_origin(hint) is Literal else ()


def parse_value(name: str, raw: Any, where: str) -> Any:
    """Convert a raw profile/env/flag value to the field's type; raise SettingsError naming `where`.
    FaceFusion's forms of a value are accepted too (`640x640`, `yolo_face`, `jpeg`)."""
    hint = _HINTS[name]
    try:
        value = _convert(name, hint, _facefusion_form(name, raw))
    except (ValueError, TypeError) as exc:
        raise SettingsError(f"{where}: {exc}") from None
    if name in _RANGES and value is not None:
        low, high = _RANGES[name]
        for item in value if isinstance(value, tuple) else (value,):
            if not low <= item <= high:
                raise SettingsError(f"{where}: {item} is out of range {low}..{high}{_range_hint(name, item)}")
    if name == "execution_device_ids" and len(set(value)) < len(value):
        raise SettingsError(f"{where}: {' '.join(map(str, value))}: each GPU once (workers per GPU: --workers)")
    if name in ("face_mask_padding", "face_detector_margin"):
        value = _padding(value, where)
    if name == "face_detector_angles" and any(angle not in (0, 90, 180, 270) for angle in value):
        raise SettingsError(f"{where}: {' '.join(map(str, value))}: give angles among 0 90 180 270 (FaceFusion's)")
    if name == "face_detector_angles":
        value = tuple(dict.fromkeys(value))
    if name == "output_pattern":
        _check_pattern(value, where)
    if name == "face_detector_size" and value % 32:  # the detectors' coarsest stride
        raise SettingsError(f"{where}: {value}: give a multiple of 32 (FaceFusion's sizes: 160x160, 320x320, "
                            "480x480, 512x512, 640x640)")
    return value


def _check_pattern(pattern: str, where: str) -> None:
    """An output_pattern names a file below the output directory from the target's name alone ("": its own)."""
    from facefusion_batch.targets import PATTERN_FIELDS

    if not pattern:
        return

    fields = {field for _, field, _, _ in string.Formatter().parse(pattern) if field is not None}
    if fields & {"index", "source_name"}:
        raise SettingsError(f"{where}: {pattern!r}: {{index}} and {{source_name}} number and name the jobs of "
                            "FaceFusion's batch-run; ffb names each output after its target, so that a re-run finds "
                            "it: use {target_name} and {target_extension}")
    unknown = sorted(fields - set(PATTERN_FIELDS))
    if unknown or "{}" in pattern:
        raise SettingsError(f"{where}: {pattern!r}: unknown placeholder {{{(unknown or [''])[0]}}}; use "
                            "{target_name} and {target_extension}")
    name = Path(pattern.format(target_name="x", target_extension=".mp4"))
    if name.is_absolute() or ".." in name.parts or not name.name or pattern.endswith(("/", "\\")):
        raise SettingsError(f"{where}: {pattern!r}: give a file name below the output directory (no absolute path, "
                            "no ..), e.g. {target_name}-swapped{target_extension}")


def _padding(value: tuple[int, ...], where: str) -> tuple[int, int, int, int]:
    """FaceFusion's 1 to 4 padding numbers (as CSS: all; top/bottom right/left; top right/left bottom) as 4."""
    if not 1 <= len(value) <= 4 or any(not 0 <= v <= 100 for v in value):
        raise SettingsError(f"{where}: {' '.join(map(str, value))}: give 1 to 4 percentages 0..100 (top right "
                            "bottom left)")
    spread = {1: (0, 0, 0, 0), 2: (0, 1, 0, 1), 3: (0, 1, 2, 1), 4: (0, 1, 2, 3)}[len(value)]
    top, right, bottom, left = (value[i] for i in spread)
    return (top, right, bottom, left)


# FaceFusion's spelling of a value -> ffb's (its log levels have no ffb counterpart but info's nearest).
_FACEFUSION_VALUES = {
    "face_detector_model": {"yolo_face": "yoloface"},
    "temp_frame_format": {"jpeg": "jpg"},
    "log_level": {"warn": "info", "debug": "info"},
    "frame_transport": {"disk": "temp"},  # FaceFusion's workflow_strategy: disk spools frames, memory does not
}


def facefusion_spellings(name: str) -> tuple[str, ...] | None:
    """FaceFusion's ways of writing a value of this setting that ffb's own name for it also takes (a flag of it
    then takes text that `parse_value` reads); None when its values have one form."""
    if name in ("face_detector_size", "face_swapper_pixel_boost"):
        return ("640x640",) if name == "face_detector_size" else ()
    if name in _FACEFUSION_VALUES and DECLARED[name].facefusion is None:  # else its FaceFusion key's flag takes them
        return tuple(_FACEFUSION_VALUES[name])
    return None


def _facefusion_form(name: str, raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    if name == "face_detector_size" and "x" in text.lower():
        width, _, height = text.lower().partition("x")
        if width.strip() != height.strip():
            raise ValueError(f"{text!r}: the detectors take a square input; give one number or a square "
                             "size such as 640x640")
        return width.strip()
    if name == "face_swapper_pixel_boost" and text:
        width, _, height = text.lower().partition("x")
        try:
            size = int(width)
            if height and int(height) != size:
                raise ValueError
        except ValueError:
            raise ValueError(f"{text!r}: give a square size such as 512x512") from None
        if size not in PIXEL_BOOST_SIZES:
            raise ValueError(f"{text!r} is not one of: {', '.join(f'{n}x{n}' for n in PIXEL_BOOST_SIZES)}")
        return f"{size}x{size}"
    return _FACEFUSION_VALUES.get(name, {}).get(text.lower(), raw)


def _convert(name: str, hint: Any, raw: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin is tuple:
        items = (raw.replace(",", " ").split() if isinstance(raw, str)
                 else list(raw) if isinstance(raw, (list, tuple)) else [raw])
        if not items:
            raise ValueError("needs at least one value")
        item = typing.get_args(hint)[0]
        if item is int:
            return tuple(_convert(name, int, i) for i in items)
        return tuple(_choice(name, item, str(i)) for i in items)
    inner = _optional(hint)
    if inner is not None and hint != (Path | None):
        return None if raw is None or str(raw).strip().lower() in ("", "none") else _convert(name, inner, raw)
    if origin is Literal:
        return _choice(name, hint, str(raw))
    if hint == (Path | None):
        return Path(os.path.expanduser(str(raw))) if str(raw) else None
    if hint is Path:
        return Path(os.path.expanduser(str(raw)))
    if hint is bool:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"expected true or false, got {raw!r}")
    if hint is int:
        if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
            raise ValueError(f"expected a whole number, got {raw!r}")
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"expected a whole number, got {raw!r}") from None
    if hint is float:
        try:
            return float(raw)
        except ValueError:
            raise ValueError(f"expected a number, got {raw!r}") from None
    return raw  # pragma: no cover - every field type is handled above


def _choice(name: str, literal: Any, raw: str) -> str:
    allowed = typing.get_args(literal)
    value = raw.strip().lower()
    if value not in allowed:
        raise ValueError(f"{raw!r} is not one of: {', '.join(allowed)}")
    return value


# Sections ffb used before it took FaceFusion's names for the keys both share; still accepted.
_OLD_SECTIONS = {"output_creation": "output", "misc": "logging", "processors": "face_swapper"}


def _sections_of(name: str) -> tuple[str, ...]:
    """The profile sections a setting may be written in: its own, and its older ffb name."""
    section = FIELDS[name].metadata["section"]
    old = _OLD_SECTIONS.get(section)
    return (section, old) if old else (section,)


ALL_SECTIONS: tuple[str, ...] = tuple(dict.fromkeys([*SECTIONS, *facefusion_ini.LAYOUT, *_OLD_SECTIONS.values()]))


@dataclass(frozen=True)
class Profile:
    """A profile's values, and one warning naming the FaceFusion keys it sets that ffb does not use."""

    values: dict[str, Any]
    warnings: tuple[str, ...] = ()


def read_profile(path: Path) -> dict[str, Any]:
    """Read an ini or TOML profile into {field: value} (see `load_profile`)."""
    return load_profile(path).values


def load_profile(path: Path) -> Profile:
    """Read an ini (ffb's or FaceFusion's facefusion.ini) or TOML profile. Every problem (unknown section
    or key, bad value) is reported at once in one SettingsError; FaceFusion keys ffb does not use are
    listed in one warning."""
    if not path.is_file():
        raise SettingsError(f"{path}: profile not found; pass an existing .ini or .toml file to --profile")
    raw_sections = _read_toml(path) if path.suffix.lower() == ".toml" else _read_ini(path)
    values: dict[str, Any] = {}
    problems = Problems()
    ignored: list[tuple[str, str, str]] = []
    for section, keys in raw_sections.items():
        if section not in ALL_SECTIONS:
            problems.add(lambda: f"unknown section [{section}]{_did_you_mean(section, ALL_SECTIONS)}"
                         if section != "DEFAULT" else
                         "[DEFAULT] is not supported (its keys would apply to every section); put each key "
                         "in its own section")
            continue
        for key, raw in keys.items():
            blank = isinstance(raw, str) and raw.strip() == ""
            name = FROM_FACEFUSION.get(key, FORMER_NAMES.get(key, key))
            if name in FIELDS and (section in _sections_of(name) or (
                    name != key and facefusion_ini.is_facefusion_key(section, key))):
                if blank:
                    continue  # FaceFusion leaves unset keys blank: keep the default
                try:
                    values[name] = parse_value(name, raw, f"[{section}] {key}")
                except SettingsError as exc:
                    problems.add(str(exc))
            elif facefusion_ini.is_facefusion_key(section, key):
                if not blank:
                    value = " ".join(map(str, raw)) if isinstance(raw, list) else str(raw)
                    try:
                        ignored.append((section, key, facefusion_ini.ignored_because(
                            key, value, f"[{section}] {key} = {value}")))
                    except SettingsError as exc:
                        problems.add(str(exc))
            else:
                problems.add(lambda: _unknown_key(section, key))
    if problems:
        count = f"{len(problems)} problems: " if len(problems) > 1 else ""
        raise SettingsError(f"{path}: {count}" + problems.text())
    warnings = []
    if ignored:
        warnings.append(f"{path}: FaceFusion settings ffb does not have, ignored: " + _by_section(ignored))
    return Profile(values, tuple(warnings))


def _by_section(notes: list[tuple[str, str, str]]) -> str:
    """'[a] k1, k2 (why); [b] k3 (why), k4 (why)' from (section, key, why) triples: each section once, the keys
    sharing a reason together."""
    grouped: dict[str, dict[str, list[str]]] = {}
    for section, key, why in notes:
        grouped.setdefault(section, {}).setdefault(why, []).append(key)
    return listed((f"[{section}] " + ", ".join(f"{listed(keys)} ({why})" for why, keys in reasons.items())
                   for section, reasons in grouped.items()), "; ")


def _unknown_key(section: str, key: str) -> str:
    name = FROM_FACEFUSION.get(key, key)
    if name in FIELDS:
        return f"[{section}] {key}: unknown key here (it belongs in [{FIELDS[name].metadata['section']}])"
    facefusion_section = facefusion_ini.section_of(key)
    if facefusion_section:
        return f"[{section}] {key}: unknown key here (FaceFusion's key of [{facefusion_section}])"
    here = [n for n in FIELDS if section in _sections_of(n)] + list(facefusion_ini.LAYOUT.get(section, ()))
    everywhere = list(FIELDS) + [k for keys in facefusion_ini.LAYOUT.values() for k in keys]
    return f"[{section}] {key}: unknown key{_did_you_mean(key, here) or _did_you_mean(key, everywhere)}"


def _did_you_mean(word: str, candidates: Any) -> str:
    close = difflib.get_close_matches(word.lower(), list(dict.fromkeys(candidates)), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _read_ini(path: Path) -> dict[str, dict[str, Any]]:
    # No default section: configparser's [DEFAULT] would leak its keys into every section unchecked.
    parser = configparser.ConfigParser(interpolation=None, default_section="\0none")
    try:
        text = path.read_text(encoding="utf-8-sig")  # Windows editors save a BOM before [paths]
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1
        raise SettingsError(f"{path}: not a valid ini file (line {line} is not UTF-8 text); save it as UTF-8") \
            from None
    except OSError as exc:
        raise SettingsError(f"{path}: can't read the profile ({exc.strerror or exc})") from None
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        raise SettingsError(f"{path}: not a valid ini file ({capped(_ini_problem(exc), 300)})") from None
    return {s: dict(parser.items(s)) for s in parser.sections()}


def _ini_problem(exc: configparser.Error) -> str:
    """configparser's complaint as 'line N: what' (its own text names the file as a Python value)."""
    if isinstance(exc, configparser.MissingSectionHeaderError):
        return f"line {exc.lineno}: {exc.line.strip()!r} comes before any [section] header"
    if isinstance(exc, configparser.DuplicateSectionError):
        return f"line {exc.lineno}: section [{exc.section}] appears twice; merge the two"
    if isinstance(exc, configparser.DuplicateOptionError):
        return f"line {exc.lineno}: [{exc.section}] {exc.option} is set twice; keep one"
    if isinstance(exc, configparser.ParsingError) and exc.errors:
        lineno, line = exc.errors[0]
        if line[:1] in "'\"":  # Python 3.11/3.12 keep the line as its repr
            import ast

            line = ast.literal_eval(line)
        more = f" (and {len(exc.errors) - 1} more such lines)" if len(exc.errors) > 1 else ""
        return f"line {lineno}: {line.strip()!r} is not key = value{more}"
    return str(exc).splitlines()[0]  # pragma: no cover - every error read_string raises is handled above


def _read_toml(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: not a valid TOML file ({exc})") from None
    for section, keys in data.items():
        if not isinstance(keys, dict):
            raise SettingsError(f"{path}: {section} must be a [section] table")
    return data


def load_environment(environ: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """FFB_<KEY> variables as {field: value}, and a warning naming FFB_ variables that are no setting (a
    stray variable must not stop every command); a bad value of a known setting is an error."""
    values: dict[str, Any] = {}
    unknown: list[str] = []
    for var, raw in environ.items():
        if not var.startswith("FFB_") or raw == "":
            continue
        key = FORMER_NAMES.get(var[4:].lower(), var[4:].lower())
        if key not in FIELDS:
            close = difflib.get_close_matches(key, list(FIELDS), n=1, cutoff=0.6)
            unknown.append(var + (f" (did you mean FFB_{close[0].upper()}?)" if close else ""))
            continue
        values[key] = parse_value(key, raw, f"environment {var}")
    warnings = [f"environment: {listed(sorted(unknown))}: not ffb settings, ignored (see ffb run "
                "--print-settings)"] if unknown else []
    return values, warnings


@dataclass(frozen=True)
class Resolved:
    """The settings, for each field where its value came from, and warnings for the user (once each)."""

    settings: Settings
    origins: dict[str, str]
    warnings: tuple[str, ...] = ()


def load_settings(
    profile: Path | None = None,
    environ: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Resolved:
    """Resolve defaults < profile < environment < flags into one frozen Settings."""
    loaded = load_profile(profile) if profile else Profile({})
    environment, env_warnings = load_environment(os.environ if environ is None else environ)
    layers = [
        (f"profile {profile}", loaded.values),
        ("environment", environment),
        ("flag", {FORMER_NAMES.get(k, k): parse_value(FORMER_NAMES.get(k, k), v, f"--{k.replace('_', '-')}")
                  for k, v in (flags or {}).items() if v is not None}),
    ]
    values: dict[str, Any] = {}
    origins = {name: "default" for name in FIELDS}
    for origin, layer in layers:
        for key, value in layer.items():
            values[key] = value
            origins[key] = origin
    settings = Settings(**values)
    settings, engine_notes = _engine_request(settings, origins)
    if settings.executor == "ray":
        _check_ray(settings)
    _check_devices(settings)
    _check_provenance(settings)
    _check_processors(settings)
    return Resolved(settings, origins, (*loaded.warnings, *env_warnings, *engine_notes, *_loose_reference(settings)))


# Settings that name a neural model file, or where the files are: set by a flag, or to other than the default
# in a profile or the environment, they ask for the neural engine, and `auto` must not answer with the offline
# one (it would make an offline output of a run that asked for a model).
NEURAL_REQUESTS = ("models_path", "face_swapper_model", "face_detector_model", "face_enhancer_model",
                   "face_occluder_model", "face_parser_model", "face_landmarker_model")
# ffb's default model of a role, FaceFusion 3.8.1's default of it, and their files: a models directory that
# holds FaceFusion's default but not ffb's (a FaceFusion .assets/models) runs on FaceFusion's.
FACEFUSION_DEFAULTS: dict[str, tuple[str, str, str]] = {
    "face_swapper_model": ("inswapper_128.onnx", "hyperswap_1a_256", "hyperswap_1a_256.onnx"),
    "face_detector_model": ("scrfd_2.5g.onnx", "yoloface", "yoloface_8n.onnx"),
}


def default_of(name: str) -> Any:
    spec = FIELDS[name]
    return spec.default_factory() if spec.default is dataclasses.MISSING else spec.default  # type: ignore[misc]


def _engine_request(settings: Settings, origins: dict[str, str]) -> tuple[Settings, list[str]]:
    """`auto` made `neural` when a setting asks for a neural model (origins say why), and the swapper and
    detector left at ffb's defaults made FaceFusion's where only FaceFusion's files are in models_path."""
    notes: list[str] = []
    if settings.engine == "offline":
        return settings, notes
    swaps = {}
    for name, (own_file, facefusion, facefusion_file) in FACEFUSION_DEFAULTS.items():
        if origins[name] == "default" and not (settings.models_path / own_file).is_file() \
                and (settings.models_path / facefusion_file).is_file():
            swaps[name] = facefusion
            origins[name] = f"FaceFusion's default ({own_file} is not in models_path, {facefusion_file} is)"
    if swaps:
        settings = dataclasses.replace(settings, **swaps)
        notes.append(f"models_path {settings.models_path} holds FaceFusion's default models, not ffb's: using "
                     + ", ".join(f"{name} {value}" for name, value in swaps.items())
                     + " (set them to choose others)")
    if settings.engine == "auto":
        for name in NEURAL_REQUESTS:
            value, origin = getattr(settings, name), origins[name]
            if origin == "flag" or (origin not in ("default",) and not origin.startswith("FaceFusion's")
                                    and value != default_of(name)):
                origins["engine"] = f"auto: neural, as {name} ({origin}) asks for a neural model"
                return dataclasses.replace(settings, engine="neural"), notes
    return settings, notes


def _range_hint(name: str, value: Any) -> str:
    """The fix for a value ffb took before and refuses now: reference_face_distance 1..2 was ffb's own cosine
    scale, which FaceFusion's halves."""
    if name == "reference_face_distance" and 1 < value <= 2:
        return (f"; it is on FaceFusion's scale now, half the cosine distance: an earlier ffb profile's {value} is "
                f"{value / 2:g} (FaceFusion's default is 0.3)")
    return ""


def _loose_reference(settings: Settings) -> list[str]:
    """Above 0.5 (a cosine distance above 1: faces less alike than unrelated ones) reference mode swaps nearly
    every face; most likely an ffb profile written before the distance took FaceFusion's scale."""
    distance = settings.reference_face_distance
    if settings.face_selector_mode != "reference" or distance <= 0.5:
        return []
    return [f"reference_face_distance {distance} swaps nearly every face: it is on FaceFusion's scale, half "
            f"the cosine distance (an earlier ffb profile's {distance} is {distance / 2:g} now); FaceFusion's "
            "default is 0.3"]


def _check_provenance(settings: Settings) -> None:
    """Provenance settings that contradict each other, refused rather than ignored."""
    if (settings.c2pa_certificate is None) != (settings.c2pa_private_key is None):
        given, missing = (("c2pa_certificate", "c2pa_private_key") if settings.c2pa_private_key is None
                          else ("c2pa_private_key", "c2pa_certificate"))
        raise SettingsError(f"{given} is set but {missing} is not; pass both (--c2pa-certificate CHAIN.pem "
                            "--c2pa-private-key KEY.pem) or neither")
    url = settings.c2pa_timestamp_url
    if url and not (url.startswith(("http://", "https://")) and len(url.split("://", 1)[1].strip("/")) > 0):
        raise SettingsError(f"c2pa_timestamp_url {url!r} is not an http:// or https:// URL; pass the time-stamp "
                            "authority's URL (--c2pa-timestamp-url https://tsa.example/...) or leave it empty")
    if settings.visible_label and not settings.output_marking:
        raise SettingsError("visible_label is set but marking is off (--no-marking / output_marking = false); "
                            "drop one of the two")


def _check_processors(settings: Settings) -> None:
    """Processor settings that contradict each other (those that depend on model files: at engine start)."""
    processors = settings.processors
    if len(set(processors)) != len(processors):
        raise SettingsError(f"processors lists one twice ({listed(processors, ' ')}); list each once")
    if processors == ("face_enhancer", "face_swapper"):
        raise SettingsError("processors: ffb enhances the swapped face; list them as face_swapper face_enhancer")
    start, end = settings.face_selector_age_start, settings.face_selector_age_end
    if start is not None and end is not None and start > end:
        raise SettingsError(f"face_selector_age_start {start} is above face_selector_age_end {end}; swap them")
    start, end = settings.trim_frame_start, settings.trim_frame_end
    if start is not None and end is not None and start >= end:
        raise SettingsError(f"trim_frame_start {start} is not below trim_frame_end {end}: the part kept would be "
                            "empty (the end is exclusive); set trim_frame_end above trim_frame_start")
    if settings.face_work == "device" and "area" in settings.face_mask_types:
        # processors/device_chain.py's DEVICE_MASKS: the area mask (a landmark hull) runs on the CPU path only
        raise SettingsError("face_work = device does the box, occlusion and region masks, not the area mask "
                            "(face_mask_types has area); use face_work = auto or cpu")


def _check_ray(settings: Settings) -> None:
    """Combinations the Ray executor can't honour, refused rather than ignored."""
    gpu = any(p != "cpu" for p in settings.execution_providers)
    if gpu and settings.ray_num_gpus == 0:
        raise SettingsError("execution_providers asks for a GPU but ray_num_gpus is 0, so Ray would give the "
                            "workers none; set ray_num_gpus (1: a GPU per worker, 0.5: two workers per GPU)")
    if settings.ray_num_gpus > 0 and not gpu:
        raise SettingsError(f"ray_num_gpus is {settings.ray_num_gpus} but execution_providers is cpu only; add "
                            "cuda or tensorrt to execution_providers, or set ray_num_gpus to 0")
    if settings.execution_device_ids != (0,):
        raise SettingsError("execution_device_ids must be 0 with the ray executor: Ray chooses each worker's GPU "
                            "(and limits the worker to it)")


def _check_devices(settings: Settings) -> None:
    """Several GPUs are used by worker processes, each on one of them: refused where nothing would use them."""
    ids = settings.execution_device_ids
    if len(ids) == 1 or settings.executor == "ray":
        return
    if not any(p != "cpu" for p in settings.execution_providers):
        raise SettingsError(f"execution_device_ids {' '.join(map(str, ids))} names several GPUs but "
                            "execution_providers is cpu only; add cuda or tensorrt, or give one id")
    if settings.executor != "processes":
        raise SettingsError(f"execution_device_ids {' '.join(map(str, ids))}: one process uses one GPU; add "
                            "--executor processes to spread worker processes over these GPUs")


def describe(resolved: Resolved) -> list[dict[str, Any]]:
    """Rows for --print-settings: section, key, value, origin, and the role each setting declares."""
    rows = []
    for name, declared in DECLARED.items():
        value = getattr(resolved.settings, name)
        if isinstance(value, tuple):
            value = " ".join(map(str, value))
        rows.append({"section": declared.section, "key": name, "value": "" if value is None else str(value),
                     "origin": resolved.origins[name], "role": declared.role})
    return rows


# Directory settings a run writes to (True) or only reads from (False). cache_path is read-only-safe: what
# is cached there (source faces, checksums, patched models) is skipped when it can't be written, and the
# local C2PA credential is only read once it exists (its creation names the fix).
_DIRECTORIES = {"temp_path": True, "cache_path": False, "models_path": False, "state_path": True,
                "shared_path": True}


def check_paths(settings: Settings) -> None:
    """Before any work: every directory setting must be a directory, or creatable as one; one SettingsError
    naming the setting otherwise (rather than each target failing with "File exists")."""
    # (output_path is the run's to check: a bad output directory is exit 5)
    checks = [(name, getattr(settings, name), writes) for name, writes in _DIRECTORIES.items()]
    for name, path, writes in checks:
        if path is None:
            continue
        problem = _directory_problem(Path(path), writes)
        if problem:
            raise SettingsError(f"{name} {path}: {problem}; set {name} (or its --{name.replace('_', '-')} flag "
                                f"or FFB_{name.upper()}) to a directory")


def _directory_problem(path: Path, writes: bool) -> str | None:
    existing = path
    while not existing.exists() and not existing.is_symlink() and existing != existing.parent:
        existing = existing.parent
    if existing.is_symlink() and not existing.exists():
        return f"{existing} is a broken symbolic link"
    if not existing.is_dir():
        return "is a file, not a directory" if existing == path else f"{existing} is a file, not a directory"
    if writes and not os.access(existing, os.W_OK | os.X_OK):
        return "is not writable" if existing == path else f"can't be created ({existing} is not writable)"
    return None

"""Typed catalog of the neural models: per-model facts as data, not as subclasses. (All of FaceFusion's crop
templates are `faces.geometry.WARP_TEMPLATES`; this module stays free of OpenCV, which the CLI loads late.)

Checksums: the only checksum published next to these files is FaceFusion's `<name>.hash` sidecar (CRC32 of
the .onnx, 8 hex digits), downloaded from the same release. No sha256 is listed here because none could be
confirmed from this offline workplace; `sha256` stays None until someone verifies one against the real file.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

Family = Literal["swapper", "recognizer", "detector_scrfd", "detector_yolo", "detector_retinaface", "detector_yunet",
                 "enhancer", "embedding_converter",
                 "occluder", "parser", "classifier", "landmarker", "landmarker_68_5", "content_analyser"]
# How a swapper takes its source identity and returns its crop (FaceFusion's model `type`).
SwapperKind = Literal["inswapper", "hyperswap", "ghost", "simswap", "hififace", "blendswap", "uniface"]

_RELEASE = "https://github.com/facefusion/facefusion-assets/releases/download/models-3.0.0/"

# InsightFace's ArcFace destination points for a 112x112 crop; the other templates derive from it.
_ARCFACE_112 = np.array([[38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366],
                         [41.5493, 92.3655], [70.7299, 92.2041]], dtype=np.float32)
# Templates are the five points (eyes, nose, mouth corners) normalised to the crop size.
TEMPLATES: dict[str, np.ndarray] = {
    "arcface_112_v2": _ARCFACE_112 / 112.0,
    # inswapper crops at 128: InsightFace shifts the 112 template 8 px right, then divides by 128.
    "arcface_128": (_ARCFACE_112 + np.array([8.0, 0.0], dtype=np.float32)) / 128.0,
    "ffhq_512": np.array([[0.37691676, 0.46864664], [0.62285697, 0.46912813], [0.50123859, 0.61331904],
                          [0.39308822, 0.72541100], [0.61150205, 0.72490465]], dtype=np.float32),
}


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a model: name, shape (None: any size, e.g. a dynamic axis) and dtype."""

    name: str
    shape: tuple[int | None, ...]
    dtype: str = "float32"


@dataclass(frozen=True)
class ModelSpec:
    """Facts about one model file. `mean`/`std` apply to pixel values scaled to [0, 1]."""

    name: str
    family: Family
    file: str
    url: str
    hash_url: str | None
    sha256: str | None
    size: int
    template: str | None
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    rgb: bool
    licence: str
    inputs: tuple[TensorSpec, ...] = ()
    outputs: tuple[TensorSpec, ...] = ()
    # Whether ffb feeds the inputs by these names (else by position, so another export's names are fine).
    fed_by_name: bool = False

    @property
    def hash_file(self) -> str:
        return self.file.rsplit(".", 1)[0] + ".hash"

    # Processor models (FaceFusion 3.8.1's tables): swapper kind, the embedding converter it needs,
    # pixel-boost sizes, image layout, and whether the licence allows commercial use (None: not stated).
    kind: SwapperKind | None = None
    converter: str | None = None
    boost_sizes: tuple[int, ...] = ()
    nhwc: bool = False
    commercial: bool | None = None
    fp16: bool = False  # the file is stored in fp16 already (FaceFusion's `precision: fp16`)


def _facefusion(name: str, family: Family, size: int, template: str | None, mean: float, std: float,
                rgb: bool, licence: str) -> ModelSpec:
    inputs, outputs = _SIGNATURES[family]
    return ModelSpec(name=name, family=family, file=f"{name}.onnx", url=f"{_RELEASE}{name}.onnx",
                     hash_url=f"{_RELEASE}{name}.hash", sha256=None, size=size, template=template,
                     mean=(mean,) * 3, std=(std,) * 3, rgb=rgb, licence=licence, inputs=inputs, outputs=outputs,
                     fed_by_name=family == "swapper")


def _scrfd_outputs() -> tuple[TensorSpec, ...]:
    # Per stride (8, 16, 32): scores (K, 1), then box distances (K, 4), then keypoints (K, 10).
    return tuple(TensorSpec(f"{kind} s{stride}", (None, width))
                 for kind, width in (("scores", 1), ("boxes", 4), ("keypoints", 10)) for stride in (8, 16, 32))


# The tensors ffb feeds and reads, per family: the batch axis may be 1 or dynamic, detector sizes vary.
_SIGNATURES: dict[Family, tuple[tuple[TensorSpec, ...], tuple[TensorSpec, ...]]] = {
    "swapper": ((TensorSpec("target", (1, 3, 128, 128)), TensorSpec("source", (1, 512))),
                (TensorSpec("output", (1, 3, 128, 128)),)),
    "recognizer": ((TensorSpec("input.1", (1, 3, 112, 112)),), (TensorSpec("embedding", (1, 512)),)),
    "detector_scrfd": ((TensorSpec("input.1", (1, 3, None, None)),), _scrfd_outputs()),
    "detector_yolo": ((TensorSpec("images", (1, 3, None, None)),), (TensorSpec("output0", (1, 20, None)),)),
    # RetinaFace 10g: SCRFD's nine outputs (scores, box distances, keypoints per stride 8/16/32, two anchors)
    "detector_retinaface": ((TensorSpec("input", (1, 3, None, None)),), _scrfd_outputs()),
    # YuNet (OpenCV, 2023mar): per stride 8/16/32 class and objectness scores (1, K, 1), box (1, K, 4: centre
    # offset, log size), keypoints (1, K, 10); one anchor per cell
    "detector_yunet": ((TensorSpec("input", (1, 3, None, None)),),
                       tuple(TensorSpec(f"{kind}_{stride}", (1, None, width))
                             for kind, width in (("cls", 1), ("obj", 1), ("bbox", 4), ("kps", 10))
                             for stride in (8, 16, 32))),
    "enhancer": ((TensorSpec("input", (1, 3, 512, 512)),), (TensorSpec("output", (1, 3, 512, 512)),)),
}


# Licence text: FaceFusion 3.8.1's `__metadata__` licence name, then the vendor it names; "unknown" where its
# table states none (the masks, converters).
_NON_COMMERCIAL = "Non-Commercial (InsightFace)"
CATALOG: dict[str, ModelSpec] = {spec.name: spec for spec in [
    # inswapper takes RGB in [0, 1]
    _facefusion("inswapper_128", "swapper", 128, "arcface_128", 0.0, 1.0, True, _NON_COMMERCIAL),
    _facefusion("inswapper_128_fp16", "swapper", 128, "arcface_128", 0.0, 1.0, True, _NON_COMMERCIAL),
    # arcface takes RGB as x/127.5 - 1
    _facefusion("arcface_w600k_r50", "recognizer", 112, "arcface_112_v2", 0.5, 0.5, True, _NON_COMMERCIAL),
    # SCRFD takes BGR as (x - 127.5) / 128
    _facefusion("scrfd_2.5g", "detector_scrfd", 640, None, 0.5, 128 / 255, False, _NON_COMMERCIAL),
    # YOLOFace takes RGB as x / 255
    _facefusion("yoloface_8n", "detector_yolo", 640, None, 0.0, 1.0, True, "GPL-3.0 (derronqi)"),
    # RetinaFace takes BGR as (x - 127.5) / 128, as SCRFD; YuNet takes BGR pixel values as they are (0..255)
    _facefusion("retinaface_10g", "detector_retinaface", 640, None, 0.5, 128 / 255, False, _NON_COMMERCIAL),
    replace(_facefusion("yunet_2023_mar", "detector_yunet", 640, None, 0.0, 1 / 255, False, "MIT (OpenCV)"),
            url=_RELEASE.replace("models-3.0.0", "models-3.4.0") + "yunet_2023_mar.onnx",
            hash_url=_RELEASE.replace("models-3.0.0", "models-3.4.0") + "yunet_2023_mar.hash", commercial=True),
]}

# face_detector_model -> its model files (FaceFusion 3.8.1's face_detector.py: many runs RetinaFace, SCRFD and
# YOLOFace and keeps the best of their overlapping boxes; YuNet only alone)
DETECTORS_FOR: dict[str, tuple[str, ...]] = {
    "scrfd": ("scrfd_2.5g",), "yoloface": ("yoloface_8n",), "retinaface": ("retinaface_10g",),
    "yunet": ("yunet_2023_mar",), "many": ("retinaface_10g", "scrfd_2.5g", "yoloface_8n")}
RECOGNIZER = "arcface_w600k_r50"


# --- processor models: FaceFusion 3.8.1's face_swapper, face_enhancer, face_masker and face_classifier tables

def _asset(release: str, name: str) -> tuple[str, str]:
    base = f"https://github.com/facefusion/facefusion-assets/releases/download/{release}/{name}"
    return f"{base}.onnx", f"{base}.hash"


def _processor(name: str, family: Family, release: str, size: int, template: str | None,
               mean: tuple[float, float, float], std: tuple[float, float, float], licence: str,
               commercial: bool | None, *, rgb: bool = True, kind: SwapperKind | None = None,
               converter: str | None = None, boost_sizes: tuple[int, ...] = (), nhwc: bool = False) -> ModelSpec:
    url, hash_url = _asset(release, name)
    # No signature listed: the real files' full input/output lists (e.g. extra outputs) are not confirmed
    # here, and a wrong list would call a good file corrupt. The stand-ins carry the interface ffb feeds.
    return ModelSpec(name=name, family=family, file=f"{name}.onnx", url=url, hash_url=hash_url, sha256=None,
                     size=size, template=template, mean=mean, std=std, rgb=rgb, licence=licence,
                     kind=kind, converter=converter, boost_sizes=boost_sizes, nhwc=nhwc, commercial=commercial)


_ZERO, _ONE, _HALF = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0), (0.5, 0.5, 0.5)
_IMAGENET_MEAN, _IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
_BOOST_128 = (128, 256, 384, 512, 768, 1024)
_BOOST_256 = (256, 512, 768, 1024)


def _swapper(name: str, release: str, kind: SwapperKind, template: str, size: int, mean, std, licence: str,
             commercial: bool | None, converter: str | None = None) -> ModelSpec:
    boost = _BOOST_128 if size == 128 else tuple(s for s in _BOOST_256 if s >= size)
    return _processor(name, "swapper", release, size, template, mean, std, licence, commercial, kind=kind,
                      converter=converter, boost_sizes=boost)


def _enhancer(name: str, template: str, size: int, licence: str, commercial: bool | None) -> ModelSpec:
    # Every enhancer takes RGB in [-1, 1] and returns the same.
    return _processor(name, "enhancer", "models-3.0.0", size, template, _HALF, _HALF, licence, commercial)


_RAIL = "ResearchRAIL (FaceFusion)"
_NC = "Non-Commercial"
_UNSTATED = "unknown (not stated)"
PROCESSOR_MODELS: tuple[ModelSpec, ...] = (
    _swapper("hyperswap_1a_256", "models-3.3.0", "hyperswap", "arcface_128", 256, _HALF, _HALF, _RAIL, False),
    _swapper("hyperswap_1b_256", "models-3.3.0", "hyperswap", "arcface_128", 256, _HALF, _HALF, _RAIL, False),
    _swapper("hyperswap_1c_256", "models-3.3.0", "hyperswap", "arcface_128", 256, _HALF, _HALF, _RAIL, False),
    _swapper("simswap_256", "models-3.0.0", "simswap", "arcface_112_v1", 256, _IMAGENET_MEAN, _IMAGENET_STD,
             f"{_NC} (neuralchen)", False, "crossface_simswap"),
    _swapper("simswap_unofficial_512", "models-3.0.0", "simswap", "arcface_112_v1", 512, _ZERO, _ONE,
             f"{_NC} (neuralchen)", False, "crossface_simswap"),
    *(_swapper(f"ghost_{n}_256", "models-3.0.0", "ghost", "arcface_112_v1", 256, _HALF, _HALF,
               "Apache-2.0 (ai-forever)", True, "crossface_ghost") for n in (1, 2, 3)),
    _swapper("blendswap_256", "models-3.0.0", "blendswap", "ffhq_512", 256, _ZERO, _ONE,
             f"{_NC} (mapooon)", False),
    _swapper("uniface_256", "models-3.0.0", "uniface", "ffhq_512", 256, _HALF, _HALF,
             "Unknown (xc-csc101)", None),
    _swapper("hififace_unofficial_256", "models-3.1.0", "hififace", "mtcnn_512", 256, _HALF, _HALF,
             "Unknown (GuijiAI)", None, "crossface_hififace"),
    # ArcFace embedding (N, 512) -> the swapper's identity space (N, 512), fed as `input`.
    *(_processor(f"crossface_{family}", "embedding_converter", "models-3.4.0", 512, None, _ZERO, _ONE,
                 _UNSTATED, None) for family in ("ghost", "simswap", "hififace")),
    _enhancer("gfpgan_1.2", "ffhq_512", 512, "Apache-2.0 (TencentARC)", True),
    _enhancer("gfpgan_1.3", "ffhq_512", 512, "Apache-2.0 (TencentARC)", True),
    _enhancer("gfpgan_1.4", "ffhq_512", 512, "Apache-2.0 (TencentARC)", True),
    _enhancer("gpen_bfr_256", "arcface_128", 256, f"{_NC} (yangxy)", False),
    _enhancer("gpen_bfr_512", "ffhq_512", 512, f"{_NC} (yangxy)", False),
    _enhancer("gpen_bfr_1024", "ffhq_512", 1024, f"{_NC} (yangxy)", False),
    _enhancer("gpen_bfr_2048", "ffhq_512", 2048, f"{_NC} (yangxy)", False),
    _enhancer("codeformer", "ffhq_512", 512, "S-Lab-1.0 (sczhou)", False),
    _enhancer("restoreformer_plus_plus", "ffhq_512", 512, "Apache-2.0 (wzhouxiff)", True),
    # XSeg occluders take the crop as BGR NHWC in [0, 1]; BiSeNet parsers take RGB NCHW, ImageNet-normalised.
    *(_processor(f"xseg_{n}", "occluder", release, 256, None, _ZERO, _ONE,
                 _UNSTATED, None, rgb=False, nhwc=True)
      for n, release in ((1, "models-3.1.0"), (2, "models-3.1.0"), (3, "models-3.2.0"))),
    _processor("bisenet_resnet_18", "parser", "models-3.1.0", 512, None, _IMAGENET_MEAN, _IMAGENET_STD,
               _UNSTATED, None),
    _processor("bisenet_resnet_34", "parser", "models-3.0.0", 512, None, _IMAGENET_MEAN, _IMAGENET_STD,
               _UNSTATED, None),
    _processor("fairface", "classifier", "models-3.0.0", 224, "arcface_112_v2", _IMAGENET_MEAN, _IMAGENET_STD,
               "CC-BY-4.0 (dchen236)", True),
    # The 68-point landmarkers (FaceFusion's face_landmarker) take a 256 box crop in the frame's channel order
    # (BGR) in [0, 1]; fan_68_5 takes the 5 keypoints in the unit ffhq_512 space (processors/landmarker.py).
    _processor("2dfan4", "landmarker", "models-3.0.0", 256, None, _ZERO, _ONE, "MIT (breadbread1984)", True,
               rgb=False),
    _processor("peppa_wutz", "landmarker", "models-3.0.0", 256, None, _ZERO, _ONE, "Apache-2.0", True, rgb=False),
    _processor("fan_68_5", "landmarker_68_5", "models-3.0.0", 1, "ffhq_512", _ZERO, _ONE,
               "OpenRAIL-M (FaceFusion)", True),
)
# FaceFusion 3.8.1's content analyser (content_analyser.py): three NSFW models, each fed `input` as RGB NCHW
# fitted into its size (aspect kept, zero padding), normalised by its mean/std; a frame is flagged when two
# of the three agree (provenance/content_gate.py holds the scores and thresholds).
CONTENT_ANALYSERS: tuple[ModelSpec, ...] = (
    _processor("nsfw_1", "content_analyser", "models-3.3.0", 640, None, _ZERO, _ONE, "Apache-2.0 (EraX)", True),
    _processor("nsfw_2", "content_analyser", "models-3.3.0", 384, None, _HALF, _HALF, "Apache-2.0 (Marqo)", True),
    _processor("nsfw_3", "content_analyser", "models-3.3.0", 448, None, (0.48145466, 0.4578275, 0.40821073),
               (0.26862954, 0.26130258, 0.27577711), "MIT (Freepik)", True),
)
CATALOG.update({spec.name: spec for spec in PROCESSOR_MODELS + CONTENT_ANALYSERS})
for _name in ("inswapper_128", "inswapper_128_fp16"):
    CATALOG[_name] = replace(CATALOG[_name], kind="inswapper", boost_sizes=_BOOST_128, commercial=False)
# FaceFusion 3.8.1's face_swapper table marks these files `'precision': 'fp16'`.
for _name in ("hyperswap_1a_256", "hyperswap_1b_256", "hyperswap_1c_256", "inswapper_128_fp16"):
    CATALOG[_name] = replace(CATALOG[_name], fp16=True)
for _name in ("arcface_w600k_r50", "scrfd_2.5g", "retinaface_10g"):
    CATALOG[_name] = replace(CATALOG[_name], commercial=False)
CATALOG["yoloface_8n"] = replace(CATALOG["yoloface_8n"], commercial=None)

SWAPPERS = tuple(name for name, spec in CATALOG.items() if spec.family == "swapper")
ENHANCERS = tuple(name for name, spec in CATALOG.items() if spec.family == "enhancer")
OCCLUDERS = tuple(name for name, spec in CATALOG.items() if spec.family == "occluder")
PARSERS = tuple(name for name, spec in CATALOG.items() if spec.family == "parser")
LANDMARKERS = tuple(name for name, spec in CATALOG.items() if spec.family in ("landmarker", "landmarker_68_5"))
DEFAULT_SWAPPER = "hyperswap_1a_256"  # FaceFusion 3.8.1's default
DEFAULT_ENHANCER = "gfpgan_1.4"
DEFAULT_OCCLUDER = "xseg_1"
DEFAULT_PARSER = "bisenet_resnet_34"
CLASSIFIER = "fairface"

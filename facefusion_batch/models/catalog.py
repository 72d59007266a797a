"""Typed catalog of the neural models: per-model facts as data, not as subclasses.

Checksums: the only checksum published next to these files is FaceFusion's `<name>.hash` sidecar (CRC32 of
the .onnx, 8 hex digits), downloaded from the same release. No sha256 is listed here because none could be
confirmed from this offline workplace; `sha256` stays None until someone verifies one against the real file.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Family = Literal["swapper", "recognizer", "detector_scrfd", "detector_yolo", "enhancer"]

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
    "enhancer": ((TensorSpec("input", (1, 3, 512, 512)),), (TensorSpec("output", (1, 3, 512, 512)),)),
}


_NON_COMMERCIAL = "InsightFace: non-commercial research use only"
CATALOG: dict[str, ModelSpec] = {spec.name: spec for spec in [
    # inswapper takes RGB in [0, 1]
    _facefusion("inswapper_128", "swapper", 128, "arcface_128", 0.0, 1.0, True, _NON_COMMERCIAL),
    _facefusion("inswapper_128_fp16", "swapper", 128, "arcface_128", 0.0, 1.0, True, _NON_COMMERCIAL),
    # arcface takes RGB as x/127.5 - 1
    _facefusion("arcface_w600k_r50", "recognizer", 112, "arcface_112_v2", 0.5, 0.5, True, _NON_COMMERCIAL),
    # SCRFD takes BGR as (x - 127.5) / 128
    _facefusion("scrfd_2.5g", "detector_scrfd", 640, None, 0.5, 128 / 255, False, _NON_COMMERCIAL),
    # YOLOFace takes RGB as x / 255
    _facefusion("yoloface_8n", "detector_yolo", 640, None, 0.0, 1.0, True, "AGPL-3.0 (Ultralytics YOLOv8)"),
]}

DETECTOR_FOR = {"scrfd": "scrfd_2.5g", "yoloface": "yoloface_8n"}
RECOGNIZER = "arcface_w600k_r50"

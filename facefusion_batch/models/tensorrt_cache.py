"""Where TensorRT keeps its engines and timing cache, keyed so a stale engine is never loaded.

ONNX Runtime's TensorRT provider names a cached engine after the graph, not after the weights or the
versions that built it, and its documentation says the cache must be cleared when the model, ONNX Runtime or
TensorRT changes. So each model gets its own engine folder under
`cache_path/tensorrt/ort<version>-trt<version>/<model stem>-<key>`, where the key is the model file's CRC32
(the same checksum FaceFusion's `.hash` sidecar holds, remembered by size and mtime so it is computed once).
A changed model, runtime or TensorRT lands in a new folder and builds there once; the old one is left for
`ffb` users to delete (nothing here deletes a cache another version may still use). The timing cache only
depends on TensorRT and the GPU, so it is shared by the models of one version folder.
"""
from __future__ import annotations

import ctypes.util
import functools
import importlib.metadata
import os
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

_TRT_DISTRIBUTIONS = ("tensorrt", "tensorrt-cu12", "tensorrt-cu12-libs", "tensorrt-libs", "tensorrt-cu11")
_LIBRARY = re.compile(r"libnvinfer\.so\.(\d+(?:\.\d+)*)$")


@functools.lru_cache(maxsize=None)
def tensorrt_version() -> str:
    """TensorRT's version as installed: from its PyPI distribution, else from the full file name of the
    libnvinfer library the loader would find; "unknown" when neither says."""
    for name in _TRT_DISTRIBUTIONS:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return library_version(os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)) or "unknown"


def library_version(directories: list[str]) -> str | None:
    """The longest version in a `libnvinfer.so.X.Y.Z` file name found in `directories` (then where ctypes
    finds the library), e.g. '10.3.0'."""
    found: list[str] = []
    for directory in [d for d in directories if d] + ["/usr/lib/x86_64-linux-gnu", "/usr/local/lib"]:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        found += [m.group(1) for m in map(_LIBRARY.match, names) if m]
    if not found:
        soname = ctypes.util.find_library("nvinfer")  # 'libnvinfer.so.10': the major version only
        match = _LIBRARY.match(soname or "")
        return match.group(1) if match else None
    return max(found, key=lambda v: (len(v.split(".")), [int(p) for p in v.split(".")]))


def version_folder(cache_path: Path, ort_version: str, trt_version: str) -> Path:
    return Path(cache_path) / "tensorrt" / _safe(f"ort{ort_version}-trt{trt_version}")


def engine_folder(cache_path: Path, model: Path, checksum: str, ort_version: str, trt_version: str) -> Path:
    """The folder of one model's engines: a new one whenever the file's checksum or a version changes."""
    return version_folder(cache_path, ort_version, trt_version) / _safe(f"{Path(model).stem}-{checksum}")


def tensorrt_options(cache_path: Path, model: Path, checksum: str, ort_version: str, trt_version: str,
                     device_id: int, fp16: bool) -> Mapping[str, Any]:
    """TensorRT provider options for one model: engines and timing cache kept under `cache_path`, built once
    and reused across runs (see the module's docstring for the keys)."""
    engines = engine_folder(cache_path, model, checksum, ort_version, trt_version)
    timing = version_folder(cache_path, ort_version, trt_version) / "timing"
    return {"device_id": str(device_id), "trt_engine_cache_enable": True, "trt_engine_cache_path": str(engines),
            "trt_timing_cache_enable": True, "trt_timing_cache_path": str(timing),
            "trt_fp16_enable": fp16, "trt_builder_optimization_level": 3}


def profile_options(inputs: Sequence[tuple[str, Sequence[Any]]], opt_batch: int,
                    max_batch: int) -> dict[str, str]:
    """TensorRT optimisation profiles for a model whose only free axis is the batch (the first): one engine
    for batches 1..`max_batch`, tuned for `opt_batch`. Without them TensorRT builds an engine for the first
    batch it sees and rebuilds whenever a larger one comes (minutes for a swapper). {} when another axis is
    free (a detector's size): its first call fixes the shape for the run anyway."""
    shapes: dict[str, list[str]] = {"min": [], "opt": [], "max": []}
    for name, shape in inputs:
        rest = list(shape[1:])
        if any(not isinstance(d, int) or d <= 0 for d in rest):
            return {}
        if isinstance(shape[0], int) and shape[0] > 0:
            batches = {"min": shape[0], "opt": shape[0], "max": shape[0]}
        else:
            batches = {"min": 1, "opt": max(1, min(opt_batch, max_batch)), "max": max_batch}
        for key, batch in batches.items():
            shapes[key].append(f"{name}:" + "x".join(str(d) for d in [batch, *rest]))
    if not shapes["min"]:
        return {}
    return {f"trt_profile_{key}_shapes": ",".join(value) for key, value in shapes.items()}


def model_inputs(path: Path) -> list[tuple[str, list[Any]]]:
    """A model file's graph inputs (initializers left out): name and shape, a free axis as its name."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    initialisers = {i.name for i in model.graph.initializer}
    return [(i.name, [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                      for d in i.type.tensor_type.shape.dim])
            for i in model.graph.input if i.name not in initialisers]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]", "_", name)

"""fp16 copies of fp32 models for CUDA, each kept only where its output stays within tolerance.

FaceFusion ships fp16 files for some models (inswapper_128_fp16; the hyperswap files are fp16 already); for
the others ffb converts the file once with ONNX Runtime's own converter (`onnxruntime.transformers.float16`,
inputs and outputs kept fp32, so the adapters feed it the same arrays) and checks the copy against the
original on a fixed test input, on the provider the run uses: the copy is used only when its outputs differ
by at most `TOLERANCE` of the original's range. Both verdicts are cached next to the copy, keyed by the
original's CRC32 and the ONNX Runtime version, so each model is converted and checked once.
TensorRT has its own fp16 (`tensorrt_fp16`), which it applies layer by layer where precision allows.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np

TOLERANCE = 0.01  # of the fp32 output's range: 2.5 grey levels of an image in 0..255
_NUMPY = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
          "tensor(int64)": np.int64}


def copy_path(cache_dir: Path, model: Path, checksum: str, ort_version: str) -> Path:
    return Path(cache_dir) / "fp16" / f"{Path(model).stem}-{checksum}-ort{ort_version}.fp16.onnx"


def convert(source: Path, target: Path) -> None:
    """Write `source` with its float tensors in fp16, inputs and outputs left fp32 (atomically)."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = convert_float_to_float16(onnx.load(str(source)), keep_io_types=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_suffix(f".{os.getpid()}.tmp")
    try:
        onnx.save(model, str(temporary))
        temporary.replace(target)
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


def probe_feeds(session: Any, batch: int = 1) -> dict[str, np.ndarray]:
    """A fixed, image-like input for every input of `session` (smooth values in [-1, 1]; a symbolic batch axis
    as `batch`); raises ValueError when another axis is symbolic (the size to test at is not known)."""
    rng = np.random.default_rng(20240611)
    feeds = {}
    for item in session.get_inputs():
        shape = [batch if index == 0 and not isinstance(dim, int) else dim for index, dim in enumerate(item.shape)]
        if any(not isinstance(dim, int) or dim < 0 for dim in shape):
            raise ValueError(f"input {item.name} has a free size {item.shape}")
        values = rng.standard_normal(shape)
        if len(shape) == 4:  # images: low frequencies, like a face, not noise
            import cv2

            planes = values.reshape(-1, shape[-2], shape[-1]).astype(np.float32)
            values = np.stack([cv2.GaussianBlur(p, (0, 0), max(shape[-1] / 64, 1.0)) for p in planes])
            values = values.reshape(shape) / max(float(np.abs(values).max()), 1e-6)
        feeds[item.name] = np.clip(values, -1, 1).astype(_NUMPY.get(item.type, np.float32))
    return feeds


def difference(reference: list[np.ndarray], candidate: list[np.ndarray]) -> float:
    """The largest difference of any output, as a fraction of that output's range in the reference."""
    worst = 0.0
    for ref, got in zip(reference, candidate):
        ref64, got64 = np.asarray(ref, np.float64), np.asarray(got, np.float64)
        if not np.isfinite(got64).all():
            return float("inf")
        spread = max(float(ref64.max() - ref64.min()), 1e-6)
        worst = max(worst, float(np.abs(ref64 - got64).max()) / spread)
    return worst


def verified_copy(model: Path, cache_dir: Path, checksum: str, ort_version: str,
                  open_session: Callable[[Path], Any]) -> tuple[Path | None, str]:
    """The fp16 copy of `model` when it is within TOLERANCE of the original (made and checked on first use,
    `open_session(path)` opening a session on the run's provider), else None; and one line saying why."""
    target = copy_path(cache_dir, model, checksum, ort_version)
    rejected = target.with_suffix(".rejected")
    if rejected.is_file():
        return None, rejected.read_text().strip()
    if target.is_file() and target.with_suffix(".accepted").is_file():
        return target, target.with_suffix(".accepted").read_text().strip()
    try:
        convert(model, target)
        original, copy = open_session(model), open_session(target)
        feeds = probe_feeds(original)
        error = difference(original.run(None, feeds), copy.run(None, feeds))
    except Exception as exc:  # a converter or runtime failure only means: keep fp32
        verdict, keep = f"{model.name}: kept fp32 (fp16 copy failed: {str(exc).strip()[:160]})", False
    else:
        keep = error <= TOLERANCE
        verdict = (f"{model.name}: fp16 copy differs by {error:.2%} of the output's range"
                   f" ({'used' if keep else f'over {TOLERANCE:.0%}: kept fp32'})")
    with contextlib.suppress(OSError):
        if keep:
            target.with_suffix(".accepted").write_text(verdict + "\n")
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            rejected.write_text(verdict + "\n")
            target.unlink(missing_ok=True)
    return (target if keep else None), verdict

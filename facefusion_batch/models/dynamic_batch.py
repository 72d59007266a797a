"""Give a model exported with a fixed batch of 1 a dynamic batch axis, when that is numerically safe.

The axis is renamed on inputs and outputs, Reshape shape constants that hard-code a leading 1 get 0
("copy the input's dimension"), and stale intermediate shapes are dropped. The patched model is then run
on a batch of 2 and must match two batch-1 runs of the original; otherwise it is discarded and callers fall
back to single calls. A model that passes is cached on disk (keyed by the file's size and mtime) and one
that fails leaves a marker, so neither check repeats.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np

from facefusion_batch.models.sessions import ort

AXIS = "batch"
TOLERANCE = 1e-3


def has_dynamic_batch(session: Any) -> bool:
    """True when every input's first dimension is symbolic (or unknown)."""
    return all(not isinstance(i.shape[0], int) for i in session.get_inputs())


def cached_paths(path: Path, cache_dir: Path) -> tuple[Path, Path, Path]:
    """(patched model, marker: patching failed, marker: the original is already dynamic)."""
    stat = path.stat()
    stem = f"{path.stem}.dynamic-{stat.st_size}-{stat.st_mtime_ns}"
    return tuple(cache_dir / f"{stem}.{kind}" for kind in ("onnx", "failed", "native"))  # type: ignore[return-value]


def dynamic_batch_model(path: Path, cache_dir: Path,
                        make_session: Callable[[Path], Any] | None = None) -> Path | None:
    """Path of a model with a dynamic batch axis: `path` itself when it has one, else a patched copy
    (cached); None when patching isn't safe."""
    patched, failed, native = cached_paths(path, cache_dir)
    if native.is_file():
        return path
    if patched.is_file():
        return patched
    if failed.is_file():
        return None
    make_session = make_session or _cpu_session
    try:
        original = make_session(path)
    except Exception:  # noqa: BLE001 - a model ONNX Runtime can't load: the session pool names it (ModelError)
        return None
    if has_dynamic_batch(original):
        with contextlib.suppress(OSError):  # a read-only cache_path: found again next time
            cache_dir.mkdir(parents=True, exist_ok=True)
            native.write_text("the model already has a dynamic batch axis\n")
        return path
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # nowhere to keep a patched copy: single calls
    tmp = patched.with_name(f".{patched.name}.{os.getpid()}.tmp")
    try:
        _patch(path, tmp)
        if _matches(original, make_session(tmp)):
            tmp.replace(patched)
            return patched
    except Exception:  # noqa: BLE001 - any failure to patch or to run means: use single calls
        pass
    finally:
        tmp.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        failed.write_text("patched model did not match batch-1 outputs; single calls are used\n")
    return None


def _patch(source: Path, out: Path) -> None:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    for value in list(graph.input) + list(graph.output):
        dims = value.type.tensor_type.shape.dim
        if dims and dims[0].HasField("dim_value") and dims[0].dim_value == 1:
            dims[0].ClearField("dim_value")
            dims[0].dim_param = AXIS
    shapes = {node.input[1] for node in graph.node if node.op_type == "Reshape" and len(node.input) > 1}
    for initializer in graph.initializer:
        if initializer.name in shapes:
            shape = numpy_helper.to_array(initializer).copy()
            if shape.size and shape[0] == 1:
                shape[0] = 0
                initializer.CopyFrom(numpy_helper.from_array(shape, initializer.name))
    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] in shapes:
            for attribute in node.attribute:
                if attribute.name == "value":
                    shape = numpy_helper.to_array(attribute.t).copy()
                    if shape.size and shape[0] == 1:
                        shape[0] = 0
                        attribute.t.CopyFrom(numpy_helper.from_array(shape))
    del graph.value_info[:]
    onnx.save(model, str(out))


def _matches(original: Any, patched: Any) -> bool:
    rng = np.random.default_rng(0)
    singles = []
    for _ in range(2):
        feeds = {i.name: rng.random([1, *i.shape[1:]], dtype=np.float32) for i in original.get_inputs()}
        singles.append((feeds, original.run(None, feeds)))
    batched = patched.run(None, {name: np.concatenate([s[0][name] for s in singles])
                                 for name in singles[0][0]})
    for index, output in enumerate(batched):
        expected = np.concatenate([s[1][index] for s in singles])
        if output.shape != expected.shape:
            return False
        scale = max(1.0, float(np.abs(expected).max()))
        if float(np.abs(output - expected).max()) > TOLERANCE * scale:
            return False
    return True


def _cpu_session(path: Path) -> Any:
    return ort().InferenceSession(str(path), providers=["CPUExecutionProvider"])

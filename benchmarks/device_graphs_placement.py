"""Where each node of ffb's device-path graphs runs (processors/device_graphs.py), from ONNX Runtime's own
profile: on a GPU machine every pixel-sized node (GridSample, ScatterND, Conv, Resize, the blends) must be on
CUDAExecutionProvider; small shape arithmetic on CPU is expected. Exit 1 when a pixel-sized node is not on
the provider asked for.

    python benchmarks/device_graphs_placement.py --provider cuda      # on a GPU machine
    python benchmarks/device_graphs_placement.py                      # here: everything on CPU
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from facefusion_batch.faces.geometry import box_mask  # noqa: E402
from facefusion_batch.models.binding import Device, run_bound, upload  # noqa: E402
from facefusion_batch.models.providers import ort  # noqa: E402
from facefusion_batch.processors import device_graphs as graphs  # noqa: E402

# Nodes whose work grows with the picture: these must run on the GPU.
PIXEL_OPS = {"GridSample", "ScatterND", "Conv", "Resize", "Round", "Clip", "Mul", "Add", "Sub", "Div", "Where",
             "Cast", "Transpose", "MatMul", "Min", "Floor", "Slice", "Pad"}


def _feeds(device: Device) -> dict[str, tuple[bytes, dict]]:
    frame = upload(np.random.default_rng(0).integers(0, 255, (720, 1280, 3), dtype=np.uint8), device)
    inverse = np.array([[[1.2, 0.1, 400.0], [-0.1, 1.2, 150.0]]], np.float32)
    matrix = np.array([[0.83, -0.07, -322.0], [0.07, 0.83, -153.0]], np.float32)
    swap = np.random.default_rng(1).random((1, 3, 256, 256), dtype=np.float32)
    enhanced = np.random.default_rng(2).random((1, 3, 512, 512), dtype=np.float32) * 2 - 1
    box = np.array([380, 130, 720, 470], np.int64)
    paste = {"frame": frame, "output": swap, "index": np.array([0], np.int64),
             "mask": box_mask(256, 0.3, (0, 0, 0, 0))[None], "mask_index": np.array([0], np.int64),
             "matrix": matrix, "box": box}
    fold_in = {"frame": frame, "inverse": inverse, "swap": swap, "rows": np.array([0], np.int64),
               "swap_mask": box_mask(256, 0.3, (0, 0, 0, 0))[None], "mask_rows": np.array([0], np.int64),
               "to_swap": np.array([[[0.5, 0.0, 0.0], [0.0, 0.5, 0.0]]], np.float32),
               "box": np.array([[40, 60, 470, 500]], np.int64)}
    return {
        "warp": (graphs.warp_graph(256, 256, True, (0.5,) * 3, (0.5,) * 3, levels=True),
                 {"frame": frame, "inverse": inverse}),
        "paste": (graphs.paste_graph(256, 1, True, "unit", (0.5,) * 3, (0.5,) * 3), paste),
        "fold": (graphs.fold_graph(512, 256, 1, 256, True, (0.5,) * 3, (0.5,) * 3), fold_in),
        "fold-paste": (graphs.paste_graph(512, 1, True, "signed", fold=True), {
            **paste, "output": enhanced, "mask": box_mask(512, 0.3, (0, 0, 0, 0))[None],
            "matrix": matrix * 2, "colour": np.zeros((1, 3, 512, 512), np.float32),
            "weight": np.zeros((1, 1, 512, 512), np.float32), "inside": np.zeros((1, 1, 512, 512), np.float32),
            "face": np.array([0], np.int64)}),
        "occluder-input": (graphs.occluder_input_graph(512, 256, False, (0.0,) * 3, (1.0,) * 3, True),
                           {"levels": np.zeros((1, 3, 512, 512), np.float32)}),
        "occlusion": (graphs.occlusion_mask_graph(1, 256, 512), {
            "raw0": np.zeros((1, 256, 256, 1), np.float32), "box": box_mask(512, 0.3, (0, 0, 0, 0)),
            "scale": np.array([1.0], np.float32)}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", default="cpu", choices=("cpu", "cuda"))
    args = parser.parse_args(argv)
    rt = ort()
    names = {"cpu": ["CPUExecutionProvider"], "cuda": ["CUDAExecutionProvider", "CPUExecutionProvider"]}
    wanted = "CUDAExecutionProvider" if args.provider == "cuda" else "CPUExecutionProvider"
    device = Device(args.provider, 0)
    bad = 0
    with tempfile.TemporaryDirectory() as folder:
        for name, (model, feeds) in _feeds(device).items():
            options = rt.SessionOptions()
            options.enable_profiling = True
            options.profile_file_prefix = str(Path(folder) / name)
            session = rt.InferenceSession(model, options, providers=names[args.provider])
            run_bound(session, feeds, device)
            events = json.loads(Path(session.end_profiling()).read_text())
            placed = Counter()
            misplaced = set()
            for event in events:
                node = event.get("args", {})
                if event.get("cat") == "Node" and "provider" in node and "op_name" in node:
                    placed[(node["op_name"], node["provider"])] += 1
                    if node["op_name"] in PIXEL_OPS and node["provider"] != wanted and \
                            int(node.get("output_size", 0) or 0) > 4096:
                        misplaced.add(node["op_name"])
            providers = Counter(p for (_, p) in placed)
            print(f"{name:<15} {dict(providers)}" + (f"  NOT ON {wanted}: {sorted(misplaced)}" if misplaced else ""))
            bad += bool(misplaced)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

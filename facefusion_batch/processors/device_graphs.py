"""Small ONNX graphs for the per-face work around the models, run on the models' own execution provider so
a frame's crops, masks and pastes stay on the GPU (processors/device_chain.py drives them).

- `warp_graph`: frame (H, W, 3) uint8 BGR + N crop->frame matrices -> the model's input tensor for N faces
  (pixel-boost tiles included): OpenCV's warpAffine (bilinear, replicated border) as a GridSample over the
  whole frame, rounded to whole grey levels as OpenCV's uint8 crop is, then channel order and mean/std.
- `paste_graph`: frame + one face's model output (picked from the batch by index) + its mask + the
  frame->crop matrix + the face's box in the frame -> the frame with that face blended in: the model output
  decoded to BGR 0..255, sampled back into the box (GridSample, replicated border; the mask with a zero
  border), blended, rounded half to even and written with ScatterND. Only the box's pixels are touched.

Opset 16 (GridSample's first version), which CUDA, TensorRT and CPU providers all implement.
"""
from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 16
_FLOAT = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16}


def _model(nodes: list, inputs: list, outputs: list, inits: list, name: str) -> bytes:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="ffb")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _const(name: str, value) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value), name)


def _sampling_base(size: int) -> np.ndarray:
    """(S*S, 3): every pixel (u, v, 1) of a size x size crop, row by row."""
    u, v = np.meshgrid(np.arange(size, dtype=np.float32), np.arange(size, dtype=np.float32))
    return np.stack([u.ravel(), v.ravel(), np.ones(size * size, np.float32)], axis=1)


def _frame_crops(size: int) -> tuple[list, list]:
    """Nodes from `frame` (H, W, 3) uint8 and `inverse` (N, 2, 3) (crop pixel -> frame pixel) to `crops`
    (N, 3, S, S): the frame's planes sampled bilinearly (border padding), in whole grey levels as OpenCV's uint8
    crop. Defines `base` (_sampling_base), `lo` and `hi` (0 and 255) for the graph's other nodes."""
    inits = [_const("base", _sampling_base(size)), _const("zero_axis", np.array([0], np.int64)),
             _const("hw_index", np.array([1, 0], np.int64)),
             _const("frame_grid_shape", np.array([1, -1, size, 2], np.int64)),
             _const("planes_shape", np.array([3, -1, size, size], np.int64)),
             _const("lo", np.array(0.0, np.float32)), _const("hi", np.array(255.0, np.float32))]
    nodes = [
        helper.make_node("Cast", ["frame"], ["frame_f"], to=TensorProto.FLOAT),
        helper.make_node("Transpose", ["frame_f"], ["frame_chw"], perm=[2, 0, 1]),
        helper.make_node("Unsqueeze", ["frame_chw", "zero_axis"], ["image"]),
        # sampling points: (S*S, 3) @ (N, 3, 2) -> (N, S*S, 2) frame pixels (x, y), extent = (W, H)
        helper.make_node("Transpose", ["inverse"], ["inverse_t"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["base", "inverse_t"], ["points"]),
        helper.make_node("Shape", ["frame"], ["frame_shape"]),
        helper.make_node("Gather", ["frame_shape", "hw_index"], ["extent_i"]),
        helper.make_node("Cast", ["extent_i"], ["extent"], to=TensorProto.FLOAT),
    ]
    more, more_inits = _grid("points", "extent", "points_unit")
    nodes += more + [
        helper.make_node("Reshape", ["points_unit", "frame_grid_shape"], ["grid"]),
        helper.make_node("GridSample", ["image", "grid"], ["sampled"], mode="bilinear", padding_mode="border",
                         align_corners=1),  # (1, 3, N*S, S)
        helper.make_node("Round", ["sampled"], ["rounded"]),
        helper.make_node("Clip", ["rounded", "lo", "hi"], ["clipped"]),
        helper.make_node("Reshape", ["clipped", "planes_shape"], ["planes"]),
        helper.make_node("Transpose", ["planes"], ["crops"], perm=[1, 0, 2, 3]),  # (N, 3, S, S)
    ]
    return nodes, inits + more_inits


def _model_input(levels: str, rgb: bool, mean: Sequence[float], std: Sequence[float], nhwc: bool,
                 dtype) -> tuple[list, list]:
    """Nodes from `levels` (N, 3, h, w) BGR grey levels to `tensor`, a model's input: its channel order,
    (x / 255 - mean) / std, NHWC when `nhwc`, in `dtype`."""
    mean32, std32 = np.asarray(mean, np.float32), np.asarray(std, np.float32)
    inits = [_const("order", np.array([2, 1, 0] if rgb else [0, 1, 2], np.int64)),  # channel c is plane order[c]
             _const("scale", (1.0 / (255.0 * std32)).reshape(1, 3, 1, 1)),
             _const("shift", (mean32 / std32).reshape(1, 3, 1, 1))]
    nodes = [helper.make_node("Gather", [levels, "order"], ["ordered"], axis=1),
             helper.make_node("Mul", ["ordered", "scale"], ["scaled"]),
             helper.make_node("Sub", ["scaled", "shift"], ["normalised"])]
    current = "normalised"
    if nhwc:
        nodes.append(helper.make_node("Transpose", [current], ["nhwc"], perm=[0, 2, 3, 1]))
        current = "nhwc"
    nodes.append(helper.make_node("Cast", [current], ["tensor"], to=_FLOAT[dtype]))
    return nodes, inits


def warp_graph(size: int, tile: int, rgb: bool, mean: Sequence[float], std: Sequence[float],
               nhwc: bool = False, dtype=np.float32, levels: bool = False) -> bytes:
    """Inputs `frame` (H, W, 3) uint8 and `inverse` (N, 2, 3) float32 (crop pixel -> frame pixel); output
    `tensor`: (N*k*k, 3, tile, tile) for k = size / tile (pixel boost; NHWC when `nhwc`), the model's
    normalisation applied, in `dtype`; with `levels` also `levels` (N, 3, size, size): the BGR crops in whole
    grey levels (what the occluder reads)."""
    k = size // tile
    if k * tile != size:
        raise ValueError(f"crop size {size} is not a multiple of the model size {tile}")
    nodes, inits = _frame_crops(size)
    current = "crops"
    if k > 1:  # pixel boost: tile (a, b) holds crop pixels (i*k + a, j*k + b)
        inits += [_const("boost_shape", np.array([-1, 3, tile, k, tile, k], np.int64)),
                  _const("tiles_shape", np.array([-1, 3, tile, tile], np.int64))]
        nodes += [helper.make_node("Reshape", [current, "boost_shape"], ["boost"]),
                  helper.make_node("Transpose", ["boost"], ["boost_t"], perm=[0, 3, 5, 1, 2, 4]),
                  helper.make_node("Reshape", ["boost_t", "tiles_shape"], ["tiles"])]
        current = "tiles"
    more, more_inits = _model_input(current, rgb, mean, std, nhwc, dtype)
    nodes += more
    inits += more_inits
    if levels:
        nodes.append(helper.make_node("Identity", ["crops"], ["levels"]))
    shape = ["faces", tile, tile, 3] if nhwc else ["faces", 3, tile, tile]
    return _model(nodes, [helper.make_tensor_value_info("frame", TensorProto.UINT8, ["height", "width", 3]),
                          helper.make_tensor_value_info("inverse", TensorProto.FLOAT, ["count", 2, 3])],
                  [helper.make_tensor_value_info("tensor", _FLOAT[dtype], shape)]
                  + ([helper.make_tensor_value_info("levels", TensorProto.FLOAT, ["faces", 3, size, size])]
                     if levels else []), inits, "ffb_warp")


def _decoded(rows: str, tile: int, k: int, rgb: bool, decode: str, mean: Sequence[float],
             std: Sequence[float], out: str) -> tuple[list, list]:
    """Nodes turning model output rows `rows` (F*k*k, 3, tile, tile) into `out` (F, 3, tile*k, tile*k): BGR
    float 0..255 as the CPU adapters decode it, pixel-boost tiles joined."""
    order = [2, 1, 0] if rgb else [0, 1, 2]  # BGR plane c is the model's channel order[c]
    size = tile * k
    inits = [_const(f"{out}_order", np.array(order, np.int64)),
             _const(f"{out}_shape", np.array([-1, k, k, 3, tile, tile], np.int64)),
             _const(f"{out}_joined", np.array([-1, 3, size, size], np.int64))]
    nodes = [helper.make_node("Cast", [rows], [f"{out}_f"], to=TensorProto.FLOAT),
             helper.make_node("Gather", [f"{out}_f", f"{out}_order"], [f"{out}_bgr"], axis=1)]
    if decode == "unit":
        inits += [_const(f"{out}_std", np.asarray(std, np.float32)[order].reshape(1, 3, 1, 1)),
                  _const(f"{out}_mean", np.asarray(mean, np.float32)[order].reshape(1, 3, 1, 1)),
                  _const(f"{out}_lo", np.array(0.0, np.float32)), _const(f"{out}_hi", np.array(1.0, np.float32)),
                  _const(f"{out}_full", np.array(255.0, np.float32))]
        nodes += [helper.make_node("Mul", [f"{out}_bgr", f"{out}_std"], [f"{out}_s"]),
                  helper.make_node("Add", [f"{out}_s", f"{out}_mean"], [f"{out}_unit"]),
                  helper.make_node("Clip", [f"{out}_unit", f"{out}_lo", f"{out}_hi"], [f"{out}_clip"]),
                  helper.make_node("Mul", [f"{out}_clip", f"{out}_full"], [f"{out}_levels"])]
    elif decode == "signed":
        inits += [_const(f"{out}_minus", np.array(-1.0, np.float32)), _const(f"{out}_one", np.array(1.0, np.float32)),
                  _const(f"{out}_half", np.array(127.5, np.float32))]
        nodes += [helper.make_node("Clip", [f"{out}_bgr", f"{out}_minus", f"{out}_one"], [f"{out}_clip"]),
                  helper.make_node("Add", [f"{out}_clip", f"{out}_one"], [f"{out}_pos"]),
                  helper.make_node("Mul", [f"{out}_pos", f"{out}_half"], [f"{out}_raw"]),
                  helper.make_node("Round", [f"{out}_raw"], [f"{out}_levels"])]  # FaceFusion rounds them
    else:
        raise ValueError(f"unknown decode {decode!r}")
    # tiles (F, a, b, c, i, j) -> crop (F, c, i*k + a, j*k + b): the inverse of the warp's tiling
    nodes += [helper.make_node("Reshape", [f"{out}_levels", f"{out}_shape"], [f"{out}_6d"]),
              helper.make_node("Transpose", [f"{out}_6d"], [f"{out}_t"], perm=[0, 3, 4, 1, 5, 2]),
              helper.make_node("Reshape", [f"{out}_t", f"{out}_joined"], [out])]
    return nodes, inits


def _grid(points: str, extent: str, out: str) -> tuple[list, list]:
    """Nodes scaling pixel coordinates `points` (..., 2) to GridSample's [-1, 1] (align_corners) for an image
    of `extent` (2,) float = (width, height); `out` has the same shape."""
    inits = [_const(f"{out}_one", np.array(1.0, np.float32)), _const(f"{out}_two", np.array(2.0, np.float32))]
    nodes = [helper.make_node("Sub", [extent, f"{out}_one"], [f"{out}_e1"]),
             helper.make_node("Div", [f"{out}_two", f"{out}_e1"], [f"{out}_k"]),
             helper.make_node("Mul", [points, f"{out}_k"], [f"{out}_p"]),
             helper.make_node("Sub", [f"{out}_p", f"{out}_one"], [out])]
    return nodes, inits


def fold_graph(size: int, swap_tile: int, swap_tiles: int, swap_size: int, rgb: bool,
               mean: Sequence[float], std: Sequence[float], nhwc: bool = False, dtype=np.float32,
               swap_mean: Sequence[float] = (0.0,) * 3, swap_std: Sequence[float] = (1.0,) * 3,
               swap_dtype=np.float32) -> bytes:
    """The enhancer's crops with the swap folded in (ProcessorChain's fold, for the faces whose swap was not
    pasted into the frame). Inputs: `frame`; `inverse` (N, 2, 3) enhancer crop -> frame; `swap` the swapper's
    output batch and `rows` (N*swap_tiles,) int64 each face's rows of it; `swap_mask` (K, s, s) float32 the
    swap's masks and `mask_rows` (N,) int64 each face's one of them; `to_swap` (N, 2, 3) enhancer crop ->
    swap crop; `box` (N, 4) int64 x0, y0, x1, y1 in the enhancer's crop where the swap shows (empty: nothing
    folded, the face's swap is in the frame already).
    Outputs: `tensor` the enhancer's input (as warp_graph's); for paste_graph(fold=True) `colour` (N, 3, S, S)
    the swapped face in the enhancer's crop, `weight` (N, 1, S, S) its mask (0 outside the box) and `inside`
    (N, 1, S, S) 1 in the box; `levels` the enhancer's input as BGR whole grey levels (the occluder's)."""
    k = int(round(swap_tiles ** 0.5))
    nodes, inits = _frame_crops(size)  # the enhancer's crop of the frame, whole grey levels (BGR)
    inits += [
        _const("grid_shape", np.array([-1, size, size, 2], np.int64)),
        _const("swap_extent", np.array([swap_size, swap_size], np.float32)),
        _const("mask_shape", np.array([-1, 1, swap_size, swap_size], np.int64)),
        _const("us", np.arange(size, dtype=np.int64).reshape(1, 1, 1, size)),
        _const("vs", np.arange(size, dtype=np.int64).reshape(1, 1, size, 1)),
        _const("c0", np.array([0], np.int64)), _const("c1", np.array([1], np.int64)),
        _const("c2", np.array([2], np.int64)), _const("c3", np.array([3], np.int64)),
        _const("box_shape", np.array([-1, 1, 1, 1], np.int64)),
    ]
    # the swapped faces and their mask, sampled into the enhancer's crop
    nodes.append(helper.make_node("Gather", ["swap", "rows"], ["swap_rows"], axis=0))
    more, more_inits = _decoded("swap_rows", swap_tile, k, True, "unit", swap_mean, swap_std, "swapped")
    nodes += more
    inits += more_inits
    nodes += [helper.make_node("Transpose", ["to_swap"], ["to_swap_t"], perm=[0, 2, 1]),
              helper.make_node("MatMul", ["base", "to_swap_t"], ["swap_points"])]
    more, more_inits = _grid("swap_points", "swap_extent", "swap_unit")
    nodes += more
    inits += more_inits
    nodes += [
        helper.make_node("Reshape", ["swap_unit", "grid_shape"], ["swap_grid"]),  # (N, S, S, 2)
        helper.make_node("GridSample", ["swapped", "swap_grid"], ["colour"], mode="bilinear",
                         padding_mode="border", align_corners=1),
        helper.make_node("Gather", ["swap_mask", "mask_rows"], ["masks3"], axis=0),
        helper.make_node("Reshape", ["masks3", "mask_shape"], ["masks"]),  # (N, 1, s, s)
        helper.make_node("GridSample", ["masks", "swap_grid"], ["mask_sampled"], mode="bilinear",
                         padding_mode="zeros", align_corners=1),
    ]
    # inside the box: x0 <= u < x1 and y0 <= v < y1
    for name, column in (("x0", "c0"), ("y0", "c1"), ("x1", "c2"), ("y1", "c3")):
        nodes += [helper.make_node("Gather", ["box", column], [f"{name}_col"], axis=1),
                  helper.make_node("Reshape", [f"{name}_col", "box_shape"], [name])]
    nodes += [
        helper.make_node("GreaterOrEqual", ["us", "x0"], ["in_x0"]), helper.make_node("Less", ["us", "x1"], ["in_x1"]),
        helper.make_node("GreaterOrEqual", ["vs", "y0"], ["in_y0"]), helper.make_node("Less", ["vs", "y1"], ["in_y1"]),
        helper.make_node("And", ["in_x0", "in_x1"], ["in_x"]), helper.make_node("And", ["in_y0", "in_y1"], ["in_y"]),
        helper.make_node("And", ["in_x", "in_y"], ["inside_b"]),  # (N, 1, S, S)
        helper.make_node("Cast", ["inside_b"], ["inside"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["mask_sampled", "inside"], ["weight"]),
        # the swapped face over the frame's crop under its mask, rounded to whole levels
        helper.make_node("Sub", ["colour", "crops"], ["delta"]),
        helper.make_node("Mul", ["delta", "weight"], ["step_in"]),
        helper.make_node("Add", ["crops", "step_in"], ["with_swap"]),
        helper.make_node("Clip", ["with_swap", "lo", "hi"], ["with_swap_c"]),
        helper.make_node("Round", ["with_swap_c"], ["base_levels"]),
        helper.make_node("Identity", ["base_levels"], ["levels"]),
    ]
    more, more_inits = _model_input("base_levels", rgb, mean, std, nhwc, dtype)
    nodes += more
    inits += more_inits
    shape = ["faces", size, size, 3] if nhwc else ["faces", 3, size, size]
    return _model(nodes, [helper.make_tensor_value_info("frame", TensorProto.UINT8, ["height", "width", 3]),
                          helper.make_tensor_value_info("inverse", TensorProto.FLOAT, ["count", 2, 3]),
                          helper.make_tensor_value_info("swap", _FLOAT[swap_dtype], ["batch", 3, swap_tile,
                                                                                      swap_tile]),
                          helper.make_tensor_value_info("rows", TensorProto.INT64, ["rows"]),
                          helper.make_tensor_value_info("swap_mask", TensorProto.FLOAT, ["masks", swap_size,
                                                                                          swap_size]),
                          helper.make_tensor_value_info("mask_rows", TensorProto.INT64, ["count"]),
                          helper.make_tensor_value_info("to_swap", TensorProto.FLOAT, ["count", 2, 3]),
                          helper.make_tensor_value_info("box", TensorProto.INT64, ["count", 4])],
                  [helper.make_tensor_value_info("tensor", _FLOAT[dtype], shape),
                   helper.make_tensor_value_info("colour", TensorProto.FLOAT, ["count", 3, size, size]),
                   helper.make_tensor_value_info("weight", TensorProto.FLOAT, ["count", 1, size, size]),
                   helper.make_tensor_value_info("levels", TensorProto.FLOAT, ["count", 3, size, size]),
                   helper.make_tensor_value_info("inside", TensorProto.FLOAT, ["count", 1, size, size])],
                  inits, "ffb_fold")


def paste_graph(tile: int, tiles: int, rgb: bool, decode: str, mean: Sequence[float] = (0.0,) * 3,
                std: Sequence[float] = (1.0,) * 3, dtype=np.float32, fold: bool = False) -> bytes:
    """Inputs `frame` (H, W, 3) uint8; `output` (B, 3, tile, tile) the model's batch in `dtype`; `index`
    int64 (1,): the face's first row of the batch (its `tiles` rows are its pixel-boost tiles); `mask`
    (K, S, S) float32 for S = tile * sqrt(tiles) and `mask_index` (1,) int64 the face's mask among them;
    `matrix` (2, 3) float32 frame -> crop; `box` int64 (4,) x0, y0, x1, y1 of the frame region the crop
    covers. Output `pasted`: the frame with the face in.

    `decode` is how the model's output becomes 0..255: "unit" (RGB/BGR in [0, 1] after undoing `mean`/`std`,
    the swappers) or "signed" (in [-1, 1], rounded to whole levels as FaceFusion does: the enhancers).
    `fold`: also `colour` (N, 3, S, S), `weight` and `inside` (N, 1, S, S) from fold_graph and `face` (1,)
    int64, this face's place in them: the colour is the enhanced face under `mask` over the swapped face under `weight`
    (weighted mean), pasted with 1 - (1 - weight)(1 - mask), as ProcessorChain's fold."""
    k = int(round(tiles ** 0.5))
    if k * k != tiles:
        raise ValueError(f"{tiles} tiles do not form a square")
    size = tile * k
    inits = [
        _const("step", np.array(1, np.int64)), _const("rows", np.arange(tiles, dtype=np.int64)),
        _const("one", np.array(1.0, np.float32)),
        _const("crop_extent", np.array(2.0 / (size - 1), np.float32)),
        _const("lo", np.array(0.0, np.float32)), _const("hi", np.array(255.0, np.float32)),
        _const("i0", np.array([0], np.int64)), _const("i1", np.array([1], np.int64)),
        _const("i2", np.array([2], np.int64)), _const("i3", np.array([3], np.int64)),
        _const("axes01", np.array([0, 1], np.int64)), _const("axis_last", np.array([-1], np.int64)),
        _const("axis0", np.array([0], np.int64)), _const("axis1", np.array([1], np.int64)),
        _const("mask_shape", np.array([1, 1, size, size], np.int64)),
    ]
    nodes = [helper.make_node("Add", ["rows", "index"], ["face_rows"]),
             helper.make_node("Gather", ["output", "face_rows"], ["face_raw"], axis=0)]
    more, more_inits = _decoded("face_raw", tile, k, rgb, decode, mean, std, "colour_in")
    nodes += more
    inits += more_inits
    nodes += [helper.make_node("Gather", ["mask", "mask_index"], ["mask_face"], axis=0),
              helper.make_node("Reshape", ["mask_face", "mask_shape"], ["mask_in"])]
    if fold:
        inits.append(_const("tiny", np.array(1e-12, np.float32)))
        nodes += [
            helper.make_node("Gather", ["colour", "face"], ["swap_colour"], axis=0),  # (1, 3, S, S)
            helper.make_node("Gather", ["weight", "face"], ["swap_weight"], axis=0),  # (1, 1, S, S)
            helper.make_node("Sub", ["one", "mask_in"], ["not_mask"]),
            helper.make_node("Mul", ["swap_weight", "not_mask"], ["swap_share"]),
            helper.make_node("Add", ["mask_in", "swap_share"], ["mask4"]),  # 1 - (1 - s)(1 - m)
            helper.make_node("Mul", ["colour_in", "mask_in"], ["enhanced_part"]),
            helper.make_node("Mul", ["swap_colour", "swap_share"], ["swap_part"]),
            helper.make_node("Add", ["enhanced_part", "swap_part"], ["parts"]),
            helper.make_node("Max", ["mask4", "tiny"], ["denominator"]),
            helper.make_node("Div", ["parts", "denominator"], ["mixed"]),  # 0 where neither weighs anything
            # outside the box the swap's mask reaches, the enhanced face as is (ProcessorChain mixes in the box)
            helper.make_node("Gather", ["inside", "face"], ["face_inside"], axis=0),
            helper.make_node("Cast", ["face_inside"], ["face_inside_b"], to=TensorProto.BOOL),
            helper.make_node("Where", ["face_inside_b", "mixed", "colour_in"], ["colour_out"]),
        ]
    else:
        nodes += [helper.make_node("Identity", ["colour_in"], ["colour_out"]),
                  helper.make_node("Identity", ["mask_in"], ["mask4"])]
    nodes += [
        # the box's pixel grid mapped into the crop, to [-1, 1] (align_corners)
        helper.make_node("Gather", ["box", "i0"], ["x0"]), helper.make_node("Gather", ["box", "i1"], ["y0"]),
        helper.make_node("Gather", ["box", "i2"], ["x1"]), helper.make_node("Gather", ["box", "i3"], ["y1"]),
        helper.make_node("Squeeze", ["x0", "axis0"], ["x0s"]), helper.make_node("Squeeze", ["y0", "axis0"], ["y0s"]),
        helper.make_node("Squeeze", ["x1", "axis0"], ["x1s"]), helper.make_node("Squeeze", ["y1", "axis0"], ["y1s"]),
        helper.make_node("Range", ["x0s", "x1s", "step"], ["xs"]),
        helper.make_node("Range", ["y0s", "y1s", "step"], ["ys"]),
        helper.make_node("Cast", ["xs"], ["xs_f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["ys"], ["ys_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["xs_f", "axis0"], ["xs_row"]),   # (1, w)
        helper.make_node("Unsqueeze", ["ys_f", "axis1"], ["ys_col"]),   # (h, 1)
    ]
    for axis, name in ((0, "gx"), (1, "gy")):  # crop coordinate = m[a,0] x + m[a,1] y + m[a,2]
        inits += [_const(f"{name}_row", np.array([axis], np.int64))]
        nodes += [helper.make_node("Gather", ["matrix", f"{name}_row"], [f"{name}_m"], axis=0),  # (1, 3)
                  helper.make_node("Squeeze", [f"{name}_m", "axis0"], [f"{name}_v"]),
                  helper.make_node("Gather", [f"{name}_v", "i0"], [f"{name}_a"]),
                  helper.make_node("Gather", [f"{name}_v", "i1"], [f"{name}_b"]),
                  helper.make_node("Gather", [f"{name}_v", "i2"], [f"{name}_c"]),
                  helper.make_node("Mul", ["xs_row", f"{name}_a"], [f"{name}_ax"]),
                  helper.make_node("Mul", ["ys_col", f"{name}_b"], [f"{name}_by"]),
                  helper.make_node("Add", [f"{name}_ax", f"{name}_by"], [f"{name}_sum"]),
                  helper.make_node("Add", [f"{name}_sum", f"{name}_c"], [f"{name}_px"]),
                  helper.make_node("Mul", [f"{name}_px", "crop_extent"], [f"{name}_scaled"]),
                  helper.make_node("Sub", [f"{name}_scaled", "one"], [f"{name}_unit"]),
                  helper.make_node("Unsqueeze", [f"{name}_unit", "axis_last"], [f"{name}_last"])]  # (h, w, 1)
    nodes += [
        helper.make_node("Concat", ["gx_last", "gy_last"], ["grid_hw"], axis=-1),
        helper.make_node("Unsqueeze", ["grid_hw", "axis0"], ["grid"]),  # (1, h, w, 2)
        helper.make_node("GridSample", ["colour_out", "grid"], ["warped"], mode="bilinear", padding_mode="border",
                         align_corners=1),  # (1, 3, h, w)
        helper.make_node("GridSample", ["mask4", "grid"], ["alpha4"], mode="bilinear", padding_mode="zeros",
                         align_corners=1),  # (1, 1, h, w)
        helper.make_node("Squeeze", ["warped", "axis0"], ["warped3"]),
        helper.make_node("Transpose", ["warped3"], ["warped_hwc"], perm=[1, 2, 0]),
        helper.make_node("Squeeze", ["alpha4", "axis0"], ["alpha3"]),
        helper.make_node("Transpose", ["alpha3"], ["alpha"], perm=[1, 2, 0]),  # (h, w, 1)
        # the frame's box, blended: frame + alpha (crop - frame), rounded half to even, saturated
        helper.make_node("Concat", ["y0", "x0"], ["starts"], axis=0),
        helper.make_node("Concat", ["y1", "x1"], ["ends"], axis=0),
        helper.make_node("Slice", ["frame", "starts", "ends", "axes01"], ["roi"]),
        helper.make_node("Cast", ["roi"], ["roi_f"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["warped_hwc", "roi_f"], ["delta"]),
        helper.make_node("Mul", ["delta", "alpha"], ["step_in"]),
        helper.make_node("Add", ["roi_f", "step_in"], ["blended"]),
        helper.make_node("Clip", ["blended", "lo", "hi"], ["blended_c"]),
        helper.make_node("Round", ["blended_c"], ["blended_r"]),
        helper.make_node("Cast", ["blended_r"], ["updates"], to=TensorProto.UINT8),
        # written back at (y, x) of every box pixel
        helper.make_node("Shape", ["ys"], ["h"]), helper.make_node("Shape", ["xs"], ["w"]),
        helper.make_node("Concat", ["h", "w"], ["hw"], axis=0),
        helper.make_node("Unsqueeze", ["ys", "axis1"], ["ys_i"]),
        helper.make_node("Unsqueeze", ["xs", "axis0"], ["xs_i"]),
        helper.make_node("Expand", ["ys_i", "hw"], ["yy"]),
        helper.make_node("Expand", ["xs_i", "hw"], ["xx"]),
        helper.make_node("Unsqueeze", ["yy", "axis_last"], ["yy1"]),
        helper.make_node("Unsqueeze", ["xx", "axis_last"], ["xx1"]),
        helper.make_node("Concat", ["yy1", "xx1"], ["indices"], axis=-1),
        helper.make_node("ScatterND", ["frame", "indices", "updates"], ["pasted"]),
    ]
    inputs = [helper.make_tensor_value_info("frame", TensorProto.UINT8, ["height", "width", 3]),
              helper.make_tensor_value_info("output", _FLOAT[dtype], ["batch", 3, tile, tile]),
              helper.make_tensor_value_info("index", TensorProto.INT64, [1]),
              helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["masks", size, size]),
              helper.make_tensor_value_info("mask_index", TensorProto.INT64, [1]),
              helper.make_tensor_value_info("matrix", TensorProto.FLOAT, [2, 3]),
              helper.make_tensor_value_info("box", TensorProto.INT64, [4])]
    if fold:
        inputs += [helper.make_tensor_value_info("colour", TensorProto.FLOAT, ["count", 3, size, size]),
                   helper.make_tensor_value_info("weight", TensorProto.FLOAT, ["count", 1, size, size]),
                   helper.make_tensor_value_info("inside", TensorProto.FLOAT, ["count", 1, size, size]),
                   helper.make_tensor_value_info("face", TensorProto.INT64, [1])]
    return _model(nodes, inputs,
                  [helper.make_tensor_value_info("pasted", TensorProto.UINT8, ["height", "width", 3])],
                  inits, "ffb_paste")


def _gaussian(sigma: float) -> np.ndarray:
    """OpenCV's Gaussian kernel for a float image (GaussianBlur with ksize 0: 8 sigma + 1, odd)."""
    size = int(round(sigma * 8 + 1)) | 1
    return cv2.getGaussianKernel(size, sigma, cv2.CV_32F).ravel().astype(np.float32)


def _blur(source: str, sigma: float, out: str) -> tuple[list, list]:
    """(N, 1, H, W) -> `out`, OpenCV's GaussianBlur (separable, reflect-101 border: ONNX's `reflect`)."""
    kernel = _gaussian(sigma)
    half = len(kernel) // 2
    inits = [_const(f"{out}_kx", kernel.reshape(1, 1, 1, -1)), _const(f"{out}_ky", kernel.reshape(1, 1, -1, 1)),
             _const(f"{out}_px", np.array([0, 0, 0, half, 0, 0, 0, half], np.int64)),
             _const(f"{out}_py", np.array([0, 0, half, 0, 0, 0, half, 0], np.int64))]
    nodes = [helper.make_node("Pad", [source, f"{out}_px"], [f"{out}_padx"], mode="reflect"),
             helper.make_node("Conv", [f"{out}_padx", f"{out}_kx"], [f"{out}_x"]),
             helper.make_node("Pad", [f"{out}_x", f"{out}_py"], [f"{out}_pady"], mode="reflect"),
             helper.make_node("Conv", [f"{out}_pady", f"{out}_ky"], [out])]
    return nodes, inits


def _resize(source: str, size: int, out: str) -> tuple[list, list]:
    """(N, C, h, w) -> (N, C, size, size): OpenCV's INTER_LINEAR (half-pixel centres, edges clamped)."""
    inits = [_const(f"{out}_hw", np.array([size, size], np.int64)), _const(f"{out}_c01", np.array([0, 1], np.int64))]
    nodes = [helper.make_node("Shape", [source], [f"{out}_shape"]),
             helper.make_node("Gather", [f"{out}_shape", f"{out}_c01"], [f"{out}_nc"]),
             helper.make_node("Concat", [f"{out}_nc", f"{out}_hw"], [f"{out}_sizes"], axis=0),
             helper.make_node("Resize", [source, "", "", f"{out}_sizes"], [out], mode="linear",
                              coordinate_transformation_mode="half_pixel")]
    return nodes, inits


def occluder_input_graph(crop: int, model: int, rgb: bool, mean: Sequence[float], std: Sequence[float],
                         nhwc: bool, dtype=np.float32) -> bytes:
    """`levels` (N, 3, crop, crop) BGR whole grey levels -> `tensor`, the occluder's input: resized to the
    model's size and rounded as OpenCV resizes a uint8 crop (half up), then its channel order and mean/std."""
    inits = [_const("half", np.array(0.5, np.float32)), _const("lo", np.array(0.0, np.float32)),
             _const("hi", np.array(255.0, np.float32))]
    nodes, more = _resize("levels", model, "small") if crop != model else (
        [helper.make_node("Identity", ["levels"], ["small"])], [])
    inits += more
    nodes += [helper.make_node("Add", ["small", "half"], ["small_half"]),
              helper.make_node("Floor", ["small_half"], ["small_round"]),
              helper.make_node("Clip", ["small_round", "lo", "hi"], ["small_levels"])]
    more, more_inits = _model_input("small_levels", rgb, mean, std, nhwc, dtype)
    nodes += more
    inits += more_inits
    shape = ["faces", model, model, 3] if nhwc else ["faces", 3, model, model]
    return _model(nodes, [helper.make_tensor_value_info("levels", TensorProto.FLOAT, ["faces", 3, crop, crop])],
                  [helper.make_tensor_value_info("tensor", _FLOAT[dtype], shape)], inits, "ffb_occluder_input")


def occlusion_mask_graph(models: int, model: int, crop: int, dtype=np.float32) -> bytes:
    """The occluders' raw outputs `raw0`.. (N, model, model, 1) -> `masks` (N, crop, crop): their minimum,
    clipped and softened as ProcessorChain does (processors/masks.py: blur, stretch 0.5..1 to 0..1, at half
    size with half the sigma when the model's mask is half the crop), then min with `box` (crop, crop) and
    times `scale` (1,): the mask each face is pasted with (the enhancer's `blend` in scale)."""
    inits = [_const("lo", np.array(0.0, np.float32)), _const("one", np.array(1.0, np.float32)),
             _const("half", np.array(0.5, np.float32)), _const("two", np.array(2.0, np.float32)),
             _const("nchw", np.array([-1, 1, model, model], np.int64)),
             _const("out_shape", np.array([-1, crop, crop], np.int64))]
    nodes = [helper.make_node("Cast", [f"raw{i}"], [f"raw{i}_f"], to=TensorProto.FLOAT) for i in range(models)]
    nodes.append(helper.make_node("Min", [f"raw{i}_f" for i in range(models)], ["raw_min"]) if models > 1
                 else helper.make_node("Identity", ["raw0_f"], ["raw_min"]))
    nodes += [helper.make_node("Clip", ["raw_min", "lo", "one"], ["raw_clip"]),
              helper.make_node("Reshape", ["raw_clip", "nchw"], ["mask_small"])]
    if model * 2 == crop:
        more, more_inits = _blur("mask_small", 2.5, "blurred_small")
        nodes += more
        inits += more_inits
        more, more_inits = _resize("blurred_small", crop, "blurred")
    else:
        more, more_inits = _resize("mask_small", crop, "mask_big")
        nodes += more
        inits += more_inits
        nodes.append(helper.make_node("Clip", ["mask_big", "lo", "one"], ["mask_big_c"]))
        more, more_inits = _blur("mask_big_c", 5.0, "blurred")
    nodes += more
    inits += more_inits
    nodes += [helper.make_node("Clip", ["blurred", "half", "one"], ["upper"]),
              helper.make_node("Sub", ["upper", "half"], ["upper0"]),
              helper.make_node("Mul", ["upper0", "two"], ["occlusion"]),
              helper.make_node("Reshape", ["occlusion", "out_shape"], ["occlusion3"]),
              helper.make_node("Min", ["occlusion3", "box"], ["combined"]),
              helper.make_node("Clip", ["combined", "lo", "one"], ["combined_c"]),
              helper.make_node("Mul", ["combined_c", "scale"], ["masks"])]
    inputs = [helper.make_tensor_value_info(f"raw{i}", _FLOAT[dtype], ["faces", model, model, 1])
              for i in range(models)]
    inputs += [helper.make_tensor_value_info("box", TensorProto.FLOAT, [crop, crop]),
               helper.make_tensor_value_info("scale", TensorProto.FLOAT, [1])]
    return _model(nodes, inputs, [helper.make_tensor_value_info("masks", TensorProto.FLOAT, ["faces", crop, crop])],
                  inits, "ffb_occlusion")


def region_input_graph(tile: int, tiles: int, unit_mean: Sequence[float], unit_std: Sequence[float], model: int,
                       rgb: bool, mean: Sequence[float], std: Sequence[float], swap_dtype=np.float32,
                       dtype=np.float32) -> bytes:
    """The swapper's output batch `output` (N*tiles, 3, tile, tile) -> `tensor`, the face parser's input for
    each face: the swapped crop decoded (as paste_graph's "unit"), rounded to whole levels (the CPU chain's
    uint8 crop), resized to the parser's size (OpenCV rounds a uint8 resize half up), its channel order and
    mean/std."""
    k = int(round(tiles ** 0.5))
    size = tile * k
    nodes, inits = _decoded("output", tile, k, True, "unit", unit_mean, unit_std, "swapped")
    inits += [_const("lo", np.array(0.0, np.float32)), _const("hi", np.array(255.0, np.float32)),
              _const("half", np.array(0.5, np.float32))]
    nodes += [helper.make_node("Round", ["swapped"], ["swapped_r"]),
              helper.make_node("Clip", ["swapped_r", "lo", "hi"], ["levels"])]
    if size != model:
        more, more_inits = _resize("levels", model, "small_raw")
        nodes += more
        inits += more_inits
        nodes += [helper.make_node("Add", ["small_raw", "half"], ["small_half"]),
                  helper.make_node("Floor", ["small_half"], ["small_round"]),
                  helper.make_node("Clip", ["small_round", "lo", "hi"], ["small"])]
    else:
        nodes.append(helper.make_node("Identity", ["levels"], ["small"]))
    more, more_inits = _model_input("small", rgb, mean, std, False, dtype)
    nodes += more
    inits += more_inits
    return _model(nodes, [helper.make_tensor_value_info("output", _FLOAT[swap_dtype], ["rows", 3, tile, tile])],
                  [helper.make_tensor_value_info("tensor", _FLOAT[dtype], ["faces", 3, model, model])], inits,
                  "ffb_region_input")


def region_mask_graph(classes: int, wanted: Sequence[int], model: int, crop: int, dtype=np.float32) -> bytes:
    """The face parser's class scores `scores` (N, classes, model, model) -> `masks` (N, crop, crop): where the
    best class is a wanted one (a tie counts as wanted), resized to the crop, softened (blur, stretch
    0.5..1 to 0..1) as processors/masks.py does, and the minimum with `base` (N or 1, crop, crop): the box
    mask or the box and occlusion masks."""
    wanted = list(wanted)
    others = [c for c in range(classes) if c not in set(wanted)]
    inits = [_const("wanted", np.array(wanted, np.int64)), _const("lo", np.array(0.0, np.float32)),
             _const("one", np.array(1.0, np.float32)), _const("half", np.array(0.5, np.float32)),
             _const("two", np.array(2.0, np.float32)),
             _const("out_shape", np.array([-1, crop, crop], np.int64))]
    nodes = [helper.make_node("Cast", ["scores"], ["scores_f"], to=TensorProto.FLOAT),
             helper.make_node("Gather", ["scores_f", "wanted"], ["wanted_scores"], axis=1),
             helper.make_node("ReduceMax", ["wanted_scores"], ["best_wanted"], axes=[1], keepdims=1)]
    if others:
        inits.append(_const("others", np.array(others, np.int64)))
        nodes += [helper.make_node("Gather", ["scores_f", "others"], ["other_scores"], axis=1),
                  helper.make_node("ReduceMax", ["other_scores"], ["best_other"], axes=[1], keepdims=1),
                  helper.make_node("GreaterOrEqual", ["best_wanted", "best_other"], ["is_wanted"]),
                  helper.make_node("Cast", ["is_wanted"], ["region_small"], to=TensorProto.FLOAT)]
    else:  # every class wanted: the whole crop
        nodes += [helper.make_node("Mul", ["best_wanted", "lo"], ["zeros"]),
                  helper.make_node("Add", ["zeros", "one"], ["region_small"])]
    if model != crop:
        more, more_inits = _resize("region_small", crop, "region_big")
        nodes += more
        inits += more_inits
    else:
        nodes.append(helper.make_node("Identity", ["region_small"], ["region_big"]))
    nodes.append(helper.make_node("Clip", ["region_big", "lo", "one"], ["region_c"]))
    more, more_inits = _blur("region_c", 5.0, "blurred")
    nodes += more
    inits += more_inits
    nodes += [helper.make_node("Clip", ["blurred", "half", "one"], ["upper"]),
              helper.make_node("Sub", ["upper", "half"], ["upper0"]),
              helper.make_node("Mul", ["upper0", "two"], ["region"]),
              helper.make_node("Reshape", ["region", "out_shape"], ["region3"]),
              helper.make_node("Min", ["region3", "base"], ["masks"])]
    return _model(nodes, [helper.make_tensor_value_info("scores", _FLOAT[dtype], ["faces", classes, model, model]),
                          helper.make_tensor_value_info("base", TensorProto.FLOAT, ["masks", crop, crop])],
                  [helper.make_tensor_value_info("masks", TensorProto.FLOAT, ["faces", crop, crop])], inits,
                  "ffb_region")

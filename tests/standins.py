"""ONNX stand-ins for the real face models, for tests.

The real models (inswapper_128, arcface w600k_r50, SCRFD 2.5g, YOLOFace 8n,
GFPGAN 1.4) cannot be downloaded in CI.  The builders here write tiny ONNX
graphs that have exactly the real models' tensor names, shapes, dtypes and
layouts, so the production loading / pre- / post-processing code can run
against them.  The graphs compute simple, deterministic functions; see each
builder's docstring for what they do.

This is a plain module (not a test file): tests import it and call the
builders with paths inside pytest tmp dirs.  Nothing here is committed as an
``.onnx`` file.

Input names are those of the files FaceFusion 3.8.1 downloads (its face_detector.py and face_recognizer.py feed
``{'input': ...}``; InsightFace's own exports say ``input.1``, Ultralytics' ``images``): ffb reads the name
from the session, FaceFusion does not, so these stand-ins run under both.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # highest IR version for opset 17; loads in onnxruntime 1.31

SCRFD_STRIDES = (8, 16, 32)
SCRFD_NUM_ANCHORS = 2
# Real scrfd_2.5g output names, in the real output order:
# scores s8, s16, s32; bbox s8, s16, s32; kps s8, s16, s32.
SCRFD_OUTPUT_NAMES = ('448', '471', '494', '451', '474', '497', '454', '477', '500')
SCRFD_FACE_SCORE = 0.9
SCRFD_BACKGROUND_SCORE = 0.01

YOLOFACE_STRIDES = (8, 16, 32)
YOLOFACE_FACE_SCORE = 0.9

ARCFACE_BATCH_DIM = 'None'  # dim_param of the real w600k_r50 export

PathLike = str | os.PathLike


# --------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------

def _save(graph: onnx.GraphProto, path: PathLike) -> Path:
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid('', OPSET)],
        producer_name='ffb-tests-standins',
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def _init(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.ascontiguousarray(array), name=name)


def _depends_on_input(input_name: str, nodes: list, inits: list,
                      dtype=np.float32) -> str:
    """Add nodes computing ``0 * ReduceMean(input)`` (a scalar); return its name.

    Adding this to constant outputs keeps every output a function of the
    input, so onnxruntime cannot constant-fold the graph away.
    """
    inits.append(_init('standin_zero', np.array(0, dtype=dtype)))
    nodes.append(helper.make_node('ReduceMean', [input_name], ['standin_mean'], keepdims=0))
    nodes.append(helper.make_node('Mul', ['standin_mean', 'standin_zero'], ['standin_dep']))
    return 'standin_dep'


def _texture_gate(input_name: str, faces: list, nodes: list, inits: list) -> str:
    """Add nodes computing min(1, 50 * mean|x - mean(x)|) over the faces' region (a scalar); return its name.

    Multiplying the scores by it makes a flat region (no face there) detect nothing, like a real detector,
    while any textured content at the faces' place keeps the faces.
    """
    boxes = np.array([box for box, _ in faces]) if faces else np.zeros((1, 4))
    x1, y1 = np.floor(boxes[:, :2].min(0)).astype(int)
    x2, y2 = np.ceil(boxes[:, 2:].max(0)).astype(int)
    inits += [_init('gate_starts', np.array([y1, x1], np.int64)), _init('gate_ends', np.array([y2, x2], np.int64)),
              _init('gate_axes', np.array([2, 3], np.int64)), _init('gate_gain', np.array(50.0, np.float32)),
              _init('gate_one', np.array(1.0, np.float32))]
    nodes += [
        helper.make_node('Slice', [input_name, 'gate_starts', 'gate_ends', 'gate_axes'], ['gate_crop']),
        helper.make_node('ReduceMean', ['gate_crop'], ['gate_mean'], keepdims=1),
        helper.make_node('Sub', ['gate_crop', 'gate_mean'], ['gate_dev']),
        helper.make_node('Abs', ['gate_dev'], ['gate_abs']),
        helper.make_node('ReduceMean', ['gate_abs'], ['gate_mad'], keepdims=0),
        helper.make_node('Mul', ['gate_mad', 'gate_gain'], ['gate_scaled']),
        helper.make_node('Min', ['gate_scaled', 'gate_one'], ['gate']),
    ]
    return 'gate'


# What the pre-processing gate expects of the faces' region (face_frame's astronaut: red over blue by ~31 grey
# levels, mean ~128): per normalisation, the input units of one grey level and the region's mean.
_PREPROCESSING = {'bgr_pm1': (1 / 128, 0.0), 'bgr_255': (1.0, 128.0)}


def _preprocessing_gate(input_name: str, faces: list, kind: str, gate: str, nodes: list, inits: list) -> str:
    """Multiply `gate` by 1 only when the input is pre-processed as the real model wants (else ~0): channel 2
    must be red (BGR order: red over blue by at least ~10 grey levels in the faces' region) and the region's
    mean must be where the normalisation puts it (within ~30 grey levels). So a detector fed RGB, or scaled
    to another range, finds nothing, as the real model would find little."""
    unit, mean = _PREPROCESSING[kind]
    boxes = np.array([box for box, _ in faces]) if faces else np.zeros((1, 4))
    x1, y1 = np.floor(boxes[:, :2].min(0)).astype(int)
    x2, y2 = np.ceil(boxes[:, 2:].max(0)).astype(int)
    inits += [_init('pre_starts', np.array([y1, x1], np.int64)), _init('pre_ends', np.array([y2, x2], np.int64)),
              _init('pre_axes', np.array([2, 3], np.int64)),
              _init('pre_red', np.array([2], np.int64)), _init('pre_blue', np.array([0], np.int64)),
              _init('pre_order_gain', np.array(1 / (10 * unit), np.float32)),
              _init('pre_mean', np.array(mean, np.float32)),
              _init('pre_range', np.array(30 * unit, np.float32)),
              _init('pre_range_gain', np.array(1 / (10 * unit), np.float32)),
              _init('pre_zero', np.array(0.0, np.float32)), _init('pre_one', np.array(1.0, np.float32))]
    nodes += [
        helper.make_node('Slice', [input_name, 'pre_starts', 'pre_ends', 'pre_axes'], ['pre_crop']),
        helper.make_node('Gather', ['pre_crop', 'pre_red'], ['pre_r'], axis=1),
        helper.make_node('Gather', ['pre_crop', 'pre_blue'], ['pre_b'], axis=1),
        helper.make_node('ReduceMean', ['pre_r'], ['pre_rm'], keepdims=0),
        helper.make_node('ReduceMean', ['pre_b'], ['pre_bm'], keepdims=0),
        helper.make_node('Sub', ['pre_rm', 'pre_bm'], ['pre_rb']),
        helper.make_node('Mul', ['pre_rb', 'pre_order_gain'], ['pre_order_raw']),
        helper.make_node('Clip', ['pre_order_raw', 'pre_zero', 'pre_one'], ['pre_order']),
        helper.make_node('ReduceMean', ['pre_crop'], ['pre_cm'], keepdims=0),
        helper.make_node('Sub', ['pre_cm', 'pre_mean'], ['pre_off']),
        helper.make_node('Abs', ['pre_off'], ['pre_abs']),
        helper.make_node('Sub', ['pre_range', 'pre_abs'], ['pre_room']),
        helper.make_node('Mul', ['pre_room', 'pre_range_gain'], ['pre_in_raw']),
        helper.make_node('Clip', ['pre_in_raw', 'pre_zero', 'pre_one'], ['pre_in']),
        helper.make_node('Mul', ['pre_order', 'pre_in'], ['pre_gate']),
        helper.make_node('Mul', [gate, 'pre_gate'], ['pre_gated']),
    ]
    return 'pre_gated'


def _as_faces(faces: Iterable) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for box, kps in faces:
        box = np.asarray(box, dtype=np.float64).reshape(4)
        kps = np.asarray(kps, dtype=np.float64).reshape(5, 2)
        out.append((box, kps))
    return out


def _stride_for_box(box: np.ndarray) -> int:
    side = max(box[2] - box[0], box[3] - box[1])
    if side > 128:
        return 32
    if side > 64:
        return 16
    return 8


def write_facefusion_hash(onnx_path: PathLike) -> Path:
    """Write FaceFusion's ``<name>.hash`` sidecar beside ``onnx_path``.

    The sidecar holds the CRC32 (zlib.crc32) of the model file as 8 lowercase
    hex digits, no newline.  Returns the sidecar's path.
    """
    onnx_path = Path(onnx_path)
    crc = zlib.crc32(onnx_path.read_bytes()) & 0xFFFFFFFF
    hash_path = onnx_path.with_suffix('.hash')
    hash_path.write_text(format(crc, '08x'))
    return hash_path


# --------------------------------------------------------------------------
# inswapper_128
# --------------------------------------------------------------------------

def _inswapper_weights(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    # Colour projection: a unit-norm latent gives logits with std ~2, so
    # different sources give clearly different colours.
    w = (rng.standard_normal((512, 3)) * 2.0).astype(np.float32)
    # emap entries ~ N(0, 1/512): latent = emb @ emap / ||emb|| has norm ~1.
    emap = (rng.standard_normal((512, 512)) / np.sqrt(512)).astype(np.float32)
    return w, emap


def _build_inswapper(path: PathLike, seed: int, dynamic_batch: bool,
                     fp16: bool) -> np.ndarray:
    batch = 'batch' if dynamic_batch else 1
    w, emap = _inswapper_weights(seed)
    wdt = np.float16 if fp16 else np.float32
    nodes: list = []
    inits: list = []
    target, source = 'target', 'source'
    if fp16:
        nodes.append(helper.make_node('Cast', ['target'], ['target_f16'], to=TensorProto.FLOAT16))
        nodes.append(helper.make_node('Cast', ['source'], ['source_f16'], to=TensorProto.FLOAT16))
        target, source = 'target_f16', 'source_f16'
    # Every other initializer goes in before emap: emap must be LAST.
    inits.append(_init('W', w.astype(wdt)))
    inits.append(_init('colour_shape', np.array([-1, 3, 1, 1], dtype=np.int64)))
    inits.append(_init('half', np.array(0.5, dtype=wdt)))
    inits.append(_init('clip_min', np.array(0.0, dtype=wdt)))
    inits.append(_init('clip_max', np.array(1.0, dtype=wdt)))
    nodes += [
        helper.make_node('MatMul', [source, 'W'], ['logits']),
        helper.make_node('Reshape', ['logits', 'colour_shape'], ['logits4']),
        helper.make_node('Sigmoid', ['logits4'], ['colour']),
        helper.make_node('Mul', ['colour', 'half'], ['colour_half']),
        helper.make_node('Mul', [target, 'half'], ['target_half']),
        helper.make_node('Add', ['target_half', 'colour_half'], ['mixed']),
    ]
    if fp16:
        nodes.append(helper.make_node('Clip', ['mixed', 'clip_min', 'clip_max'], ['output_f16']))
        nodes.append(helper.make_node('Cast', ['output_f16'], ['output'], to=TensorProto.FLOAT))
    else:
        nodes.append(helper.make_node('Clip', ['mixed', 'clip_min', 'clip_max'], ['output']))
    stored_emap = emap.astype(wdt)
    inits.append(_init('emap', stored_emap))  # unused by the graph, like the real model
    graph = helper.make_graph(
        nodes, 'inswapper_128_standin',
        inputs=[
            helper.make_tensor_value_info('target', TensorProto.FLOAT, [batch, 3, 128, 128]),
            helper.make_tensor_value_info('source', TensorProto.FLOAT, [batch, 512]),
        ],
        outputs=[helper.make_tensor_value_info('output', TensorProto.FLOAT, [batch, 3, 128, 128])],
        initializer=inits,
    )
    _save(graph, path)
    return stored_emap


def build_inswapper(path: PathLike, seed: int = 0, dynamic_batch: bool = False) -> np.ndarray:
    """inswapper_128 stand-in; returns ``emap`` (512x512 float32).

    Inputs ``target`` [1,3,128,128] (RGB in [0,1]) and ``source`` [1,512];
    output ``output`` [1,3,128,128] in [0,1]:

        output = clip(0.5*target + 0.5*sigmoid(reshape(source @ W, [-1,3,1,1])), 0, 1)

    ``graph.initializer[-1]`` is ``emap`` (not used by any node, as in the
    real model).  With ``dynamic_batch`` the batch axis is the symbolic
    ``batch`` on both inputs and the output.
    """
    return _build_inswapper(path, seed, dynamic_batch, fp16=False)


def build_inswapper_fp16(path: PathLike, seed: int = 0, dynamic_batch: bool = False) -> np.ndarray:
    """inswapper_128_fp16 stand-in; returns ``emap`` as stored (float16).

    Same function as :func:`build_inswapper` with the same seed, but every
    initializer (``emap`` included, still last) is float16 and the graph casts
    its float32 inputs to float16 and its output back to float32, like an
    fp16 conversion with ``keep_io_types=True``.
    """
    return _build_inswapper(path, seed, dynamic_batch, fp16=True)


# --------------------------------------------------------------------------
# arcface w600k_r50
# --------------------------------------------------------------------------

def build_arcface(path: PathLike, seed: int = 0) -> None:
    """arcface (w600k_r50) stand-in.

    Input ``input`` [N,3,112,112] (RGB, x/127.5-1; N is the symbolic dim
    ``'None'``); output ``683`` [N,512], unnormalised.  The embedding is
    ``centre(flatten(AveragePool14x14(x))) @ P + b``: an 8x8 colour thumbnail
    (192 values) with its per-sample mean removed, projected by a fixed
    random 192x512 matrix, plus a small bias so a flat image does not give a
    zero vector.  Same crop -> same embedding; different faces -> different
    directions.
    """
    rng = np.random.default_rng(seed)
    proj = (rng.standard_normal((192, 512)) / np.sqrt(192)).astype(np.float32)
    bias = (rng.standard_normal(512) * 1e-3).astype(np.float32)
    n = ARCFACE_BATCH_DIM
    nodes = [
        helper.make_node('AveragePool', ['input'], ['thumb'], kernel_shape=[14, 14], strides=[14, 14]),
        helper.make_node('Flatten', ['thumb'], ['flat'], axis=1),
        helper.make_node('ReduceMean', ['flat'], ['flat_mean'], axes=[1], keepdims=1),
        helper.make_node('Sub', ['flat', 'flat_mean'], ['centred']),
        helper.make_node('MatMul', ['centred', 'proj'], ['projected']),
        helper.make_node('Add', ['projected', 'bias'], ['683']),
    ]
    graph = helper.make_graph(
        nodes, 'arcface_w600k_r50_standin',
        inputs=[helper.make_tensor_value_info('input', TensorProto.FLOAT, [n, 3, 112, 112])],
        outputs=[helper.make_tensor_value_info('683', TensorProto.FLOAT, [n, 512])],
        initializer=[_init('proj', proj), _init('bias', bias)],
    )
    _save(graph, path)


# --------------------------------------------------------------------------
# SCRFD 2.5g
# --------------------------------------------------------------------------

def scrfd_anchor_centers(size: int, stride: int) -> np.ndarray:
    """Anchor centres of one SCRFD stride, shape (H/s * W/s * 2, 2), float32.

    Centre (x*stride, y*stride) for the grid, row-major (y outer, x inner),
    each centre repeated on two adjacent rows (anchor 0, anchor 1).
    """
    cells = size // stride
    ys, xs = np.mgrid[:cells, :cells]
    centres = np.stack([xs, ys], axis=-1).reshape(-1, 2).astype(np.float32) * stride
    return np.repeat(centres, SCRFD_NUM_ANCHORS, axis=0)


def build_scrfd(path: PathLike, faces: Sequence, size: int = 640) -> None:
    """SCRFD 2.5g stand-in that "detects" exactly ``faces``.

    Input ``input`` [1,3,size,size] (BGR, (x-127.5)/128).  Nine outputs in
    the real order and with the real names (:data:`SCRFD_OUTPUT_NAMES`):
    scores s8,s16,s32 (K,1); bbox distances s8,s16,s32 (K,4); keypoints
    s8,s16,s32 (K,10); K = (size/s)^2 * 2, no batch dim.

    ``faces``: list of (box x1y1x2y2, kps 5x2) in detector-input pixels.  Each
    face is put on the free anchor nearest its box centre at stride 32 if its
    longer side > 128 px, 16 if > 64, else 8; that anchor scores 0.9 (all
    others 0.01) and its distances / keypoints decode, with

        box  = [cx - d0*s, cy - d1*s, cx + d2*s, cy + d3*s]
        kp_k = [cx + kx_k*s, cy + ky_k*s]

    to the given box and kps (up to float32 rounding).  Outputs are constants
    plus ``0*ReduceMean(input)``; scores are multiplied by a texture gate, so a
    flat image region where the faces would be detects nothing.
    """
    _scrfd_graph(path, faces, size, *_scrfd_tables(faces, size), 'scrfd_2.5g_standin')


def _scrfd_tables(faces: Sequence, size: int) -> tuple[dict, dict, dict]:
    """SCRFD's score, box-distance and keypoint tables per stride, each face on its anchor (see build_scrfd)."""
    if size % 32:
        raise ValueError(f'size must be a multiple of 32, got {size}')
    centres = {s: scrfd_anchor_centers(size, s).astype(np.float64) for s in SCRFD_STRIDES}
    scores = {s: np.full((len(c), 1), SCRFD_BACKGROUND_SCORE, np.float32) for s, c in centres.items()}
    bboxes = {s: np.zeros((len(c), 4), np.float32) for s, c in centres.items()}
    kpss = {s: np.zeros((len(c), 10), np.float32) for s, c in centres.items()}
    used: dict[int, set[int]] = {s: set() for s in SCRFD_STRIDES}
    for box, kps in _as_faces(faces):
        s = _stride_for_box(box)
        centre = np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])
        dist = np.linalg.norm(centres[s] - centre, axis=1)
        order = np.argsort(dist, kind='stable')
        idx = next((int(i) for i in order if int(i) not in used[s]), None)
        if idx is None:
            raise ValueError('no free anchor left for face')
        used[s].add(idx)
        cx, cy = centres[s][idx]
        scores[s][idx, 0] = SCRFD_FACE_SCORE
        bboxes[s][idx] = np.array([cx - box[0], cy - box[1], box[2] - cx, box[3] - cy]) / s
        kpss[s][idx] = ((kps - np.array([cx, cy])) / s).reshape(10)
    return scores, bboxes, kpss


def _constant_output(name: str, const: np.ndarray, gate: str | None, dep: str, nodes: list, inits: list):
    """Output `name`: the constant `const` (times `gate`, when given), made to depend on the input through
    `dep`; returns its value info."""
    inits.append(_init(f'const_{name}', const))
    value = f'const_{name}'
    if gate is not None:
        nodes.append(helper.make_node('Mul', [value, gate], [f'gated_{name}']))
        value = f'gated_{name}'
    nodes.append(helper.make_node('Add', [value, dep], [name]))
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(const.shape))


def _scrfd_graph(path: PathLike, faces: Sequence, size: int, scores: dict, bboxes: dict, kpss: dict, title: str,
                 preprocessing: str | None = None) -> None:
    nodes: list = []
    inits: list = []
    dep = _depends_on_input('input', nodes, inits)
    gate = _texture_gate('input', _as_faces(faces), nodes, inits)
    if preprocessing is not None:
        gate = _preprocessing_gate('input', _as_faces(faces), preprocessing, gate, nodes, inits)
    outputs = []
    constants = ([scores[s] for s in SCRFD_STRIDES]
                 + [bboxes[s] for s in SCRFD_STRIDES]
                 + [kpss[s] for s in SCRFD_STRIDES])
    for i, (name, const) in enumerate(zip(SCRFD_OUTPUT_NAMES, constants)):
        # scores: nothing is found where the image is flat
        outputs.append(_constant_output(name, const, gate if i < len(SCRFD_STRIDES) else None, dep, nodes, inits))
    graph = helper.make_graph(
        nodes, title,
        inputs=[helper.make_tensor_value_info('input', TensorProto.FLOAT, [1, 3, size, size])],
        outputs=outputs,
        initializer=inits,
    )
    _save(graph, path)


def build_retinaface(path: PathLike, faces: Sequence, size: int = 640) -> None:
    """RetinaFace 10g stand-in (FaceFusion's retinaface_10g.onnx): SCRFD's input ``input`` [1,3,size,size]
    (BGR, (x-127.5)/128), nine outputs and decoding (see :func:`build_scrfd`), whose scores are also gated on
    that pre-processing (:func:`_preprocessing_gate`)."""
    _scrfd_graph(path, faces, size, *_scrfd_tables(faces, size), 'retinaface_10g_standin',
                 preprocessing='bgr_pm1')


YUNET_STRIDES = (8, 16, 32)


def build_yunet(path: PathLike, faces: Sequence, size: int = 640) -> None:
    """YuNet 2023mar stand-in (FaceFusion's yunet_2023_mar.onnx) that "detects" exactly ``faces``.

    Input ``input`` [1,3,size,size]: BGR pixel values as they are (0..255). Twelve outputs, OpenCV's names and
    order: cls_8/16/32, obj_8/16/32 (1,K,1), bbox_8/16/32 (1,K,4), kps_8/16/32 (1,K,10), K = (size/s)^2, one
    anchor per cell at its corner (x*s, y*s), row-major (y outer). A face goes on the free anchor nearest its
    box centre (stride chosen as for SCRFD) with cls = obj = 0.95 (others 0.01), and decodes, as FaceFusion's
    detect_with_yunet does, with

        centre = bbox[:2] * s + anchor, size = exp(bbox[2:4]) * s, kp_k = kps[2k:2k+2] * s + anchor

    The cls scores are gated on texture and on the pre-processing (:func:`_preprocessing_gate`)."""
    if size % 32:
        raise ValueError(f'size must be a multiple of 32, got {size}')
    anchors = {}
    for s in YUNET_STRIDES:
        cells = size // s
        ys, xs = np.mgrid[:cells, :cells]
        anchors[s] = np.stack([xs, ys], axis=-1).reshape(-1, 2).astype(np.float64) * s
    cls = {s: np.full((1, len(a), 1), 0.01, np.float32) for s, a in anchors.items()}
    obj = {s: np.full((1, len(a), 1), 0.01, np.float32) for s, a in anchors.items()}
    bbox = {s: np.zeros((1, len(a), 4), np.float32) for s, a in anchors.items()}
    kpss = {s: np.zeros((1, len(a), 10), np.float32) for s, a in anchors.items()}
    used: dict[int, set[int]] = {s: set() for s in YUNET_STRIDES}
    for box, kps in _as_faces(faces):
        s = _stride_for_box(box)
        centre = np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])
        order = np.argsort(np.linalg.norm(anchors[s] + s / 2 - centre, axis=1), kind='stable')
        idx = next(int(i) for i in order if int(i) not in used[s])
        used[s].add(idx)
        anchor = anchors[s][idx]
        cls[s][0, idx, 0] = obj[s][0, idx, 0] = 0.95
        bbox[s][0, idx] = [*((centre - anchor) / s), np.log((box[2] - box[0]) / s), np.log((box[3] - box[1]) / s)]
        kpss[s][0, idx] = ((kps - anchor) / s).reshape(10)
    nodes: list = []
    inits: list = []
    dep = _depends_on_input('input', nodes, inits)
    gate = _texture_gate('input', _as_faces(faces), nodes, inits)
    gate = _preprocessing_gate('input', _as_faces(faces), 'bgr_255', gate, nodes, inits)
    outputs = []
    for kind, table in (('cls', cls), ('obj', obj), ('bbox', bbox), ('kps', kpss)):
        for s in YUNET_STRIDES:
            name = f'{kind}_{s}'
            outputs.append(_constant_output(name, table[s], gate if kind == 'cls' else None, dep, nodes, inits))
    graph = helper.make_graph(
        nodes, 'yunet_2023_mar_standin',
        inputs=[helper.make_tensor_value_info('input', TensorProto.FLOAT, [1, 3, size, size])],
        outputs=outputs, initializer=inits)
    _save(graph, path)


def decode_scrfd(outputs: Sequence[np.ndarray], size: int = 640,
                 threshold: float = 0.5) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Reference decoder for SCRFD outputs (in the real order).

    Returns ``[(box x1y1x2y2, kps 5x2, score), ...]`` for anchors scoring at
    least ``threshold``, stride 8 first, anchors in order.  No NMS.
    """
    found = []
    for i, s in enumerate(SCRFD_STRIDES):
        score = outputs[i][:, 0]
        dist = outputs[i + 3] * s
        kps = outputs[i + 6] * s
        centres = scrfd_anchor_centers(size, s)
        for idx in np.nonzero(score >= threshold)[0]:
            cx, cy = centres[idx]
            d = dist[idx]
            box = np.array([cx - d[0], cy - d[1], cx + d[2], cy + d[3]], dtype=np.float32)
            k = kps[idx].reshape(5, 2) + centres[idx]
            found.append((box, k.astype(np.float32), float(score[idx])))
    return found


# --------------------------------------------------------------------------
# YOLOFace 8n
# --------------------------------------------------------------------------

def yoloface_anchor_centers(size: int = 640) -> np.ndarray:
    """YOLOv8 anchor centres, shape (sum (size/s)^2, 2): ((x+0.5)*s, (y+0.5)*s).

    Stride 8 grid first, then 16, then 32; each grid row-major (y outer).
    """
    parts = []
    for s in YOLOFACE_STRIDES:
        cells = size // s
        ys, xs = np.mgrid[:cells, :cells]
        parts.append((np.stack([xs, ys], axis=-1).reshape(-1, 2) + 0.5) * s)
    return np.concatenate(parts).astype(np.float32)


def build_yoloface(path: PathLike, faces: Sequence, size: int = 640) -> None:
    """YOLOFace 8n stand-in that "detects" exactly ``faces``.

    Input ``input`` [1,3,size,size] (RGB, x/255); output ``output0``
    [1,20,A] with A = sum over strides 8/16/32 of (size/s)^2 (8400 at 640).
    Column j is [cx, cy, w, h, score, x0, y0, c0, ..., x4, y4, c4] in input
    pixels.  Each face goes in one column (the free anchor nearest its box
    centre, stride chosen as for SCRFD) with score 0.9 and landmark
    confidences 0.9; every other column is all zeros.  Output is a constant
    plus ``0*ReduceMean(input)``.
    """
    if size % 32:
        raise ValueError(f'size must be a multiple of 32, got {size}')
    centres = yoloface_anchor_centers(size).astype(np.float64)
    counts = [(size // s) ** 2 for s in YOLOFACE_STRIDES]
    starts = np.cumsum([0] + counts)
    table = np.zeros((20, len(centres)), np.float32)
    used: set[int] = set()
    for box, kps in _as_faces(faces):
        level = YOLOFACE_STRIDES.index(_stride_for_box(box))
        lo, hi = starts[level], starts[level + 1]
        centre = np.array([(box[0] + box[2]) / 2, (box[1] + box[3]) / 2])
        dist = np.linalg.norm(centres[lo:hi] - centre, axis=1)
        idx = next((lo + int(i) for i in np.argsort(dist, kind='stable') if lo + int(i) not in used), None)
        if idx is None:
            raise ValueError('no free anchor left for face')
        used.add(idx)
        column = [centre[0], centre[1], box[2] - box[0], box[3] - box[1], YOLOFACE_FACE_SCORE]
        for x, y in kps:
            column += [x, y, YOLOFACE_FACE_SCORE]
        table[:, idx] = column
    nodes: list = []
    inits: list = []
    dep = _depends_on_input('input', nodes, inits)
    gate = _texture_gate('input', _as_faces(faces), nodes, inits)
    inits.append(_init('const_output0', table[None]))
    nodes.append(helper.make_node('Mul', ['const_output0', gate], ['gated_output0']))
    nodes.append(helper.make_node('Add', ['gated_output0', dep], ['output0']))
    graph = helper.make_graph(
        nodes, 'yoloface_8n_standin',
        inputs=[helper.make_tensor_value_info('input', TensorProto.FLOAT, [1, 3, size, size])],
        outputs=[helper.make_tensor_value_info('output0', TensorProto.FLOAT, [1, 20, len(centres)])],
        initializer=inits,
    )
    _save(graph, path)


def decode_yoloface(output0: np.ndarray,
                    threshold: float = 0.5) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Reference decoder for YOLOFace ``output0`` [1,20,A].

    Returns ``[(box x1y1x2y2, kps 5x2, score), ...]`` for columns scoring at
    least ``threshold``, in column order.  No NMS.
    """
    rows = output0[0].T
    found = []
    for row in rows[rows[:, 4] >= threshold]:
        cx, cy, w, h = row[:4]
        box = np.array([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dtype=np.float32)
        kps = np.stack([row[5::3], row[6::3]], axis=-1).astype(np.float32)
        found.append((box, kps, float(row[4])))
    return found


# --------------------------------------------------------------------------
# GFPGAN 1.4
# --------------------------------------------------------------------------

def build_gfpgan(path: PathLike) -> None:
    """GFPGAN stand-in: ``input`` [1,3,512,512] (RGB in [-1,1]) -> ``output``
    same shape: a 3x3 box blur (same padding, edge pixels averaged over the
    in-image neighbours only), so it is near identity and stays in [-1,1].
    """
    nodes = [helper.make_node('AveragePool', ['input'], ['output'], kernel_shape=[3, 3],
                              strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=0)]
    graph = helper.make_graph(
        nodes, 'gfpgan_1.4_standin',
        inputs=[helper.make_tensor_value_info('input', TensorProto.FLOAT, [1, 3, 512, 512])],
        outputs=[helper.make_tensor_value_info('output', TensorProto.FLOAT, [1, 3, 512, 512])],
        initializer=[],
    )
    _save(graph, path)


# --------------------------------------------------------------------------
# FaceFusion processor models (swappers, converters, enhancers, occluder,
# parser, classifier).  Outputs are chosen so a wrong pre-processing shows as
# a wrong number: 'mean' stand-ins fill each output channel with the mean of
# that input channel (as the model received it), so a swapped channel order or
# a wrong mean/std moves the pasted colour; 'identity' stand-ins return their
# input, so pre- + post-processing must round-trip exactly.
# --------------------------------------------------------------------------

def _batch_dim(dynamic: bool):
    return 'batch' if dynamic else 1


def _channel_means(name: str, out: str, nodes: list) -> str:
    nodes.append(helper.make_node('ReduceMean', [name], [out], axes=[2, 3], keepdims=1))
    return out


def _zeroed_convs(input_name: str, convs: int, channels: int, nodes: list, inits: list) -> str:
    """A stack of ``convs`` 3x3 convolutions (``channels`` wide, 3 out) on ``input_name`` times zero: the
    compute of a real network, an exact zero to add to the output.  Returns the zero tensor's name."""
    rng = np.random.default_rng(0)
    current, width = input_name, 3
    for i in range(convs):
        out_width = 3 if i == convs - 1 else channels
        inits.append(_init(f'stack{i}_w', (rng.standard_normal((out_width, width, 3, 3)) * 0.05).astype(np.float32)))
        nodes.append(helper.make_node('Conv', [current, f'stack{i}_w'], [f'stack{i}'], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node('Relu', [f'stack{i}'], [f'stack_relu{i}']))
        current, width = f'stack_relu{i}', out_width
    inits.append(_init('stack_zero', np.zeros((1,), np.float32)))
    nodes.append(helper.make_node('Mul', [current, 'stack_zero'], ['stack_zeroed']))
    return 'stack_zeroed'


def build_swapper(path: PathLike, size: int, source_shape: Sequence[int] = (512,), mode: str = 'mean',
                  source_gain: float = 0.0, dynamic_batch: bool = False, convs: int = 0,
                  channels: int = 32) -> Path:
    """Face swapper stand-in with FaceFusion's interface: ``target`` (B,3,S,S) and ``source`` (B,512) or
    (B,3,s,s) -> ``output`` (B,3,S,S).  'mean': each output channel is the mean of that target channel;
    'identity': the target itself; 'zero': zeros (the model's own zero shows
    how the output is de-normalised).  Plus ``source_gain`` times the source's first three values (embedding)
    or its per-channel means (image source), so the source feed is visible too.  ``convs`` > 0 adds real
    convolution work on the target whose result is multiplied by zero (the output stays exact)."""
    batch = _batch_dim(dynamic_batch)
    nodes, inits = [], []
    if mode == 'mean':
        inits.append(_init('zero', np.zeros((1,), np.float32)))
        _channel_means('target', 'target_mean', nodes)
        nodes.append(helper.make_node('Mul', ['target', 'zero'], ['target_zero']))
        nodes.append(helper.make_node('Add', ['target_zero', 'target_mean'], ['image']))
    elif mode == 'identity':
        nodes.append(helper.make_node('Identity', ['target'], ['image']))
    elif mode == 'zero':
        inits.append(_init('zero', np.zeros((1,), np.float32)))
        nodes.append(helper.make_node('Mul', ['target', 'zero'], ['image']))
    else:
        raise ValueError(mode)
    if len(source_shape) == 1:
        inits += [_init('starts', np.array([0], np.int64)), _init('ends', np.array([3], np.int64)),
                  _init('axes1', np.array([1], np.int64)), _init('axes23', np.array([2, 3], np.int64))]
        nodes.append(helper.make_node('Slice', ['source', 'starts', 'ends', 'axes1'], ['source3']))
        nodes.append(helper.make_node('Unsqueeze', ['source3', 'axes23'], ['source_term']))
    else:
        _channel_means('source', 'source_term', nodes)
    inits.append(_init('gain', np.array([source_gain], np.float32)))
    nodes.append(helper.make_node('Mul', ['source_term', 'gain'], ['source_scaled']))
    if convs:
        nodes.append(helper.make_node('Add', ['image', _zeroed_convs('target', convs, channels, nodes, inits)],
                                      ['image_convs']))
        nodes.append(helper.make_node('Add', ['image_convs', 'source_scaled'], ['output']))
    else:
        nodes.append(helper.make_node('Add', ['image', 'source_scaled'], ['output']))
    graph = helper.make_graph(
        nodes, 'swapper_standin',
        inputs=[helper.make_tensor_value_info('target', TensorProto.FLOAT, [batch, 3, size, size]),
                helper.make_tensor_value_info('source', TensorProto.FLOAT, [batch, *source_shape])],
        outputs=[helper.make_tensor_value_info('output', TensorProto.FLOAT, [batch, 3, size, size])],
        initializer=inits)
    return _save(graph, path)


def build_constant(path: PathLike, input_shape: Sequence[int], value: np.ndarray) -> Path:
    """A model whose input ``input`` (float, `input_shape`) is read and whose output ``output`` is always `value`."""
    nodes = [helper.make_node('ReduceMean', ['input'], ['mean'], keepdims=0),
             helper.make_node('Mul', ['mean', 'zero'], ['nothing']),
             helper.make_node('Add', ['value', 'nothing'], ['output'])]
    graph = helper.make_graph(
        nodes, Path(path).stem + '_standin',
        inputs=[helper.make_tensor_value_info('input', TensorProto.FLOAT, list(input_shape))],
        outputs=[helper.make_tensor_value_info('output', TensorProto.FLOAT, list(value.shape))],
        initializer=[_init('zero', np.zeros((), np.float32)), _init('value', value.astype(np.float32))],
    )
    return _save(graph, path)


def build_converter(path: PathLike, matrix: np.ndarray) -> Path:
    """Embedding converter stand-in (crossface_*): ``input`` (B,512) -> ``output`` (B,512) = input @ matrix."""
    graph = helper.make_graph(
        [helper.make_node('MatMul', ['input', 'w'], ['output'])], 'converter_standin',
        inputs=[helper.make_tensor_value_info('input', TensorProto.FLOAT, ['batch', 512])],
        outputs=[helper.make_tensor_value_info('output', TensorProto.FLOAT, ['batch', 512])],
        initializer=[_init('w', matrix.astype(np.float32))])
    return _save(graph, path)


def build_enhancer(path: PathLike, size: int, mode: str = 'identity', weight_input: bool = False,
                   dynamic_batch: bool = False, convs: int = 0, channels: int = 32) -> Path:
    """Face enhancer stand-in: ``input`` (B,3,S,S) RGB in [-1,1] (+ ``weight`` (1,) float64 for CodeFormer)
    -> ``output`` (B,3,S,S).  'identity' or 'mean' as for the swapper; with a weight input the weight is
    added to every output value.  ``convs`` > 0 adds a stack of 3x3 convolutions (``channels`` wide) whose
    result is multiplied by zero: the output stays exact while the compute is that of a real network."""
    batch = _batch_dim(dynamic_batch)
    nodes, inits = [], []
    inputs = [helper.make_tensor_value_info('input', TensorProto.FLOAT, [batch, 3, size, size])]
    if mode == 'mean':
        inits.append(_init('zero', np.zeros((1,), np.float32)))
        _channel_means('input', 'input_mean', nodes)
        nodes.append(helper.make_node('Mul', ['input', 'zero'], ['input_zero']))
        nodes.append(helper.make_node('Add', ['input_zero', 'input_mean'], ['image']))
    else:
        nodes.append(helper.make_node('Identity', ['input'], ['image']))
    result = 'image'
    if convs:
        nodes.append(helper.make_node('Add', [result, _zeroed_convs('input', convs, channels, nodes, inits)],
                                      ['image_conv']))
        result = 'image_conv'
    if weight_input:
        inputs.append(helper.make_tensor_value_info('weight', TensorProto.DOUBLE, [1]))
        nodes.append(helper.make_node('Cast', ['weight'], ['weight_f'], to=TensorProto.FLOAT))
        nodes.append(helper.make_node('Add', [result, 'weight_f'], ['output']))
    else:
        nodes.append(helper.make_node('Identity', [result], ['output']))
    graph = helper.make_graph(
        nodes, 'enhancer_standin', inputs=inputs,
        outputs=[helper.make_tensor_value_info('output', TensorProto.FLOAT, [batch, 3, size, size])],
        initializer=inits)
    return _save(graph, path)


def build_occluder(path: PathLike, mask: np.ndarray, dynamic_batch: bool = True) -> Path:
    """XSeg stand-in: ``input`` (B,256,256,3) NHWC -> ``output`` (B,256,256,1) = the given 256x256 mask for
    every face (plus 0 x the input's mean, so it stays a function of the input)."""
    batch = _batch_dim(dynamic_batch)
    nodes, inits = [], [_init('mask', mask.astype(np.float32).reshape(1, 256, 256, 1)),
                        _init('zero', np.zeros((1,), np.float32))]
    nodes.append(helper.make_node('ReduceMean', ['input'], ['input_mean'], axes=[1, 2, 3], keepdims=1))
    nodes.append(helper.make_node('Mul', ['input_mean', 'zero'], ['dep']))
    nodes.append(helper.make_node('Add', ['mask', 'dep'], ['output']))
    graph = helper.make_graph(
        nodes, 'xseg_standin',
        inputs=[helper.make_tensor_value_info('input', TensorProto.FLOAT, [batch, 256, 256, 3])],
        outputs=[helper.make_tensor_value_info('output', TensorProto.FLOAT, [batch, 256, 256, 1])],
        initializer=inits)
    return _save(graph, path)


def build_parser(path: PathLike, classes: np.ndarray, dynamic_batch: bool = True) -> Path:
    """BiSeNet stand-in: ``input`` (B,3,512,512) -> ``output`` (B,19,512,512) scores whose argmax is the
    given 512x512 class map for every face."""
    batch = _batch_dim(dynamic_batch)
    scores = np.zeros((1, 19, 512, 512), np.float32)
    np.put_along_axis(scores, classes.astype(np.int64)[None, None], 1.0, axis=1)
    nodes, inits = [], [_init('scores', scores), _init('zero', np.zeros((1,), np.float32))]
    nodes.append(helper.make_node('ReduceMean', ['input'], ['input_mean'], axes=[1, 2, 3], keepdims=1))
    nodes.append(helper.make_node('Mul', ['input_mean', 'zero'], ['dep']))
    nodes.append(helper.make_node('Add', ['scores', 'dep'], ['output']))
    graph = helper.make_graph(
        nodes, 'bisenet_standin',
        inputs=[helper.make_tensor_value_info('input', TensorProto.FLOAT, [batch, 3, 512, 512])],
        outputs=[helper.make_tensor_value_info('output', TensorProto.FLOAT, [batch, 19, 512, 512])],
        initializer=inits)
    return _save(graph, path)


def build_fairface(path: PathLike, age_id: int = 3) -> Path:
    """FairFace stand-in: ``input`` (B,3,224,224) -> ``race_id``, ``gender_id``, ``age_id`` (B,) int64.
    gender 1 (female) when input channel 0's mean exceeds channel 2's (a red face fed as RGB), race 1
    (black) when channel 1's mean exceeds channel 0's, age ``age_id``."""
    nodes, inits = [], [_init('i0', np.array(0, np.int64)), _init('i1', np.array(1, np.int64)),
                        _init('i2', np.array(2, np.int64)), _init('zero', np.zeros((1,), np.float32)),
                        _init('age', np.array([float(age_id)], np.float32))]
    nodes.append(helper.make_node('ReduceMean', ['input'], ['means'], axes=[2, 3], keepdims=0))
    for index in ('0', '1', '2'):
        nodes.append(helper.make_node('Gather', ['means', f'i{index}'], [f'c{index}'], axis=1))
    nodes.append(helper.make_node('Greater', ['c0', 'c2'], ['female']))
    nodes.append(helper.make_node('Cast', ['female'], ['gender_id'], to=TensorProto.INT64))
    nodes.append(helper.make_node('Greater', ['c1', 'c0'], ['black']))
    nodes.append(helper.make_node('Cast', ['black'], ['race_id'], to=TensorProto.INT64))
    nodes.append(helper.make_node('Mul', ['c0', 'zero'], ['c0_zero']))
    nodes.append(helper.make_node('Add', ['c0_zero', 'age'], ['age_f']))
    nodes.append(helper.make_node('Cast', ['age_f'], ['age_id'], to=TensorProto.INT64))
    graph = helper.make_graph(
        nodes, 'fairface_standin',
        inputs=[helper.make_tensor_value_info('input', TensorProto.FLOAT, ['batch', 3, 224, 224])],
        outputs=[helper.make_tensor_value_info(name, TensorProto.INT64, ['batch'])
                 for name in ('race_id', 'gender_id', 'age_id')],
        initializer=inits)
    return _save(graph, path)


# --------------------------------------------------------------------------
# FaceFusion's 68-point face landmarkers (2dfan4, peppa_wutz) and the
# 68-from-5 estimator (fan_68_5).  The landmarkers put a face-shaped set of 68
# points around the centroid of one colour in the crop they are fed, so a
# wrong crop (scale, translation, turn) or a wrong channel order gives points
# in the wrong place; their score follows the crop's brightness.
# --------------------------------------------------------------------------

def mean_shape_68() -> np.ndarray:
    """A plausible 68-point face (iBUG layout) in the unit ffhq_512 template space: its eye centres, nose tip
    (30) and mouth corners (48, 54) are exactly the template's 5 points."""
    left_eye, right_eye, nose, mouth_left, mouth_right = (
        np.array(p) for p in ([0.37691676, 0.46864664], [0.62285697, 0.46912813], [0.50123859, 0.61331904],
                              [0.39308822, 0.72541100], [0.61150205, 0.72490465]))
    t = np.linspace(0, np.pi, 17)
    jaw = np.stack([0.5 - 0.28 * np.cos(t), 0.47 + 0.46 * np.sin(t)], axis=1)
    brows = [np.stack([np.linspace(a, b, 5), 0.40 - 0.02 * np.sin(np.linspace(0, np.pi, 5))], axis=1)
             for a, b in ((0.28, 0.46), (0.54, 0.72))]
    bridge = np.stack([np.full(4, nose[0]), np.linspace(0.47, nose[1], 4)], axis=1)
    nostrils = np.stack([np.linspace(0.45, 0.55, 5), np.full(5, 0.645)], axis=1)
    eye = np.array([[-0.04, 0], [-0.02, -0.012], [0.02, -0.012], [0.04, 0], [0.02, 0.012], [-0.02, 0.012]])
    centre = (mouth_left + mouth_right) / 2
    half = (mouth_right[0] - mouth_left[0]) / 2
    outer_t = np.pi - np.arange(12) * np.pi / 6
    outer = centre + np.stack([half * np.cos(outer_t), -0.035 * np.sin(outer_t)], axis=1)
    outer[0], outer[6] = mouth_left, mouth_right
    inner_t = np.pi - np.arange(8) * np.pi / 4
    inner = centre + np.stack([0.6 * half * np.cos(inner_t), -0.015 * np.sin(inner_t)], axis=1)
    points = np.concatenate([jaw, *brows, bridge, nostrils, left_eye + eye, right_eye + eye, outer, inner])
    assert points.shape == (68, 2)
    return points.astype(np.float32)


LANDMARK_SPAN = 120.0  # crop pixels the stand-in landmarkers' face is wide (jaw point 0 to 16)


def standin_offsets() -> np.ndarray:
    """The stand-in landmarkers' 68 points relative to their centroid, in crop pixels (upright face)."""
    shape = mean_shape_68().astype(np.float64)
    return (shape - shape.mean(0)) * (LANDMARK_SPAN / (shape[16, 0] - shape[0, 0]))


def _colour_centroid(channel_up: int, channel_down: int, nodes: list, inits: list) -> str:
    """Nodes computing the (1, 1, 2) centroid (x, y, crop pixels) of relu(input[c_up] - input[c_down] - 0.6)
    over a (1,3,256,256) ``input`` (only a strong colour counts, never a face's or a textured background's
    own tints); with no such colour in the crop it is the crop's centre."""
    ys, xs = np.mgrid[0:256, 0:256].astype(np.float32)
    inits += [_init('grid_x', xs[None, None]), _init('grid_y', ys[None, None]),
              _init('c_up', np.array([channel_up], np.int64)), _init('c_down', np.array([channel_down], np.int64)),
              _init('eps', np.array(1e-6, np.float32)), _init('strong', np.array(0.6, np.float32))]
    nodes += [
        helper.make_node('Gather', ['input', 'c_up'], ['up'], axis=1),
        helper.make_node('Gather', ['input', 'c_down'], ['down'], axis=1),
        helper.make_node('Sub', ['up', 'down'], ['diff']),
        helper.make_node('Sub', ['diff', 'strong'], ['excess']),
        helper.make_node('Relu', ['excess'], ['weight_raw']),
        helper.make_node('Add', ['weight_raw', 'eps'], ['weight']),
        helper.make_node('ReduceSum', ['weight'], ['weight_sum'], keepdims=0),
        helper.make_node('Mul', ['weight', 'grid_x'], ['wx']),
        helper.make_node('Mul', ['weight', 'grid_y'], ['wy']),
        helper.make_node('ReduceSum', ['wx'], ['sum_x'], keepdims=0),
        helper.make_node('ReduceSum', ['wy'], ['sum_y'], keepdims=0),
        helper.make_node('Div', ['sum_x', 'weight_sum'], ['cx']),
        helper.make_node('Div', ['sum_y', 'weight_sum'], ['cy']),
    ]
    inits.append(_init('shape_112', np.array([1, 1, 1], np.int64)))
    nodes += [helper.make_node('Reshape', ['cx', 'shape_112'], ['cx3']),
              helper.make_node('Reshape', ['cy', 'shape_112'], ['cy3']),
              helper.make_node('Concat', ['cx3', 'cy3'], ['centroid'], axis=2)]
    return 'centroid'


def _brightness_score(gain: float, nodes: list, inits: list) -> str:
    """Nodes computing min(1, gain * mean(input)) as a scalar."""
    inits += [_init('score_gain', np.array(gain, np.float32)), _init('score_one', np.array(1.0, np.float32))]
    nodes += [helper.make_node('ReduceMean', ['input'], ['brightness'], keepdims=0),
              helper.make_node('Mul', ['brightness', 'score_gain'], ['score_raw']),
              helper.make_node('Min', ['score_raw', 'score_one'], ['score'])]
    return 'score'


def build_2dfan4(path: PathLike, gain: float = 2.0, channels: tuple[int, int] = (0, 2)) -> Path:
    """2dfan4 stand-in: ``input`` (1,3,256,256) float 0..1 -> ``landmarks`` (1,68,3) in 64-px heatmap units
    and ``heatmaps`` (1,68,64,64).  The points are ``standin_offsets()`` around the centroid of
    relu(input[c0] - input[c2] - 0.6) (default: strong blue in the frame's BGR order, as FaceFusion feeds it); every
    heatmap's peak is min(1, gain * mean(input)), so the score is that mapped 0..0.9 -> 0..1."""
    nodes, inits = [], []
    centroid = _colour_centroid(channels[0], channels[1], nodes, inits)
    score = _brightness_score(gain, nodes, inits)
    inits += [_init('offsets', standin_offsets().astype(np.float32)[None]),
              _init('to_heatmap', np.array(64 / 256, np.float32)),
              _init('ones', np.ones((1, 68, 1), np.float32)), _init('heat_ones', np.ones((1, 68, 64, 64), np.float32))]
    nodes += [helper.make_node('Add', [centroid, 'offsets'], ['points_crop']),
              helper.make_node('Mul', ['points_crop', 'to_heatmap'], ['points']),
              helper.make_node('Concat', ['points', 'ones'], ['landmarks'], axis=2),
              helper.make_node('Mul', ['heat_ones', score], ['heatmaps'])]
    graph = helper.make_graph(
        nodes, '2dfan4_standin',
        inputs=[helper.make_tensor_value_info('input', TensorProto.FLOAT, [1, 3, 256, 256])],
        outputs=[helper.make_tensor_value_info('landmarks', TensorProto.FLOAT, [1, 68, 3]),
                 helper.make_tensor_value_info('heatmaps', TensorProto.FLOAT, [1, 68, 64, 64])],
        initializer=inits)
    return _save(graph, path)


def build_peppa_wutz(path: PathLike, gain: float = 2.0, channels: tuple[int, int] = (2, 0)) -> Path:
    """peppa_wutz stand-in: ``input`` (1,3,256,256) -> ``output`` (1,204): (x, y, confidence) x 68, points in
    64-px units as for 2dfan4, around the centroid of relu(input[c0] - input[c2] - 0.6) (default: strong red in BGR),
    confidence min(1, gain * mean(input)) (score: mapped 0..0.95 -> 0..1)."""
    nodes, inits = [], []
    centroid = _colour_centroid(channels[0], channels[1], nodes, inits)
    score = _brightness_score(gain, nodes, inits)
    inits += [_init('offsets', standin_offsets().astype(np.float32)[None]),
              _init('to_heatmap', np.array(64 / 256, np.float32)),
              _init('ones', np.ones((1, 68, 1), np.float32)), _init('flat', np.array([1, 204], np.int64))]
    nodes += [helper.make_node('Add', [centroid, 'offsets'], ['points_crop']),
              helper.make_node('Mul', ['points_crop', 'to_heatmap'], ['points']),
              helper.make_node('Mul', ['ones', score], ['confidence']),
              helper.make_node('Concat', ['points', 'confidence'], ['rows'], axis=2),
              helper.make_node('Reshape', ['rows', 'flat'], ['output'])]
    graph = helper.make_graph(
        nodes, 'peppa_wutz_standin',
        inputs=[helper.make_tensor_value_info('input', TensorProto.FLOAT, [1, 3, 256, 256])],
        outputs=[helper.make_tensor_value_info('output', TensorProto.FLOAT, [1, 204])],
        initializer=inits)
    return _save(graph, path)


def build_fan_68_5(path: PathLike) -> Path:
    """fan_68_5 stand-in: ``input`` (1,5,2), the 5 points in the unit ffhq_512 space -> ``output`` (1,68,2):
    ``mean_shape_68()`` moved by the nose point's offset from the template's nose (so points fed in another
    space come back as a tiny face in the wrong place)."""
    shape = mean_shape_68()
    inits = [_init('shape', shape[None]), _init('template_nose', shape[30].reshape(1, 1, 2)),
             _init('starts', np.array([2], np.int64)), _init('ends', np.array([3], np.int64)),
             _init('axes', np.array([1], np.int64))]
    nodes = [helper.make_node('Slice', ['input', 'starts', 'ends', 'axes'], ['nose']),
             helper.make_node('Sub', ['nose', 'template_nose'], ['shift']),
             helper.make_node('Add', ['shape', 'shift'], ['output'])]
    graph = helper.make_graph(
        nodes, 'fan_68_5_standin',
        inputs=[helper.make_tensor_value_info('input', TensorProto.FLOAT, [1, 5, 2])],
        outputs=[helper.make_tensor_value_info('output', TensorProto.FLOAT, [1, 68, 2])],
        initializer=inits)
    return _save(graph, path)


# --------------------------------------------------------------------------
# FaceFusion's content analyser: nsfw_1 / nsfw_2 / nsfw_3 (content_analyser.py of FaceFusion 3.8.1)
# --------------------------------------------------------------------------

NSFW_SIZES = {'nsfw_1': 640, 'nsfw_2': 384, 'nsfw_3': 448}
NSFW_NORMALISATION = {'nsfw_1': ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0)),
                      'nsfw_2': ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
                      'nsfw_3': ((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711))}
NSFW_1_CLASSES, NSFW_1_ANCHORS = 5, 8400  # a YOLO head at 640: 80^2 + 40^2 + 20^2 anchors
NSFW_FLAG_AT = 0.3  # the stand-ins flag when mean(R - G) of the picture (in [0, 1]) passes this


def build_nsfw(path: PathLike, name: str, flags: bool = True) -> Path:
    """A stand-in for FaceFusion's nsfw_1 / nsfw_2 / nsfw_3 with their interface: ``input`` (1, 3, S, S)
    RGB normalised by the model's mean/std (S: 640 / 384 / 448) -> nsfw_1 ``output0`` (1, 4 + 5, 8400)
    (boxes, then class scores), nsfw_2 ``logits`` (1, 2) [nsfw, sfw], nsfw_3 ``logits`` (1, 4) (four levels).

    The "explicit" signal is d = mean(R - G) of the un-normalised input (padding counts as 0): a magenta
    picture has d ~ 1, real photos d < 0.15.  Each model crosses FaceFusion's own threshold exactly when
    d > NSFW_FLAG_AT (nsfw_1: class score d - 0.1 > 0.2; nsfw_2: 2 d - 0.35 - 0 > 0.25; nsfw_3:
    (10 d + 7.5) - 0 > 10.5).  ``flags=False`` builds one that never flags (d taken as 0)."""
    size = NSFW_SIZES[name]
    mean, std = NSFW_NORMALISATION[name]
    inits = [_init('std', np.array(std, np.float32).reshape(1, 3, 1, 1)),
             _init('mean', np.array(mean, np.float32).reshape(1, 3, 1, 1)),
             _init('r', np.array([0], np.int64)), _init('g', np.array([1], np.int64)),
             _init('gain', np.array(1.0 if flags else 0.0, np.float32))]
    nodes = [helper.make_node('Mul', ['input', 'std'], ['scaled']),
             helper.make_node('Add', ['scaled', 'mean'], ['pixels']),
             helper.make_node('ReduceMean', ['pixels'], ['means'], axes=[2, 3], keepdims=0),  # (1, 3)
             helper.make_node('Gather', ['means', 'r'], ['red'], axis=1),
             helper.make_node('Gather', ['means', 'g'], ['green'], axis=1),
             helper.make_node('Sub', ['red', 'green'], ['d_raw']),
             helper.make_node('Mul', ['d_raw', 'gain'], ['d'])]  # (1, 1)
    if name == 'nsfw_1':
        inits += [_init('offset', np.array(-0.1, np.float32)),
                  _init('score_shape', np.array([1, NSFW_1_CLASSES, NSFW_1_ANCHORS], np.int64)),
                  _init('boxes', np.zeros((1, 4, NSFW_1_ANCHORS), np.float32)),
                  _init('d_shape', np.array([1, 1, 1], np.int64))]
        nodes += [helper.make_node('Add', ['d', 'offset'], ['score']),
                  helper.make_node('Reshape', ['score', 'd_shape'], ['score3']),
                  helper.make_node('Expand', ['score3', 'score_shape'], ['scores']),
                  helper.make_node('Concat', ['boxes', 'scores'], ['output0'], axis=1)]
        output = helper.make_tensor_value_info('output0', TensorProto.FLOAT, [1, 4 + NSFW_1_CLASSES, NSFW_1_ANCHORS])
    elif name == 'nsfw_2':
        inits += [_init('two', np.array(2.0, np.float32)), _init('shift', np.array(-0.35, np.float32)),
                  _init('zero', np.zeros((1, 1), np.float32))]
        nodes += [helper.make_node('Mul', ['d', 'two'], ['d2']),
                  helper.make_node('Add', ['d2', 'shift'], ['nsfw']),
                  helper.make_node('Concat', ['nsfw', 'zero'], ['logits'], axis=1)]
        output = helper.make_tensor_value_info('logits', TensorProto.FLOAT, [1, 2])
    else:
        inits += [_init('ten', np.array(10.0, np.float32)), _init('shift', np.array(7.5, np.float32)),
                  _init('zeros2', np.zeros((1, 2), np.float32)), _init('zero', np.zeros((1, 1), np.float32))]
        nodes += [helper.make_node('Mul', ['d', 'ten'], ['d10']),
                  helper.make_node('Add', ['d10', 'shift'], ['high']),
                  helper.make_node('Concat', ['zeros2', 'high', 'zero'], ['logits'], axis=1)]
        output = helper.make_tensor_value_info('logits', TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info('input', TensorProto.FLOAT,
                                                                        [1, 3, size, size])], [output], inits)
    return _save(graph, path)


def build_nsfw_set(directory: PathLike, flagging: Sequence[str] = ('nsfw_1', 'nsfw_2', 'nsfw_3')) -> Path:
    """The three stand-ins (+ FaceFusion .hash sidecars) in `directory`; those not in `flagging` never flag."""
    directory = Path(directory)
    for name in NSFW_SIZES:
        write_facefusion_hash(build_nsfw(directory / f'{name}.onnx', name, name in flagging))
    return directory

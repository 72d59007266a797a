"""The processor chain with its per-face work on the execution device: the frame goes to the device once, the
crops are warped there (device_graphs.warp_graph), the models read them and write their outputs there (IO
binding), each face is pasted back there (device_graphs.paste_graph), and only the finished frame comes
back. Only the faces' 5 keypoints, the 2x3 matrices and the source identity travel from the host.

It does what ProcessorChain does in FaceFusion's order: the swap of every face is pasted, then the enhancer
crops are taken from the swapped frame, enhanced and pasted with `blend` x its box mask. (ProcessorChain folds
the two pastes into one for big faces; the pictures agree within the rounding of one paste: a grey level.)
The box mask only: the other masks need model masks resized and blurred per face, which still run on the
CPU path (`device_support` says why a configuration can't take this path).

The same code runs on the CPU provider, which is how its pictures are checked against ProcessorChain here.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import cv2
import numpy as np

from facefusion_batch.faces.geometry import align_matrix, box_mask
from facefusion_batch.faces.types import Face
from facefusion_batch.models.binding import Device, upload
from facefusion_batch.processors.device_graphs import paste_graph, warp_graph
from facefusion_batch.processors.enhancer import Enhancer
from facefusion_batch.processors.masks import MaskOptions
from facefusion_batch.processors.swapper import _DENORMALISED, Swapper
from facefusion_batch.processors.tensors import batch_allowed

# (graph bytes) -> a callable running that graph on the models' device: feeds -> list of OrtValues there
GraphOpener = Callable[[str, bytes], Callable[[dict[str, Any]], list[Any]]]
_DTYPES = {"tensor(float16)": np.float16}


def device_support(masks: MaskOptions) -> str | None:
    """None when the device path can run these masks; else why not, in words for a settings error."""
    others = [t for t in masks.types if t != "box"]
    if others:
        return (f"face_work = device does the box mask only (face_mask_types has {' '.join(others)}); use "
                "face_work = auto or cpu")
    return None


class DeviceChain:
    """`swapper`/`enhancer` hold sessions with `run_on_device(feeds)` (models.sessions.GuardedSession) and
    `device()`; `open_graph(name, bytes)` returns a runner of one helper graph on that same device."""

    def __init__(self, swapper: Swapper | None, enhancer: Enhancer | None, masks: MaskOptions,
                 open_graph: GraphOpener) -> None:
        if swapper is None and enhancer is None:
            raise ValueError("the processor chain needs face_swapper or face_enhancer")
        reason = device_support(masks)
        if reason:
            raise ValueError(reason)
        self.swapper, self.enhancer, self.masks = swapper, enhancer, masks
        first = swapper or enhancer
        assert first is not None
        self.device: Device = first._session.device()
        self._swap = self._enhance = None
        if swapper is not None:
            spec, session = swapper.spec, swapper._session
            tile = spec.size
            unit_mean, unit_std = (spec.mean, spec.std) if spec.kind in _DENORMALISED else ((0.0,) * 3, (1.0,) * 3)
            self._swap = _Stage(
                session, swapper.size, tile, "target",
                open_graph(f"warp-{spec.name}-{swapper.size}", warp_graph(
                    swapper.size, tile, spec.rgb, spec.mean, spec.std, spec.nhwc, _input_type(session, "target"))),
                open_graph(f"paste-{spec.name}-{swapper.size}", paste_graph(
                    tile, (swapper.size // tile) ** 2, True, "unit", unit_mean, unit_std, _output_type(session))),
                upload(box_mask(swapper.size, masks.blur, masks.padding), self.device))
        if enhancer is not None:
            spec, session = enhancer.spec, enhancer._session
            blend = np.float32(enhancer.options.blend / 100.0)
            # FaceFusion's enhancer uses the box blur without padding
            mask = box_mask(enhancer.size, masks.blur, (0, 0, 0, 0)) * blend
            self._enhance = _Stage(
                session, enhancer.size, enhancer.size, "input",
                open_graph(f"warp-{spec.name}", warp_graph(enhancer.size, enhancer.size, spec.rgb, spec.mean,
                                                           spec.std, spec.nhwc, _input_type(session, "input"))),
                open_graph(f"paste-{spec.name}", paste_graph(enhancer.size, 1, True, "signed",
                                                             dtype=_output_type(session))),
                upload(mask.astype(np.float32), self.device), shared=dict(enhancer._shared))

    def process(self, frame: np.ndarray, faces: Sequence[Face], source: np.ndarray | None = None,
                target_embeddings: np.ndarray | None = None,
                landmarks68: Sequence[np.ndarray] | None = None) -> np.ndarray:
        """As ProcessorChain.process: the faces of the BGR `frame` processed, in place, and the frame."""
        if not faces:
            return frame
        image = upload(frame, self.device)
        if self._swap is not None:
            assert self.swapper is not None
            if source is None:
                raise ValueError("face_swapper needs the source identity (Swapper.source_input)")
            rows = self.swapper.balance(source, target_embeddings, len(faces))
            image = self._swap.run(image, frame.shape, faces, self.swapper.template,
                                   lambda i, per_face: {"source": np.repeat(rows[i], per_face, axis=0)})
        if self._enhance is not None:
            assert self.enhancer is not None
            image = self._enhance.run(image, frame.shape, faces, self.enhancer.template, lambda i, per_face: {})
        frame[...] = image.numpy()
        return frame


class _Stage:
    """One model's warp -> model -> paste on the device, all faces of a frame."""

    def __init__(self, session: Any, size: int, tile: int, input_name: str, warp: Any, paste: Any, mask: Any,
                 shared: dict[str, np.ndarray] | None = None) -> None:
        self.session, self.size, self.input_name = session, size, input_name
        self.warp, self.paste, self.mask, self.shared = warp, paste, mask, shared or {}
        self.per_face = (size // tile) ** 2
        self.batched = batch_allowed(session, tuple(self.shared))
        if self.per_face > 1 and not self.batched:
            raise ValueError(f"{getattr(session, 'name', 'the model')} has a fixed batch of 1: pixel boost on the "
                             "device path needs its tiles in one call (a dynamic batch axis)")

    def run(self, image: Any, shape: tuple[int, ...], faces: Sequence[Face], template: np.ndarray,
            other_feeds: Callable[[Any, int], dict[str, np.ndarray]]) -> Any:
        matrices = [align_matrix(face.kps, template, self.size) for face in faces]
        inverse = np.stack([cv2.invertAffineTransform(m) for m in matrices]).astype(np.float32)
        groups = [list(range(len(faces)))] if self.batched else [[i] for i in range(len(faces))]
        outputs = []
        for group in groups:  # one model call for all faces where the batch axis allows, else one per face
            tensor = self.warp({"frame": image, "inverse": inverse[group]})[0]
            feeds = {self.input_name: tensor, **other_feeds(np.array(group), self.per_face), **self.shared}
            out = self.session.run_on_device(feeds)[0]
            outputs += [(out, position * self.per_face) for position in range(len(group))]
        for matrix, (out, row) in zip(matrices, outputs):
            box = _footprint(matrix, self.size, shape)
            if box is None:
                continue
            image = self.paste({"frame": image, "output": out, "index": np.array([row], np.int64),
                                "mask": self.mask, "matrix": matrix.astype(np.float32), "box": box})[0]
        return image


def _footprint(matrix: np.ndarray, size: int, shape: tuple[int, ...]) -> np.ndarray | None:
    """x0, y0, x1, y1 of the frame pixels a size x size crop made with `matrix` covers (paste_back's box);
    None when it misses the frame."""
    inverse = cv2.invertAffineTransform(matrix)
    corners = np.array([[0, 0, 1], [size, 0, 1], [0, size, 1], [size, size, 1]], dtype=np.float32) @ inverse.T
    height, width = shape[:2]
    x0, y0 = np.floor(corners.min(0)).astype(int)
    x1, y1 = np.ceil(corners.max(0)).astype(int)
    x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)
    if x1 <= x0 or y1 <= y0:
        return None
    return np.array([x0, y0, x1, y1], np.int64)


def _input_type(session: Any, name: str) -> Any:
    types = {i.name: i.type for i in session.get_inputs()}
    return _DTYPES.get(types.get(name, "tensor(float)"), np.float32)


def _output_type(session: Any) -> Any:
    return _DTYPES.get(session.get_outputs()[0].type, np.float32)

"""The processor chain with its per-face work on the execution device: the frame goes to the device once, the
crops are warped there (device_graphs.warp_graph), the models read them and write their outputs there (IO
binding), each face is pasted back there (device_graphs.paste_graph), and only the finished frame comes
back. Only the faces' 5 keypoints, the 2x3 matrices and the source identity travel from the host.

It does what ProcessorChain does: the swap of every face is pasted, then the enhancer crops are taken from
the swapped frame, enhanced and pasted with `blend` x its box mask; for a face whose enhancer crop is no
larger than the face, the swap is folded into the enhancer's crop instead (device_graphs.fold_graph) and
the two pastes become one, as ProcessorChain folds them. The box mask only: the other masks need model masks resized and blurred per face, which still run on the
CPU path (`device_support` says why a configuration can't take this path).

The same code runs on the CPU provider, which is how its pictures are checked against ProcessorChain here.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import cv2
import numpy as np

from facefusion_batch.faces.geometry import align_matrix, box_mask, compose
from facefusion_batch.faces.types import Face
from facefusion_batch.models.binding import Device, upload
from facefusion_batch.processors.chain import footprint, magnifies
from facefusion_batch.processors.device_graphs import fold_graph, paste_graph, warp_graph
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
        self._swap = self._enhance = self._fold = self._fold_paste = None
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
            self._swap_box = box_mask(swapper.size, masks.blur, masks.padding)
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
            if swapper is not None:
                swap_spec, swap_session = swapper.spec, swapper._session
                self._fold = open_graph(f"fold-{swap_spec.name}-{swapper.size}-{spec.name}", fold_graph(
                    enhancer.size, swap_spec.size, (swapper.size // swap_spec.size) ** 2, swapper.size, spec.rgb,
                    spec.mean, spec.std, spec.nhwc, _input_type(session, "input"), unit_mean, unit_std,
                    _output_type(swap_session)))
                self._fold_paste = open_graph(f"fold-paste-{spec.name}", paste_graph(
                    enhancer.size, 1, True, "signed", dtype=_output_type(session), fold=True))

    def process(self, frame: np.ndarray, faces: Sequence[Face], source: np.ndarray | None = None,
                target_embeddings: np.ndarray | None = None,
                landmarks68: Sequence[np.ndarray] | None = None) -> np.ndarray:
        """As ProcessorChain.process: the faces of the BGR `frame` processed, in place, and the frame."""
        if not faces:
            return frame
        image = upload(frame, self.device)
        swapped: list[tuple[Any, int]] | None = None
        swap_matrices: list[np.ndarray] = []
        enhance_matrices = ([align_matrix(face.kps, self.enhancer.template, self.enhancer.size) for face in faces]
                            if self.enhancer is not None else [])
        folds: list[tuple[int, int, int, int] | None] = [None] * len(faces)
        if self._swap is not None:
            assert self.swapper is not None
            if source is None:
                raise ValueError("face_swapper needs the source identity (Swapper.source_input)")
            rows = self.swapper.balance(source, target_embeddings, len(faces))
            swap_matrices = [align_matrix(face.kps, self.swapper.template, self.swapper.size) for face in faces]
            swapped = self._swap.infer(image, swap_matrices, lambda group, per_face: {
                "source": np.repeat(rows[group], per_face, axis=0)})
            for index, matrix in enumerate(swap_matrices):
                if self.enhancer is not None and not magnifies(enhance_matrices[index]):
                    # ProcessorChain's fold: the swap goes into the enhancer's crop, not the frame
                    to_enhancer = compose(enhance_matrices[index], cv2.invertAffineTransform(matrix))
                    folds[index] = footprint(self._swap_box, to_enhancer, self.enhancer.size)
                if folds[index] is None:
                    out, row = swapped[index]
                    image = self._swap.paste_face(image, frame.shape, out, row, matrix)
        if self._enhance is not None:
            image = self._enhance_faces(image, frame.shape, enhance_matrices, swapped, swap_matrices, folds)
        frame[...] = image.numpy()
        return frame

    def _enhance_faces(self, image: Any, shape: tuple[int, ...], matrices: list[np.ndarray],
                       swapped: list[tuple[Any, int]] | None, swap_matrices: list[np.ndarray],
                       folds: list[tuple[int, int, int, int] | None]) -> Any:
        stage = self._enhance
        assert stage is not None
        if swapped is None or all(box is None for box in folds):
            outputs = stage.infer(image, matrices, lambda group, per_face: {})
            for matrix, (out, row) in zip(matrices, outputs):
                image = stage.paste_face(image, shape, out, row, matrix)
            return image
        assert self._swap is not None and self._fold is not None and self._fold_paste is not None
        per_face = self._swap.per_face
        # the swap outputs a group reads must be one batch: the faces of one swapper call
        groups = ([list(range(len(matrices)))] if stage.batched and self._swap.batched
                  else [[i] for i in range(len(matrices))])
        pastes = []  # every enhancer crop is taken before any is pasted, as ProcessorChain does
        for group in groups:
            batch = swapped[group[0]][0]
            rows = np.concatenate([np.arange(per_face) + swapped[i][1] for i in group]).astype(np.int64)
            to_swap = np.stack([compose(swap_matrices[i], cv2.invertAffineTransform(matrices[i]))
                                for i in group]).astype(np.float32)
            boxes = np.array([folds[i] or (0, 0, 0, 0) for i in group], np.int64)
            inverse = np.stack([cv2.invertAffineTransform(matrices[i]) for i in group]).astype(np.float32)
            tensor, colour, weight = self._fold({"frame": image, "inverse": inverse, "swap": batch, "rows": rows,
                                                 "swap_mask": self._swap.mask, "to_swap": to_swap, "box": boxes})
            out = stage.session.run_on_device({stage.input_name: tensor, **stage.shared})[0]
            pastes += [(index, position, out, colour, weight) for position, index in enumerate(group)]
        for index, position, out, colour, weight in pastes:
            box = _frame_box(matrices[index], stage.size, shape)
            if box is None:
                continue
            image = self._fold_paste({
                "frame": image, "output": out, "index": np.array([position], np.int64), "mask": stage.mask,
                "matrix": matrices[index].astype(np.float32), "box": box, "colour": colour, "weight": weight,
                "face": np.array([position], np.int64)})[0]
        return image


class _Stage:
    """One model's warp -> model -> paste on the device."""

    def __init__(self, session: Any, size: int, tile: int, input_name: str, warp: Any, paste: Any, mask: Any,
                 shared: dict[str, np.ndarray] | None = None) -> None:
        self.session, self.size, self.input_name = session, size, input_name
        self.warp, self.paste, self.mask, self.shared = warp, paste, mask, shared or {}
        self.per_face = (size // tile) ** 2
        self.batched = batch_allowed(session, tuple(self.shared))
        if self.per_face > 1 and not self.batched:
            raise ValueError(f"{getattr(session, 'name', 'the model')} has a fixed batch of 1: pixel boost on the "
                             "device path needs its tiles in one call (a dynamic batch axis)")

    def infer(self, image: Any, matrices: list[np.ndarray],
              other_feeds: Callable[[Any, int], dict[str, np.ndarray]]) -> list[tuple[Any, int]]:
        """Each face's model output batch (an OrtValue on the device) and its first row there: one call for
        all faces where the batch axis allows, else one per face."""
        inverse = np.stack([cv2.invertAffineTransform(m) for m in matrices]).astype(np.float32)
        groups = [list(range(len(matrices)))] if self.batched else [[i] for i in range(len(matrices))]
        outputs = []
        for group in groups:
            tensor = self.warp({"frame": image, "inverse": inverse[group]})[0]
            feeds = {self.input_name: tensor, **other_feeds(np.array(group), self.per_face), **self.shared}
            out = self.session.run_on_device(feeds)[0]
            outputs += [(out, position * self.per_face) for position in range(len(group))]
        return outputs

    def paste_face(self, image: Any, shape: tuple[int, ...], out: Any, row: int, matrix: np.ndarray) -> Any:
        box = _frame_box(matrix, self.size, shape)
        if box is None:
            return image
        return self.paste({"frame": image, "output": out, "index": np.array([row], np.int64), "mask": self.mask,
                           "matrix": matrix.astype(np.float32), "box": box})[0]


def _frame_box(matrix: np.ndarray, size: int, shape: tuple[int, ...]) -> np.ndarray | None:
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

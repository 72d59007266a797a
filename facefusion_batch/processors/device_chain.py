"""The processor chain with its per-face work on the execution device: the frame goes to the device once, the
crops are warped there (device_graphs.warp_graph), the models read them and write their outputs there (IO
binding), the masks are made there, each face is pasted back there (device_graphs.paste_graph), and only
the finished frame comes back. Only the faces' 5 keypoints, the 2x3 matrices and the source identity travel
from the host.

It does what ProcessorChain does: the swap of every face is pasted, then the enhancer crops are taken from
the swapped frame, enhanced and pasted with `blend` x its mask; for a face whose enhancer crop is no larger
than the face, the swap is folded into the enhancer's crop instead (device_graphs.fold_graph) and the two
pastes become one, as ProcessorChain folds them. Masks: box, occlusion (XSeg, one model or `many`) and
region (BiSeNet); the area mask (a landmark hull) stays on the CPU path (`device_support`).

The same code runs on the CPU provider, which is how its pictures are checked against ProcessorChain here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import cv2
import numpy as np

from facefusion_batch.faces.geometry import align_matrix, box_mask, compose
from facefusion_batch.faces.types import Face
from facefusion_batch.models.binding import Device, upload
from facefusion_batch.processors.chain import footprint, magnifies
from facefusion_batch.processors.enhancer import Enhancer
from facefusion_batch.processors.masks import REGION_CLASSES, MaskOptions, Occluder, Parser
from facefusion_batch.processors.swapper import Swapper, output_range
from facefusion_batch.processors.tensors import batch_allowed

# (name, graph bytes) -> a runner of that graph on the models' device: feeds -> list of OrtValues there
GraphOpener = Callable[[str, bytes], Callable[[dict[str, Any]], list[Any]]]
DEVICE_MASKS = ("box", "occlusion", "region")
_DTYPES = {"tensor(float16)": np.float16}


def device_support(masks: MaskOptions) -> str | None:
    """None when the device path can run these masks; else why not, in words for a settings error."""
    others = [t for t in masks.types if t not in DEVICE_MASKS]
    if others:
        return (f"face_work = device does the box, occlusion and region masks, not the area mask (face_mask_types "
                f"has {' '.join(others)}); use face_work = auto or cpu")
    return None


@dataclass
class _Faces:
    """One stage's results for the faces of a frame: per face, the model output batch (an OrtValue on the
    device) and its first row there, the mask batch and the face's mask in it; and the crops' grey levels
    per group (for the occluder of a later stage)."""

    outputs: list[tuple[Any, int]]
    masks: list[tuple[Any, int]]


class _Masks:
    """A stage's paste masks: its box mask (x `scale`) alone, or the minimum of the box, occlusion and region
    masks x `scale`, made on the device: occlusion from the stage's crops (occluder input graph -> each
    occluder model -> smoothing graph), region from the swapper's output (region input graph -> the parser
    -> region graph)."""

    def __init__(self, box: np.ndarray, scale: float, device: Device, occluder: Occluder | None,
                 open_graph: GraphOpener, name: str, parser: Parser | None = None, regions: Sequence[str] = (),
                 swap: tuple[int, int, tuple, tuple, Any] | None = None) -> None:
        from facefusion_batch.processors import device_graphs as graphs  # here: onnx takes seconds to import
        size = box.shape[0]
        self.box = upload((box * np.float32(scale))[None].astype(np.float32), device)
        self._box, self._scale = upload(box.astype(np.float32), device), np.array([scale], np.float32)
        self._models: list[tuple[Any, Any]] = []
        self._parser = None
        if occluder is not None:
            for session, spec in occluder.models:
                _check_batch(session, spec.name)
                graph = open_graph(f"occluder-input-{spec.name}-{size}", graphs.occluder_input_graph(
                    size, spec.size, spec.rgb, spec.mean, spec.std, spec.nhwc, _input_type(session, "input")))
                self._models.append((session, graph))
            first = occluder.models[0]
            self._smooth = open_graph(f"occlusion-{name}-{len(self._models)}", graphs.occlusion_mask_graph(
                len(self._models), first[1].size, size, _output_type(first[0])))
        if parser is not None and swap is not None:
            session, spec = parser.session, parser.spec
            _check_batch(session, spec.name)
            tile, tiles, unit_mean, unit_std, swap_dtype = swap
            classes = session.get_outputs()[0].shape[1]
            wanted = [REGION_CLASSES[r] for r in regions]  # type: ignore[index]
            self._parser = session
            self._region_input = open_graph(f"region-input-{spec.name}-{size}", graphs.region_input_graph(
                tile, tiles, unit_mean, unit_std, spec.size, spec.rgb, spec.mean, spec.std, swap_dtype,
                _input_type(session, "input")))
            self._region = open_graph(f"region-{spec.name}-{size}-{'-'.join(map(str, wanted))}",
                                      graphs.region_mask_graph(classes if isinstance(classes, int) else 19, wanted,
                                                               spec.size, size, _output_type(session)))

    @property
    def needs_levels(self) -> bool:
        return bool(self._models)

    def make(self, levels: Any, count: int, output: Any = None) -> list[tuple[Any, int]]:
        """Each face's mask: (a mask batch on the device, the face's row in it). `levels`: the crops' grey
        levels (for the occluder); `output`: the swapper's output batch (for the parser)."""
        if not self._models and self._parser is None:
            return [(self.box, 0)] * count
        masks = self.box
        if self._models:
            raws = {}
            for index, (session, graph) in enumerate(self._models):
                tensor = graph({"levels": levels})[0]
                raws[f"raw{index}"] = session.run_on_device({"input": tensor})[0]
            masks = self._smooth({**raws, "box": self._box, "scale": self._scale})[0]
        if self._parser is not None:
            tensor = self._region_input({"output": output})[0]
            scores = self._parser.run_on_device({"input": tensor})[0]
            masks = self._region({"scores": scores, "base": masks})[0]
        return [(masks, position) for position in range(count)]


def _check_batch(session: Any, name: str) -> None:
    if not batch_allowed(session):
        raise ValueError(f"{name} has a fixed batch of 1: the device path gives it a frame's faces in one call "
                         "(a dynamic batch axis)")


class DeviceChain:
    """`swapper`/`enhancer`/`occluder` hold sessions with `run_on_device(feeds)` and `device()`
    (models.sessions.GuardedSession); `open_graph(name, bytes)` returns a runner of one helper graph on that
    same device (SessionPool.graph)."""

    def __init__(self, swapper: Swapper | None, enhancer: Enhancer | None, masks: MaskOptions,
                 open_graph: GraphOpener, occluder: Occluder | None = None, parser: Parser | None = None) -> None:
        if swapper is None and enhancer is None:
            raise ValueError("the processor chain needs face_swapper or face_enhancer")
        reason = device_support(masks)
        if reason:
            raise ValueError(reason)
        if "occlusion" in masks.types and occluder is None:
            raise ValueError("the occlusion mask needs a face occluder model (xseg_1, xseg_2 or xseg_3)")
        if "region" in masks.types and parser is None and swapper is not None:
            raise ValueError("the region mask needs a face parser model (bisenet_resnet_18 or bisenet_resnet_34)")
        from facefusion_batch.processors import device_graphs as graphs  # as in _Masks
        self.swapper, self.enhancer, self.masks = swapper, enhancer, masks
        occluding = occluder if "occlusion" in masks.types else None
        first = swapper or enhancer
        assert first is not None
        self.device: Device = first.session.device()
        self._swap = self._enhance = self._fold = self._fold_paste = None
        if swapper is not None:
            spec, session = swapper.spec, swapper.session
            self._swap_box = box_mask(swapper.size, masks.blur, masks.padding)
            self._unit = output_range(spec)
            swap_masks = _Masks(self._swap_box, 1.0, self.device, occluding, open_graph, f"swap-{swapper.size}",
                                parser if "region" in masks.types else None, masks.regions,
                                (spec.size, (swapper.size // spec.size) ** 2, *self._unit, _output_type(session)))
            self._swap = _Stage(
                session, swapper.size, spec.size, "target",
                open_graph(f"warp-{spec.name}-{swapper.size}-{swap_masks.needs_levels}", graphs.warp_graph(
                    swapper.size, spec.size, spec.rgb, spec.mean, spec.std, spec.nhwc,
                    _input_type(session, "target"), levels=swap_masks.needs_levels)),
                open_graph(f"paste-{spec.name}-{swapper.size}", graphs.paste_graph(
                    spec.size, (swapper.size // spec.size) ** 2, True, "unit", *self._unit, _output_type(session))),
                swap_masks)
        if enhancer is not None:
            spec, session = enhancer.spec, enhancer.session
            # FaceFusion's enhancer uses the box blur without padding; `blend` scales the whole mask
            enhance_masks = _Masks(box_mask(enhancer.size, masks.blur, (0, 0, 0, 0)), enhancer.options.blend / 100.0,
                                   self.device, occluding, open_graph, f"enhance-{enhancer.size}")
            self._enhance = _Stage(
                session, enhancer.size, enhancer.size, "input",
                open_graph(f"warp-{spec.name}-{enhance_masks.needs_levels}", graphs.warp_graph(
                    enhancer.size, enhancer.size, spec.rgb, spec.mean, spec.std, spec.nhwc,
                    _input_type(session, "input"), levels=enhance_masks.needs_levels)),
                open_graph(f"paste-{spec.name}", graphs.paste_graph(enhancer.size, 1, True, "signed",
                                                             dtype=_output_type(session))),
                enhance_masks, shared=enhancer.shared_feeds)
            if swapper is not None:
                swap_spec, swap_session = swapper.spec, swapper.session
                self._fold = open_graph(f"fold-{swap_spec.name}-{swapper.size}-{spec.name}", graphs.fold_graph(
                    enhancer.size, swap_spec.size, (swapper.size // swap_spec.size) ** 2, swapper.size, spec.rgb,
                    spec.mean, spec.std, spec.nhwc, _input_type(session, "input"), *self._unit,
                    _output_type(swap_session)))
                self._fold_paste = open_graph(f"fold-paste-{spec.name}", graphs.paste_graph(
                    enhancer.size, 1, True, "signed", dtype=_output_type(session), fold=True))

    def process(self, frame: np.ndarray, faces: Sequence[Face], source: np.ndarray | None = None,
                target_embeddings: np.ndarray | None = None,
                landmarks68: Sequence[np.ndarray] | None = None) -> np.ndarray:
        """As ProcessorChain.process: the faces of the BGR `frame` processed, in place, and the frame."""
        if not faces:
            return frame
        image = upload(frame, self.device)
        swapped: _Faces | None = None
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
                    # ProcessorChain's fold: the swap goes into the enhancer's crop, not the frame. Where its
                    # mask shows is taken from the box mask (the occlusion mask only takes some of that away)
                    to_enhancer = compose(enhance_matrices[index], cv2.invertAffineTransform(matrix))
                    folds[index] = footprint(self._swap_box, to_enhancer, self.enhancer.size)
                if folds[index] is None:
                    image = self._swap.paste_face(image, frame.shape, swapped, index, matrix)
        if self._enhance is not None:
            image = self._enhance_faces(image, frame.shape, enhance_matrices, swapped, swap_matrices, folds)
        frame[...] = image.numpy()
        return frame

    def _enhance_faces(self, image: Any, shape: tuple[int, ...], matrices: list[np.ndarray],
                       swapped: _Faces | None, swap_matrices: list[np.ndarray],
                       folds: list[tuple[int, int, int, int] | None]) -> Any:
        stage = self._enhance
        assert stage is not None
        if swapped is None or all(box is None for box in folds):
            enhanced = stage.infer(image, matrices, lambda group, per_face: {})
            for index, matrix in enumerate(matrices):
                image = stage.paste_face(image, shape, enhanced, index, matrix)
            return image
        assert self._swap is not None and self._fold is not None and self._fold_paste is not None
        per_face = self._swap.per_face
        # a group's swap outputs and masks must each be one batch: the faces of one swapper call
        groups = ([list(range(len(matrices)))] if stage.batched and self._swap.batched
                  else [[i] for i in range(len(matrices))])
        pastes = []  # every enhancer crop is taken before any is pasted, as ProcessorChain does
        for group in groups:
            rows = np.concatenate([np.arange(per_face) + swapped.outputs[i][1] for i in group]).astype(np.int64)
            to_swap = np.stack([compose(swap_matrices[i], cv2.invertAffineTransform(matrices[i]))
                                for i in group]).astype(np.float32)
            boxes = np.array([folds[i] or (0, 0, 0, 0) for i in group], np.int64)
            inverse = np.stack([cv2.invertAffineTransform(matrices[i]) for i in group]).astype(np.float32)
            tensor, colour, weight, levels, inside = self._fold({
                "frame": image, "inverse": inverse, "swap": swapped.outputs[group[0]][0], "rows": rows,
                "swap_mask": swapped.masks[group[0]][0],
                "mask_rows": np.array([swapped.masks[i][1] for i in group], np.int64),
                "to_swap": to_swap, "box": boxes})
            out = stage.session.run_on_device({stage.input_name: tensor, **stage.shared})[0]
            masks = stage.masks.make(levels, len(group))
            pastes += [(index, position, out, colour, weight, inside, masks[position])
                       for position, index in enumerate(group)]
        for index, position, out, colour, weight, inside, (mask, mask_row) in pastes:
            box = _frame_box(matrices[index], stage.size, shape)
            if box is None:
                continue
            image = self._fold_paste({
                "frame": image, "output": out, "index": np.array([position], np.int64), "mask": mask,
                "mask_index": np.array([mask_row], np.int64), "matrix": matrices[index].astype(np.float32),
                "box": box, "colour": colour, "weight": weight, "inside": inside,
                "face": np.array([position], np.int64)})[0]
        return image


class _Stage:
    """One model's warp -> (masks) -> model -> paste on the device."""

    def __init__(self, session: Any, size: int, tile: int, input_name: str, warp: Any, paste: Any,
                 masks: _Masks, shared: dict[str, np.ndarray] | None = None) -> None:
        self.session, self.size, self.input_name = session, size, input_name
        self.warp, self.paste, self.masks, self.shared = warp, paste, masks, shared or {}
        self.per_face = (size // tile) ** 2
        self.batched = batch_allowed(session, tuple(self.shared))
        if self.per_face > 1 and not self.batched:
            raise ValueError(f"{getattr(session, 'name', 'the model')} has a fixed batch of 1: pixel boost on the "
                             "device path needs its tiles in one call (a dynamic batch axis)")

    def infer(self, image: Any, matrices: list[np.ndarray],
              other_feeds: Callable[[Any, int], dict[str, np.ndarray]]) -> _Faces:
        """Every face's model output and mask: one call for all faces where the batch axis allows, else one
        per face."""
        inverse = np.stack([cv2.invertAffineTransform(m) for m in matrices]).astype(np.float32)
        groups = [list(range(len(matrices)))] if self.batched else [[i] for i in range(len(matrices))]
        result = _Faces([], [])
        for group in groups:
            warped = self.warp({"frame": image, "inverse": inverse[group]})
            feeds = {self.input_name: warped[0], **other_feeds(np.array(group), self.per_face), **self.shared}
            out = self.session.run_on_device(feeds)[0]
            result.outputs += [(out, position * self.per_face) for position in range(len(group))]
            result.masks += self.masks.make(warped[1] if len(warped) > 1 else None, len(group), out)
        return result

    def paste_face(self, image: Any, shape: tuple[int, ...], faces: _Faces, index: int, matrix: np.ndarray) -> Any:
        box = _frame_box(matrix, self.size, shape)
        if box is None:
            return image
        (out, row), (mask, mask_row) = faces.outputs[index], faces.masks[index]
        return self.paste({"frame": image, "output": out, "index": np.array([row], np.int64), "mask": mask,
                           "mask_index": np.array([mask_row], np.int64), "matrix": matrix.astype(np.float32),
                           "box": box})[0]


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

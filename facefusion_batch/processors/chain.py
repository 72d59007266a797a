"""The processor chain of one frame in crop space: warp each face once per model template, swap (with pixel
boost), enhance, mask, and paste each face back once with the combined mask.

FaceFusion pastes the whole frame once per processor (swap, then warp the pasted frame again for the enhancer
and paste again). Here the swapped crop is carried into the enhancer's crop by composing the two alignment
matrices, and the two pastes are folded into one: with swap mask s, enhancer mask e and blend b, the frame
gets 1 - (1 - s)(1 - b e) of a colour that is the swapped face under s and the enhanced face under b e, which
is what two pastes in a row give. That fold costs a few passes over the swap mask's footprint in the
enhancer's crop, so it is used only where the enhancer's crop is no larger than the face in the frame (big
faces, 1080p and up). Where the crop enlarges the face (small faces: a 512 crop of a 200-pixel face) the
swap is pasted at frame size first, as FaceFusion does, which touches several times fewer pixels; so is
a face whose swap mask reaches outside the enhancer's crop (templates of very different reach).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

from facefusion_batch.faces.geometry import (align_matrix, box_mask, compose, paste_back, transform_points, warp_crop,
                                             weighted_mean)
from facefusion_batch.faces.types import Face
from facefusion_batch.processors.enhancer import Enhancer
from facefusion_batch.processors.masks import MaskOptions, Occluder, Parser, area_mask, combine
from facefusion_batch.processors.swapper import Swapper


@dataclass
class SwappedFace:
    """A swapped crop (float32 BGR 0..255), its combined mask and the frame -> crop matrix."""

    crop: np.ndarray
    mask: np.ndarray
    matrix: np.ndarray


class ProcessorChain:
    """FaceFusion's `face_swapper` and/or `face_enhancer` on the faces of a frame, masks as `masks` says.
    `occluder` is needed for the occlusion mask, `parser` for the region mask."""

    def __init__(self, swapper: Swapper | None, enhancer: Enhancer | None, masks: MaskOptions,
                 occluder: Occluder | None = None, parser: Parser | None = None) -> None:
        if swapper is None and enhancer is None:
            raise ValueError("the processor chain needs face_swapper or face_enhancer")
        if "occlusion" in masks.types and occluder is None:
            raise ValueError("the occlusion mask needs a face occluder model (xseg_1, xseg_2 or xseg_3)")
        if "region" in masks.types and parser is None and swapper is not None:
            raise ValueError("the region mask needs a face parser model (bisenet_resnet_18 or bisenet_resnet_34)")
        self.swapper, self.enhancer, self.masks = swapper, enhancer, masks
        self.occluder, self.parser = occluder, parser
        self._swap_box = box_mask(swapper.size, masks.blur, masks.padding) if swapper else None
        # FaceFusion's enhancer uses the box blur without padding.
        self._enhance_box = box_mask(enhancer.size, masks.blur, (0, 0, 0, 0)) if enhancer else None

    def process(self, frame: np.ndarray, faces: Sequence[Face], source: np.ndarray | None = None,
                target_embeddings: np.ndarray | None = None,
                landmarks68: Sequence[np.ndarray] | None = None) -> np.ndarray:
        """Process `faces` of the BGR `frame` in place and return it. `source` is `Swapper.source_input(...)`;
        `target_embeddings` (raw ArcFace, one row per face) are needed when the swapper weight isn't 0.5;
        `landmarks68` (frame pixels, one (68, 2) array per face) when the area mask is on."""
        if not faces:
            return frame
        swapped = None
        if self.swapper is not None:
            if source is None:
                raise ValueError("face_swapper needs the source identity (Swapper.source_input)")
            swapped = self.swap(frame, faces, source, target_embeddings, landmarks68)
        if self.enhancer is None:
            for face in swapped or []:
                paste_back(frame, face.crop, face.mask, face.matrix)
            return frame
        return self._enhance(frame, faces, swapped)

    def swap(self, frame: np.ndarray, faces: Sequence[Face], source: np.ndarray,
             target_embeddings: np.ndarray | None = None,
             landmarks68: Sequence[np.ndarray] | None = None) -> list[SwappedFace]:
        """Swapped crops and their combined masks, one per face, nothing pasted yet."""
        swapper, types = self.swapper, self.masks.types
        assert swapper is not None
        size = swapper.size
        matrices = [align_matrix(face.kps, swapper.template, size) for face in faces]
        crops = [warp_crop(frame, matrix, size) for matrix in matrices]
        masks: list[list[np.ndarray]] = [[] for _ in faces]
        if "box" in types:
            for face_masks in masks:
                face_masks.append(self._swap_box)
        if "occlusion" in types:
            for face_masks, mask in zip(masks, self.occluder.masks(crops)):
                face_masks.append(mask)
        results = swapper.swap(crops, source, target_embeddings)
        if "area" in types:
            if landmarks68 is None or len(landmarks68) != len(faces):
                raise ValueError("the area mask needs 68 landmarks for every face")
            for face_masks, points, matrix in zip(masks, landmarks68, matrices):
                face_masks.append(area_mask(size, transform_points(points, matrix), self.masks.areas))
        if "region" in types:
            swapped_u8 = [np.clip(np.rint(r), 0, 255).astype(np.uint8) for r in results]
            for face_masks, mask in zip(masks, self.parser.masks(swapped_u8, self.masks.regions)):
                face_masks.append(mask)
        return [SwappedFace(crop, combine(face_masks), matrix)
                for crop, face_masks, matrix in zip(results, masks, matrices)]

    def _enhance(self, frame: np.ndarray, faces: Sequence[Face], swapped: list[SwappedFace] | None) -> np.ndarray:
        enhancer = self.enhancer
        assert enhancer is not None
        size = enhancer.size
        matrices = [align_matrix(face.kps, enhancer.template, size) for face in faces]
        inputs, swap_colours, swap_masks, boxes = [], [], [], []
        for index, matrix in enumerate(matrices):
            colour = mask = box = None
            if swapped is not None:
                face = swapped[index]
                to_enhancer = compose(matrix, cv2.invertAffineTransform(face.matrix))
                box = None if magnifies(matrix) else footprint(face.mask, to_enhancer, size)
                if box is None:
                    paste_back(frame, face.crop, face.mask, face.matrix)
                elif box[2] > box[0] and box[3] > box[1]:
                    # only the box the swap mask reaches: outside it the enhancer sees the frame as it is
                    x0, y0, x1, y1 = box
                    local = to_enhancer.copy()
                    local[:, 2] -= (x0, y0)
                    colour = cv2.warpAffine(face.crop, local, (x1 - x0, y1 - y0), flags=cv2.INTER_LINEAR,
                                            borderMode=cv2.BORDER_REPLICATE)
                    mask = cv2.warpAffine(face.mask, local, (x1 - x0, y1 - y0), flags=cv2.INTER_LINEAR,
                                          borderValue=0.0)
            swap_colours.append(colour)
            swap_masks.append(mask)
            boxes.append(box)
        # every face pasted at frame size is in before any enhancer crop is taken (faces that overlap see
        # each other's swap, as after FaceFusion's swapper pass)
        for matrix, colour, mask, box in zip(matrices, swap_colours, swap_masks, boxes):
            base = warp_crop(frame, matrix, size)
            if colour is not None:
                x0, y0, x1, y1 = box
                # the swapped face over the frame under its mask, rounded to uint8 (values are never negative)
                base[y0:y1, x0:x1] = cv2.convertScaleAbs(
                    weighted_mean(colour, base[y0:y1, x0:x1].astype(np.float32), mask, 1 - mask))
            inputs.append(base)
        enhanced = enhancer.enhance(inputs)
        occlusion = self.occluder.masks(inputs) if "occlusion" in self.masks.types else [None] * len(faces)
        blend = np.float32(enhancer.options.blend / 100.0)
        for matrix, out, colour, s, box, occ in zip(matrices, enhanced, swap_colours, swap_masks, boxes, occlusion):
            e = self._enhance_box if occ is None else np.minimum(self._enhance_box, occ)
            be = blend * e
            if colour is not None:
                # inside the swap mask's box: weighted_mean divides by be + s (1 - be), which is the alpha
                # there; outside it s is 0, so the colour is the enhanced face and the alpha is be
                x0, y0, x1, y1 = box
                inner = be[y0:y1, x0:x1]
                out[y0:y1, x0:x1] = weighted_mean(out[y0:y1, x0:x1], colour, inner, s * (1 - inner))
                be[y0:y1, x0:x1] = 1 - (1 - s) * (1 - inner)
            paste_back(frame, out, be, matrix)
        return frame


def magnifies(matrix: np.ndarray) -> bool:
    """True when the frame -> crop `matrix` enlarges the frame: the face then covers fewer frame pixels than
    crop pixels, and pasting at frame size beats folding at crop size."""
    return abs(float(np.linalg.det(np.asarray(matrix, dtype=np.float64)[:, :2]))) > 1.0


def footprint(mask: np.ndarray, matrix: np.ndarray, size: int) -> tuple[int, int, int, int] | None:
    """The box (x0, y0, x1, y1) of a size x size crop covering every pixel `mask` pastes visibly (more than
    half a grey level's weight) under `matrix`, with a pixel to spare for interpolation; empty when nothing
    is visible; None when some of it lands outside the crop."""
    visible = mask > 0.5 / 255
    rows, cols = np.any(visible, axis=1), np.any(visible, axis=0)
    if not rows.any():
        return (0, 0, 0, 0)
    y0, y1 = np.flatnonzero(rows)[[0, -1]]
    x0, x1 = np.flatnonzero(cols)[[0, -1]]
    corners = np.array([[x0, y0], [x1 + 1, y0], [x0, y1 + 1], [x1 + 1, y1 + 1]], dtype=np.float64)
    mapped = transform_points(corners, matrix)
    if not ((mapped >= 0).all() and (mapped <= size).all()):
        return None
    low = np.maximum(np.floor(mapped.min(0)).astype(int) - 1, 0)
    high = np.minimum(np.ceil(mapped.max(0)).astype(int) + 1, size)
    return int(low[0]), int(low[1]), int(high[0]), int(high[1])

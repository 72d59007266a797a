"""The opt-in visible label ("AI-generated") drawn into a corner of every output frame/image.

The label is rendered once per frame size into an alpha mask and a premultiplied colour patch; drawing it
blends only that small rectangle, so it costs microseconds per frame."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

MARGIN = 0.02  # distance from the frame's edges, as a fraction of its height
BACKDROP = 0.55  # opacity of the dark box behind the text, relative to the label's opacity


@dataclass(frozen=True)
class Patch:
    """A rendered label for one frame size: where it goes, its alpha (h, w, 1) and premultiplied BGR colour
    (h, w, 3), both float32."""

    x: int
    y: int
    alpha: np.ndarray
    colour: np.ndarray


@dataclass
class VisibleLabel:
    text: str
    position: str = "bottom-right"  # bottom-right | bottom-left | top-right | top-left
    size: float = 0.03  # text height as a fraction of the frame height
    opacity: float = 0.8
    _patches: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def draw(self, frame: np.ndarray) -> np.ndarray:
        """The frame with the label blended in (in place when the frame is writable)."""
        height, width = frame.shape[:2]
        patch = self._patches.get((width, height))
        if patch is None:
            with self._lock:
                patch = self._patches.get((width, height)) or render(self.text, width, height, self.position,
                                                                     self.size, self.opacity)
                self._patches[(width, height)] = patch
        if not frame.flags.writeable:
            frame = frame.copy()
        h, w = patch.alpha.shape[:2]
        region = frame[patch.y:patch.y + h, patch.x:patch.x + w]
        blended = region * (1.0 - patch.alpha) + patch.colour
        if frame.ndim == 2:
            region[:] = np.clip(blended.mean(axis=2) + 0.5, 0, 255).astype(frame.dtype)
        else:
            channels = frame.shape[2]
            region[..., :3] = np.clip(blended[..., :3] + 0.5, 0, 255).astype(frame.dtype)
            if channels == 4:  # an image with alpha: the label stays visible where the image is transparent
                region[..., 3] = np.maximum(region[..., 3], (patch.alpha[..., 0] * 255).astype(frame.dtype))
        return frame


def render(text: str, width: int, height: int, position: str, size: float, opacity: float) -> Patch:
    """Render `text` for a `width` x `height` frame: white anti-aliased text on a translucent dark box."""
    text_px = max(8, round(height * size))
    coverage = _text_mask(text, text_px)  # float32 0..1, tight around the glyphs
    pad = max(2, round(text_px * 0.35))
    box_h, box_w = coverage.shape[0] + 2 * pad, coverage.shape[1] + 2 * pad
    text_alpha = np.zeros((box_h, box_w), np.float32)
    text_alpha[pad:pad + coverage.shape[0], pad:pad + coverage.shape[1]] = coverage
    text_alpha *= opacity
    box_alpha = BACKDROP * opacity
    alpha = 1.0 - (1.0 - box_alpha) * (1.0 - text_alpha)
    colour = np.repeat((255.0 * text_alpha)[..., None], 3, axis=2)  # white text over black: premultiplied
    margin = round(height * MARGIN)
    box_w, box_h = min(box_w, width), min(box_h, height)  # a tiny frame shows what fits
    alpha, colour = alpha[:box_h, :box_w, None], colour[:box_h, :box_w]
    x = margin if position.endswith("left") else width - box_w - margin
    y = margin if position.startswith("top") else height - box_h - margin
    return Patch(max(0, x), max(0, y), alpha.astype(np.float32), colour.astype(np.float32))


def _text_mask(text: str, text_px: int) -> np.ndarray:
    """Anti-aliased coverage of the text, cropped to its ink: FreeType via Pillow (any script its default
    font covers), else OpenCV's Hershey font (ASCII)."""
    from PIL import Image, ImageDraw, ImageFont

    try:
        font = ImageFont.load_default(size=text_px)
    except (TypeError, AttributeError, OSError, ImportError):  # Pillow < 10.1 or no FreeType
        return _hershey_mask(text, text_px)
    left, top, right, bottom = font.getbbox(text)
    canvas = Image.new("L", (max(1, right - left), max(1, bottom - top)), 0)
    ImageDraw.Draw(canvas).text((-left, -top), text, fill=255, font=font)
    return np.asarray(canvas, np.float32) / 255.0


def _hershey_mask(text: str, text_px: int) -> np.ndarray:
    import cv2

    scale = text_px / 22.0
    thickness = max(1, round(text_px / 12))
    (w, h), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, thickness)
    canvas = np.zeros((h + base + 2, w + 2), np.uint8)
    cv2.putText(canvas, text, (1, h + 1), cv2.FONT_HERSHEY_SIMPLEX, scale, 255, thickness, cv2.LINE_AA)
    return canvas.astype(np.float32) / 255.0

"""Image reading and writing (atomic, with AI marking in EXIF) and target kinds by extension."""
from __future__ import annotations

import hashlib
import io
import os
import warnings
from pathlib import Path
from typing import Callable, Mapping

import cv2
import numpy as np

from facefusion_batch.errors import MediaError, SourceError

VIDEO_EXTENSIONS = (".mp4", ".mov", ".mkv", ".webm", ".avi", ".m4v")
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp")
MAX_IMAGE_PIXELS = 64_000_000  # beyond this an image is refused rather than risking memory


def kind_of(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix in VIDEO_EXTENSIONS:
        return "video"
    if suffix in IMAGE_EXTENSIONS:
        return "image"
    return None


def read_image(path: Path, error: type[Exception] = SourceError) -> np.ndarray:
    """BGR uint8 image (EXIF orientation applied); `error` with a clear reason when it can't be read."""
    try:
        data = np.fromfile(str(path), dtype=np.uint8)
    except OSError as exc:
        raise error(f"{path}: can't read file ({exc.strerror})") from None
    if data.size == 0:
        raise error(f"{path}: file is empty")
    width, height = _header_size(data)
    if width * height > MAX_IMAGE_PIXELS:
        raise error(f"{path}: image is {width}x{height}, over {MAX_IMAGE_PIXELS // 1_000_000} megapixels; "
                    "downscale it first")
    image = cv2.imdecode(data, cv2.IMREAD_COLOR)
    if image is None:
        raise error(f"{path}: not a readable image (corrupt, or not a JPEG/PNG/WebP)")
    return image


def _header_size(data: np.ndarray) -> tuple[int, int]:
    """Image size from the header alone (no pixel decoding); (0, 0) when the header isn't recognised."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # we judge the size ourselves
            with Image.open(io.BytesIO(data.tobytes())) as image:
                return image.size
    except Image.DecompressionBombError:
        return 1 << 16, 1 << 16  # Pillow's own limit tripped: certainly too large
    except (UnidentifiedImageError, OSError, ValueError):
        return 0, 0


def write_image(image: np.ndarray, path: Path, quality: int, tags: Mapping[str, str] | None,
                place: Callable[[Path, Path], object] | None = None) -> None:
    """Write atomically (temp name in the same directory, then rename), marking EXIF when `tags` given.
    `place(temp, path)` does the rename when given (and may sign the file first)."""
    from PIL import Image

    rgb = Image.fromarray(np.ascontiguousarray(image[:, :, ::-1]))
    exif = Image.Exif()
    if tags:
        exif[0x010E] = tags["comment"]  # ImageDescription
        exif[0x0131] = tags["ai_tool"]  # Software
        exif[0x9286] = ";".join(f"{k}={v}" for k, v in tags.items() if k != "comment")  # UserComment
    fmt = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".webp": "WEBP"}[path.suffix.lower()]
    options = {"quality": quality} if fmt in ("JPEG", "WEBP") else {}
    buffer = io.BytesIO()
    try:
        rgb.save(buffer, format=fmt, exif=exif, **options)
    except (OSError, ValueError) as exc:
        raise MediaError(f"{path}: can't encode image ({exc})") from None
    atomic_write_bytes(path, buffer.getvalue(), place)


def temp_name(path: Path) -> Path:
    """A hidden sibling name for writing before the atomic rename; keeps the extension for muxers.
    Long names are shortened to a hash so the temp name fits where the final name fits."""
    name = f".{path.stem}.ffb-{os.getpid()}.tmp{path.suffix}"
    if len(name.encode()) > 240:
        digest = hashlib.sha1(path.name.encode()).hexdigest()[:16]
        name = f".ffb-{digest}-{os.getpid()}.tmp{path.suffix}"
    return path.with_name(name)


def atomic_write_bytes(path: Path, data: bytes, place: Callable[[Path, Path], object] | None = None) -> None:
    tmp = temp_name(path)
    try:
        with tmp.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if place is None:
            tmp.replace(path)
        else:
            place(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)

"""Image reading and writing (atomic, with AI marking in EXIF) and target kinds by extension.

Image targets keep what the format holds besides colour: an alpha channel (PNG, WebP, GIF transparency) is
set aside, the faces are swapped on the colour, and the alpha goes back on; an animated GIF, WebP or PNG
has every frame processed and is written animated again with its frame durations and loop count.
"""
from __future__ import annotations

import hashlib
import io
import os
import warnings
from pathlib import Path
from dataclasses import dataclass, replace
from typing import Callable, Mapping

import cv2
import numpy as np

from facefusion_batch.errors import MediaError, SourceError

VIDEO_EXTENSIONS = (".mp4", ".mov", ".mkv", ".webm", ".avi", ".m4v")
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".tif", ".tiff")
_CONVERT = "convert it first, e.g. ffmpeg -i IN{} OUT{}"
# Formats FaceFusion 3.8.1 takes as targets (its choices.py image_type_set, video_type_set) that ffb does not
# process, each with why and what to do: a directory scan or glob names every such file rather than pass it by.
UNPROCESSED: dict[str, str] = {
    ".bmp": "BMP can't carry ffb's AI-modified marking; " + _CONVERT.format(".bmp", ".png"),
    ".wmv": "ffb can't write WMV (ASF); " + _CONVERT.format(".wmv", ".mkv"),
    ".mpeg": "ffb can't write MPEG program streams; " + _CONVERT.format(".mpeg", ".mkv"),
    ".mpg": "ffb can't write MPEG program streams; " + _CONVERT.format(".mpg", ".mkv"),
    ".mxf": "ffb can't write MXF; " + _CONVERT.format(".mxf", ".mov"),
}
MAX_IMAGE_PIXELS = 64_000_000  # beyond this an image is refused rather than risking memory
MAX_ANIMATION_PIXELS = 250_000_000  # all frames of an animated image together (~1 GB as BGR + alpha)
_FORMATS = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".webp": "WEBP", ".gif": "GIF", ".tif": "TIFF",
            ".tiff": "TIFF"}


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


def image_header_problem(head: bytes) -> str | None:
    """Why a file that starts with `head` is no image ffb reads (None: its header is a JPEG/PNG/WebP's)."""
    from PIL import Image, UnidentifiedImageError

    if not head:
        return "file is empty"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(head)) as image:
                kind = image.format
    except Image.DecompressionBombError:
        return None  # an image; read_image refuses it for its size, with the reason
    except (UnidentifiedImageError, OSError, ValueError):
        return "not a readable image (no JPEG, PNG or WebP header)"
    if kind not in ("JPEG", "PNG", "WEBP", "MPO"):
        return f"a {kind} image, which ffb does not read"
    return None


def _header_size(data: np.ndarray) -> tuple[int, int]:
    """Image size from the header alone (no pixel decoding); (0, 0) when the header isn't recognised."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # we judge the size ourselves
            with Image.open(io.BytesIO(data.tobytes())) as image:
                return image.size
    except Image.DecompressionBombError:
        return _unchecked_size(data.tobytes())  # Pillow's own limit tripped: its true size for the message
    except (UnidentifiedImageError, OSError, ValueError):
        return 0, 0


def _unchecked_size(data: bytes) -> tuple[int, int]:
    """The size an image's header gives, read by Pillow's format plugins without Pillow's decompression
    bomb check (which refuses to say the size); (65536, 65536) should no plugin take it."""
    from PIL import Image

    Image.init()
    for name in Image.ID:
        factory, accept = Image.OPEN[name]
        verdict = accept(data[:16]) if accept else True
        if not verdict or isinstance(verdict, str):
            continue
        try:
            with factory(io.BytesIO(data), "") as image:
                return image.size
        except Exception:  # noqa: BLE001 - not this format (plugins raise SyntaxError, struct.error, ...)
            continue
    return 1 << 16, 1 << 16


def write_image(image: np.ndarray, path: Path, quality: int, tags: Mapping[str, str] | None,
                place: Callable[[Path, Path], object] | None = None) -> None:
    """Write atomically (temp name in the same directory, then rename), marking EXIF when `tags` given.
    `place(temp, path)` does the rename when given (and may sign the file first)."""
    write_picture(Picture([image], [None]), path, quality, tags, place)


@dataclass(frozen=True)
class Picture:
    """An image target's frames (BGR; one unless animated) with their alpha planes (None: opaque) and,
    when animated, each frame's duration in ms and the loop count (0: for ever)."""

    frames: list[np.ndarray]
    alpha: list[np.ndarray | None]
    durations: tuple[int, ...] = ()
    loop: int | None = None
    icc_profile: bytes | None = None  # the colour space the pixels are in (e.g. a phone's Display P3)

    @property
    def animated(self) -> bool:
        return len(self.frames) > 1

    def with_frames(self, frames: list[np.ndarray]) -> Picture:
        return replace(self, frames=frames)


def scaled_size(width: int, height: int, scale: float) -> tuple[int, int]:
    """FaceFusion's output size for a scale: each side times the scale, rounded to an even number."""
    return max(2, round(width * scale / 2) * 2), max(2, round(height * scale / 2) * 2)


def scale_picture(picture: Picture, scale: float) -> Picture:
    """The picture at `scale` times its size (every frame and alpha plane): area-averaged down, Lanczos up."""
    if scale == 1.0:
        return picture
    height, width = picture.frames[0].shape[:2]
    size = scaled_size(width, height, scale)
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LANCZOS4
    return replace(picture, frames=[cv2.resize(f, size, interpolation=interpolation) for f in picture.frames],
                   alpha=[None if a is None else cv2.resize(a, size, interpolation=interpolation)
                          for a in picture.alpha])


def read_picture(path: Path, error: type[Exception] = MediaError) -> Picture:
    """An image target: still and opaque images exactly as `read_image` reads them; images with
    transparency or several frames through Pillow, keeping the alpha and the animation."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # we judge the size ourselves
            image = Image.open(path)
    except Image.DecompressionBombError:
        return Picture([read_image(path, error)], [None])  # refused there, with the fix
    except (UnidentifiedImageError, OSError, ValueError):
        return Picture([read_image(path, error)], [None])  # OpenCV may still read it, or explains why not
    try:
        with image:
            frames = getattr(image, "n_frames", 1)
            transparent = image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info
            width, height = image.size
            icc = image.info.get("icc_profile") or None
            if (frames == 1 and not transparent) or width * height > MAX_IMAGE_PIXELS:
                # which refuses one too large, with the fix
                return Picture([read_image(path, error)], [None], icc_profile=icc)
            if width * height * frames > MAX_ANIMATION_PIXELS:
                raise error(f"{path}: {frames} frames of {width}x{height} are too many to hold; convert it to a "
                            "video (ffmpeg -i in.gif out.mp4) and use that as the target")
            colour, alpha, durations = [], [], []
            for index in range(frames):
                image.seek(index)
                frame = ImageOps.exif_transpose(image.convert("RGBA"))
                rgba = np.asarray(frame)
                colour.append(np.ascontiguousarray(rgba[:, :, 2::-1]))
                alpha.append(np.ascontiguousarray(rgba[:, :, 3]) if transparent else None)
                durations.append(_duration(image.info.get("duration")))
            loop = image.info.get("loop", 0 if frames > 1 else None)
    except (UnidentifiedImageError, OSError, ValueError, EOFError) as exc:
        if isinstance(exc, error):
            raise
        raise error(f"{path}: not a readable image ({exc})") from None
    return Picture(colour, alpha, tuple(durations) if frames > 1 else (), loop, icc)


def _duration(value: object) -> int:
    """A frame's duration in ms as the file gives it: 0 stays 0 (a GIF frame without a delay has none; a
    viewer decides how long to show it, and a copy must leave that choice as it found it)."""
    return int(round(float(value))) if value is not None else 0


def write_picture(picture: Picture, path: Path, quality: int, tags: Mapping[str, str] | None,
                  place: Callable[[Path, Path], object] | None = None) -> None:
    """Write `picture` atomically in the format of `path`'s extension: alpha reattached (JPEG, which
    can't hold it, gets the colour alone), all frames of an animation, its ICC colour profile, marking
    tags in EXIF (GIF: in its comment). `place` as for write_image."""
    from PIL import Image

    fmt = _FORMATS[path.suffix.lower()]
    images = []
    for frame, alpha in zip(picture.frames, picture.alpha):
        rgb = np.ascontiguousarray(frame[:, :, ::-1])
        if fmt == "GIF":
            images.append(_gif_frame(rgb, alpha))
        elif alpha is not None and fmt != "JPEG":
            images.append(Image.fromarray(np.dstack([rgb, alpha]), "RGBA"))
        else:
            images.append(Image.fromarray(rgb))
    options: dict = {"quality": quality} if fmt in ("JPEG", "WEBP") else {}
    if picture.icc_profile and fmt != "GIF":
        options["icc_profile"] = picture.icc_profile
    if fmt == "GIF":
        if any(a is not None for a in picture.alpha):
            options["transparency"] = _GIF_CLEAR
        if tags:
            options["comment"] = ";".join(f"{k}={v}" for k, v in tags.items()).encode()
    else:
        options["exif"] = _exif(tags)
    if picture.animated:
        options.update(save_all=True, append_images=images[1:], duration=list(picture.durations),
                       loop=picture.loop or 0)
        if fmt == "GIF":
            options["disposal"] = 2  # each frame replaces the last (transparent areas don't keep old pixels)
        if fmt == "WEBP":
            options["lossless"] = False
    buffer = io.BytesIO()
    try:
        images[0].save(buffer, format=fmt, **options)
    except (OSError, ValueError) as exc:
        raise MediaError(f"{path}: can't encode image ({exc})") from None
    atomic_write_bytes(path, buffer.getvalue(), place)


_GIF_CLEAR = 255  # the palette index GIF frames use for transparent pixels


def _gif_frame(rgb: np.ndarray, alpha: np.ndarray | None):
    """A palette frame (GIF has 256 colours, one of them kept for 'transparent', which is all or nothing)."""
    from PIL import Image

    image = Image.fromarray(rgb).quantize(_GIF_CLEAR)
    if alpha is None:
        return image
    indices = np.asarray(image).copy()
    indices[alpha < 128] = _GIF_CLEAR
    frame = Image.fromarray(indices, "P")
    palette = image.getpalette()[: 3 * _GIF_CLEAR]
    frame.putpalette(palette + [0] * (768 - len(palette)))
    return frame


def _exif(tags: Mapping[str, str] | None) -> object:
    from PIL import Image

    exif = Image.Exif()
    if tags:
        exif[0x010E] = tags["comment"]  # ImageDescription
        exif[0x0131] = tags["ai_tool"]  # Software
        exif[0x9286] = ";".join(f"{k}={v}" for k, v in tags.items() if k != "comment")  # UserComment
    return exif


_TEMP_STEM = 48  # bytes of the output's name a temp name shows (for whoever lists the directory)


def temp_name(path: Path) -> Path:
    """A hidden sibling name for writing before the atomic rename; keeps the extension for muxers. Its
    length does not depend on the output's (`.<first 48 bytes of the stem>.ffb-<hash of the name>-<pid>
    .tmp<ext>`, ~90 bytes), so a 255-byte output name has room for ffb's own suffixes (.sig, .c2pa)."""
    return path.with_name(f"{temp_stem(path)}-{os.getpid()}.tmp{path.suffix}")


def temp_stem(path: Path) -> str:
    """What every temp name of `path` starts with, made by any process (a glob over `<stem>-*` finds the
    partials a killed run left of this one output and of no other)."""
    raw = os.fsencode(path.stem)  # the file system's bytes: a name that is not UTF-8 keeps its own
    shown = os.fsdecode(raw[:_TEMP_STEM])
    digest = hashlib.sha1(os.fsencode(path.name)).hexdigest()[:12]
    return f".{shown}.ffb-{digest}"


def atomic_write_bytes(path: Path, data: bytes, place: Callable[[Path, Path], object] | None = None) -> None:
    tmp = temp_name(path)
    tmp.unlink(missing_ok=True)
    try:
        # O_EXCL | O_NOFOLLOW: never write through a link planted under the temp name.
        descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            exc.filename = exc.filename or str(tmp)  # which disk filled up: the output's
            raise
        if place is None:
            tmp.replace(path)
        else:
            place(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)

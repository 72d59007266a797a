"""Reading back the AI-modified marking tags of `facefusion_batch.marking` from a file (for `ffb verify`)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from facefusion_batch.marking import COMMENT_PREFIX
from facefusion_batch.media import kind_of


def read_mark(path: Path) -> dict[str, str] | None:
    """The AI-modified marking tags ffb wrote into a file's metadata (EXIF of an image, container tags of a
    video), or None when the file carries no such mark or can't be read."""
    tags = _image_tags(path) if kind_of(path) == "image" else _container_tags(path)
    if tags.get("ai_modified", "").lower() == "true" or "digital_source_type" in tags:
        return tags
    # Containers that keep only a few known tags (AVI's INFO list) keep the comment alone.
    if tags.get("comment", "").startswith(COMMENT_PREFIX):
        return tags
    return None


def _image_tags(path: Path) -> dict[str, str]:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            exif = image.getexif()
            # EXIF's UserComment; GIF, which has no EXIF, keeps the tags in its comment extension
            comment = exif.get(0x9286) or exif.get_ifd(0x8769).get(0x9286) or image.info.get("comment") or ""
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError):
        return {}
    if isinstance(comment, bytes):
        comment = comment.decode("utf-8", "replace")
    pairs = (item.split("=", 1) for item in str(comment).split(";") if "=" in item)
    return {key.strip().lower(): value.strip() for key, value in pairs}


def _container_tags(path: Path) -> dict[str, str]:
    """The input's container-level metadata as ffmpeg describes it (the wheel's ffmpeg has no ffprobe)."""
    from facefusion_batch.video.ffmpeg import ffmpeg_binary

    try:
        run = subprocess.run([ffmpeg_binary(), "-hide_banner", "-nostdin", "-i", str(path)], capture_output=True,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    tags: dict[str, str] = {}
    inside = False
    for line in run.stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("Input #0"):
            continue
        if line == "  Metadata:":
            inside = True
            continue
        if inside:
            match = _TAG.match(line)
            if not match:
                break  # the container's block ended (streams and their own metadata follow)
            tags.setdefault(match.group(1).strip().lower(), match.group(2).strip())
    return tags


_TAG = re.compile(r"^    (\S[^:]*?)\s*: ?(.*)$")

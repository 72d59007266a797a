"""The C2PA manifest ffb writes, as the JSON definition c2pa's Builder takes. Pure functions: no signing.

What it says: claim generator ffb + version; actions `c2pa.opened` (the target, as the parent ingredient)
then `c2pa.edited` with the IPTC digital source type compositeWithTrainedAlgorithmicMedia and a
softwareAgent naming ffb, the engine and the swapper model; an `ffb.swap` assertion with the target's and
the source face's sha256 (the face itself is never embedded) and the models used. No thumbnails.
"""
from __future__ import annotations

import mimetypes
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from facefusion_batch.version import __version__
from facefusion_batch.marking import DIGITAL_SOURCE_TYPE

SWAP_ASSERTION = "ffb.swap"
SOFT_BINDING = "c2pa.soft-binding"
PARENT_LABEL = "parent"
# Formats the c2pa library embeds a manifest in; any other output gets a sidecar manifest.
EMBEDDED = {".mp4": "video/mp4", ".m4v": "video/x-m4v", ".mov": "video/quicktime", ".jpg": "image/jpeg",
            ".jpeg": "image/jpeg", ".png": "image/png", ".webp": "image/webp"}
SIDECAR = {".webm": "video/webm", ".mkv": "video/x-matroska", ".avi": "video/x-msvideo"}


@dataclass(frozen=True)
class Stamp:
    """What made an output: the facts every manifest of a run repeats."""

    engine: str  # neural | offline
    models: tuple[str, ...]
    swapper: str  # the model that swapped the faces (the engine's own method for offline)
    source_sha256: str
    version: str = __version__

    @property
    def agent(self) -> str:
        return f"ffb {self.version} ({self.engine} engine, {self.swapper})"


@dataclass(frozen=True)
class Facts:
    """What differs per output: the invisible watermark's payload and whether the content gate ran."""

    watermark: str = ""  # 8 hex digits; "" when the frames carry none
    content_gate: str = ""  # checked (classifier) | not available | off by setting; "" when not known


def soft_binding(payload: str) -> dict[str, Any]:
    """A C2PA soft-binding assertion naming the watermark in the frames: its method and the payload
    (4 bytes, base64), so a copy whose manifest was stripped can be matched to this manifest."""
    import base64

    from facefusion_batch.provenance.watermark import ALGORITHM

    value = base64.b64encode(bytes.fromhex(payload)).decode()
    return {"label": SOFT_BINDING, "data": {"alg": ALGORITHM, "blocks": [{"scope": {}, "value": value}]}}


def mime_of(path: Path) -> str:
    suffix = path.suffix.lower()
    return EMBEDDED.get(suffix) or SIDECAR.get(suffix) or mimetypes.guess_type(path.name)[0] or \
        "application/octet-stream"


def embeds(path: Path) -> bool:
    """Whether the output's format holds a C2PA manifest itself (else it gets a sidecar)."""
    return path.suffix.lower() in EMBEDDED


def definition(stamp: Stamp, output: Path, parent: Path, parent_sha256: str,
               parent_from_stream: bool, facts: Facts = Facts()) -> dict[str, Any]:
    """The manifest definition for `output` made from the target `parent`. With `parent_from_stream` the
    ingredient is added from the target's bytes by the caller (which also carries over a manifest the
    target had); otherwise it is described here."""
    actions = [
        {"action": "c2pa.opened", "parameters": {"ingredientIds": [PARENT_LABEL]}},
        {"action": "c2pa.edited", "digitalSourceType": DIGITAL_SOURCE_TYPE,
         "softwareAgent": {"name": stamp.agent},
         "description": "faces replaced by a face-swap model"},
    ]
    manifest: dict[str, Any] = {
        "claim_generator_info": [{"name": "ffb", "version": stamp.version}],
        "title": title_of(output),
        "format": mime_of(output),
        "assertions": [
            {"label": "c2pa.actions.v2", "data": {"actions": actions}},
            {"label": SWAP_ASSERTION, "data": {
                "tool": f"ffb {stamp.version}", "engine": stamp.engine, "swapper_model": stamp.swapper,
                "models": list(stamp.models), "target_sha256": parent_sha256,
                "source_face_sha256": stamp.source_sha256,
                **({"content_gate": facts.content_gate} if facts.content_gate else {}),
                **({"watermark": facts.watermark} if facts.watermark else {})}},
        ],
    }
    if facts.watermark:
        manifest["assertions"].append(soft_binding(facts.watermark))
    if not parent_from_stream:
        manifest["ingredients"] = [ingredient(parent)]
    return manifest


def title_of(path: Path) -> str:
    """A file's name as manifest text: JSON takes only UTF-8, so the bytes of a name that is not UTF-8 show
    as U+FFFD."""
    return os.fsencode(path.name).decode("utf-8", "replace")


def ingredient(parent: Path) -> dict[str, Any]:
    return {"title": title_of(parent), "format": mime_of(parent), "relationship": "parentOf", "label": PARENT_LABEL}


def data_hash(digest: bytes) -> dict[str, Any]:
    """A hard binding over a whole file (no exclusions): what a sidecar manifest is bound by."""
    return {"label": "c2pa.hash.data",
            "data": {"exclusions": [], "name": "whole file", "alg": "sha256", "hash": list(digest), "pad": []}}

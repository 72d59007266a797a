"""Whether a file's structure claims a C2PA manifest, read without the C2PA library: where each format puts
one (JPEG's APP11 JUMBF segments, a BMFF `uuid` box with C2PA's id, PNG's `caBX` chunk, a RIFF `C2PA`
chunk); in other formats, a JUMBF box labelled c2pa in the first 64 MB. `ffb verify` uses it to tell a file that carries no
manifest from one whose manifest is damaged: data that claims to be a manifest and does not parse."""
from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

C2PA_UUID = bytes.fromhex("d8fec3d61b0e483c92975828877ec481")  # the BMFF uuid box C2PA's manifest store is in
_APP11 = 0xEB
_HEADER_LIMIT = 64 << 20  # structures before the media data are small; never read further for them


def manifest_claim(path: Path) -> str | None:
    """What in `path` claims to be a C2PA manifest (e.g. "a C2PA uuid box"), or None when nothing does."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(12)
            handle.seek(0)
            walked, claim = _structural_claim(head, handle)
            if not walked and _jumbf_labelled_c2pa(handle):
                claim = "a JUMBF box labelled c2pa"
            return claim
    except OSError:
        return None


def _structural_claim(head: bytes, handle: BinaryIO) -> tuple[bool, str | None]:
    """(whether the format is one walked here, what in it claims a manifest): a walked format is judged by
    where C2PA puts the manifest in it, without reading its media data."""
    if head[:2] == b"\xff\xd8":
        return True, "an APP11 (JUMBF) segment" if _jpeg_has_app11(handle) else None
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return True, "a caBX chunk" if _png_has_cabx(handle) else None
    if head[:4] == b"RIFF":
        return True, "a C2PA chunk" if _riff_has_c2pa(handle) else None
    if head[4:8] in (b"ftyp", b"styp", b"moov", b"mdat", b"free", b"wide", b"uuid", b"skip"):
        return True, "a C2PA uuid box" if _bmff_has_c2pa_uuid(handle) else None
    return False, None


def _jpeg_has_app11(handle: BinaryIO) -> bool:
    """Any APP11 segment among the segments before the image data: APP11 holds JUMBF, C2PA's container."""
    handle.seek(2)
    while handle.tell() < _HEADER_LIMIT:
        byte = handle.read(1)
        if byte != b"\xff":
            return False
        marker = handle.read(1)
        while marker == b"\xff":  # fill bytes
            marker = handle.read(1)
        if not marker or marker[0] in (0xDA, 0xD9):  # start of scan, end of image: no more segments
            return False
        if marker[0] == 0x01 or 0xD0 <= marker[0] <= 0xD8:  # markers without a length
            continue
        length = handle.read(2)
        if len(length) < 2:
            return False
        size = struct.unpack(">H", length)[0] - 2
        if marker[0] == _APP11:
            if app11_claims(handle.read(max(0, size))):
                return True
        else:
            handle.seek(size, 1)
    return False


def app11_claims(payload: bytes) -> bool:
    """Whether one APP11 segment's payload claims a C2PA manifest: any APP11 does, except a JUMBF one
    whose description names another owner (JPEG 360, JPEG XT: a label not starting with c2pa). A packet
    after the first of a box (sequence > 1) is judged by its first."""
    if payload[:2] != b"JP" or len(payload) < 16:
        return True
    header = 16 if payload[8:12] == b"\0\0\0\1" else 8  # LBox 1: an 8-byte XLBox follows the type
    if payload[12:16] != b"jumb":
        return True
    if int.from_bytes(payload[4:8], "big") > 1:
        return False
    description = 8 + header  # the jumd box right after the superbox's header
    if payload[description + 4:description + 8] != b"jumd" or len(payload) <= description + 24:
        return True
    toggles = payload[description + 24]
    if not toggles & 0x02:  # no label: nothing says whose it is
        return True
    return payload[description + 25:].split(b"\0", 1)[0].startswith(b"c2pa")


def _png_has_cabx(handle: BinaryIO) -> bool:
    handle.seek(8)
    while handle.tell() < _HEADER_LIMIT:
        header = handle.read(8)
        if len(header) < 8:
            return False
        length, kind = struct.unpack(">I4s", header)
        if kind == b"caBX":
            return True
        if kind == b"IEND":
            return False
        handle.seek(length + 4, 1)  # data and CRC
    return False


def _riff_has_c2pa(handle: BinaryIO) -> bool:
    handle.seek(12)
    while True:
        header = handle.read(8)
        if len(header) < 8:
            return False
        kind, length = struct.unpack("<4sI", header)
        if kind == b"C2PA":
            return True
        handle.seek(length + (length & 1), 1)


def _bmff_has_c2pa_uuid(handle: BinaryIO) -> bool:
    """A top-level `uuid` box with C2PA's id (where the C2PA specification puts the manifest store)."""
    handle.seek(0, 2)
    end = handle.tell()
    position = 0
    while position + 8 <= end:
        handle.seek(position)
        size, kind = struct.unpack(">I4s", handle.read(8))
        header = 8
        if size == 1:
            large = handle.read(8)
            if len(large) < 8:
                return False
            size, header = struct.unpack(">Q", large)[0], 16
        elif size == 0:
            size = end - position
        if size < header:
            return False
        if kind == b"uuid" and handle.read(16) == C2PA_UUID:
            return True
        position += size
    return False


def _jumbf_labelled_c2pa(handle: BinaryIO) -> bool:
    """Whether the first _HEADER_LIMIT bytes hold a JUMBF box labelled c2pa (formats not walked above)."""
    handle.seek(0)
    tail = b""
    while handle.tell() < _HEADER_LIMIT and (chunk := handle.read(1 << 20)):
        window = tail + chunk
        at = window.find(b"jumb")
        while at >= 0:
            if b"c2pa" in window[at:at + 64]:
                return True
            at = window.find(b"jumb", at + 1)
        tail = window[-64:]
    return False

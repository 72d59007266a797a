"""`ffb verify`: what a file says about its own making. For each file: ffb's metadata mark, the C2PA
manifest (embedded, or the sidecar `<name>.c2pa`) and whether it validates, the digital source type, the
tool and model, and the journal record when the file lies in an ffb output tree (looked up by the caller:
`runner.journal.lookup`).
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

from facefusion_batch.errors import SettingsError
from facefusion_batch.provenance.metadata import read_mark
from facefusion_batch.media import kind_of
from facefusion_batch.provenance import manifest as mf
from facefusion_batch.provenance.claims import manifest_claim
from facefusion_batch.provenance.sign import SIDECAR_SUFFIX, c2pa_config, load_c2pa, one_line, sidecar_of

UNTRUSTED = "signingCredential.untrusted"
MAX_SIDECAR = 64 << 20  # a manifest is kilobytes; a sidecar beyond this is not one


# (file, its watermark payload or None, an output tree to look in or None) -> the journal's record, or None
JournalLookup = Callable[[Path, Optional[str], Optional[Path]], Optional[dict[str, Any]]]


@dataclass
class Finding:
    """What `ffb verify` reports for one file."""

    file: str
    metadata_mark: bool = False
    c2pa: str = "none"  # none | embedded | sidecar
    validation: str = ""  # trusted | valid (signer untrusted) | invalid; "" without a manifest
    problems: list[str] = field(default_factory=list)  # why it is invalid: "code: explanation"
    signer: str = ""
    digital_source_type: str = ""
    tool: str = ""
    software_agent: str = ""
    model: str = ""
    engine: str = ""
    source_face_sha256: str = ""
    target_sha256: str = ""
    parent: str = ""
    journal: dict[str, Any] | None = None
    # The invisible watermark read from the frames (survives stripping and re-encoding): its payload (8 hex
    # digits, "" when none was found), how far its sync and its bits stood out (standard deviations), and the
    # payload the manifest's soft binding names.
    watermark: str = ""
    watermark_sync: float = 0.0
    watermark_bits: float = 0.0
    soft_binding: str = ""

    @property
    def failed(self) -> bool:
        """The file claims a manifest that does not validate."""
        return self.validation == "invalid"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": not self.failed}


def trust_anchors(path: Path | None) -> str | None:
    """The PEM text of `--trust ROOT.pem`, checked to hold certificates."""
    if path is None:
        return None
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not a PEM text file"
        raise SettingsError(f"{path}: can't read the trust anchors ({reason}); pass a PEM file of root "
                            "certificates") from None
    from cryptography import x509

    try:
        x509.load_pem_x509_certificates(text.encode())
    except ValueError:
        raise SettingsError(f"{path}: no PEM certificate in it; pass the root certificate(s) to trust as PEM") \
            from None
    return text


def files_of(paths: Sequence[Path]) -> Iterator[Path]:
    """The files to verify: each file given, and every image/video under each directory given (hidden
    files and ffb's state directories skipped)."""
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise SettingsError(f"{missing[0]}: no such file or directory; pass files or directories to verify")
    for path in paths:
        if not path.is_dir():
            yield path
            continue
        for root, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                path_ = Path(root) / name
                if not name.startswith(".") and kind_of(path_) is not None and path_.is_file():
                    yield path_


def inspect(path: Path, anchors: str | None = None, output: Path | None = None,
            journal: JournalLookup | None = None) -> Finding:
    """Everything `ffb verify` says about one file. `journal` finds the journal entry that wrote it (the
    run's journal API, `runner.journal.lookup`), given the file, its watermark payload and `output`: an ffb
    output tree whose journal a copy found elsewhere (renamed, stripped, re-encoded) is linked to by it."""
    finding = Finding(str(path))
    if not path.is_file():  # a FIFO or device would block the readers
        finding.problems.append("not a regular file; skipped")
        return finding
    finding.metadata_mark = read_mark(path) is not None
    _read_manifest(path, anchors, finding)
    _read_watermark(path, finding)
    if journal is not None:
        finding.journal = journal(path, finding.watermark or None, output)
    return finding


def _is_file(path: Path) -> bool:
    """Whether a file is there; False for a name the file system can't hold (the sidecar of a 251-byte name)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _read_watermark(path: Path, finding: Finding) -> None:
    from facefusion_batch.errors import FfbError
    from facefusion_batch.provenance import watermark

    try:
        reading = watermark.read_frames(frames_of(path))
    except (FfbError, OSError, ValueError) as exc:
        finding.problems.append(f"watermark not read: {one_line(exc)}")
        return
    finding.watermark = reading.hex if reading.found else ""
    finding.watermark_sync = round(reading.sync_z, 1)
    finding.watermark_bits = round(reading.bits_z, 1)
    if finding.soft_binding and finding.watermark and finding.soft_binding != finding.watermark:
        finding.problems.append(f"the frames' watermark {finding.watermark} is not the one the manifest names "
                                f"({finding.soft_binding})")


WATERMARK_FRAMES = 30  # frames of a video averaged to read its watermark


def frames_of(path: Path) -> Iterator[Any]:
    """The frames the watermark is read from: a picture's first, or up to WATERMARK_FRAMES spread over a
    video."""
    from facefusion_batch.media import read_picture
    from facefusion_batch.video.decoder import sampled_frames
    from facefusion_batch.video.probe import probe

    if kind_of(path) == "image":
        yield read_picture(path).frames[0]
        return
    info = probe(path)
    step = max(1, info.frame_count // WATERMARK_FRAMES)
    yield from sampled_frames(path, step, info.width, info.height)


def _read_manifest(path: Path, anchors: str | None, finding: Finding) -> None:
    c2pa = load_c2pa()

    config = c2pa_config(anchors)
    sidecar = sidecar_of(path)
    if not _is_file(sidecar):
        sidecar = path.with_suffix(SIDECAR_SUFFIX)  # the C2PA convention for the same name
    try:
        with c2pa.Context.from_dict(config) as context, open(path, "rb") as stream:
            if _is_file(sidecar) and not mf.embeds(path):
                finding.c2pa = "sidecar"
                if sidecar.stat().st_size > MAX_SIDECAR:
                    raise c2pa.C2paError(f"{sidecar.name} is {sidecar.stat().st_size >> 20} MB, not a manifest")
                reader = c2pa.Reader(mf.mime_of(path), stream, sidecar.read_bytes(), context=context)
            else:
                reader = c2pa.Reader.try_create(mf.mime_of(path), stream, None, context)
                if reader is None:
                    _claimed_but_absent(path, finding)
                    return
                finding.c2pa = "embedded"
            with reader:
                _describe(reader, finding)
    except c2pa.C2paError.NotSupported:
        _claimed_but_absent(path, finding)  # a format c2pa can't hold a manifest in, and no sidecar
    except c2pa.C2paError as exc:
        if finding.c2pa == "none" and manifest_claim(path) is None:
            # Not parseable as its format, and no manifest store inside: it claims nothing.
            finding.problems.append(f"not readable as {mf.mime_of(path)} ({one_line(exc)})")
            return
        finding.c2pa = finding.c2pa if finding.c2pa != "none" else "embedded"
        finding.validation = "invalid"
        finding.problems.append(f"unreadable manifest (damaged): {one_line(exc)}")
    except OSError as exc:
        finding.validation = "invalid" if finding.c2pa != "none" else ""
        finding.problems.append(f"can't read: {exc.strerror}")


def _claimed_but_absent(path: Path, finding: Finding) -> None:
    """The C2PA library found no manifest: a file whose structure claims one (see claims) has a damaged
    manifest, not none."""
    claim = manifest_claim(path)
    if claim is not None:
        finding.c2pa, finding.validation = "embedded", "invalid"
        finding.problems.append(f"damaged manifest: {claim} that is no readable C2PA manifest")


def _describe(reader, finding: Finding) -> None:
    state = (reader.get_validation_state() or "").lower()
    results = reader.get_validation_results() or {}
    failures = (results.get("activeManifest") or {}).get("failure", [])
    problems = [one_line(f"{f.get('code')}: {f.get('explanation', '')}") for f in failures
                if f.get("code") != UNTRUSTED]
    if state == "invalid" or problems:
        finding.validation = "invalid"
    elif state == "trusted":
        finding.validation = "trusted"
    else:
        finding.validation = "valid (signer untrusted)"
    finding.problems += problems
    active = reader.get_active_manifest() or {}
    signature = active.get("signature_info") or {}
    finding.signer = ", ".join(filter(None, [signature.get("common_name"), signature.get("issuer")]))
    generator = (active.get("claim_generator_info") or [{}])[0]
    finding.tool = " ".join(filter(None, [generator.get("name"), generator.get("version")]))
    for assertion in active.get("assertions", []):
        label, data = assertion.get("label", ""), assertion.get("data") or {}
        if label.startswith("c2pa.actions"):
            for action in data.get("actions", []):
                finding.digital_source_type = action.get("digitalSourceType") or finding.digital_source_type
                agent = action.get("softwareAgent")
                if agent:
                    finding.software_agent = agent.get("name", "") if isinstance(agent, dict) else str(agent)
        elif label == mf.SOFT_BINDING:
            blocks = data.get("blocks") or [{}]
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                import base64

                finding.soft_binding = base64.b64decode(blocks[0].get("value", "")).hex()
        elif label == mf.SWAP_ASSERTION:
            finding.model = data.get("swapper_model", "")
            finding.engine = data.get("engine", "")
            finding.source_face_sha256 = data.get("source_face_sha256", "")
            finding.target_sha256 = data.get("target_sha256", "")
    parents = [i for i in active.get("ingredients", []) if i.get("relationship") == "parentOf"]
    finding.parent = parents[0].get("title", "") if parents else ""

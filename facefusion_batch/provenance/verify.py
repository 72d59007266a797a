"""`ffb verify`: what a file says about its own making. For each file: ffb's metadata mark, the C2PA
manifest (embedded, or the sidecar `<name>.c2pa`) and whether it validates, the digital source type, the
tool and model, and the journal record when the file lies in an ffb output tree (<output>/.ffb/journal.sqlite).
"""
from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from facefusion_batch.errors import SettingsError
from facefusion_batch.provenance.metadata import read_mark
from facefusion_batch.media import kind_of
from facefusion_batch.provenance import manifest as mf
from facefusion_batch.provenance.sign import SIDECAR_SUFFIX, c2pa_config, load_c2pa, one_line, sidecar_of

UNTRUSTED = "signingCredential.untrusted"
MAX_SIDECAR = 64 << 20  # a manifest is kilobytes; a sidecar beyond this is not one


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


def inspect(path: Path, anchors: str | None = None) -> Finding:
    """Everything `ffb verify` says about one file."""
    finding = Finding(str(path))
    if not path.is_file():  # a FIFO or device would block the readers
        finding.problems.append("not a regular file; skipped")
        return finding
    finding.metadata_mark = read_mark(path) is not None
    _read_manifest(path, anchors, finding)
    finding.journal = journal_record(path)
    return finding


def _is_file(path: Path) -> bool:
    """Whether a file is there; False for a name the file system can't hold (the sidecar of a 251-byte name)."""
    try:
        return path.is_file()
    except OSError:
        return False


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
                    return
                finding.c2pa = "embedded"
            with reader:
                _describe(reader, finding)
    except c2pa.C2paError.NotSupported:
        return  # a format c2pa can't hold a manifest in, and no sidecar
    except c2pa.C2paError as exc:
        if finding.c2pa == "none" and not _has_manifest_store(path):
            # Not parseable as its format, and no manifest store inside: it claims nothing.
            finding.problems.append(f"not readable as {mf.mime_of(path)} ({one_line(exc)})")
            return
        finding.c2pa = finding.c2pa if finding.c2pa != "none" else "embedded"
        finding.validation = "invalid"
        finding.problems.append(f"unreadable manifest: {one_line(exc)}")
    except OSError as exc:
        finding.validation = "invalid" if finding.c2pa != "none" else ""
        finding.problems.append(f"can't read: {exc.strerror}")


def _has_manifest_store(path: Path) -> bool:
    """Whether the file's bytes hold a C2PA manifest store (a JUMBF box labelled c2pa) anywhere."""
    tail = b""
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                window = tail + chunk
                at = window.find(b"jumb")
                if at >= 0 and b"c2pa" in window[at:at + 64]:
                    return True
                tail = window[-64:]
    except OSError:
        return False
    return False


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
        elif label == mf.SWAP_ASSERTION:
            finding.model = data.get("swapper_model", "")
            finding.engine = data.get("engine", "")
            finding.source_face_sha256 = data.get("source_face_sha256", "")
            finding.target_sha256 = data.get("target_sha256", "")
    parents = [i for i in active.get("ingredients", []) if i.get("relationship") == "parentOf"]
    finding.parent = parents[0].get("title", "") if parents else ""


def journal_record(path: Path) -> dict[str, Any] | None:
    """The journal entry that wrote `path`, from the nearest enclosing `<output>/.ffb/journal.sqlite`."""
    from facefusion_batch.pipeline.journal import Entry

    resolved = path.resolve()
    for tree in resolved.parents:
        journal = tree / ".ffb" / "journal.sqlite"
        if not journal.is_file():
            continue
        try:
            with contextlib.closing(sqlite3.connect(journal.as_uri() + "?mode=ro", uri=True)) as db:
                entries = [Entry(*row) for row in db.execute("SELECT * FROM targets")]
        except sqlite3.Error:
            return None
        relative = resolved.relative_to(tree).parts
        exact = [e for e in entries if Path(e.output).is_absolute() and Path(e.output).resolve() == resolved]
        # A relative output is relative to where that run started: match it by its path inside the tree.
        tail = [e for e in entries if not Path(e.output).is_absolute()
                and Path(e.output).parts[-len(relative):] == relative]
        matches = exact or (tail if len(tail) == 1 else [])
        if not matches:
            return None
        entry = matches[0]
        stat = path.stat()
        return {"journal": str(journal), "target": entry.target, "status": entry.status,
                "content_hash": entry.content_hash, "frames": entry.frames, "seconds": round(entry.seconds, 2),
                "updated": entry.updated,
                "output_unchanged": (stat.st_size, stat.st_mtime_ns) == (entry.output_size, entry.output_mtime_ns)}
    return None

"""Signing an output before it is renamed into place, and the rename itself (`Marker.place`).

A format that holds a C2PA manifest (MP4/MOV/M4V, JPEG, PNG, WebP) is signed into a second hidden temp file
that is then renamed over the output; any other format (WebM, MKV) keeps its bytes and gets a sidecar
manifest `<output name>.c2pa` bound to the whole file by its sha256, renamed into place just before the
output. A signing failure fails the target (nothing is written) or, with `c2pa_on_failure = metadata`, the
output is kept with its metadata marking only and a note says so.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from facefusion_batch.errors import MediaError
from facefusion_batch.marking import marking_tags
from facefusion_batch.provenance import manifest as mf
from facefusion_batch.provenance.credentials import Credential

if TYPE_CHECKING:
    from facefusion_batch.settings import Settings

SIDECAR_SUFFIX = ".c2pa"
_TEMP = re.compile(r"^\.(.+?)\.ffb-.+\.tmp(\.[^.]+)$")


def sidecar_of(path: Path) -> Path:
    """The sidecar manifest of an output: its whole name plus `.c2pa` (clip.webm -> clip.webm.c2pa), so
    clip.webm and clip.mkv in one directory don't share one."""
    return path.with_name(path.name + SIDECAR_SUFFIX)


def sidecar_problem(output: Path) -> str | None:
    """Why the output can't have a sidecar manifest beside it (its name plus `.c2pa` is longer than the
    file system allows), else None."""
    name = os.fsencode(sidecar_of(output).name)
    try:
        limit = os.pathconf(output.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    if len(name) <= limit:
        return None
    return (f"its C2PA sidecar can't be named: {output.name}{SIDECAR_SUFFIX} would be {len(name)} bytes, "
            f"the file system allows {limit}; shorten the name, write a format that holds the manifest (.mp4, "
            ".mov, .jpg, .png, .webp), or set output_provenance = metadata")


def place(staged: Path, output: Path) -> None:
    """Rename a finished output and its sidecar (if any) into place: the sidecar first, so an output never
    stands without the manifest it was signed with."""
    sidecar = sidecar_of(staged)
    if sidecar.is_file():
        problem = sidecar_problem(output)
        if problem:
            raise MediaError(f"{output}: {problem}")
        sidecar.replace(sidecar_of(output))
    elif not sidecar_problem(output):  # (a name too long to exist has no stale manifest)
        sidecar_of(output).unlink(missing_ok=True)  # a manifest of an earlier output would not match
    staged.replace(output)


def c2pa_config(anchors: str | None = None) -> dict:
    """Settings of the c2pa library for signing and reading: offline, no thumbnails, the C2PA signing EKUs,
    and `anchors` (PEM roots) trusted besides the library's own list."""
    from facefusion_batch.provenance.credentials import SIGNING_EKUS

    config: dict = {"builder": {"thumbnail": {"enabled": False}},
                    "verify": {"remote_manifest_fetch": False, "ocsp_fetch": False},
                    "trust": {"trust_config": "\n".join(SIGNING_EKUS) + "\n"}}
    if anchors:
        config["trust"]["user_anchors"] = anchors
    return config


def load_c2pa():
    """The c2pa module; SettingsError with the fix when it can't be loaded (not installed, or no native
    library for this platform)."""
    try:
        import c2pa
    except (ImportError, OSError) as exc:
        from facefusion_batch.errors import SettingsError

        raise SettingsError(f"the C2PA library can't be loaded ({one_line(exc)}); pip install c2pa-python, or set "
                            "output_provenance = metadata (--output-provenance metadata)") from None
    return c2pa


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def mode_of(settings: Settings) -> str:
    """c2pa | metadata | off, with --no-marking (output_marking = false) overriding all."""
    return settings.output_provenance if settings.output_marking else "off"


def swapper_of(engine: str, models: Sequence[str]) -> str:
    return next((m for m in models if "swap" in m), models[0] if models else engine)


@dataclass(frozen=True)
class Marker:
    """How a run marks its outputs: metadata tags for the muxer/EXIF, and for `c2pa` the stamp and the
    credential each output is signed with."""

    mode: str
    tags: dict[str, str] = field(default_factory=dict)
    stamp: mf.Stamp | None = None
    credential: Credential | None = None
    on_failure: str = "fail"
    timestamp_url: str = ""  # RFC 3161 time-stamp authority ("": none)

    @classmethod
    def for_run(cls, settings: Settings, engine: str, models: Sequence[str], source_sha256: str,
                credential: Credential | None = None) -> Marker:
        """The run's marker; loads (or creates) the credential for c2pa unless one is given."""
        mode = mode_of(settings)
        if mode == "off":
            return cls("off")
        tags = marking_tags(engine, models)
        if mode == "metadata":
            return cls("metadata", tags)
        if credential is None:
            from facefusion_batch.provenance import credentials

            credential = credentials.load(settings.c2pa_certificate, settings.c2pa_private_key,
                                          settings.cache_path)
        stamp = mf.Stamp(engine, tuple(models), swapper_of(engine, models), source_sha256)
        return cls("c2pa", tags, stamp, credential, settings.c2pa_on_failure, settings.c2pa_timestamp_url)

    @property
    def key(self) -> dict:
        """What of the marker shapes output bytes (for the journal's settings key)."""
        return {"mode": self.mode, "signer": self.credential.fingerprint if self.credential else None}

    def place(self, partial: Path, output: Path, modified: bool = True, *, parent: Path,
              parent_sha256: str | None = None, watermark: str = "", content_gate: str = "") -> str:
        """Move the finished hidden `partial` to `output`, signed first when this run signs and the output
        was modified (an unmodified copy of the target `parent` is not claimed as AI-made). `parent_sha256`
        is the target's hash when known (else it is hashed here); `watermark` the payload of the invisible
        watermark in its frames (a soft binding) and `content_gate` whether the gate ran, both recorded in
        the manifest. Returns a note for the summary ("" when there is nothing to say)."""
        if self.mode != "c2pa" or not modified:
            place(partial, output)
            return ""
        assert self.stamp is not None and self.credential is not None
        problem = self.output_problem(output)
        if problem:
            if self.on_failure != "metadata":
                raise MediaError(f"{parent}: {problem}")
            place(partial, output)
            return f"warning: C2PA manifest not written ({problem}); written with metadata marking only"
        signed = _signed_name(partial)
        try:
            try:
                note = self._sign(partial, signed, output, parent, parent_sha256,
                                  mf.Facts(watermark, content_gate))
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as exc:  # noqa: BLE001 - any failure of the native signer fails the signing
                reason = one_line(exc) or type(exc).__name__
                if _disk_full(exc):  # not the credential's fault: the output's disk (the signed copy is there)
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(signed)) from None
                if self.on_failure != "metadata":
                    raise MediaError(f"{parent}: C2PA signing failed ({reason}); nothing was written to "
                                     f"{output}. Fix the signing certificate, or set c2pa_on_failure = metadata "
                                     "to keep such outputs with metadata marking only") from None
                place(partial, output)
                return f"warning: C2PA signing failed ({reason}); written with metadata marking only"
            place(signed if mf.embeds(output) else partial, output)
            return note
        finally:  # whatever was not moved into place
            signed.unlink(missing_ok=True)
            sidecar_of(partial).unlink(missing_ok=True)

    def output_problem(self, output: Path) -> str | None:
        """Why this run can't sign `output` as it is named (a sidecar it can't name), else None."""
        if self.mode != "c2pa" or mf.embeds(output):
            return None
        return sidecar_problem(output)

    def check_output(self, target: Path, output: Path) -> None:
        """Before any work: MediaError when `output` can't be signed and the run fails such outputs (with
        c2pa_on_failure = metadata it is written with metadata marking only, and a note says so)."""
        problem = self.output_problem(output)
        if problem and self.on_failure != "metadata":
            raise MediaError(f"{target}: {problem}")

    def _sign(self, partial: Path, signed: Path, output: Path, parent: Path, parent_sha256: str | None,
              facts: mf.Facts = mf.Facts()) -> str:
        """Sign into `signed` (embedded) or the sidecar of `partial`; returns the summary note."""
        import c2pa

        digest = parent_sha256 or _sha256(parent).hex()
        named = output.with_name(_final_name(output.name))
        embed = mf.embeds(output)
        extra = [] if embed else [mf.data_hash(_sha256(partial))]
        context = c2pa.Context.from_dict(c2pa_config())
        with context, _builder(context, self.stamp, named, parent, digest, extra, facts) as builder, \
                _signer(self.credential, self.timestamp_url) as signer:
            if embed:
                with open(partial, "rb") as source, open(signed, "w+b") as destination:
                    builder.sign(signer, mf.mime_of(output), source, destination)
                    destination.flush()
                    os.fsync(destination.fileno())
                return ""
            builder.set_no_embed()
            manifest = builder.sign(signer, "application/c2pa", io.BytesIO(b""), io.BytesIO())
        sidecar = sidecar_of(partial)
        with open(sidecar, "wb") as handle:
            handle.write(manifest)
            handle.flush()
            os.fsync(handle.fileno())
        return (f"C2PA manifest in the sidecar {sidecar_of(output).name} ({output.suffix.lstrip('.').upper()} "
                "can't hold one; keep the two together)")


def _builder(context, stamp: mf.Stamp, output: Path, parent: Path, digest: str, extra: list,
             facts: mf.Facts = mf.Facts()):
    """A Builder with the target as the parent ingredient: from its bytes where c2pa reads the format (a
    manifest the target carries is kept as its history), else described by name and format."""
    import c2pa

    if mf.embeds(parent):
        definition = mf.definition(stamp, output, parent, digest, parent_from_stream=True, facts=facts)
        definition["assertions"] += extra
        builder = c2pa.Builder.from_json(definition, context=context)
        try:
            with open(parent, "rb") as stream:
                builder.add_ingredient(mf.ingredient(parent), mf.mime_of(parent), stream)
            return builder
        except c2pa.C2paError:
            builder.close()  # a target c2pa can't parse: described instead
    definition = mf.definition(stamp, output, parent, digest, parent_from_stream=False, facts=facts)
    definition["assertions"] += extra
    return c2pa.Builder.from_json(definition, context=context)


@contextlib.contextmanager
def _signer(credential: Credential, timestamp_url: str = ""):
    """A c2pa signer for `credential`; with a `timestamp_url` each signature gets an RFC 3161 time-stamp
    token from that authority (a network call per signature)."""
    import c2pa

    alg = getattr(c2pa.C2paSigningAlg, credential.algorithm.upper())
    signer = c2pa.Signer.from_info(c2pa.C2paSignerInfo(alg, credential.chain_pem, credential.key_pem,
                                                       timestamp_url or None))
    try:
        yield signer
    finally:
        signer.close()


def check_credential(credential: Credential, timestamp_url: str = "") -> None:
    """Sign a tiny in-memory image: the c2pa library's own checks of the certificate (EKU, chain, key)
    run before any work instead of failing every output; then, with a `timestamp_url`, once more with the
    time-stamp authority. Raises SettingsError naming the credential or the authority."""
    from PIL import Image

    c2pa = load_c2pa()

    from facefusion_batch.errors import SettingsError

    image = io.BytesIO()
    Image.new("RGB", (8, 8)).save(image, "PNG")
    stamp = mf.Stamp("check", (), "check", "0" * 64)
    definition = mf.definition(stamp, Path("check.png"), Path("check.png"), "0" * 64, False)
    try:
        _sign_probe(c2pa, credential, "", definition, image.getvalue())
    except c2pa.C2paError as exc:
        reason = one_line(str(exc).split(": ", 1)[-1])
        raise SettingsError(f"{credential.origin}: can't sign C2PA manifests with it ({reason}); the signing "
                            "certificate needs KeyUsage digitalSignature and a C2PA signing EKU (emailProtection, "
                            "documentSigning or C2PA claim signing), and must be issued by a CA, not self-signed") \
            from None
    if not timestamp_url:
        return
    try:
        _sign_probe(c2pa, credential, timestamp_url, definition, image.getvalue())
    except c2pa.C2paError as exc:
        reason = one_line(str(exc).split(": ", 1)[-1])
        raise SettingsError(f"c2pa_timestamp_url {timestamp_url}: no time-stamp from it ({reason}); check the URL "
                            "and that this machine reaches it, or leave c2pa_timestamp_url empty (signatures then "
                            "carry no trusted time)") from None


def _sign_probe(c2pa, credential: Credential, timestamp_url: str, definition: dict, png: bytes) -> None:
    context = c2pa.Context.from_dict(c2pa_config())
    with context, c2pa.Builder.from_json(definition, context=context) as builder, \
            _signer(credential, timestamp_url) as signer:
        builder.sign(signer, "image/png", io.BytesIO(png), io.BytesIO())


def _disk_full(exc: Exception) -> bool:
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return any(os.strerror(code) in str(exc) for code in (errno.ENOSPC, errno.EDQUOT))


def _signed_name(partial: Path) -> Path:
    """A second hidden name beside `partial` (`.clip.ffb-1.tmp.mp4` -> `.clip.ffb-1.sig.tmp.mp4`): it
    matches what a run's start-up clears, so a killed run's leftovers go too."""
    head, found, tail = partial.name.rpartition(".tmp")
    return partial.with_name(f"{head}.sig.tmp{tail}" if found else f".sig.{partial.name}")


def _final_name(name: str) -> str:
    """The output's own name for a hidden temp name (`.clip.ffb-123.tmp.mp4` -> `clip.mp4`)."""
    match = _TEMP.match(name)
    return match.group(1) + match.group(2) if match else name


def _sha256(path: Path) -> bytes:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.digest()

"""The C2PA signing credential: an organisation's certificate chain and key from the settings, or a local
signing CA and certificate created once under cache_path.

A local credential validates (the signature and the hashes check out) but a verifier shows its signer as
untrusted unless the local root (`c2pa/local-root.pem` in cache_path) is added to its trust anchors.
"""
from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from facefusion_batch.errors import SettingsError

LOCAL_DIR = "c2pa"
LOCAL_SIGNER = "local-signer.pem"  # end-entity certificate, root certificate and the end-entity's key
LOCAL_ROOT = "local-root.pem"
_LOCAL_YEARS = 10
# Extended key usages a C2PA signing certificate may carry (those of the C2PA trust list's configuration):
# emailProtection, documentSigning, timeStamping, OCSPSigning, Microsoft C2PA signing, C2PA claim signing.
# The c2pa library accepts only emailProtection unless told; signing and `ffb verify` both tell it.
SIGNING_EKUS = ("1.3.6.1.5.5.7.3.4", "1.3.6.1.5.5.7.3.36", "1.3.6.1.5.5.7.3.8", "1.3.6.1.5.5.7.3.9",
                "1.3.6.1.4.1.311.76.59.1.9", "1.3.6.1.4.1.62558.2.1")


@dataclass(frozen=True)
class Credential:
    """A signing certificate chain (end-entity first) and its private key, both PEM."""

    chain_pem: bytes
    key_pem: bytes
    algorithm: str  # c2pa signing algorithm name: es256, es384, es512, ps256, ed25519
    subject: str
    fingerprint: str  # sha256 of the end-entity certificate (DER), hex
    origin: str  # where it came from, for messages

    @property
    def local(self) -> bool:
        return self.origin.startswith("local")


def load(certificate: Path | None, private_key: Path | None, cache_path: Path) -> Credential:
    """The organisation's credential when both paths are given, else the local one (created on first use).
    A file that can't be read or used raises SettingsError naming it and the fix."""
    if certificate is not None and private_key is not None:
        chain = _read(certificate, "c2pa_certificate")
        key = _read(private_key, "c2pa_private_key")
        return from_pem(chain, key, f"c2pa_certificate {certificate}")
    return local_credential(cache_path)


def _read(path: Path, setting: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SettingsError(f"{path}: can't read the {setting} file ({exc.strerror}); pass a readable PEM "
                            f"file") from None


def from_pem(chain_pem: bytes, key_pem: bytes, origin: str) -> Credential:
    """Parse and check a PEM chain and key: certificates parse, the key is unencrypted and belongs to the
    first certificate, which is not a CA and is within its validity period."""
    from cryptography import x509
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    try:
        certificates = x509.load_pem_x509_certificates(chain_pem)
    except ValueError:
        raise SettingsError(f"{origin}: not a PEM certificate chain; pass the signing certificate (and its "
                            "intermediates) as PEM, signer first") from None
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except TypeError:
        raise SettingsError(f"{origin}: the private key is password-protected; pass an unencrypted PEM key "
                            "(e.g. openssl pkey -in KEY -out plain.pem)") from None
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise SettingsError(f"{origin}: the private key is not a readable PEM key ({exc})") from None
    leaf = certificates[0]
    public = serialization.PublicFormat.SubjectPublicKeyInfo
    if key.public_key().public_bytes(serialization.Encoding.DER, public) != \
            leaf.public_key().public_bytes(serialization.Encoding.DER, public):
        raise SettingsError(f"{origin}: the private key does not belong to the first certificate of the chain; "
                            "pass the key of the signing certificate, with that certificate first")
    now = datetime.datetime.now(datetime.timezone.utc)
    if not leaf.not_valid_before_utc <= now <= leaf.not_valid_after_utc:
        raise SettingsError(f"{origin}: the signing certificate is not valid now (valid "
                            f"{leaf.not_valid_before_utc:%Y-%m-%d} to {leaf.not_valid_after_utc:%Y-%m-%d})")
    if isinstance(key, ec.EllipticCurvePrivateKey):
        algorithm = {"secp256r1": "es256", "secp384r1": "es384", "secp521r1": "es512"}.get(key.curve.name)
    elif isinstance(key, rsa.RSAPrivateKey):
        algorithm = "ps256"
    elif isinstance(key, ed25519.Ed25519PrivateKey):
        algorithm = "ed25519"
    else:
        algorithm = None
    if algorithm is None:
        raise SettingsError(f"{origin}: unsupported key type for C2PA; use an EC P-256/P-384/P-521, RSA or "
                            "Ed25519 key")
    return Credential(chain_pem, key_pem, algorithm, leaf.subject.rfc4514_string(),
                      hashlib.sha256(leaf.public_bytes(serialization.Encoding.DER)).hexdigest(), origin)


def local_paths(cache_path: Path) -> tuple[Path, Path]:
    """(signer bundle, root certificate) of the local credential."""
    directory = cache_path / LOCAL_DIR
    return directory / LOCAL_SIGNER, directory / LOCAL_ROOT


def local_credential(cache_path: Path) -> Credential:
    """The local signing credential, created on first use. The bundle is written whole under a temp name and
    linked into place, so concurrent first runs agree on one credential."""
    bundle, root = local_paths(cache_path)
    if not bundle.is_file():
        try:
            bundle.parent.mkdir(parents=True, exist_ok=True)
            _create_bundle(bundle)
        except OSError as exc:
            raise SettingsError(f"{bundle.parent}: can't create the local C2PA signing certificate "
                                f"({exc.strerror}); set cache_path (--cache-path) to a writable directory, "
                                "pass --c2pa-certificate and --c2pa-private-key, or sign nothing with "
                                "--output-provenance metadata") from None
    text = _read(bundle, "local C2PA signer")
    damaged = f"{bundle}: the local C2PA signing certificate is damaged; delete it and run again (a new one is made)"
    split = text.find(b"-----BEGIN PRIVATE KEY-----")
    if split < 0:
        raise SettingsError(damaged)
    chain, key = text[:split], text[split:]
    try:
        credential = from_pem(chain, key, f"local C2PA signer {bundle}")
    except SettingsError as exc:
        raise SettingsError(f"{damaged} ({str(exc).split(': ', 1)[-1].split(';')[0]})") from None
    if not root.is_file():
        with contextlib.suppress(OSError):  # a read-only cache: signing only reads the bundle
            _write_new(root, _last_certificate(chain))
    return credential


def _last_certificate(chain: bytes) -> bytes:
    marker = b"-----BEGIN CERTIFICATE-----"
    return chain[chain.rindex(marker):]


def _write_new(path: Path, data: bytes) -> None:
    """Write `path` whole, unless it exists already (then keep the existing one)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)


def _create_bundle(bundle: Path) -> None:
    chain, key = make_local_chain("ffb local signing")
    _write_new(bundle, chain + key)  # mkstemp creates it 0600: the key stays private


def make_local_chain(organisation: str, years: int = _LOCAL_YEARS, eku: str = SIGNING_EKUS[0]
                     ) -> tuple[bytes, bytes]:
    """A P-256 root CA and an end-entity certificate it signs: (end-entity + root PEM, end-entity key PEM).
    The end-entity has KeyUsage digitalSignature and the EKU `eku`: by default emailProtection, which any
    C2PA verifier accepts, even one without the C2PA trust list's EKU configuration."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=365 * years)
    host = os.uname().nodename if hasattr(os, "uname") else "localhost"

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common),
                          x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation)])

    def usage(signing: bool) -> x509.KeyUsage:
        return x509.KeyUsage(digital_signature=signing, content_commitment=False, key_encipherment=False,
                             data_encipherment=False, key_agreement=False, key_cert_sign=not signing,
                             crl_sign=not signing, encipher_only=False, decipher_only=False)

    root_key = ec.generate_private_key(ec.SECP256R1())
    root_name = name(f"ffb local root ({host})")
    root = (x509.CertificateBuilder().subject_name(root_name).issuer_name(root_name)
            .public_key(root_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(usage(False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(root_key.public_key()), critical=False)
            .sign(root_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder().subject_name(name(f"ffb local signer ({host})")).issuer_name(root_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(usage(True), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.ObjectIdentifier(eku)]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(root_key.public_key()),
                           critical=False)
            .sign(root_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return leaf.public_bytes(pem) + root.public_bytes(pem), key_pem

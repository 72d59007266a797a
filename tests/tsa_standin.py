"""A local RFC 3161 time-stamp authority for tests: an HTTP server that answers a TimeStampReq with a
token it signs with its own certificate (EKU timeStamping), stating `gen_time` as the time of signing.

The tokens are real (CMS SignedData over a DER TSTInfo, ECDSA P-256 / SHA-256, with the signing-certificate
attribute); only the clock is the test's to set, so a signature can be shown to predate a certificate's
expiry without waiting for one. DER is written by hand: the few structures need no ASN.1 library.
"""
from __future__ import annotations

import datetime
import hashlib
import http.server
import threading
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_SIGNED_DATA = "1.2.840.113549.1.7.2"
_TST_INFO = "1.2.840.113549.1.9.16.1.4"
_CONTENT_TYPE = "1.2.840.113549.1.9.3"
_MESSAGE_DIGEST = "1.2.840.113549.1.9.4"
_SIGNING_TIME = "1.2.840.113549.1.9.5"
_SIGNING_CERTIFICATE_V2 = "1.2.840.113549.1.9.16.2.47"
_SHA256 = "2.16.840.1.101.3.4.2.1"
_ECDSA_SHA256 = "1.2.840.10045.4.3.2"
_POLICY = "1.3.6.1.4.1.4146.2.3"  # any policy id: the verifier only reads it


def _length(size: int) -> bytes:
    if size < 0x80:
        return bytes([size])
    raw = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def tlv(tag: int, body: bytes) -> bytes:
    return bytes([tag]) + _length(len(body)) + body


def seq(*parts: bytes) -> bytes:
    return tlv(0x30, b"".join(parts))


def set_of(*parts: bytes) -> bytes:
    return tlv(0x31, b"".join(sorted(parts)))


def integer(value: int) -> bytes:
    raw = value.to_bytes(max(1, (value.bit_length() + 8) // 8), "big", signed=True)
    return tlv(0x02, raw)


def oid(dotted: str) -> bytes:
    numbers = [int(n) for n in dotted.split(".")]
    body = bytes([numbers[0] * 40 + numbers[1]])
    for number in numbers[2:]:
        chunk = [number & 0x7F]
        number >>= 7
        while number:
            chunk.append(0x80 | (number & 0x7F))
            number >>= 7
        body += bytes(reversed(chunk))
    return tlv(0x06, body)


def octets(data: bytes) -> bytes:
    return tlv(0x04, data)


def explicit(number: int, body: bytes) -> bytes:
    return tlv(0xA0 | number, body)


def algorithm(dotted: str) -> bytes:
    return seq(oid(dotted))


def read_tlv(data: bytes, at: int = 0) -> tuple[int, bytes, int]:
    """(tag, the whole element's bytes, offset after it) of the DER element at `at`."""
    tag, size, head = data[at], data[at + 1], 2
    if size & 0x80:
        count = size & 0x7F
        size, head = int.from_bytes(data[at + 2:at + 2 + count], "big"), 2 + count
    return tag, data[at:at + head + size], at + head + size


def body_of(element: bytes) -> bytes:
    """A DER element's contents, without its tag and length."""
    size = element[1]
    return element[2 + (size & 0x7F if size & 0x80 else 0):]


def children(element: bytes) -> list[tuple[int, bytes]]:
    """The elements inside a constructed DER element."""
    _, _, end = read_tlv(element)
    size = element[1]
    at = 2 + (size & 0x7F if size & 0x80 else 0)
    found = []
    while at < end:
        tag, whole, at = read_tlv(element, at)
        found.append((tag, whole))
    return found


def _certificate(name: str, key, issuer_name: x509.Name, issuer_key, start, end, ca: bool) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name),
                         x509.NameAttribute(NameOID.ORGANIZATION_NAME, "ffb test TSA")])
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer_name or subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(end)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
    if issuer_key is not None:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=False, content_commitment=False, key_encipherment=False, data_encipherment=False,
            key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False),
            critical=True)
    if not ca:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), critical=True)
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
            key_agreement=False, key_cert_sign=False, crl_sign=False, encipher_only=False, decipher_only=False),
            critical=True)
    return builder.sign(issuer_key or key, hashes.SHA256())


@dataclass
class TimeStampAuthority:
    """Signs time-stamp tokens stating `gen_time`; `requests` counts the queries answered."""

    gen_time: datetime.datetime
    requests: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        start = self.gen_time - datetime.timedelta(days=3650)
        end = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=3650)
        root_key = ec.generate_private_key(ec.SECP256R1())
        self.root = _certificate("ffb test TSA root", root_key, None, None, start, end, ca=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.certificate = _certificate("ffb test TSA", self.key, self.root.subject, root_key, start, end, ca=False)

    def root_pem(self) -> str:
        return self.root.public_bytes(serialization.Encoding.PEM).decode()

    def respond(self, request: bytes) -> bytes:
        """The DER TimeStampResp for a DER TimeStampReq."""
        self.requests.append(request)
        fields = children(request)
        imprint = fields[1][1]
        nonce = next((whole for tag, whole in fields[2:] if tag == 0x02), b"")
        when = tlv(0x18, self.gen_time.strftime("%Y%m%d%H%M%SZ").encode())
        info = seq(integer(1), oid(_POLICY), imprint, integer(len(self.requests)), when, nonce)
        der = self.certificate.public_bytes(serialization.Encoding.DER)
        signed_attributes = [
            seq(oid(_CONTENT_TYPE), set_of(oid(_TST_INFO))),
            seq(oid(_SIGNING_TIME), set_of(tlv(0x17, self.gen_time.strftime("%y%m%d%H%M%SZ").encode()))),
            seq(oid(_MESSAGE_DIGEST), set_of(octets(hashlib.sha256(info).digest()))),
            seq(oid(_SIGNING_CERTIFICATE_V2), set_of(seq(seq(seq(octets(hashlib.sha256(der).digest())))))),
        ]
        attributes = set_of(*signed_attributes)  # signed as a SET, stored as [0] IMPLICIT
        signature = self.key.sign(attributes, ec.ECDSA(hashes.SHA256()))
        issuer = self.certificate.issuer.public_bytes()
        signer = seq(integer(1), seq(issuer, integer(self.certificate.serial_number)), algorithm(_SHA256),
                     tlv(0xA0, body_of(attributes)),
                     algorithm(_ECDSA_SHA256), octets(signature))
        certificates = [der, self.root.public_bytes(serialization.Encoding.DER)]  # always, asked or not
        signed_data = seq(integer(3), set_of(algorithm(_SHA256)),
                          seq(oid(_TST_INFO), explicit(0, octets(info))),
                          tlv(0xA0, b"".join(certificates)), set_of(signer))
        token = seq(oid(_SIGNED_DATA), explicit(0, signed_data))
        return seq(seq(integer(0)), token)


class _Handler(http.server.BaseHTTPRequestHandler):
    authority: TimeStampAuthority

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            reply = self.server.authority.respond(body)  # type: ignore[attr-defined]
        except (IndexError, ValueError):
            self.send_response(400)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/timestamp-reply")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


class TsaServer:
    """`with TsaServer(authority) as url:` serves `authority` on a free local port."""

    def __init__(self, authority: TimeStampAuthority) -> None:
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.authority = authority  # type: ignore[attr-defined]

    def __enter__(self) -> str:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}/tsa"

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def signing_chain(start: datetime.datetime, end: datetime.datetime) -> tuple[bytes, bytes]:
    """(leaf + root PEM, leaf key PEM): a C2PA signing certificate (EKU emailProtection) valid from `start`
    to `end` only, under a root of its own."""
    root_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    root = _certificate("ffb test signing root", root_key, None, None, start - datetime.timedelta(days=1),
                        end + datetime.timedelta(days=3650), ca=True)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ffb test signer"),
                         x509.NameAttribute(NameOID.ORGANIZATION_NAME, "ffb test")])
    leaf = (x509.CertificateBuilder().subject_name(subject).issuer_name(root.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.EMAIL_PROTECTION]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(root_key.public_key()), critical=False)
            .sign(root_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return (leaf.public_bytes(pem) + root.public_bytes(pem),
            key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))

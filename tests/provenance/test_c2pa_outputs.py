"""Signed C2PA content credentials on `ffb run` outputs, read back with c2pa's own Reader."""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
import subprocess
from pathlib import Path

import c2pa
import cv2
import numpy as np
import pytest

from conftest import decode_all, face_frame, make_clip, selected
from facefusion_batch.cli import main
from facefusion_batch.marking import DIGITAL_SOURCE_TYPE
from facefusion_batch.provenance.metadata import read_mark
from facefusion_batch.provenance import credentials
from facefusion_batch.provenance.manifest import SWAP_ASSERTION
from facefusion_batch.provenance.sign import sidecar_of
from facefusion_batch.video.ffmpeg import ffmpeg_binary

EMBEDDED = ("mp4", "mov", "m4v", "jpg", "png", "webp")
SIDECAR = ("webm", "mkv")


def run(args: list[str], capsys) -> tuple[int, dict]:
    code = main(["run", "--engine", "neural", "--json", "-q", *args])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip().startswith("{") else {}


def make_targets(directory: Path, kinds=EMBEDDED + SIDECAR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    targets = []
    for kind in kinds:
        path = directory / f"t_{kind}.{kind}"
        if kind in ("jpg", "png", "webp"):
            cv2.imwrite(str(path), face_frame())
        elif kind == "webm":
            make_clip(path, frames=4, extra=["-c:v", "libvpx-vp9", "-c:a", "libopus"])
        else:
            make_clip(path, frames=4)
        targets.append(path)
    return targets


def read(path: Path, anchors: str | None = None):
    config = {"verify": {"remote_manifest_fetch": False}}
    if anchors:
        config["trust"] = {"user_anchors": anchors}
    context = c2pa.Context.from_dict(config)
    mime = {".mp4": "video/mp4", ".mov": "video/quicktime", ".m4v": "video/x-m4v", ".jpg": "image/jpeg",
            ".png": "image/png", ".webp": "image/webp", ".webm": "video/webm", ".mkv": "video/x-matroska"}
    sidecar = sidecar_of(path)
    manifest = sidecar.read_bytes() if sidecar.is_file() else None
    return c2pa.Reader(mime[path.suffix], open(path, "rb"), manifest, context=context)


@pytest.fixture(scope="module")
def signed_outputs(tmp_path_factory, neural_models):
    """Every supported output format, made by one default `ffb run` (C2PA on by default) for the tests that
    read them (with the `env` fixture's settings); a test that changes an output puts its bytes back."""
    env = tmp_path_factory.mktemp("signed")
    source = env / "source.png"
    cv2.imwrite(str(source), face_frame())
    targets = make_targets(env / "in")
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        selected(patch, env, neural_models)
        code = main(["run", "--engine", "neural", "--json", "-q", "-s", str(source), "-t", str(env / "in"),
                     "-o", str(env / "out")])
    summary = json.loads(printed.getvalue())
    assert code == 0, summary
    return env, source, targets, summary


@contextlib.contextmanager
def restored(path: Path):
    """Whatever the block does to the file at `path`, its bytes are put back after it."""
    data = path.read_bytes()
    try:
        yield
    finally:
        path.write_bytes(data)


def test_every_format_is_signed_and_reads_back(signed_outputs):
    env, source_image, targets, summary = signed_outputs
    root = (env / "cache" / "c2pa" / "local-root.pem").read_text()
    for target in targets:
        out = env / "out" / target.name
        embedded = target.suffix.lstrip(".") in EMBEDDED
        assert sidecar_of(out).is_file() != embedded, out
        with read(out) as reader:
            assert reader.get_validation_state() == "Valid", out  # valid; the local signer isn't trusted
            failures = reader.get_validation_results()["activeManifest"].get("failure", [])
            assert [f["code"] for f in failures] == ["signingCredential.untrusted"]
            manifest = reader.get_active_manifest()
        with read(out, root) as reader:
            assert reader.get_validation_state() == "Trusted", out
        actions = next(a for a in manifest["assertions"] if a["label"].startswith("c2pa.actions"))["data"]["actions"]
        assert [a["action"] for a in actions] == ["c2pa.opened", "c2pa.edited"]
        assert actions[1]["digitalSourceType"] == DIGITAL_SOURCE_TYPE
        agent = actions[1]["softwareAgent"]["name"]
        assert agent.startswith("ffb ") and "neural engine" in agent and "inswapper_128" in agent
        parents = [i for i in manifest["ingredients"] if i["relationship"] == "parentOf"]
        assert [p["title"] for p in parents] == [target.name]
        assert manifest["claim_generator_info"][0]["name"] == "ffb"
        swap = next(a for a in manifest["assertions"] if a["label"] == SWAP_ASSERTION)["data"]
        assert swap["source_face_sha256"] == hashlib.sha256(source_image.read_bytes()).hexdigest()
        assert swap["target_sha256"] == hashlib.sha256(target.read_bytes()).hexdigest()
        assert swap["swapper_model"] == "inswapper_128"
        assert "thumbnail" not in manifest and all("thumbnail" not in i for i in manifest["ingredients"])
        assert read_mark(out) is not None, "the metadata mark stays alongside the manifest"
    notes = {Path(o["target"]).suffix: o["reason"] for o in summary["outcomes"]}
    assert "sidecar t_webm.webm.c2pa" in notes[".webm"] and "sidecar t_mkv.mkv.c2pa" in notes[".mkv"]
    assert not [p for p in (env / "out").iterdir() if p.name.startswith(".") and p.name != ".ffb"], \
        "no temp files left"


def test_verify_reports_valid_then_tampered_mp4_invalid(signed_outputs, capsys):
    env, *_ = signed_outputs
    out = env / "out" / "t_mp4.mp4"
    assert main(["verify", "--json", str(env / "out")]) == 0
    findings = json.loads(capsys.readouterr().out)
    assert len(findings) == len(EMBEDDED + SIDECAR), "a directory is searched; sidecars and .ffb are skipped"
    mp4 = next(f for f in findings if f["file"].endswith("t_mp4.mp4"))
    assert mp4["c2pa"] == "embedded" and mp4["validation"] == "valid (signer untrusted)"
    assert mp4["metadata_mark"] and mp4["model"] == "inswapper_128"
    assert mp4["digital_source_type"] == DIGITAL_SOURCE_TYPE
    assert mp4["journal"]["status"] == "done" and mp4["journal"]["output_unchanged"]
    webm = next(f for f in findings if f["file"].endswith("t_webm.webm"))
    assert webm["c2pa"] == "sidecar" and webm["ok"]

    root = env / "cache" / "c2pa" / "local-root.pem"
    assert main(["verify", "--json", "--trust", str(root), str(out)]) == 0
    assert json.loads(capsys.readouterr().out)[0]["validation"] == "trusted"

    with restored(out):
        data = bytearray(out.read_bytes())
        data[data.index(b"mdat") + 64] ^= 0xFF  # one byte of the media data
        out.write_bytes(bytes(data))
        assert main(["verify", "--json", str(out)]) == 1
    finding = json.loads(capsys.readouterr().out)[0]
    assert finding["validation"] == "invalid" and not finding["ok"]
    assert any(p.startswith("assertion.bmffHash.mismatch") for p in finding["problems"])
    assert finding["journal"]["output_unchanged"] is False


def test_tampered_sidecar_output_is_invalid(signed_outputs, capsys):
    env, *_ = signed_outputs
    out = env / "out" / "t_mkv.mkv"
    with restored(out):
        data = bytearray(out.read_bytes())
        data[len(data) // 2] ^= 0xFF
        out.write_bytes(bytes(data))
        assert main(["verify", str(out)]) == 1
    text = capsys.readouterr().out
    assert "invalid" in text and "assertion.dataHash.mismatch" in text


def test_signing_leaves_frames_and_audio_unchanged(env, source_image, capsys):
    """Frames and audio of the signed output equal those of the same run with metadata marking only."""
    (env / "in").mkdir()
    clip = make_clip(env / "in" / "a.mp4", frames=12)
    for mode in ("c2pa", "metadata"):
        assert run(["-s", str(source_image), "-t", str(clip), "-o", str(env / mode), "--output-provenance", mode],
                   capsys)[0] == 0
    signed, plain = env / "c2pa" / "a.mp4", env / "metadata" / "a.mp4"
    assert np.array_equal(decode_all(signed), decode_all(plain))
    assert decode_all(signed).shape[0] == 12

    def audio(path: Path) -> bytes:
        run_ = subprocess.run([ffmpeg_binary(), "-v", "error", "-i", str(path), "-map", "0:a:0", "-f", "s16le", "-"],
                              capture_output=True, check=True)
        assert run_.stderr == b"", "decodes without errors"
        return run_.stdout

    assert audio(signed) == audio(plain) and len(audio(signed)) > 0
    with c2pa.Reader("video/mp4", open(signed, "rb")) as reader:
        assert reader.get_active_manifest() is not None
    assert c2pa.Reader.try_create("video/mp4", open(plain, "rb")) is None


@pytest.mark.parametrize("eku", ["1.3.6.1.5.5.7.3.4", "1.3.6.1.5.5.7.3.36", "1.3.6.1.4.1.62558.2.1"],
                         ids=["emailProtection", "documentSigning", "c2paClaimSigning"])
def test_organisation_certificate_is_used(env, source_image, capsys, eku):
    chain, key = credentials.make_local_chain("Example Newsroom", eku=eku)
    (env / "org.pem").write_bytes(chain)
    (env / "org.key").write_bytes(key)
    (env / "root.pem").write_bytes(chain[chain.rindex(b"-----BEGIN CERTIFICATE-----"):])
    image = env / "in" / "p.jpg"
    image.parent.mkdir()
    cv2.imwrite(str(image), face_frame())
    assert run(["-s", str(source_image), "-t", str(image), "-o", str(env / "out"),
                "--c2pa-certificate", str(env / "org.pem"), "--c2pa-private-key", str(env / "org.key")],
               capsys)[0] == 0
    if eku == "1.3.6.1.5.5.7.3.4":  # the others need the C2PA EKU configuration a plain Reader lacks
        with read(env / "out" / "p.jpg", (env / "root.pem").read_text()) as reader:
            assert reader.get_validation_state() == "Trusted"
            assert reader.get_active_manifest()["signature_info"]["issuer"] == "Example Newsroom"
    assert main(["verify", "--json", "--trust", str(env / "root.pem"), str(env / "out" / "p.jpg")]) == 0
    finding = json.loads(capsys.readouterr().out)[0]
    assert finding["validation"] == "trusted" and "Example Newsroom" in finding["signer"]
    assert not (env / "cache" / "c2pa").exists(), "no local credential is made when one is given"


def fail_outputs(monkeypatch, message: str) -> None:
    """Make signing fail for every output, not for the start-up check (which signs a tiny PNG in memory)."""
    sign = c2pa.Builder.sign

    def failing(self, signer, fmt, *args, **kwargs):
        if fmt == "image/png" and not hasattr(args[0], "name"):
            return sign(self, signer, fmt, *args, **kwargs)
        raise c2pa.C2paError(message)

    monkeypatch.setattr(c2pa.Builder, "sign", failing)


def _self_signed_without_eku() -> tuple[bytes, bytes]:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "no eku")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def _broken(kind: str) -> tuple[bytes, bytes]:
    chain, key = credentials.make_local_chain("Broken")
    other_chain, other_key = credentials.make_local_chain("Other")
    return {"garbage": (b"not a certificate\n", key), "wrong key": (chain, other_key),
            "key garbage": (chain, b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
            "no eku": _self_signed_without_eku(),
            "root only": (other_chain[other_chain.rindex(b"-----BEGIN CERTIFICATE-----"):], other_key)}[kind]


@pytest.mark.parametrize("kind", ["garbage", "wrong key", "key garbage", "no eku", "root only"])
def test_broken_certificate_is_one_error_before_any_work(env, source_image, capsys, kind):
    chain, key = _broken(kind)
    (env / "c.pem").write_bytes(chain)
    (env / "k.pem").write_bytes(key)
    clip = make_clip(env / "a.mp4", frames=3)
    code = main(["run", "--engine", "neural", "-q", "-s", str(source_image), "-t", str(clip), "-o",
                 str(env / "out"), "--c2pa-certificate", str(env / "c.pem"), "--c2pa-private-key", str(env / "k.pem")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("ffb: error:") and "c.pem" in err, err
    assert not (env / "out").exists(), "nothing started: no output tree, no lock, no journal"


def test_certificate_without_key_is_a_settings_error(env, source_image, capsys):
    chain, _ = credentials.make_local_chain("Half")
    (env / "c.pem").write_bytes(chain)
    assert main(["run", "-s", str(source_image), "-t", str(env), "--c2pa-certificate", str(env / "c.pem")]) == 2
    assert "c2pa_private_key" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["mp4", "webm", "jpg"])
def test_signing_failure_leaves_nothing_at_the_output(env, source_image, capsys, monkeypatch, kind):
    target = make_targets(env / "in", (kind,))[0]
    fail_outputs(monkeypatch, "Signature: simulated signer failure")
    code, summary = run(["-s", str(source_image), "-t", str(target), "-o", str(env / "out")], capsys)
    assert code == 1
    outcome = summary["outcomes"][0]
    assert outcome["status"] == "failed" and "C2PA signing failed" in outcome["reason"]
    assert "simulated signer failure" in outcome["reason"]
    assert [p.name for p in (env / "out").iterdir()] == [".ffb"], "no output, no sidecar, no temp file"


def test_signing_failure_can_fall_back_to_metadata(env, source_image, capsys, monkeypatch):
    target = make_targets(env / "in", ("mp4",))[0]
    monkeypatch.setenv("FFB_C2PA_ON_FAILURE", "metadata")
    fail_outputs(monkeypatch, "boom")
    code, summary = run(["-s", str(source_image), "-t", str(target), "-o", str(env / "out")], capsys)
    assert code == 0
    assert "warning: C2PA signing failed" in summary["outcomes"][0]["reason"]
    out = env / "out" / target.name
    assert read_mark(out) is not None
    assert c2pa.Reader.try_create("video/mp4", open(out, "rb")) is None


def test_metadata_and_off_modes(env, source_image, capsys):
    target = make_targets(env / "in", ("webm",))[0]
    assert run(["-s", str(source_image), "-t", str(target), "-o", str(env / "m"), "--output-provenance",
                "metadata"], capsys)[0] == 0
    assert read_mark(env / "m" / target.name) is not None and not sidecar_of(env / "m" / target.name).exists()
    assert run(["-s", str(source_image), "-t", str(target), "-o", str(env / "n"), "--no-marking"], capsys)[0] == 0
    assert read_mark(env / "n" / target.name) is None and not sidecar_of(env / "n" / target.name).exists()


def test_provenance_settings_are_in_the_journal_key(env, source_image, capsys):
    target = make_targets(env / "in", ("jpg",))[0]
    args = ["-s", str(source_image), "-t", str(target), "-o", str(env / "out")]
    assert run(args, capsys)[1]["counts"]["done"] == 1
    assert run(args, capsys)[1]["counts"]["skipped"] == 1
    assert run([*args, "--output-provenance", "metadata"], capsys)[1]["counts"]["done"] == 1
    assert run([*args, "--output-provenance", "metadata", "--visible-label", "AI"], capsys)[1]["counts"]["done"] == 1
    assert c2pa.Reader.try_create("image/jpeg", open(env / "out" / target.name, "rb")) is None


def test_verify_without_manifest_and_missing_path(env, capsys):
    plain = env / "plain.png"
    cv2.imwrite(str(plain), face_frame())
    assert main(["verify", "--json", str(plain)]) == 0
    finding = json.loads(capsys.readouterr().out)[0]
    assert finding["c2pa"] == "none" and not finding["metadata_mark"] and finding["journal"] is None
    assert main(["verify", str(env / "nope.mp4")]) == 2
    assert "nope.mp4" in capsys.readouterr().err
    (env / "bad.pem").write_text("nothing")
    assert main(["verify", "--trust", str(env / "bad.pem"), str(plain)]) == 2

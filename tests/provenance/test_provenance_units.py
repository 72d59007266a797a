"""Visible label, local credential, sidecar placement, manifest definition."""
from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from conftest import face_frame
from facefusion_batch.cli import main
from facefusion_batch.provenance import credentials
from facefusion_batch.provenance.label import VisibleLabel
from facefusion_batch.provenance.sign import _final_name, place, sidecar_of


@pytest.mark.parametrize("position", ["bottom-right", "bottom-left", "top-right", "top-left"])
@pytest.mark.parametrize("size", [(1080, 1920), (272, 480), (2160, 3840)])
def test_label_changes_pixels_only_in_its_corner(position, size):
    height, width = size
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    drawn = VisibleLabel("AI-generated", position, 0.03, 0.8).draw(frame.copy())
    ys, xs = np.nonzero(np.any(drawn != frame, axis=2))
    assert len(ys) > 0
    top, left = position.startswith("top"), position.endswith("left")
    assert (ys.max() < height * 0.12) if top else (ys.min() > height * 0.88), "only the label's rows change"
    assert (xs.max() < width * 0.5) if left else (xs.min() > width * 0.5), "only the label's columns change"
    assert ys.max() - ys.min() + 1 < height * 0.1  # small: about 3 % of the height plus padding


def test_label_is_legible_text_on_a_dark_box():
    frame = np.full((360, 640, 3), 128, np.uint8)
    drawn = VisibleLabel("AI-generated", "bottom-right", 0.05, 1.0).draw(frame.copy())
    region = drawn[np.any(drawn != frame, axis=2)]
    assert region.min() < 80 and region.max() > 220, "dark backdrop and bright glyphs"
    grey = np.unique(region[:, 0])
    assert len(grey) > 10, "anti-aliased: intermediate grey levels along the glyph edges"


def test_label_opacity_and_readonly_frames():
    frame = np.full((200, 300, 3), 200, np.uint8)
    frame.flags.writeable = False
    faint = VisibleLabel("AI", opacity=0.1).draw(frame)
    strong = VisibleLabel("AI", opacity=1.0).draw(frame)
    assert np.abs(faint.astype(int) - 200).max() < np.abs(strong.astype(int) - 200).max()
    assert (frame == 200).all(), "a read-only frame is copied, not written"


def test_label_draws_on_run_outputs(env, source_image, capsys):
    image = env / "p.png"
    cv2.imwrite(str(image), face_frame())
    for name, extra in (("plain", []), ("label", ["--visible-label", "AI-generated", "--visible-label-position",
                                                  "top-left"])):
        assert main(["run", "--engine", "neural", "-q", "-s", str(source_image), "-t", str(image), "-o",
                     str(env / name), *extra]) == 0
    plain, label = cv2.imread(str(env / "plain" / "p.png")), cv2.imread(str(env / "label" / "p.png"))
    ys, xs = np.nonzero(np.any(plain != label, axis=2))
    assert len(ys) > 50
    assert ys.max() < plain.shape[0] * 0.15 and xs.max() < plain.shape[1] * 0.5


def test_label_and_no_marking_conflict(env, source_image, capsys):
    assert main(["run", "-s", str(source_image), "-t", str(env), "--no-marking", "--visible-label", "AI"]) == 2
    assert "visible_label" in capsys.readouterr().err


def test_local_credential_is_made_once_and_private(tmp_path):
    first = credentials.local_credential(tmp_path)
    again = credentials.local_credential(tmp_path)
    assert first.fingerprint == again.fingerprint and first.algorithm == "es256" and first.local
    bundle, root = credentials.local_paths(tmp_path)
    assert stat.S_IMODE(bundle.stat().st_mode) == 0o600
    assert root.read_bytes() in first.chain_pem


def test_concurrent_first_runs_agree_on_one_local_credential(tmp_path):
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(credentials.local_credential(tmp_path).fingerprint))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1 and len(results) == 4
    assert [p.name for p in (tmp_path / "c2pa").iterdir() if p.name.startswith(".")] == []


def test_place_moves_the_sidecar_first_and_drops_a_stale_one(tmp_path):
    staged, output = tmp_path / ".a.ffb-ray-x.tmp.webm", tmp_path / "a.webm"
    staged.write_bytes(b"video")
    sidecar_of(staged).write_bytes(b"manifest")
    place(staged, output)
    assert output.read_bytes() == b"video" and sidecar_of(output).read_bytes() == b"manifest"
    assert sidecar_of(output).name == "a.webm.c2pa"
    staged.write_bytes(b"video 2")  # a new output without a manifest: the old one must not stay beside it
    place(staged, output)
    assert not sidecar_of(output).exists() and output.read_bytes() == b"video 2"


def test_signed_temp_name_is_cleared_by_a_later_run(tmp_path):
    from facefusion_batch.media import temp_name
    from facefusion_batch.provenance.sign import _signed_name

    for name in ("clip.mp4", "a.tmp.b.mp4", "x" * 250 + ".jpg"):
        partial = temp_name(tmp_path / name)
        signed = _signed_name(partial)
        assert signed != partial and signed.parent == partial.parent and signed.suffix == partial.suffix
        assert signed.name.startswith(".") and ".ffb-" in signed.name and signed.match(".*.tmp*")
        assert len(signed.name.encode()) <= 255


def test_final_name_of_temp_names():
    assert _final_name(".clip.ffb-123.tmp.mp4") == "clip.mp4"
    assert _final_name(".my.clip.ffb-ray-ab12-3.tmp.webm") == "my.clip.webm"
    assert _final_name("clip.mp4") == "clip.mp4"


def test_encrypted_key_is_refused_with_the_fix(tmp_path):
    from cryptography.hazmat.primitives import serialization

    chain, key = credentials.make_local_chain("Enc")
    loaded = serialization.load_pem_private_key(key, None)
    encrypted = loaded.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.BestAvailableEncryption(b"secret"))
    with pytest.raises(Exception, match="password-protected"):
        credentials.from_pem(chain, encrypted, "test")


def test_damaged_local_credential_says_delete_it(tmp_path, env, source_image, capsys):
    bundle, _ = credentials.local_paths(tmp_path / "cache")
    credentials.local_credential(tmp_path / "cache")
    bundle.write_bytes(bundle.read_bytes()[:300] + b"\n-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    assert main(["run", "-s", str(source_image), "-t", str(env), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "damaged; delete it and run again" in err and str(bundle) in err and len(err.splitlines()) == 1


def test_unwritable_cache_is_one_error(tmp_path, source_image, capsys, monkeypatch):
    (tmp_path / "file").write_text("a file where the cache directory should be")
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "file" / "cache"))
    assert main(["run", "-s", str(source_image), "-t", str(tmp_path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    # the path settings are checked first (before the signing certificate is made): one line naming cache_path
    assert err.startswith(f"ffb: error: cache_path {tmp_path / 'file' / 'cache'}: ") and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_missing_c2pa_library_is_one_error_naming_the_fix(env, source_image, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "c2pa", None)  # import c2pa raises ImportError
    assert main(["run", "-s", str(source_image), "-t", str(env), "-o", str(env / "out")]) == 2
    err = capsys.readouterr().err
    assert "pip install c2pa-python" in err and "output_provenance = metadata" in err and len(err.splitlines()) == 1

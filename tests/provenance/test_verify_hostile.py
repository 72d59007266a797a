"""`ffb verify` on files that are broken, hostile or not what their name says: a clear finding each, no
hang, and a failing exit only for a file that claims a manifest that does not validate."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import cv2
import pytest

from conftest import face_frame, make_clip
from facefusion_batch.cli import main
from facefusion_batch.marking import marking_tags
from facefusion_batch.provenance import credentials
from facefusion_batch.provenance.manifest import Stamp
from facefusion_batch.provenance.sign import Marker, sidecar_of


@pytest.fixture
def signed(tmp_path) -> dict[str, Path]:
    """A signed JPEG, MP4 and WebM (with its sidecar), made by Marker.place as a run would."""
    marker = Marker("c2pa", marking_tags("neural", ["inswapper_128"]),
                    Stamp("neural", ("inswapper_128",), "inswapper_128", "0" * 64),
                    credentials.local_credential(tmp_path / "cache"))
    originals = {"jpg": tmp_path / "o.jpg", "mp4": tmp_path / "o.mp4", "webm": tmp_path / "o.webm"}
    cv2.imwrite(str(originals["jpg"]), face_frame())
    make_clip(originals["mp4"], frames=3)
    make_clip(originals["webm"], frames=3, extra=["-c:v", "libvpx-vp9", "-c:a", "libopus"])
    out = {}
    for kind, original in originals.items():
        partial = tmp_path / f".s.ffb-1.tmp.{kind}"
        shutil.copyfile(original, partial)
        out[kind] = tmp_path / f"s.{kind}"
        marker.place(partial, out[kind], parent=original)
    return out


def verify(paths: list[Path], capsys) -> tuple[int, list[dict]]:
    code = main(["verify", "--json", *map(str, paths)])
    return code, json.loads(capsys.readouterr().out)


def test_signed_files_pass(signed, capsys):
    code, findings = verify(list(signed.values()), capsys)
    assert code == 0 and [f["validation"] for f in findings] == ["valid (signer untrusted)"] * 3


def test_empty_and_garbage_files_claim_nothing(tmp_path, capsys):
    (tmp_path / "empty.mp4").write_bytes(b"")
    (tmp_path / "garbage.jpg").write_bytes(b"not an image at all")
    (tmp_path / "text.png").write_text("hello")
    code, findings = verify([tmp_path / "empty.mp4", tmp_path / "garbage.jpg", tmp_path / "text.png"], capsys)
    assert code == 0
    assert all(f["c2pa"] == "none" and f["ok"] for f in findings)


@pytest.mark.parametrize("kind", ["jpg", "mp4"])
def test_truncated_signed_file_fails(signed, capsys, kind):
    data = signed[kind].read_bytes()
    signed[kind].write_bytes(data[: len(data) * 2 // 3])
    code, findings = verify([signed[kind]], capsys)
    assert code == 1 and findings[0]["validation"] == "invalid" and findings[0]["problems"]


def test_garbage_or_swapped_sidecar_fails(signed, tmp_path, capsys):
    sidecar_of(signed["webm"]).write_bytes(b"junk")
    code, findings = verify([signed["webm"]], capsys)
    assert code == 1 and findings[0]["c2pa"] == "sidecar" and "unreadable manifest (damaged)" in findings[0]["problems"][0]
    other = tmp_path / "other.webm"
    make_clip(other, frames=2, extra=["-c:v", "libvpx-vp9", "-c:a", "libopus"])
    shutil.copyfile(sidecar_of(signed["webm"]).with_name("s.webm.c2pa"), sidecar_of(other))
    code, findings = verify([other], capsys)
    assert code == 1, "a manifest of another file does not validate this one"


def test_manifest_moved_to_another_file_fails(signed, tmp_path, capsys):
    """An embedded manifest copied into another image's bytes does not bind to them."""
    other = tmp_path / "other.jpg"
    image = face_frame()
    image[:50] = 0
    cv2.imwrite(str(other), image)
    data = signed["jpg"].read_bytes()
    app11 = data.index(b"\xff\xeb")  # the JUMBF segment c2pa writes into JPEG
    end = app11
    while data[end:end + 2] == b"\xff\xeb":
        end += 2 + int.from_bytes(data[end + 2:end + 4], "big")
    target = other.read_bytes()
    other.write_bytes(target[:2] + data[app11:end] + target[2:])
    code, findings = verify([other], capsys)
    assert code == 1 and findings[0]["validation"] == "invalid"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_does_not_hang(tmp_path, capsys):
    fifo = tmp_path / "pipe.mp4"
    os.mkfifo(fifo)
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "d" / "in_dir.mp4")
    code, findings = verify([fifo, tmp_path / "d"], capsys)
    assert code == 0 and len(findings) == 1, "a FIFO found in a directory is skipped"
    assert findings[0]["problems"] == ["not a regular file; skipped"]


def test_names_are_printed_literally(signed, capsys):
    odd = signed["jpg"].with_name("[bold red]x\u200b.jpg")
    shutil.copyfile(signed["jpg"], odd)
    assert main(["verify", str(odd)]) == 0
    assert "[bold red]x" in capsys.readouterr().out


def test_a_signed_target_keeps_its_manifest_as_history(signed, tmp_path, capsys):
    """Swapping into an output that already carries a manifest chains the two (the target's manifest is
    the parent ingredient's), and the result validates."""
    import c2pa

    marker = Marker("c2pa", {}, Stamp("offline", ("ffb_classic_swap",), "ffb_classic_swap", "1" * 64),
                    credentials.local_credential(tmp_path / "cache"))
    partial = tmp_path / ".again.ffb-2.tmp.jpg"
    shutil.copyfile(signed["jpg"], partial)
    marker.place(partial, tmp_path / "again.jpg", parent=signed["jpg"])
    with c2pa.Reader("image/jpeg", open(tmp_path / "again.jpg", "rb")) as reader:
        store = json.loads(reader.json())
        parent = reader.get_active_manifest()["ingredients"][0]
    assert len(store["manifests"]) == 2 and parent["active_manifest"] in store["manifests"]
    code, findings = verify([tmp_path / "again.jpg"], capsys)
    assert code == 0 and findings[0]["model"] == "ffb_classic_swap"

"""Provenance under faults (issue 26, class 4): a read-only cache, damaged manifests, the marks of AVI and
GIF outputs, a time-stamp authority; and `ffb verify` on an untouched copy of an output tree (issue 23)."""
from __future__ import annotations

import datetime
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import cv2
import pytest

from conftest import face_frame, make_clip
from hostile_media import jpeg_with_app11, jumbf_app11, mp4_with_uuid_box, png_with_chunk, webp_with_chunk
from tsa_standin import TimeStampAuthority, TsaServer, signing_chain
from facefusion_batch import settings as settings_module
from facefusion_batch.cli import main
from facefusion_batch.errors import MediaError
from facefusion_batch.marking import marking_tags
from facefusion_batch.provenance import credentials
from facefusion_batch.provenance.claims import C2PA_UUID, manifest_claim
from facefusion_batch.provenance.credentials import Credential
from facefusion_batch.provenance.manifest import Stamp
from facefusion_batch.provenance.sign import Marker

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "examples" / "source.jpg"


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """The offline engine, cache and temp inside the tmp dir."""
    for name, value in (("CACHE_PATH", tmp_path / "cache"), ("MODELS_PATH", tmp_path / "no-models"),
                        ("TEMP_PATH", tmp_path / "tmp"), ("ENGINE", "offline")):
        monkeypatch.setenv(f"FFB_{name}", str(value))
    return tmp_path


def _verify(paths: list[Path], capsys) -> tuple[int, list[dict]]:
    code = main(["verify", "--json", *map(str, paths)])
    out = capsys.readouterr().out
    documents = json.loads(out) if out.lstrip().startswith("[") else [json.loads(line) for line in out.splitlines()
                                                                        if line.strip()]
    return code, documents


def _run_read_only(directory: Path, args: list[str]) -> subprocess.CompletedProcess:
    """`ffb ARGS` in a subprocess that can't write to `directory`: a read-only bind mount of it in a mount
    namespace of its own when root (whom permissions don't stop), else its permission bits."""
    command = [sys.executable, "-m", "facefusion_batch", *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [directory, *directory.rglob("*")] if p.is_dir()}
        for path in modes:
            path.chmod(0o555)
        try:
            return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
    if shutil.which("unshare") is None:
        pytest.skip("root, and no unshare(1) to make a read-only mount")
    wrapped = ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(directory), *command]
    proc = subprocess.run(wrapped, capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode != 0 and ("mount:" in proc.stderr or "unshare:" in proc.stderr):
        pytest.skip(f"root, and no read-only mount here: {proc.stderr.strip()[:200]}")
    return proc


# --- (a) a read-only cache -------------------------------------------------------------------------------

def test_read_only_cache_without_credential_names_flags_run_accepts(offline, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    image = tmp_path / "in.jpg"
    cv2.imwrite(str(image), face_frame())
    proc = _run_read_only(cache, ["run", "-s", str(SOURCE), "-t", str(image), "-o", str(tmp_path / "out")])
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1 and "can't create the local C2PA signing certificate" in line
    assert "--cache-path" in line and "--c2pa-certificate" in line and "--output-provenance metadata" in line
    # every flag the advice names is one `ffb run` takes
    assert main(["run", "--cache-path", str(tmp_path / "elsewhere"), "--output-provenance", "metadata",
                 "--print-settings", "--json"]) == 0
    assert not (tmp_path / "out").exists()


def test_read_only_cache_holding_the_credential_signs(offline, tmp_path, capsys):
    cache = tmp_path / "cache"
    credentials.local_credential(cache)  # made by an earlier run, before the cache was made read-only
    image = tmp_path / "in.jpg"
    cv2.imwrite(str(image), face_frame())
    out = tmp_path / "out"
    proc = _run_read_only(cache, ["run", "-q", "--json", "-s", str(SOURCE), "-t", str(image), "-o", str(out)])
    assert proc.returncode == 0, proc.stderr
    code, findings = _verify([out / "in.jpg"], capsys)
    assert code == 0 and findings[0]["c2pa"] == "embedded"
    assert findings[0]["validation"] == "valid (signer untrusted)" and findings[0]["metadata_mark"]


@pytest.mark.parametrize("name", sorted(settings_module._DIRECTORIES))
def test_every_directory_settings_advice_names_a_flag_run_takes(offline, tmp_path, capsys, monkeypatch, name):
    (tmp_path / "file").write_text("a file where a directory should be")
    monkeypatch.setenv(f"FFB_{name.upper()}", str(tmp_path / "file"))
    image = tmp_path / "in.jpg"
    cv2.imwrite(str(image), face_frame())
    assert main(["run", "-s", str(SOURCE), "-t", str(image), "-o", str(tmp_path / "out")]) == 2
    flag = f"--{name.replace('_', '-')}"
    assert flag in capsys.readouterr().err
    monkeypatch.delenv(f"FFB_{name.upper()}")
    assert main(["run", flag, str(tmp_path / "d"), "--print-settings", "--json"]) == 0


# --- (b) data that claims to be a manifest and does not parse --------------------------------------------

@pytest.mark.parametrize("build", [
    lambda d: jpeg_with_app11(d / "app11_random.jpg", os.urandom(300)),  # the examples
    lambda d: mp4_with_uuid_box(d / "uuid_random.mp4", C2PA_UUID + os.urandom(400)),
    lambda d: jpeg_with_app11(d / "jumbf_c2pa_garbled.jpg", jumbf_app11(b"c2pa", os.urandom(300))),  # labelled c2pa, no store
    lambda d: png_with_chunk(d / "cabx_random.png", b"caBX", os.urandom(300)),
    lambda d: webp_with_chunk(d / "c2pa_chunk_random.webp", os.urandom(300)),
], ids=["jpeg-app11", "mp4-uuid", "jpeg-jumbf-c2pa", "png-cabx", "webp-c2pa-chunk"])
def test_a_manifest_that_does_not_parse_is_damaged_not_absent(tmp_path, capsys, build):
    path = build(tmp_path)
    code, findings = _verify([path], capsys)
    assert code == 1, findings
    assert findings[0]["c2pa"] == "embedded" and findings[0]["validation"] == "invalid"
    assert "damaged" in findings[0]["problems"][0]


def test_jumbf_of_another_owner_and_plain_files_claim_nothing(tmp_path, capsys):
    other = jpeg_with_app11(tmp_path / "jpeg360.jpg", jumbf_app11(b"jpeg360", os.urandom(100)))
    plain = [jpeg_with_app11(tmp_path / "plain.jpg"), make_clip(tmp_path / "plain.mp4", frames=2),
             png_with_chunk(tmp_path / "text.png", b"tEXt", b"Comment\0hello")]
    assert manifest_claim(other) is None and all(manifest_claim(p) is None for p in plain)
    code, findings = _verify([other, *plain], capsys)
    assert code == 0 and [f["c2pa"] for f in findings] == ["none"] * 4


# --- (c) the metadata mark of every output format ---------------------------------------------------------

def _animated_gif(path: Path) -> Path:
    from PIL import Image

    frames = [Image.fromarray(cv2.cvtColor(face_frame(), cv2.COLOR_BGR2RGB)).quantize(255) for _ in range(3)]
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=80, loop=0)
    return path


@pytest.mark.parametrize("mode", ["c2pa", "metadata"])
def test_avi_and_gif_outputs_show_their_mark(offline, tmp_path, capsys, mode):
    targets = tmp_path / "in"
    targets.mkdir()
    make_clip(targets / "clip.avi", frames=3, extra=["-c:v", "mpeg4", "-c:a", "libmp3lame"])
    _animated_gif(targets / "anim.gif")
    from PIL import Image

    Image.fromarray(cv2.cvtColor(face_frame(), cv2.COLOR_BGR2RGB)).quantize(255).save(targets / "still.gif")
    out = tmp_path / "out"
    assert main(["run", "-q", "--json", "--output-provenance", mode, "-s", str(SOURCE), "-t", str(targets),
                 "-o", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert {o["status"] for o in summary["outcomes"]} == {"done"}
    code, findings = _verify([out / "clip.avi", out / "anim.gif", out / "still.gif"], capsys)
    assert code == 0
    assert [f["metadata_mark"] for f in findings] == [True, True, True]


# --- (d) an RFC 3161 time-stamp authority -------------------------------------------------------------------

class _Tsa(http.server.BaseHTTPRequestHandler):
    """Records each request and answers with something that is no time-stamp response."""

    seen: list[tuple[str, str, bytes]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.path, self.headers.get("Content-Type", ""), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/timestamp-reply")
        self.send_header("Content-Length", "4")
        self.end_headers()
        self.wfile.write(b"junk")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def tsa():
    _Tsa.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Tsa)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/tsa", _Tsa.seen
    server.shutdown()
    server.server_close()


def _is_timestamp_query(content_type: str, body: bytes) -> bool:
    """An RFC 3161 TimeStampReq: its media type, and a DER SEQUENCE starting with version 1."""
    return content_type == "application/timestamp-query" and body[:1] == b"\x30" and b"\x02\x01\x01" in body[:8]


def test_timestamp_url_reaches_the_signer_at_start(offline, tmp_path, capsys, tsa):
    url, seen = tsa
    image = tmp_path / "in.jpg"
    cv2.imwrite(str(image), face_frame())
    assert main(["run", "--c2pa-timestamp-url", url, "-s", str(SOURCE), "-t", str(image),
                 "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"c2pa_timestamp_url {url}: no time-stamp from it" in err and len(err.strip().splitlines()) == 1
    assert seen and seen[0][0] == "/tsa" and _is_timestamp_query(seen[0][1], seen[0][2])
    assert not (tmp_path / "out").exists()


def test_timestamp_url_is_used_for_every_output(tmp_path, tsa):
    url, seen = tsa
    marker = Marker("c2pa", marking_tags("offline", ["ffb_classic_swap"]),
                    Stamp("offline", ("ffb_classic_swap",), "ffb_classic_swap", "0" * 64),
                    credentials.local_credential(tmp_path / "cache"), timestamp_url=url)
    original = jpeg_with_app11(tmp_path / "o.jpg")
    partial = tmp_path / ".s.ffb-1.tmp.jpg"
    shutil.copyfile(original, partial)
    with pytest.raises(MediaError, match="C2PA signing failed"):
        marker.place(partial, tmp_path / "s.jpg", parent=original)
    assert not (tmp_path / "s.jpg").exists() and len(seen) == 1 and _is_timestamp_query(seen[0][1], seen[0][2])


def test_run_time_stamps_every_output_with_a_working_authority(offline, tmp_path, capsys):
    targets = tmp_path / "in"
    targets.mkdir()
    for name in ("a.jpg", "b.png"):
        cv2.imwrite(str(targets / name), face_frame())
    authority = TimeStampAuthority(datetime.datetime.now(datetime.timezone.utc))
    with TsaServer(authority) as url:
        assert main(["run", "-q", "--json", "--c2pa-timestamp-url", url, "-s", str(SOURCE), "-t", str(targets),
                     "-o", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    assert len(authority.requests) == 3  # the check at start, then one per output
    code, findings = _verify([tmp_path / "out" / "a.jpg", tmp_path / "out" / "b.png"], capsys)
    assert code == 0 and {f["validation"] for f in findings} == {"valid (signer untrusted)"}


def test_signatures_time_stamped_while_valid_stay_valid_after_expiry(tmp_path, capsys):
    """The point of a TSA, end to end with real RFC 3161 tokens (a local authority, tests/tsa_standin.py):
    two outputs signed while a short-lived certificate is valid, one with a time-stamp; once the
    certificate has expired, the time-stamped one still validates (for a verifier that trusts the TSA),
    the other is `signingCredential.expired`."""
    now = datetime.datetime.now(datetime.timezone.utc)
    expiry = now + datetime.timedelta(seconds=8)
    chain, key = signing_chain(now - datetime.timedelta(days=1), expiry)
    credential = Credential(chain, key, "es256", "CN=ffb test signer", "0" * 64, "test certificate")
    authority = TimeStampAuthority(now)
    original = jpeg_with_app11(tmp_path / "o.jpg")
    with TsaServer(authority) as url:
        for name, timestamp_url in (("stamped.jpg", url), ("unstamped.jpg", "")):
            marker = Marker("c2pa", marking_tags("offline", ["ffb_classic_swap"]),
                            Stamp("offline", ("ffb_classic_swap",), "ffb_classic_swap", "0" * 64), credential,
                            timestamp_url=timestamp_url)
            partial = tmp_path / f".{name}.ffb-1.tmp.jpg"
            shutil.copyfile(original, partial)
            marker.place(partial, tmp_path / name, parent=original)
    if datetime.datetime.now(datetime.timezone.utc) > expiry - datetime.timedelta(seconds=1):
        pytest.skip("signing took longer than the certificate's 8 s: this machine is too loaded to tell")
    assert len(authority.requests) == 1
    time.sleep((expiry - datetime.datetime.now(datetime.timezone.utc)).total_seconds() + 1)
    trust = tmp_path / "tsa-root.pem"
    trust.write_text(authority.root_pem())
    code = main(["verify", "--json", "--trust", str(trust), str(tmp_path / "stamped.jpg"),
                 str(tmp_path / "unstamped.jpg")])
    out = capsys.readouterr().out
    stamped, unstamped = (json.loads(out) if out.lstrip().startswith("[")
                          else [json.loads(line) for line in out.splitlines() if line.strip()])
    assert code == 1
    assert stamped["validation"] == "valid (signer untrusted)" and stamped["problems"] == []
    assert unstamped["validation"] == "invalid" and "signingCredential.expired" in unstamped["problems"][0]


@pytest.mark.parametrize("url", ["tsa.example.com", "ftp://tsa.example.com", "https://"])
def test_a_timestamp_url_that_is_no_http_url_is_refused(offline, tmp_path, capsys, url):
    assert main(["run", "--c2pa-timestamp-url", url, "-s", str(SOURCE), "-t", str(tmp_path),
                 "-o", str(tmp_path / "out")]) == 2
    assert "c2pa_timestamp_url" in capsys.readouterr().err


def test_settings_file_carries_the_timestamp_url(tmp_path):
    profile = tmp_path / "p.ini"
    profile.write_text("[provenance]\nc2pa_timestamp_url = https://tsa.example.com/rfc3161\n")
    settings = settings_module.load_settings(profile).settings
    assert settings.c2pa_timestamp_url == "https://tsa.example.com/rfc3161"
    assert Marker.for_run(settings, "offline", ["ffb_classic_swap"], "0" * 64,
                          credentials.local_credential(tmp_path / "cache")).timestamp_url == settings.c2pa_timestamp_url


# --- issue 23, item 9: an untouched copy of an output tree is unchanged ------------------------------------

def test_verify_compares_content_not_mtime(offline, tmp_path, capsys):
    targets = tmp_path / "in"
    targets.mkdir()
    make_clip(targets / "clip.mp4", frames=3)
    cv2.imwrite(str(targets / "still.jpg"), face_frame())
    out = tmp_path / "out"
    assert main(["run", "-q", "--json", "-s", str(SOURCE), "-t", str(targets), "-o", str(out)]) == 0
    capsys.readouterr()
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(out), str(copy)], check=True)  # new mtimes, same bytes
    os.utime(copy / "clip.mp4", (1, 1))
    code, findings = _verify([copy / "clip.mp4", copy / "still.jpg"], capsys)
    assert code == 0 and [f["journal"]["output_unchanged"] for f in findings] == [True, True]
    # the bytes changed, the size and mtime put back: changed
    data = bytearray((copy / "still.jpg").read_bytes())
    stat = (copy / "still.jpg").stat()
    data[-10] ^= 0xFF
    (copy / "still.jpg").write_bytes(bytes(data))
    os.utime(copy / "still.jpg", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    code, findings = _verify([copy / "still.jpg"], capsys)
    assert findings[0]["journal"]["output_unchanged"] is False


def test_journal_columns_added_in_another_order_are_read_by_name(tmp_path):
    """A journal whose columns an older ffb added in another order (content_gate and watermark before
    output_sha256) gives every field its own value, and one opened read-only without the newer columns too."""
    import sqlite3

    from facefusion_batch.runner.journal import Journal, read_entries

    path = tmp_path / "journal.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE targets (target TEXT PRIMARY KEY, output TEXT NOT NULL, size INTEGER NOT NULL, "
                   "mtime_ns INTEGER NOT NULL, content_hash TEXT NOT NULL, settings_key TEXT NOT NULL, "
                   "status TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', attempts INTEGER NOT NULL DEFAULT 0, "
                   "frames INTEGER NOT NULL DEFAULT 0, seconds REAL NOT NULL DEFAULT 0, output_size INTEGER, "
                   "output_mtime_ns INTEGER, updated REAL NOT NULL, ctime_ns INTEGER, content_gate TEXT, "
                   "watermark TEXT)")
        db.execute("INSERT INTO targets VALUES ('/old.mp4', 'out/old.mp4', 1, 2, 'c', 'k', 'done', '', 1, 3, "
                   "0.5, 4, 5, 6.0, 7, 'gate', 'ab12cd34')")
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:  # as verify reads it
        old = read_entries(db)[0]
    assert (old.watermark, old.content_gate, old.output_sha256) == ("ab12cd34", "gate", None)
    journal = Journal(path)  # adds output_sha256 after watermark
    try:
        target, output = tmp_path / "t.jpg", tmp_path / "o.jpg"
        for path_ in (target, output):
            cv2.imwrite(str(path_), face_frame())
        journal.record(target, output, "hash", "key", "done", watermark="0011aabb")
        entry = journal.get(target)
        assert entry.watermark == "0011aabb" and len(entry.output_sha256) == 64 and entry.content_hash == "hash"
        assert [e.watermark for e in journal.by_watermark("ab12cd34")] == ["ab12cd34"]
    finally:
        journal.close()

"""Model download against a local HTTP server that speaks Range, like a real release host."""
from __future__ import annotations

import dataclasses
import http.server
import threading
import zlib

import pytest

from facefusion_batch.cli import main
from facefusion_batch.errors import DownloadError
from facefusion_batch.models.catalog import CATALOG
from facefusion_batch.models.download import download_model, resolve_url

PAYLOAD = bytes(range(256)) * 4000  # ~1 MB


class RangeHandler(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}
    range_requests: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's naming
        body = self.files.get(self.path.rsplit("/", 1)[-1])
        if body is None:
            self.send_error(404)
            return
        start = 0
        if header := self.headers.get("Range"):
            self.range_requests.append(header)
            start = int(header.split("=")[1].split("-")[0])
            if start >= len(body):
                self.send_error(416)
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        self.wfile.write(body[start:])

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    RangeHandler.files = {}
    RangeHandler.range_requests = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/models-3.0.0"
    httpd.shutdown()


def serve(name: str, body: bytes, crc: str | None = None) -> None:
    RangeHandler.files[f"{name}.onnx"] = body
    RangeHandler.files[f"{name}.hash"] = (crc or f"{zlib.crc32(body):08x}").encode()


def test_mirror_replaces_release_base():
    url = CATALOG["scrfd_2.5g"].url
    assert resolve_url(url, "http://mirror/x/") == "http://mirror/x/scrfd_2.5g.onnx"
    assert resolve_url(url, "") == url


def test_download_verifies_crc_sidecar(server, tmp_path):
    serve("scrfd_2.5g", PAYLOAD)
    path = download_model(CATALOG["scrfd_2.5g"], tmp_path, mirror=server)
    assert path.read_bytes() == PAYLOAD
    assert (tmp_path / "scrfd_2.5g.hash").read_text() == f"{zlib.crc32(PAYLOAD):08x}"
    assert not list(tmp_path.glob("*.part"))


def test_download_resumes_a_partial_file(server, tmp_path):
    serve("scrfd_2.5g", PAYLOAD)
    (tmp_path / "scrfd_2.5g.onnx.part").write_bytes(PAYLOAD[:300_000])
    path = download_model(CATALOG["scrfd_2.5g"], tmp_path, mirror=server)
    assert path.read_bytes() == PAYLOAD
    assert RangeHandler.range_requests == ["bytes=300000-"]


def test_checksum_mismatch_discards_the_download(server, tmp_path):
    serve("scrfd_2.5g", PAYLOAD, crc="deadbeef")
    with pytest.raises(DownloadError, match="does not match"):
        download_model(CATALOG["scrfd_2.5g"], tmp_path, mirror=server)
    assert not (tmp_path / "scrfd_2.5g.onnx").exists()
    assert not (tmp_path / "scrfd_2.5g.onnx.part").exists()


def test_sha256_is_checked_when_known(server, tmp_path):
    serve("scrfd_2.5g", PAYLOAD)
    spec = dataclasses.replace(CATALOG["scrfd_2.5g"], sha256="0" * 64)
    with pytest.raises(DownloadError, match="sha256"):
        download_model(spec, tmp_path, mirror=server)


def test_offline_error_says_where_to_put_the_file(tmp_path):
    with pytest.raises(DownloadError) as error:
        download_model(CATALOG["scrfd_2.5g"], tmp_path, mirror="http://127.0.0.1:9", timeout=2)
    assert "by hand" in str(error.value) and str(tmp_path) in str(error.value)


def test_missing_file_on_server(server, tmp_path):
    with pytest.raises(DownloadError, match="HTTP 404"):
        download_model(CATALOG["scrfd_2.5g"], tmp_path, mirror=server)


def test_cli_download_then_verify(server, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FFB_DOWNLOAD_MIRROR", server)
    monkeypatch.setenv("FFB_CACHE_PATH", str(tmp_path / "cache"))
    import standins
    from conftest import detector_faces

    model = tmp_path / "built" / "yoloface_8n.onnx"
    standins.build_yoloface(model, detector_faces(1.0))  # verify also checks it is an ONNX graph of the kind
    payload = model.read_bytes()
    serve("yoloface_8n", payload)
    assert main(["models", "download", "yoloface_8n", "--models-path", str(tmp_path), "-q"]) == 0
    assert main(["models", "verify", "--models-path", str(tmp_path), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"name": "yoloface_8n"' in out and '"status": "ok"' in out
    (tmp_path / "yoloface_8n.onnx").write_bytes(payload[:-1] + b"x")
    assert main(["models", "verify", "--models-path", str(tmp_path)]) == 3
    assert main(["models", "download", "nonsense", "--models-path", str(tmp_path)]) == 2
    assert "unknown model nonsense" in capsys.readouterr().err


def test_cli_downloads_every_processor_model_with_its_hash_sidecar(server, tmp_path, monkeypatch):
    from facefusion_batch.models.catalog import PROCESSOR_MODELS

    monkeypatch.setenv("FFB_DOWNLOAD_MIRROR", server)
    names = [spec.name for spec in PROCESSOR_MODELS]
    for index, name in enumerate(names):
        serve(name, PAYLOAD[: 1000 + index])  # each file its own bytes and CRC32
    assert main(["models", "download", *names, "--models-path", str(tmp_path), "-q"]) == 0
    for index, spec in enumerate(PROCESSOR_MODELS):
        assert (tmp_path / f"{spec.name}.onnx").read_bytes() == PAYLOAD[: 1000 + index], spec.name
        assert (tmp_path / f"{spec.name}.hash").read_text() == f"{zlib.crc32(PAYLOAD[: 1000 + index]):08x}"
    assert not list(tmp_path.glob("*.part")) and not list(tmp_path.glob("*.tmp"))


def test_processor_model_urls_are_facefusions_release_files():
    # Without a mirror each file comes from its own FaceFusion release, with the sidecar next to it.
    assert CATALOG["gfpgan_1.4"].url.endswith("/models-3.0.0/gfpgan_1.4.onnx")
    assert CATALOG["gfpgan_1.4"].hash_file == "gfpgan_1.4.hash"
    assert CATALOG["hyperswap_1a_256"].hash_url.endswith("/models-3.3.0/hyperswap_1a_256.hash")
    assert CATALOG["crossface_ghost"].url.endswith("/models-3.4.0/crossface_ghost.onnx")
    assert resolve_url(CATALOG["xseg_3"].url, "") == CATALOG["xseg_3"].url

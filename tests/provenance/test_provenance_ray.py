"""C2PA on the Ray executor: a whole target and a video split into segments and joined on a worker are
signed there, and the driver moves a sidecar into place with its output."""
from __future__ import annotations

import json
import logging

import pytest

from conftest import make_clip

ray = pytest.importorskip("ray")

from facefusion_batch.cli import main  # noqa: E402
from facefusion_batch.provenance.sign import sidecar_of  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def ray_instance():
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    yield
    ray.shutdown()


def test_ray_outputs_are_signed(env, source_image, capsys, monkeypatch):
    monkeypatch.setenv("FFB_RAY_WORKERS", "2")
    monkeypatch.setenv("FFB_EXECUTION_THREAD_COUNT", "1")
    monkeypatch.setenv("FFB_RAY_SEGMENT_CHUNKS", "2")
    (env / "in").mkdir()
    make_clip(env / "in" / "long.mp4", frames=30)  # 3 chunks of 10: split into segments, joined
    make_clip(env / "in" / "w.webm", frames=6, extra=["-c:v", "libvpx-vp9", "-c:a", "libopus"])
    code = main(["run", "--json", "-q", "--executor", "ray", "-s", str(source_image), "-t", str(env / "in"),
                 "-o", str(env / "out"), "--chunk-size", "10"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0, summary
    assert sidecar_of(env / "out" / "w.webm").is_file()
    assert main(["verify", "--json", str(env / "out")]) == 0
    findings = {f["file"].rsplit("/", 1)[-1]: f for f in json.loads(capsys.readouterr().out)}
    assert set(findings) == {"long.mp4", "w.webm"}
    for finding in findings.values():
        assert finding["validation"] == "valid (signer untrusted)" and finding["model"] == "inswapper_128"
    assert findings["long.mp4"]["parent"] == "long.mp4" and findings["w.webm"]["c2pa"] == "sidecar"
    assert not [p for p in (env / "out").iterdir() if p.name.startswith(".") and p.name != ".ffb"]

"""Hostile and odd inputs in one batch with good files: each gets its expected status and a clear reason,
the finished videos keep frame count, size, audio and timing, and nothing partial is left anywhere."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

import hostile_report  # noqa: E402
from hostile_media import build_corpus, build_multi_face_source  # noqa: E402

from facefusion_batch.cli import main  # noqa: E402


def in_process(capsys) -> hostile_report.Verify:
    """`ffb verify --json` as `main` in this process, answering as run_verify does (no ffb start-up per call)."""
    def verify(paths: list[Path]) -> tuple[int, list[dict]]:
        code = main(["verify", "--json", *map(str, paths)])
        return code, hostile_report.verify_documents(capsys.readouterr().out)
    return verify


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    work = tmp_path_factory.mktemp("hostile")
    corpus, out, temp = work / "targets", work / "out", work / "temp"
    expected = build_corpus(corpus)
    return work, corpus, out, temp, expected


def test_hostile_batch(batch, capsys, monkeypatch):
    work, corpus, out, temp, expected = batch
    monkeypatch.setenv("FFB_CACHE_PATH", str(work / "cache"))
    monkeypatch.setenv("FFB_MODELS_PATH", str(work / "no-models"))
    code = main(["run", "--engine", "offline", "--many-faces", "--json", "-q", "-s", str(hostile_report.SOURCE),
                 "-t", str(corpus), "-o", str(out), "--temp-path", str(temp)])
    result = json.loads(capsys.readouterr().out)
    assert code == 1, "bad files make the batch exit non-zero"
    rows, strays = hostile_report.rows_from(result, expected, corpus)
    for row in rows:
        hostile_report.judge(row, corpus, out)
    problems = {row.name: row.problems for row in rows if row.problems}
    assert problems == {}
    assert strays == [], "the symlink loop is not followed"
    assert hostile_report.leftovers(out, temp) == []
    for row in rows:
        if row.status == "failed":
            assert row.reason.count("\n") == 0 and row.name.split("/")[-1][:40] in row.reason
    # Every finished output shows its mark to `ffb verify`, validates, and is unchanged (issue 26, class 4).
    assert hostile_report.verify_problems(rows, out, in_process(capsys)) == []
    # As cron starts it again: every failure is journaled, nothing is tried again, exit 0.
    code = main(["run", "--engine", "offline", "--many-faces", "--json", "-q", "-s", str(hostile_report.SOURCE),
                 "-t", str(corpus), "-o", str(out), "--temp-path", str(temp)])
    again = capsys.readouterr()
    assert hostile_report.rerun_problems(subprocess.CompletedProcess([], code, again.out, again.err)) == []


def test_source_with_several_faces_uses_the_largest(batch, capsys, monkeypatch):
    work, corpus, *_ = batch
    monkeypatch.setenv("FFB_CACHE_PATH", str(work / "cache2"))
    monkeypatch.setenv("FFB_MODELS_PATH", str(work / "no-models"))
    source = build_multi_face_source(work / "two_faces.png")
    assert main(["run", "--engine", "offline", "-s", str(source), "-t", str(corpus / "plain.mp4"),
                 "-o", str(work / "multi")]) == 0
    assert "2 faces in the source image; using the largest" in capsys.readouterr().err


def test_verify_judges_claimed_manifests(tmp_path, capsys):
    """Bytes that claim a C2PA manifest and do not parse are a damaged manifest (exit 1), not none."""
    assert hostile_report.manifest_problems(tmp_path / "manifests", in_process(capsys)) == []

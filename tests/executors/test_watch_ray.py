"""`ffb watch --executor ray`: a watch whose lots run on a local Ray instance (started by the watch process),
with the same outputs as `ffb run` on the same files."""
from __future__ import annotations

import json
import os

import cv2
import numpy as np
import pytest

from conftest import decode_all, face_frame, make_clip
from facefusion_batch.cli import main
from test_watch import finished, journal_entry, outcomes_of, watches  # noqa: F401 - watches is a fixture

pytest.importorskip("ray")


def test_a_ray_watch_does_what_is_there_and_what_lands_later_as_ffb_run_does(env, source_image, watches,
                                                                              monkeypatch, capsys):
    monkeypatch.setenv("FFB_RAY_WORKERS", "2")
    monkeypatch.setenv("FFB_EXECUTION_THREAD_COUNT", "1")
    incoming = env / "in"
    (incoming / "sub").mkdir(parents=True)
    first = make_clip(incoming / "sub" / "a.mp4", frames=10)
    photo = incoming / "d.png"
    cv2.imwrite(str(photo), face_frame())
    watch = watches(env, source_image, incoming, "--executor", "ray").ready()
    watch.wait_for(finished(env, first), "the clip already there done")
    watch.wait_for(finished(env, photo), "the photo already there done")
    later = make_clip(env / "staging.mp4", frames=13, fps="30000/1001")
    landed = incoming / "b.mp4"
    os.replace(later, landed)  # lands after the first lot, once Ray's first workers are gone
    watch.wait_for(finished(env, landed), "the clip that landed later done")
    code, summary = watch.stop()
    assert code == 0 and summary["command"] == "watch" and summary["interrupted"] is True
    for target, frames in ((first, 10), (photo, 1), (landed, 13)):
        assert [(o["status"], o["frames"]) for o in outcomes_of(summary, target)] == [("done", frames)], summary
        assert journal_entry(env, target).attempts == 1
    assert summary["counts"]["failed"] == 0
    log = watch.log()
    assert log.count("ray: 2 workers") >= 3, "workers started to check the cluster, then once per lot"
    assert "engine: neural" in log and "Traceback" not in log

    assert main(["run", "--json", "-q", "-s", str(source_image), "-t", str(incoming), "-o",
                 str(env / "local")]) == 0
    local = json.loads(capsys.readouterr().out)
    assert local["counts"]["done"] == 3
    for name in ("sub/a.mp4", "b.mp4"):
        assert np.array_equal(decode_all(env / "out" / name), decode_all(env / "local" / name)), name
    assert np.array_equal(cv2.imread(str(env / "out" / "d.png")), cv2.imread(str(env / "local" / "d.png")))


def test_sigterm_mid_lot_on_ray_exits_0_and_the_next_watch_finishes_the_cut_video(env, source_image, watches,
                                                                                    monkeypatch):
    monkeypatch.setenv("FFB_RAY_WORKERS", "1")
    monkeypatch.setenv("FFB_EXECUTION_THREAD_COUNT", "1")
    incoming = env / "in"
    incoming.mkdir()
    target = incoming / "long.mp4"
    os.replace(make_clip(env / "copy.mp4", frames=160), target)
    options = ("--executor", "ray", "--chunk-size", "20")
    first = watches(env, source_image, incoming, *options, name="first")
    first.wait_for(lambda: any((env / "tmp").glob("**/chunk_00001.json")), "the second chunk finished")
    code, summary = first.stop()
    assert code == 0, "SIGTERM (systemctl stop) ends a Ray watch with 0"
    assert summary["interrupted"] is True
    assert journal_entry(env, target).status == "interrupted"
    assert sorted(p.name for p in (env / "out").iterdir()) == [".ffb"], "nothing half-written in the output"
    second = watches(env, source_image, incoming, *options, name="second")
    second.wait_for(finished(env, target), "the cut target done by the next watch")
    code, summary = second.stop()
    assert code == 0 and [o["status"] for o in outcomes_of(summary, target)] == ["done"]
    assert decode_all(env / "out" / "long.mp4").shape[0] == 160

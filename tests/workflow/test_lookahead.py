"""The next video is made ready during the current one; what is not used is cleaned up; outputs don't change."""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

from conftest import decode_all, make_clip
from facefusion_batch.cli import main
from facefusion_batch.errors import MediaError
from facefusion_batch.models.store import sha256_of
from facefusion_batch.workflow import lookahead as lookahead_module
from facefusion_batch.runner.journal import Journal
from facefusion_batch.workflow.lookahead import Lookahead
from facefusion_batch.video.probe import probe


@pytest.fixture
def started(monkeypatch):
    """Every decoder the lookahead starts."""
    decoders = []
    real = lookahead_module.Decoder

    def record(*args):
        decoders.append(real(*args))
        return decoders[-1]

    monkeypatch.setattr(lookahead_module, "Decoder", record)
    return decoders


def test_prepared_video_is_probed_and_its_decoder_waits_for_the_current_one(tmp_path, started):
    clip = make_clip(tmp_path / "a.mp4", frames=5, audio=False)
    with Lookahead(tmp_path) as ahead:
        ahead.prepare(clip)
        prepared = ahead.take(clip)
        assert prepared.info == probe(clip) and prepared.decoder is None and not started
        ahead.prepare(clip)
        ahead.current_decoded()
        prepared = ahead.take(clip)
    decoder = prepared.decoder
    frames = np.stack([f.copy() for f in decoder.frames(buffers=2)])
    decoder.stop(kill=False)
    assert decoder.returncode == 0 and frames.shape[0] == 5
    assert np.abs(frames.astype(int) - decode_all(clip)).mean() < 0.6


def test_unused_preparation_is_dropped_and_its_decoder_killed(tmp_path, started):
    a, b = make_clip(tmp_path / "a.mp4", frames=30, audio=False), make_clip(tmp_path / "b.mp4", frames=3, audio=False)
    with Lookahead(tmp_path) as ahead:
        ahead.prepare(a)
        ahead.current_decoded()
        deadline = time.monotonic() + 120
        while not started and time.monotonic() < deadline:
            time.sleep(0.01)
        assert started and started[0].returncode is None  # running, blocked on its full pipe
        assert ahead.take(b) is None
        assert started[0].returncode is not None  # killed, not left waiting
        ahead.prepare(a)
        os.utime(a, ns=(1, 1))  # the file changed after it was prepared
        assert ahead.take(a) is None
        ahead.prepare(b)
        ahead.current_decoded()
    assert started[-1].returncode is not None  # closing kills what was never taken


def test_a_failed_probe_is_raised_when_taken(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_text("not a video")
    with Lookahead(tmp_path) as ahead:
        ahead.prepare(bad)
        ahead.current_decoded()
        with pytest.raises(MediaError, match="bad.mp4: not a readable video"):
            ahead.take(bad)


def test_content_hash_is_given_only_while_the_file_is_unchanged(tmp_path):
    clip = make_clip(tmp_path / "a.mp4", frames=3, audio=False)
    with Lookahead(tmp_path) as ahead:
        ahead.prepare(clip, hash_content=True)
        assert ahead.content_hash(clip) == sha256_of(clip)
        assert ahead.content_hash(tmp_path / "other.mp4") is None
        os.utime(clip, ns=(1, 1))
        assert ahead.content_hash(clip) is None


def test_closing_does_not_wait_for_a_big_file_to_be_hashed(tmp_path):
    big = tmp_path / "big.mp4"
    with big.open("wb") as handle:
        handle.truncate(1024 ** 4)  # sparse: far more than a minute of hashing, no disk
    ahead = Lookahead(tmp_path)
    ahead.prepare(big, hash_content=True)
    time.sleep(0.2)  # hashing has begun
    started = time.monotonic()
    ahead.close()
    assert time.monotonic() - started < 60  # a loaded machine is slow; hashing 1 TiB is slower still


@pytest.fixture
def taken(monkeypatch) -> list[tuple[str, bool]]:
    """(name, whether its decoder was already running) of every video a batch takes from its lookahead."""
    seen: list[tuple[str, bool]] = []
    real_take = Lookahead.take

    def take(self, path):
        prepared = real_take(self, path)
        seen.append((path.name, prepared is not None and prepared.decoder is not None))
        return prepared

    monkeypatch.setattr(Lookahead, "take", take)
    return seen


def test_batch_prepares_each_next_video_and_outputs_are_unchanged(env, source_image, taken):
    (env / "in").mkdir()
    clips = [make_clip(env / "in" / f"{name}.mp4", frames=frames) for name, frames in (("a", 12), ("b", 9), ("c", 7))]
    assert main(["run", "-s", str(source_image), "-t", str(env / "in"), "-o", str(env / "batch"), "-q"]) == 0
    assert taken == [("a.mp4", True), ("b.mp4", True), ("c.mp4", True)]  # a: while the engine loaded
    for clip in clips:  # each alone in its own batch: nothing prepared
        assert main(["run", "-s", str(source_image), "-t", str(clip), "-o", str(env / "alone"), "-q"]) == 0
        assert np.array_equal(decode_all(env / "batch" / clip.name), decode_all(env / "alone" / clip.name))
    journal = Journal(env / "batch" / ".ffb" / "journal.sqlite")
    try:  # b and c were hashed ahead of their turn
        assert all(journal.get(clip).content_hash == sha256_of(clip) for clip in clips)
    finally:
        journal.close()


def test_a_video_the_journal_will_skip_is_not_the_one_prepared(env, source_image, taken):
    (env / "in").mkdir()
    clips = [make_clip(env / "in" / f"{name}.mp4", frames=5) for name in ("a", "b", "c")]
    assert main(["run", "-s", str(source_image), "-t", str(clips[1]), "-o", str(env / "out"), "-q"]) == 0
    taken.clear()
    assert main(["run", "-s", str(source_image), "-t", str(env / "in"), "-o", str(env / "out"), "-q"]) == 0
    assert taken == [("a.mp4", True), ("c.mp4", True)]  # b is done and unchanged: skipped, never prepared

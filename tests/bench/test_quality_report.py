"""The quality benchmark's report (benchmarks/quality.py): what it says of faces left as they are."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import quality  # noqa: E402

from facefusion_batch.bench import quality as q  # noqa: E402


def _track(strengths: list[float]) -> q.TrackStats:
    return q.track_stats(strengths, [np.nan] * len(strengths), frames=range(len(strengths)))


def test_the_report_names_the_longest_run_a_face_was_left_and_counts_the_faces_never_swapped() -> None:
    run = quality.Scored("pan@hopper", "pan", "hopper", "many", frames=12)
    run.tracks[(0, 0)] = _track([20.0] * 12)
    run.tracks[(0, 1)] = _track([1.0] * 10)  # never swapped, in 10 frames
    run.tracks[(0, 2)] = _track([20.0, 1.0, 1.0, 1.0, 20.0, 1.0])
    run.tracks[(0, 3)] = _track([1.0] * (quality.NEVER_FRAMES - 1))  # too short a visit to say "never"
    report = quality.summary([run])
    total = report["total"]
    assert total["longest_miss"] == 10 and total["longest_miss_face"] == "pan@hopper face 0.1"
    assert total["never_swapped"] == 1
    assert report["clips"]["pan"]["longest_miss"] == 10
    assert total["missed_late"] == 0  # face 0.2 was swapped first, then left; face 0.1 never
    assert "longest run a face was left as it is: 10 frames (pan@hopper face 0.1); faces never swapped: 1" in (
        quality.table(report))
    # Mode `one` expects one face swapped only: its faces left are no misses.
    one = quality.Scored("pan_one@hopper", "pan_one", "hopper", "one", frames=10)
    one.tracks[(0, 1)] = q.track_stats([1.0] * 10, [np.nan] * 10, expected=False)
    assert quality.summary([one])["total"]["longest_miss"] == 0


def test_the_report_counts_the_frames_a_face_was_missed_before_its_first_swap() -> None:
    run = quality.Scored("pan@hopper", "pan", "hopper", "many", frames=12)
    run.tracks[(0, 0)] = _track([1.0, 1.0, 1.0, 20.0, 20.0, 1.0, 20.0])  # found late: 3 frames, then 1 left
    run.tracks[(0, 1)] = _track([2.0, 20.0])
    run.tracks[(0, 2)] = _track([1.0] * 10)  # never swapped: counted as such, not as late
    report = quality.summary([run])
    assert report["total"]["missed_late"] == 4 and report["clips"]["pan"]["missed_late"] == 4
    assert "missed before a face's first swap (found late): 4" in quality.table(report)


def test_the_report_gives_the_judges_own_floor_beside_found() -> None:
    # A face the judge does not find again in the output, and one it does not find again in the input either (its
    # look around a small face): `found` can be no better than the input's own share.
    run = quality.Scored("far@hopper", "far", "hopper", "many", frames=1)
    run.identity = [q.Identity(0.4, 0.7, True), q.Identity(0.4, 0.7, False),
                    q.Identity(0.4, 0.7, False, found_in=False), q.Identity(0.4, 0.7, True)]
    run.small = [True] * 4
    run.turned = [False] * 4
    total = quality.summary([run])["total"]
    assert (total["found"], total["found_floor"]) == (0.5, 0.75)
    assert ("still found as a face >= 95 %: 50.0% (the judge's own floor, the input's faces found again the same way: "
            "75.0%)") in quality.table(quality.summary([run]))

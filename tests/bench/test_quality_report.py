"""The quality benchmark's report (benchmarks/quality.py): what it says of faces left as they are."""
import sys
from pathlib import Path

import cv2
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
    # The faces missed most, named: which face, who, in how many of its frames, from when to when.
    run.people = {(0, 1): "ross", (0, 2): "rachel", (0, 3): "joey"}
    named = quality.summary([run])["total"]["missed_faces"]
    assert named == ["pan@hopper face 0.1 ross: 10 of 10 frames (0-9)", "pan@hopper face 0.3 joey: 7 of 7 frames (0-6)",
                     "pan@hopper face 0.2 rachel: 4 of 6 frames (1-5)"]
    assert "faces missed most: pan@hopper face 0.1 ross: 10 of 10 frames (0-9); " in quality.table(quality.summary([run]))
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


def test_the_report_gives_found_and_its_floor_for_larger_and_for_turned_faces_apart() -> None:
    # Two small frontal faces (one lost by the swap), a large frontal one found, a large turned one lost whose input
    # the judge's own look does not find again either: the classes say where the losses are, beside their floors.
    run = quality.Scored("far@hopper", "far", "hopper", "many", frames=1)
    run.identity = [q.Identity(0.4, 0.7, True), q.Identity(0.4, 0.7, False), q.Identity(0.4, 0.7, True),
                    q.Identity(0.4, 0.7, False, found_in=False)]
    run.small = [True, True, False, False]
    run.turned = [False, False, False, True]
    total = quality.summary([run])["total"]
    assert (total["found_large"], total["found_floor_large"]) == (0.5, 0.5)
    assert (total["found_turned"], total["found_floor_turned"]) == (0.0, 0.0)
    assert total["found"] == 0.5
    assert (f"still found, by class (the judge's floor): faces over {q.SMALL:g} px 50.0% (50.0%), turned 0.0% (0.0%)"
            in quality.table(quality.summary([run])))


class _Judge:
    """A judge that finds one face in the input and, in the output, only where the face was left as it is."""

    BOX = (20.0, 20.0, 60.0, 60.0)

    def detect(self, image: np.ndarray) -> list:
        return [self.BOX] if image[40, 40, 0] < 128 else []

    def found_near(self, image: np.ndarray, box) -> tuple:
        found = bool(self.detect(image))
        return found, (self.BOX if found else box)

    def describe(self, image: np.ndarray, box) -> np.ndarray:
        return np.full(3, float(image[40, 40, 0]))


def test_faces_the_judge_no_longer_finds_in_the_output_are_shown_on_a_sheet_of_their_own(tmp_path) -> None:
    # `found` says how many such faces there are, never what they look like; the sheet shows them beside their input.
    inp = np.zeros((80, 80, 3), np.uint8)
    lost_out = np.full((80, 80, 3), 200, np.uint8)  # the swap no longer reads as a face
    run = quality.Scored("far@hopper", "far", "hopper", "many", frames=2)
    for out in (inp, lost_out):
        quality.judge_frame(_Judge(), inp, out, np.zeros(3), [(_Judge.BOX, "anna", 0.0)], "many", "hopper", run,
                            "far@hopper#0")
    assert [v.found for v in run.identity] == [True, False]
    assert len(run.lost) == 1 and run.lost[0][2].startswith("far@hopper#0 d=")
    written = quality.sheets([run], {}, tmp_path)
    assert tmp_path / "lost.png" in written
    sheet = cv2.imread(str(tmp_path / "lost.png"))
    assert sheet.shape[:2] == (116, 8 * 116), "one row: the input beside the output"
    assert sheet[:, 116:228].mean() > sheet[:, :112].mean() + 100, "the output as it came out"
    run.lost.clear()
    assert tmp_path / "lost.png" not in quality.sheets([run], {}, tmp_path / "none"), "no sheet without lost faces"

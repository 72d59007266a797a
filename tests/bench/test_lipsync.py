"""The lip-sync benchmark's measure (benchmarks/lipsync.py): how far a swap's mouth is from its frame's."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import lipsync  # noqa: E402

from facefusion_batch.offline import classic  # noqa: E402


def _mesh(opening: float) -> np.ndarray:
    """468 points of a 100 px face (forehead to chin), its mouth open by `opening` of the face."""
    points = np.zeros((468, 3))
    points[classic.FOREHEAD, :2], points[classic.CHIN, :2] = (50, 0), (50, 100)
    points[13, :2], points[14, :2] = (50, 70), (50, 70 + 100 * opening)
    return points


def test_a_mouth_drawn_frames_late_scores_worse_than_one_drawn_on_its_frame():
    openings = [0.0, 0.0, 0.05, 0.1, 0.1, 0.05, 0.0, 0.0, 0.05, 0.1]
    fitted = [_mesh(o) for o in openings]
    exact = lipsync.mouth_errors(fitted, fitted)
    late = lipsync.mouth_errors([fitted[0], fitted[0], *fitted[:-2]], fitted)  # two frames behind
    assert exact["frames"] == late["frames"] == len(openings) - 2
    assert late["mouth"] > exact["mouth"] + 0.02 and late["mouth_p95"] > 0.05
    # The truth is the frame's fit averaged with its neighbours': a fit's own noise is not all counted as right.
    assert 0 < exact["mouth"] < late["mouth"]


def test_a_mouth_that_follows_every_fits_noise_shakes_and_frames_without_a_face_are_left_out():
    rng = np.random.default_rng(1)
    steady = [_mesh(0.05) for _ in range(12)]
    noisy = [_mesh(0.05 + rng.normal(0, 0.02)) for _ in range(12)]
    assert lipsync.mouth_errors(noisy, steady)["shake"] > 0.01
    assert lipsync.mouth_errors(steady, steady)["shake"] == 0
    gaps = lipsync.mouth_errors([*steady[:3], None, *steady[4:]], [*steady[:7], None, *steady[8:]])
    # The ends, the frame swapped without a face, and the frames at and beside the frame with no fit.
    assert gaps["frames"] == 12 - 2 - 1 - 3
    assert np.isnan(lipsync.mouth_errors([None] * 5, steady[:5])["mouth"])

"""The shipped MediaPipe ONNX files against tflite-runtime references stored by tools/convert_mediapipe.py."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import cpu_session
from facefusion_batch.offline import mediapipe as mp

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "mediapipe_reference.npz"
OUTPUTS = {"long_range": ("regressors", "classificators"), "short_range": ("regressors", "classificators"),
           "landmarks": ("landmarks", "face_flag")}
TOLERANCE = 1e-3


def make_session(role: str):
    return cpu_session(mp.asset_path(mp.MODEL_FILES[role]))


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    with np.load(REFERENCE) as data:
        return {key: data[key] for key in data.files}


def run(role: str, session, images: np.ndarray) -> list[np.ndarray]:
    outs = session.run(list(OUTPUTS[role]), {mp.INPUT_NAME: mp.to_nchw(images, mp.INPUT_RANGES[role])})
    return [o.reshape(len(images), -1) for o in outs]


@pytest.mark.parametrize("role", list(mp.MODEL_FILES))
def test_onnx_matches_tflite_reference(role: str, reference: dict[str, np.ndarray]) -> None:
    image = reference[f"{role}/input"]
    outputs = run(role, make_session(role), image[None])
    for name, output in zip(OUTPUTS[role], outputs):
        expected = reference[f"{role}/{name}"]
        assert output[0].shape == expected.shape
        np.testing.assert_allclose(output[0], expected, atol=TOLERANCE, rtol=0, err_msg=f"{role}/{name}")


@pytest.mark.parametrize("role", list(mp.MODEL_FILES))
def test_batched_equals_single(role: str, reference: dict[str, np.ndarray]) -> None:
    image = reference[f"{role}/input"]
    batch = np.stack([image, image[:, ::-1], np.roll(image, 9, axis=0), 255 - image])
    session = make_session(role)
    batched = run(role, session, batch)
    single = [run(role, session, batch[i:i + 1]) for i in range(len(batch))]
    for slot, name in enumerate(OUTPUTS[role]):
        per_image = np.concatenate([s[slot] for s in single])
        np.testing.assert_allclose(batched[slot], per_image, atol=1e-5, rtol=0, err_msg=f"{role}/{name}")


def test_notice_lists_the_shipped_checksums() -> None:
    notice = mp.asset_path("NOTICE.md").read_text()
    assert "Apache" in notice and "Google" in notice
    assert "Apache License" in mp.asset_path("LICENSE").read_text()
    listed = dict(re.findall(r"\| `([\w.]+\.onnx)` \| \d+x\d+ \| `([0-9a-f]{64})` \|", notice))
    for name in mp.MODEL_FILES.values():
        assert listed[name] == hashlib.sha256(mp.asset_path(name).read_bytes()).hexdigest(), name


def test_shipped_files_stay_small() -> None:
    total = sum(mp.asset_path(name).stat().st_size for name in mp.MODEL_FILES.values())
    assert total < 5_000_000
    assert REFERENCE.stat().st_size < 1_000_000

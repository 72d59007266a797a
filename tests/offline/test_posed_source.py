"""A source turned to face the camera when prepared (`classic.frontalised`) keeps its photo as it was taken for faces
turned like it (`engines/offline.py` POSED): such a face gets the source's turned face as the camera saw it, or its
mirror image where turned the other way; a frontal face still gets the frontal face. Real faces: scikit-image's
cameraman (turned ~43°) as the source, the cameraman himself and the astronaut (frontal) as targets."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
from skimage import data as skimage_data

sys.path.insert(0, str(Path(__file__).parent))

from conftest import hopper_processor  # noqa: E402
from facefusion_batch.engines import offline  # noqa: E402
from facefusion_batch.offline import classic  # noqa: E402
from test_frontal_source import cameraman  # noqa: E402


@pytest.fixture(scope="module")
def processor(tmp_path_factory):
    with hopper_processor(tmp_path_factory.mktemp("posed"), cameraman(), output_watermark=False) as made:
        yield made


def astronaut() -> np.ndarray:
    return np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])


def flipped(image: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(image[:, ::-1])


def settled(processor, frame: np.ndarray, memo: dict | None = None):
    """The frame's face as its track decides it (`settle`), on a track with `memo` so far."""
    engine = processor.engine
    face = dataclasses.replace(engine.detect(frame)[0], memo={} if memo is None else memo)
    return engine.settle(frame, [face], processor.source, 0)[0]


def test_the_premise_the_source_is_turned_to_face_the_camera(processor):
    texture, side = processor.engine._textures_of(processor.source)
    assert texture.frontalised and abs(side) > 1.0


@pytest.mark.parametrize("flip", [False, True], ids=["turned-like-the-source", "turned-the-other-way"])
def test_a_face_turned_like_the_photo_is_swapped_from_the_photo_as_taken(processor, flip):
    # The cameraman swapped onto his own photo: from the photo as it was taken, the swap gives back nearly his own face
    # (what changes is the swap's colour and detail matching); from the frontal face turned back, his far half is his
    # near half's mirror image. Turned the other way (the photo flipped), the same from the photo's mirror image.
    # Measured: a mean change of 1.3 and 1.6 grey levels over the face against 5.7 and 9.7.
    frame = flipped(cameraman()) if flip else cameraman()
    engine = processor.engine
    landmarks = engine.detect(frame)[0].landmarks
    chosen = engine.texture_for(processor.source, classic.turn(landmarks))
    front = engine._textures_of(processor.source)[0]
    assert not chosen.frontalised
    posed = classic.visible_change(frame, classic.swap_face(frame, landmarks, chosen), landmarks)
    frontal = classic.visible_change(frame, classic.swap_face(frame, landmarks, front), landmarks)
    assert posed < 0.5 * frontal, (posed, frontal)
    face = settled(processor, frame)
    assert face.posed and face.mirror == flip


def test_a_frontal_face_is_still_swapped_from_the_frontal_face(processor, monkeypatch):
    frame = astronaut()
    engine = processor.engine
    faces = engine.detect(frame)
    assert abs(classic.turn(faces[0].landmarks)) < 0.2  # the premise: she faces the camera
    assert engine.texture_for(processor.source, classic.turn(faces[0].landmarks)).frontalised
    assert not settled(processor, frame).posed
    out = engine.swap(frame.copy(), faces, processor.source)
    monkeypatch.setattr(offline, "POSED", 9.0)  # as before: the frontal face for every face
    assert np.array_equal(out, engine.swap(frame.copy(), faces, processor.source))


def test_a_track_keeps_its_choice_till_the_face_turns_back_past_the_margin(processor, monkeypatch):
    frame = cameraman()
    turn = abs(classic.turn(processor.engine.detect(frame)[0].landmarks))
    side = abs(processor.engine._textures_of(processor.source)[1])
    # Where the face's turn lies just below the choice's bar, a new track takes the frontal face, a track that had
    # taken the photo keeps it (within MIRROR_BACK).
    monkeypatch.setattr(offline, "POSED", (turn + offline.MIRROR_BACK / 2) / side)
    assert not settled(processor, frame).posed
    assert settled(processor, frame, {"posed": True, "mirror": False}).posed
    monkeypatch.setattr(offline, "POSED", (turn + 2 * offline.MIRROR_BACK) / side)
    assert not settled(processor, frame, {"posed": True, "mirror": False}).posed

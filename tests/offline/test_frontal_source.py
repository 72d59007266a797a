"""A turned source face is turned to face the camera once, when it is prepared (`classic.frontalised`), its far
half taken from its near half's mirror image. Real faces: scikit-image's cameraman (turned ~43°), Grace Hopper
and the astronaut (frontal)."""
from __future__ import annotations

import cv2
import numpy as np
import pytest
from skimage import data as skimage_data

from facefusion_batch.offline import classic
from facefusion_batch.offline.mesh_symmetry import MIRROR
from test_classic import SOURCE_IMAGE
from test_turned_faces import mesh  # noqa: F401  (the fixture: image -> landmarks of its most confident face)


def cameraman() -> np.ndarray:
    """The cameraman, enlarged 3x (his face ~210 px), turned ~43° to the image's right."""
    return cv2.resize(cv2.cvtColor(skimage_data.camera(), cv2.COLOR_GRAY2BGR), None, fx=3, fy=3,
                      interpolation=cv2.INTER_CUBIC)


def yaw(landmarks: np.ndarray) -> float:
    """Degrees the mesh is turned about the vertical axis from its mirror-symmetric pose."""
    return float(np.degrees(classic.mirror_turn(landmarks)[1]))


def test_the_mirror_table_pairs_the_two_halves_of_a_face_it_was_not_derived_from(mesh):
    image = cameraman()
    points = mesh(image)
    flipped = mesh(np.ascontiguousarray(image[:, ::-1]))
    flipped[:, 0] = image.shape[1] - flipped[:, 0]
    size = classic._face_size(points[:, :2])
    paired = np.linalg.norm(points[:, :2] - flipped[MIRROR, :2], axis=1) / size
    assert paired.mean() < 0.05 and np.percentile(paired, 95) < 0.1
    assert (MIRROR[MIRROR] == np.arange(468)).all()
    assert set(MIRROR[list(classic.EYES[0])]) == set(classic.EYES[1])
    assert set(MIRROR[list(classic.OUTER_LIPS)]) == set(classic.OUTER_LIPS)
    assert MIRROR[classic.NOSE_TIP] == classic.NOSE_TIP and MIRROR[classic.CHIN] == classic.CHIN


@pytest.mark.parametrize("which", ["hopper", "astronaut"])
def test_a_frontal_source_is_prepared_as_it_is(mesh, which):
    image = (cv2.imread(str(SOURCE_IMAGE)) if which == "hopper"
             else np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1]))
    texture = classic.prepare_source(image, mesh(image))
    assert not texture.frontalised
    assert classic.frontalised(texture) is None


@pytest.fixture(scope="module")
def turned(mesh) -> tuple[np.ndarray, classic.SourceTexture]:
    image = cameraman()
    landmarks = mesh(image)
    return landmarks, classic.prepare_source(image, landmarks)


def test_a_turned_source_is_turned_to_face_the_camera(turned):
    landmarks, texture = turned
    assert abs(yaw(landmarks)) > 30 and abs(classic.turn(landmarks)) > 1.0  # the premise
    assert texture.frontalised
    front = np.column_stack([texture.landmarks, texture.depth])
    assert abs(yaw(front)) < 2 and abs(classic.turn(front)) < 0.3  # from 1.26: its nose over the cheeks' middle
    # The same face, only turned: the mesh's shape in 3-D is kept.
    original = landmarks.astype(np.float64) - landmarks.mean(axis=0)
    kept = front - front.mean(axis=0)
    assert np.allclose(np.linalg.norm(original, axis=1), np.linalg.norm(kept, axis=1), atol=1e-6 * classic._face_size(
        landmarks[:, :2]) + 1e-3)


def test_a_turned_source_keeps_its_forehead_only_as_far_up_as_its_photo_shows_skin(turned):
    # The cameraman's cap comes down to his brows: his photo's texture keeps the forehead up to 0.3 of its height and
    # fills the rest (`face_only`); the turned face is drawn from that texture, where the fill would read as skin.
    landmarks, texture = turned
    photo = classic._prepared(cameraman(), landmarks)
    assert photo.forehead_keep < 0.5  # the premise: his cap
    assert classic._prepared(*classic.frontalised(photo)).forehead_keep > 0.8  # the premise: measured on the fill
    assert texture.frontalised and texture.forehead_keep == photo.forehead_keep


def test_the_far_half_is_the_near_halfs_mirror_image(turned):
    landmarks, texture = turned
    image, points = texture.levels[0], texture.landmarks
    near_is_left = classic.turn(landmarks) > 0  # turned to the image's right: the image-left half is nearer

    def eye(ring: tuple[int, ...], flip: bool) -> np.ndarray:
        low = np.floor(points[list(ring)].min(axis=0)).astype(int) - 6
        high = np.ceil(points[list(ring)].max(axis=0)).astype(int) + 6
        patch = cv2.cvtColor(image[low[1]:high[1], low[0]:high[0]], cv2.COLOR_BGR2GRAY).astype(np.float32)
        return cv2.resize(patch[:, ::-1] if flip else patch, (48, 24), interpolation=cv2.INTER_AREA)

    near, far = (classic.EYES[0], classic.EYES[1]) if near_is_left else (classic.EYES[1], classic.EYES[0])
    a, b = eye(near, False), eye(far, True)
    correlation = float(np.corrcoef(a.ravel(), b.ravel())[0, 1])
    assert correlation > 0.8
    # Both eyes open about as wide as each other: the far one is no longer foreshortened.
    widths = [np.ptp(points[list(ring), 0]) for ring in classic.EYES]
    assert min(widths) / max(widths) > 0.7
    raw = [np.ptp(landmarks[list(ring), 0]) for ring in classic.EYES]
    assert min(raw) / max(raw) < 0.6  # the premise: foreshortened in the photo


def test_a_frontal_target_is_swapped_from_the_turned_sources_frontal_face(turned, mesh):
    _, texture = turned
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    swapped = classic.swap_face(frame, mesh(frame), texture)
    assert classic.visible_change(frame, swapped, mesh(frame)) > 10

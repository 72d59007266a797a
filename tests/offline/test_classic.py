"""The classical swapper on real faces: Grace Hopper (source) onto the astronaut (target).

Landmarks come from the packaged MediaPipe models, so these tests exercise the same path as the tool.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import cv2
import numpy as np
import pytest
from skimage import data as skimage_data

from conftest import cpu_session
from facefusion_batch.offline import classic
from facefusion_batch.offline.mediapipe import MODEL_FILES, MediaPipeDetector, MediaPipeLandmarker, asset_path

SOURCE_IMAGE = Path(__file__).resolve().parents[2] / "examples" / "source.jpg"


@pytest.fixture(scope="module")
def mesh():
    """A function: BGR frame -> (468, 3) landmarks of its most confident face."""
    def session(role: str):
        return cpu_session(asset_path(MODEL_FILES[role]))

    detector = MediaPipeDetector(session("long_range"), session("short_range"))
    landmarker = MediaPipeLandmarker(session("landmarks"))

    def landmarks(frame: np.ndarray) -> np.ndarray:
        detections = detector.detect([frame])[0]
        assert detections, "no face found"
        return landmarker.landmarks(frame, detections[:1])[0]

    return landmarks


@pytest.fixture(scope="module")
def source(mesh) -> classic.SourceTexture:
    image = cv2.imread(str(SOURCE_IMAGE))
    return classic.prepare_source(image, mesh(image))


def rolled_astronaut() -> np.ndarray:
    """The astronaut turned 20 degrees and shrunk, on a 640x360 frame: a smaller, tilted face."""
    matrix = cv2.getRotationMatrix2D((226, 135), 20, 0.8)
    matrix[:, 2] += (320 - 226, 180 - 135)
    return cv2.warpAffine(skimage_data.astronaut()[:, :, ::-1], matrix, (640, 360),
                          borderMode=cv2.BORDER_REFLECT101)


@pytest.fixture(scope="module", params=["frontal", "rolled"])
def target(request, mesh) -> tuple[np.ndarray, np.ndarray]:
    frame = (np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1]) if request.param == "frontal"
             else rolled_astronaut())
    return frame, mesh(frame)


@pytest.fixture(scope="module")
def swapped(target, source) -> np.ndarray:
    frame, landmarks = target
    return classic.swap_face(frame, landmarks, source)


def polygon_mask(frame: np.ndarray, points: np.ndarray, erode: int = 0) -> np.ndarray:
    mask = np.zeros(frame.shape[:2], np.uint8)
    cv2.fillPoly(mask, [np.round(points - 0.5).astype(np.int32)], 1)
    if erode:
        mask = cv2.erode(mask, np.ones((2 * erode + 1,) * 2, np.uint8))
    return mask.astype(bool)


def skin(frame: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
    """Boolean mask of the face's core: the trimmed oval, well inside, without the mouth."""
    xy = landmarks[:, :2]
    return (polygon_mask(frame, classic.mask_ring(xy), erode=4)
            & ~polygon_mask(frame, xy[list(classic.INNER_LIPS)]))


def mean_lab(frame: np.ndarray, where: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(frame, cv2.COLOR_BGR2LAB)[where].astype(np.float64).mean(axis=0)


def test_output_is_a_new_frame_of_the_same_shape_and_dtype(target, swapped):
    frame, _ = target
    assert swapped.shape == frame.shape and swapped.dtype == frame.dtype
    assert swapped is not frame


def test_face_region_changes_substantially(target, swapped):
    frame, landmarks = target
    core = skin(frame, landmarks)
    difference = np.abs(swapped.astype(int) - frame.astype(int)).sum(axis=2)
    assert core.sum() > 2000
    assert difference[core].mean() > 30


def test_pixels_outside_the_face_rect_are_untouched(target, swapped):
    frame, landmarks = target
    size = np.linalg.norm(landmarks[classic.FOREHEAD, :2] - landmarks[classic.CHIN, :2])
    margin = (classic.RING_SCALE - 1 + classic.FEATHER) * size + 2  # the ring and its feather's reach
    low = np.floor(landmarks[:, :2].min(axis=0) - margin).astype(int)
    high = np.ceil(landmarks[:, :2].max(axis=0) + margin).astype(int)
    assert margin < 0.2 * size
    outside = np.ones(frame.shape[:2], bool)
    outside[max(low[1], 0):high[1], max(low[0], 0):high[0]] = False
    assert np.array_equal(swapped[outside], frame[outside])


def skin_only(frame: np.ndarray, landmarks: np.ndarray, source: classic.SourceTexture) -> np.ndarray:
    """The face's core less the target's features and the source's (where the swap draws them)."""
    size = float(np.linalg.norm(landmarks[classic.FOREHEAD, :2] - landmarks[classic.CHIN, :2]))
    shape = frame.shape[:2]
    bare = (classic.feature_weights(landmarks[:, :2] - 0.5, shape, size) > 0.99) & (
        classic.feature_weights(classic.identity_points(landmarks, source) - 0.5, shape, size) > 0.99)
    return skin(frame, landmarks) & bare


def test_swapped_face_takes_the_target_skin_tone(target, swapped, source):
    frame, landmarks = target
    core = skin_only(frame, landmarks, source)
    target_lab, result_lab = mean_lab(frame, core), mean_lab(swapped, core)
    # Without colour transfer the source's redder, darker skin would be far off; with it, close.
    plain = classic.warp_source(source, landmarks[:, :2] - 0.5, None, frame.shape[1::-1])
    assert np.abs(mean_lab(plain, core) - target_lab).max() > 12
    assert np.abs(result_lab - target_lab).max() < 8


def test_mouth_interior_is_the_targets(target, source, swapped):
    frame, landmarks = target
    mouth = polygon_mask(frame, landmarks[list(classic.INNER_LIPS), :2], erode=1)
    assert mouth.sum() > 20  # the astronaut smiles with her teeth showing
    kept = np.abs(swapped[mouth].astype(int) - frame[mouth].astype(int)).mean()
    covered = classic.swap_face(frame, landmarks, source, keep_mouth=False)
    replaced = np.abs(covered[mouth].astype(int) - frame[mouth].astype(int)).mean()
    assert kept < 6 and replaced > 3 * kept + 10


def test_the_lips_around_a_kept_mouth_are_the_sources(target, source):
    """Only the mouth's opening is the target's: the mask's feather, drawn inside the face's outline, once
    grew the opening by as much, so that the target's own lips showed around it (t1.jpg's smiling faces with
    every tune source: judge distance 0.551 -> 0.508, accepted 69 % -> 80 %, docs/quality.md)."""
    frame, landmarks = target
    xy = landmarks[:, :2] - 0.5
    size = float(np.linalg.norm(xy[classic.FOREHEAD] - xy[classic.CHIN]))
    mask = classic.face_mask(xy, frame.shape[:2], size)
    inner = polygon_mask(frame, landmarks[list(classic.INNER_LIPS), :2])
    lips = polygon_mask(frame, landmarks[list(classic.OUTER_LIPS), :2]) & ~cv2.dilate(
        inner.astype(np.uint8), np.ones((5, 5), np.uint8)).astype(bool)  # off the opening's own soft edge
    opening = polygon_mask(frame, landmarks[list(classic.INNER_LIPS), :2], erode=2)
    assert lips.sum() > 30 and opening.sum() > 10
    assert mask[lips].mean() > 0.85  # 0.996; 0.41 / 0.56 when the feather grew the opening
    assert mask[opening].mean() < 0.3


def test_eyes_can_be_kept(target, source, swapped):
    frame, landmarks = target
    eyes = np.logical_or.reduce([polygon_mask(frame, landmarks[list(ring), :2], erode=1) for ring in classic.EYES])
    assert eyes.sum() > 10
    kept = classic.swap_face(frame, landmarks, source, keep_eyes=True)
    assert np.abs(kept[eyes].astype(int) - frame[eyes].astype(int)).mean() < 10
    assert np.abs(swapped[eyes].astype(int) - frame[eyes].astype(int)).mean() > 20


def test_two_dimensional_landmarks_work(target, source, swapped):
    frame, landmarks = target
    flat = classic.swap_face(frame, landmarks[:, :2], source)
    core = skin(frame, landmarks)
    # (Without depth the source's shape is fitted in 2-D, so a slightly turned face differs a little more.)
    assert np.abs(flat[core].astype(int) - swapped[core].astype(int)).mean() < 4


def test_face_partly_outside_the_frame_is_swapped_where_visible(source, mesh):
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    landmarks = mesh(frame)
    shift = np.array([226.0 - 40, 0, 0], np.float32)  # face centre near the left edge
    moved = np.roll(frame, -int(shift[0]), axis=1)
    result = classic.swap_face(moved, landmarks - shift, source)
    assert result.shape == moved.shape
    assert np.abs(result.astype(int) - moved.astype(int)).sum(axis=2)[60:180, :60].mean() > 10


@pytest.mark.parametrize("landmarks", [
    np.full((468, 3), 100.0, np.float32),  # collapsed to one point
    np.full((468, 2), -5000.0, np.float32),  # far outside the frame
    np.random.default_rng(0).uniform(5000, 6000, (468, 3)).astype(np.float32),  # off-frame, spread
    np.full((468, 3), np.nan, np.float32),
], ids=["collapsed", "outside", "outside-spread", "nan"])
def test_degenerate_landmarks_leave_the_frame_unchanged(source, landmarks):
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    result = classic.swap_face(frame, landmarks, source)
    assert np.array_equal(result, frame) and result is not frame


def test_wrong_landmark_shape_is_rejected(source):
    frame = np.zeros((64, 64, 3), np.uint8)
    with pytest.raises(ValueError, match="468"):
        classic.swap_face(frame, np.zeros((68, 2), np.float32), source)


def test_degenerate_source_is_rejected():
    with pytest.raises(ValueError, match="source landmarks"):
        classic.prepare_source(np.zeros((64, 64, 3), np.uint8), np.full((468, 2), 10.0, np.float32))


def test_source_triangulation_covers_the_mesh(source):
    triangles = source.triangles
    assert triangles.shape[1] == 3 and len(triangles) > 800
    assert set(np.unique(triangles)) == set(range(classic.LANDMARK_COUNT))


def squeezed(landmarks: np.ndarray, side: float) -> np.ndarray:
    """The landmarks with the half of the face on one side of the nose compressed 5x towards the nose (as
    the far half of a turned face is): `side` +1 squeezes the image-right half, -1 the left."""
    out = landmarks.copy()
    nose_x = landmarks[classic.NOSE_TIP, 0]
    far = (landmarks[:, 0] - nose_x) * side > 0
    out[far, 0] = nose_x + (landmarks[far, 0] - nose_x) / 5
    return out


def test_rim_triangles_stretched_from_an_edge_on_source_draw_its_skin_and_nothing_else(source, mesh):
    """Rim triangles the target's pose stretches out of an edge-on strip of the source (or turns away) take the
    target's skin with none of the source's detail where the source's texture there is not its skin: its ear,
    hair or backdrop never show (stripes and white notches once stretched). Where it is its skin, it is drawn
    stretched (session 42: the judge finds and accepts more turned faces so). Before session 40 the mask was cut
    there and the target's own cheek stayed, a band of the target's face on turned faces (docs/quality.md)."""
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    target = mesh(frame)
    assert len(classic.hidden_triangles(source, target[:, :2])) < 10, "a frontal target tears nothing"
    # A source whose one half is squeezed (turned away) would be stretched back out on a frontal target.
    squeezed_source = classic.prepare_source(cv2.imread(str(SOURCE_IMAGE)), squeezed(mesh(cv2.imread(
        str(SOURCE_IMAGE))), +1))
    hidden = classic.hidden_triangles(squeezed_source, target[:, :2])
    assert len(hidden) > 10
    assert np.isin(squeezed_source.triangles[hidden], classic.FACE_OVAL).any(axis=1).all(), "only the rim"
    cheeks = classic._cheek_colour(squeezed_source.levels[0].astype(np.float32), squeezed_source.landmarks,
                                   squeezed_source.size)

    def painted(phase: float, stripes: int | None = None) -> classic.SourceTexture:
        """The source painted all over in its cheeks' colour, lighter and darker by turns across (skin with a
        pattern, shifted by ``phase``), and where ``stripes`` is 0 or 1, black and white stripes (starting with
        white where 1) over the hidden triangles."""
        levels = []
        for level, image in enumerate(squeezed_source.levels):
            across = np.arange(image.shape[1]) * 2 ** level / squeezed_source.size
            wave = 1 + 0.15 * np.sin(2 * np.pi * (8 * across + phase))
            out = np.broadcast_to(np.clip(cheeks[None, None, :] * wave[None, :, None], 0, 255).astype(np.uint8),
                                  image.shape)
            if stripes is not None:
                over = np.zeros(image.shape[:2], np.uint8)
                for corners in squeezed_source.landmarks[squeezed_source.triangles[hidden]] / 2 ** level - 0.5:
                    cv2.fillConvexPoly(over, np.round(corners).astype(np.int32), 1)
                black_white = np.where((np.arange(image.shape[1]) // 2 + stripes) % 2, 255, 0).astype(np.uint8)
                out = np.where(over[..., None] > 0, black_white[None, :, None], out)
            levels.append(np.ascontiguousarray(out))
        return dataclasses.replace(squeezed_source, levels=tuple(levels))

    band = np.zeros(frame.shape[:2], np.uint8)
    for corners in target[squeezed_source.triangles[hidden], :2] - 0.5:
        cv2.fillConvexPoly(band, np.round(corners).astype(np.int32), 1)

    def difference(first: classic.SourceTexture, second: classic.SourceTexture) -> float:
        """Mean change over the band between the swaps of two sources."""
        one, other = (classic.swap_face(frame, target, s).astype(int) for s in (first, second))
        return float(np.abs(one - other)[band > 0].mean())

    assert painted(0.0).skin[0].min() > 0.99, "premise: the patterned skin is skin"
    # The stripes do not show: which of them is white makes no difference.
    assert difference(painted(0.0, stripes=0), painted(0.0, stripes=1)) < 1
    # The source's skin does, pattern and all: its light and dark turns swapped show.
    assert difference(painted(0.0), painted(0.5)) > 3


def test_the_swap_reaches_the_faces_outline(source, mesh):
    """The source's face is laid on up to the target's outline (cheeks, jaw line): a band of the target's own
    face left around it (the mask pulled inside the oval with a wide feather) diluted the identity (tune split:
    judge accepts 58 % -> 66 %, docs/quality.md)."""
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    landmarks = mesh(frame)
    xy = landmarks[:, :2]
    oval = xy[list(classic.FACE_OVAL)]
    centre = oval.mean(axis=0)
    below_eyes = np.indices(frame.shape[:2])[0] > xy[list(classic.OUTER_EYE_CORNERS), 1].mean()
    band = (polygon_mask(frame, centre + (oval - centre) * 0.97) & ~polygon_mask(frame, centre + (oval - centre) * 0.88)
            & below_eyes)
    core = polygon_mask(frame, centre + (oval - centre) * 0.6)
    change = np.abs(classic.swap_face(frame, landmarks, source).astype(int) - frame.astype(int)).sum(axis=2)
    assert band.sum() > 500
    assert change[band].mean() > 0.5 * change[core].mean()  # 0.27 with the ring at 0.96 of the oval


@pytest.mark.parametrize("scale", [0.12, 0.3, 1.0])
def test_the_mask_reaches_the_outline_at_every_size(mesh, scale):
    """The feather is centred on the ring, not drawn inside it: drawn 1.5 sigmas inside, the outline was the
    target's own (mask 0.07-0.12 on it), on small faces most (stills of the tune photos: judge distance
    0.497 -> 0.473 without that band, docs/quality.md)."""
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    xy = mesh(frame)[:, :2] * scale - 0.5
    size = float(np.linalg.norm(xy[classic.FOREHEAD] - xy[classic.CHIN]))
    mask = classic.face_mask(xy, (int(512 * scale), int(512 * scale)), size)
    eyes = xy[list(classic.OUTER_EYE_CORNERS), 1].mean()
    x, y = np.round(xy[[i for i in classic.FACE_OVAL if xy[i, 1] > eyes]]).astype(int).T
    assert mask[y, x].mean() > 0.4


@pytest.mark.parametrize("scale", [0.12, 1.0, 2.0])
def test_the_chin_of_a_large_face_does_not_spill_onto_the_neck(mesh, scale):
    """Below a large face's chin the mask ends at the jaw line: centred on it, the feather laid the source's lit
    chin over the target's shaded neck and collar (a pale band, the benchmark's phantom swaps on a close-up).
    A small face keeps its chin's outline (identity), where a pixel of spill does not show."""
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    xy = mesh(frame)[:, :2] * scale - 0.5
    size = float(np.linalg.norm(xy[classic.FOREHEAD] - xy[classic.CHIN]))
    mask = classic.face_mask(xy, (int(512 * scale), int(512 * scale)), size)
    sigma = classic.FEATHER * size / 3
    down = (xy[classic.CHIN] - xy[classic.FOREHEAD]) / size
    below = np.round(classic.mask_ring(xy)[list(classic.FACE_OVAL).index(classic.CHIN)] + down * sigma).astype(int)
    x, y = np.round(xy[list(classic.CHEEK_LINE)]).astype(int).T
    assert mask[y, x].mean() > 0.4  # the sides reach the outline at every size
    if sigma > 2 * classic.CHIN_FREE:
        assert mask[below[1], below[0]] < 0.05  # 0.25 with the feather centred on the line
    else:
        assert mask[below[1], below[0]] > 0.1


def test_the_sources_surroundings_never_show(target, mesh):
    """Beyond its ring (the oval, its forehead lowered to below the hairline) the source is its own skin colour,
    softened: the feather reaches past the ring, and the source's hair, a hat or a dark wall there lay over the
    target's forehead and jaw as a grey band."""
    frame, landmarks = target
    image = cv2.imread(str(SOURCE_IMAGE))
    points = mesh(image)
    keep = classic.prepare_source(image, points).forehead_keep
    dark = image.copy()
    dark[~polygon_mask(image, classic.mask_ring(points[:, :2], keep))] = 0
    swapped = classic.swap_face(frame, landmarks, classic.prepare_source(dark, points))
    lightness = lambda bgr: cv2.cvtColor(bgr, cv2.COLOR_BGR2LAB)[..., 0].astype(int)  # noqa: E731
    beyond = ~polygon_mask(frame, classic.mask_ring(landmarks[:, :2], keep))
    darker = (lightness(frame) - lightness(swapped))[beyond]
    assert np.percentile(darker, 99.9) < 18  # 8-12; the dark surroundings carried over: 22-28


def test_whether_a_swap_shows_is_measured_alike_whatever_the_mask_covers(target, swapped, monkeypatch):
    """The engine leaves a swap changing the face by less than FAINT; that change is measured over a fixed
    region of the face, not the mask's box: measured over the grown mask's box the same swaps of the tune
    split's 30-40 px faces read ~15 % fainter, and twice as many were left unswapped."""
    frame, landmarks = target
    measured = classic.visible_change(frame, swapped, landmarks)
    monkeypatch.setattr(classic, "RING_SCALE", 1.1)
    assert classic.visible_change(frame, swapped, landmarks) == measured


def yawed(landmarks: np.ndarray, degrees: float) -> np.ndarray:
    """The mesh turned about its centre's vertical axis by `degrees` (in 3-D, then seen from the front)."""
    centre = landmarks.mean(axis=0)
    angle = np.radians(degrees)
    rotation = np.array([[np.cos(angle), 0, np.sin(angle)], [0, 1, 0], [-np.sin(angle), 0, np.cos(angle)]])
    return (landmarks - centre) @ rotation.T + centre


def test_a_turned_faces_change_is_measured_over_a_box_as_wide_as_the_face(mesh):
    """Whether a swap shows is measured over a face box as wide as the face is in 3-D (as detectors and the
    quality judge draw one), not over the turned face's narrower outline: a swap of a turned face covers less
    of such a box. Over the outline's box, t1.jpg's turned faces read 1.3x what a face box shows, and swaps
    left as visible changed them by 3-5 grey levels (faint)."""
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    landmarks = mesh(frame).astype(np.float64)

    def whole_face_changed(points: np.ndarray) -> float:
        face = polygon_mask(frame, points[list(classic.FACE_OVAL), :2])[..., None]
        after = np.where(face, np.where(frame > 127, frame - 20, frame + 20), frame).astype(np.uint8)
        return classic.visible_change(frame, after, points)

    frontal, turned = whole_face_changed(landmarks), whole_face_changed(yawed(landmarks, 40))
    assert classic.turn(yawed(landmarks, 40)) < -1.0, "premise: turned ~40 degrees"
    assert turned < 0.8 * frontal, (turned, frontal)  # 0.75; over the outline's box 0.84


def test_a_source_with_a_high_hairline_covers_the_targets_forehead(mesh):
    image = cv2.imread(str(SOURCE_IMAGE))
    landmarks = mesh(image)
    xy = landmarks[:, :2].astype(np.float64)
    # Grace Hopper's cap and hair painted in her cheeks' colour: skin up to the top of the face oval (bald).
    eyes = xy[list(classic.OUTER_EYE_CORNERS)].mean(axis=0)
    forehead = np.round(eyes + 0.6 * (xy[classic.FOREHEAD] - eyes)).astype(int)
    cheek = np.round(xy[classic.CHEEKS[0]]).astype(int)
    bald = image.copy()
    bald[:forehead[1]] = cv2.blur(image, (9, 9))[cheek[1], cheek[0]]
    assert classic.skin_height(bald, xy) > 0.95
    source = classic.prepare_source(bald, landmarks)
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    target = mesh(frame)
    t_eyes = target[list(classic.OUTER_EYE_CORNERS), :2].mean(axis=0)
    t_top = target[classic.FOREHEAD, :2]
    size = float(np.linalg.norm(target[classic.FOREHEAD, :2] - target[classic.CHIN, :2]))
    mask = classic.face_mask(target[:, :2] - 0.5, frame.shape[:2], size, forehead_keep=source.forehead_keep)
    x, y = np.round(t_eyes + 0.8 * (t_top - t_eyes)).astype(int)
    assert mask[y, x] > 0.5  # the forehead is swapped up to 0.8 of its height above the eyes (0.75 before)


def test_skin_height_finds_a_fringe(source, mesh):
    image = cv2.imread(str(SOURCE_IMAGE))
    landmarks = mesh(image)
    xy = landmarks[:, :2].astype(np.float64)
    assert classic.skin_height(image, xy) > 0.7, "Grace Hopper's forehead is skin up to her cap"
    fringe = image.copy()
    eyes = xy[list(classic.OUTER_EYE_CORNERS)].mean(axis=0)
    top = xy[classic.FOREHEAD]
    cut = int(round(eyes[1] + 0.5 * (top[1] - eyes[1])))  # hair down to half way from the top to the eyes
    fringe[:cut] = (20, 30, 60)
    assert 0.4 <= classic.skin_height(fringe, xy) <= 0.55
    fringed = classic.prepare_source(fringe, landmarks)
    assert fringed.forehead_keep < source.forehead_keep


def test_colour_keeps_the_targets_shading_and_never_clips_highlights():
    rng = np.random.default_rng(0)
    face = np.clip(rng.normal(150, 20, (120, 120, 3)), 0, 255).astype(np.uint8)  # a flat, detailed source
    ramp = np.linspace(60, 240, 120, dtype=np.float32)  # a target lit from the right, bright at the edge
    target = np.repeat(np.repeat(ramp[None, :, None], 120, axis=0), 3, axis=2).astype(np.uint8)
    mask = np.zeros((120, 120), np.float32)
    mask[10:110, 10:110] = 1
    out = classic.match_colour(face, target, mask)
    columns = out[20:100].astype(float).mean(axis=(0, 2))
    assert columns[80:100].mean() - columns[20:40].mean() > 60, "the side lighting stays"
    assert (out[20:100, 20:100] == 255).mean() < 0.01, "highlights are compressed, not clipped"
    detail = out[20:100, 20:100].astype(float) - cv2.blur(out[20:100, 20:100], (9, 9)).astype(float)
    assert detail.std() > 8, "the source's detail survives"


def test_turn_measures_how_far_a_face_is_turned(mesh):
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    landmarks = mesh(frame)
    assert abs(classic.turn(landmarks)) < 0.3
    profile = landmarks.copy()
    profile[list(classic.CHEEK_LINE), :2] = [(100, 100), (160, 100)]  # the cheek line seen edge-on, short
    profile[classic.NOSE_TIP, :2] = (210, 105)  # the nose tip well beyond the near cheek
    assert classic.turn(profile) > classic.PROFILE
    profile[classic.NOSE_TIP, :2] = (50, 105)
    assert classic.turn(profile) < -classic.PROFILE


def _drawn_apart(source: classic.SourceTexture, octaves: float) -> float:
    """Mean change of the face's middle between drawing it 2 ** -(octaves -+ 0.004) times the source's size."""
    drawn = []
    for shift in (-0.004, 0.004):
        points = source.landmarks.astype(np.float64) * 2.0 ** -(octaves + shift)
        centre = points.mean(axis=0)
        points += 64 - centre  # both drawings centred on the same pixel
        drawn.append(classic.warp_source(source, points - 0.5, None, (128, 128)).astype(np.float32))
    return float(np.abs(drawn[0] - drawn[1])[44:84, 44:84].mean())


@pytest.mark.parametrize("octaves", [1.0, 1.5, 2.0])
def test_a_zooming_face_changes_smoothly_across_pyramid_levels(source, octaves):
    # The same face drawn at two sizes 0.6 % apart, on either side of a pyramid level or of the half-way
    # point between two, changes no more than between two sizes within one level: the texture never pops
    # (sharper or blurrier all at once) as a face zooms. (1.9: beyond its ring the source is a smooth fill, so
    # the change within a level is smaller than the face's own; 1.74 at 2 octaves, 4-5.5 without the alias blur.)
    assert len(source.levels) > int(np.ceil(octaves))
    assert _drawn_apart(source, octaves) < 1.9 * max(_drawn_apart(source, octaves + 0.2), 0.3)


def detail(frame: np.ndarray, where: np.ndarray) -> float:
    """Mean squared gradient of the grey frame over `where` (sensor-noise scale smoothed away)."""
    grey = cv2.GaussianBlur(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY).astype(np.float32), (0, 0), 0.7)
    gx, gy = cv2.Sobel(grey, cv2.CV_32F, 1, 0), cv2.Sobel(grey, cv2.CV_32F, 0, 1)
    return float((gx * gx + gy * gy)[where].mean())


@pytest.fixture(scope="module")
def soft_target(mesh) -> tuple[np.ndarray, np.ndarray]:
    """The astronaut, small and out of focus (a soft video face): far less detail than the source photo."""
    frame = cv2.resize(np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1]), (256, 256),
                       interpolation=cv2.INTER_AREA)
    frame = cv2.GaussianBlur(frame, (0, 0), 1.2)
    return frame, mesh(frame)


def test_a_source_sharper_than_the_target_is_softened_to_its_detail(soft_target, source, monkeypatch):
    frame, landmarks = soft_target
    core = skin(frame, landmarks)
    monkeypatch.setattr(classic, "DETAIL_DEPTH_MIN", 1.0)  # sharpness alone: the features' depth has its own test
    swapped = classic.swap_face(frame, landmarks, source)
    monkeypatch.setattr(classic, "match_detail", lambda warped, *a: warped)
    unmatched = classic.swap_face(frame, landmarks, source)
    assert detail(unmatched, core) > 1.5 * detail(frame, core), "the premise: the source photo is sharper"
    assert detail(swapped, core) < 1.3 * detail(frame, core)
    assert np.abs(swapped[core].astype(int) - frame[core].astype(int)).mean() > 10, "still swapped"


def test_a_source_no_sharper_than_the_target_keeps_its_detail():
    rng = np.random.default_rng(3)
    sharp = rng.integers(0, 256, (80, 80, 3), dtype=np.uint8)
    soft = cv2.GaussianBlur(sharp, (0, 0), 2.0)
    mask = np.zeros((80, 80), np.float32)
    mask[10:70, 10:70] = 1
    assert classic.match_detail(soft, sharp, mask, 200.0) is soft
    softened = classic.match_detail(sharp, soft, mask, 200.0)
    assert detail(softened, mask > 0.5) < 1.3 * detail(soft, mask > 0.5) < detail(sharp, mask > 0.5)
    # The softening is bounded by the face size (SOFTEN_MAX): a very soft target does not smear the source,
    # and a small face keeps its features (a 30 px face of a far wall: at most half a pixel of blur, where a
    # pixel cost the judge's acceptance a third of the faces).
    blurry = cv2.GaussianBlur(sharp, (0, 0), 6.0)
    capped = classic.match_detail(sharp, blurry, mask, 20.0)
    assert np.array_equal(capped, cv2.GaussianBlur(sharp, (0, 0), classic.SOFTEN_MAX * 20.0))
    small = classic.match_detail(sharp, blurry, mask, 30.0)
    assert detail(small, mask > 0.5) >= detail(cv2.GaussianBlur(sharp, (0, 0), 0.5), mask > 0.5)
    # A featureless target (flat, or a face hidden by something plain) gives nothing to match.
    assert classic.match_detail(sharp, np.full_like(sharp, 128), mask, 70.0) is sharp


def smear(frame: np.ndarray, where: np.ndarray, way: tuple[float, float]) -> float:
    """Detail across the unit vector `way` over detail along it: large where the picture is smeared along it."""
    grey = cv2.GaussianBlur(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY).astype(np.float32), (0, 0), 0.7)
    gx, gy = cv2.Sobel(grey, cv2.CV_32F, 1, 0), cv2.Sobel(grey, cv2.CV_32F, 0, 1)
    along, across = gx * way[0] + gy * way[1], gy * way[0] - gx * way[1]
    return float((across * across)[where].mean() / (along * along)[where].mean())


@pytest.mark.parametrize("way", [(1.0, 0.0), (0.6, 0.8), (0.0, 1.0)])
def test_a_face_smeared_by_a_fast_pan_is_swapped_with_a_smear_alike(source, mesh, way):
    # The astronaut's face (~130 px) smeared 24 px along `way`, as a whip pan's shutter smears it. A pan's
    # (sideways) smear is matched; one across the face's own lines is read short (see classic.SMEAR_STEPS), so
    # there the swap is only smeared more than without.
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    landmarks = mesh(frame)
    length = 24
    line = np.zeros((length + 1, length + 1), np.float32)
    for t in np.linspace(-length / 2, length / 2, 4 * length):
        line[int(round(length / 2 + t * way[1])), int(round(length / 2 + t * way[0]))] = 1
    smeared = cv2.filter2D(frame, -1, line / line.sum(), borderType=cv2.BORDER_REFLECT)
    core = skin(frame, landmarks)
    motion = (40 * way[0], 40 * way[1])
    moving = classic.swap_face(smeared, landmarks, source, motion=motion)
    still = classic.swap_face(smeared, landmarks, source)
    assert smear(still, core, way) < 0.5 * smear(smeared, core, way), "the premise: the sharp swap is not smeared"
    assert smear(moving, core, way) < 1.6 * smear(smeared, core, way)
    assert smear(moving, core, way) > (0.6 * smear(smeared, core, way) if way == (1.0, 0.0)
                                       else 1.3 * smear(still, core, way))
    assert np.abs(moving[core].astype(int) - smeared[core].astype(int)).mean() > 8, "still swapped"
    # Moving as fast with a fast shutter (no smear): nothing smeared. Nor across the smear.
    assert np.array_equal(classic.swap_face(frame, landmarks, source, motion=motion),
                          classic.swap_face(frame, landmarks, source))
    across = classic.swap_face(smeared, landmarks, source, motion=(-motion[1], motion[0]))
    assert smear(across, core, way) < 0.5 * smear(smeared, core, way)


def test_a_sharp_source_on_a_panning_soft_face_adds_little_flicker(soft_target, source, monkeypatch):
    """A face moving 1.5 px a frame: the output's frame-to-frame change inside the face, beyond the input's,
    is what the sharp source's edges add (the quality benchmark's added flicker)."""
    frame, landmarks = soft_target
    frames, points = [], []
    for step in range(6):
        matrix = np.float32([[1, 0, 1.5 * step], [0, 1, 0.5 * step]])
        frames.append(cv2.warpAffine(frame, matrix, frame.shape[1::-1], flags=cv2.INTER_CUBIC,
                                     borderMode=cv2.BORDER_REFLECT101))
        moved = landmarks.copy()
        moved[:, :2] += (1.5 * step, 0.5 * step)
        points.append(moved)
    x1, y1 = landmarks[:, :2].min(axis=0) + 10
    x2, y2 = landmarks[:, :2].max(axis=0) - 10
    box = (slice(int(y1), int(y2)), slice(int(x1), int(x2)))

    def added_flicker() -> float:
        out = [classic.swap_face(f, p, source) for f, p in zip(frames, points)]
        change = [np.abs(b[box].astype(int) - a[box].astype(int)).mean() for a, b in zip(out, out[1:])]
        own = [np.abs(b[box].astype(int) - a[box].astype(int)).mean() for a, b in zip(frames, frames[1:])]
        return float(np.mean(change) - np.mean(own))

    matched = added_flicker()
    monkeypatch.setattr(classic, "match_detail", lambda warped, *a: warped)
    assert matched < 0.6 * added_flicker()


# ---- identity and colour on real faces (issue 21): a warm-lit target, a greyscale source, tinted glasses

def warm(frame: np.ndarray, gain: float) -> np.ndarray:
    """The frame with its chroma (LAB a, b) multiplied by `gain`: a face under warm light."""
    lab = cv2.cvtColor(frame, cv2.COLOR_BGR2LAB).astype(np.float32)
    lab[..., 1:] = (lab[..., 1:] - 128) * gain + 128
    return cv2.cvtColor(np.clip(lab, 0, 255).astype(np.uint8), cv2.COLOR_LAB2BGR)


def half_turned(frame: np.ndarray, nose_x: int = 226, squeeze: float = 0.45) -> np.ndarray:
    """The frame with the part left of `nose_x` squeezed horizontally (the far half of a turned head)."""
    height, width = frame.shape[:2]
    xs = np.arange(width, dtype=np.float32)
    left = nose_x - 120 * squeeze
    map_x = np.where(xs >= nose_x, xs, np.where(xs >= left, nose_x - (nose_x - xs) / squeeze, xs - left + nose_x - 120))
    map_x = np.repeat(map_x[None].astype(np.float32), height, axis=0)
    map_y = np.repeat(np.arange(height, dtype=np.float32)[:, None], width, axis=1)
    return cv2.remap(frame, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT101)


@pytest.fixture(scope="module", params=["frontal", "turned"])
def warm_target(request, mesh) -> tuple[np.ndarray, np.ndarray]:
    astronaut = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    frame = warm(astronaut, 1.8) if request.param == "frontal" else half_turned(warm(astronaut, 1.4))
    return frame, mesh(frame)


@pytest.fixture(scope="module")
def grey_source(mesh) -> classic.SourceTexture:
    image = cv2.cvtColor(cv2.cvtColor(cv2.imread(str(SOURCE_IMAGE)), cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)
    return classic.prepare_source(image, mesh(image))


def face_core(frame: np.ndarray, landmarks: np.ndarray, source: classic.SourceTexture | None = None) -> np.ndarray:
    """The trimmed oval, a little inside: where the swap draws the source (with ``source``: less the rim where it
    draws none of that source's detail, `classic.plain_band`)."""
    core = polygon_mask(frame, classic.mask_ring(landmarks[:, :2]), erode=3)
    if source is not None:
        points = landmarks[:, :2].astype(np.float64)
        hidden = points[source.triangles[classic.hidden_triangles(source, points)]] - 0.5
        plain = classic.plain_band(hidden, frame.shape[:2], classic._face_size(points))
        if plain is not None:
            core &= plain < 0.01
    return core


def chroma(frame: np.ndarray, where: np.ndarray) -> np.ndarray:
    lab = cv2.cvtColor(frame, cv2.COLOR_BGR2LAB).astype(np.float64)[where]
    return np.hypot(lab[:, 1] - 128, lab[:, 2] - 128)


def test_a_greyscale_source_takes_the_targets_skin_colour(warm_target, grey_source):
    frame, landmarks = warm_target
    swapped = classic.swap_face(frame, landmarks, grey_source)
    core = skin_only(frame, landmarks, grey_source)
    assert classic.visible_change(frame, swapped, landmarks) > 10, "swapped: the source's features"
    # The grey photo has no colour to give: the face keeps the target's skin colour, not a grey mask
    # (before: 22.6 against the target's 34.4).
    assert chroma(swapped, core).mean() > 0.85 * chroma(frame, core).mean()
    assert np.mean(chroma(swapped, core) < 10) <= np.mean(chroma(frame, core) < 10) + 0.005, "no grey smudge"


def test_a_studio_source_paints_no_pale_highlight_band(warm_target, source):
    # Grace Hopper's studio portrait is lit brightly from the front; on the warm target its highlights
    # once pushed the face's bright end 7 levels above the target's own (a pale band across cheeks and nose).
    frame, landmarks = warm_target
    swapped = classic.swap_face(frame, landmarks, source)
    core = face_core(frame, landmarks)
    lightness = cv2.cvtColor(swapped, cv2.COLOR_BGR2LAB)[..., 0][core]
    target = cv2.cvtColor(frame, cv2.COLOR_BGR2LAB)[..., 0][core]
    assert np.percentile(lightness, 95) <= np.percentile(target, 95) + 3
    assert np.percentile(lightness, 99.5) <= np.percentile(target, 99.5) + 3


def test_amber_glasses_get_no_cyan_rims(warm_target, source):
    # Her amber rims are less red than her skin: carried over as a difference from that skin onto a paler
    # target, they turned cyan-blue (a or b below neutral) on 0.8 % of the face.
    frame, landmarks = warm_target
    swapped = classic.swap_face(frame, landmarks, source)
    core = face_core(frame, landmarks)
    lab = cv2.cvtColor(swapped, cv2.COLOR_BGR2LAB)[core].astype(int)
    target = cv2.cvtColor(frame, cv2.COLOR_BGR2LAB)[core].astype(int)
    cold = lambda values: np.mean((values[:, 1] < 127) | (values[:, 2] < 127))  # noqa: E731
    assert cold(lab) <= cold(target) + 0.002


def dimmed(frame: np.ndarray, gain: float, contrast: float, lift: float) -> np.ndarray:
    """The frame in a dim room: its contrast lowered about its mean, darkened, the blacks lifted."""
    pixels = frame.astype(np.float32)
    mean = float(pixels.mean())
    return np.clip(((pixels - mean) * contrast + mean) * gain + lift, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("contrast, lift", [(0.65, 6.0), (1.0, 0.0)], ids=["hazy", "dark"])
def test_a_dim_face_gets_the_sources_features_as_dim_as_its_own(source, mesh, contrast, lift):
    # In a dim room the target's features are shallow; the source's, carried over as they are, painted black
    # brows and eye sockets onto a grey face (a dim pan: added flicker +7 a frame, 11 jumps; the hazy room: its
    # darkest 1 % of the face at 8-bit L 1 against the target's 34, its detail 1.9x the target's).
    astronaut = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    frame = dimmed(astronaut, 0.45, contrast, lift)
    landmarks = mesh(frame)
    swapped = classic.swap_face(frame, landmarks, source)
    core = face_core(frame, landmarks)

    def lightness(image: np.ndarray) -> np.ndarray:
        return cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 0].astype(np.float64)

    def detail(image: np.ndarray) -> float:
        return float((lightness(image) - cv2.GaussianBlur(lightness(image), (0, 0), 6))[core].std())

    assert classic.visible_change(frame, swapped, landmarks) > 5, "swapped"
    assert np.percentile(lightness(swapped)[core], 1) >= 0.4 * np.percentile(lightness(frame)[core], 1), \
        "no black crushed into the face"
    assert detail(swapped) <= 1.4 * detail(frame)
    deep = classic.swap_face(frame, landmarks, source, own_depth=1.0)  # the source's detail at its own depth
    assert detail(deep) > 1.2 * detail(swapped)
    # Part of the way there (a track whose toned swap is too faint to see goes only as deep as it needs to show).
    between = [classic.swap_face(frame, landmarks, source, own_depth=share) for share in (0.3, 0.6)]
    changes = [classic.visible_change(frame, image, landmarks) for image in (swapped, *between, deep)]
    assert changes == sorted(changes) and changes[0] < changes[-1] - 1, changes
    assert detail(swapped) < detail(between[0]) < detail(between[1]) < detail(deep)


def test_identity_points_carry_the_sources_shape_and_steady_the_features(source, mesh):
    landmarks = mesh(np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1]))
    moved = classic.identity_points(landmarks, source)
    source_points = source.landmarks.astype(np.float64)

    def spans(points: np.ndarray) -> np.ndarray:  # eye corners and brows apart, in face sizes
        size = np.linalg.norm(points[classic.FOREHEAD] - points[classic.CHIN])
        return np.array([np.linalg.norm(points[a] - points[b]) for a, b in ((33, 263), (105, 334))]) / size

    wanted, had, got = spans(source_points), spans(landmarks[:, :2]), spans(moved)
    assert (np.abs(wanted - had) > 0.02).all(), "the premise: the two faces are shaped differently"
    # Well on the way to the source's shape (the face size is the target's: its outline stays).
    assert (np.abs(got - wanted) < 0.6 * np.abs(had - wanted)).all()
    assert np.allclose(moved[list(classic.FACE_OVAL)], landmarks[list(classic.FACE_OVAL), :2], atol=0.5)
    assert np.allclose(moved[list(classic.INNER_LIPS)], landmarks[list(classic.INNER_LIPS), :2], atol=0.5)
    # Fitted over the whole mesh, the features shake less than the fits they come from.
    rng = np.random.default_rng(5)
    noisy = [landmarks + rng.normal(0, 1.0, landmarks.shape).astype(landmarks.dtype) for _ in range(12)]
    nose = [classic.identity_points(points, source)[classic.NOSE_TIP] for points in noisy]
    raw = [points[classic.NOSE_TIP, :2] for points in noisy]
    assert np.std(nose, axis=0).mean() < 0.5 * np.std(raw, axis=0).mean()


def cut_at_the_top(source: classic.SourceTexture, rows: int) -> classic.SourceTexture:
    """The source as if its photo ended `rows` pixels lower (through the forehead: the head's top beyond it)."""
    levels = tuple(np.ascontiguousarray(level[rows >> k:]) for k, level in enumerate(source.levels))
    return classic.SourceTexture(levels, source.landmarks - np.float32([0, rows]), source.triangles, source.size,
                                 source.forehead_keep, source.depth, (False, True, False, False))


@pytest.mark.parametrize("degrees", [0, 45])
def test_the_swap_takes_nothing_from_beyond_the_source_photos_edge(source, mesh, degrees, monkeypatch):
    """A source photo that cuts the face (the top of the head beyond its edge) has nothing of it there: the warp's
    border is the photo's last row stretched out, which turned faces' near temples took (striped temples on
    ninth's woman turned ~60 degrees, from Jesper's photo). The swap keeps to what maps inside the photo."""
    eyes = int(source.landmarks[list(classic.OUTER_EYE_CORNERS), 1].mean())
    top = int(source.landmarks[classic.FOREHEAD, 1])
    cut = cut_at_the_top(source, top + (eyes - top) * 4 // 5)  # below the top of the mask's ring
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    landmarks = yawed(mesh(frame).astype(np.float64), degrees).astype(np.float32)
    xy = landmarks[:, :2].astype(np.float64)
    size = classic._face_size(xy)
    x0, y0, x1, y1 = classic._rect(xy, (classic.RING_SCALE - 1 + classic.FEATHER) * size + 2, frame.shape[1],
                                   frame.shape[0])
    shaped = classic.identity_points(landmarks, cut) - (x0 + 0.5, y0 + 0.5)
    _, inside = classic.warp_source(cut, shaped, classic._depth(landmarks), (x1 - x0, y1 - y0), covered=True)
    mask = classic.face_mask(xy - (x0 + 0.5, y0 + 0.5), (y1 - y0, x1 - x0), size, forehead_keep=cut.forehead_keep)
    assert inside is not None
    beyond = (inside < 0.02) & (mask > 0.5)
    assert beyond.sum() > 150, "premise: the face's mask reaches where the warp leaves the photo"

    def change() -> float:
        out = classic.swap_face(frame, landmarks, cut)
        return float(np.abs(out[y0:y1, x0:x1].astype(int) - frame[y0:y1, x0:x1]).mean(axis=2)[beyond].mean())

    kept = change()
    assert kept < 4.0 < change_without_cover(monkeypatch, change), kept  # 0 against 37-63


def change_without_cover(monkeypatch, change) -> float:
    """`change()` with the swap free to take what lies beyond the photo (the warp's border, stretched)."""
    warp = classic.warp_source

    def uncovered(*args, covered: bool = False, **kwargs):
        out = warp(*args, covered=covered, **kwargs)
        return (out[0], None, *out[2:]) if covered else out

    monkeypatch.setattr(classic, "warp_source", uncovered)
    return change()


def test_the_warp_is_steadier_than_the_mesh_points_it_follows(source, mesh, monkeypatch):
    """The mesh's points lie close together along the nose's base and the lips; a point off by a pixel or two
    turns a sliver there over, and the source's texture was drawn into the slivers: a source with a strong
    shadow under its nose (flash) gave dark spikes over a smiling target's upper lip (ninth's Jesper on Jim).
    The warp's map is smoothed over MAP_SMOOTH of the face size, so such noise moves the drawing less."""
    frame = np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1])
    landmarks = mesh(frame)[:, :2].astype(np.float64)

    def moved() -> float:  # the drawing's mean change under 1.5 px of fitting noise, over the face
        rng = np.random.default_rng(3)
        still = classic.warp_source(source, landmarks - 0.5, None, (512, 512)).astype(float)
        return float(np.mean([np.abs(classic.warp_source(source, landmarks + rng.normal(0, 1.5, landmarks.shape)
                                                          - 0.5, None, (512, 512)) - still)[60:220, 150:300].mean()
                              for _ in range(6)]))

    smoothed = moved()
    monkeypatch.setattr(classic, "MAP_SMOOTH", 0.0)
    assert smoothed < 0.9 * moved()  # 4.6 against 5.4


@pytest.mark.parametrize("contrast", [0.45, 1.0], ids=["hazy", "clear"])
def test_a_source_harsher_than_the_face_gets_its_features_no_deeper_than_its_own(source, mesh, monkeypatch,
                                                                                  contrast):
    # A source photo harsher than the video's face (a hard light, glasses in the sun) looked painted on, and its
    # edges flickered as the face moved (a fast pan with a sunglasses source: added flicker p95 +9 a frame): its
    # features are made shallower towards the face's own, by DETAIL_DEPTH_MIN at most; one no harsher keeps them.
    frame = dimmed(np.ascontiguousarray(skimage_data.astronaut()[:, :, ::-1]), 1.0, contrast, 0.0)
    landmarks = mesh(frame)
    core = face_core(frame, landmarks, source)

    def detail(image: np.ndarray) -> float:
        lightness = cv2.cvtColor(image, cv2.COLOR_BGR2LAB)[..., 0].astype(np.float64)
        return float((lightness - cv2.GaussianBlur(lightness, (0, 0), 6))[core].std())

    matched = classic.swap_face(frame, landmarks, source)
    deep = classic.swap_face(frame, landmarks, source, own_depth=1.0)
    monkeypatch.setattr(classic, "DETAIL_DEPTH_MIN", 1.0)  # the rule off
    plain = classic.swap_face(frame, landmarks, source)
    assert classic.visible_change(frame, matched, landmarks) > 5, "swapped"
    if contrast < 1:
        assert detail(plain) > 1.3 * detail(frame), "the premise: the source's features are the deeper"
        assert 0.65 * detail(plain) < detail(matched) < 0.85 * detail(plain)
    else:
        assert detail(plain) < 1.1 * detail(frame), "the premise: the source's features are no deeper"
        assert detail(matched) > 0.97 * detail(plain)
    assert np.array_equal(deep, classic.swap_face(frame, landmarks, source, own_depth=1.0)), "deep: the source's own"

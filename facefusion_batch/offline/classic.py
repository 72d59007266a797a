"""Classical face swap on MediaPipe face-mesh landmarks: no neural swapper, numpy + OpenCV only.

The source face is triangulated once (Delaunay over its 468 landmarks). For each target face every
source triangle is mapped affinely onto the matching target triangle, the warped face is colour-matched
to the target's skin in LAB, and blended in with a feathered mask that leaves the target's mouth interior
(and optionally eyes) showing. All per-frame work happens inside the face's bounding rect.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from facefusion_batch.faces.geometry import nose_turn
from facefusion_batch.offline.mesh_symmetry import MIRROR

# MediaPipe face-mesh rings, in order around each contour.
FACE_OVAL = (10, 338, 297, 332, 284, 251, 389, 356, 454, 323, 361, 288, 397, 365, 379, 378, 400, 377, 152,
             148, 176, 149, 150, 136, 172, 58, 132, 93, 234, 127, 162, 21, 54, 103, 67, 109)
INNER_LIPS = (78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308, 415, 310, 311, 312, 13, 82, 81, 80, 191)
OUTER_LIPS = (61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291, 409, 270, 269, 267, 0, 37, 39, 40, 185)
# The subject's right eye (image-left on a frontal face), then the left eye.
EYES = ((33, 7, 163, 144, 145, 153, 154, 155, 133, 173, 157, 158, 159, 160, 161, 246),
        (362, 382, 381, 380, 374, 373, 390, 249, 263, 466, 388, 387, 386, 385, 384, 398))
BROWS = ((70, 63, 105, 66, 107, 55, 65, 52, 53, 46), (300, 293, 334, 296, 336, 285, 295, 282, 283, 276))
NOSTRILS = (98, 327, 2)
OUTER_EYE_CORNERS = (33, 263)
CHIN, FOREHEAD = 152, 10
NOSE_TIP, CHEEK_LINE = 1, (234, 454)
# Faces turned further than this (see `turn`) are left as they are: a swap would be mangled. Below it the swap
# keeps to what maps inside the source's photo (COVER_SOFT): at 1.6, faces turned 55-70 degrees
# (turn 1.6-2.2) were left (seen splits: ninth's missed face-frames 197 -> 53 at 2.2, held-out's 130 -> 58).
PROFILE = 2.2
LANDMARK_COUNT = 468

# The oval's top runs into hair or a hat brim: keep at most this share of its height above the eyes (the source's
# own hairline may lower it further, see HAIRLINE_MARGIN).
FOREHEAD_KEEP = 0.9
# Cheek landmarks whose colour is the source's skin colour (for finding its hairline).
CHEEKS = (50, 280, 36, 266)
# LAB distance (8-bit OpenCV units) from the skin colour beyond which a forehead pixel is hair.
HAIR_DISTANCE = 40.0
# The swap region stops this share of the forehead below the source's hairline, and keeps at least HAIRLINE_MIN.
HAIRLINE_MARGIN = 0.1
HAIRLINE_MIN = 0.25
# The mask's ring is the face oval scaled by this about its centre; its feather (FEATHER of the face size,
# forehead to chin, about three sigmas) is centred on the ring. The swap reaches the face's outline: a band of
# the target's own cheeks, jaw line and temples left around the source's face diluted its identity (a ring at
# 0.96: tune split accepts 57 -> 64 %; the feather drawn inside the ring, 1.5 sigmas in, as before session 13:
# tune split accepts 75.9 -> 90 %, t1-ross 48 -> 77 %, docs/quality.md). Wide, so that the outline's fitting
# noise does not flicker (FEATHER 0.06 -> 0.12: tune p95 3.4 -> 3.0); the source's surroundings beyond its own
# ring are never carried (`face_only`). Hidden rim triangles lie inside the mask and carry none of the source's
# detail (see PLAIN_GROWTH).
RING_SCALE = 1.02
FEATHER = 0.12
# Below the chin the feather stays above the jaw line on large faces: centred on it, the source's lit chin spilled
# onto the target's shaded neck and collar (a pale band under the jaw on a 230 px close-up; held-out's close-up:
# 8 frames of a phantom swap -> 0, accepts kept at 100 %). The ring's points that face down (by more than
# CHIN_SIDES along the face's axis, fully at the chin) are pulled up by CHIN_INSET feather sigmas beyond the first
# CHIN_FREE pixels of sigma: on small faces the chin's outline carries identity and a pixel of spill is not seen
# (pulled in by the whole 2 sigmas: tune split accepts 90 -> 84 %, t_group_far 86 -> 72 %). The forehead's trimmed
# line keeps its centred feather: pulled down, the judge lost the close-up (Hanks 100 -> 20 %).
CHIN_INSET = 2.0
CHIN_FREE = 2.0
CHIN_SIDES = 0.5
# The region whose mean change tells whether a swap is visible (`visible_change`, the engine's FAINT threshold):
# a face box as detectors draw one (and as the benchmark's judge counts a swap): from brows to chin (the oval at
# VISIBLE_RING with VISIBLE_FOREHEAD of its forehead, the mask's before the mask grew: over the grown mask's box
# small far faces read fainter and were left unswapped) and square, at least VISIBLE_WIDTH times the face's
# cheek-to-cheek width in 3-D. A turned face's box holds what lies in front of its nose: over the oval's own,
# narrower box its swap read 1.3x what a face box shows (tune split's t1.jpg, turn 0.4-1.3), and swaps the
# engine kept as visible changed the face by 3-5 grey levels (faint: touched, yet not seen as swapped).
VISIBLE_RING = 0.96
VISIBLE_FOREHEAD = 0.75
VISIBLE_WIDTH = 1.1
# The kept mouth opening (and eyes, when kept) is feathered over this many pixels (sigma) about its own line,
# after the face's feather: the feather's erosion (drawn inside the outline) once grew the opening by 1.5x its
# width, so the target's own lips showed around its teeth (t1.jpg's smiling faces, every tune source: judge
# distance 0.551 -> 0.508, accepted 69 -> 80 %; at 36 px 26 -> 47 %). A lip line is a sharp edge anyway.
HOLE_FEATHER = 1.0
MASK_HALF = 3.0  # feathers this wide (pixels, sigma) or wider are computed at half resolution
# Colour transfer (match_colour): the low frequencies are measured on a grid this many cells across the work
# rect, blurred over this share of it; the lightness may move by at most LIGHTNESS_LIMIT (L units); the
# source's highlights are scaled to the target's headroom to white (down to HEADROOM_MIN); the chroma follows
# the lightness by the target skin's own slope (a, b per 8-bit L, at most CHROMA_SLOPE) over at most
# CHROMA_RANGE L units; the source's chroma detail counts CHROMA_DETAIL (scaled by the skins' chroma ratio)
# and may take at most 1 - CHROMA_KEEP of the skin's chroma away; lightness above KNEE is compressed and the
# chroma fades out from WHITE to white. The source's lightness detail is scaled by the ratio of the output's skin to
# the source's in L + 16 (the cube root of luminance: light multiplies it), never up, never below DETAIL_GAIN_MIN:
# added as it was, the source's features turned black on a dim face (brows and eye sockets painted on; a dim pan
# of fifth's wall, made in session 25: added flicker +7.1 -> +3.1 a frame, jumps 11 -> 2).
SHADE_GRID = 32
SHADE_SCALE = 0.2
LIGHTNESS_LIMIT = 40.0
CHROMA_SLOPE = 0.6
CHROMA_RANGE = 12.0  # L units of shading the chroma follows
CHROMA_KEEP = 0.3
HEADROOM_MIN = 0.5
CHROMA_DETAIL = 1.0
KNEE = 88.0
WHITE = 92.0
DETAIL_GAIN_MIN = 0.3
# A toned swap's lightness detail is at most this much shallower than the source's, to make it as deep as the target
# face's own (RMS over the mask's core, each against its own low frequencies): a source photo with harsher
# features than the video's face (glasses in sunlight, a beard, deep wrinkles, a hard light) looked painted on
# and, as the face moved, its edges changed from frame to frame far more than the face's own did. Tune split,
# session 26: added flicker p95 +3.49 -> +1.64, jumps 5 -> 2 (a fast pan with the sunglasses source in mode
# `one`, +9.16 -> +2.68), judge accepts 89.9 -> 88.6 % (Grace Hopper's glasses and wrinkles 95 -> 91 %); 0.85
# gave +2.16 and 89.2 %. Never deeper than the source's own: a soft source is not sharpened.
DETAIL_DEPTH_MIN = 0.75
# Features left out of the skin the colour is measured on, grown by this share of the face size.
FEATURE_MARGIN = 0.03
# The warp map is computed on a grid this many cells across the face (forehead to chin), then upsampled, and
# smoothed over MAP_SMOOTH of the face size: the mesh's points lie close together along the nose's base and the
# lips, a point a pixel off turns a sliver there over, and the source's texture drawn into the slivers gave a
# flash-lit source's nostril shadow as dark spikes over a smiling target's upper lip (ninth's Jesper on Jim).
# Smoothed, 1.5 px of fitting noise moves the drawing by 15 % less (tests/offline/test_classic.py).
MAP_GRID = 100
MAP_SMOOTH = 0.01
# Identity shape: the source's landmarks, turned into the target's pose (a 3-D similarity fit over the whole
# mesh), take the place of the target's inside the face; the change fades out towards the face oval over
# SHAPE_RIM of the face size (the outline and the mask stay the target's) and towards the lips over SHAPE_LIPS
# (the target's mouth opening stays where its mouth is). Each eye opening moves as a whole, keeping the
# target's shape (blinks).
SHAPE_RIM = 0.12
SHAPE_LIPS = 0.06
# Faces smaller than this (pixels, forehead to chin) are left alone.
MIN_FACE_SIZE = 8.0
# A triangle of the band along the face oval that is more than this many times larger in the target than in
# the source (after the overall scale) was edge-on in the source (a cheek wrapping away): stretching it tears
# the texture into stripes (the source's ear, hair or backdrop beside its cheek, white notches). So do rim
# triangles whose corners run the other way round (facing away in the target's pose). Such `hidden_triangles`
# take the target's skin shading and colour with none of the source's detail (`plain_band`).
MAX_STRETCH = 2.5
# ... grown by PLAIN_GROWTH of the face size and feathered over PLAIN_FEATHER. Before, the mask was cut there
# (grown 0.015) and the target's own cheek stayed: on a face turned ~40 degrees a band of the target's near cheek
# and temple from brow to jaw, which the judge reads as the target (thirteenth's `k_static_cut`, its turned man:
# judge distance 0.594 -> 0.541, accepted 44 -> 92 % of 25 swaps with five sources; fresh's `f_static_cut`, turned
# m7: 0.535 -> 0.522, 75 -> 92 %; frontal faces 0.39-0.41 either way). Drawn with the source's texture instead
# (no cut at all), the judge took it further still, but the stripes showed (docs/quality.md, session 40).
PLAIN_GROWTH = 0.03
PLAIN_FEATHER = 0.02
# ... but only where the source's texture there is not its skin (`SourceTexture.skin`): its ear, hair or backdrop,
# which stretched are the stripes; where it is its skin, that is drawn stretched, as the judge prefers (per frame on
# eight tuning clips' 228 turned faces, accepted 68.9 -> 72.4 %, found again 73.7 -> 78.9 %; docs/quality.md,
# session 42). Skin lies within SKIN_NEAR (fully) to SKIN_FAR (not at all) of the cheeks' colour in LAB, lightness
# counted at SKIN_L_WEIGHT (a shaded cheek is darker, not another colour), wholly on a grey photo (cheeks' chroma
# 0, rising to SKIN_CHROMA: there lightness is all that tells skin from hair); and no nearer than SKIN_SHRINK of
# the face size to what is not (the soft edge of a temple's hair stretched is a dark hook).
SKIN_NEAR = 8.0
SKIN_FAR = 16.0
SKIN_L_WEIGHT = 0.25
SKIN_CHROMA = 12.0
SKIN_SHRINK = 0.05
ALIAS_BLUR = 0.55  # blur (level pixels) per unit of sqrt(shrink^2 - 1) left after a pyramid level: no aliasing,
# and at a shrink of 2 as soft as the next level sampled instead, so that a zooming face never pops at a level
# change (tests/offline/test_classic.py: across a change the drawing moves at most ~1.4x a step within a level)
# Detail matching (match_detail): the warped source is softened to the target face's sharpness (measured by a
# probe blur of DETAIL_PROBE pixels), and further until its detail (gradient energy over the mask's core, on
# grey pre-blurred by DETAIL_PRE to leave sensor noise out) is no more than DETAIL_ALLOW times the target
# face's; the softening is at most SOFTEN_MAX of the face size, measured on at most DETAIL_SIDE pixels
# across, and skipped below SOFTEN_MIN pixels. The cap binds on small faces (a far wall's 20-45 px faces are
# softer than any source), and there softening costs identity: at 0.03 the judge accepted the held-out and
# eighth splits' far walls as the source on 46 % and 53 % of their faces, at 0.015 on 61 % and 68 % (with no
# softening at all, 0: 66 % and 69 %, and more added flicker on the drifting faces).
DETAIL_PRE = 0.7
DETAIL_ALLOW = 2.0
DETAIL_PROBE = 1.0
DETAIL_SIDE = 128
SOFTEN_MAX = 0.015
SOFTEN_MIN = 0.1
# Smear matching (match_smear): a face of SMEAR_FACE pixels or more, moving, is smeared along its motion by as much as
# the target face is smeared that way beyond the source, less SMEAR_NOISE pixels of blur, and up to SMEAR_MAX of its
# size; no smear shorter than SMEAR_MIN pixels is drawn; its length is found in SMEAR_STEPS halvings. The blind split's
# whip pan reads 7-10 px of blur along the pan where smeared, ~1 px at rest; its pan without motion blur
# (`b_group_pan`, faces moving 2-15 px a frame) read up to ~2.5 px on 12 of 90 frames, smeared 2-7 px with 2 px
# here, none with 3.
SMEAR_FACE = 64.0
SMEAR_NOISE = 3.0
SMEAR_MAX = 0.25
SMEAR_MIN = 1.5
SMEAR_STEPS = 7
# The swap's mask keeps only what maps inside the source's photo, fading out over COVER_SOFT of the source's face
# size towards the photo's edges (`SourceTexture.inside`): a photo that cuts the face (the top of the head) has none
# of it beyond, and the warp's border there is the photo's last row stretched out (striped temples on a face
# turned ~60 degrees). Only the photo's own edges count: at the sides where the texture's crop ends inside the
# photo, a fade took the rim of small far faces' swaps, which carries their identity (ninth's far wall, accepts
# 0.94 / 0.74 -> 0.85 / 0.63 per source).
COVER_SOFT = 0.04
# A source face turned by FRONTAL_FROM degrees or more (its yaw, from its mesh's left-right symmetry) is turned to
# face the camera once, when it is prepared (`frontalised`): its far half, foreshortened in the photo, would be
# stretched over a frontal face's far half (a smear of few pixels, the far eye half shut; on a frontal face half of
# it swapped, half the face's own). Each triangle of the turned mesh takes its own texture, or its mirror partner's
# from the near half where that is seen at least MIRROR_GAIN times larger, fully from MIRROR_FULL times, the change
# feathered over MIRROR_FEATHER of the face size. Sources turned 25-47 degrees (seen splits: twelfth's woman in a
# headband and woman in glasses, eighth's Paumier): judged closer to the source than to the face replaced on 39 ->
# 82 %, 66 -> 86 % and 0 -> 100 % of their faces. Turned 15-20 degrees (eight sources of six splits) it gained and
# lost by turns (Ancelotti accepted 79 -> 100 %, Hanks 57 -> 14 %, Keith 86 -> 72 %: their textures drawn twice
# are softer, and their far halves were seen well enough), so those are left as they are.
FRONTAL_FROM = 22.0
MIRROR_GAIN = 1.2
MIRROR_FULL = 1.8
MIRROR_FEATHER = 0.04


@dataclass(frozen=True)
class SourceTexture:
    """A source face prepared once for many swaps.

    ``levels`` is an image pyramid of the face crop (level k is 2**-k the size), so that a small target
    samples a pre-filtered texture instead of aliasing; ``landmarks`` are level-0 crop coordinates.
    """

    levels: tuple[np.ndarray, ...]
    landmarks: np.ndarray  # (468, 2) float32, crop pixels, corner origin
    triangles: np.ndarray  # (T, 3) int32 landmark indices
    size: float  # forehead-to-chin distance in level-0 pixels
    forehead_keep: float = FOREHEAD_KEEP  # share of the forehead above the eyes that is skin, not hair
    depth: np.ndarray | None = None  # (468,) the landmarks' depth column, same pixel scale, when known
    # The crop's sides (left, top, right, bottom) that are the photo's own edge: nothing of the face lies beyond.
    photo_edges: tuple[bool, bool, bool, bool] = (False, False, False, False)
    frontalised: bool = False  # turned to face the camera when prepared (`frontalised`)

    @functools.cached_property
    def shape_weight(self) -> np.ndarray:
        """How much of the source's own shape each landmark takes (0 on the oval and the lips, 1 inside)."""
        points = self.landmarks.astype(np.float32)
        oval, lips = points[list(FACE_OVAL)], points[list(OUTER_LIPS)]
        inside = np.array([cv2.pointPolygonTest(oval, (float(x), float(y)), True) for x, y in points])
        off_lips = -np.array([cv2.pointPolygonTest(lips, (float(x), float(y)), True) for x, y in points])
        return (np.clip(inside / (SHAPE_RIM * self.size), 0, 1) * np.clip(off_lips / (SHAPE_LIPS * self.size), 0, 1))

    @functools.cached_property
    def rim(self) -> np.ndarray:
        """Triangles touching the face oval (bool per triangle), the band that wraps away with the pose."""
        return np.isin(self.triangles, FACE_OVAL).any(axis=1)

    @functools.cached_property
    def inside(self) -> tuple[np.ndarray, ...]:
        """Per level (float32): 1 inside the photo, falling to 0 over COVER_SOFT of the face size towards the
        crop's sides that are the photo's edges (`photo_edges`; beyond the others the texture is `face_only`'s fill,
        as far as any mask reaches)."""
        left, top, right, bottom = self.photo_edges
        ramps = []
        for level, image in enumerate(self.levels):
            height, width = image.shape[:2]
            near = np.minimum.outer(_from_edges(height, top, bottom), _from_edges(width, left, right))
            ramps.append(np.minimum(near / self.fade_reach(level), 1.0).astype(np.float32))
        return tuple(ramps)

    @functools.cached_property
    def skin(self) -> tuple[np.ndarray, ...]:
        """Per level (float32): 1 where the texture is the face's skin, 0 where it is something else (hair, an ear's
        shadow, the backdrop beside the cheek), by its distance from the cheeks' colour (SKIN_NEAR to SKIN_FAR)."""
        labs = [_lab(image) for image in self.levels]
        cheeks = _cheek_colour(labs[0], self.landmarks, self.size)
        # A grey photo's skin differs from its surroundings by lightness alone.
        grey = float(np.clip(1 - np.hypot(cheeks[1], cheeks[2]) / SKIN_CHROMA, 0, 1))
        weight = np.float32([SKIN_L_WEIGHT + (1 - SKIN_L_WEIGHT) * grey, 1, 1])
        maps = []
        for level, lab in enumerate(labs):
            distance = np.sqrt(np.square((lab - cheeks) * weight).sum(axis=-1))
            skin = np.clip((SKIN_FAR - distance) / max(SKIN_FAR - SKIN_NEAR, 1e-6), 0, 1).astype(np.float32)
            radius = int(round(SKIN_SHRINK * self.size / 2 ** level))
            if radius >= 1:  # what borders on hair or backdrop is their outline: not skin either
                skin = cv2.erode(skin, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1,) * 2))
            maps.append(skin)
        return tuple(maps)

    def fade_reach(self, level: int) -> float:
        """Pixels of pyramid `level` over which `inside` falls from 1 to 0 (COVER_SOFT of the face, at least 1)."""
        return max(COVER_SOFT * self.size / 2 ** level, 1.0)

    @functools.cached_property
    def areas(self) -> np.ndarray:
        """Signed area of each triangle in level-0 pixels."""
        return _signed_areas(self.landmarks[self.triangles])


def _from_edges(count: int, low: bool, high: bool) -> np.ndarray:
    """Pixels from the photo's edges along a row of `count`: from its start where `low`, its end where `high`."""
    at = np.arange(count, dtype=np.float32)
    far = np.full(count, np.inf, np.float32)
    return np.minimum(at if low else far, (count - 1 - at) if high else far)


def prepare_source(image: np.ndarray, landmarks: np.ndarray, frontalise: bool = True) -> SourceTexture:
    """Crop the source face out of ``image`` (BGR uint8) and triangulate its landmarks (468x2 or 468x3); a face
    turned FRONTAL_FROM degrees or more is, where `frontalise`, turned to face the camera first (`frontalised`), its
    forehead kept only as far up as the photo shows skin: the turned face is drawn from the photo's face alone
    (`face_only`: above its hairline, a fill smeared from the ring), and measured on that, the fill passed for skin
    (the `turned` split's m7, hair over his forehead: 0.5 of it on the photo, 0.9 on his turned face: his fringe's
    fill was pasted as dark streaks over the foreheads he was swapped onto; the judge found 88 % of them as faces,
    92 % with his hairline, and took 94 % for him, 83 % with it: the streaks read as his hair), as would a hat or hair
    beside a far cheek in shadow."""
    texture = _prepared(image, landmarks)
    front = frontalised(texture) if frontalise else None
    return texture if front is None else dataclasses.replace(_prepared(*front, texture.forehead_keep),
                                                              frontalised=True)


def _prepared(image: np.ndarray, landmarks: np.ndarray, forehead_keep: float | None = None) -> SourceTexture:
    """The source texture of the face at `landmarks`; its forehead kept up to `forehead_keep` (measured on `image`
    where None: `skin_height`)."""
    points = _xy(landmarks)
    size = _face_size(points)
    if not np.isfinite(points).all() or size < MIN_FACE_SIZE:
        raise ValueError("source landmarks do not describe a face")
    height, width = image.shape[:2]
    x0, y0, x1, y1 = _rect(points, 0.1 * size, width, height)
    crop = np.ascontiguousarray(image[y0:y1, x0:x1])
    local = (points - (x0, y0)).astype(np.float32)
    if forehead_keep is None:
        forehead_keep = min(FOREHEAD_KEEP, max(HAIRLINE_MIN, skin_height(crop, local) - HAIRLINE_MARGIN))
    levels = [face_only(crop, mask_ring(local, forehead_keep))]
    while min(levels[-1].shape[:2]) >= 64 and len(levels) < 4:
        # Each level the one above averaged over 2x2 pixels (a pixel of it covers exactly four, so it sits where
        # `warp_source` takes it to be; OpenCV's pyrDown is sharper-kerneled but a quarter pixel off).
        height, width = (side // 2 for side in levels[-1].shape[:2])
        levels.append(cv2.resize(levels[-1][:2 * height, :2 * width], (width, height), interpolation=cv2.INTER_AREA))
    return SourceTexture(tuple(levels), local, delaunay(local, crop.shape[1], crop.shape[0]), size, forehead_keep,
                         _depth(landmarks), (x0 == 0, y0 == 0, x1 == width, y1 == height))


def frontalised(source: SourceTexture) -> tuple[np.ndarray, np.ndarray] | None:
    """The source's face turned to face the camera, as (image, 468x3 landmarks), or None where it already does
    (yaw below FRONTAL_FROM), has no depth, or is cut by its photo's edges.

    The rotation is half the one that takes the mesh onto its own mirror image (MIRROR's partners, x negated):
    a face turned by a yaw and roll from a symmetric pose is turned twice that from its mirror image. The turned
    mesh is drawn from the photo twice, each triangle from its own texture and from its mirror partner's (a
    reflection), and each pixel takes the one seen larger in the photo (MIRROR_GAIN, MIRROR_FULL): the near half
    keeps its own texture and the far half, foreshortened or hidden, takes the near half's."""
    if source.depth is None or any(source.photo_edges):
        return None
    points = np.column_stack([source.landmarks, source.depth]).astype(np.float64)
    centre = points.mean(axis=0)
    centred = points - centre
    half = mirror_turn(points)
    if np.degrees(abs(float(half[1]))) < FRONTAL_FROM:
        return None
    front = centred @ cv2.Rodrigues(half)[0].T
    margin = 0.25 * source.size
    low = np.floor(front[:, :2].min(axis=0) - margin)
    front[:, :2] -= low
    front[:, 2] += centre[2]
    width, height = (int(v) for v in np.ceil(front[:, :2].max(axis=0) + margin))
    drawn = front[:, :2] - 0.5  # pixel centres
    # Triangulated as it faces the camera: the photo's triangulation joins points across the foreshortened far half
    # that lie far apart on the face.
    triangles = delaunay(front[:, :2], width, height)
    as_is = dataclasses.replace(source, triangles=triangles)
    mirrored = dataclasses.replace(source, landmarks=source.landmarks[MIRROR], triangles=triangles,
                                   depth=source.depth[MIRROR])
    # Per triangle of the turned mesh: how large it is seen in the photo, its own and its mirror partner's.
    area = _signed_areas(front[triangles, :2])
    area = np.where(np.abs(area) > 1e-6, area, 1e-6)
    facing = as_is.areas / area
    partner = -mirrored.areas / area  # a reflection: turned over
    own, other = (warp_source(texture, drawn, front[:, 2], (width, height)) for texture in (as_is, mirrored))
    gain = np.where(facing > 0, partner / np.maximum(facing, 1e-6), np.inf)
    weight = np.where(partner > 0, np.clip((gain - MIRROR_GAIN) / (MIRROR_FULL - MIRROR_GAIN), 0, 1), 0.0)
    share = np.zeros((height, width), np.float32)
    for corners, value in zip(_round(drawn[triangles]), weight):
        cv2.fillConvexPoly(share, corners, float(value))
    share = cv2.GaussianBlur(share, (0, 0), MIRROR_FEATHER * source.size)[..., None]
    image = np.clip(own * (1 - share) + other * share + 0.5, 0, 255).astype(np.uint8)
    return image, front


def mirror_turn(landmarks: np.ndarray) -> np.ndarray:
    """How a face with these (468, 3) landmarks is turned from its mirror-symmetric pose, as a rotation vector
    (radians; [1] is the yaw, about the vertical axis): half the rotation that takes the mesh onto its own mirror
    image (MIRROR's partners, x negated). The pitch is left out: a mirror image has the same."""
    centred = landmarks.astype(np.float64) - landmarks.mean(axis=0)
    rotation, _ = _rotation(centred, centred[MIRROR] * (-1.0, 1.0, 1.0))
    return cv2.Rodrigues(rotation)[0][:, 0] / 2


def _rotation(source: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, float]:
    """The rotation that best takes centred ``source`` points onto centred ``target`` points (Kabsch, in as many
    dimensions as the points have), and how far the two agree along it (the cross-covariance's singular values,
    the last one's sign turned with the rotation's: Umeyama's scale is this over the source's spread)."""
    u, singular, vt = np.linalg.svd(target.T @ source)
    sign = np.ones(len(singular))
    sign[-1] = np.sign(np.linalg.det(u @ vt)) or 1.0
    return (u * sign) @ vt, float((singular * sign).sum())


def face_only(image: np.ndarray, ring: np.ndarray) -> np.ndarray:
    """``image`` with everything outside ``ring`` (corner-origin points) replaced by the nearest colour inside
    it, softened: the mask's feather reaches beyond the target's outline, and there the source's own
    surroundings (hair, a dark collar, the wall behind) would show as a dark or coloured halo."""
    inside = np.zeros(image.shape[:2], np.uint8)
    cv2.fillPoly(inside, [_round(ring - 0.5)], 1)
    if inside.all() or not inside.any():
        return image
    _, labels = cv2.distanceTransformWithLabels(1 - inside, cv2.DIST_L2, 5, labelType=cv2.DIST_LABEL_PIXEL)
    ys, xs = np.nonzero(inside)  # each inside pixel has a label of its own; outside ones take their nearest's
    where = np.zeros(int(labels.max()) + 1, np.int64)
    where[labels[ys, xs]] = np.arange(len(ys))
    outside = inside == 0
    nearest = where[labels[outside]]
    filled = image.copy()
    filled[outside] = image[ys[nearest], xs[nearest]]
    soft = cv2.GaussianBlur(filled, (0, 0), max(2.0, 0.01 * max(image.shape[:2])))
    filled[outside] = soft[outside]
    return filled


def skin_height(image: np.ndarray, points: np.ndarray) -> float:
    """How far up the forehead the source's skin reaches before hair (a fringe) starts, as a share of the
    height from the eyes to the top of the face oval: rows of a band above the eyes are compared with the
    cheeks' colour in LAB from the top down, and the first row that is mostly skin is the hairline (from the
    top, so that glasses rims above the eyes are not taken for hair)."""
    lab = cv2.cvtColor(image, cv2.COLOR_BGR2LAB).astype(np.float32)
    height, width = lab.shape[:2]
    size = _face_size(points)
    skin = _cheek_colour(lab, points, size)
    up = _up(points)
    across = np.array([-up[1], up[0]])
    eyes = points[list(OUTER_EYE_CORNERS)].mean(axis=0)
    top = float((points[FOREHEAD] - eyes) @ up)
    half = 0.2 * float(np.linalg.norm(points[OUTER_EYE_CORNERS[0]] - points[OUTER_EYE_CORNERS[1]]))
    if top <= 1 or half <= 1:
        return 1.0
    offsets = np.linspace(-half, half, 15)
    for share in np.linspace(1.0, 0.2, 17):
        centre = eyes + up * (share * top)
        xy = np.round(centre + np.outer(offsets, across)).astype(int)
        inside = (xy[:, 0] >= 0) & (xy[:, 1] >= 0) & (xy[:, 0] < width) & (xy[:, 1] < height)
        if inside.sum() < len(offsets) // 2:
            continue
        colours = lab[xy[inside, 1], xy[inside, 0]]
        if np.mean(np.linalg.norm(colours - skin, axis=1) <= HAIR_DISTANCE) > 0.5:
            return float(share)
    return 0.2


def _cheek_colour(lab: np.ndarray, points: np.ndarray, size: float) -> np.ndarray:
    """The median colour of the cheeks (`CHEEKS`, squares of 0.06 of the face ``size``) in ``lab`` (h, w, 3)."""
    radius = max(1, int(size * 0.03))
    samples = []
    for index in CHEEKS:
        x, y = np.round(points[index]).astype(int)
        samples.append(lab[max(0, y - radius):y + radius + 1, max(0, x - radius):x + radius + 1].reshape(-1, 3))
    return np.median(np.concatenate(samples), axis=0)


def _lab(image: np.ndarray) -> np.ndarray:
    """BGR uint8 as float32 LAB (L 0-100)."""
    return cv2.cvtColor(image.astype(np.float32) * np.float32(1 / 255), cv2.COLOR_BGR2LAB)


def delaunay(points: np.ndarray, width: int, height: int) -> np.ndarray:
    """Delaunay triangles over ``points`` (N, 2) inside a ``width`` x ``height`` box, as index triples."""
    subdiv = cv2.Subdiv2D((0, 0, width, height))
    inside = (points[:, 0] >= 0) & (points[:, 1] >= 0) & (points[:, 0] < width) & (points[:, 1] < height)
    subdiv.insert([(float(x), float(y)) for x, y in points[inside]])
    corners = subdiv.getTriangleList().reshape(-1, 3, 2)
    # Map triangle corners back to landmark indices; corners on the virtual outer triangle match none.
    distance = np.linalg.norm(corners[:, :, None, :] - points[None, None, :, :], axis=-1)
    index = distance.argmin(axis=-1)
    exact = np.take_along_axis(distance, index[..., None], axis=-1)[..., 0] < 1e-3
    keep = exact.all(axis=1) & (index[:, 0] != index[:, 1]) & (index[:, 1] != index[:, 2]) & (
        index[:, 0] != index[:, 2])
    return index[keep].astype(np.int32)


def swap_face(frame: np.ndarray, target_landmarks: np.ndarray, source: SourceTexture, *,
              keep_mouth: bool = True, keep_eyes: bool = False, motion: tuple[float, float] = (0.0, 0.0),
              own_depth: float = 0.0) -> np.ndarray:
    """Return a copy of ``frame`` (BGR uint8) with the source face laid over the target face.

    ``target_landmarks`` are the target's 468 face-mesh points in frame pixels, (468, 2) or (468, 3), with
    the origin at the top-left corner of the top-left pixel (as ``offline.mediapipe`` gives them);
    a third column is used as depth so that nearer triangles win where a turned face folds over itself.
    ``motion``: how far the face moved since the frame before (pixels), for the smear a fast one has
    (`match_smear`). ``own_depth``: how much of the source's own depth its lightness detail keeps, from 0, toned to
    the target's light (`match_colour`), to 1, its own. Only pixels inside the landmarks' bounding rect (plus a
    feather margin) change. Landmarks that do not describe a visible face (non-finite, collapsed, off-frame) give
    back an unchanged copy.
    """
    result = frame.copy()
    points = _xy(target_landmarks)
    size = _face_size(points)
    if not np.isfinite(target_landmarks).all() or size < MIN_FACE_SIZE:
        return result
    height, width = frame.shape[:2]
    x0, y0, x1, y1 = _rect(points, (max(RING_SCALE, 1.0) - 1 + FEATHER) * size + 2, width, height)
    if x1 - x0 < 2 or y1 - y0 < 2:
        return result
    local = points - (x0 + 0.5, y0 + 0.5)  # pixel-centre coordinates of the work rect
    depth = _depth(target_landmarks)
    shaped = identity_points(target_landmarks, source) - (x0 + 0.5, y0 + 0.5)
    shape = (y1 - y0, x1 - x0)
    plain = plain_band(local[source.triangles[hidden_triangles(source, local)]], shape, size)
    if plain is None:
        warped, covered = warp_source(source, shaped, depth, (x1 - x0, y1 - y0), covered=True)
    else:  # plain only where the source's texture there is not its skin
        warped, covered, skin = warp_source(source, shaped, depth, (x1 - x0, y1 - y0), covered=True, skin=True)
        plain *= 1 - skin
    mask = face_mask(local, shape, size, keep_mouth=keep_mouth, keep_eyes=keep_eyes,
                     forehead_keep=source.forehead_keep)
    if covered is not None:
        mask *= covered
    target = frame[y0:y1, x0:x1]
    warped = match_smear(match_detail(warped, target, mask, size), target, mask, size, motion)
    scale = min(1.0, 1 / shade_step(shape))  # drawn at the colour grid's resolution: enough, and cheap
    coloured = match_colour(warped, target, mask, feature_weights(local, shape, size, scale),
                            feature_weights(shaped, shape, size, scale), own_depth=own_depth, plain=plain)
    result[y0:y1, x0:x1] = _blend(target, coloured, mask)
    return result


def identity_points(target_landmarks: np.ndarray, source: SourceTexture) -> np.ndarray:
    """The target's landmarks (frame pixels) with the source's own face shape inside the face: where the
    source's eyes, brows and nose sit and how they are shaped is much of what a face is recognised by, and a
    warp onto the target's landmarks alone would give them the target's. The source mesh is fitted to the
    target's by a similarity (3-D when both have depth, so a turned target turns the source too) over all
    468 points, which also makes these points steadier than the fits they come from. Posed in the picture
    plane instead, a frontal source kept its frontal proportions on a turned face: nearer the source by the
    judge on the tune photos with the mask of then, but with today's mask further on the tune split (accepts
    90 -> 88 %) and the fifth (86 -> 79 %: a turned face's nose pushed out of place; docs/quality.md, session 13)."""
    points = _xy(target_landmarks)
    target_depth = _depth(target_landmarks)
    if source.depth is not None and target_depth is not None:
        posed = _similarity(np.column_stack([source.landmarks, source.depth]),
                            np.column_stack([points, target_depth]))[:, :2]
    else:
        posed = _similarity(source.landmarks.astype(np.float64), points)
    shift = posed - points
    for ring in EYES:
        shift[list(ring)] = shift[list(ring)].mean(axis=0)
    return points + source.shape_weight[:, None] * shift


def _similarity(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``source`` points moved by the similarity (rotation, uniform scale, shift) that best fits them onto
    ``target`` in the least-squares sense (Umeyama), in as many dimensions as the points have."""
    source_mean, target_mean = source.mean(axis=0), target.mean(axis=0)
    a, b = source - source_mean, target - target_mean
    rotation, agreement = _rotation(a, b)
    scale = agreement / max(float((a * a).sum()), 1e-12)
    return scale * a @ rotation.T + target_mean


def visible_change(before: np.ndarray, after: np.ndarray, landmarks: np.ndarray) -> float:
    """Mean change (grey levels, all channels) a swap made over the face's box (clipped to the frame): how much
    of a swap a viewer can see. The box is a square about the face from brows to chin (the bounding box of the
    face oval scaled by VISIBLE_RING with VISIBLE_FOREHEAD of its forehead), at least VISIBLE_WIDTH times the
    face's cheek-to-cheek width with depth, so a turned face's box is as wide as a frontal one's. The region is
    fixed, not the mask's (which may grow), so that the same swap is judged alike whatever the mask covers."""
    ring = mask_ring(_xy(landmarks), VISIBLE_FOREHEAD, VISIBLE_RING)
    low, high = ring.min(axis=0), ring.max(axis=0)
    cheeks = np.asarray(landmarks, np.float64)[list(CHEEK_LINE)]
    half = max(VISIBLE_WIDTH * float(np.linalg.norm(cheeks[1] - cheeks[0])), *(high - low)) / 2
    centre = (low + high) / 2
    low, high = _box(np.array([centre - half, centre + half]), before.shape)
    if high[0] <= low[0] or high[1] <= low[1]:
        return 0.0
    region = (slice(low[1], high[1]), slice(low[0], high[0]))
    part = before[region]
    return float(cv2.norm(part, after[region], cv2.NORM_L1)) / part.size  # the mean |difference|, exactly


def _box(points: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Bounding box of ``points`` in whole pixels, clipped to an image of ``shape``: (x0, y0), (x1, y1)."""
    size = np.array(shape[1::-1][:2])
    return (np.clip(np.floor(points.min(axis=0)), 0, size).astype(int),
            np.clip(np.ceil(points.max(axis=0)), 0, size).astype(int))


def match_detail(warped: np.ndarray, target: np.ndarray, mask: np.ndarray, size: float) -> np.ndarray:
    """``warped`` (uint8 BGR) softened by a Gaussian blur so that it is no sharper than the target face it
    replaces, and carries at most DETAIL_ALLOW times its detail (gradient energy over the mask's core).

    A source photo sharper than the video (a studio portrait on a soft, compressed or moving face) looks
    pasted on, and as the face moves its sharp edges (glasses rims) change from frame to frame far more than
    the face they replace: added flicker. Sharpness is told apart from contrast: how fast each face's detail
    falls under a probe blur (DETAIL_PROBE) gives the blur it already has (detail falling as the inverse
    square of the total blur, as in natural images), and the source is blurred up to the target's blur
    only; a source with more contrast than the target (glasses, a beard) keeps its features sharp unless
    its detail exceeds DETAIL_ALLOW times the target's (softening everything down to the target's detail cost
    identity: sharp features are what a face is recognised by). The blur depends on this frame alone (no
    state, so a resumed chunk is the same) and changes smoothly as the face zooms.
    """
    measured = _measured(warped, target, mask)
    if measured is None:
        return warped
    source_grey, target_grey, core, shrink = measured
    target_detail, sharp = _detail(target_grey, core, 0.0), _detail(source_grey, core, 0.0)
    if target_detail <= 0 or sharp <= 0:
        return warped
    probed = _detail(source_grey, core, DETAIL_PROBE)
    own_blur = _own_blur(sharp, probed)
    blur = _own_blur(target_detail, _detail(target_grey, core, DETAIL_PROBE)) ** 2 - own_blur ** 2
    # Beyond that, the detail left may be at most DETAIL_ALLOW times the target's: detail falls as the
    # inverse square of the total blur (including DETAIL_PRE and the source's own).
    blurred = own_blur ** 2 + DETAIL_PRE ** 2
    wanted = target_detail * DETAIL_ALLOW
    blur = max(blur, blurred * (sharp / wanted) - blurred if sharp > wanted else 0.0)
    sigma = min(float(np.sqrt(max(blur, 0.0))) * shrink, SOFTEN_MAX * size)
    return cv2.GaussianBlur(warped, (0, 0), sigma) if sigma >= SOFTEN_MIN else warped


def match_smear(warped: np.ndarray, target: np.ndarray, mask: np.ndarray, size: float,
                motion: tuple[float, float]) -> np.ndarray:
    """``warped`` (uint8 BGR) smeared along the face's `motion` (pixels it moved since the frame before) as much as
    the target face is smeared that way beyond the source: a face moving fast while the shutter is open (a whip
    pan) is a smear along the motion. `match_detail` blurs alike in every direction, and at most SOFTEN_MAX of
    the face's size: on a face smeared 30 px the swap stayed sharp, a pasted-on face that came and went with the
    blur.

    How smeared each is: its blur along the motion beyond its blur across it (`_own_blur` along each direction:
    how its detail there falls under a probe blur along it), so that a soft face is not taken for a smeared one
    and a face's own lines, more across it than along it, count alike in both. Not at all on faces smaller than
    SMEAR_FACE, whose few pixels give no measure of it; at most the motion itself (a shutter open the whole
    frame) and SMEAR_MAX of the face's size. This frame alone decides it."""
    speed = float(np.hypot(*motion))
    longest = min(speed, SMEAR_MAX * size)
    if size < SMEAR_FACE or longest < SMEAR_MIN:
        return warped
    measured = _measured(warped, target, mask)
    if measured is None:
        return warped
    source, target_grey, core, shrink = measured
    along = np.array(motion, np.float64) / speed
    across = np.array([-along[1], along[0]])

    def smear(image: np.ndarray) -> float:  # (blur along)^2 - (blur across)^2, in its pixels
        blurs = [_own_blur(_detail_along(image, core, way, 0.0), _detail_along(image, core, way, DETAIL_PROBE))
                 for way in (along, across)]
        return blurs[0] ** 2 - blurs[1] ** 2 if np.isfinite(blurs).all() else float("nan")

    wanted = smear(target_grey) - (SMEAR_NOISE / shrink) ** 2
    if not wanted > smear(source):  # no more smeared than the source (or no detail to tell by)
        return warped
    # The smear that makes the source as smeared as the target by the same measure, halved SMEAR_STEPS times. The
    # measure reads a smear across the face's own lines short, from face to face unlike: on the astronaut smeared
    # 24 px sideways the source is smeared 23 px, up or down 8 px (a pan's smear is sideways).
    low, high = 0.0, longest / shrink
    for _ in range(SMEAR_STEPS):
        middle = (low + high) / 2
        reading = smear(_smeared(source, along, middle))
        low, high = (middle, high) if reading < wanted else (low, middle)  # NaN: smeared beyond measure
    length = high * shrink
    return _smeared(warped, along, length) if length >= SMEAR_MIN else warped


def _measured(warped: np.ndarray, target: np.ndarray, mask: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """The warped source and the target face in grey (float32) and the mask's core (over 0.5), all shrunk to at most
    DETAIL_SIDE pixels across (large faces are measured on a smaller copy, blurs scaled up by the shrink), with the
    shrink; None where the core holds fewer than 16 pixels."""
    core = mask > 0.5
    if core.sum() < 16:
        return None
    shrink = max(1.0, max(warped.shape[:2]) / DETAIL_SIDE)
    small = (max(1, round(warped.shape[1] / shrink)), max(1, round(warped.shape[0] / shrink)))

    def grey(image: np.ndarray) -> np.ndarray:
        grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        return (cv2.resize(grey, small, interpolation=cv2.INTER_AREA) if shrink > 1 else grey).astype(np.float32)

    if shrink > 1:
        core = cv2.resize(core.astype(np.uint8), small, interpolation=cv2.INTER_NEAREST).astype(bool)
        if core.sum() < 16:
            return None
    return grey(warped), grey(target), core, shrink


def _detail_along(grey: np.ndarray, core: np.ndarray, along: np.ndarray, blur: float) -> float:
    """Mean squared gradient along the unit vector ``along`` of ``grey`` over ``core``, after a Gaussian blur of
    DETAIL_PRE and one of ``blur`` along ``along``."""
    smooth = cv2.GaussianBlur(grey, (0, 0), DETAIL_PRE)
    if blur > 0:
        offsets = np.linspace(-3 * blur, 3 * blur, max(3, int(np.ceil(24 * blur))))
        smooth = _along(smooth, along, offsets, np.exp(-0.5 * (offsets / blur) ** 2))
    gx = cv2.Sobel(smooth, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(smooth, cv2.CV_32F, 0, 1, ksize=3)
    return float(np.square(gx * along[0] + gy * along[1])[core].mean())


def _smeared(image: np.ndarray, along: np.ndarray, length: float) -> np.ndarray:
    """``image`` averaged along a line of ``length`` pixels in direction ``along`` (a unit vector), centred: the
    smear of a face moving that far while the shutter is open."""
    offsets = np.linspace(-length / 2, length / 2, max(2, int(np.ceil(length * 4))))
    return _along(image, along, offsets, np.ones_like(offsets))


def _along(image: np.ndarray, along: np.ndarray, offsets: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``image`` filtered by samples at ``offsets`` pixels along the unit vector ``along`` with ``weights``
    (normalised), each sample spread over its four nearest pixels."""
    half = int(np.ceil(np.abs(offsets).max())) + 1
    kernel = np.zeros((2 * half + 1, 2 * half + 1), np.float32)
    x, y = half + offsets * along[0], half + offsets * along[1]
    x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
    fx, fy = x - x0, y - y0
    for dx, dy, share in ((0, 0, (1 - fx) * (1 - fy)), (1, 0, fx * (1 - fy)), (0, 1, (1 - fx) * fy), (1, 1, fx * fy)):
        np.add.at(kernel, (y0 + dy, x0 + dx), weights * share)
    return cv2.filter2D(image, -1, kernel / kernel.sum(), borderType=cv2.BORDER_REFLECT)


def _own_blur(detail: float, probed: float) -> float:
    """The blur (pixels, beyond DETAIL_PRE) an image already has, from its detail as is and under the probe
    blur: with detail falling as the inverse square of the total blur, the ratio of the two is
    (own² + PRE² + PROBE²) / (own² + PRE²)."""
    ratio = detail / max(probed, 1e-9)
    if ratio <= 1.0:
        return float("inf")  # no detail that blurring takes away: nothing sharp in it
    return float(np.sqrt(max(DETAIL_PROBE ** 2 / (ratio - 1.0) - DETAIL_PRE ** 2, 0.0)))


def _detail(grey: np.ndarray, core: np.ndarray, blur: float) -> float:
    """Mean squared gradient of ``grey`` over ``core`` after a Gaussian blur of ``blur`` (plus DETAIL_PRE)."""
    smooth = cv2.GaussianBlur(grey, (0, 0), float(np.hypot(DETAIL_PRE, blur)))
    gx = cv2.Sobel(smooth, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(smooth, cv2.CV_32F, 0, 1, ksize=3)
    return float((gx * gx + gy * gy)[core].mean())


def hidden_triangles(source: SourceTexture, points: np.ndarray) -> np.ndarray:
    """Indices of source triangles whose texture must not be drawn onto target ``points``: facing away in the
    target (their corners turn the other way than in the source) or stretched more than MAX_STRETCH times."""
    tri = source.triangles
    # Only the band along the face oval wraps away from the camera with the pose; inside it, area changes are
    # expression (a squint, a smile) and the features carry the identity.
    rim = source.rim
    scale = (_face_size(points) / max(source.size, 1e-6)) ** 2
    source_area = source.areas
    target_area = _signed_areas(points[tri, :2])
    stretch = np.abs(target_area) / np.maximum(np.abs(source_area) * scale, 1e-6)
    away = np.sign(source_area) != np.sign(target_area)
    return np.flatnonzero(rim & (away | (stretch > MAX_STRETCH)))


def _signed_areas(corners: np.ndarray) -> np.ndarray:
    a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
    return ((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])) / 2


def plain_band(hidden: np.ndarray, shape: tuple[int, int], size: float) -> np.ndarray | None:
    """Float32 weights over a (h, w) rect, 1 where the swap carries none of the source's detail: the ``hidden``
    triangles ((T, 3, 2) rect pixel centres) grown by PLAIN_GROWTH and feathered by PLAIN_FEATHER of the face size;
    None where there are none. Drawn over the triangles' surroundings only (the feather's whole reach)."""
    if not len(hidden):
        return None
    radius = max(1, int(PLAIN_GROWTH * size))
    sigma = max(1.0, PLAIN_FEATHER * size)
    reach = radius + int(np.ceil(4 * sigma)) + 2  # OpenCV's float kernel reaches 4 sigmas
    corners = hidden.reshape(-1, 2)
    low = np.maximum(np.floor(corners.min(axis=0)).astype(int) - reach, 0)
    high = np.minimum(np.ceil(corners.max(axis=0)).astype(int) + reach + 1, (shape[1], shape[0]))
    if (high <= low).any():
        return None
    band = np.zeros(shape, np.float32)
    part = np.zeros((high[1] - low[1], high[0] - low[0]), np.uint8)
    for triangle in hidden:
        cv2.fillConvexPoly(part, _round(triangle) - low, 255, cv2.LINE_AA)
    part = cv2.dilate(part, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1,) * 2))
    band[low[1]:high[1], low[0]:high[0]] = cv2.GaussianBlur(part.astype(np.float32) * np.float32(1 / 255), (0, 0),
                                                            sigma)
    return band


def turn(points: np.ndarray) -> float:
    """How far the face is turned: the nose tip's offset from the middle of the cheek line (landmarks 234
    and 454), in half cheek-widths. About 0 frontal, ~1 at 40 degrees; beyond PROFILE the far half of the
    face is hidden and the mesh there is a guess."""
    return nose_turn(points[CHEEK_LINE[0], :2], points[CHEEK_LINE[1], :2], points[NOSE_TIP, :2])


def face_mask(points: np.ndarray, shape: tuple[int, int], size: float, *, keep_mouth: bool = True,
              keep_eyes: bool = False, forehead_keep: float = FOREHEAD_KEEP) -> np.ndarray:
    """Feathered float32 mask in [0, 1]: the face oval (forehead trimmed) less the kept target features. A
    feather of MASK_HALF pixels or more is drawn and blurred at half resolution and brought back up (it is that
    smooth anyway; a third of the cost)."""
    sigma = max(FEATHER * size / 3, 0.8)
    scale = 0.5 if sigma >= MASK_HALF else 1.0
    drawn = (max(1, int(np.ceil(shape[0] * scale))), max(1, int(np.ceil(shape[1] * scale))))

    def at(ring: np.ndarray) -> np.ndarray:
        return _round((ring + 0.5) * scale - 0.5)

    mask = np.zeros(drawn, np.uint8)
    ring = _chin_pulled_up(mask_ring(points, forehead_keep), points, CHIN_INSET * max(sigma - CHIN_FREE, 0.0))
    cv2.fillPoly(mask, [at(ring)], 255, cv2.LINE_AA)
    mask = cv2.GaussianBlur(mask.astype(np.float32) * np.float32(1 / 255), (0, 0), sigma * scale)
    holes = ([INNER_LIPS] if keep_mouth else []) + (list(EYES) if keep_eyes else [])
    if holes:
        hole = np.zeros(drawn, np.uint8)
        cv2.fillPoly(hole, [at(points[list(ring)]) for ring in holes], 255, cv2.LINE_AA)
        mask *= 1 - cv2.GaussianBlur(hole.astype(np.float32) * np.float32(1 / 255), (0, 0), HOLE_FEATHER * scale)
    if scale == 1.0:
        return mask
    return cv2.resize(mask, (shape[1], shape[0]), interpolation=cv2.INTER_LINEAR)


def _up(points: np.ndarray) -> np.ndarray:
    """The face's axis, chin to forehead, as a unit vector."""
    up = points[FOREHEAD] - points[CHIN]
    return up / np.linalg.norm(up)


def _chin_pulled_up(ring: np.ndarray, points: np.ndarray, reach: float) -> np.ndarray:
    """The ring's lower part moved up the face's axis by up to `reach` pixels, the more the further it faces down
    (see CHIN_INSET); its sides and top as they are."""
    if reach <= 0:
        return ring
    up = _up(points)
    radial = ring - ring.mean(axis=0)
    down = -(radial @ up) / np.maximum(np.linalg.norm(radial, axis=1), 1e-6)
    return ring + np.outer(np.clip((down - CHIN_SIDES) / (1 - CHIN_SIDES), 0, 1) * reach, up)


def mask_ring(points: np.ndarray, forehead_keep: float = FOREHEAD_KEEP, scale: float | None = None) -> np.ndarray:
    """The face oval, scaled by ``scale`` (RING_SCALE), with its part above the eyes lowered (hair, hat brims)."""
    oval = points[list(FACE_OVAL)]
    centre = oval.mean(axis=0)
    ring = centre + (oval - centre) * (RING_SCALE if scale is None else scale)
    up = _up(points)
    eyes = points[list(OUTER_EYE_CORNERS)].mean(axis=0)
    height = (ring - eyes) @ up
    return ring - np.outer(np.maximum(height, 0) * (1 - forehead_keep), up)


def match_colour(warped: np.ndarray, target: np.ndarray, mask: np.ndarray, skin: np.ndarray | None = None,
                 source_skin: np.ndarray | None = None, own_depth: float = 0.0,
                 plain: np.ndarray | None = None) -> np.ndarray:
    """``warped`` (uint8 BGR) recoloured in LAB to the target's skin: the target's shading and colour, the
    source's detail.

    Both faces' low frequencies are measured over their skin (``skin`` / ``source_skin``: float weights the
    size of the work rect, the mask's core when not given; eyes, brows, lips and nostrils left out so that
    neither face's features count as shading) on a small grid and spread from there. The output is the
    target's low frequencies plus the source's detail above its own: a side-lit face stays side-lit, and a
    greyscale or differently lit source takes the target's skin colour. Around that:
    - the source's highlights are scaled to the target's headroom to white (a studio highlight on a bright
      face would otherwise paint a pale band onto it);
    - the source's lightness detail is as much shallower as the target's skin is darker (DETAIL_GAIN_MIN; not
      where ``own_depth`` is 1): on a dim face the source's brows and eye sockets would otherwise turn black;
    - where the source's features are deeper than the target face's own, they are made shallower towards them, by
      at most DETAIL_DEPTH_MIN (not where ``own_depth`` is 1): harsh features look painted on and flicker; an
      ``own_depth`` between 0 and 1 takes the detail that share of the way back to the source's own depth;
    - the target's chroma follows the output's lightness as the target's own skin does (darker skin is
      redder there): a source's shadow turns shaded skin, not a grey smudge, and near white it fades;
    - the source's own chroma detail (lips, a tinted glasses rim) is kept in proportion to the two skins'
      colourfulness and never turns the skin's hue round (no cyan fringe);
    - chroma is computed at half resolution; lightness is compressed softly towards white, never clipped;
    - where ``plain`` (float weights the size of the work rect) is 1, none of the source's detail: the target's
      skin shading and colour alone (`plain_band`).
    """
    core = (mask > 0.5).astype(np.float32)
    if core.sum() < 16:
        return warped
    height, width = warped.shape[:2]
    step = shade_step((height, width))
    small = (max(1, width // step), max(1, height // step))
    sigma = max(1.0, SHADE_SCALE * max(small))

    def low(image: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Low frequencies on the small grid in 8-bit-scaled float LAB by normalised convolution over
        ``weights`` (any size), and how the skin's chroma goes with its lightness (a, b per lightness level,
        least squares)."""
        weight = core_small
        if weights is not None:
            skin_weight = weight * cv2.resize(weights, small, interpolation=cv2.INTER_AREA)
            if skin_weight.sum() >= 4:  # else features cover the skin (a tiny or strange face): the core alone
                weight = skin_weight
        shrunk = cv2.resize(image, small, interpolation=cv2.INTER_AREA)
        lab = _lab(shrunk) * np.float32([_L8, 1, 1])
        spread = cv2.GaussianBlur(weight, (0, 0), sigma)
        local = cv2.GaussianBlur(lab * weight[..., None], (0, 0), sigma) / np.maximum(spread, 1e-6)[..., None]
        total = max(float(weight.sum()), 1e-6)
        overall = (lab * weight[..., None]).reshape(-1, 3).sum(axis=0) / total
        trust = np.clip(spread / 0.2, 0, 1)[..., None]  # far from the skin: its overall colour
        centred = (lab - overall).reshape(-1, 3) * np.sqrt(weight.reshape(-1, 1))
        variance = float(centred[:, 0] @ centred[:, 0]) + total * 4.0  # a flat skin has no slope
        slope = np.clip(centred[:, 0] @ centred[:, 1:] / variance, -CHROMA_SLOPE, CHROMA_SLOPE)
        return trust * local + (1 - trust) * overall, slope

    core_small = cv2.resize(core, small, interpolation=cv2.INTER_AREA)
    (target_low, slope), (source_low, _) = low(target, skin), low(warped, source_skin)
    # Per-region factors on the small grid, brought to full size in one resize:
    # - the source's highlights in proportion to the two skins' headroom to white: a studio highlight on a
    #   bright face would otherwise turn into a white band. Its shadows and features keep their depth (they
    #   carry the identity);
    # - the source's chroma beyond its skin's in proportion to how colourful the two skins are (a red-skinned
    #   source's amber glasses rim is less red than its skin: on a paler target that difference alone would
    #   turn the rim cyan).
    target_l, source_l = target_low[..., 0], source_low[..., 0]
    damping = 1 - np.clip((255 - target_l) / np.maximum(255 - source_l, 1.0), HEADROOM_MIN, 1.0)
    shift = np.clip(target_l - source_l, -LIGHTNESS_LIMIT * _L8, LIGHTNESS_LIMIT * _L8)
    black = np.float32(16 * _L8)  # L + 16 is the cube root of luminance: shading multiplies it
    gain = np.clip((source_l + shift + black) / (source_l + black), DETAIL_GAIN_MIN if own_depth < 1 else 1.0, 1.0)
    ratio = np.clip(np.hypot(target_low[..., 1], target_low[..., 2]) /
                    np.maximum(np.hypot(source_low[..., 1], source_low[..., 2]), 1.0), 0, 1) * CHROMA_DETAIL
    lab = cv2.cvtColor(warped, cv2.COLOR_BGR2LAB)
    source_l, damping, shift, gain = _resized((source_l, damping, shift, gain), (width, height))
    own = lab[..., 0].astype(np.float32) - source_l
    kept = None if plain is None else 1 - plain
    if kept is not None:
        own *= kept
    detail = own * gain
    if own_depth < 1:
        detail *= np.float32(_depth_match(target, target_l, detail, core))
        if own_depth > 0:  # part of the way from toned to the source's own depth
            detail += np.float32(own_depth) * (own - detail)
    lightness = source_l + shift + detail - np.maximum(detail, 0) * damping
    lightness = cv2.LUT(np.clip(lightness + 0.5, 0, 255).astype(np.uint8), _SHOULDER)
    # The target's skin colour at the output's lightness (shadows on skin turn redder, highlights paler), the
    # source's own chroma detail on top but never turning the skin's hue round, all fading out towards white.
    # Chroma is computed at half resolution (the eye resolves colour far more coarsely than lightness).
    half = (max(1, width // 2), max(1, height // 2))

    def to_half(*maps: np.ndarray) -> list[np.ndarray]:
        return _resized(maps, half)

    target_l, target_a, target_b = to_half(target_l, target_low[..., 1], target_low[..., 2])
    source_a, source_b, ratio = to_half(source_low[..., 1] + 128, source_low[..., 2] + 128, ratio)
    half_l = cv2.resize(lightness, half, interpolation=cv2.INTER_LINEAR)
    _, own_a, own_b = cv2.split(cv2.resize(lab, half, interpolation=cv2.INTER_LINEAR))
    above = np.clip(half_l.astype(np.float32) - target_l, -CHROMA_RANGE * _L8, CHROMA_RANGE * _L8)
    white = cv2.LUT(half_l, _WHITE)
    if kept is not None:
        ratio *= cv2.resize(kept, half, interpolation=cv2.INTER_LINEAR)
    channels = []
    for skin_colour, own, own_low, gain in ((target_a, own_a, source_a, slope[0]),
                                            (target_b, own_b, source_b, slope[1])):
        skin_colour = skin_colour + above * np.float32(gain)
        shifted = skin_colour + (own - own_low) * ratio
        floor = skin_colour * np.float32(CHROMA_KEEP)
        shifted = np.where(skin_colour > 0, np.maximum(shifted, floor), np.minimum(shifted, floor))
        channels.append(cv2.resize(np.clip(shifted * white + 128.5, 0, 255).astype(np.uint8), (width, height),
                                   interpolation=cv2.INTER_LINEAR))
    return cv2.cvtColor(cv2.merge([lightness, *channels]), cv2.COLOR_LAB2BGR)


def _depth_match(target: np.ndarray, target_low_l: np.ndarray, detail: np.ndarray, core: np.ndarray) -> float:
    """The factor (DETAIL_DEPTH_MIN to 1) that makes the source's lightness ``detail`` (float32, the work rect's
    size) as deep as the ``target``'s own (its 8-bit L against ``target_low_l``, its low frequencies on the
    colour grid), RMS over ``core``."""
    inside = core > 0
    low = _resized((target_low_l,), (target.shape[1], target.shape[0]))[0]
    x, y, w, h = cv2.boundingRect(inside.astype(np.uint8))  # only the core is measured: only it is converted
    box = (slice(y, y + h), slice(x, x + w))
    inside = inside[box]
    own = cv2.cvtColor(target[box], cv2.COLOR_BGR2LAB)[..., 0].astype(np.float32) - low[box]
    depth = np.sqrt(np.mean(np.square(own[inside])) / max(float(np.mean(np.square(detail[box][inside]))), 1e-6))
    return float(np.clip(depth, DETAIL_DEPTH_MIN, 1.0))


def _resized(maps: Sequence[np.ndarray], size: tuple[int, int]) -> list[np.ndarray]:
    """Each map as float32, resized (bilinear) to ``size`` (w, h) one at a time: several times faster than
    resizing them stacked, and the same values."""
    return [cv2.resize(np.asarray(m, np.float32), size, interpolation=cv2.INTER_LINEAR) for m in maps]


def shade_step(shape: tuple[int, int]) -> int:
    """Pixels per cell of the grid the colour transfer measures low frequencies on, for a (h, w) rect."""
    return max(1, int(max(shape) // SHADE_GRID))


def feature_weights(points: np.ndarray, shape: tuple[int, int], size: float, scale: float = 1.0) -> np.ndarray:
    """Float32 weights over a (h, w) rect drawn at ``scale`` (so (h, w) * scale in size): 1 on skin, 0 on the
    eyes, brows, lips and nostrils of the face with landmarks ``points`` (rect pixel centres), grown and
    feathered by FEATURE_MARGIN of the face size."""
    weights = np.ones((max(1, int(np.ceil(shape[0] * scale))), max(1, int(np.ceil(shape[1] * scale)))), np.uint8)
    margin = max(1.0, FEATURE_MARGIN * size * scale)
    drawn = (points + 0.5) * scale - 0.5
    rings = [_round(drawn[list(ring)]) for ring in (*EYES, *BROWS, OUTER_LIPS)]
    cv2.fillPoly(weights, rings, 0)
    cv2.polylines(weights, rings, True, 0, 2 * int(round(margin)) + 1)
    for index in NOSTRILS:
        cv2.circle(weights, tuple(int(v) for v in _round(drawn[index])), int(round(2 * margin)), 0, -1)
    return cv2.GaussianBlur(weights.astype(np.float32), (0, 0), margin)


def _lightness_tables() -> tuple[np.ndarray, np.ndarray]:
    """Lookup tables over OpenCV's 8-bit lightness: the soft shoulder above KNEE, and the share of the skin's
    chroma kept towards white (from WHITE to 100)."""
    level = np.arange(256, dtype=np.float64) / _L8
    over = np.maximum(level - KNEE, 0)
    shoulder = level - (over - over * (100 - KNEE) / ((100 - KNEE) + over))
    white = np.clip((100 - level) / (100 - WHITE), 0, 1).astype(np.float32)
    return np.clip(np.round(shoulder * _L8), 0, 255).astype(np.uint8), white


_L8 = 255 / 100  # OpenCV's 8-bit LAB holds L * 255 / 100 (and a + 128, b + 128)
_SHOULDER, _WHITE = _lightness_tables()


def warp_source(source: SourceTexture, points: np.ndarray, depth: np.ndarray | None,
                size: tuple[int, int], *, covered: bool = False, skin: bool = False
                ) -> np.ndarray | tuple[np.ndarray, ...]:
    """Piecewise-affine warp of the source texture onto ``points`` (pixel centres) in a (w, h) canvas; with
    ``covered``, (warped, where it maps inside the source's photo: float32 0-1, None where all of it does); with
    ``skin``, that and the texture's `SourceTexture.skin` warped the same way.

    The map is computed on a grid of ``step`` pixels and interpolated: it is piecewise linear, so a
    bilinear upsample is exact inside triangles and off by a fraction of a pixel at their edges.
    """
    target_size = _face_size(points)
    # The pyramid level at or just above the target's size, blurred for what remains of the shrink (up to 2x)
    # just enough not to alias: the sharpest texture that does not shimmer as the face moves, and no pop at a
    # level change (see ALIAS_BLUR). Blending two levels instead (trilinear) softens the features the face is
    # recognised by (tune split: the judge's accept 63 -> 68 %).
    scale = float(np.clip(np.log2(source.size / max(target_size, 1e-6)), 0, len(source.levels) - 1))
    level = int(np.floor(scale))
    image = source.levels[level]
    sigma = ALIAS_BLUR * float(np.sqrt(4 ** (scale - level) - 1))
    if sigma >= 0.1:
        image = cv2.GaussianBlur(image, (0, 0), sigma)
    source_points = source.landmarks / 2 ** level - 0.5  # pixel-centre coordinates of that level
    order = np.arange(len(source.triangles))
    if depth is not None:  # far triangles first, so near ones overwrite them where the mesh folds
        order = np.argsort(-depth[source.triangles].mean(axis=1), kind="stable")
    # Triangles turned over from the source's (slivers at the nostrils and lips, which a broad smile flips) are
    # drawn before all others, which cover them where they overlap: drawn last, they stretched the nostrils'
    # shadow into dark spikes over the upper lip.
    flipped = np.sign(_signed_areas(points[source.triangles[order]])) != np.sign(source.areas[order])
    triangles = source.triangles[np.concatenate([order[flipped], order[~flipped]])]
    step = max(1, int(target_size // MAP_GRID))
    grid = (points - (step - 1) / 2) / step  # target points in grid-cell coordinates
    shape = (-(-size[1] // step), -(-size[0] // step))
    maps = _triangle_maps(source_points[triangles], grid[triangles])
    outside = _least_squares_affine(grid, source_points)  # outside the mesh: one affine fit, no seams
    labels = np.full(shape, len(maps), np.int32)
    for index, corners in enumerate(np.round(grid[triangles] * 16).astype(np.int32)):
        cv2.fillConvexPoly(labels, corners, index, cv2.LINE_8, 4)
    # Each coefficient of the chosen maps gathered on its own (contiguous arrays: faster than one gather of them all)
    a_x, b_x, c_x, a_y, b_y, c_y = (row[labels] for row in np.concatenate([maps, outside[None]]).reshape(-1, 6).T)
    ys, xs = np.indices(shape, np.float32)
    map_x = a_x * xs + b_x * ys + c_x
    map_y = a_y * xs + b_y * ys + c_y
    smooth = MAP_SMOOTH * target_size / step  # on the grid: a step's square of the work for the same smoothing
    if smooth >= 0.3:
        map_x = cv2.GaussianBlur(map_x, (0, 0), smooth)
        map_y = cv2.GaussianBlur(map_y, (0, 0), smooth)
    if step > 1:
        map_x = cv2.resize(map_x, size, interpolation=cv2.INTER_LINEAR)
        map_y = cv2.resize(map_y, size, interpolation=cv2.INTER_LINEAR)
    map_x, map_y = map_x[:size[1], :size[0]], map_y[:size[1], :size[0]]
    warped = cv2.remap(image, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    if not (covered or skin):
        return warped
    inside = _covered(source, level, map_x, map_y)
    if not skin:
        return warped, inside
    return warped, inside, cv2.remap(source.skin[level], map_x, map_y, cv2.INTER_LINEAR,
                                     borderMode=cv2.BORDER_REPLICATE)


def _covered(source: SourceTexture, level: int, map_x: np.ndarray, map_y: np.ndarray) -> np.ndarray | None:
    """`SourceTexture.inside` of pyramid `level` taken through the warp's maps; None where all of them lie well
    inside the photo."""
    image = source.levels[level]
    reach = source.fade_reach(level)
    height, width = image.shape[:2]
    left, top, right, bottom = source.photo_edges
    if ((not left or map_x.min() >= reach) and (not top or map_y.min() >= reach)
            and (not right or map_x.max() <= width - 1 - reach) and (not bottom or map_y.max() <= height - 1 - reach)):
        return None  # all of it well inside the photo (most faces)
    return cv2.remap(source.inside[level], map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def _triangle_maps(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """(T, 2, 3) affine maps taking each target triangle onto its source triangle (degenerate: zeros).

    Each is the source corners times the inverse of the target corners' homogeneous matrix [x; y; 1], that
    inverse written out (its adjugate over its determinant): a batched LU inverse costs several times more."""
    x, y = target[..., 0].astype(np.float64), target[..., 1].astype(np.float64)  # (T, 3) each
    x0, x1, x2, y0, y1, y2 = x[:, 0], x[:, 1], x[:, 2], y[:, 0], y[:, 1], y[:, 2]
    det = x0 * (y1 - y2) - x1 * (y0 - y2) + x2 * (y0 - y1)
    singular = np.abs(det) < 1e-6
    scale = 1.0 / np.where(singular, 1.0, det)
    # Rows of the inverse: coefficients of x, of y, and constants, per corner (column).
    inverse = np.stack([np.stack([y1 - y2, x2 - x1, x1 * y2 - x2 * y1], axis=1),
                        np.stack([y2 - y0, x0 - x2, x2 * y0 - x0 * y2], axis=1),
                        np.stack([y0 - y1, x1 - x0, x0 * y1 - x1 * y0], axis=1)], axis=1) * scale[:, None, None]
    maps = source.transpose(0, 2, 1) @ inverse  # (T, 2, 3)
    maps[singular] = 0
    return maps.astype(np.float32)


def _least_squares_affine(target: np.ndarray, source: np.ndarray) -> np.ndarray:
    """The 2x3 affine map that best takes ``target`` points onto ``source`` points."""
    design = np.concatenate([target, np.ones((len(target), 1))], axis=1)
    solution, *_ = np.linalg.lstsq(design, source, rcond=None)
    return solution.T.astype(np.float32)


def _blend(target: np.ndarray, face: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Alpha-blend ``face`` over ``target``; where the mask is 0 the target's pixels come back exactly."""
    return cv2.blendLinear(face, target, mask, 1.0 - mask)


def _xy(landmarks: np.ndarray) -> np.ndarray:
    """The (468, 2) float64 x, y columns of face-mesh landmarks."""
    if landmarks.ndim != 2 or landmarks.shape[0] != LANDMARK_COUNT or landmarks.shape[1] not in (2, 3):
        raise ValueError(f"expected (468, 2) or (468, 3) landmarks, got {landmarks.shape}")
    return landmarks[:, :2].astype(np.float64)


def _depth(landmarks: np.ndarray) -> np.ndarray | None:
    """The depth column of (468, 3) landmarks (smaller is nearer), or None for 2-D landmarks."""
    return landmarks[:, 2].astype(np.float64) if landmarks.shape[1] == 3 else None


def _face_size(points: np.ndarray) -> float:
    """Forehead-to-chin distance: a rotation-invariant face scale."""
    size = float(np.linalg.norm(points[FOREHEAD] - points[CHIN]))
    return size if np.isfinite(size) else 0.0


def _rect(points: np.ndarray, margin: float, width: int, height: int) -> tuple[int, int, int, int]:
    """Bounding rect of ``points`` grown by ``margin`` and clipped to the image, as x0, y0, x1, y1."""
    low = np.floor(points.min(axis=0) - margin).astype(int)
    high = np.ceil(points.max(axis=0) + margin).astype(int) + 1
    return (int(np.clip(low[0], 0, width)), int(np.clip(low[1], 0, height)),
            int(np.clip(high[0], 0, width)), int(np.clip(high[1], 0, height)))


def _round(points: np.ndarray) -> np.ndarray:
    """Float points as int32 pixel coordinates for OpenCV drawing."""
    return np.round(points).astype(np.int32)

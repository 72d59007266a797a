"""The offline engine: MediaPipe detection + 468-point mesh (shipped ONNX) and the classical swapper.

Needs no downloaded weights, so a fresh install swaps faces with no network. Apache-2.0 models and our own
code only: safe for commercial use, unlike InsightFace's non-commercial models.
"""
from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Callable, Sequence, TypeVar

import numpy as np

from facefusion_batch.concurrency import concurrency_of
from facefusion_batch.engines.base import source_face
from facefusion_batch.engines.source_cache import Record, SourceCache
from facefusion_batch.errors import SettingsError
from facefusion_batch.faces.types import Face
from facefusion_batch.models import store
from facefusion_batch.models.batcher import MicroBatcher
from facefusion_batch.models.sessions import Counter, GuardedSession, SessionPool
from facefusion_batch.offline import classic, face_template
from facefusion_batch.offline.mediapipe import (MODEL_FILES, Detection, MediaPipeDetector, MediaPipeLandmarker,
                                                asset_path, five_points, four_points)
from facefusion_batch.settings import Settings

T = TypeVar("T")

_PRESENCE = 0.5  # face-mesh presence below this means the detection was not a face
# ... and a track's refit (the mesh asked where a face the detector missed should be, `refit`) below this: on a
# small face the presence goes up and down from frame to frame (0.1-0.9 on a dim 34 px face in sunglasses), and a
# track looked for and not found ends, so that at 0.5 such a face was swapped on, off and on again (tune split's
# crowd pan, full run: toggles 35 -> 21, missed 38.0 -> 32.4 %, no phantom swap). A new face still needs _PRESENCE.
REFIT_PRESENCE = 0.2
SURE_MESH = 0.9  # ... and a face only one weak look found (`Detection.weak`) needs this: a fist was fitted at 0.68
# ... and the mesh's eyes, nose and mouth within WEAK_AGREE of the detection's box of where the detector put them: a
# patch of a blurred noise backdrop was fitted at 0.97, its points 0.30-0.42 of its box from the detector's; on a weak
# turned 26 px face they were 0.13-0.18 apart, on faces the detectors find as such 0.01-0.09.
WEAK_AGREE = 0.25
# A small face the sweep found and the mesh said no face on (a soft face of 25-35 px on a far wall: presence
# 0.0004-0.002 on every crop the mesh is tried on) is swapped on a template mesh placed on its keypoints
# (offline/face_template.py) where it is this size or smaller and the detectors find it again on a closer look, their
# features agreeing (see `_templated`). Tune split: that face was left on every frame of the far crowd and the crowd
# pan, 150 of the split's 297 missed face-frames.
TEMPLATE_SIZE = 48.0
# Not below TEMPLATE_LEAST, and only where the short-range model finds the face too on a view three times its size:
# the full-range model's two looks (the sweep's tile, the closer view) agreed on patches of a blurred-noise backdrop
# of 11 and 22 px (scores 0.50-0.65, their features 0.03-0.09 of the box apart, as on the real faces); the short-range
# model scored the 22 px patch 0.40-0.43, the tune split's soft faces of 25-35 px 0.60-0.70.
TEMPLATE_LEAST = 16.0
# ... turned to fit the detectors' eyes, nose and mouth (`face_template.placed`), where they lie as a face's turned no
# further than ~40 degrees do: within TEMPLATE_MISFIT of its eye distance from the template placed on them unturned
# (the small frontal faces templated on `tune`, `seventh` and `fresh` 0.07-0.17, a face turned 40 degrees 0.25).
# `fresh`'s shouting soldier in profile (yaw ~85 degrees, 40 px, far; his points 0.53 off: his eyes a quarter of their
# height above the mouth apart, a frontal face's about as far as that height) was swapped with a face pasted over his
# cheek and ear, placed frontal or turned as his points fit (38-70 degrees from frame to frame: the turn that fits is
# no test of a profile). Such a face is not templated. (Templated as a profile instead, turned as far as the template
# goes, so as to be left and counted: on `sixth`, held out, 100 more face-frames counted, none swapped more or less,
# but jumps 1 -> 5 and flicker p95 +1.91 -> +2.08; the cause not looked for there: taken out.)
TEMPLATE_MISFIT = 0.3
# ... and its track is carried on where the detectors' closer look scores it this much (as REFIT_PRESENCE for a
# fitted one: a face seen once is looked for again more leniently than a new one): the soft face scored 0.53-0.56 by
# the detectors and fell below their threshold on the next frames, and the track ended after 16 frames.
TEMPLATE_AGAIN = 0.3
# ... and moved by TEMPLATE_EASE of the offset of the detectors' eyes from its own up to TEMPLATE_NOISE of its size:
# such a track is carried by the detectors' looks frame after frame, and their eyes on a 30 px face wander by 1-3 px
# from look to look; taken whole, the swap shook by that (the soft face's added flicker 1-10 grey levels a frame,
# the clip's p95 +2.48 -> +3.15); not taken at all, the swap stayed behind as the camera drifted, and lost the face.
TEMPLATE_NOISE = 0.12
TEMPLATE_EASE = 0.3
# A track's face the mesh does not find where it should be, but the detectors do (small and dim in a crowd, or
# smeared by motion: the detectors score it 0.5-0.8, the mesh's presence is 0.01-0.15), is carried there with its
# predicted mesh, moved by the offset of the detection's eyes from its own, if that offset is under CARRY_SHIFT
# of the face's size (tune split's crowds: missed 330 -> 299 face-frames, toggles 22 -> 10).
CARRY_SHIFT = 0.25
# A swap that changes the face (its box, `classic.visible_change`) by less than this mean (grey levels) is not
# visibly the source (mostly a turned face whose visible half is cut away, or a source and target much alike):
# the face is left as it is and counted with the faces left in profile, so the summary says so. No face is
# ever output changed by less than this: a face is swapped visibly or not at all.
FAINT = 5.0
# In a video both are decided per face track, in frame order (`settle`), with hysteresis, so that a face
# hovering at a threshold is not switched between the source and itself from frame to frame (a flicker between
# two identities): a track left as turned away is swapped again once it turns back below PROFILE - TURN_BACK;
# whether its swap is visible is measured on its first frame and every RECHECK frames after: a track is swapped
# from its first frame when its swap changes it by FAINT * (1 + FAINT_BACK), kept on while it does, and, once
# left as too faint after being swapped, swapped again from FAINT * (1 + 2 * FAINT_BACK); one never swapped yet is
# asked what a new track is (tune split's crowd pan: a turned man coming in at the top edge was found faint while cut,
# and, wholly in, his swap's 5.5-6 was below the second bar: left 10 frames, till his next check). Between those
# frames a swap is left only below FAINT itself, which the band above keeps rare. The band is relative: the change's
# frame-to-frame noise grows with the change (a face drifting by a pixel: about +-3 %). (The band once reached below
# FAINT, to FAINT * (1 - FAINT_BACK): swaps of 4.5-5 were output, touched yet too faint to read as swapped.)
TURN_BACK = 0.2
FAINT_BACK = 0.1
# Deep swaps: a track whose swap, its detail toned to the face's light (`classic.match_colour`), would be too faint to
# see is swapped with the source's detail deeper, for the rest of the track (`Face.own_depth`, in its memo), where the
# source's own depth shows. Small, dim faces: toned, the far walls of `thirteenth`, `heldout` and `tenth` left 75, 32
# and 10 more face-frames than before the toning. Only as deep as it needs to show, DEEP_MARGIN times the change
# asked for (found in up to DEEP_STEPS tries): at the source's own depth a dim group's faces had black eye sockets and
# brows painted on, which flickered as the camera moved (tune split's t_dim_group, made in session 29: added flicker
# +5.98 / +10.88 -> +3.11 / +5.06 at 1.1, +3.86 / +6.56 at 1.25; the same faces accepted). The depth only grows
# along a track, so that its swap does not step back and forth. An image's face likewise, on its own.
DEEP_MARGIN = 1.1
DEEP_STEPS = 2

# A track's face turned beyond this (`classic.turn`, ~50 degrees) once found with a score under _PRESENCE (a
# refit's mesh presence, or a detection found only on a closer look) is left beyond it for the rest of the track
# (classic.PROFILE otherwise): near profile the mesh's far half is a guess, and on a face it is unsure of a worse
# one. Sixth split's woman in red (~50 px, turned ~70 degrees, her presence 0.2-0.6 from frame to frame) was
# swapped as a faint smear that came and went between the frames the mesh lost her (the clips she is in: toggles
# 15 -> 9, at 100 more face-frames left; the large turned faces of ninth and held-out are swapped as before).
SURE_PROFILE = 1.6
# A turned track (beyond UNSTEADY_TURN, ~40 degrees) whose turn changes from frame to frame by more than UNSTEADY
# on average (a running mean, weight UNSTEADY_GAIN) is left from then on: the mesh cannot hold that face (a
# screaming man in near profile, fitted at turns 0.75-1.97 on alternate frames), and its swap jumped between two
# placements frame after frame, a mouth below the source's. A head turning round in a second changes its turn by
# ~0.07 a frame; the other faces of the seven clips traced (five splits) peaked at 0.12, his at 0.25-0.31.
# Measured while the face is wholly in the picture: one the frame's edge cuts is fitted at a turn that is a guess
# (twelfth's 190 px face coming in at the left edge: 0.6-1.1 from frame to frame).
UNSTEADY = 0.15
UNSTEADY_GAIN = 0.2
UNSTEADY_TURN = 1.0
RECHECK = 10
# A face found too faint while the frame's edge cut it is checked again on the next frame, till it is found so
# wholly in the picture: coming in across the edge, the little of it in the picture changed too little on its first
# frame, and it was left for RECHECK frames as it came in (tune split's crowd pan: a face coming in at the top, left
# for 9 frames, 5 of them wholly in the picture).
# A face turned the other way than the source's face, by at least MIRROR_TURN (`classic.turn`, ~12 degrees), is
# swapped with the source's mirror image: its large near half then takes the source's near half, not its
# foreshortened far one stretched out (smears, half glasses and dark blotches on turned faces), and the
# source's far half goes where the face is foreshortened too. Tune split's t1.jpg (faces turned 0.4-1.2 the
# other way than the source): judge distances fell by 0.05-0.16 for the turned sources (greyscale Biden 0.75 ->
# 0.59 on the 46 degree face) and by up to 0.07 for a nearly frontal one. Per track with hysteresis (a track
# swaps back to the source as is below MIRROR_TURN - MIRROR_BACK), so a face turning is switched once.
MIRROR_TURN = 0.3
MIRROR_APART = 0.6
MIRROR_BACK = 0.1
# A source face turned further than this (`classic.turn`; ~35 degrees) is said to swap less well when the run starts:
# it is turned to face the camera (`classic.frontalised`), but its far half is its near half's mirror image and its
# nose, seen from the side, is drawn from its side. On the eighth split a source turned 1.41 was seen as itself on
# 0 % of the faces it was swapped onto before it was turned (closer to it than to the face it replaced on 0 %), 2 %
# after (closer on 100 %), where the split's frontal sources (turn up to 0.41) were on 50-86 %.
SOURCE_TURNED = 1.0
# A source turned to face the camera when prepared (`classic.frontalised`) has a face for frontal faces; a face turned
# at least POSED of the way to the photo's own turn (`classic.turn`, either way; back below it by MIRROR_BACK, per
# track) is swapped from the photo as it was taken instead, or from its mirror image where turned the other way, as
# any source is (MIRROR_TURN): its turned face is there as the camera saw it, where the frontal face's far half is
# its near half's mirror image turned back again: the texture of the nearer of the two poses. Tuning split `turned`
# (session 44: 11 sources, 7 of them frontalised): accepted 59.1 -> 68.5 % (faces turned 30 degrees or more 58.1 ->
# 75.8 %, the rest 59.4 -> 66.4 %), found 88.0 -> 89.6 %; held out, run once: `eighth` unchanged, `twelfth` accepted
# 61.7 -> 64.2 % but found 87.0 -> 83.3 % (its greyscale woman in a headband, turned 24 degrees, left a pale band
# over turned cheeks; docs/quality.md).
POSED = 0.5
_SOURCE_MARGIN = 0.35  # keep this much context around the source face in the cached crop
REFIT_SIZE = 0.05  # a detector box within this (log ratio) of the mesh's own box ...
REFIT_OFFSET = 0.03  # ... and centred within this share of its size needs no second mesh fit


def refuse_neural_only(settings: Settings) -> None:
    """The offline engine has its own swapper and mesh mask: FaceFusion's processor settings it can't honour
    are one SettingsError naming them and the neural models they need (never silently ignored)."""
    from facefusion_batch.engines.neural import neural_model_states

    asked = []
    if "face_enhancer" in settings.processors:
        asked.append(f"face_enhancer ({settings.face_enhancer_model})")
    if settings.face_swapper_model != "inswapper_128":
        asked.append(f"face_swapper_model {settings.face_swapper_model}")
    if settings.face_swapper_pixel_boost or settings.face_swapper_weight != 0.5:
        asked.append("face_swapper_pixel_boost / face_swapper_weight")
    asked += [f"{kind} masks" for kind in ("occlusion", "region", "area") if kind in settings.face_mask_types]
    if settings.face_mask_blur != 0.3 or settings.face_mask_padding != (0, 0, 0, 0):
        asked.append("face_mask_blur / face_mask_padding")
    if any(v is not None for v in (settings.face_selector_gender, settings.face_selector_race,
                                   settings.face_selector_age_start, settings.face_selector_age_end)):
        asked.append("face selector gender/race/age filters")
    if settings.face_detector_angles != (0,) or settings.face_detector_margin != (0, 0, 0, 0):
        asked.append("face_detector_angles / face_detector_margin")
    if not asked:
        return
    names = [s.spec.name for s in neural_model_states(settings) if not store.usable(s)]
    models = f" after `ffb models download {' '.join(names)}`" if names else ""
    raise SettingsError(f"the offline engine can't do {', '.join(asked)}: it has its own swapper and mesh mask; "
                        f"use --engine neural{models}")


class OfflineEngine:
    name = "offline"
    models = ("mediapipe_face_detection_short_range", "mediapipe_face_detection_full_range",
              "mediapipe_face_landmark", "ffb_classic_swap")
    warnings: tuple[str, ...] = ()  # what it can't do is refused (refuse_neural_only), not warned about

    def __init__(self, settings: Settings, pool: SessionPool, cache: SourceCache,
                 slots: threading.Semaphore) -> None:
        refuse_neural_only(settings)
        self.pool, self.cache = pool, cache
        self.model_files = tuple(asset_path(name) for name in MODEL_FILES.values())

        def guard(role: str) -> GuardedSession:
            return GuardedSession(pool, asset_path(MODEL_FILES[role]), slots)

        self._frames_detected = Counter()
        self.profiles_left = Counter()  # face-frames left unswapped: strong profile, or a swap too faint to see
        self._detector = MediaPipeDetector(guard("long_range"), guard("short_range"),
                                           score_threshold=settings.face_detector_score,
                                           min_face_size=settings.face_detector_min_size or None)
        self._landmarker = MediaPipeLandmarker(guard("landmarks"))
        # The detectors take a batch of frames: frames from all worker threads share one call.
        concurrency = concurrency_of(settings)
        batch = concurrency.micro_batch
        self._detect_batcher = (MicroBatcher(self._detector.detect, batch, settings.batch_wait_ms / 1000,
                                             "ffb-detect-batcher", concurrency.batcher_producers)
                                if batch > 1 else None)
        self._textures: dict[int, tuple[Record, tuple[classic.SourceTexture, float]]] = {}
        self._mirrors_made: dict[int, tuple[Record, classic.SourceTexture | None]] = {}
        self._taken: dict[int, tuple[Record, classic.SourceTexture]] = {}
        self._lock = threading.Lock()

    def detect(self, frame: np.ndarray) -> list[Face]:
        self._frames_detected.add()
        if self._detect_batcher is not None:
            detections = self._detect_batcher(frame)
        else:
            detections = self._detector.detect([frame])[0]
        return self._fitted(frame, detections)

    def sweep(self, frame: np.ndarray, faces: Sequence[Face], changed: np.ndarray | None = None) -> list[Face]:
        """Faces the whole-frame detectors missed (small ones), looked for on tiles of the frame (those where
        the picture `changed`): several detector inputs, so the pipeline asks now and then (workflow/analysis.py
        `MotionGate`)."""
        return self._fitted(frame, self._detector.sweep(frame, [face.box for face in faces], changed), swept=True)

    def _fitted(self, frame: np.ndarray, detections: Sequence[Detection], swept: bool = False) -> list[Face]:
        """The face mesh fitted on each detection; those the mesh says are no face are dropped, but for a sweep's
        small faces the detectors see again (`_templated`)."""
        if not detections:
            return []
        mesh = self._landmarker.predict(frame, detections, wider=True)
        points = five_points(mesh.points)
        meshed = [_is_face(mesh.presence[i], points[i], d) for i, d in enumerate(detections)]
        faces = [Face(box=d.box, score=d.score, kps=points[i], landmarks=mesh.points[i])
                 for i, d in enumerate(detections) if meshed[i]]
        placed = self._templated(frame, [d for d, ok in zip(detections, meshed) if not ok]) if swept else []
        # Fit once more on the region the mesh itself spans (as MediaPipe's own tracking does): a detector box
        # off-centre or too large gives a mesh that is too large or offset; its own box does not. Where the
        # two boxes agree already, a second fit would give the same mesh: it is skipped (CPU).
        meshed = [_meshed_box(face) for face in faces]
        again = [i for i, (face, box) in enumerate(zip(faces, meshed)) if not _agree(face.box, box.box)]
        refits = self._fits(frame, [meshed[i] for i in again], _PRESENCE) if again else []
        # A second fit that says "no face" where the first said one keeps the first: on a small face the mesh's
        # presence goes up and down from fit to fit (0.1-0.9 on a dim 34 px face in sunglasses).
        fitted = {i: face for i, face in zip(again, refits) if face is not None}
        return [fitted.get(i, box) for i, box in enumerate(meshed)] + placed

    def _templated(self, frame: np.ndarray, detections: Sequence[Detection]) -> list[Face]:
        """Faces with a template mesh placed on their keypoints (offline/face_template.py), for the detections the
        mesh said no face on, TEMPLATE_LEAST to TEMPLATE_SIZE wide (not weak ones), that the detectors find again on
        a closer look (`look_at`: their eyes, nose and mouth within WEAK_AGREE of where the first look put them), as
        a face turned no further than ~40 degrees (TEMPLATE_MISFIT), and the short-range model finds too
        (`look_short`); the template turned to fit them."""
        small = [d for d in detections
                 if not d.weak and TEMPLATE_LEAST <= float(d.box[2] - d.box[0]) <= TEMPLATE_SIZE]
        if not small:
            return []
        placed = [(first, face_template.placed((first.keypoints + again.keypoints) / 2))
                  for first, again in zip(small, self._detector.look_at(frame, [d.box for d in small]))
                  if again is not None and _features_agree(again.keypoints[:4], first.keypoints[:4], first.box)]
        seen = [(first, at) for first, at in placed if at.frontal_misfit <= TEMPLATE_MISFIT]
        closer = self._detector.look_short(frame, [first.box for first, _ in seen])
        return [Face(box=first.box, score=first.score, kps=five_points(at.points[None])[0], landmarks=at.points,
                     templated=True) for (first, at), close in zip(seen, closer) if close is not None]

    def refit(self, frame: np.ndarray, predicted: Sequence[Face]) -> list[Face]:
        """The face mesh fitted straight on tracks' predicted boxes (the landmark model needs only a region
        and says whether a face is there): finds faces the detector missed, e.g. tilted or moving ones. Where
        the mesh says no face, the detectors look there (`look_at`; at TEMPLATE_AGAIN for a track placed from a
        template): a face they find is the track's face, its predicted mesh moved to where they see its eyes (see
        CARRY_SHIFT)."""
        fits = self._fits(frame, predicted, REFIT_PRESENCE)
        for templated in (False, True):
            lost = [i for i, fit in enumerate(fits) if fit is None and predicted[i].templated == templated]
            seen = self._detector.look_at(frame, [predicted[i].box for i in lost],
                                          TEMPLATE_AGAIN if templated else None) if lost else []
            for i, face in zip(lost, seen):
                if face is not None:
                    fits[i] = _carried(predicted[i], face)
        return [face for face in fits if face is not None]

    def _fits(self, frame: np.ndarray, predicted: Sequence[Face], presence: float) -> list[Face | None]:
        """The mesh fitted on each face's box, moved with it; None where its presence is below `presence`."""
        detections = [Detection(face.box, face.score, _keypoints(face)) for face in predicted]
        mesh = self._landmarker.predict(frame, detections)
        points = five_points(mesh.points)
        found: list[Face | None] = []
        for i, face in enumerate(predicted):
            if mesh.presence[i] < presence:
                found.append(None)
                continue
            moved = mesh.points[i, :, :2].mean(axis=0) - face.landmarks[:, :2].mean(axis=0)
            found.append(Face(box=face.box + np.tile(moved, 2).astype(face.box.dtype), score=float(mesh.presence[i]),
                              kps=points[i], landmarks=mesh.points[i]))
        return found

    def embed(self, frame: np.ndarray, faces: Sequence[Face]) -> np.ndarray:
        raise SettingsError("the offline engine has no face recogniser; reference mode needs --engine neural")

    def prepare_source(self, path: Path) -> Record:
        def compute() -> Record:
            image, face, count = source_face(path, self)
            x1, y1, x2, y2 = _crop_box(face.box, image.shape, _SOURCE_MARGIN)
            landmarks = face.landmarks.copy()
            landmarks[:, :2] -= (x1, y1)
            return {"image": image[y1:y2, x1:x2].copy(), "landmarks": landmarks, "faces": np.array(count)}

        record = self.cache.get(path, "offline:" + ":".join(self.models), compute)
        notice = source_notice(record["landmarks"])
        return record if notice is None else {**record, "notice": np.array(notice)}

    def merge_sources(self, records: Sequence[Record]) -> Record:
        if len(records) > 1:
            raise SettingsError("several sources (-s a.jpg -s b.jpg) are averaged by the neural engine only: the "
                                "offline engine warps one photo's face; pass one --source, or --engine neural with "
                                "its models")
        return records[0]

    def face_filter(self, source: Record | None = None) -> None:
        return None  # the filters are refused when the engine starts

    def settle(self, frame: np.ndarray, faces: Sequence[Face], source: Record, index: int) -> list[Face]:
        """Each tracked face marked `leave` when its track is turned too far or its swap too faint to see (see
        TURN_BACK): decided on the track's memo, which only the frames' turns, in frame order, change."""
        settled = []
        for face in faces:
            memo = face.memo
            if memo is None:
                settled.append(face)
                continue
            turn = classic.turn(face.landmarks)
            if abs(turn) > SURE_PROFILE and face.score < _PRESENCE:
                memo["unsure"] = True  # see SURE_PROFILE
            cut = _cut_by_edge(face.landmarks, frame.shape)
            last, wobble = memo.get("turn_at"), memo.get("wobble", 0.0)
            if last is not None and last[0] == index - 1 and not cut:
                wobble = memo["wobble"] = wobble + UNSTEADY_GAIN * (abs(turn - last[1]) - wobble)
            memo["turn_at"] = None if cut else (index, turn)  # cut by the frame's edge: the mesh's turn is a guess
            if wobble > UNSTEADY and abs(turn) > UNSTEADY_TURN and not cut:
                memo["unsteady"] = True  # see UNSTEADY
            limit = SURE_PROFILE if memo.get("unsure") else classic.PROFILE
            memo["turned"] = (memo.get("unsteady", False)
                              or abs(turn) > limit - (TURN_BACK if memo.get("turned") else 0.0))
            if "mirror" not in memo or not cut:
                memo["posed"], memo["mirror"] = self._pose(turn, source, memo.get("posed", False),
                                                           memo.get("mirror", False))
            posed, mirror = memo["posed"], memo["mirror"]
            if memo.get("checked_texture", (posed, mirror)) != (posed, mirror):
                memo.pop("checked", None)  # another texture: whether its swap shows is measured afresh
            swapped = None
            recheck = 1 if memo.get("faint") and memo.get("checked_cut") else RECHECK  # see RECHECK
            if not memo["turned"] and index >= memo.get("checked", -RECHECK) + recheck:
                least = FAINT * (1 + FAINT_BACK * (2 if memo.get("faint") and memo.get("shown") else 1))
                swapped, shows, own = self._shown(frame, face, self._texture(source, mirror, posed),
                                                  memo.get("own_depth", 0.0), least)
                memo["faint"], memo["own_depth"], memo["shown"] = not shows, own, memo.get("shown", False) or shows
                memo["checked"], memo["checked_texture"], memo["checked_cut"] = index, (posed, mirror), cut
            leave = memo["turned"] or memo.get("faint", False)
            own = memo.get("own_depth", 0.0)
            if leave or mirror or posed or own or swapped is not None:
                face = dataclasses.replace(face, leave=leave, mirror=mirror, posed=posed, own_depth=own,
                                           swapped=None if leave or swapped is None else (frame, swapped))
            settled.append(face)
        return settled

    def swap(self, frame: np.ndarray, faces: Sequence[Face], source: Record) -> np.ndarray:
        for face in faces:
            # A face of a track was settled in frame order (`settle`); any other is decided on this frame alone.
            turn = classic.turn(face.landmarks) if face.memo is None else 0.0
            if face.leave or (face.memo is None and abs(turn) > classic.PROFILE):
                self.profiles_left.add()  # left as it is, not mangled
                continue
            posed, mirror = (face.posed, face.mirror) if face.memo is not None else self._pose(turn, source)
            # Its swap made while settling is the same, as long as no face before it changed the frame.
            if face.swapped is not None and face.swapped[0] is frame:
                swapped, shows = face.swapped[1], True  # kept by `settle` for changing the face by more than FAINT
            else:  # an image's face may go deeper on its own; a track's depth was decided by `settle`
                swapped, shows, _ = self._shown(frame, face, self._texture(source, mirror, posed), face.own_depth,
                                                FAINT, deepen=face.memo is None)
            if not shows:
                self.profiles_left.add()  # a change nobody would see is no swap: left, and said so
                continue
            frame = swapped
        return frame

    def _shown(self, frame: np.ndarray, face: Face, texture: classic.SourceTexture, own_depth: float, least: float,
               deepen: bool = True) -> tuple[np.ndarray, bool, float]:
        """The face's swap with `own_depth` of the source's own detail depth (`classic.swap_face`), whether it changes
        the face by `least` or more, and its depth; where it is too faint and `deepen`, the least depth that shows, if
        the source's own does (see "Deep swaps")."""
        def swapped_at(depth: float) -> tuple[np.ndarray, float]:
            swapped = classic.swap_face(frame, face.landmarks, texture, motion=face.motion, own_depth=depth)
            return swapped, classic.visible_change(frame, swapped, face.landmarks)

        swapped, change = swapped_at(own_depth)
        if change >= least or not deepen or own_depth >= 1:
            return swapped, change >= least, own_depth
        deep, deep_change = swapped_at(1.0)
        if deep_change < least:
            return swapped, False, own_depth
        # The change grows with the depth, a little slower than in proportion: aimed along the line between the two
        # depths at DEEP_MARGIN times `least`, and again from where that fell short.
        low, low_change = own_depth, change
        for _ in range(DEEP_STEPS):
            depth = low + (1 - low) * (least * DEEP_MARGIN - low_change) / (deep_change - low_change)
            if depth >= 1:
                break
            between, between_change = swapped_at(depth)
            if between_change >= least:
                return between, True, depth
            low, low_change = depth, between_change
        return deep, True, 1.0

    def _pose(self, turn: float, source: Record, posed: bool = False, mirror: bool = False) -> tuple[bool, bool]:
        """Which of the source's faces a face turned by `turn` is swapped from, as (posed, mirror): for a source turned
        to face the camera, its photo as taken where the face is turned POSED of the way to the photo's turn (see
        POSED), else its frontal face; for any other source the photo as taken. Mirrored where the face is turned the
        other way (`_mirrors`). `posed`, `mirror`: the track's choice so far (each held back by MIRROR_BACK)."""
        texture, side = self._textures_of(source)
        if not texture.frontalised:
            return False, self._mirrors(turn, side, MIRROR_BACK if mirror else 0.0, source)
        if abs(turn) < POSED * abs(side) - (MIRROR_BACK if posed else 0.0):
            return False, False
        return True, turn * side < 0 and self._mirrored(source) is not None

    def _mirrors(self, turn: float, side: float, back: float, source: Record) -> bool:
        """Whether a face turned by `turn` is turned the other way than the source's face (turned by `side`), by at
        least MIRROR_TURN - `back` (see MIRROR_TURN), and the source's mirror image has a face to swap with."""
        away = -turn * np.sign(side)  # how far the face is turned the other way than the source's
        return (away >= MIRROR_TURN - back and away + abs(side) >= MIRROR_APART - back
                and self._mirrored(source) is not None)

    def texture_for(self, source: Record, turn: float) -> classic.SourceTexture:
        """The prepared texture a face turned by `turn` (`classic.turn`) is first swapped from (`_pose`). For
        comparing swaps outside the pipeline (benchmarks/swap_variants.py)."""
        posed, mirror = self._pose(turn, source)
        return self._texture(source, mirror, posed)

    def _texture(self, source: Record, mirror: bool = False, posed: bool = False) -> classic.SourceTexture:
        """The source's face prepared for swapping: its mirror image's where `mirror`, its photo's as taken where
        `posed` (see `_pose`)."""
        if mirror:
            mirrored = self._mirrored(source)
            if mirrored is not None:
                return mirrored
        texture = self._textures_of(source)[0]
        return self._as_taken(source) if posed and texture.frontalised else texture

    def _textures_of(self, source: Record) -> tuple[classic.SourceTexture, float]:
        # The source's face prepared for swapping, and the turn of its face in its photo (`classic.turn`; never 0, so
        # that it has a side).
        return self._once(self._textures, source, lambda: (
            classic.prepare_source(source["image"], source["landmarks"]), classic.turn(source["landmarks"]) or 1e-6))

    def _as_taken(self, source: Record) -> classic.SourceTexture:
        # A frontalised source's photo prepared as it was taken (`_pose`).
        return self._once(self._taken, source, lambda: classic.prepare_source(source["image"], source["landmarks"],
                                                                              frontalise=False))

    def _mirrored(self, source: Record) -> classic.SourceTexture | None:
        # The source's mirror image prepared for swapping: its face found and meshed on the flipped photo (its
        # own mesh, in the mesh's own point order), when a face first needs it; None where no face is found there.
        def made() -> classic.SourceTexture | None:
            flipped = np.ascontiguousarray(source["image"][:, ::-1])
            faces = self._fitted(flipped, self._detector.detect([flipped])[0])
            return (classic.prepare_source(flipped, max(faces, key=lambda f: f.area).landmarks, frontalise=False)
                    if faces else None)
        return self._once(self._mirrors_made, source, made)

    def _once(self, store: dict[int, tuple[Record, T]], source: Record, make: Callable[[], T]) -> T:
        # `make()`'s value for `source`, made once per source per process: keyed by the record the cache hands out for
        # that source (kept beside it, so that its id is not reused while the entry lives).
        with self._lock:
            entry = store.get(id(source))
            if entry is None:
                entry = store[id(source)] = (source, make())
            return entry[1]

    def detector_calls(self) -> int:
        """Frames on which detection ran (several may share one batched model call)."""
        return self._frames_detected.value

    def close(self) -> None:
        if self._detect_batcher is not None:
            self._detect_batcher.close()
        self.pool.close()


def _cut_by_edge(landmarks: np.ndarray, shape: tuple[int, ...]) -> bool:
    """Whether some of the face's mesh lies outside a frame of `shape` (its fits there are extrapolated)."""
    xy = landmarks[:, :2]
    return bool((xy < 0).any() or (xy[:, 0] > shape[1]).any() or (xy[:, 1] > shape[0]).any())


def _carried(face: Face, seen: Detection) -> Face | None:
    """`face` (a track's predicted face) moved by the offset between its eyes and the eyes of the detection
    `seen` over it, or None where they lie further apart than CARRY_SHIFT of the face's size (another face); a face
    placed from a template (`Face.templated`) moved TEMPLATE_EASE of an offset up to TEMPLATE_NOISE."""
    shift = seen.keypoints[:2].mean(axis=0) - face.kps[:2].mean(axis=0)
    apart = float(np.linalg.norm(shift)) / float(face.box[2] - face.box[0])
    if apart > CARRY_SHIFT:
        return None
    if face.templated and apart <= TEMPLATE_NOISE:
        shift = shift * np.float32(TEMPLATE_EASE)
    landmarks = face.landmarks.copy()
    landmarks[:, :2] += shift
    return Face(box=face.box + np.tile(shift, 2).astype(face.box.dtype), score=seen.score, kps=face.kps + shift,
                landmarks=landmarks, templated=face.templated)


def source_notice(landmarks: np.ndarray) -> str | None:
    """What to tell the user about a source face with these landmarks before the run: that it is turned too far
    to swap well (SOURCE_TURNED), or None."""
    if abs(classic.turn(landmarks)) <= SOURCE_TURNED:
        return None
    return ("its face is turned to one side: for faces that look at the camera the offline engine turns it to face "
            "the camera and completes its far half with its near half's mirror image (its nose and far side are a "
            "guess); turned faces get it as photographed; a frontal photo of the same person swaps better")


def _is_face(presence: float, points: np.ndarray, detection: Detection) -> bool:
    """Whether the mesh fitted on `detection` (its `presence`, its five `points`: eyes, nose, mouth corners) says a
    face is there: presence _PRESENCE; for a weak detection SURE_MESH, and the mesh's eyes, nose and mouth within
    WEAK_AGREE of the box's size of the detector's own."""
    if not detection.weak:
        return presence >= _PRESENCE
    return presence >= SURE_MESH and _features_agree(four_points(points), detection.keypoints[:4], detection.box)


def _features_agree(mine: np.ndarray, theirs: np.ndarray, box: np.ndarray) -> bool:
    """Whether two placings of a face's eyes, nose tip and mouth centre ((4, 2) each) lie within WEAK_AGREE of the
    width of `box` of each other, point by point."""
    return bool(np.linalg.norm(mine - theirs, axis=1).max() <= WEAK_AGREE * float(box[2] - box[0]))


def _meshed_box(face: Face) -> Face:
    """`face` with its box replaced by the square its landmarks span (what a detector's box is, on a face the
    mesh fits well)."""
    low, high = face.landmarks[:, :2].min(axis=0), face.landmarks[:, :2].max(axis=0)
    centre, side = (low + high) / 2, float((high - low).max())
    box = np.concatenate([centre - side / 2, centre + side / 2]).astype(np.float32)
    return Face(box=box, score=face.score, kps=face.kps, landmarks=face.landmarks)


def _agree(box: np.ndarray, other: np.ndarray) -> bool:
    """Whether two face boxes are the same region for the landmark model: sizes within REFIT_SIZE, centres
    within REFIT_OFFSET of the size."""
    side, other_side = float(box[2] - box[0]), float(other[2] - other[0])
    if side <= 0 or other_side <= 0:
        return False
    offset = float(np.linalg.norm((box[:2] + box[2:]) / 2 - (other[:2] + other[2:]) / 2)) / side
    return abs(np.log(other_side / side)) < REFIT_SIZE and offset < REFIT_OFFSET


def _keypoints(face: Face) -> np.ndarray:
    """MediaPipe detector keypoints (eyes, nose, mouth, ears) from a face's 5 points and box: the landmark
    ROI uses the eyes (rotation) and the box (size and centre) only."""
    right_eye, left_eye, nose, mouth_right, mouth_left = face.kps
    x1, y1, x2, y2 = face.box
    middle = (y1 + y2) / 2
    return np.array([right_eye, left_eye, nose, (mouth_right + mouth_left) / 2, (x1, middle), (x2, middle)],
                    np.float32)


def _crop_box(box: np.ndarray, shape: tuple[int, ...], margin: float) -> tuple[int, int, int, int]:
    x1, y1, x2, y2 = box
    pad_x, pad_y = (x2 - x1) * margin, (y2 - y1) * margin
    height, width = shape[:2]
    return (max(0, int(x1 - pad_x)), max(0, int(y1 - pad_y)), min(width, int(np.ceil(x2 + pad_x))),
            min(height, int(np.ceil(y2 + pad_y))))

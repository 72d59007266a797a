"""FairFace classifier (gender, age bracket, race) and FaceFusion's face selector order and filters, as pure
functions over faces."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence, TypeVar, get_args

import numpy as np

from facefusion_batch.faces.geometry import WARP_TEMPLATES, align_matrix, warp_crop
from facefusion_batch.faces.types import Face
from facefusion_batch.models.catalog import ModelSpec
from facefusion_batch.processors.tensors import run_stacked, to_tensor

Gender = Literal["female", "male"]
Race = Literal["white", "black", "latino", "asian", "indian", "arabic"]
SelectorOrder = Literal["left-right", "right-left", "top-bottom", "bottom-top", "small-large", "large-small",
                        "best-worst", "worst-best"]
GENDERS: tuple[Gender, ...] = get_args(Gender)
RACES: tuple[Race, ...] = get_args(Race)
ORDERS: tuple[SelectorOrder, ...] = get_args(SelectorOrder)
# FairFace's age classes as FaceFusion reads them (years, end exclusive).
AGE_BRACKETS = (range(0, 2), range(3, 9), range(10, 19), range(20, 29), range(30, 39), range(40, 49),
                range(50, 59), range(60, 69), range(70, 100))
# FairFace's 7 race classes folded into FaceFusion's 6 (east and southeast Asian are both 'asian').
_RACE_IDS: dict[int, Race] = {0: "white", 1: "black", 2: "latino", 3: "asian", 4: "asian", 5: "indian",
                              6: "arabic"}


@dataclass(frozen=True)
class Attributes:
    gender: Gender
    age: range
    race: Race


class FaceClassifier:
    """FairFace: (N, 3, 224, 224) RGB, ImageNet mean/std, arcface_112_v2 crop, fed as `input` -> class ids
    (race, gender, age), each (N,) int64."""

    def __init__(self, session: Any, spec: ModelSpec) -> None:
        self._session, self._spec = session, spec
        self._template = WARP_TEMPLATES[spec.template or "arcface_112_v2"]

    def classify(self, frame: np.ndarray, faces: Sequence[Face]) -> list[Attributes]:
        if not faces:
            return []
        size = self._spec.size
        crops = np.stack([warp_crop(frame, align_matrix(f.kps, self._template, size), size) for f in faces])
        race, gender, age = (np.asarray(o).reshape(len(faces), -1)[:, 0]
                             for o in run_stacked(self._session, {"input": to_tensor(crops, self._spec)})[:3])
        return [Attributes("female" if int(g) == 1 else "male", AGE_BRACKETS[min(int(a), len(AGE_BRACKETS) - 1)],
                           _RACE_IDS.get(int(r), "white")) for r, g, a in zip(race, gender, age)]


T = TypeVar("T")


def sort_faces(faces: Sequence[Face], order: SelectorOrder) -> list[Face]:
    """FaceFusion's face selector orders: by box left edge, top edge, area or detector score."""
    keys = {
        "left-right": (lambda f: f.box[0], False), "right-left": (lambda f: f.box[0], True),
        "top-bottom": (lambda f: f.box[1], False), "bottom-top": (lambda f: f.box[1], True),
        "small-large": (lambda f: f.area, False), "large-small": (lambda f: f.area, True),
        "best-worst": (lambda f: f.score, True), "worst-best": (lambda f: f.score, False),
    }
    if order not in keys:
        raise ValueError(f"face selector order must be one of {', '.join(ORDERS)} (got {order})")
    key, reverse = keys[order]
    return sorted(faces, key=key, reverse=reverse)


def filter_faces(faces: Sequence[T], attributes: Sequence[Attributes], gender: Gender | None = None,
                 race: Race | None = None, age_start: int | None = None, age_end: int | None = None) -> list[T]:
    """Faces whose classified gender and race match and whose age bracket overlaps age_start..age_end
    (FaceFusion's filters; None leaves a filter off)."""
    if gender is not None and gender not in GENDERS:
        raise ValueError(f"face selector gender must be one of {', '.join(GENDERS)} (got {gender})")
    if race is not None and race not in RACES:
        raise ValueError(f"face selector race must be one of {', '.join(RACES)} (got {race})")
    ages = set(range(age_start or 0, age_end if age_end is not None else 100))
    kept = []
    for face, attr in zip(faces, attributes, strict=True):
        if gender is not None and attr.gender != gender:
            continue
        if race is not None and attr.race != race:
            continue
        if (age_start is not None or age_end is not None) and not ages & set(attr.age):
            continue
        kept.append(face)
    return kept


def resolve_auto(gender: str | None, race: str | None, source: Attributes | None) -> tuple[Gender | None, Race | None]:
    """FaceFusion's `auto` filters: the source face's own gender / race (None: that filter is off)."""
    if "auto" in (gender, race) and source is None:
        raise ValueError("face selector gender/race auto needs the source face's attributes")
    return (source.gender if gender == "auto" else gender,  # type: ignore[union-attr,return-value]
            source.race if race == "auto" else race)  # type: ignore[union-attr]


def needs_classifier(gender: Gender | None, race: Race | None, age_start: int | None, age_end: int | None) -> bool:
    """Whether the filters need fairface (the engine names the model in its error when it is missing)."""
    return any(v is not None for v in (gender, race, age_start, age_end))

"""What a run's processors need, checked before any model loads: processor names and order, models of the
right role, the model files to find or download, and which of them are not licensed for commercial use."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from facefusion_batch.listing import listed
from facefusion_batch.models.catalog import CATALOG, CLASSIFIER, ModelSpec
from facefusion_batch.processors.enhancer import EnhancerOptions
from facefusion_batch.processors.masks import MaskOptions
from facefusion_batch.processors.swapper import SwapperOptions, weighs_identity

Processor = Literal["face_swapper", "face_enhancer"]
PROCESSORS: tuple[Processor, ...] = get_args(Processor)
# FaceFusion's face_occluder_model `many`: every XSeg model, the strictest answer wins.
MANY_OCCLUDERS = ("xseg_1", "xseg_2", "xseg_3")


def occluder_models(name: str) -> tuple[str, ...]:
    """The occluder model files a face_occluder_model names."""
    return MANY_OCCLUDERS if name == "many" else (name,)


def _model(name: str, family: str, what: str) -> ModelSpec:
    spec = CATALOG.get(name)
    if spec is None or spec.family != family:
        choices = ", ".join(n for n, s in CATALOG.items() if s.family == family)
        raise ValueError(f"unknown {what} {name!r}; ffb has {choices}")
    return spec


@dataclass(frozen=True)
class ProcessorConfig:
    """FaceFusion's `processors` list and the processor settings, validated."""

    processors: tuple[str, ...] = ("face_swapper",)
    swapper: SwapperOptions = field(default_factory=SwapperOptions)
    enhancer: EnhancerOptions = field(default_factory=EnhancerOptions)
    masks: MaskOptions = field(default_factory=MaskOptions)
    occluder: str = "xseg_1"
    parser: str = "bisenet_resnet_34"
    classify: bool = False  # a gender/race/age filter is on

    def __post_init__(self) -> None:
        unknown = [p for p in self.processors if p not in PROCESSORS]
        if unknown or not self.processors:
            raise ValueError(f"unknown processor {listed(unknown) or '(none given)'}; ffb has {', '.join(PROCESSORS)}")
        if len(set(self.processors)) != len(self.processors):
            raise ValueError(f"processors listed twice: {listed(self.processors, ' ')}")
        if list(self.processors) == ["face_enhancer", "face_swapper"]:
            raise ValueError("ffb enhances the swapped face: list the processors as face_swapper face_enhancer")
        if "face_swapper" in self.processors:
            _model(self.swapper.model, "swapper", "face swapper model")
        if "face_enhancer" in self.processors:
            _model(self.enhancer.model, "enhancer", "face enhancer model")
        if "occlusion" in self.masks.types:
            for name in occluder_models(self.occluder):
                _model(name, "occluder", "face occluder model")
        if "region" in self.masks.types:
            _model(self.parser, "parser", "face parser model")

    def models(self) -> list[str]:
        """Every model file the processors load, in the order they run."""
        names: list[str] = []
        if "face_swapper" in self.processors:
            spec = CATALOG[self.swapper.model]
            names += [spec.name] + ([spec.converter] if spec.converter else [])
        if "occlusion" in self.masks.types:
            names += occluder_models(self.occluder)
        if "region" in self.masks.types and "face_swapper" in self.processors:
            names.append(self.parser)
        if "face_enhancer" in self.processors:
            names.append(self.enhancer.model)
        if self.classify:
            names.append(CLASSIFIER)
        return names

    def ignored_settings(self) -> list[str]:
        """Settings the user changed that these processors can't honour (a once-per-run warning each)."""
        if ("face_swapper" in self.processors and self.swapper.weight != SwapperOptions.weight
                and not weighs_identity(CATALOG[self.swapper.model])):
            return [f"face_swapper_weight {self.swapper.weight:g} has no effect with {self.swapper.model}: it takes "
                    "the source face as an image, not an identity to weigh (as in FaceFusion); use another "
                    "face_swapper_model, e.g. hyperswap_1a_256, for the weight to apply"]
        return []

    def not_for_commercial_use(self) -> list[ModelSpec]:
        """The models whose licence forbids commercial use or doesn't say (for a once-per-run warning)."""
        return [CATALOG[name] for name in self.models() if CATALOG[name].commercial is not True]

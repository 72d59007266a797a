"""Adapters for a ProcessorConfig from one session opener: what an engine calls once per process."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from facefusion_batch.models.catalog import CATALOG, CLASSIFIER
from facefusion_batch.processors.chain import ProcessorChain
from facefusion_batch.processors.classifier import FaceClassifier
from facefusion_batch.processors.device_chain import DeviceChain, GraphOpener
from facefusion_batch.processors.enhancer import Enhancer
from facefusion_batch.processors.masks import Occluder, Parser
from facefusion_batch.processors.config import ProcessorConfig, occluder_models
from facefusion_batch.processors.swapper import Swapper


@dataclass(frozen=True)
class Processors:
    """The chain, plus the swapper (for `source_input`, once per source) and the classifier (for the
    selector's filters; None when no filter is on)."""

    chain: ProcessorChain | DeviceChain
    swapper: Swapper | None
    classifier: FaceClassifier | None


def build_processors(plan: ProcessorConfig, open_session: Callable[[str], Any],
                     read_emap: Callable[[str], np.ndarray] | None = None,
                     open_graph: GraphOpener | None = None) -> Processors:
    """`open_session(name)` returns the session of catalog model `name` (the engine's pool decides how:
    guarded, merged across threads, ...); `read_emap(name)` inswapper's embedding map. With `open_graph`
    (SessionPool.graph) the per-face work runs on the models' device (DeviceChain)."""
    swapper = enhancer = occluder = parser = None
    if "occlusion" in plan.masks.types:
        first, *more = occluder_models(plan.occluder)
        occluder = Occluder(open_session(first), CATALOG[first], *((open_session(n), CATALOG[n]) for n in more))
    if "face_swapper" in plan.processors:
        spec = CATALOG[plan.swapper.model]
        converter = open_session(spec.converter) if spec.converter else None
        emap = None
        if spec.kind == "inswapper":
            if read_emap is None:
                raise ValueError(f"{spec.name} needs its embedding map: pass read_emap")
            emap = read_emap(spec.name)
        swapper = Swapper(open_session(spec.name), spec, plan.swapper, converter, emap)
        if "region" in plan.masks.types:
            parser = Parser(open_session(plan.parser), CATALOG[plan.parser])
    if "face_enhancer" in plan.processors:
        enhancer = Enhancer(open_session(plan.enhancer.model), CATALOG[plan.enhancer.model], plan.enhancer)
    classifier = FaceClassifier(open_session(CLASSIFIER), CATALOG[CLASSIFIER]) if plan.classify else None
    chain = (ProcessorChain(swapper, enhancer, plan.masks, occluder, parser) if open_graph is None
             else DeviceChain(swapper, enhancer, plan.masks, open_graph, occluder, parser))
    return Processors(chain, swapper, classifier)

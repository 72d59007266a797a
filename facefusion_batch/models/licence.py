"""What the catalog's licence facts mean for a user: a yes/no/unknown column and the once-per-run notice."""
from __future__ import annotations

from typing import Iterable, Literal

from facefusion_batch.models.catalog import CATALOG, ModelSpec

Commercial = Literal["yes", "no", "unknown"]


def commercial_use(spec: ModelSpec) -> Commercial:
    """Whether the model's licence allows commercial use: 'unknown' where its publisher states none."""
    return "unknown" if spec.commercial is None else "yes" if spec.commercial else "no"


def non_commercial_notice(names: Iterable[str]) -> str | None:
    """One line naming the models in `names` that may not be used commercially (and those whose licence is
    unknown), or None when every one allows it. Printed once per run, not per target."""
    specs = [CATALOG[name] for name in dict.fromkeys(names) if name in CATALOG]
    barred = [f"{spec.name} [{spec.licence}]" for spec in specs if spec.commercial is False]
    unknown = [spec.name for spec in specs if spec.commercial is None]
    parts = ([f"not licensed for commercial use: {', '.join(barred)}"] if barred else []) + \
        ([f"no licence stated, check before commercial use: {', '.join(unknown)}"] if unknown else [])
    return "; ".join(parts) + " (see `ffb models list`)" if parts else None

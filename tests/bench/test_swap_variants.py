"""benchmarks/swap_variants.py: its variants name offline/classic.py's own constants, and leave them as they were."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import swap_variants  # noqa: E402

from facefusion_batch.offline import classic  # noqa: E402


def test_a_variant_is_a_name_and_the_constants_it_sets() -> None:
    assert swap_variants.parse_variant("main") == ("main", {})
    assert swap_variants.parse_variant("soft:MAX_STRETCH=4,SHADE_SCALE=0.12") == (
        "soft", {"MAX_STRETCH": 4.0, "SHADE_SCALE": 0.12})
    for wrong in ("typo:MAX_STRECH=4", "x:MAX_STRETCH", "x:FACE_OVAL=1", ":MAX_STRETCH=4"):
        with pytest.raises(ValueError):
            swap_variants.parse_variant(wrong)


def test_a_variants_constants_hold_inside_its_block_and_are_restored_after_it_even_on_error() -> None:
    before = classic.MAX_STRETCH
    with swap_variants.overridden(classic, {"MAX_STRETCH": before + 1}):
        assert classic.MAX_STRETCH == before + 1
    assert classic.MAX_STRETCH == before
    with pytest.raises(RuntimeError), swap_variants.overridden(classic, {"MAX_STRETCH": 99.0}):
        raise RuntimeError("a swap failed")
    assert classic.MAX_STRETCH == before

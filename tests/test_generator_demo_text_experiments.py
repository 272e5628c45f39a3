"""The text generator's guidance and regions sections: eq. 5 moves the guided family toward its reference
more than it moves the controls; the disentangled CMS sees the planted checkpoint's difference on the
planted family rather than on a control family."""

from __future__ import annotations

import json

import numpy as np
import pytest

from promptprism.datasets import fashion_mnist_available
from promptprism.demos.fashion import DemoContext
from promptprism.demos.fashion_text import SECOND, TextSizes
from promptprism.demos.fashion_text_guide import (
    CONTROLS,
    GUIDED,
    TARGET,
    guidance_run,
    text_regions_section,
)
from promptprism.models.fashion_text import packaged_names

pytestmark = pytest.mark.skipif(not fashion_mnist_available() or SECOND not in packaged_names(),
                                reason="needs dataset-fashion-mnist and the packaged text checkpoints")


def _context(tmp_path, sizes: TextSizes) -> DemoContext:
    return DemoContext(out=tmp_path, training=[], second=None, per_prompt=10, steps=8, seed=0, report=False,
                       options={"text": sizes, "bootstrap": 20})


def test_the_families_are_what_the_section_says():
    assert GUIDED[0] == TARGET[0] and GUIDED[1] == TARGET[1] and GUIDED[2] != TARGET[2]
    assert all(c[0] != GUIDED[0] for c in CONTROLS)


@pytest.mark.slow
def test_guidance_moves_the_guided_family_toward_its_reference_more_than_the_controls(tmp_path):
    data = guidance_run(_context(tmp_path, TextSizes(steps=8)), TextSizes(steps=8))
    before, after = np.array(data["distance_before"]), np.array(data["distance_after"])
    change = after - before
    assert change[0] < -0.25 * before[0], (before, after)  # the guided family closes in on the dark bags
    assert np.all(-change[0] > np.abs(change[1:])), (before, after)  # ... by more than any control moves
    moved = data["pixel_change"]
    assert moved[0] > max(moved[1:]), moved
    assert data["target_share_after"] > data["target_share_before"]


@pytest.mark.slow
def test_regions_locate_the_planted_difference_on_the_planted_family(tmp_path):
    sizes = TextSizes(steps=8, regions_per_family=24, regions_real=300)
    section = text_regions_section(_context(tmp_path, sizes))
    assert section is not None and (tmp_path / "text-regions" / "result.json").is_file()
    found = json.loads((tmp_path / "text-regions.json").read_text())["families"]
    gap = {name: np.abs(np.subtract(*f["region_cms"])).max() for name, f in found.items()}
    planted, control = gap[f"{TARGET[2]} {TARGET[0]}"], gap[f"{CONTROLS[0][2]} {CONTROLS[0][0]}"]
    assert planted > control, gap

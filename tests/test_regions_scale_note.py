"""A generated set on another pixel scale than the real images (0-255 against 0-1) reads CMS 0 everywhere:
the result says why, naming the set and both spans; sets on the real images' scale get no such note."""

from __future__ import annotations

import numpy as np

import promptprism as pp
from promptprism.methods.regions.sources import scale_note


def test_a_set_on_another_scale_is_noted_and_one_on_the_same_is_not():
    rng = np.random.default_rng(0)
    real = rng.random((80, 8, 8)).astype(np.float32)
    gen = rng.random((60, 8, 8)).astype(np.float32)
    result = pp.RegionCMS(n_regions=3, seed=0).fit(real).compare([gen * 255, gen, gen * 0.5],
                                                                 names=["big", "same", "dim"])
    noted = [n for n in result.notes if "different scales" in n]
    assert len(noted) == 1 and noted[0].startswith("big: its pixel values span [")
    assert "the real images' [" in noted[0]


def test_the_threshold_is_four_times_the_real_span():
    assert scale_note((0.0, 3.9), (0.0, 1.0)) is None
    assert scale_note((0.0, 4.0), (0.0, 1.0)) is not None
    assert scale_note((0.0, 0.01), (0.0, 1.0)) is None  # (a collapsed generator is a finding, not a scale)
    assert scale_note((0.0, 5.0), (1.0, 1.0)) is None  # (constant real images: no span to compare)

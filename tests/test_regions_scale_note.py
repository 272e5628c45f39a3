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
    assert not [n for n in result.notes if "different ranges" in n]


def test_a_set_in_minus_one_to_one_against_real_images_in_zero_to_one_is_noted():
    """The same images in [-1, 1] (a diffusion model's output) read CMS 0.43 instead of 0.96 with no word."""
    rng = np.random.default_rng(1)
    real = rng.random((80, 8, 8)).astype(np.float32)
    gen = rng.random((60, 8, 8)).astype(np.float32)
    result = pp.RegionCMS(n_regions=3, seed=0).fit(real).compare([gen, 2 * gen - 1], names=["same", "pm1"])
    noted = [n for n in result.notes if "different ranges" in n]
    assert len(noted) == 1 and noted[0].startswith("pm1: ")


def test_the_threshold_is_four_times_the_real_span_or_a_quarter_of_it_beyond_its_range():
    assert "different ranges" in scale_note((0.0, 3.9), (0.0, 1.0))
    assert "different scales" in scale_note((0.0, 4.0), (0.0, 1.0))
    assert "different ranges" in scale_note((-1.0, 1.0), (0.0, 1.0))  # (a diffusion model's range)
    assert "different ranges" in scale_note((-1.0, 0.0), (0.0, 1.0))  # (shifted, not wider)
    assert scale_note((-0.2, 1.2), (0.0, 1.0)) is None  # (within a quarter of the real span: noise, clipping)
    assert scale_note((0.1, 0.9), (0.0, 1.0)) is None
    assert "different ranges" in scale_note((0.0, 1.0), (-1.0, 1.0))  # (the mirror: real images in [-1, 1])
    assert scale_note((-0.9, 0.95), (-1.0, 1.0)) is None
    assert scale_note((0.0, 0.01), (0.0, 1.0)) is None  # (a collapsed generator is a finding, not a scale)
    assert scale_note((0.0, 5.0), (1.0, 1.0)) is None  # (constant real images: no span to compare)

"""Rows on both sides of KID and MMD^2 break their independence assumption (a set against itself reads below
0, intervals too): the count of generated rows found in the reference, by exact bytes, and the note that
says so."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.methods.metrics.estimator import ReferenceMetrics
from promptprism.methods.metrics.prdc import shared_row_count


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_shared_rows_are_counted_exactly(dtype):
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(500, 7)).astype(dtype)
    gen = rng.normal(size=(300, 7)).astype(dtype)
    gen[[3, 50, 51, 299]] = ref[[10, 10, 400, 0]]
    want = sum(any(np.array_equal(g, r) for r in ref) for g in gen)  # brute force
    assert shared_row_count(gen, ref) == want == 4
    near = gen.copy()
    near[3] = np.nextafter(near[3], np.inf)  # one ulp off: not the same row
    assert shared_row_count(near, ref) == 3
    assert shared_row_count(ref, ref) == 500


def test_a_set_against_itself_gets_the_note_and_independent_sets_do_not():
    rng = np.random.default_rng(1)
    ref = rng.normal(size=(200, 6)).astype(np.float32)
    same = ReferenceMetrics(bootstrap=0, subsets=5, subset_size=100).fit(ref.copy(), ref)
    [model] = same.models
    assert model.kid < 0  # (the bias the note explains)
    assert any("200 of the 200 generated rows also appear in the reference" in n for n in model.notes)
    other = ReferenceMetrics(bootstrap=0, subsets=5, subset_size=100).fit(rng.normal(size=(200, 6)), ref)
    assert not any("also appear in the reference" in n for n in other.models[0].notes)

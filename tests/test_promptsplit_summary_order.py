"""The partial selection behind the mode summaries and the prompt ranking equals a full sort."""

from __future__ import annotations

import numpy as np

from promptprism.methods.promptsplit.summary import strongest


def test_strongest_equals_a_full_lexicographic_sort():
    rng = np.random.default_rng(0)
    for _ in range(3000):
        n = int(rng.integers(0, 40))
        key = rng.integers(0, 5, n).astype(float)  # few distinct values: many ties, kept by smaller index
        for value, chance in ((np.nan, 0.3), (-np.inf, 0.3), (np.inf, 0.2)):
            if n and rng.random() < chance:
                key[rng.integers(0, n)] = value
        where = rng.random(n) < 0.7
        count = int(rng.integers(0, 45))
        order = np.lexsort((np.arange(n), -key))
        np.testing.assert_array_equal(strongest(key, count, where=where), order[where[order]][:count])

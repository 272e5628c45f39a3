"""The partial selection behind the mode summaries and the prompt ranking equals a full sort."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_prompt_ranking_lists_up_to_limit_prompts_present_in_a_set():
    from promptprism.methods.promptsplit.summary import prompt_ranking

    # prompt 1 is absent from both sets (d = 0) and would sit above the negative-d prompts 2 and 3
    contributions = np.array([[0.5], [0.0], [-0.1], [-0.2]])
    counts = (np.array([3, 0, 2, 1]), np.array([1, 0, 2, 4]))
    ranking = prompt_ranking(eigenvalues=np.array([1.0]), contributions=contributions,
                             names=["a", "absent", "c", "d"], counts=counts, limit=3)
    assert [r["prompt"] for r in ranking] == ["a", "c", "d"]
    assert sum(r["disagreement"] for r in ranking) == pytest.approx(0.2)

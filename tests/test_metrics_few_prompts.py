"""A bootstrap over 2 prompts takes three values at most (density [0.76, 0.76] beside 0.76): no bootstrap
interval is given then, and a note says why; from 3 prompts (or one prompt: its rows) they are there."""

from __future__ import annotations

import json

import numpy as np
import pytest

import promptprism as pp
from promptprism.methods.metrics import ReferenceMetrics


def _pair(prompts: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = [f"p{i}" for i in range(prompts) for _ in range(6)]
    n = len(labels)
    return (pp.PairedSet(rng.normal(size=(n, 4)), rng.normal(size=(n, 8)), prompts=labels),
            pp.PairedSet(rng.normal(size=(n, 4)), rng.normal(size=(n, 8)) + 0.3, prompts=labels))


@pytest.mark.parametrize("prompts, bootstrapped", [(1, True), (2, False), (3, True), (8, True)])
def test_bootstrap_intervals_need_three_prompts_or_rows_without_prompts(prompts, bootstrapped):
    g, r = _pair(prompts)
    [m] = json.loads(ReferenceMetrics(seed=0, bootstrap=50, subsets=5, subset_size=10).fit([g], r)
                     .to_json())["models"]
    assert ("precision" in m["intervals"]) == bootstrapped
    assert any(n.startswith("no bootstrap intervals: a set has") for n in m["notes"]) != bootstrapped
    assert "kid" in m["intervals"]  # (KID's and MMD's intervals are not a bootstrap)
    if bootstrapped:
        assert m["intervals"]["density"]["high"] > m["intervals"]["density"]["low"]

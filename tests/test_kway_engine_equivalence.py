"""The restructured parts of the K-way test engine against brute-force oracles (the former computations,
written out here): same inputs -> the same p-values, or the same spectra within float round-off."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.methods.promptsplit import comparisons as kc


def step_down_oracle(observed: dict, null_largest: dict) -> dict:
    """The max-statistic step-down as it was written: at each step the max over the keys that still have
    untested modes, recomputed from scratch (O(modes x keys x permutations))."""
    keys = list(observed)
    obs = {s: np.asarray(observed[s], float) for s in keys}
    null = {s: np.asarray(null_largest[s], float) for s in keys}
    p_count = next(iter(null.values())).shape[0]
    scale = {s: max(float(np.median(np.r_[null[s], obs[s][:1]])) if null[s].size else 0.0, 1e-300)
             for s in keys}
    rank = {s: i for i, s in enumerate(keys)}
    order = sorted(((obs[s][j] / scale[s], s, j) for s in keys for j in range(obs[s].size)),
                   key=lambda x: (-x[0], rank[x[1]], x[2]))
    left = {s: obs[s].size for s in keys}
    p = {s: np.ones(obs[s].size) for s in keys}
    running = 0.0
    for stat, s, j in order:
        worst = np.max(np.stack([null[t] / scale[t] for t in keys if left[t] > 0]), axis=0)
        running = max(running, (1.0 + np.count_nonzero(worst >= stat * (1 - 1e-12))) / (1.0 + p_count))
        p[s][j] = running
        left[s] -= 1
    return p


@pytest.mark.parametrize("seed", range(6))
def test_family_step_down_equals_the_nested_loop_oracle(seed):
    rng = np.random.default_rng(seed)
    keys = [(c, sign) for c in range(int(rng.integers(1, 40))) for sign in "+-"]
    perms = int(rng.integers(5, 120))
    observed = {k: np.sort(rng.gamma(2, size=int(rng.integers(0, 5))))[::-1] * rng.uniform(0.5, 3)
                for k in keys}
    null = {k: rng.gamma(2, size=perms) for k in keys}
    if seed % 2:  # ties: observed values equal to null values
        for k in keys[::3]:
            if observed[k].size:
                null[k][: 3] = observed[k][0]
    got, want = kc.family_step_down(observed, null), step_down_oracle(observed, null)
    assert got.keys() == want.keys()
    for k in keys:
        np.testing.assert_array_equal(got[k], want[k])


def test_family_step_down_without_modes_gives_empty_pvalues():
    got = kc.family_step_down({"a": np.array([]), "b": np.array([])}, {"a": np.ones(9), "b": np.ones(9)})
    assert got["a"].size == 0 and got["b"].size == 0

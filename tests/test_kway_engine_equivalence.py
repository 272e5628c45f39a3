"""The restructured parts of the K-way test engine against brute-force oracles (the former computations,
written out here): same inputs -> the same p-values, or the same spectra within float round-off."""

from __future__ import annotations

import numpy as np
import pytest

from brute import two_set_weights
from promptprism.methods.promptsplit import comparisons as kc
from promptprism.methods.promptsplit import core
from promptprism.methods.promptsplit import kway_subspace as ks
from promptprism.stats.permutation import step_down_pvalues


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
def test_step_down_equals_the_nested_loop_oracle(seed):
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
    got, want = step_down_pvalues(observed, null), step_down_oracle(observed, null)
    assert got.keys() == want.keys()
    for k in keys:
        np.testing.assert_array_equal(got[k], want[k])


def test_step_down_without_modes_gives_empty_pvalues():
    got = step_down_pvalues({"a": np.array([]), "b": np.array([])}, {"a": np.ones(9), "b": np.ones(9)})
    assert got["a"].size == 0 and got["b"].size == 0


def test_comparison_weights_are_two_sets_signed_weights_to_the_bit():
    """SPEC eq. 2's D, one function: two sets' labellings (0 test, 1 reference) give 1/n and -eta/m, on a
    subset of the rows by each labelling's own counts, the observed labelling ``core.signed_weights``; one
    row per set gives each set's coefficient."""
    rng = np.random.default_rng(4)
    n, m, eta = 13, 9, 0.7
    is_test = np.stack([rng.permutation(np.r_[np.ones(n, bool), np.zeros(m, bool)]) for _ in range(6)], 1)
    labels = np.logical_not(is_test).view(np.int8)
    np.testing.assert_array_equal(kc.comparison_weights(labels, kc.TEST_VS_REFERENCE, (n, m), eta),
                                  two_set_weights(is_test, n, m, eta))
    keep = np.sort(rng.choice(n + m, size=10, replace=False))
    own = is_test[keep].sum(axis=0)
    np.testing.assert_array_equal(kc.comparison_weights(labels[keep], kc.TEST_VS_REFERENCE, None, eta),
                                  np.where(is_test[keep], 1.0 / own, -eta / (keep.size - own)))
    np.testing.assert_array_equal(core.signed_weights(n, m, eta),
                                  np.r_[np.full(n, 1 / n), np.full(m, -eta / m)])
    counts = np.array([4, 6, 10])
    got = ks.comparison_set_weights(counts, [(0, (1,)), (2, (0, 1))], eta)
    np.testing.assert_array_equal(got, [[1 / 4, -eta / 6, 0.0], [-eta / 10, -eta / 10, 1 / 10]])
    # a set against itself (the distance matrix's diagonal): (1 - eta) C_a
    np.testing.assert_array_equal(ks.comparison_set_weights(counts, [(1, (1,))], eta),
                                  [[0.0, 1 / 6 - eta / 6, 0.0]])


def _labellings(k: int, n: int, perms: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    groups = np.arange(k * n) % 5
    model = np.repeat(np.arange(k), n)
    return np.concatenate([model[:, None], kc.permuted_model_labels(groups, model, perms, rng)], 1), rng


@pytest.mark.parametrize("eta, per_set", [(1.0, 5), (0.7, 50)])
def test_pair_block_spectra_equal_the_brute_force_spectrum(eta, per_set):
    """A pair's spectra from its own rows = eigvalsh(F^T diag(D_c) F) over all N rows (SPEC eq. 2 with
    zeros), formed densely per labelling; and the whole-Gram solve of the former route agrees (dense
    float64 at or below 256 rows; float32 Lanczos above, on the largest eigenvalue, the test's statistic)."""
    from promptprism.stats.batched_eigen import weighted_gram_extremes
    from promptprism.stats.eigen import signed_extremes

    k = 6
    lab, rng = _labellings(k, per_set, 30, 3)
    feats = rng.normal(size=(lab.shape[0], 40)) / np.sqrt(40)
    gram = feats @ feats.T
    counts = np.full(k, per_set)
    rows = kc.label_rows(lab, counts)
    for c in [(0, (1,)), (2, (5,))]:
        weights = kc.comparison_weights(lab, c, counts, eta)
        got = kc.pair_block_extremes(gram, rows[c[0]], rows[c[1][0]], eta, 4)
        brute = signed_extremes(np.stack([np.linalg.eigvalsh((feats.T * w) @ feats) for w in weights.T]), 4)
        former = weighted_gram_extremes(gram, weights, 4)
        for g, b, f in zip(got, brute, former, strict=True):
            np.testing.assert_allclose(g, b, rtol=0, atol=1e-12 * float(b.max()))
            if gram.shape[0] <= 256:
                np.testing.assert_allclose(f, b, rtol=0, atol=1e-12 * float(b.max()))
            else:
                np.testing.assert_allclose(f[:, 0], b[:, 0], rtol=1e-4)


def test_pair_block_spectra_survive_a_singular_block():
    lab, rng = _labellings(3, 8, 10, 4)
    feats = rng.normal(size=(24, 3))  # rank 3: every 16-row block is singular
    gram = feats @ feats.T
    rows = kc.label_rows(lab, np.full(3, 8))
    got = kc.pair_block_extremes(gram, rows[0], rows[1], 1.0, 3)
    from promptprism.stats.batched_eigen import weighted_gram_extremes
    want = weighted_gram_extremes(gram, kc.comparison_weights(lab, (0, (1,)), np.full(3, 8), 1.0), 3)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-9 * float(w.max()))


def test_kway_pvalues_unchanged_by_the_pair_block_route(monkeypatch):
    """End to end (K = 4, 80 rows: both routes dense float64): the same seeds give the same p-values."""
    from promptprism import KWaySplit, PairedSet

    rng = np.random.default_rng(5)
    t = rng.normal(size=(4, 6))
    sets = []
    for i in range(4):
        lab = np.arange(20) % 4
        out = rng.normal(size=(20, 5)) + (0.8 if i == 3 else 0.0)
        sets.append(PairedSet(t[lab], out, prompts=[f"p{g}" for g in lab], name=f"m{i}"))
    est = KWaySplit(method="exact", permutations=49, n_modes=2, seed=1)
    new = est.fit(sets)
    monkeypatch.setattr(kc, "PAIR_BLOCK_MAX_ROWS", 0)
    old = est.fit(sets)
    assert new.pair_p_values == old.pair_p_values
    assert [r.significance for r in new.one_vs_rest] == [r.significance for r in old.one_vs_rest]
    for a, b in zip(new.pairs, old.pairs, strict=True):  # the same p-values; null spectra to round-off
        assert (a.significance["p_largest"], a.significance["n_significant"]) == \
            (b.significance["p_largest"], b.significance["n_significant"])
        for side in ("test", "reference"):
            np.testing.assert_allclose(a.significance["null_top"][side], b.significance["null_top"][side],
                                       rtol=1e-10)
    assert any(p is not None for row in new.pair_p_values for p in row)


@pytest.mark.parametrize("eta", [1.0, 0.6])
def test_rest_spectra_in_the_gram_eigenbasis_equal_the_brute_force_spectrum(eta):
    """One-vs-rest as a diagonal + rank-n_k update in G's eigenbasis = eigvalsh(F^T diag(D_c) F) with D_c
    1/n_k on set k's rows and -eta/n_rest on the others (SPEC eq. 2), on the largest eigenvalue of each sign
    (the test's statistic; float32 Lanczos) and the next ones within Lanczos' tolerance."""
    from promptprism.stats.eigen import signed_extremes

    k, n = 15, 20
    lab, rng = _labellings(k, n, 12, 6)
    feats = rng.normal(size=(lab.shape[0], 60)) * np.linspace(1.0, 0.1, 60) / np.sqrt(60)
    gram = feats @ feats.T
    counts = np.full(k, n)
    rows = kc.label_rows(lab, counts)
    factor, s = kc.gram_factor(gram)
    for first in (0, 7):
        c = (first, tuple(b for b in range(k) if b != first))
        weights = kc.comparison_weights(lab, c, counts, eta)
        got = kc.rest_extremes(factor, s, rows[first], eta, 3, seed=0)
        brute = signed_extremes(np.stack([np.linalg.eigvalsh((feats.T * w) @ feats) for w in weights.T]), 3)
        for g, b in zip(got, brute, strict=True):
            np.testing.assert_allclose(g[:, 0], b[:, 0], rtol=1e-4)
            np.testing.assert_allclose(g, b, rtol=0, atol=2e-2 * float(b.max()))


def test_cost_estimate_follows_the_small_set_solves():
    """K sets of 20 rows (exact): pairs of 40 rows from their own blocks, one-vs-rest in the eigenbasis;
    the estimate is the sum of those terms, and K = 50 sets of 20 rows is no longer refused."""
    from threadpoolctl import threadpool_limits

    from promptprism import KWaySplit
    from promptprism.cli.compare import COST_LIMIT_SECONDS
    from promptprism.methods.promptsplit import kway

    per_pair = kway.PAIR_SECONDS_PER_LABELLING + kway.PAIR_SECONDS_PER_CUBED_ROW * 40.0**3
    want = 201 * (1225 * per_pair + 50 * kway.REST_SECONDS_PER_ROW * 1000)
    est = KWaySplit(method="exact", permutations=200)
    with threadpool_limits(1):
        got = est.test_seconds([20] * 50)
    assert got == pytest.approx(want)
    assert got < COST_LIMIT_SECONDS
    with threadpool_limits(2):  # the comparisons' solves shared among the BLAS's threads
        assert est.test_seconds([20] * 50) == pytest.approx(want / 2)
    # big sets keep the whole-operand model (the pairs' blocks would be too large)
    whole = kway.test_cost_seconds(8, 4000, 4000, 200)
    assert kway.test_cost_seconds(8, 4000, 4000, 200, set_rows=500) == whole


def test_kway_test_on_a_thread_pool_equals_the_test_in_turn():
    """K = 5 sets of 12 rows: the pairs' block solves and the one-vs-rest Lanczos pooled on two threads
    (array_ops.map_in_threads) give the very p-values and records of one thread."""
    from threadpoolctl import threadpool_limits

    from promptprism import KWaySplit, PairedSet
    from promptprism.array_ops import blas_thread_count
    from promptprism.methods.promptsplit import testing

    rng = np.random.default_rng(9)
    t = rng.normal(size=(4, 6))
    lab = np.arange(12) % 4
    sets = [PairedSet(t[lab], rng.normal(size=(12, 5)) + (0.9 if i == 2 else 0.0),
                      prompts=[f"p{g}" for g in lab], name=f"m{i}") for i in range(5)]
    est = KWaySplit(method="exact", permutations=39, n_modes=2, seed=3)
    calls = []
    original = testing.map_in_threads
    testing.map_in_threads = lambda fn, items: calls.append(blas_thread_count()) or original(fn, items)
    try:
        with threadpool_limits(1):
            one = est.fit(sets)
        with threadpool_limits(2):
            two = est.fit(sets)
    finally:
        testing.map_in_threads = original
    assert calls == [1, 2]
    assert one.pair_p_values == two.pair_p_values
    assert [r.significance for r in one.pairs] == [r.significance for r in two.pairs]
    assert [r.significance for r in one.one_vs_rest] == [r.significance for r in two.one_vs_rest]
    for a, b in zip(one.pairs + one.one_vs_rest, two.pairs + two.one_vs_rest, strict=True):
        np.testing.assert_allclose(a.eigenvalues, b.eigenvalues, rtol=1e-12, atol=1e-15)

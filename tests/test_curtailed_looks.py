"""Where the permutation test's curtailed rule looks (``significance.next_look``), the per-labelling
convergence of its Lanczos statistic on wide factors (``subspace_spectra._converging_lanczos``) and the
landmark Nystrom factor built without products with its selector sketch."""

from __future__ import annotations

import numpy as np
import pytest

import promptprism.stats.subspace_spectra as spectra
from brute import two_set_weights
from promptprism.methods.promptsplit import significance as sig
from promptprism.methods.promptsplit.labelling_blocks import sequential_spectra
from promptprism.stats.batched_eigen import _lanczos_on_host_checks, _nystrom_factor
from promptprism.stats.eigen import signed_extremes
from promptprism.stats.subspaces import landmark_factor


def _schedule(exceed_at: list[int], permutations: int, h: int) -> list[int]:
    """The looks of a run whose relabellings 1, 2, ... exceed the observed one at ``exceed_at``."""
    looks, drawn = [], 0
    while drawn < permutations:
        drawn = sig.next_look(drawn, sum(1 for e in exceed_at if e <= drawn), permutations, h)
        looks.append(drawn)
        if sum(1 for e in exceed_at if e <= drawn) >= h:
            break
    return looks


def test_looks_start_at_look_double_at_least_and_end_at_k():
    h = sig.curtail_at(200, 0.05)
    assert sig.next_look(0, 0, 200, h) == sig.LOOK
    assert sig.next_look(0, 0, 5, h) == 5  # (fewer relabellings than the first look)
    for exceed in range(h):
        for drawn in (10, 17, 40, 150):
            nxt = sig.next_look(drawn, exceed, 200, h)
            assert nxt == 200 or nxt >= 2 * drawn  # at least doubling: few passes over the operand
            assert drawn < nxt <= 200


def test_a_clear_difference_draws_the_rest_in_one_block_and_a_null_one_stops_early():
    h = sig.curtail_at(200, 0.05)
    assert _schedule([], 200, h) == [10, 200]  # nothing at least as extreme: one more look, at K
    # half the relabellings exceed (a null run): looks while a stop is likely, and it stops by 40
    looks = _schedule(list(range(2, 400, 2)), 200, h)
    assert looks[0] == 10 and looks[-1] <= 40 and looks == sorted(looks)
    # K = 100 (the random-feature routes): nothing in the first ten, the rest at once; one exceedance, a
    # look where the 4 still needed are expected (12 / 2 per exceedance: 24 more), then K
    assert _schedule([], 100, sig.curtail_at(100, 0.05)) == [10, 100]
    assert _schedule([3], 100, sig.curtail_at(100, 0.05)) == [10, 34, 100]


def test_the_schedule_never_changes_the_decision():
    """Whatever the looks, the curtailed test stops only with h exceedances among the draws, so it accepts
    where all K would; a run it does not stop is the K-permutation test on the same columns."""
    rng = np.random.default_rng(4)
    for trial in range(40):
        observed = rng.normal(size=2)
        null = rng.normal(size=(200, 2)) + (0.0 if trial % 2 else 1.5)
        rows = np.vstack([observed, null])

        def solve(cols, rows=rows):
            return np.abs(rows[cols, :1]), np.abs(rows[cols, 1:])

        spectra_, drawn, _ = sequential_spectra([solve], 200, alpha=0.05)
        full, _, _ = sequential_spectra([solve], 200, alpha=0.05, sequential=False)
        p_full = sig.global_pvalue(full)
        if drawn < 200:
            assert p_full > 0.05
            assert round(sig.global_pvalue(spectra_) * (drawn + 1)) - 1 >= sig.curtail_at(200, 0.05)
        else:
            np.testing.assert_array_equal(spectra_[0][0], full[0][0])


def _factor(rows: int, width: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((rows, width)) * np.geomspace(1.0, 0.02, width)).astype(np.float32)


class _CountingRows(np.ndarray):
    """P^T that records how many labellings each product ``Q @ P^T`` carries."""

    seen: list[int] = []

    def __rmatmul__(self, other):
        _CountingRows.seen.append(other.shape[0])
        return np.asarray(other) @ np.asarray(self)


def test_converging_lanczos_matches_the_eigensolve_and_lets_converged_rows_go():
    """On a factor with a decaying spectrum every labelling's extremes are within the convergence bound
    (1e-4 of the largest) of a float64 eigensolve and never above it (Ritz values); rows leave the lockstep
    as they converge (the products carry fewer labellings than a fixed-step run); a labelling's numbers do
    not depend on the rows beside it."""
    rng = np.random.default_rng(1)
    width = spectra.SUBSPACE_DENSE_RANK + 40  # (a few leading directions well above the rest)
    p = (rng.standard_normal((700, width)) * np.r_[[6.0, 4.0, 3.0], np.geomspace(0.5, 1e-3, width - 3)]
         ).astype(np.float32)
    groups = np.repeat(np.arange(35), 20)
    w = two_set_weights(sig.test_labellings(groups, 350, 350, 30, seed=2), 350, 350, 1.0)
    start = np.random.default_rng(0).standard_normal(p.shape[1])
    wt = np.ascontiguousarray(w.T.astype(np.float32))
    _CountingRows.seen = []
    steps = spectra.TOP_LANCZOS_STEPS
    pos, neg, broke = spectra._converging_lanczos(p, np.ascontiguousarray(p.T).view(_CountingRows), wt, start,
                                                  3, steps=steps)
    assert broke.size == 0
    assert len(_CountingRows.seen) <= steps and sum(_CountingRows.seen) < 0.8 * steps * wt.shape[0]
    f64 = p.astype(np.float64)
    for k in range(w.shape[1]):
        want = signed_extremes(np.linalg.eigvalsh(f64.T @ (w[:, k, None] * f64))[None, :], 3)
        scale = max(want[0].max(), want[1].max())
        for got, true in ((pos[k, 0], want[0][0, 0]), (neg[k, 0], want[1][0, 0])):
            assert true - spectra.CONVERGED * scale <= got <= true + 1e-5 * scale  # (float32 products)
    ft = np.ascontiguousarray(p.T)
    alone = spectra._converging_lanczos(p, ft, wt[7:9], start, 3, steps=steps)
    np.testing.assert_allclose(alone[0][:, 0], pos[7:9, 0], rtol=1e-5)  # (the statistic: each sign's top)
    np.testing.assert_allclose(alone[1][:, 0], neg[7:9, 0], rtol=1e-5)


def test_rows_that_find_an_invariant_subspace_are_rerun_with_fresh_vectors():
    """A factor whose P^T diag(w) P has rank 3: every run breaks down in a few steps; those rows are
    answered by the host-checked Lanczos (fresh vectors), as before."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal((300, 3))
    p = np.hstack([base, np.zeros((300, spectra.SUBSPACE_DENSE_RANK + 10))]).astype(np.float32)
    p = p @ np.linalg.qr(rng.standard_normal((p.shape[1], p.shape[1])))[0].astype(np.float32)
    groups = np.repeat(np.arange(30), 10)
    w = two_set_weights(sig.test_labellings(groups, 150, 150, 6, seed=1), 150, 150, 1.0)
    start = np.random.default_rng(0).standard_normal(p.shape[1])
    ft, wt = np.ascontiguousarray(p.T), np.ascontiguousarray(w.T.astype(np.float32))
    _, _, broke = spectra._converging_lanczos(p, ft, wt, start, 2, steps=spectra.TOP_LANCZOS_STEPS)
    assert broke.size == w.shape[1]
    pos, neg = spectra.factor_lanczos_extremes(p, w, 2, seed=0)
    ritz = _lanczos_on_host_checks(lambda q, x: (x * (q @ ft)) @ p, None, wt, p.shape[1],
                                   steps=spectra.TOP_LANCZOS_STEPS, rng=np.random.default_rng(0),
                                   start=np.tile(np.random.default_rng(0).standard_normal(p.shape[1]),
                                                 (wt.shape[0], 1)))
    want = signed_extremes(ritz, 2)
    np.testing.assert_allclose(pos[1:], want[0][1:], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(neg[1:], want[1][1:], rtol=1e-5, atol=1e-7)
    f64 = p.astype(np.float64)
    true = signed_extremes(np.linalg.eigvalsh(f64.T @ (w[:, 3, None] * f64))[None, :], 2)
    np.testing.assert_allclose(pos[3, 0], true[0][0, 0], rtol=1e-4)


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_landmark_factor_equals_the_selector_sketch_computation(precision):
    """landmark_factor (Om^T Y as Y's landmark rows, Y + shift Om as one entry per column) equals the
    stabilised Nystrom computation with the dense selector matrix Om."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((400, 5))
    gram = np.exp(-((x[:, None] - x[None]) ** 2).sum(-1) / 6.0)
    landmarks = rng.permutation(400)[:60]
    dtype = np.float32 if precision == "float32" else np.float64
    columns = gram[:, landmarks].astype(dtype)
    sketch = np.zeros((400, 60))
    sketch[landmarks, np.arange(60)] = 1.0
    got = landmark_factor(columns, landmarks, 50, precision=precision)
    want = _nystrom_factor(columns, sketch, 50, precision=precision, dtype=columns.dtype)
    tol = 1e-5 if precision == "float32" else 1e-12
    np.testing.assert_allclose(got @ got.T, want @ want.T, atol=tol)
    # untruncated, the factor reproduces G's landmark columns (the Nystrom property) to the shift
    whole = landmark_factor(columns, landmarks, 60, precision=precision)
    near = 1e-4 if precision == "float32" else 1e-9
    np.testing.assert_allclose(whole @ whole[landmarks].T, gram[:, landmarks], atol=near)

"""The top-k step's block Lanczos (``stats.lanczos.weighted_gram_lanczos``) against a dense float64 solve
of D G from SPEC's definitions (eq. 3), block by block, on full-rank, rank-deficient and float32 Gram
matrices; and the tridiagonal solver that keeps ``scipy.linalg`` off the exact command's path."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from promptprism.array_ops import TRIDIAGONAL_DENSE_MAX, tridiagonal_eigh
from promptprism.stats.lanczos import weighted_gram_lanczos


def _problem(size: int, rank: int | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if rank is None:  # a gaussian kernel matrix (full rank)
        x = rng.standard_normal((size, 6)) * np.linspace(2.0, 0.3, 6)
        d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
        gram = np.exp(-d2 / np.median(d2))
    else:
        f = rng.standard_normal((size, rank))
        gram = f @ f.T
    n = size // 2
    return gram, np.r_[np.full(n, 1.0 / n), np.full(size - n, -0.7 / (size - n))]


def _dense(gram: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every non-zero eigenpair of D G through B = L^T D L (G = L L^T by eigen-factor), descending, with the
    scores L w of each unit eigenvector w of B (SPEC: psi(s) . v)."""
    vals, vecs = np.linalg.eigh(gram)
    keep = vals > gram.shape[0] * 1e-13 * vals[-1]
    factor = vecs[:, keep] * np.sqrt(vals[keep])
    lam, w = np.linalg.eigh(factor.T @ (weights[:, None] * factor))
    return lam[::-1], (factor @ w)[:, ::-1]


@pytest.mark.parametrize("block", [1, 3, 8, 20])
@pytest.mark.parametrize(("size", "rank", "n_pos", "n_neg"),
                         [(240, None, 5, 5), (181, None, 1, 0), (181, None, 0, 4), (150, 9, 3, 3),
                          (150, 6, 8, 8)])
def test_block_lanczos_equals_the_dense_solve(block, size, rank, n_pos, n_neg):
    gram, weights = _problem(size, rank, size + block)
    lam, scores = _dense(gram, weights)
    want = np.r_[np.arange(min(n_pos, lam.size)), np.arange(lam.size - min(n_neg, lam.size), lam.size)[::-1]]
    want = np.unique(want)[np.argsort(-lam[np.unique(want)])]
    vals, got = weighted_gram_lanczos(gram, weights, n_pos, n_neg, block=block)
    scale = np.abs(lam).max()
    np.testing.assert_allclose(vals, lam[want], rtol=0, atol=1e-12 * scale)
    for j, k in enumerate(want):  # each score vector, up to its sign
        ref = scores[:, k]
        sign = np.sign(got[:, j] @ ref)
        np.testing.assert_allclose(sign * got[:, j], ref, atol=1e-8 * np.abs(scores).max())
    if rank is not None:  # the Krylov space ends at G's range: no invented eigenvalues
        assert vals.size <= rank


def test_block_lanczos_on_float32_is_within_its_round_off_and_seeded():
    gram, weights = _problem(300, None, 7)
    lam, _ = _dense(gram, weights)
    vals, scores = weighted_gram_lanczos(gram.astype(np.float32), weights, 4, 4, seed=3)
    np.testing.assert_allclose(vals, np.r_[lam[:4], lam[-4:]], rtol=0, atol=2e-6 * np.abs(lam).max())
    again = weighted_gram_lanczos(gram.astype(np.float32), weights, 4, 4, seed=3)
    np.testing.assert_array_equal(again[0], vals)
    np.testing.assert_array_equal(again[1], scores)


def test_block_larger_than_the_range_makes_up_nothing():
    """A block wider than G's rank: the null directions are dropped, fresh ones cannot be found, and the
    Ritz values are G's exact non-zero spectrum of D G."""
    gram, weights = _problem(60, 4, 2)
    lam, _ = _dense(gram, weights)
    vals, _ = weighted_gram_lanczos(gram, weights, 10, 10, block=12)
    np.testing.assert_allclose(np.sort(vals), np.sort(lam), atol=1e-12 * np.abs(lam).max())


def test_a_spent_budget_gives_up_and_auto_answers_densely(monkeypatch):
    """``max_width``: a run that has not converged within that many Krylov vectors returns None; one that
    converges within it returns the dense solve's extremes. ``solver='auto'`` between
    ``GRAM_LANCZOS_MIN_ROWS`` and ``DENSE_SIZE_LIMIT`` rows: Lanczos when it converges within its budget
    (only the extremes come back), else the dense decomposition (the whole spectrum), the same extremes
    either way (float64 G, to 1e-12 of the largest)."""
    from promptprism.stats import eigen

    gram, weights = _problem(240, None, 5)
    lam, _ = _dense(gram, weights)
    assert weighted_gram_lanczos(gram, weights, 5, 5, max_width=8) is None
    vals, _ = weighted_gram_lanczos(gram, weights, 5, 5, max_width=200)
    np.testing.assert_allclose(vals, np.r_[lam[:5], lam[-5:]], rtol=0, atol=1e-12 * np.abs(lam).max())
    monkeypatch.setattr(eigen, "GRAM_LANCZOS_MIN_ROWS", 100)
    for width, dense in ((200, False), (8, True)):
        monkeypatch.setattr(eigen, "GRAM_LANCZOS_MIN_WIDTH", width)
        got = eigen.weighted_gram_eigenpairs(gram, weights, n_positive=5, n_negative=5)
        assert (got.spectrum is not None) == dense
        np.testing.assert_allclose(got.eigenvalues, np.r_[lam[:5], lam[-5:]], rtol=0,
                                   atol=1e-12 * np.abs(lam).max())


@pytest.mark.parametrize("size", [1, 2, 17, TRIDIAGONAL_DENSE_MAX, TRIDIAGONAL_DENSE_MAX + 40])
def test_tridiagonal_eigh_equals_lapack(size):
    rng = np.random.default_rng(size)
    diag, off = rng.standard_normal(size), rng.standard_normal(max(size - 1, 0)) + 0.5
    vals, vecs = tridiagonal_eigh(diag, off)
    want, want_vecs = scipy.linalg.eigh_tridiagonal(diag, off)
    np.testing.assert_allclose(vals, want, atol=1e-12 * max(1.0, np.abs(want).max()))
    np.testing.assert_allclose(np.abs(np.sum(vecs * want_vecs, axis=0)), 1.0, atol=1e-8)
    stacked = tridiagonal_eigh(np.stack([diag, 2 * diag]), np.stack([np.r_[off, 0.0], np.r_[off, 0.0]]
                                                                    )[:, : max(size - 1, 0)],
                               values_only=True)
    np.testing.assert_allclose(stacked[0], want, atol=1e-12 * max(1.0, np.abs(want).max()))
    np.testing.assert_allclose(stacked[1], scipy.linalg.eigvalsh_tridiagonal(2 * diag, off),
                               atol=1e-12 * max(1.0, 2 * np.abs(want).max()))
    both, both_vecs = tridiagonal_eigh(np.stack([diag, diag]), np.stack([off, off]))  # (stacked, vectors)
    np.testing.assert_allclose(both[1], want, atol=1e-12 * max(1.0, np.abs(want).max()))
    np.testing.assert_allclose(np.abs(np.sum(both_vecs[1] * want_vecs, axis=0)), 1.0, atol=1e-8)


@pytest.mark.parametrize("block", [1, 4])
def test_lockstep_runs_equal_each_run_alone_and_the_dense_solve(block):
    """K-way's one-vs-rest spectra: several weightings of one G (one of them rank-deficient: the runs end at
    different widths, one where its Krylov space is G's range) in one lockstep call, each equal to its own
    run and to the dense solve of D_j G."""
    from promptprism.stats.lanczos import weighted_gram_lanczos_runs

    gram, _ = _problem(210, None, 11)
    low, _ = _problem(210, 7, 12)
    rng = np.random.default_rng(5)
    sets = rng.integers(0, 4, 210)
    weightings = [np.where(sets == k, 1.0 / np.sum(sets == k), -0.9 / np.sum(sets != k)) for k in range(4)]
    for g in (gram, low):
        runs = weighted_gram_lanczos_runs(g, weightings, 4, 3, block=block, seed=2)
        assert len(runs) == len(weightings)
        for w, (vals, got) in zip(weightings, runs, strict=True):
            alone, alone_scores = weighted_gram_lanczos(g, w, 4, 3, block=block, seed=2)
            lam, scores = _dense(g, w)
            scale = np.abs(lam).max()
            np.testing.assert_allclose(vals, alone, rtol=0, atol=1e-12 * scale)
            want = np.r_[np.arange(min(4, lam.size)), np.arange(lam.size - min(3, lam.size), lam.size)[::-1]]
            want = np.unique(want)[np.argsort(-lam[np.unique(want)])]
            np.testing.assert_allclose(vals, lam[want], rtol=0, atol=1e-12 * scale)
            for j, k in enumerate(want):
                sign = np.sign(got[:, j] @ scores[:, k])
                np.testing.assert_allclose(sign * got[:, j], scores[:, k], atol=1e-8 * np.abs(scores).max())


def test_lockstep_runs_give_up_alone_at_their_budget():
    """A run that spends ``max_width`` returns None in its place; the others still answer."""
    from promptprism.stats.lanczos import weighted_gram_lanczos_runs

    gram, weights = _problem(400, None, 3)
    solo = weighted_gram_lanczos(gram, weights, 5, 5, max_width=8)
    both = weighted_gram_lanczos_runs(gram, [weights, weights], 5, 5, max_width=8)
    assert solo is None and both == [None, None]
    mixed = weighted_gram_lanczos_runs(gram, [weights, -weights], 5, 5, max_width=400)
    top = mixed[0][0]
    np.testing.assert_allclose(mixed[1][0], -top[::-1], rtol=0, atol=1e-12 * np.abs(top).max())

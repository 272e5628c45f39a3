"""Eigen-solvers: the factor route equals Lambda built from explicit features and eq. 3 of the paper."""

from __future__ import annotations

import numpy as np
import pytest

from brute import (
    cosine_psi,
    desc_eigh,
    eq3_eigenvalues,
    joint_gram_loops,
    lambda_matrix,
    nonzero,
    small_sets,
)
from promptprism.methods.promptsplit.core import signed_weights
from promptprism.stats import gram_factor, symmetric_eigenpairs, weighted_gram_eigenpairs


@pytest.fixture(params=[(0, 1.0), (1, 0.6), (2, 1.7)], ids=["eta1", "eta0.6", "eta1.7"])
def problem(request):
    seed, eta = request.param
    (tt, zt, _), (tr, zr, _) = small_sets(seed, n_prompts=30)
    n, m = len(tt), len(tr)
    psi = np.vstack([cosine_psi(tt, zt), cosine_psi(tr, zr)])
    gram = joint_gram_loops(np.vstack([tt, tr]), np.vstack([zt, zr]), "cosine")
    lam = lambda_matrix(psi[:n], psi[n:], eta)
    return {"n": n, "m": m, "eta": eta, "psi": psi, "gram": gram, "lam": lam}


def test_symmetric_eigenpairs_descending():
    a = np.random.default_rng(0).standard_normal((6, 6))
    a = a + a.T
    vals, vecs = symmetric_eigenpairs(a)
    assert np.all(np.diff(vals) <= 0)
    np.testing.assert_allclose(a @ vecs, vecs * vals, atol=1e-12)
    np.testing.assert_allclose(vals, np.sort(np.linalg.eigvalsh(a))[::-1], atol=1e-12)


def test_gram_factor_reconstructs_rank_deficient_gram(problem):
    g = problem["gram"]
    before = g.copy()
    factor = gram_factor(g)
    assert factor.shape == (g.shape[0], 12)  # psi lives in R^{3 x 4}: rank <= 12
    np.testing.assert_allclose(factor @ factor.T, g, atol=1e-12)
    # the input is left untouched
    np.testing.assert_array_equal(g, before)


def test_dense_equals_explicit_lambda_and_eq3(problem):
    n, m, eta = problem["n"], problem["m"], problem["eta"]
    eig = weighted_gram_eigenpairs(problem["gram"], signed_weights(n, m, eta), solver="dense")
    expected = nonzero(desc_eigh(problem["lam"])[0])
    assert eig.eigenvalues.size == expected.size == 12
    np.testing.assert_allclose(eig.eigenvalues, expected, rtol=1e-8, atol=1e-14)
    np.testing.assert_allclose(eig.eigenvalues, nonzero(eq3_eigenvalues(problem["gram"], n, eta)),
                               rtol=1e-8)


def test_scores_are_projections_on_unit_eigenvectors(problem):
    n, m, eta = problem["n"], problem["m"], problem["eta"]
    eig = weighted_gram_eigenpairs(problem["gram"], signed_weights(n, m, eta), solver="dense")
    vals, vecs = desc_eigh(problem["lam"])
    scores = eig.scores
    for j in range(eig.eigenvalues.size):
        brute = problem["psi"] @ vecs[:, j]
        sign = np.sign(brute @ scores[:, j])
        np.testing.assert_allclose(scores[:, j], sign * brute, atol=1e-9)
        # v = Psi^T D s / lambda is a unit eigenvector of Lambda
        v = problem["psi"].T @ (signed_weights(n, m, eta) * scores[:, j]) / vals[j]
        assert np.linalg.norm(v) == pytest.approx(1.0, abs=1e-9)
    assert scores.shape == (n + m, eig.eigenvalues.size)


@pytest.mark.parametrize("k", [1, 3])
def test_lanczos_agrees_with_dense(problem, k):
    n, m, eta = problem["n"], problem["m"], problem["eta"]
    w = signed_weights(n, m, eta)
    dense = weighted_gram_eigenpairs(problem["gram"], w, solver="dense")
    lanczos = weighted_gram_eigenpairs(problem["gram"], w, n_positive=k, n_negative=k, solver="lanczos")
    assert lanczos.eigenvalues.size == 2 * k
    np.testing.assert_allclose(lanczos.eigenvalues[:k], dense.eigenvalues[:k], rtol=1e-9)
    np.testing.assert_allclose(lanczos.eigenvalues[k:], dense.eigenvalues[-k:], rtol=1e-9)
    ls, ds = lanczos.scores, dense.scores
    for j, dj in [*[(i, i) for i in range(k)], *[(k + i, 12 - k + i) for i in range(k)]]:
        sign = np.sign(ls[:, j] @ ds[:, dj])
        np.testing.assert_allclose(ls[:, j], sign * ds[:, dj], atol=1e-7)


def test_auto_keeps_requested_extremes(problem):
    n, m, eta = problem["n"], problem["m"], problem["eta"]
    w = signed_weights(n, m, eta)
    dense = weighted_gram_eigenpairs(problem["gram"], w, solver="dense").eigenvalues
    auto = weighted_gram_eigenpairs(problem["gram"], w, n_positive=2, n_negative=3, solver="auto")
    np.testing.assert_allclose(auto.eigenvalues, np.r_[dense[:2], dense[-3:]], rtol=1e-10)


def test_lanczos_float32_gram_within_float32_tolerance():
    """The numpy top-k solve on a full-rank float32 gaussian Gram matrix (float32 products, float64 vectors):
    the extremes of the float64 dense solve, to float32 round-off relative to the largest |eigenvalue|."""
    rng = np.random.default_rng(3)
    n, m, eta = 160, 140, 0.8
    x = rng.standard_normal((n + m, 5))
    x[n:, 0] += 0.7  # a planted difference
    d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    gram = np.exp(-d2 / 4.0)
    w = signed_weights(n, m, eta)
    dense = weighted_gram_eigenpairs(gram, w, solver="dense").eigenvalues
    top = weighted_gram_eigenpairs(gram.astype(np.float32), w, n_positive=4, n_negative=4, solver="lanczos")
    scale = np.max(np.abs(dense))
    np.testing.assert_allclose(top.eigenvalues, np.r_[dense[:4], dense[-4:]], atol=1e-5 * scale, rtol=0)


def test_extremes_of_a_wide_spread_spectrum_fall_back_to_the_dense_decomposition(monkeypatch):
    """Lambda = C_test - eta C_ref at eta = 1e6 (PromptSplit's largest eta): Lanczos needs thousands of
    products for the small positive end (``split --method rff --eta 1e6`` ran for over 5 minutes); the
    budgeted run stops and the full decomposition answers, with the same extremes as a dense eigh."""
    import promptprism.stats.eigen as eigen

    rng = np.random.default_rng(3)
    size, n_each = 400, 10
    f_test, f_ref = rng.standard_normal((60, size)), rng.standard_normal((60, size))
    lam = f_test.T @ f_test / 60 - 1e6 * (f_ref.T @ f_ref / 60)
    fallbacks = []
    dense = eigen.dense_extremes
    monkeypatch.setattr(eigen, "dense_extremes", lambda a, k: fallbacks.append(k) or dense(a, k))
    vals, vecs = eigen.symmetric_extreme_eigenpairs(lam, n_each)
    assert fallbacks == [n_each]
    full = np.linalg.eigvalsh(lam)[::-1]
    want = np.r_[full[:n_each], full[-n_each:]]
    np.testing.assert_allclose(vals, want, rtol=1e-9, atol=1e-9 * abs(full).max())
    np.testing.assert_allclose(lam @ vecs, vecs * vals, atol=1e-8 * abs(full).max())
    # a well-spread spectrum (eta = 1) converges within the budget: no fallback, the same extremes
    lam1 = f_test.T @ f_test / 60 - f_ref.T @ f_ref / 60
    vals1, _ = eigen.symmetric_extreme_eigenpairs(lam1, n_each)
    full1 = np.linalg.eigvalsh(lam1)[::-1]
    assert fallbacks == [n_each]
    np.testing.assert_allclose(vals1, np.r_[full1[:n_each], full1[-n_each:]], atol=1e-10)

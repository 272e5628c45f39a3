"""The torch branch of the top-k eigen step (Lanczos in the G inner product, with vectors) against the
dense float64 solve from SPEC's definitions, and the exact route's whole fit against the numpy route (the
same Lanczos on numpy arrays)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from backends import TORCH_DEVICE  # noqa: E402
from promptprism import PromptSplit  # noqa: E402
from promptprism.datasets import gaussian_mixture  # noqa: E402
from promptprism.stats.eigen import weighted_gram_eigenpairs  # noqa: E402
from promptprism.stats.lanczos import weighted_gram_lanczos  # noqa: E402


def _problem(size: int, rank: int | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((size, 12)) * np.linspace(2.0, 0.2, 12)
    if rank is None:  # a full-rank gaussian kernel matrix
        d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
        gram = np.exp(-d2 / np.median(d2))
    else:  # a Gram matrix of rank ``rank``
        f = rng.standard_normal((size, rank))
        gram = f @ f.T
    n = size // 2
    weights = np.r_[np.full(n, 1.0 / n), np.full(size - n, -0.8 / (size - n))]
    return gram, weights


def _same_as_dense(gram, weights, n_pos, n_neg, *, tol=1e-12):
    dense = weighted_gram_eigenpairs(gram, weights, n_positive=n_pos, n_negative=n_neg, solver="dense")
    vals, scores = weighted_gram_lanczos(torch.from_numpy(gram), weights, n_pos, n_neg)
    vals, scores = vals.numpy(), scores.numpy()
    expected = np.asarray(dense.eigenvalues)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(vals, expected, rtol=0, atol=tol * scale)
    ref = np.asarray(dense.scores)
    for j in range(expected.size):  # each score vector up to its sign
        sign = np.sign(scores[:, j] @ ref[:, j])
        np.testing.assert_allclose(sign * scores[:, j], ref[:, j], rtol=0, atol=1e-8 * np.abs(ref).max())


@pytest.mark.parametrize("size, n_pos, n_neg", [(300, 5, 5), (257, 1, 0), (257, 0, 3), (400, 12, 9)])
@pytest.mark.slow
def test_extremes_and_scores_equal_the_dense_solve(size, n_pos, n_neg):
    _same_as_dense(*_problem(size, None, size), n_pos, n_neg)


def test_a_rank_deficient_gram_and_more_modes_asked_than_it_has():
    gram, weights = _problem(200, 7, 1)  # rank 7: at most 7 non-zero eigenvalues
    _same_as_dense(gram, weights, 2, 3, tol=1e-10)
    vals, _ = weighted_gram_lanczos(torch.from_numpy(gram), weights, 6, 6)
    assert vals.shape[0] <= 7  # the Krylov space ends at G's range: no invented eigenvalues


def test_float32_gram_within_float32_round_off():
    gram, weights = _problem(300, None, 2)
    expected = weighted_gram_eigenpairs(gram, weights, n_positive=4, n_negative=4, solver="dense").eigenvalues
    vals, _ = weighted_gram_lanczos(torch.from_numpy(gram.astype(np.float32)), weights, 4, 4)
    np.testing.assert_allclose(vals.numpy(), expected, rtol=0, atol=1e-6 * np.abs(expected).max())


def test_exact_route_top_k_on_torch_equals_numpy_arpack():
    test, ref, _ = gaussian_mixture(2, per_component=12, seed=0)
    base = PromptSplit(n_modes=3, seed=0, permutations=0, device="cpu", method="exact", solver="lanczos")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = base.fit(test, ref), dataclasses.replace(base, device=TORCH_DEVICE).fit(test, ref)
    scale = np.abs(a.eigenvalues).max()
    np.testing.assert_allclose(b.eigenvalues, a.eigenvalues, rtol=0, atol=1e-12 * scale)
    for x, y in zip(a.modes, b.modes, strict=True):
        assert [s.index for s in x.top_samples] == [s.index for s in y.top_samples]
        np.testing.assert_allclose([s.score for s in y.top_samples], [s.score for s in x.top_samples],
                                   rtol=1e-9)

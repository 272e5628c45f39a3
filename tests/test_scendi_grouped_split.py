"""The grouped in-sample split against SPEC's definitions (eq. 6, Proposition 1) computed over the n rows,
on both routes to the prompt side's eigen-pairs: the thin SVD of Y = W^1/2 F_G (fewer prompt features than
prompts) and the G x G eigen-decomposition (as many or more)."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.methods.scendi.grouped import grouped_split, prompt_eigenpairs

RCOND = 1e-10


def _case(n_groups, d_t, d_i, seed, rank=None, dtype=np.float64):
    rng = np.random.default_rng(seed)
    groups = np.r_[np.arange(n_groups), rng.integers(0, n_groups, 4 * n_groups)]
    f_g = rng.standard_normal((n_groups, d_t))
    if rank is not None:  # prompt features of a lower rank than their dimension (the cut must drop the rest)
        f_g = f_g[:, :rank] @ rng.standard_normal((rank, d_t))
    f_i = rng.standard_normal((groups.size, d_i)) + f_g[groups] @ rng.standard_normal((d_t, d_i))
    weights = rng.random(groups.size)
    return f_i.astype(dtype), f_g.astype(dtype), groups, weights / weights.sum()


def _brute(f_i, f_g, groups, w):
    """C_II, Lambda_I = C_II - C_IT C_TT^+ C_TI and Gamma* phi_T per prompt, from the n rows."""
    f_i, f_t = f_i.astype(np.float64), f_g.astype(np.float64)[groups]
    c_ii, c_it, c_tt = (a.T @ (w[:, None] * b) for a, b in ((f_i, f_i), (f_i, f_t), (f_t, f_t)))
    gamma = c_it @ np.linalg.pinv(c_tt, rcond=1e-8, hermitian=True)
    return c_ii, c_ii - gamma @ c_it.T, f_g.astype(np.float64) @ gamma.T, np.linalg.matrix_rank(c_tt)


@pytest.mark.parametrize("n_groups, d_t, rank", [(40, 6, None), (40, 12, 5), (8, 20, None), (8, 8, 3)])
def test_grouped_split_equals_the_definition_over_the_rows(n_groups, d_t, rank):
    f_i, f_g, groups, w = _case(n_groups, d_t, 5, seed=n_groups + d_t, rank=rank)
    split = grouped_split(f_i, f_g, groups, rcond=RCOND, weights=w)
    c_ii, lambda_i, predictions, k = _brute(f_i, f_g, groups, w)
    assert split.prompt_rank == k
    np.testing.assert_allclose(split.c_ii, c_ii, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(split.lambda_i, lambda_i, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(split.predictions, predictions, rtol=1e-9, atol=1e-10)


def test_the_thin_route_has_the_eigen_decompositions_non_zero_pairs():
    rng = np.random.default_rng(3)
    y = rng.standard_normal((30, 4))
    mu, u = prompt_eigenpairs(y)
    full_mu, full_u = np.linalg.eigh(y @ y.T)
    assert mu.shape == (4,) and u.shape == (30, 4) and np.all(np.diff(mu) >= 0)
    np.testing.assert_allclose(mu, full_mu[-4:], rtol=1e-12)
    np.testing.assert_allclose(u @ u.T, full_u[:, -4:] @ full_u[:, -4:].T, atol=1e-12)  # the same subspace
    assert prompt_eigenpairs(y[:4])[0].shape == (4,)  # square: the G x G route


def test_float32_keeps_the_cut_of_the_g_by_g_matrix():
    """In float32 the cut is n eps(float32) times the largest with n = G, the order of Y Y^T, on the thin
    route too (not d_T): a direction of relative size between d_T eps and G eps is dropped on both routes."""
    rng = np.random.default_rng(5)
    n_groups, d_t = 400, 3
    f_g = rng.standard_normal((n_groups, d_t))
    f_g[:, 2] *= np.sqrt(20 * np.finfo(np.float32).eps)  # relative eigenvalue ~20 eps: kept at n = 3, not 400
    groups = np.arange(n_groups)
    f_i = rng.standard_normal((n_groups, 4)).astype(np.float32)
    split = grouped_split(f_i, f_g.astype(np.float32), groups, rcond=RCOND)
    assert split.prompt_rank == 2


def test_torch_features_give_the_numpy_split():
    torch = pytest.importorskip("torch")
    f_i, f_g, groups, w = _case(30, 4, 5, seed=9)
    a = grouped_split(f_i, f_g, groups, rcond=RCOND, weights=w)
    b = grouped_split(torch.from_numpy(f_i), torch.from_numpy(f_g), groups, rcond=RCOND, weights=w)
    assert b.prompt_rank == a.prompt_rank == 4
    np.testing.assert_allclose(b.lambda_i.numpy(), a.lambda_i, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.predictions.numpy(), a.predictions, rtol=1e-10, atol=1e-12)

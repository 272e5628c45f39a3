"""The degrees-of-freedom corrected (debiased) in-sample Lambda_I.

The in-sample Gamma* is a least-squares fit of the prompts' mean outputs on k = rank(C_TT) prompt
directions, so the between-prompt part of its residual is biased down by the fitted degrees of freedom.
Write the in-sample Lambda_I = W + B, with W = C_II - X_G^T X_G the within-prompt scatter and
B = X_G^T (I - P_G) X_G the between-prompt residual (X_G = W^1/2 M, the weighted prompt means; P_G the
in-sample projection over the G distinct prompts). For a linear-Gaussian model with equal group sizes,
E[W] = Sigma_w (r - 1) / r and E[B] = (1 - k / G) (Sigma_b + Sigma_w / r) (Sigma_w: within-prompt
covariance, Sigma_b: the population residual of the prompt means, r outputs per prompt), so

    Lambda_I^dfc = W + c B,   c = 1 / sum_g W_g (1 - h_g)      (= G / (G - k) for equal groups)

has expectation Sigma_w + Sigma_b, SPEC's population Lambda_I (h_g: the leverage of prompt g, the
diagonal of P_G; the sum is the classical residual degrees of freedom over G with weights W_g). With one
output per prompt W = 0 and Lambda_I^dfc = Lambda_I G / (G - k), the unbiased residual covariance of
regression. The prompt part stays SPEC's Lambda_T = C_II - Lambda_I^dfc (it loses (c - 1) B).
In sample space (:func:`debiased_twins`) the same is (I - A) + c (A - P) in place of I - P, with A the
projection on the prompt indicators: Lambda_I^dfc = X^T M^2 X, M = (I - A) + sqrt(c) (A - P).

Measured (benchmarks/scendi_coverage.py, docs/scendi.md): unbiased to a few hundredths of a standard
error on the text-like cells; it cannot repair k close to G (c explodes), where the estimator falls back to
cross-fitting (:data:`MIN_RESIDUAL_DF`).
"""

from __future__ import annotations

import numpy as np

from ...array_ops import as_like, group_sum, index_array, symmetric_eigh
from ...backend import array_namespace, to_numpy
from ...errors import OptionError

#: the debiased estimator needs G - k >= MIN_RESIDUAL_DF residual degrees of freedom (at k = G, c is infinite)
MIN_RESIDUAL_DF = 1


def difference_twin(k_x, s):
    """The n x n twin of X^T S X (S symmetric n x n, possibly indefinite): K_X^1/2 S K_X^1/2, with the same
    non-zero eigenvalues (K_X = X X^T)."""
    c, v = symmetric_eigh(k_x)
    xp = array_namespace(k_x)
    root = (v * xp.sqrt(xp.clip(c, 0.0, None))[None, :]) @ v.T
    out = root @ s @ root
    return 0.5 * (out + out.T)


def debias_possible(rank: int, distinct_prompts: int) -> bool:
    """Whether enough residual degrees of freedom remain for the debiased estimator (G - k >= 1)."""
    return distinct_prompts - rank >= MIN_RESIDUAL_DF


def df_scale(group_weights: np.ndarray, projection_basis: np.ndarray) -> float:
    """c = 1 / sum_g W_g (1 - h_g): W_g the prompts' weights (sum 1), h_g = |row g of U_k|^2 the leverage
    of prompt g under the in-sample projection P_G = U_k U_k^T (sqrt-weight coordinates)."""
    h = np.sum(np.asarray(projection_basis, dtype=np.float64) ** 2, axis=1)
    dof = float(np.sum(np.asarray(group_weights, dtype=np.float64) * (1.0 - h)))
    if not dof > 1e-9:
        raise OptionError("gamma_estimator='debiased' needs fewer prompt directions than distinct prompts: "
                          "rank(C_TT) equals the number of distinct prompts here (no residual degrees of "
                          "freedom); use 'cross-fit' or 'auto'")
    return 1.0 / dof


def debiased_twins(k_x, basis, groups: np.ndarray, weights: np.ndarray):
    """(residual twin, prompt-part twin, c): the n x n twins of Lambda_I^dfc = X^T M^2 X and of
    C_II - Lambda_I^dfc = X^T (c P - (c - 1) A) X (module doc), from the weighted output Gram matrix
    ``k_x`` = X X^T and the orthonormal basis Q of the in-sample projection P = Q Q^T
    (:func:`.dual.grouped_prompt_basis`)."""

    xp = array_namespace(k_x)
    w = np.asarray(to_numpy(weights), dtype=np.float64)
    n_groups = int(np.max(groups)) + 1
    totals = np.bincount(groups, weights=w, minlength=n_groups)
    present = totals > 0
    q_rows = group_sum(basis * basis, groups, n_groups)  # per group: sum over its rows of |Q_i|^2 = h_g
    h = to_numpy(xp.sum(q_rows, axis=1)) if basis.shape[1] else np.zeros(n_groups)
    dof = float(np.sum(totals[present] * (1.0 - h[present])))
    if not dof > 1e-9:
        df_scale(np.ones(1), np.ones((1, 1)))  # raises the same error
    c = 1.0 / dof
    sq = as_like(np.sqrt(w), k_x)
    inv_tot = as_like(np.where(present, 1.0 / np.where(present, totals, 1.0), 0.0), k_x)

    def average(mat):  # A @ mat, A = E S^-1 E^T (weighted coordinates)
        sums = group_sum(sq[:, None] * mat, groups, n_groups) * inv_tot[:, None]
        return sq[:, None] * sums[index_array(groups, sums)]

    def project(mat):  # P @ mat
        return basis @ (basis.T @ mat)

    s = c ** 0.5

    def m_times(mat):  # M @ mat, M = (I - A) + sqrt(c) (A - P)
        a = average(mat)
        return mat - a + s * (a - project(mat))

    mk = m_times(k_x)
    resid = m_times(mk.T)  # M K M (K and M symmetric)
    resid = 0.5 * (resid + resid.T)
    eye = xp.eye(k_x.shape[0], dtype=k_x.dtype, **({} if xp is np else {"device": k_x.device}))
    diff = c * project(eye) - (c - 1.0) * average(eye)
    return resid, difference_twin(k_x, 0.5 * (diff + diff.T)), c


def debias_unique(split, rank: int, n: int):
    """The :class:`~.core.SchurSplit` with Lambda_I^dfc = Lambda_I n / (n - k) when every one of the n prompts
    is distinct (W = 0, equal weights: c = n / (n - k)) and Lambda_T = C_II - Lambda_I^dfc."""
    from dataclasses import replace

    from ...array_ops import symmetric_eigh

    if rank >= n:
        df_scale(np.ones(1), np.ones((1, 1)))  # raises: no residual degrees of freedom
    lam_i = split.lambda_i * (n / (n - rank))
    lam_t = split.c_ii - lam_i
    return replace(split, lambda_i=lam_i, lambda_t=lam_t,
                   lambda_t_eigenvalues=to_numpy(symmetric_eigh(lam_t, values_only=True))[::-1].copy())


def describe_in_sample(estimator: str, grouped, split, n: int, rank: int, distinct: int) -> str:
    """The ``gamma_estimator`` text of an in-sample or debiased estimate (the debiased one names c)."""
    if estimator != "debiased":
        return "in-sample"
    scale = grouped.df_scale if grouped is not None else (n / (n - rank) if split is not None else None)
    c = f"c = {scale:.4g}" if scale is not None else f"c ~ {distinct / max(distinct - rank, 1):.4g}"
    return f"debiased (in-sample, degrees-of-freedom corrected: rank {rank} of {distinct} prompts, {c})"


__all__ = ["MIN_RESIDUAL_DF", "debias_possible", "debias_unique", "debiased_twins",
           "describe_in_sample", "df_scale"]

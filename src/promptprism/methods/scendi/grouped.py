"""The in-sample Schur split in feature space when prompts repeat: the prompt side in G x G (G distinct
prompts) instead of (d_T x d_T) and (d_I x d_T) blocks accumulated over n rows.

Rows sharing a prompt share phi_T, so with group weights W_g = n_g / n, group means M (G x d_I) of phi_I and
distinct prompt features F_G (G x d_T): C_TT = F_G^T W F_G, C_IT = M^T W F_G. With Y = W^1/2 F_G and
X_G = W^1/2 M, Lambda_T = C_IT C_TT^+ C_TI = X_G^T P_G X_G (P_G = U_k U_k^T, U_k the eigenvectors of the G x G
matrix Y Y^T above the pseudo-inverse cut, from the thin SVD of Y when d_T < G: the same non-zero
eigenvalues as C_TT), so Lambda_T = B B^T with B = X_G^T U_k (d_I x k) and Lambda_I = C_II - B B^T
(eq. 6). Gamma* phi_T of group g (Proposition 1) is row g of W^-1/2 P_G X_G: each sample's nullified
features (eq. 7) are phi_I(x) minus its group's row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...array_ops import (
    as_like,
    column_gram,
    device_of,
    group_sum,
    index_array,
    symmetric_eigh,
    trace,
    values_and_top_vectors_of,
)
from ...backend import array_namespace, to_numpy
from .debias import df_scale
from .dual import DualSpectra, kept, round_off_zeroed


@dataclass(frozen=True)
class GroupedSplit:
    """C_II, Lambda_I (d_I x d_I), B with Lambda_T = B B^T, each group's prediction Gamma* phi_T (G x d_I).

    Debiased (:func:`grouped_split` with ``debias``): ``lambda_i`` is the degrees-of-freedom corrected
    Lambda_I, ``lambda_t`` = C_II - lambda_i (SPEC's prompt part; may be indefinite) and ``df_scale`` the
    factor c of :mod:`.debias`; otherwise ``lambda_t`` is None (Lambda_T = B B^T) and ``df_scale`` 1."""

    c_ii: np.ndarray
    lambda_i: np.ndarray
    b: np.ndarray
    predictions: np.ndarray
    prompt_rank: int
    lambda_t: np.ndarray | None = None
    df_scale: float = 1.0


def grouped_split(output_features: np.ndarray, group_features: np.ndarray, groups: np.ndarray, *,
                  rcond: float, weights: np.ndarray | None = None, debias: bool = False) -> GroupedSplit:
    """The in-sample split of the module doc from Phi_I (n x d_I), the distinct prompts' Phi_G (G x d_T) and
    each row's prompt label; cost O(n d_I^2 + G d_T min(G, d_T)) instead of O(n (d_I + d_T)^2). Runs on the
    backend of the features (numpy or torch). ``weights``: row weights summing to 1 (default 1/n; a
    bootstrap replicate's multiplicities); ``debias``: the degrees-of-freedom corrected Lambda_I
    (:func:`.debias.df_corrected`)."""
    f_i = output_features
    xp = array_namespace(f_i)
    n = f_i.shape[0]
    n_groups = group_features.shape[0]
    w = np.full(n, 1.0 / n) if weights is None else np.asarray(weights, dtype=np.float64)
    totals = np.bincount(groups, weights=w, minlength=n_groups)  # W_g
    sums = group_sum(f_i * as_like(w, f_i)[:, None], groups, n_groups)  # G x d_I: W_g M_g
    present = np.flatnonzero(totals > 0)
    rows = index_array(present, f_i)
    sw = as_like(np.sqrt(totals[present]), f_i)
    x_g = sums[rows] / sw[:, None]  # W^1/2 M
    mu, u = prompt_eigenpairs(sw[:, None] * group_features[rows])
    keep = kept(mu, rcond, size=int(rows.shape[0]))
    u_k = u[:, keep]
    b = x_g.T @ u_k  # d_I x k
    c_ii = column_gram(f_i * as_like(np.sqrt(w), f_i)[:, None])
    lambda_i = c_ii - column_gram(b.T)
    predictions = xp.zeros((n_groups, f_i.shape[1]), dtype=f_i.dtype, **device_of(f_i))
    predictions[rows] = (u_k @ (u_k.T @ x_g)) / sw[:, None]
    lambda_t, scale = None, 1.0
    if debias:
        scale = df_scale(totals[present], to_numpy(u_k))
        resid = x_g - u_k @ (u_k.T @ x_g)  # W^1/2 (M - predictions): the between-prompt residual
        lambda_i = lambda_i + (scale - 1.0) * column_gram(resid)
        lambda_t = c_ii - lambda_i
    return GroupedSplit(c_ii=c_ii, lambda_i=lambda_i, b=b, predictions=predictions,  # (both symmetric)
                        prompt_rank=int(keep.sum()), lambda_t=lambda_t, df_scale=scale)


def prompt_eigenpairs(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mu, U): the eigenvalues (ascending) and eigenvectors of Y Y^T (G x G) for Y = W^1/2 F_G (G x d_T);
    with fewer columns than rows, only its d_T possibly non-zero ones, from the thin SVD Y = U S V^T
    (mu = S^2): O(G d_T^2) instead of a G x G eigen-decomposition."""
    if y.shape[1] >= y.shape[0]:
        return symmetric_eigh(y @ y.T)
    xp = array_namespace(y)
    u, s, _ = xp.linalg.svd(y, full_matrices=False)
    return xp.flip(s * s, axis=0), xp.flip(u, axis=1)


def grouped_spectra(split: GroupedSplit, output_features: np.ndarray, groups: np.ndarray, *, n_top: int
                    ) -> DualSpectra:
    """Spectra of Lambda_I, Lambda_T (from the k x k matrix B^T B) and C_II, with the top ``n_top`` samples'
    scores on Lambda_I's eigenvectors (nullified features) and C_II's (plain features)."""
    d_i = split.c_ii.shape[0]
    li_vals, li_vecs = spectra_pair(split.lambda_i, split.c_ii, n_top)
    c_vals, c_vecs = li_vals.pop(), li_vecs.pop()
    li_vals, li_vecs = li_vals[0], li_vecs[0]
    if split.lambda_t is None:  # Lambda_T = B B^T: the smaller of B^T B and B B^T has its non-zero spectrum
        lt, prompt_share = prompt_spectrum(split.b, d_i), trace(split.b.T @ split.b)
    else:
        lt = to_numpy(symmetric_eigh(split.lambda_t, values_only=True))[::-1]
        prompt_share = trace(split.lambda_t)
    li_vecs, c_vecs = as_like(li_vecs, output_features), as_like(c_vecs, output_features)
    model_scores = output_features @ li_vecs - (split.predictions @ li_vecs)[index_array(groups, li_vecs)]
    return DualSpectra(model=round_off_zeroed(li_vals, len(li_vals)), prompt=lt.astype(np.float64),
                       output=round_off_zeroed(c_vals, len(c_vals)),
                       model_share=trace(split.lambda_i), prompt_share=prompt_share,
                       model_scores=np.asarray(to_numpy(model_scores), dtype=np.float64),
                       output_scores=np.asarray(to_numpy(output_features @ c_vecs), dtype=np.float64))


def prompt_spectrum(b, dim: int) -> np.ndarray:
    """Eigenvalues of Lambda_T = B B^T (B: dim x k), descending, exactly ``dim`` of them (numpy float64),
    from whichever of B^T B (k x k) and B B^T (dim x dim) is smaller: the prompts may span more directions
    (k) than the outputs have (dim), or fewer."""
    k = b.shape[1]
    if k == 0:
        return np.zeros(dim)
    small = b.T @ b if k <= dim else b @ b.T
    vals = np.maximum(to_numpy(symmetric_eigh(small, values_only=True))[::-1].astype(np.float64), 0.0)
    return np.concatenate([vals[:dim], np.zeros(max(dim - vals.size, 0))])


def spectra_pair(a, b, n_top: int) -> tuple[list, list]:
    """:func:`values_and_top_vectors` of two matrices: ([values_a, values_b], [vectors_a, vectors_b]) (by
    :func:`~promptprism.array_ops.values_and_top_vectors_of`)."""
    pairs = values_and_top_vectors_of([a, b], n_top)
    return [to_numpy(v) for v, _ in pairs], [to_numpy(w) for _, w in pairs]

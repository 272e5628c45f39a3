"""The in-sample Schur split in feature space when prompts repeat: the prompt side in G x G (G distinct
prompts) instead of (d_T x d_T) and (d_I x d_T) blocks accumulated over n rows.

Rows sharing a prompt share phi_T, so with group weights W_g = n_g / n, group means M (G x d_I) of phi_I and
distinct prompt features F_G (G x d_T): C_TT = F_G^T W F_G, C_IT = M^T W F_G. With Y = W^1/2 F_G and
X_G = W^1/2 M, Lambda_T = C_IT C_TT^+ C_TI = X_G^T P_G X_G (P_G = U_k U_k^T, U_k the eigenvectors of the G x G
matrix Y Y^T above the pseudo-inverse cut: the same non-zero eigenvalues as C_TT), so Lambda_T = B B^T with
B = X_G^T U_k (d_I x k) and Lambda_I = C_II - B B^T (eq. 6). Gamma* phi_T of group g (Proposition 1) is
row g of W^-1/2 P_G X_G: each sample's nullified features (eq. 7) are phi_I(x) minus its group's row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse

from .dual import DualSpectra, _symmetric_eigh, kept, values_and_top_vectors


@dataclass(frozen=True)
class GroupedSplit:
    """C_II, Lambda_I (d_I x d_I), B with Lambda_T = B B^T, each group's prediction Gamma* phi_T (G x d_I)."""

    c_ii: np.ndarray
    lambda_i: np.ndarray
    b: np.ndarray
    predictions: np.ndarray
    prompt_rank: int


def grouped_split(output_features: np.ndarray, group_features: np.ndarray, groups: np.ndarray, *,
                  rcond: float) -> GroupedSplit:
    """The in-sample split of the module doc from Phi_I (n x d_I), the distinct prompts' Phi_G (G x d_T) and
    each row's prompt label; cost O(n d_I^2 + G^2 d_T + G^3) instead of O(n (d_I + d_T)^2)."""
    f_i = np.asarray(output_features)
    n = f_i.shape[0]
    n_groups = group_features.shape[0]
    counts = np.bincount(groups, minlength=n_groups).astype(f_i.dtype)
    onehot = scipy.sparse.csr_matrix((np.ones(n, dtype=f_i.dtype), (groups, np.arange(n))),
                                     shape=(n_groups, n))
    sums = np.asarray(onehot @ f_i)  # G x d_I
    present = np.flatnonzero(counts > 0)
    x_g = sums[present] / np.sqrt(counts[present] * n)[:, None]  # W^1/2 M
    sw = np.sqrt(counts[present] / n)
    f_g = group_features[present]
    mu, u = _symmetric_eigh(sw[:, None] * (f_g @ f_g.T) * sw[None, :])
    keep = kept(mu, rcond)
    u_k = u[:, keep]
    b = x_g.T @ u_k  # d_I x k
    c_ii = (f_i.T @ f_i) / n
    lambda_i = c_ii - b @ b.T
    predictions = np.zeros((n_groups, f_i.shape[1]), dtype=f_i.dtype)
    predictions[present] = (u_k @ (u_k.T @ x_g)) / sw[:, None]
    return GroupedSplit(c_ii=0.5 * (c_ii + c_ii.T), lambda_i=0.5 * (lambda_i + lambda_i.T), b=b,
                        predictions=predictions, prompt_rank=int(keep.sum()))


def grouped_spectra(split: GroupedSplit, output_features: np.ndarray, groups: np.ndarray, *, n_top: int
                    ) -> DualSpectra:
    """Spectra of Lambda_I, Lambda_T (from the k x k matrix B^T B) and C_II, with the top ``n_top`` samples'
    scores on Lambda_I's eigenvectors (nullified features) and C_II's (plain features)."""
    d_i = split.c_ii.shape[0]
    li_vals, li_vecs = values_and_top_vectors(split.lambda_i, n_top)
    c_vals, c_vecs = values_and_top_vectors(split.c_ii, n_top)
    small = split.b.T @ split.b
    lt = _symmetric_eigh(small, values_only=True)[::-1] if small.size else np.empty(0)
    lt = np.concatenate([np.maximum(lt, 0.0), np.zeros(d_i - lt.size)])
    model_scores = output_features @ li_vecs - (split.predictions @ li_vecs)[groups]
    return DualSpectra(model=_clean(li_vals), prompt=lt.astype(np.float64), output=_clean(c_vals),
                       model_share=float(np.trace(split.lambda_i)),
                       prompt_share=float(np.sum(small.diagonal())),
                       model_scores=np.asarray(model_scores, dtype=np.float64),
                       output_scores=np.asarray(output_features @ c_vecs, dtype=np.float64))


def _clean(vals: np.ndarray) -> np.ndarray:
    """float64 copy; in float32, values below d * eps(float32) times the largest are round-off: zeroed."""
    out = np.asarray(vals, dtype=np.float64).copy()
    if vals.dtype == np.float32 and out.size:
        out[out < out.size * float(np.finfo(np.float32).eps) * max(out[0], 0.0)] = 0.0
    return out

"""Eigen-solvers for symmetric matrices and for kernel matrices with signed sample weights.

The PromptSplit operator is Lambda = Psi^T D Psi with D = diag(w) (w_i = 1/n on the test set, -eta/m on the
reference set) and Psi the (unknown, possibly infinite) joint features, of which we only know the Gram matrix
G = Psi Psi^T. With a factor G = L L^T (pivoted Cholesky, rank r), Psi = L Q^T for some Q with orthonormal
columns, so Lambda = Q (L^T D L) Q^T: its non-zero eigenvalues are those of the symmetric r x r matrix
B = L^T D L (= those of D G, eq. 3 of the paper), the unit eigenvector is v = Q w, and the score of sample s
on v is psi(s) . v = (L w)_s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse.linalg as spla
from scipy.linalg import lapack

#: rank up to which B is formed explicitly and fully diagonalised
DENSE_RANK_LIMIT = 2500


def symmetric_eigenpairs(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All eigenpairs of a symmetric matrix, eigenvalues in descending order."""
    a = np.asarray(a, dtype=np.float64)
    vals, vecs = scipy.linalg.eigh(0.5 * (a + a.T))
    return vals[::-1].copy(), vecs[:, ::-1].copy()


def gram_factor(gram: np.ndarray, *, overwrite: bool = False, tol: float = -1.0) -> np.ndarray:
    """L (N x rank) with G = L L^T, by LAPACK's pivoted Cholesky (dpstrf), rows in G's original order.

    The default tolerance (N * eps * max diag) drops directions of G below round-off, so the rank is the
    numerical rank of G and the factor is exact to machine precision.
    """
    gram = np.asarray(gram, dtype=np.float64)
    # G is symmetric, so the transpose of a C-ordered G is the same matrix in Fortran order (no copy)
    g = gram.T if overwrite and gram.flags.c_contiguous else np.array(gram, order="F")
    c, piv, rank, info = lapack.dpstrf(g, lower=1, tol=tol, overwrite_a=1)
    if info < 0:
        raise RuntimeError(f"dpstrf failed with info={info}")
    rank = max(int(rank), 1)
    factor = np.tril(c[:, :rank])
    out = np.empty_like(factor, order="C")
    out[piv - 1] = factor
    return out


def _order_desc(vals: np.ndarray, vecs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(-vals, kind="stable")
    return vals[order], vecs[:, order]


@dataclass(frozen=True)
class GramEigen:
    """Eigenpairs of Psi^T D Psi in factor coordinates: v_j = Q w_j, scores psi(s) . v_j = (L w_j)_s."""

    eigenvalues: np.ndarray  #: descending
    coefficients: np.ndarray  #: w_j as columns (rank x k)
    factor: np.ndarray  #: L (N x rank), G = L L^T

    def scores(self, columns: np.ndarray | None = None) -> np.ndarray:
        """scores[s, j] = psi(s) . v_j for the chosen eigenpair columns."""
        w = self.coefficients if columns is None else self.coefficients[:, columns]
        return self.factor @ w


def weighted_gram_eigenpairs(
    gram: np.ndarray,
    weights: np.ndarray,
    *,
    n_positive: int | None = None,
    n_negative: int | None = None,
    solver: str = "auto",
    overwrite: bool = False,
) -> GramEigen:
    """Eigenpairs of Lambda = Psi^T diag(weights) Psi, given only G = Psi Psi^T.

    Returns a :class:`GramEigen`: eigenvalues in descending order and, through ``scores()``,
    ``psi(s) . v_j`` for the unit eigenvectors v_j. ``solver='dense'`` returns every non-zero eigenpair; ``'lanczos'`` only
    the ``n_positive`` largest and ``n_negative`` smallest (ARPACK on B = L^T D L as an operator);
    ``'auto'`` uses dense when the numerical rank is at most ``DENSE_RANK_LIMIT``.
    """
    weights = np.asarray(weights, dtype=np.float64)
    factor = gram_factor(gram, overwrite=overwrite)
    rank = factor.shape[1]
    want_all = n_positive is None and n_negative is None
    n_pos = rank if n_positive is None else n_positive
    n_neg = rank if n_negative is None else n_negative
    use_dense = solver == "dense" or (
        solver == "auto" and (want_all or rank <= DENSE_RANK_LIMIT or n_pos + n_neg >= rank // 2))
    if solver == "lanczos" and (n_pos + 1 >= rank or n_neg + 1 >= rank):
        use_dense = True
    if use_dense:
        b = factor.T @ (weights[:, None] * factor)
        vals, w = symmetric_eigenpairs(b)
        if not want_all:
            keep = np.r_[np.arange(min(n_pos, rank)), np.arange(max(rank - n_neg, min(n_pos, rank)), rank)]
            vals, w = vals[keep], w[:, keep]
    else:
        op = spla.LinearOperator((rank, rank), dtype=np.float64,
                                 matvec=lambda x: factor.T @ (weights * (factor @ x)))
        parts_v, parts_w = [], []
        v0 = np.full(rank, 1.0 / np.sqrt(rank))  # deterministic start vector: reproducible results
        for k, which in ((n_pos, "LA"), (n_neg, "SA")):
            if k > 0:
                vals_k, w_k = spla.eigsh(op, k=k, which=which, v0=v0, tol=0.0,
                                          ncv=min(rank, max(2 * k + 1, 40)))
                parts_v.append(vals_k)
                parts_w.append(w_k)
        vals, w = _order_desc(np.concatenate(parts_v), np.concatenate(parts_w, axis=1))
    vals, w = _order_desc(vals, w)
    return GramEigen(vals, w, factor)

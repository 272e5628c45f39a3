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
from scipy.linalg.blas import dsymv


def symmetric_eigenpairs(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All eigenpairs of a symmetric matrix, eigenvalues in descending order."""
    a = np.asarray(a, dtype=np.float64)
    # divide and conquer (evd): ~3x faster than the default (evr) when every eigenpair is wanted
    vals, vecs = scipy.linalg.eigh(0.5 * (a + a.T), driver="evd")
    return vals[::-1].copy(), vecs[:, ::-1].copy()


def gram_factor(gram: np.ndarray, *, tol: float = -1.0) -> np.ndarray:
    """L (N x rank) with G = L L^T, by LAPACK's pivoted Cholesky (dpstrf), rows in G's original order.

    The default tolerance (N * eps * max diag) drops directions of G below round-off, so the rank is the
    numerical rank of G and the factor is exact to machine precision.
    """
    g = np.array(gram, dtype=np.float64, order="F")
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
    """Eigenvalues of Lambda = Psi^T D Psi (descending) and ``scores[s, j] = psi(s) . v_j`` (unit v_j)."""

    eigenvalues: np.ndarray
    scores: np.ndarray  #: (N, k), one column per eigenvalue
    spectrum: np.ndarray | None = None  #: the whole spectrum, when a dense solve computed more than was kept
    kept: np.ndarray | None = None  #: indices of ``eigenvalues`` within ``spectrum``


#: sizes up to which ``solver='auto'`` diagonalises fully (pivoted Cholesky + dense eigen-decomposition)
DENSE_SIZE_LIMIT = 3000


def weighted_gram_eigenpairs(
    gram: np.ndarray,
    weights: np.ndarray,
    *,
    n_positive: int | None = None,
    n_negative: int | None = None,
    solver: str = "auto",
) -> GramEigen:
    """Eigenpairs of Lambda = Psi^T diag(weights) Psi, given only G = Psi Psi^T.

    ``solver='dense'``: pivoted Cholesky G = L L^T, then every eigenpair of the symmetric r x r matrix
    B = L^T D L (v = Q w, scores L w); exact to machine precision, O(N^3).
    ``solver='lanczos'``: only the ``n_positive`` largest and ``n_negative`` smallest eigenvalues, by
    implicitly restarted Arnoldi (ARPACK) on D G, whose eigenvalues are real (it is similar to the symmetric
    G^{1/2} D G^{1/2}); each matrix-vector product reads G once and no factorisation is needed. For an
    eigenvector u of D G, v = Psi^T u / |Psi^T u| and the scores are G u / sqrt(u^T G u).
    ``'auto'``: dense when every eigenpair is wanted or N <= ``DENSE_SIZE_LIMIT``, else lanczos.
    """
    gram = np.asarray(gram, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    size = gram.shape[0]
    want_all = n_positive is None and n_negative is None
    n_pos = size if n_positive is None else n_positive
    n_neg = size if n_negative is None else n_negative
    use_dense = solver == "dense" or want_all or (solver == "auto" and size <= DENSE_SIZE_LIMIT)
    if not use_dense and (max(n_pos, n_neg) + 2 >= size or 2 * max(n_pos, n_neg) + 1 >= size):
        use_dense = True
    if use_dense:
        factor = gram_factor(gram)
        rank = factor.shape[1]
        vals, w = symmetric_eigenpairs(factor.T @ (weights[:, None] * factor))
        if not want_all:
            keep = np.r_[np.arange(min(n_pos, rank)), np.arange(max(rank - n_neg, min(n_pos, rank)), rank)]
            return GramEigen(vals[keep], factor @ w[:, keep], spectrum=vals, kept=keep)
        return GramEigen(vals, factor @ w)
    # G is symmetric: BLAS symv reads one triangle, about twice as fast as a general matrix-vector product
    g_fortran = np.ascontiguousarray(gram).T  # the same matrix, Fortran-ordered, no copy
    op = spla.LinearOperator((size, size), dtype=np.float64,
                             matvec=lambda x: weights * dsymv(1.0, g_fortran, np.ravel(x), lower=1))
    v0 = np.full(size, 1.0 / np.sqrt(size))  # deterministic start vector: reproducible results
    parts_v, parts_u = [], []
    for k, which in ((n_pos, "LR"), (n_neg, "SR")):
        if k > 0:
            vals_k, u_k = spla.eigs(op, k=k, which=which, v0=v0, tol=0.0, ncv=min(size, max(2 * k + 1, 40)))
            parts_v.append(vals_k.real)
            parts_u.append(u_k.real)
    vals, u = _order_desc(np.concatenate(parts_v), np.concatenate(parts_u, axis=1))
    gu = gram @ u
    norms = np.sqrt(np.maximum(np.einsum("ij,ij->j", u, gu), 1e-300))
    return GramEigen(vals, gu / norms)


def select_modes(vals: np.ndarray, n_modes: int, norm: float = 0.0) -> np.ndarray:
    """Indices (into the descending ``vals``) of the top ``n_modes`` positive and negative eigenvalues.

    Eigenvalues within round-off of zero are not modes. Round-off is relative to the size of Lambda's two
    terms, ``norm`` = 1 + eta for PromptSplit (normalised kernels: each covariance has trace 1), so that two
    identical sets (Lambda = 0, computed eigenvalues ~1e-17) report no modes rather than noise.
    """
    vals = np.asarray(vals, dtype=np.float64)
    scale = max(float(np.max(np.abs(vals))) if vals.size else 0.0, norm, 1e-300)
    pos = np.flatnonzero(vals > 1e-12 * scale)[:n_modes]
    neg = np.flatnonzero(vals < -1e-12 * scale)[::-1][:n_modes]
    return np.r_[pos, neg].astype(np.int64)


def signed_extremes(vals: np.ndarray, n_top: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n_top`` largest positive eigenvalues and the ``n_top`` largest |negative| ones, both as
    descending magnitudes, zero-padded to length ``n_top``; ``vals`` in any order, along the last axis."""
    vals = np.sort(np.asarray(vals, dtype=np.float64), axis=-1)
    pos = np.clip(vals[..., ::-1][..., :n_top], 0.0, None)
    neg = np.clip(-vals[..., :n_top], 0.0, None)
    pad = [(0, 0)] * (vals.ndim - 1) + [(0, max(0, n_top - pos.shape[-1]))]
    return np.pad(pos, pad), np.pad(neg, pad)


#: factors up to this many columns are diagonalised densely by :func:`weighted_factor_extremes`
DENSE_BATCH_RANK = 256
#: Lanczos steps of :func:`weighted_factor_extremes` (at least; more when many modes are wanted)
LANCZOS_STEPS = 60
_BATCH_BYTES = 256 * 1024**2


def weighted_factor_extremes(
    factor: np.ndarray, weights: np.ndarray, n_top: int, *, steps: int | None = None, seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Extreme eigenvalues of A_k = F^T diag(w_k) F for every column w_k of ``weights``, at once.

    PromptSplit's Lambda under a relabelling of the samples is exactly this matrix (SPEC: Lambda =
    Psi^T D Psi with D = diag(w); F is any factor with F F^T = G, the joint Gram matrix, or the random
    features themselves), so the permuted spectra of a permutation test need only F and the weight matrix
    W (N x K). Returns ``(positive, negative)``, each (K, n_top): the n_top largest positive eigenvalues and
    the n_top largest |negative| ones of each A_k, descending magnitudes, zero-padded.

    Factors with at most ``DENSE_BATCH_RANK`` columns: every A_k formed and diagonalised (exact). Wider ones:
    block-batched Lanczos with full reorthogonalisation, all K operators advanced together, so every step
    is two matrix-matrix products F X, F^T Y over a block of permutations (not K separate eigensolves);
    ``steps`` Krylov vectors (default ``max(LANCZOS_STEPS, 8 n_top + 20)``, at most r: on a flat
    random-matrix spectrum the 10th eigenvalue is then within 0.2 %, the first to 1e-8). The extreme Ritz
    values converge first and never exceed the true extremes (Cauchy interlacing).
    """
    f = np.asarray(factor, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == 1:
        w = w[:, None]
    size, rank = f.shape
    k_total = w.shape[1]
    if rank > size:  # same Gram matrix, fewer columns: F = (Q R)^T -> R^T
        f = np.linalg.qr(f.T, mode="r").T
        rank = f.shape[1]
    pos = np.zeros((k_total, n_top))
    neg = np.zeros((k_total, n_top))
    if rank <= DENSE_BATCH_RANK:
        for k in range(k_total):
            vals = np.linalg.eigvalsh(f.T @ (w[:, k, None] * f))
            pos[k], neg[k] = signed_extremes(vals, n_top)
        return pos, neg
    s = min(rank, steps or max(LANCZOS_STEPS, 8 * n_top + 20))
    batch = int(max(1, min(k_total, _BATCH_BYTES // (8 * (s * rank + 2 * size)))))
    rng = np.random.default_rng(seed)
    ft = np.ascontiguousarray(f.T)
    for start in range(0, k_total, batch):
        cols = slice(start, min(k_total, start + batch))
        ritz = _batched_lanczos(f, ft, np.ascontiguousarray(w[:, cols].T), s, rng)
        pos[cols], neg[cols] = signed_extremes(ritz, n_top)
    return pos, neg


def _batched_lanczos(f: np.ndarray, ft: np.ndarray, wt: np.ndarray, steps: int,
                     rng: np.random.Generator) -> np.ndarray:
    """Ritz values (b, steps) of A_k = F^T diag(wt[k]) F, one Lanczos run per row of ``wt``, in lockstep."""
    b, rank = wt.shape[0], f.shape[1]
    basis = np.empty((b, steps, rank))
    alpha = np.zeros((b, steps))
    beta = np.zeros((b, steps))
    q = rng.standard_normal((b, rank))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    for j in range(steps):
        basis[:, j] = q
        u = (wt * (q @ ft)) @ f  # (b, rank): one GEMM pair for all b operators
        alpha[:, j] = np.einsum("br,br->b", q, u)
        for _ in range(2):  # full reorthogonalisation, twice (Gram-Schmidt is enough twice)
            c = np.matmul(basis[:, : j + 1], u[:, :, None])
            u -= np.matmul(c.transpose(0, 2, 1), basis[:, : j + 1])[:, 0]
        if j == steps - 1:
            break
        norms = np.linalg.norm(u, axis=1)
        scale = np.maximum(np.max(np.abs(alpha[:, : j + 1]), axis=1), 1e-300)
        dead = norms <= 1e-10 * scale
        if dead.any():  # invariant subspace found: continue from a fresh vector orthogonal to the basis
            fresh = rng.standard_normal((int(dead.sum()), rank))
            for _ in range(2):
                c = np.matmul(basis[dead, : j + 1], fresh[:, :, None])
                fresh -= np.matmul(c.transpose(0, 2, 1), basis[dead, : j + 1])[:, 0]
            u[dead] = fresh / np.linalg.norm(fresh, axis=1, keepdims=True)
            norms[dead] = 1.0
        beta[:, j] = np.where(dead, 0.0, norms)
        q = u / norms[:, None]
    out = np.empty((b, steps))
    for k in range(b):
        out[k] = scipy.linalg.eigvalsh_tridiagonal(alpha[k], beta[k, : steps - 1])
    return out

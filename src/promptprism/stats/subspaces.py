"""Label-free principal subspaces for PromptSplit's permutation test, cheaper than a Gram matrix's.

A relabelling's statistic lives in a subspace that no label may shape (then the test on it is exact):
:func:`leading_eigenvectors` of a pooled second moment (the random-feature routes: the covariance pass gives
it for free), or a Nystrom factor read from a few landmark columns of a Gram matrix (:func:`landmark_factor`;
the Gaussian-sketch factor of a whole Gram matrix is :func:`.batched_eigen.principal_factor`). Written once
over the array API (numpy or torch); random draws are numpy's, so both backends see the same numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array_ops import blas_threads_for
from ..backend import array_namespace, backend_of, is_numpy, populated_copy, populated_zeros, to_numpy
from .batched_eigen import _nystrom_factor


def leading_eigenvectors(matrix: Any, rank: int, *, seed: int = 0, iterations: int = 2) -> Any:
    """V of :func:`leading_eigenpairs` (ascending: the leading direction last)."""
    return leading_eigenpairs(matrix, rank, seed=seed, iterations=iterations)[1]


def leading_eigenpairs(matrix: Any, rank: int, *, seed: int = 0, iterations: int = 2) -> tuple[Any, Any]:
    """(Ritz values, V), ascending: orthonormal approximations V (d x ``rank``) of the leading eigenvectors
    of a positive-semidefinite ``matrix`` (d x d): randomized subspace iteration (Halko, Martinsson &
    Tropp 2011, "Finding structure with randomness", Alg. 4.4, then the Rayleigh-Ritz step of Alg. 5.3):
    Q = orth(A Om) with a seeded Gaussian Om of ``rank`` + 10 columns (a numpy draw, the same numbers on
    every backend), ``iterations`` times Q = orth(A Q), then the ``rank`` leading eigenvectors of
    Q^T A Q. The products in float32 (the directions only have to be the same function of A for every
    labelling of the samples), the small eigen-problem in float64; V in float32 on A's backend. The Ritz
    values diag(V^T A V) (float64, of the float32 products: to ~1e-6 of ||A||) come with it."""
    xp, on = array_namespace(matrix), backend_of(matrix)
    size = matrix.shape[0]
    a = populated_copy(matrix, np.float32) if is_numpy(matrix) and matrix.dtype != np.float32 else \
        xp.asarray(matrix, dtype=xp.float32)
    width = min(size, rank + 10)
    q = on.asarray(np.random.default_rng(seed).standard_normal((size, width)), dtype="float32")
    for _ in range(iterations + 1):
        q = _orthonormal_columns(a @ q)
    small = xp.asarray(xp.matrix_transpose(q) @ (a @ q), dtype=xp.float64)
    vals, vecs = xp.linalg.eigh((small + xp.matrix_transpose(small)) / 2)
    keep = min(rank, width)
    return vals[-keep:], q @ xp.asarray(vecs[:, -keep:], dtype=xp.float32)


def _orthonormal_columns(y: Any) -> Any:
    """An orthonormal basis of the columns of the tall ``y``, by Cholesky QR in float64 (Q = Y L^-T with
    L L^T = Y^T Y: two thin products where Householder QR takes ~4x longer; one step of the subspace
    iteration keeps Y's condition number near the spectrum's decay, far below 1/sqrt(eps)); Householder QR
    when Y^T Y is not numerically positive definite. In ``y``'s dtype."""
    xp = array_namespace(y)
    y64 = xp.asarray(y, dtype=xp.float64)
    try:
        low = xp.linalg.cholesky(xp.matrix_transpose(y64) @ y64)
        q = y64 @ xp.matrix_transpose(xp.linalg.inv(low))
    except Exception:  # numpy's LinAlgError, torch's _LinAlgError
        q = xp.linalg.qr(y64)[0]
    return xp.asarray(q, dtype=y.dtype)


def landmark_factor(columns: Any, landmarks: np.ndarray, rank: int, *, precision: str = "float64") -> Any:
    """:func:`principal_factor` of G from its columns at ``landmarks`` only (``columns`` = G[:, L], N x l):
    the classic Nystrom approximation G ~ C C_L^+ C^T, C_L = C[L] (Williams & Seeger 2001, "Using the
    Nystrom method to speed up kernel machines"), i.e. the same stabilised computation with a sketch that
    selects columns instead of a Gaussian one; N l kernel values instead of N^2 and no N x N product.
    ``precision``: the one ``columns`` were computed in (the stabilising shift). Same backend and dtype as
    ``columns``; label-free when the landmarks are (a seeded draw)."""
    size = columns.shape[0]
    with blas_threads_for(size):
        return _nystrom_factor(columns, None, rank, precision=precision, dtype=columns.dtype,
                               landmarks=np.asarray(landmarks))


def exact_factor(operand: tuple[str, Any], max_rank: int) -> Any:
    """A factor P (N x p) with P P^T = G to round-off, G = F F^T for ``("features", F)`` and G itself for
    ``("gram", G)``: F itself when it has at most N columns, else G's eigen-factor U_k diag(sqrt(l_k)) over
    its numerical rank k (eigenvalues above N eps l_max in the operand's precision). P^T diag(w) P then
    has the non-zero spectrum of F^T diag(w) F: the uncompressed statistic. None when p > ``max_rank``
    (the caller keeps the operand itself). Same backend as the operand; float64 for a Gram operand."""
    kind, a = operand
    xp = array_namespace(a)
    size = a.shape[0]
    if kind == "features" and a.shape[1] <= size:
        return a if a.shape[1] <= max_rank else None
    eps = float(np.finfo(np.float32 if a.dtype == xp.float32 else np.float64).eps)
    g = xp.asarray(a if kind == "gram" else a @ xp.matrix_transpose(a), dtype=xp.float64)
    if rank_exceeds(g, max_rank, size * eps):  # (then the whole eigen-decomposition would be thrown away)
        return None
    with blas_threads_for(size):
        vals, vecs = xp.linalg.eigh((g + xp.matrix_transpose(g)) / 2)
    keep = vals > size * eps * max(float(vals[-1]), 0.0)
    if int(xp.sum(xp.asarray(keep, dtype=xp.int64))) > max_rank:
        return None
    return vecs[:, keep] * xp.sqrt(vals[keep])[None, :]


#: :func:`rank_exceeds` allows each eigen-solve an error of this many N eps ||G|| (float64 eps; a
#: backward-stable symmetric solver's is a small multiple of it)
SOLVER_ERROR_FACTOR = 100.0


def rank_exceeds(gram: Any, max_rank: int, relative: float) -> bool:
    """Whether the float64 positive-semidefinite ``gram`` G (N x N) provably has more than ``max_rank``
    eigenvalues above ``relative`` times its largest, as a full eigen-solve of (G + G^T) / 2 would count them,
    from its leading principal sub-matrix of 2 (max_rank + 1) rows: by Cauchy's interlacing theorem that
    sub-matrix's (max_rank + 1)-th largest eigenvalue is a lower bound of G's, and min(tr G, the largest
    absolute row or column sum) an upper bound of G's largest; each solve's round-off is allowed
    :data:`SOLVER_ERROR_FACTOR` N eps times that bound. False means "not proven": the caller's full solve
    decides. About (2 max_rank / N)^3 of the cost of that solve, values only."""
    xp = array_namespace(gram)
    size, rows = gram.shape[0], 2 * (max_rank + 1)
    if rows >= size:
        return False
    sub = gram[:rows, :rows]
    with blas_threads_for(rows):
        bound = float(xp.linalg.eigvalsh((sub + xp.matrix_transpose(sub)) / 2)[rows - max_rank - 1])
    magnitude = xp.abs(gram)
    top = min(float(xp.sum(xp.linalg.diagonal(gram))), float(xp.max(xp.sum(magnitude, axis=0))),
              float(xp.max(xp.sum(magnitude, axis=1))))
    error = SOLVER_ERROR_FACTOR * size * float(np.finfo(np.float64).eps) * top
    return bound - 2.0 * error > relative * (top + error) and top > 0.0  # (two solves' round-off)


def operand_trace(operand: tuple[str, Any]) -> float:
    """tr G of a ``("gram", G)`` or ``("features", F)`` operand (|F|_F^2): the energy a subspace is
    measured against (:func:`leading_rank`)."""
    kind, a = operand
    xp = array_namespace(a)
    if kind == "gram":
        return float(xp.sum(xp.asarray(xp.linalg.diagonal(a), dtype=xp.float64)))
    return float(xp.sum(xp.asarray(a, dtype=xp.float64) ** 2))


def factor_energy(factor: Any, total: float) -> float:
    """|P|_F^2 / tr G: the share of the operand's energy (trace) a factor P of it holds (P P^T <= G for the
    Nystrom factors, so at most 1 up to round-off)."""
    xp = array_namespace(factor)
    held = float(xp.sum(xp.asarray(factor, dtype=xp.float64) ** 2))
    return held / total if total > 0 else 1.0


def column_shares(factor: Any, total: float) -> np.ndarray:
    """Each column's |p_j|^2 / tr G (float64 numpy): the share of the operand's energy each direction of a
    factor holds (their sum is :func:`factor_energy`)."""
    xp = array_namespace(factor)
    held = np.asarray(to_numpy(xp.sum(xp.asarray(factor, dtype=xp.float64) ** 2, axis=0)), dtype=np.float64)
    return held / total if total > 0 else np.full(held.shape, 1.0 / max(held.size, 1))


def leading_rank(shares: np.ndarray, *, start: int, cap: int, target: float) -> tuple[int, float]:
    """(rank, energy): the least rank in start, 2 start, 4 start, ... (at most ``cap``, always tried last)
    whose leading directions hold ``target`` of the operand's energy, and the share they hold; ``cap``'s
    when none does. ``shares``: each direction's share of the energy, leading direction first, of one
    factor built at ``cap`` (its leading k columns are the rank-k factor: one build instead of one per
    rank tried)."""
    held = np.cumsum(np.asarray(shares, dtype=np.float64))
    cap = max(1, min(int(cap), held.size))
    rank = max(1, min(int(start), cap))
    while rank < cap and held[rank - 1] < target:
        rank = min(2 * rank, cap)
    return rank, float(held[rank - 1])


def pivoted_cholesky_factor(columns: Any, size: int, rank: int, *, block: int = 128,
                            tolerance: float = 0.0, seed: int = 0, diagonal: np.ndarray | None = None,
                            positions: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(F, residual): a Nystrom factor F (``size`` x at most ``rank``, float32) of a positive semi-definite G
    read through its columns only (``columns(idx)`` = G[:, idx], ``size`` x len(idx)), and the diagonal of
    G - F F^T (float64, >= 0), by block randomly pivoted Cholesky (Chen, Epperly, Tropp & Webber 2023,
    "Randomly pivoted Cholesky", Alg. 2): each round draws ``block`` pivots with probability proportional to
    the residual diagonal (seeded), reads their columns, and appends the factor of the residual's block.

    F F^T = G[:, S] G[S, S]^+ G[S, :] for the pivots S (eigen-directions of a round's block below 1e-6 of
    its largest dropped): F = Psi Q for an orthonormal Q spanning the pivots' features, so F_i F_j^T =
    psi_i^T P psi_j with P the projector on that span, and tr(G - F F^T) = sum(residual) is the energy
    outside it (Nystrom: G - F F^T is positive semi-definite). Stops at ``rank`` columns or once
    sum(residual) <= ``tolerance`` sum(diagonal). ``positions``: each row's canonical position, over which
    the pivots are drawn (the same pivots whatever the order of the rows). ``size`` x (rank + block) floats
    of memory; no ``size``^2
    array. ``diagonal``: G's diagonal (default: ones, a normalised kernel)."""
    diag = np.ones(size) if diagonal is None else np.asarray(diagonal, dtype=np.float64)
    residual, total = diag.copy(), float(diag.sum())
    factor = populated_zeros((size, rank), np.float32)  # (each round writes a column block of every row)
    rng, width = np.random.default_rng(seed), 0
    rows_at = None if positions is None else np.argsort(positions)  # (the row at each canonical position)
    while width < rank and residual.sum() > tolerance * total:
        weights = np.clip(residual, 0.0, None)
        live = int(np.count_nonzero(weights))
        if live == 0:
            break
        if positions is None:
            picks = rng.choice(size, size=min(block, rank - width, live), replace=False,
                               p=weights / weights.sum())
        else:  # (drawn over the rows in their canonical positions: the same pivots in any order of them)
            weights = weights[rows_at]
            picks = rows_at[rng.choice(size, size=min(block, rank - width, live), replace=False,
                                       p=weights / weights.sum())]
        cols = np.asarray(columns(picks), dtype=np.float32)
        if width:
            cols -= factor[:, :width] @ factor[picks, :width].T
        vals, vecs = np.linalg.eigh(np.asarray(cols[picks], dtype=np.float64))
        keep = vals > 1e-6 * max(float(vals[-1]), 1e-300)
        if not np.any(keep):
            break
        new = cols @ (vecs[:, keep] / np.sqrt(vals[keep])).astype(np.float32)
        take = min(new.shape[1], rank - width)
        factor[:, width:width + take] = new[:, -take:]
        residual = np.clip(residual - np.einsum("ij,ij->i", new[:, -take:], new[:, -take:], dtype=np.float64),
                           0.0, None)
        width += take
    return factor[:, :width], residual

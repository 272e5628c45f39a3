"""Extreme eigenpairs of D G by block Lanczos in the G inner product, with eigenvectors, for array-API
tensors.

PromptSplit's exact operator Lambda = Psi^T D Psi has the non-zero spectrum of D G (G = Psi Psi^T the joint
Gram matrix, D = diag(w) the signed sample weights). D G is self-adjoint in <x, y>_G = x^T G y, so Lanczos
in that inner product needs ONE product G X per block of Krylov vectors (they carry their images G Q), and
the Ritz vectors u give the scores directly: psi(s) . v = (G u)_s / |u|_G. On an accelerator this replaces
two dense N x N eigen-decompositions by a few dozen matrix products; on numpy one run serves both ends of
the spectrum where ARPACK needed one run on D G per end
(:func:`promptprism.stats.eigen.weighted_gram_eigenpairs`' top-k step, numpy and torch).

Full reorthogonalisation (twice, classical Gram-Schmidt) keeps the basis G-orthonormal; the run grows
until every wanted Ritz pair's residual is below ``tol`` times the largest |Ritz value| (the eigenvalue
error of a self-adjoint problem is at most the residual), or the Krylov space is the whole range of G
(then the Ritz values are the exact non-zero eigenvalues).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np

from ..backend import array_namespace, backend_of, to_numpy

#: :func:`weighted_gram_lanczos`' block: vectors per product with G. The run stops at the first step whose
#: residuals pass (the earlier one-vector version checked every 20 steps), and a product with a few columns
#: costs 2.5-3x one with one (OpenBLAS packs G): quiet 2-core Xeon AVX-512, top 10 + 10 of a float32 G,
#: seconds for blocks 1 / 2 / 4 / 8: 5,000 rows (the exact command at n = m = 2,500) 0.135 / 0.243 / 0.170 /
#: 0.126; 10,000 rows (the K-way benchmark's two-way fit) 0.79 / 1.16 / 0.85 / 1.38; the one-vector version
#: with checks every 20 steps 0.19 and 0.98. One vector per step is the robust choice (residuals read at
#: every 32nd growth of the basis: 0.146 and 0.81)
BLOCK_SIZE = 1
#: :func:`weighted_gram_lanczos_runs`' block per run: the product is a multi-column one already, whose cost
#: grows slowly with its width (OpenBLAS packs G whatever it), so wider blocks mean fewer rounds: 8 runs on
#: a float32 G of 12,000 rows (K = 8 sets of 1,500), top 10 + 10, 2 threads: blocks 1 / 2 / 3 / 4 took
#: 64 / 41 / 31 / 25 rounds, 3.9 / 3.0-3.2 / 3.0 / 2.6 s
LOCKSTEP_BLOCK = 4
#: rows of G per product of a multi-column block (numpy): OpenBLAS multiplies a few columns faster by row
#: panels than whole (2 threads, float32 G of 12,000 rows times 16 columns: 68 ms whole, 48-51 ms in panels
#: of 256 to 2,048 rows; 20,000 x 32: 255 / 190 ms)
PRODUCT_PANEL_ROWS = 1024


def weighted_gram_lanczos(gram: Any, weights: Any, n_pos: int, n_neg: int, *, tol: float | None = None,
                          seed: int = 0, block: int = BLOCK_SIZE, max_width: int | None = None
                          ) -> tuple[Any, Any] | None:
    """(eigenvalues, scores): the ``n_pos`` largest and ``n_neg`` smallest eigenvalues of D G (descending)
    and each one's scores G u / |u|_G (N x k), as arrays of ``gram``'s backend (float64), by block Lanczos
    with ``block`` Krylov vectors per product G X.

    ``tol``: relative residual at which a Ritz pair counts as converged (default: 1e-13 for a float64
    ``gram``, 1e-5 for float32, whose products carry float32 round-off); the start block and the fresh
    directions are seeded numpy draws.

    D G is self-adjoint in <x, y>_G, so a G-orthonormal basis Q of the block Krylov space (kept with its
    images G Q) gives the Rayleigh-Ritz matrix T = (G Q)^T D (G Q) (its columns are the first Gram-Schmidt
    pass's coefficients) and, for a Ritz pair (theta, s), the residual D G Q s - theta Q s = R s_last (R:
    the newest block after orthogonalisation), whose G-norm squared is s_last^T (R^T G R) s_last, the
    matrix that G-normalises that block. The run stops when every wanted pair's residual is below ``tol``
    times the largest |Ritz value|, or when the space is the whole range of G; given ``max_width``, it
    gives up (returns None) once the basis has that many vectors and the pairs have not converged (a
    caller with a dense decomposition to fall back on bounds what a slowly converging run may cost). A
    block is G-normalised through the eigen-decomposition of R^T G R (directions in G's numerical null
    space dropped; fresh seeded directions, orthogonal to the basis, make up a block that lost some). One
    pass over G per block instead of one per vector: a matrix that does not fit in cache is read ``block``
    times less often."""
    return weighted_gram_lanczos_runs(gram, [weights], n_pos, n_neg, tol=tol, seed=seed, block=block,
                                      max_width=max_width)[0]  # (one run: its own block, 1 by default)


def weighted_gram_lanczos_runs(gram: Any, weights: list, n_pos: int, n_neg: int, *, tol: float | None = None,
                               seed: int = 0, block: int = LOCKSTEP_BLOCK, max_width: int | None = None
                               ) -> list[tuple[Any, Any] | None]:
    """:func:`weighted_gram_lanczos` of D_j G for each weighting D_j = diag(``weights[j]``) of one G (K-way
    PromptSplit: each set against the pooled rest), the runs in lockstep: each round ONE product G [X_1 ...
    X_k] of every unfinished run's block (a run that has converged leaves), ``block`` vectors each
    (:data:`LOCKSTEP_BLOCK`). Each run is the single run's arithmetic with that block from the same
    ``seed``, but for the product's round-off (a multi-column product sums in another order). A product with
    a few columns reads G once where one per run reads it k times (float32 G of 12,000 rows on 2 threads: one
    vector 20 ms, eight 42-62 ms, 32 70-85 ms)."""
    gram_runs = [_lanczos_run(gram, w, n_pos, n_neg, tol=tol, seed=seed, block=block, max_width=max_width)
                 for w in weights]
    out: list = [None] * len(gram_runs)
    wanted = {j: next(run) for j, run in enumerate(gram_runs)}  # (each run's block to multiply by G)
    times_gram = _Products(gram)
    while wanted:
        order = list(wanted)
        blocks = [wanted[j] for j in order]
        product = times_gram(blocks[0] if len(blocks) == 1 else times_gram.xp.concat(blocks, axis=1))
        at = 0
        for j, u in zip(order, blocks, strict=True):
            width = int(u.shape[1])
            try:
                wanted[j] = gram_runs[j].send(product[:, at:at + width])
            except StopIteration as done:
                out[j] = done.value
                del wanted[j]
            at += width
    return out


class _Products:
    """x -> G x in G's precision, returned in float64 (the Krylov vectors' precision); a numpy G times a
    block of several columns :data:`PRODUCT_PANEL_ROWS` rows of G at a time."""

    def __init__(self, gram: Any) -> None:
        self.xp, self.gram = array_namespace(gram), gram

    def __call__(self, x: Any) -> Any:
        xp, gram = self.xp, self.gram
        if not isinstance(gram, np.ndarray) or x.shape[1] == 1:
            return xp.astype(gram @ xp.astype(x, gram.dtype), xp.float64)
        x = np.ascontiguousarray(x, dtype=gram.dtype)
        out = np.empty((gram.shape[0], x.shape[1]), dtype=gram.dtype)
        for a in range(0, gram.shape[0], PRODUCT_PANEL_ROWS):
            np.matmul(gram[a:a + PRODUCT_PANEL_ROWS], x, out=out[a:a + PRODUCT_PANEL_ROWS])
        return out.astype(np.float64)


def _lanczos_run(gram: Any, weights: Any, n_pos: int, n_neg: int, *, tol: float | None, seed: int, block: int,
                 max_width: int | None) -> Generator[Any, Any, tuple[Any, Any] | None]:
    """One run of :func:`weighted_gram_lanczos`: yields each block u whose product G u it needs and is sent
    that product; returns (eigenvalues, scores), or None once ``max_width`` is spent."""
    run = _BlockKrylov(gram, seed)
    xp, size, w = run.xp, run.size, run.on.asarray(weights, "float64")
    tol = (1e-13 if gram.dtype == xp.float64 else 1e-5) if tol is None else float(tol)
    u = run.fresh(max(1, min(int(block), size)))
    q, gq, _ = run.normalised(u, (yield u))
    check = n_pos + n_neg  # (the first width at which the residuals are read; then every 32nd more)
    while q.shape[1]:
        k = int(q.shape[1])
        m = run.extend(q, gq, w)  # (the basis grows by q; T by its columns)
        if m >= size:
            break
        q, gq, quad = run.normalised(run.remainder, (yield run.remainder))
        budget_spent = max_width is not None and m >= max_width
        if m >= check or budget_spent:
            check = m + max(1, m // 32)
            theta, s = np.linalg.eigh(run.t_mat)
            pick = _extremes(m, n_pos, n_neg)
            last = s[m - k:, pick]
            residual = np.sqrt(np.maximum(np.einsum("ij,ik,kj->j", last, quad, last), 0.0))
            if np.all(residual <= tol * max(float(np.max(np.abs(theta))), 1e-300)):
                break
            if budget_spent:
                return None
        if q.shape[1] < k and m + q.shape[1] < size:  # (a block lost directions: fresh ones make it up)
            x = run.fresh(k - q.shape[1])
            for _ in range(2):  # (and orthogonal to the block's own kept directions)
                x = x - q @ (xp.matrix_transpose(gq) @ x)
            more, gmore, _ = run.normalised(x, (yield x))
            q, gq = xp.concat([q, more], axis=1), xp.concat([gq, gmore], axis=1)
    theta, s = np.linalg.eigh(run.t_mat)
    pick = _extremes(int(run.t_mat.shape[0]), n_pos, n_neg)
    coeffs = run.on.asarray(np.ascontiguousarray(s[:, pick]), "float64")
    return run.on.asarray(theta[pick], "float64"), run.images @ coeffs


class _BlockKrylov:
    """The G-orthonormal basis of :func:`weighted_gram_lanczos` (vectors and their images G Q), the
    Rayleigh-Ritz matrix T and the newest block's remainder after orthogonalisation."""

    def __init__(self, gram: Any, seed: int) -> None:
        self.xp, self.on, self.gram = array_namespace(gram), backend_of(gram), gram
        self.size = int(gram.shape[0])
        self.rng = np.random.default_rng(seed)
        eps = float(np.finfo(np.float32 if gram.dtype == self.xp.float32 else np.float64).eps)
        # G's numerical null space as the dense route's pivoted Cholesky sees it: v^T G v at most
        # N eps max(G_ii) |v|^2
        self.null_level = self.size * eps * float(self.xp.max(self.xp.linalg.diagonal(gram)))
        self.basis = self.images = self.remainder = None
        self.t_mat = np.zeros((0, 0))

    def orthogonalise(self, u: Any) -> tuple[Any, np.ndarray]:
        """u less its G-projection on the basis (twice); the first pass's coefficients (G Q)^T u."""
        xp = self.xp
        if self.basis is None:
            return u, np.zeros((0, u.shape[1]))
        first = xp.matrix_transpose(self.images) @ u
        u = u - self.basis @ first
        u = u - self.basis @ (xp.matrix_transpose(self.images) @ u)
        return u, np.asarray(to_numpy(first), dtype=np.float64)

    def normalised(self, u: Any, gu: Any) -> tuple[Any, Any, np.ndarray]:
        """A G-orthonormal basis of u's columns (null directions dropped), its images (``gu`` = G u), and
        u^T G u."""
        xp = self.xp
        quad = np.asarray(to_numpy(xp.matrix_transpose(u) @ gu), dtype=np.float64)
        quad = (quad + quad.T) / 2
        vals, vecs = np.linalg.eigh(quad)
        scale = np.maximum(np.sum(np.asarray(to_numpy(u * u), dtype=np.float64), axis=0), 1e-300)
        keep = vals > self.null_level * float(scale.max())
        mix = self.on.asarray(np.ascontiguousarray(vecs[:, keep] / np.sqrt(vals[keep])), "float64")
        return u @ mix, gu @ mix, quad

    def fresh(self, count: int) -> Any:
        """``count`` seeded random vectors orthogonal to the basis."""
        x = self.on.asarray(self.rng.standard_normal((self.size, count)), "float64")
        return self.orthogonalise(self.orthogonalise(x)[0])[0]

    def extend(self, q: Any, gq: Any, w: Any) -> int:
        """Add the G-orthonormal block q (images gq) to the basis, T's new columns (G Q)^T D (G q), and the
        remainder D G q less its part in the space; the basis's new width."""
        xp = self.xp
        self.basis = q if self.basis is None else xp.concat([self.basis, q], axis=1)
        self.images = gq if self.images is None else xp.concat([self.images, gq], axis=1)
        m, k = int(self.basis.shape[1]), int(q.shape[1])
        self.remainder, coeffs = self.orthogonalise(w[:, None] * gq)
        t_new = np.zeros((m, m))
        t_new[: m - k, : m - k] = self.t_mat
        t_new[:, m - k:] = coeffs
        t_new[m - k:, :] = coeffs.T
        self.t_mat = t_new
        return m


def _extremes(size: int, n_pos: int, n_neg: int) -> np.ndarray:
    """Indices into ascending Ritz values of the ``n_pos`` largest then the ``n_neg`` smallest (no index
    twice), in descending order of value."""
    top = np.arange(size - 1, max(size - 1 - n_pos, -1), -1)
    bottom = np.arange(min(n_neg, size - top.size))[::-1]
    return np.r_[top, bottom].astype(np.int64)

"""Extreme eigenpairs of D G by Lanczos in the G inner product, with eigenvectors, for array-API tensors.

PromptSplit's exact operator Lambda = Psi^T D Psi has the non-zero spectrum of D G (G = Psi Psi^T the joint
Gram matrix, D = diag(w) the signed sample weights). D G is self-adjoint in <x, y>_G = x^T G y, so Lanczos
in that inner product needs ONE product G x per step (the Krylov vectors carry their images G q), and the
Ritz vectors u give the scores directly: psi(s) . v = (G u)_s / |u|_G. On an accelerator this replaces two
dense N x N eigen-decompositions by a few hundred matrix-vector products; on numpy one run serves both
ends of the spectrum where ARPACK needed one run on D G per end
(:func:`promptprism.stats.eigen.weighted_gram_eigenpairs`' top-k step, numpy and torch).

Full reorthogonalisation (twice, classical Gram-Schmidt) keeps the basis G-orthonormal; the run grows
until every wanted Ritz pair's residual |beta_j s_ji| is below ``tol`` times the largest |Ritz value|
(the eigenvalue error of a self-adjoint problem is at most the residual), or the Krylov space is the
whole range of G (then the Ritz values are the exact non-zero eigenvalues).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backend import array_namespace, backend_of, to_numpy

#: Krylov steps between convergence checks
CHECK_EVERY = 20


def weighted_gram_lanczos(gram: Any, weights: Any, n_pos: int, n_neg: int, *, tol: float | None = None,
                          seed: int = 0) -> tuple[Any, Any]:
    """(eigenvalues, scores): the ``n_pos`` largest and ``n_neg`` smallest eigenvalues of D G (descending)
    and each one's scores G u / |u|_G (N x k), as arrays of ``gram``'s backend (float64).

    ``tol``: relative residual at which a Ritz pair counts as converged (default: 1e-13 for a float64
    ``gram``, 1e-5 for float32, whose products carry float32 round-off). The start
    vector and the fresh directions after a breakdown (an invariant subspace: the run goes on, since the
    subspace need not hold every wanted extreme) are seeded numpy draws. The steps between two convergence
    checks keep their scalars on the device and copy them to the host once.
    """
    import scipy.linalg

    run = _GramKrylov(gram, weights, seed)
    size, on = run.size, backend_of(gram)
    tol = (1e-13 if gram.dtype == run.xp.float64 else 1e-5) if tol is None else float(tol)
    alpha, beta = np.zeros(size), np.zeros(size)
    q, gq, norm = run.start(0)
    steps = 0
    while norm > 0.0 and steps < size:
        first, stop = steps, min(size, (steps // CHECK_EVERY + 1) * CHECK_EVERY)
        scalars, q, gq = run.block(q, gq, first, stop)
        steps, broke = _record(scalars, first, alpha, beta, run.null_level)
        b = scalars[steps - 1 - first, 3]
        if not broke and steps >= n_pos + n_neg and (steps % CHECK_EVERY == 0 or steps == size):
            theta, s = scipy.linalg.eigh_tridiagonal(alpha[:steps], beta[: steps - 1])
            pick = _extremes(steps, n_pos, n_neg)
            if np.all(b * np.abs(s[-1, pick]) <= tol * max(float(np.max(np.abs(theta))), 1e-300)):
                break
        if broke:  # go on from a fresh direction (none left: G's range is spanned)
            beta[steps - 1] = 0.0
            q, gq, norm = run.start(steps)
    theta, s = scipy.linalg.eigh_tridiagonal(alpha[:steps], beta[: steps - 1])
    pick = _extremes(steps, n_pos, n_neg)
    coeffs = on.asarray(np.ascontiguousarray(s[:, pick]), "float64")
    return on.asarray(theta[pick], "float64"), run.images[:, :steps] @ coeffs  # |u|_G = 1: scores = G u


def _record(scalars: np.ndarray, first: int, alpha: np.ndarray, beta: np.ndarray,
            null_level: float) -> tuple[int, bool]:
    """Write a block's alpha and beta from its (alpha, v^T G v, v^T v, |v|_G) rows; (the steps kept, whether
    the run broke down: a step whose new vector lies in G's numerical null space ends the block there)."""
    for k, (a, quad, vv, b) in enumerate(scalars, start=first):
        alpha[k] = a
        if not quad > null_level * vv:  # an invariant subspace: the steps after it are undone
            return k + 1, True
        beta[k] = b
    return first + len(scalars), False


class _GramKrylov:
    """The Krylov basis of D G in the G inner product (vectors and their images G q) and its steps."""

    def __init__(self, gram: Any, weights: Any, seed: int) -> None:
        self.xp, self.on, self.gram = array_namespace(gram), backend_of(gram), gram
        self.size = int(gram.shape[0])
        self.w = self.on.asarray(weights, "float64")
        self.rng = np.random.default_rng(seed)
        self.basis = self.xp.zeros((self.size, min(self.size, 64)), dtype=self.xp.float64, device=gram.device)
        self.images = self.xp.zeros_like(self.basis)
        # G's numerical rank as the dense route's pivoted Cholesky sees it: directions with v^T G v at most
        # N eps max(G_ii) |v|^2 are null (round-off of G itself, not signal)
        eps = float(np.finfo(np.float32 if gram.dtype == self.xp.float32 else np.float64).eps)
        self.null_level = self.size * eps * float(self.xp.max(self.xp.linalg.diagonal(gram)))

    def times_gram(self, x: Any) -> Any:
        xp = self.xp
        return xp.astype(self.gram @ xp.astype(x, self.gram.dtype), xp.float64)

    def orthogonalise(self, u: Any, j: int) -> Any:
        for _ in range(2):
            u = u - self.basis[:, :j] @ (self.xp.matrix_transpose(self.images[:, :j]) @ u)
        return u

    def start(self, j: int) -> tuple[Any, Any, float]:
        """A unit (in G) start vector orthogonal to the first j basis vectors, its image, and its G-norm
        before normalising (0 when G's range is exhausted)."""
        xp = self.xp
        v = self.orthogonalise(self.on.asarray(self.rng.standard_normal(self.size), "float64"), j)
        gv = self.times_gram(v)
        quad = float(xp.vecdot(v, gv))
        norm = float(np.sqrt(quad)) if quad > self.null_level * float(xp.vecdot(v, v)) else 0.0
        return (v, gv, 0.0) if norm == 0.0 else (v / norm, gv / norm, norm)

    def _grow(self, steps: int) -> None:
        if steps < self.basis.shape[1]:
            return
        xp = self.xp
        more = xp.zeros((self.size, min(self.size, 2 * steps) - steps), dtype=xp.float64,
                        device=self.gram.device)  # double the basis
        self.basis = xp.concat([self.basis, more], axis=1)
        self.images = xp.concat([self.images, xp.zeros_like(more)], axis=1)

    def block(self, q: Any, gq: Any, steps: int, stop: int) -> tuple[np.ndarray, Any, Any]:
        """Steps ``steps`` .. ``stop - 1`` on the device; their scalars (alpha, v^T G v, v^T v, |v|_G) in
        one copy to the host, and the next vector and its image (meaningless after a breakdown)."""
        xp, rows = self.xp, []
        # after a breakdown (b = 0) the block's remaining steps are NaN, undone by _record: no warnings
        with np.errstate(divide="ignore", invalid="ignore"):
            while steps < stop:
                self._grow(steps)
                self.basis[:, steps], self.images[:, steps] = q, gq
                u = self.w * gq  # D G q
                a = xp.vecdot(gq, u)  # <q, D G q>_G
                steps += 1
                u = self.orthogonalise(u, steps)
                gu = self.times_gram(u)
                quad = xp.vecdot(u, gu)
                b = xp.sqrt(xp.clip(quad, min=0.0))
                rows.append(xp.stack([a, quad, xp.vecdot(u, u), b]))
                q, gq = u / b, gu / b
        return np.asarray(to_numpy(xp.stack(rows)), dtype=np.float64), q, gq


def _extremes(size: int, n_pos: int, n_neg: int) -> np.ndarray:
    """Indices into ascending Ritz values of the ``n_pos`` largest then the ``n_neg`` smallest (no index
    twice), in descending order of value."""
    top = np.arange(size - 1, max(size - 1 - n_pos, -1), -1)
    bottom = np.arange(min(n_neg, size - top.size))[::-1]
    return np.r_[top, bottom].astype(np.int64)

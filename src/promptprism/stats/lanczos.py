"""Extreme eigenpairs of D G by Lanczos in the G inner product, with eigenvectors, for array-API tensors.

PromptSplit's exact operator Lambda = Psi^T D Psi has the non-zero spectrum of D G (G = Psi Psi^T the joint
Gram matrix, D = diag(w) the signed sample weights). D G is self-adjoint in <x, y>_G = x^T G y, so Lanczos
in that inner product needs ONE product G x per step (the Krylov vectors carry their images G q), and the
Ritz vectors u give the scores directly: psi(s) . v = (G u)_s / |u|_G. On an accelerator this replaces two
dense N x N eigen-decompositions by a few hundred matrix-vector products. numpy keeps ARPACK
(:func:`promptprism.stats.eigen.weighted_gram_eigenpairs`); this is the torch branch of that step.

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
    subspace need not hold every wanted extreme) are seeded numpy draws.
    """
    import scipy.linalg

    xp, on = array_namespace(gram), backend_of(gram)
    size = int(gram.shape[0])
    f64 = xp.float64
    w = on.asarray(weights, "float64")
    tol = (1e-13 if gram.dtype == f64 else 1e-5) if tol is None else float(tol)
    wanted = n_pos + n_neg
    rng = np.random.default_rng(seed)

    def times_gram(x: Any) -> Any:
        return xp.astype(gram @ xp.astype(x, gram.dtype), f64)

    basis = xp.zeros((size, min(size, 64)), dtype=f64, device=gram.device)
    images = xp.zeros_like(basis)
    alpha, beta = np.zeros(size), np.zeros(size)

    def orthogonalise(u: Any, j: int) -> Any:
        for _ in range(2):
            u = u - basis[:, :j] @ (xp.matrix_transpose(images[:, :j]) @ u)
        return u

    # G's numerical rank as the dense route's pivoted Cholesky sees it: directions with v^T G v at most
    # N eps max(G_ii) |v|^2 are null (round-off of G itself, not signal)
    eps = float(np.finfo(np.float32 if gram.dtype == xp.float32 else np.float64).eps)
    null_level = size * eps * float(xp.max(xp.linalg.diagonal(gram)))

    def g_norm(v: Any, gv: Any) -> float:
        """|v|_G, or 0 when v lies in G's numerical null space."""
        quad = float(xp.vecdot(v, gv))
        return float(np.sqrt(quad)) if quad > null_level * float(xp.vecdot(v, v)) else 0.0

    def start(j: int) -> tuple[Any, Any, float]:
        """A unit (in G) start vector orthogonal to the first j basis vectors, its image, and its G-norm
        before normalising (0 when G's range is exhausted)."""
        v = orthogonalise(on.asarray(rng.standard_normal(size), "float64"), j)
        gv = times_gram(v)
        norm = g_norm(v, gv)
        return (v, gv, 0.0) if norm == 0.0 else (v / norm, gv / norm, norm)

    def grown(basis: Any, images: Any, steps: int) -> tuple[Any, Any]:
        if steps < basis.shape[1]:
            return basis, images
        more = xp.zeros((size, min(size, 2 * steps) - steps), dtype=f64, device=gram.device)  # double it
        return xp.concat([basis, more], axis=1), xp.concat([images, xp.zeros_like(more)], axis=1)

    q, gq, norm = start(0)
    steps = 0
    while norm > 0.0 and steps < size:
        # the steps up to the next check run on the device: their scalars come to the host in one copy
        first, stop, block = steps, min(size, (steps // CHECK_EVERY + 1) * CHECK_EVERY), []
        while steps < stop:
            basis, images = grown(basis, images, steps)
            basis[:, steps], images[:, steps] = q, gq
            u = w * gq  # D G q
            a = xp.vecdot(gq, u)  # <q, D G q>_G
            steps += 1
            u = orthogonalise(u, steps)
            gu = times_gram(u)
            quad = xp.vecdot(u, gu)
            b = xp.sqrt(xp.clip(quad, min=0.0))
            block.append(xp.stack([a, quad, xp.vecdot(u, u), b]))
            q, gq = u / b, gu / b  # meaningless after a breakdown: those steps are undone below
        scalars = np.asarray(to_numpy(xp.stack(block)), dtype=np.float64)
        broke = False
        for k, (a, quad, vv, b) in enumerate(scalars, start=first):
            alpha[k] = a
            broke = not quad > null_level * vv  # u in G's numerical null space: an invariant subspace
            if broke:
                steps = k + 1
                break
            beta[k] = b
        b = scalars[steps - 1 - first, 3]
        if not broke and steps >= wanted and (steps % CHECK_EVERY == 0 or steps == size):
            theta, s = scipy.linalg.eigh_tridiagonal(alpha[:steps], beta[: steps - 1])
            pick = _extremes(steps, n_pos, n_neg)
            if np.all(b * np.abs(s[-1, pick]) <= tol * max(float(np.max(np.abs(theta))), 1e-300)):
                break
        if broke:  # go on from a fresh direction (none left: G's range is spanned)
            beta[steps - 1] = 0.0
            q, gq, norm = start(steps)
    theta, s = scipy.linalg.eigh_tridiagonal(alpha[:steps], beta[: steps - 1])
    pick = _extremes(steps, n_pos, n_neg)
    coeffs = on.asarray(np.ascontiguousarray(s[:, pick]), "float64")
    return on.asarray(theta[pick], "float64"), images[:, :steps] @ coeffs  # |u|_G = 1: scores = G u


def _extremes(size: int, n_pos: int, n_neg: int) -> np.ndarray:
    """Indices into ascending Ritz values of the ``n_pos`` largest then the ``n_neg`` smallest (no index
    twice), in descending order of value."""
    top = np.arange(size - 1, max(size - 1 - n_pos, -1), -1)
    bottom = np.arange(min(n_neg, size - top.size))[::-1]
    return np.r_[top, bottom].astype(np.int64)

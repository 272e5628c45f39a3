"""The permutation test's statistic on a principal factor P: for every labelling w_k, the extreme
eigenvalues of P^T diag(w_k) P (SPEC's Lambda restricted to P's span), formed and diagonalised densely, or
by lockstep Lanczos over P itself when that is the cheaper (:func:`lanczos_subspace`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array_ops import tridiagonal_eigh
from ..backend import array_namespace, backend_of, to_numpy
from .batched_eigen import _dense_extremes, _lanczos_on_host_checks
from .eigen import signed_extremes

#: principal subspaces (:func:`subspace_extremes`) wider than this: every labelling's extremes by Lanczos
#: over the factor instead of a formed p x p matrix and its dense eigen-solve. Measured with each labelling
#: leaving the lockstep as it converges (:data:`CONVERGED`), 101 labellings in a block of 11 and one of 90
#: (the curtailed rule's), quiet 2-core Xeon AVX-512, seconds dense (two one-thread workers) / Lanczos (both
#: BLAS threads): 10,000 x 160 0.169 / 0.085, x 256 0.351 / 0.105, x 384 0.767 / 0.163; 20,000 x 160
#: 0.248 / 0.145, x 256 (the default rff command's fitted kernel) 0.491 / 0.108, x 384 1.06 / 0.31;
#: 40,000 x 256 0.933 / 0.480; 60,000 x 160 0.620 / 0.458, x 256 1.23 / 0.70, x 384 2.59 / 1.10 (at 128
#: columns Lanczos was also the faster, 1.2-2.3x, at 64 even; narrow factors keep the dense solve, exact to
#: the last digit). Before the per-labelling convergence, tall factors were cheaper densely (each of the
#: 16 fixed steps reads the factor twice)
SUBSPACE_DENSE_RANK = 128
#: Lanczos steps of :func:`factor_lanczos_extremes` (the largest eigenvalue of each sign is what it is for:
#: on the 5,000 x 256 principal factors of the three kernels of the default exact command at n = m = 2,500,
#: 201 labellings, the largest relative error against a float64 eigensolve: for the narrowest bandwidth
#: (x0.5, the flattest spectrum) 0.27 / 3.8e-3 / 1.8e-6 at 8 / 12 / 16 steps, the others 2.4e-4 or less at 8;
#: all three 1.8e-6 or less at 16, as at 24)
TOP_LANCZOS_STEPS = 16
#: a labelling's Lanczos run (:func:`factor_lanczos_extremes`) stops before :data:`TOP_LANCZOS_STEPS` once
#: the residuals of its largest and smallest Ritz pairs are at most this times its largest |Ritz value|
#: (their eigenvalue errors are at most that; checked from :data:`MIN_LANCZOS_STEPS` steps). Same three
#: factors: most labellings converge in 8-10 steps (the median error at 8 steps 4e-8 to 2e-4), the
#: flattest spectrum's slowest ones need the 16
CONVERGED = 1e-4
MIN_LANCZOS_STEPS = 6


def lanczos_subspace(factor: Any) -> bool:
    """Whether :func:`subspace_extremes` answers for ``factor`` by Lanczos (a numpy factor wider than
    :data:`SUBSPACE_DENSE_RANK`: its products use the BLAS's threads) rather than by dense solves. A rule
    on the shape alone: the same statistic for every labelling and every run."""
    return isinstance(factor, np.ndarray) and factor.shape[1] > SUBSPACE_DENSE_RANK


def factor_gram(factor: Any) -> Any:
    """P^T P in float64 (on P's backend): the labelling-free part of :func:`subspace_extremes`, computed once
    per factor by callers that draw the labellings in blocks."""
    xp = array_namespace(factor)
    return xp.asarray(xp.matrix_transpose(factor) @ factor, dtype=xp.float64)


def factor_shared(factor: Any) -> Any:
    """What every block of labellings of :func:`subspace_extremes` shares, computed once per factor by
    callers that draw the labellings in blocks: P^T P (:func:`factor_gram`) for a factor solved densely,
    P^T in C order for one solved by Lanczos (:func:`lanczos_subspace`)."""
    return np.ascontiguousarray(factor.T) if lanczos_subspace(factor) else factor_gram(factor)


def subspace_extremes(factor: Any, weights: np.ndarray, n_top: int, *, workers: int = 1, shared: Any = None,
                      seed: int = 0, observed: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Extreme eigenvalues of P^T diag(w_k) P for every column w_k of ``weights``, for a narrow factor P
    (N x p, a principal subspace). ``(positive, negative)`` as :func:`weighted_factor_extremes`.

    A labelling's weights take two values, a_k on its rows S_k and b_k on the others (1/n on the test rows,
    -eta/m on the reference ones), so P^T diag(w_k) P = b_k P^T P + (a_k - b_k) P_{S_k}^T P_{S_k}: P^T P
    once per call and one SYRK over the rows of the smaller side of each labelling (in P's precision;
    N p^2 / 2 flops instead of the N p^2 of a product with all of P, and no N x p^2 buffer), their sum and
    the eigen-solves in float64. Weights with more than two values per column: every matrix formed from
    the whole of P (:func:`_dense_extremes`). numpy: the labellings shared among ``workers`` threads (each
    labelling's numbers do not depend on which thread computes them; run it under one BLAS thread).
    ``shared``: :func:`factor_shared` of P, when the caller has it.

    The factors :func:`lanczos_subspace` picks: :func:`factor_lanczos_extremes` instead (no p x p
    matrix formed; ``seed`` draws its one start vector; ``observed``: column 0 is the observed labelling,
    whose whole spectrum is wanted)."""
    xp = array_namespace(factor)
    w = np.asarray(weights, dtype=np.float64)
    if lanczos_subspace(factor):
        return factor_lanczos_extremes(factor, w, n_top, seed=seed, whole_first=observed, transposed=shared)
    high, low = w.max(axis=0), w.min(axis=0)
    on_high = w == high
    if not np.all(on_high | (w == low)):
        return _dense_extremes(xp.asarray(factor, dtype=xp.float64), w, n_top)
    whole = factor_gram(factor) if shared is None else shared

    def solve(cols: np.ndarray) -> np.ndarray:
        return to_numpy(xp.linalg.eigvalsh(_labelling_matrices(factor, whole, on_high, high, low, cols)))

    cols = np.arange(w.shape[1])
    workers = max(1, min(int(workers), cols.size)) if isinstance(factor, np.ndarray) else 1
    if workers == 1:
        return signed_extremes(solve(cols), n_top)
    from concurrent.futures import ThreadPoolExecutor

    shares = np.array_split(cols, workers)
    with ThreadPoolExecutor(workers) as pool:
        vals = np.concatenate(list(pool.map(solve, shares)))
    return signed_extremes(vals, n_top)


def factor_lanczos_extremes(factor: np.ndarray, weights: np.ndarray, n_top: int, *, seed: int = 0,
                            steps: int | None = None, whole_first: bool = False,
                            transposed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Extreme eigenvalues of P^T diag(w_k) P (SPEC's Lambda, eq. 2, on a factor P) for every column w_k,
    ``(positive, negative)`` as :func:`weighted_factor_extremes`.

    At most ``steps`` (default :data:`TOP_LANCZOS_STEPS`) Lanczos steps for all columns in lockstep (two
    products with P per step, in P's precision), every run from the same start vector (one draw from
    ``seed``); a column leaves the lockstep once its extreme Ritz pairs have converged (:data:`CONVERGED`,
    :func:`_converging_lanczos`), so a labelling's numbers are one function of its weights. The largest
    eigenvalue of each sign (what a
    permutation test compares across labellings) converges first: on 256-column principal factors of 4,000
    and 5,000 samples, 20 steps were within 3e-5 of the dense solve for each of 201 labellings. Deeper Ritz
    values converge later and err low (they never exceed the true ones). ``whole_first``: column 0's deeper
    values (the observed labelling's modes) from its formed matrix instead, its largest of each sign kept
    from Lanczos (the compared statistic stays one function) and the deeper ones capped by it.
    ``transposed``: P^T in C order, when the caller has it (:func:`factor_shared`)."""
    f = np.ascontiguousarray(factor)
    ft = np.ascontiguousarray(f.T) if transposed is None else transposed
    w = np.ascontiguousarray(np.asarray(weights, dtype=f.dtype).T)  # (K, N)
    rank = f.shape[1]
    rng = np.random.default_rng(seed)
    start = rng.standard_normal(rank) * column_signs(f, transposed=ft)
    steps = min(rank, TOP_LANCZOS_STEPS if steps is None else int(steps))
    pos, neg, broke = _converging_lanczos(f, ft, w, start, n_top, steps=steps)
    if broke.size:  # (an invariant subspace before convergence: the runs that continue from fresh vectors)
        ritz = _lanczos_on_host_checks(lambda q, wt: (wt * (q @ ft)) @ f, None, w[broke], rank, steps=steps,
                                       rng=rng, start=np.tile(start, (broke.size, 1)))
        pos[broke], neg[broke] = signed_extremes(ritz, n_top)
    if whole_first and w.shape[0]:  # (its matrix in P's precision, as the Lanczos products; eigh in float64)
        whole = signed_extremes(np.linalg.eigvalsh(np.asarray(ft @ (w[0][:, None] * f), dtype=np.float64)),
                                n_top)
        for mine, dense in zip((pos, neg), whole, strict=True):
            mine[0, 1:] = np.minimum(dense[1:], mine[0, 0])
    return pos, neg


def column_signs(factor: np.ndarray, *, transposed: np.ndarray | None = None) -> np.ndarray:
    """+1 or -1 per column of ``factor``: the sign of its entry of largest magnitude (as scikit-learn's
    ``svd_flip``). A start vector scaled by it is the same vector whichever sign each column of a principal
    factor came out with, and whatever the order of its rows: the Lanczos runs, and their deeper Ritz values,
    then do not depend on the order the sets were given in. ``transposed``: the factor's transpose in C
    order, when the caller has it (the same signs, read along contiguous rows: 0.009 s for a 20,000 x 256
    float32 factor against 0.06 s down its columns)."""
    rows = np.asarray(factor).T if transposed is None else np.asarray(transposed)
    signs = np.sign(rows[np.arange(rows.shape[0]), np.argmax(np.abs(rows), axis=1)]).astype(np.float64)
    signs[signs == 0] = 1.0
    return signs


def matrix_lanczos_extremes(mats: np.ndarray, n_top: int, *, seed: int = 0, steps: int | None = None
                            ) -> tuple[np.ndarray, np.ndarray]:
    """(positive, |negative|) top ``n_top`` eigenvalues of every symmetric matrix of the stack ``mats``
    (B x p x p) by lockstep Lanczos, at most ``steps`` (default :data:`TOP_LANCZOS_STEPS`) steps, every run
    from the same start vector (one draw from ``seed``): the largest of each sign converges first, deeper
    Ritz values err low, and a matrix's numbers are one function of it."""
    mats = np.asarray(mats, dtype=np.float64)
    size = mats.shape[-1]
    rng = np.random.default_rng(seed)
    start = np.tile(rng.standard_normal(size), (mats.shape[0], 1))
    steps = min(size, TOP_LANCZOS_STEPS if steps is None else int(steps))
    ritz = _lanczos_on_host_checks(lambda q, m: (m @ q[..., None])[..., 0], None, mats, size, steps=steps,
                                   rng=rng, start=start)
    return signed_extremes(ritz, n_top)


def _converging_lanczos(f: np.ndarray, ft: np.ndarray, w: np.ndarray, start: np.ndarray, n_top: int, *,
                        steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lockstep Lanczos on P^T diag(w_k) P (P = ``f``, P^T = ``ft``) for every row w_k of ``w`` (K x N), all
    from ``start``, each row leaving the lockstep once its extreme Ritz pairs have converged
    (:data:`CONVERGED`, from :data:`MIN_LANCZOS_STEPS`) or after ``steps``: a labelling's numbers are one
    function of its weights, whichever rows share its products. Returns its signed extremes (as
    :func:`signed_extremes`) and the rows that found an invariant subspace first (their entries unset)."""
    count, rank = w.shape[0], f.shape[1]
    pos, neg = np.zeros((count, n_top)), np.zeros((count, n_top))
    rows, wt = np.arange(count), w
    basis = np.empty((count, steps, rank), dtype=f.dtype)
    alpha, beta = np.zeros((count, steps)), np.zeros((count, steps))
    q = np.tile((start / np.linalg.norm(start)).astype(f.dtype), (count, 1))
    broke: list[np.ndarray] = []
    for j in range(steps):
        basis[:, j] = q
        u = (wt * (q @ ft)) @ f
        alpha[:, j] = np.einsum("ij,ij->i", q, u)
        for _ in range(2):  # full reorthogonalisation, twice
            kept = basis[:, : j + 1]
            u -= (np.matrix_transpose(kept @ u[:, :, None]) @ kept)[:, 0, :]
        norms = np.linalg.norm(u.astype(np.float64), axis=1)
        last = j == steps - 1
        dead = (norms <= 1e-5 * np.maximum(np.abs(alpha[:, : j + 1]).max(axis=1), 1e-30)) & (not last)
        done = dead | last
        if j + 1 >= MIN_LANCZOS_STEPS or done.any():
            theta, vecs = tridiagonal_eigh(alpha[:, : j + 1], beta[:, :j])
            residual = norms[:, None] * np.abs(vecs[:, -1, [0, -1]])
            scale = np.maximum(np.abs(theta).max(axis=1), 1e-300)
            done |= residual.max(axis=1) <= CONVERGED * scale
            finished = done & ~dead
            pos[rows[finished]], neg[rows[finished]] = signed_extremes(theta[finished], n_top)
            broke.append(rows[dead])
            if last:
                break
            if done.any():
                keep = ~done
                rows, wt, basis, alpha, beta = rows[keep], wt[keep], basis[keep], alpha[keep], beta[keep]
                u, norms = u[keep], norms[keep]
                if not rows.size:
                    break
        beta[:, j] = norms
        q = (u / norms[:, None]).astype(f.dtype)
    return pos, neg, np.concatenate(broke) if broke else np.zeros(0, dtype=np.int64)


def _labelling_matrices(factor: Any, whole: Any, on_high: np.ndarray, high: np.ndarray, low: np.ndarray,
                        cols: np.ndarray) -> Any:
    """P^T diag(w_k) P (float64, stacked) for the labellings ``cols`` of :func:`subspace_extremes`."""
    xp, on = array_namespace(factor), backend_of(factor)
    size, width = factor.shape
    mats = xp.empty((cols.size, width, width), dtype=xp.float64, device=whole.device)
    for i, k in enumerate(cols):
        taken, value, rest = on_high[:, k], high[k], low[k]
        if 2 * np.count_nonzero(taken) > size:  # the other side is the smaller
            taken, value, rest = ~taken, low[k], high[k]
        rows = factor[on.asarray(np.flatnonzero(taken)), ...]
        part = xp.asarray(xp.matrix_transpose(rows) @ rows, dtype=xp.float64)
        mats[i, ...] = float(rest) * whole + float(value - rest) * part
    return mats

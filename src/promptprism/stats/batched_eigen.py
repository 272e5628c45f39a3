"""Extreme eigenvalues of many weighted problems at once: the permutation test's null spectra.

Under a relabelling k of the samples, PromptSplit's Lambda is A_k = F^T diag(w_k) F for a fixed factor F
(F F^T = G, the joint Gram matrix, or the random features themselves). :func:`weighted_factor_extremes`
answers for all K relabellings together: a stacked dense solve for narrow factors, else Lanczos run for all
K in lockstep; :func:`weighted_gram_extremes` does the same from G alone. Written once over the array API
(numpy or torch); random start vectors are numpy draws, so both backends see the same numbers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..array_ops import blas_limits, blas_thread_count, blas_threads_for, tridiagonal_eigh
from ..backend import array_namespace, backend_of, float_dtype, to_numpy
from .eigen import signed_extremes

#: factors up to this many columns are diagonalised densely by :func:`weighted_factor_extremes`
DENSE_BATCH_RANK = 256
#: Lanczos steps of the batched extreme-eigenvalue solvers (at least; more when many modes are wanted)
LANCZOS_STEPS = 40
_BATCH_BYTES = 512 * 1024**2


def lanczos_steps(n_top: int, size: int, steps: int | None = None) -> int:
    """Krylov vectors per operator: ``max(LANCZOS_STEPS, 2 n_top + 20)`` (at most ``size``).

    The largest eigenvalue converges first: on a gaussian-kernel Gram matrix of 2,000 clustered 768-d
    samples, 40 steps give the top 5 of each sign to 1e-5 and the 10th within ~6 %; on a flat random-matrix
    spectrum (the hardest case) the largest is exact to 1e-8. Ritz values never exceed the true extremes
    (Cauchy interlacing), so an unconverged eigenvalue errs low.
    """
    return int(min(size, steps or max(LANCZOS_STEPS, 2 * n_top + 20)))


def weighted_factor_extremes(
    factor: np.ndarray, weights: np.ndarray, n_top: int, *, steps: int | None = None, seed: int = 0,
    dtype: type = np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """Extreme eigenvalues of A_k = F^T diag(w_k) F for every column w_k of ``weights``, at once.

    PromptSplit's Lambda under a relabelling of the samples is exactly this matrix (SPEC: Lambda =
    Psi^T D Psi with D = diag(w); F is any factor with F F^T = G, the joint Gram matrix, or the random
    features themselves), so the permuted spectra of a permutation test need only F and the weight matrix
    W (N x K). Returns ``(positive, negative)``, each (K, n_top): the n_top largest positive eigenvalues and
    the n_top largest |negative| ones of each A_k, descending magnitudes, zero-padded.

    Factors with at most ``DENSE_BATCH_RANK`` columns: every A_k formed and diagonalised (exact, float64).
    Wider ones: Lanczos with full reorthogonalisation, all K operators advanced in lockstep, so every step
    is two matrix-matrix products over a block of permutations (not K separate eigensolves), in ``dtype``;
    :func:`lanczos_steps` Krylov vectors each.
    """
    xp = array_namespace(factor)
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == 1:
        w = w[:, None]
    f = xp.asarray(factor, dtype=xp.float64)
    size, rank = f.shape
    if rank > size:  # same Gram matrix, fewer columns: F = (Q R)^T -> R^T
        f = xp.linalg.qr(f.T)[1].T
        rank = f.shape[1]
    if rank <= DENSE_BATCH_RANK:
        return _dense_extremes(f, w, n_top)
    if 2 * rank > size:  # the Gram form costs 2 N^2 per vector and step, the factor form 4 N r
        return weighted_gram_extremes(f @ f.T, w, n_top, steps=steps, seed=seed, dtype=dtype)
    f = xp.asarray(f, dtype=float_dtype(xp, np.dtype(dtype).name))
    ft = xp.asarray(f.T, copy=True)  # C-ordered F^T (numpy: a contiguous copy for BLAS)
    return _batched_extremes(lambda q, wt: (wt * (q @ ft)) @ f, None, w, rank, on=backend_of(f),
                             n_top=n_top, steps=lanczos_steps(n_top, rank, steps), seed=seed, dtype=dtype)


def weighted_gram_extremes(
    gram: np.ndarray, weights: np.ndarray, n_top: int, *, steps: int | None = None, seed: int = 0,
    dtype: type = np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`weighted_factor_extremes`, from the Gram matrix G = F F^T itself (no factorisation).

    The eigenvalues of F^T D_k F are those of D_k G, which is self-adjoint in the inner product
    <x, y>_G = x^T G y; Lanczos in that inner product needs one product G X per step for a block of
    permutations (2 N^2 flops per vector, half the cost of the factor form when F is square).
    """
    xp = array_namespace(gram)
    g = xp.asarray(gram, dtype=float_dtype(xp, np.dtype(dtype).name))
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim == 1:
        w = w[:, None]
    size = g.shape[0]
    if size <= DENSE_BATCH_RANK:
        vals, vecs = xp.linalg.eigh(xp.asarray(gram, dtype=xp.float64))
        return _dense_extremes(vecs * xp.sqrt(xp.clip(vals, min=0.0)), w, n_top)
    return _batched_extremes(lambda q, wt: wt * q, lambda x: x @ g, w, size, on=backend_of(g),
                             n_top=n_top, steps=lanczos_steps(n_top, size, steps), seed=seed, dtype=dtype)


def principal_factor(operand: tuple[str, Any], rank: int, *, seed: int = 0,
                     positions: np.ndarray | None = None) -> Any:
    """A factor P (N x at most ``rank``) with P P^T close to the best rank-``rank`` approximation of G, where
    G = F F^T for ``("features", F)`` and G itself for ``("gram", G)``: the seeded Nystrom approximation
    G Om (Om^T G Om)^+ Om^T G with a Gaussian Om of ``rank`` + 10 columns, computed stably with a small
    shift (Tropp, Yurtsever, Udell & Cevher 2017, "Fixed-rank approximation of a positive-semidefinite
    matrix from streaming data", Alg. 3), truncated to its ``rank`` leading directions. One product G Om
    (two for a factor); None when the operand is already that narrow.

    P depends on G and the seeded draw only, never on sample weights: P^T diag(w) P (Lambda restricted to
    G's leading principal subspace) is one function applied alike to every labelling of the samples, so a
    permutation test on its extremes is exact. Those extremes approach F^T diag(w) F's as the part of G's
    spectrum left out shrinks. Same backend and dtype as the operand. ``positions``: row i takes row
    ``positions[i]`` of the draw (rows in a canonical order: the same factor whatever the order of the sets
    stacked in G, :func:`~promptprism.methods.promptsplit.relabel.canonical_positions`).
    """
    kind, a = operand
    xp, on = array_namespace(a), backend_of(a)
    size = a.shape[0]
    if (kind == "features" and a.shape[1] <= rank) or size <= rank:
        return None
    name = "float32" if a.dtype == xp.float32 else "float64"
    drawn = np.random.default_rng(seed).standard_normal((size, min(size, rank + 10)))
    sketch = on.asarray(drawn if positions is None else drawn[positions], dtype=name)
    y = a @ sketch if kind == "gram" else a @ (xp.matrix_transpose(a) @ sketch)  # G Om (N x l)
    with blas_threads_for(size):  # (N x l by l x l products: the BLAS's threads above SMALL_BLAS rows)
        return _nystrom_factor(y, sketch, rank, precision=name, dtype=a.dtype)


def _nystrom_factor(y: Any, sketch: Any, rank: int, *, precision: str, dtype: Any,
                    landmarks: np.ndarray | None = None) -> Any:
    """:func:`principal_factor` from G Om and Om: the stabilised Nystrom factor's ``rank`` leading
    directions (in ``dtype``; the shift from ``precision``, the one G was computed in). ``landmarks``: Om
    selects these rows (column j of Om is the unit vector of row ``landmarks[j]``), so Om^T Y is Y's rows
    there and Y + shift Om one entry per column (no product with Om)."""
    xp = array_namespace(y)
    y = xp.asarray(y, dtype=xp.float64, copy=landmarks is not None or None)  # (written below: a copy)
    eps = float(np.finfo(np.float32 if precision == "float32" else np.float64).eps)
    # Tropp et al.'s shift, eps |Y|_2 (|Y|_2 from the l x l Y^T Y): G's and Y's round-off in a's precision
    shift = eps * float(xp.sqrt(xp.max(xp.linalg.eigvalsh(xp.matrix_transpose(y) @ y))))
    if landmarks is not None:
        picked = backend_of(y).asarray(np.asarray(landmarks, dtype=np.int64))
        cols = backend_of(y).asarray(np.arange(y.shape[1]))
        cross, unit = y[picked, ...], xp.eye(y.shape[1], dtype=xp.float64, device=y.device)
    else:
        sketch = xp.asarray(sketch, dtype=xp.float64)
    for _ in range(4):  # (a core that round-off left indefinite: a larger shift)
        # Om^T (G + shift) Om
        core = cross + shift * unit if landmarks is not None else \
            xp.matrix_transpose(sketch) @ (y + shift * sketch)
        try:
            chol = xp.linalg.cholesky((core + xp.matrix_transpose(core)) / 2)
            break
        except Exception:  # numpy's LinAlgError, torch's _LinAlgError
            shift = max(10 * shift, 1e-30)
    if landmarks is None:
        y = y + shift * sketch
    else:
        y[picked, cols] = y[picked, cols] + shift
    f = y @ xp.matrix_transpose(xp.linalg.inv(chol))  # F F^T = G Om core^-1 Om^T G (+ shift)
    vals, vecs = xp.linalg.eigh(xp.matrix_transpose(f) @ f)  # F = U S V^T: S^2 = vals, U = F V / S
    vals, vecs = vals[-rank:], vecs[:, -rank:]
    scale = xp.sqrt(xp.clip(vals - shift, min=0.0)) / xp.sqrt(xp.clip(vals, min=1e-300))
    return xp.asarray(f @ (vecs * scale[None, :]), dtype=dtype)  # U sqrt(S^2 - shift)


def _dense_extremes(f: Any, w: np.ndarray, n_top: int) -> tuple[np.ndarray, np.ndarray]:
    """Every F^T diag(w_k) F formed (float64) and diagonalised, in blocks of a stacked eigvalsh (on F's
    backend; the eigenvalues come back as numpy)."""
    xp, on = array_namespace(f), backend_of(f)
    rank = f.shape[1]
    block = max(1, _BATCH_BYTES // (8 * rank * max(rank, f.shape[0])))
    vals = np.empty((w.shape[1], rank))
    for start in range(0, w.shape[1], block):
        ws = on.asarray(w[:, start : start + block].T, dtype="float64")  # (b, N)
        vals[start : start + block] = to_numpy(xp.linalg.eigvalsh((f.T[None, ...] * ws[:, None, :]) @ f))
    return signed_extremes(vals, n_top)


def _batched_extremes(apply, metric, weights: np.ndarray, dim: int, *, n_top: int, steps: int, seed: int,
                      dtype: type, on: Any, batch_bytes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Run :func:`_batched_lanczos` over blocks of weight columns (moved to backend ``on``), each block's
    Krylov vectors within ``batch_bytes`` (default ``_BATCH_BYTES``); signed extremes of the Ritz values
    (numpy). The random starts come block after block from one stream (the same starts whatever the blocks,
    unless a run breaks down and draws a fresh vector from it)."""
    k_total = weights.shape[1]
    stored = 1 if metric is None else 2
    budget = _BATCH_BYTES if batch_bytes is None else int(batch_bytes)
    batch = int(max(1, min(k_total, budget // (np.dtype(dtype).itemsize * (stored * steps + 3) * dim))))
    rng = np.random.default_rng(seed)
    pos = np.zeros((k_total, n_top))
    neg = np.zeros((k_total, n_top))
    for start in range(0, k_total, batch):
        cols = slice(start, min(k_total, start + batch))
        wt = on.asarray(np.ascontiguousarray(weights[:, cols].T), dtype=np.dtype(dtype).name)
        ritz = _batched_lanczos(apply, metric, wt, dim, steps=steps, rng=rng)
        pos[cols], neg[cols] = signed_extremes(ritz, n_top)
    return pos, neg


def _batched_lanczos(apply, metric, wt: Any, dim: int, *, steps: int, rng: np.random.Generator) -> np.ndarray:
    """Ritz values (b, steps) of b operators T_k, one Lanczos run per row of ``wt``, in lockstep.

    ``apply(q, wt)`` returns T_k q_k for the rows q_k of q; ``metric(x)`` returns M x_k (rows) for the inner
    product <x, y> = x^T M y in which T_k is self-adjoint (None: the identity). In the metric form the
    vectors carry their images g = M q, and T_k q = apply(g, wt). Written over the array API: the Krylov
    vectors live on ``wt``'s backend, the random starts are numpy's (the same on every backend), the small
    tridiagonal problems are solved on the host.

    On an accelerator the steps run without a host round-trip (:func:`_lanczos_on_device`); the rare rows
    that break down (an invariant subspace: fewer directions than steps) are then rerun from the same
    start by :func:`_lanczos_on_host_checks`, which draws their fresh vectors in the same order as numpy.
    """
    start = rng.standard_normal((wt.shape[0], dim))
    if backend_of(wt).name == "numpy":
        return _lanczos_on_host_checks(apply, metric, wt, dim, steps=steps, rng=rng, start=start)
    ritz, died = _lanczos_on_device(apply, metric, wt, dim, steps=steps, start=start)
    if died.any():
        rows = np.flatnonzero(died)
        sub = wt[backend_of(wt).asarray(rows), ...]
        ritz[rows] = _lanczos_on_host_checks(apply, metric, sub, dim, steps=steps, rng=rng, start=start[rows])
    return ritz


def _krylov_helpers(xp: Any, metric, basis: Any, images: Any):
    """The inner product, full reorthogonalisation and normalisation of the batched Lanczos runs."""

    def dot(x: Any, y: Any) -> Any:
        return xp.vecdot(x, y, axis=1)

    def orthogonalise(u: Any, j: int, rows: Any = slice(None)) -> Any:
        for _ in range(2):  # full reorthogonalisation, twice (Gram-Schmidt is enough twice)
            c = images[rows, :j] @ u[:, :, None]  # (b, j, 1)
            u -= (xp.matrix_transpose(c) @ basis[rows, :j])[:, 0, :]
        return u

    def normalise(u: Any) -> tuple[Any, Any, Any]:
        g = u if metric is None else metric(u)
        return u, g, xp.sqrt(xp.clip(dot(u, g), min=0.0))

    return dot, orthogonalise, normalise


def _krylov_storage(wt: Any, metric, steps: int, dim: int) -> tuple[Any, Any, Any, str]:
    xp = array_namespace(wt)
    name = "float32" if wt.dtype == xp.float32 else "float64"
    shape = (wt.shape[0], steps, dim)
    basis = xp.empty(shape, dtype=wt.dtype, device=wt.device)
    images = basis if metric is None else xp.empty(shape, dtype=wt.dtype, device=wt.device)
    return xp, basis, images, name


def _unit_start(normalise, metric, x: Any) -> tuple[Any, Any]:
    """The start vectors scaled to unit norm (in the metric), and their images."""
    q, g, norms = normalise(x)
    q /= norms[:, None]
    return q, (q if metric is None else g / norms[:, None])


def _store_and_apply(apply, wt: Any, basis: Any, images: Any, q: Any, g: Any, j: int) -> Any:
    """Keep step ``j``'s vectors (and their images) and apply the operators to them."""
    basis[:, j, :] = q
    if images is not basis:
        images[:, j, :] = g
    return apply(g, wt)


def _tridiagonal_ritz(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    return tridiagonal_eigh(alpha, beta[:, : alpha.shape[1] - 1], values_only=True)


def _lanczos_on_device(apply, metric, wt: Any, dim: int, *, steps: int,
                       start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The batched Lanczos runs with every scalar kept on ``wt``'s device: one copy to the host at the end.

    Returns (Ritz values, rows that broke down); a row that broke down has meaningless Ritz values (its
    later vectors divide by a vanishing norm) and must be rerun with the host checks.
    """
    xp, basis, images, name = _krylov_storage(wt, metric, steps, dim)
    on = backend_of(wt)
    dot, orthogonalise, normalise = _krylov_helpers(xp, metric, basis, images)
    alpha = xp.zeros((wt.shape[0], steps), dtype=xp.float64, device=wt.device)
    beta = xp.zeros((wt.shape[0], steps), dtype=xp.float64, device=wt.device)
    died = xp.zeros((wt.shape[0],), dtype=xp.bool, device=wt.device)
    q, g = _unit_start(normalise, metric, on.asarray(start, dtype=name))
    for j in range(steps):
        u = _store_and_apply(apply, wt, basis, images, q, g, j)
        alpha[:, j] = xp.astype(dot(g, u), xp.float64)
        u = orthogonalise(u, j + 1)
        if j == steps - 1:
            break
        u, gu, norms = normalise(u)
        scale = xp.clip(xp.max(xp.abs(alpha[:, : j + 1]), axis=1), min=1e-30)
        died = died | (xp.astype(norms, xp.float64) <= 1e-5 * scale)
        beta[:, j] = xp.astype(norms, xp.float64)
        q = u / norms[:, None]
        g = q if metric is None else gu / norms[:, None]
    died_h = np.asarray(to_numpy(died), dtype=bool)
    alpha_h, beta_h = to_numpy(alpha), to_numpy(beta)
    ritz = np.full(alpha_h.shape, np.nan)
    ok = ~died_h
    if ok.any():
        ritz[ok] = _tridiagonal_ritz(alpha_h[ok], beta_h[ok])
    return ritz, died_h


def _lanczos_on_host_checks(apply, metric, wt: Any, dim: int, *, steps: int, rng: np.random.Generator,
                            start: np.ndarray) -> np.ndarray:
    """The batched Lanczos runs, each step's norms checked on the host: a run that finds an invariant
    subspace continues from a fresh random vector orthogonal to its basis (drawn from ``rng``).

    numpy with several BLAS threads: each step's row-wise work (the operators, the reorthogonalisation's
    matrix-vector products, the metric) runs in pieces of rows on as many threads under one BLAS thread
    (:func:`_row_pieces`; the reorthogonalisation alone was one core's memory-bound work); the checks and
    the fresh draws stay on the calling thread, in the same order."""
    xp, basis, images, name = _krylov_storage(wt, metric, steps, dim)
    on = backend_of(wt)
    dot, orthogonalise, normalise = _krylov_helpers(xp, metric, basis, images)
    b = wt.shape[0]
    alpha = np.zeros((b, steps))
    beta = np.zeros((b, steps))
    q, g = _unit_start(normalise, metric, on.asarray(start, dtype=name))
    with _row_pieces(wt, dim) as by_rows:
        for j in range(steps):
            u = by_rows(lambda r, j=j, q=q, g=g: _store_and_apply(apply, wt[r], basis[r], images[r], q[r],
                                                                  g[r], j))
            alpha[:, j] = to_numpy(dot(g, u))
            by_rows(lambda r, j=j, u=u: orthogonalise(u[r], j + 1, r), into=False)
            if j == steps - 1:
                break
            gu = u if metric is None else by_rows(lambda r, u=u: metric(u[r]))
            norms = xp.sqrt(xp.clip(dot(u, gu), min=0.0))
            norms_h = np.asarray(to_numpy(norms), dtype=np.float64)
            scale = np.maximum(np.max(np.abs(alpha[:, : j + 1]), axis=1), 1e-30)
            dead = norms_h <= 1e-5 * scale
            if dead.any():  # invariant subspace found: continue from a fresh vector orthogonal to the basis
                rows = on.asarray(np.flatnonzero(dead))
                fresh = orthogonalise(on.asarray(rng.standard_normal((rows.shape[0], dim)), dtype=name),
                                      j + 1, rows)
                fresh, gfresh, fnorm = normalise(fresh)
                # no direction left (the metric's range is exhausted): continue with zero vectors, whose
                # Ritz values are the operator's zero eigenvalues
                empty = to_numpy(fnorm <= 1e-5 * xp.sqrt(xp.clip(dot(fresh, fresh), min=1e-300)))
                if np.any(empty):
                    e = on.asarray(np.flatnonzero(empty))
                    fresh[e, ...], gfresh[e, ...], fnorm[e] = 0.0, 0.0, 1.0
                u[rows, ...], gu[rows, ...], norms[rows] = fresh, gfresh, fnorm
                norms_h = np.asarray(to_numpy(norms), dtype=np.float64)
            beta[:, j] = np.where(dead, 0.0, norms_h)
            q = u / norms[:, None]
            g = q if metric is None else gu / norms[:, None]
    return _tridiagonal_ritz(alpha, beta)


#: rows of a Lanczos block below which :func:`_row_pieces` keeps its steps on the calling thread, and the
#: least vector length at which pieces pay for their hand-offs
PIECE_MIN_ROWS, PIECE_MIN_DIM = 8, 256


@contextlib.contextmanager
def _row_pieces(wt: Any, dim: int) -> Iterator[Callable]:
    """``by_rows(fn, into=True)``: fn(r) for row slices r covering the block, their results stacked into one
    array (``into=False``: fn works in place, nothing returned). A numpy block of at least
    :data:`PIECE_MIN_ROWS` rows of vectors of at least :data:`PIECE_MIN_DIM` under several BLAS threads: one
    slice per thread on a pool, under one BLAS thread each (every row's numbers those of the whole block on
    one BLAS thread; several BLAS threads may round a product differently, within its precision); else the
    whole block at once on the calling thread."""
    workers = blas_thread_count() if backend_of(wt).name == "numpy" else 1
    if workers <= 1 or wt.shape[0] < max(PIECE_MIN_ROWS, 2) or dim < PIECE_MIN_DIM:
        def whole(fn: Callable, into: bool = True) -> Any:
            return fn(slice(None))

        yield whole
        return
    from concurrent.futures import ThreadPoolExecutor

    bounds = np.linspace(0, wt.shape[0], workers + 1).astype(int)
    slices = [slice(a, z) for a, z in zip(bounds[:-1], bounds[1:], strict=True) if z > a]

    def by_rows(fn: Callable, into: bool = True) -> Any:
        parts = list(pool.map(fn, slices))
        if not into:
            return None
        out = np.empty((wt.shape[0], *parts[0].shape[1:]), dtype=parts[0].dtype)
        for r, part in zip(slices, parts, strict=True):
            out[r] = part
        return out

    with blas_limits(1), ThreadPoolExecutor(workers) as pool:
        yield by_rows

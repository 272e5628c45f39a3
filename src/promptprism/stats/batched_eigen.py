"""Extreme eigenvalues of many weighted problems at once: the permutation test's null spectra.

Under a relabelling k of the samples, PromptSplit's Lambda is A_k = F^T diag(w_k) F for a fixed factor F
(F F^T = G, the joint Gram matrix, or the random features themselves). :func:`weighted_factor_extremes`
answers for all K relabellings together: a stacked dense solve for narrow factors, else Lanczos run for all
K in lockstep; :func:`weighted_gram_extremes` does the same from G alone. Written once over the array API
(numpy or torch); random start vectors are numpy draws, so both backends see the same numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array_ops import blas_threads_for
from ..backend import array_namespace, backend_of, float_dtype, to_numpy
from .eigen import signed_extremes

#: factors up to this many columns are diagonalised densely by :func:`weighted_factor_extremes`
DENSE_BATCH_RANK = 256
#: Lanczos steps of the batched extreme-eigenvalue solvers (at least; more when many modes are wanted)
LANCZOS_STEPS = 40
#: principal subspaces (:func:`subspace_extremes`) wider than this: every labelling's extremes by Lanczos
#: over the factor instead of a formed p x p matrix and its dense eigen-solve (5,000 x 256 float32 factor,
#: 201 labellings of 10 modes each, quiet 2 cores: 0.51 s dense, 0.19 s by 40 Lanczos steps, top 10 to
#: 1e-6; at 128 columns the dense solve is the cheaper), when :data:`LANCZOS_MAX_FACTOR_SIZE` allows
SUBSPACE_DENSE_RANK = 128
#: Lanczos over a factor of more entries (rows x columns) than this only from :data:`LANCZOS_ALWAYS_RANK`
#: columns: a tall factor no longer stays in cache, each of the 2 x steps passes over it reads memory, while
#: the dense route's product touches each row once (41 labellings, quiet 2-core Xeon AVX-512, seconds
#: dense / Lanczos at 24 steps: 10,000 x 256 0.175 / 0.110, 20,000 x 160 0.124 / 0.127, 20,000 x 256
#: 0.238 / 0.317, 40,000 x 256 0.434 / 0.618, 60,000 x 384 1.22 / 1.99; 40,000 x 512 1.41 / 1.22; at 16
#: steps: 20,000 x 160 0.121 / 0.141, 20,000 x 256 0.244 / 0.233, 40,000 x 256 0.404 / 0.451, 60,000 x 256
#: 0.638 / 0.941)
LANCZOS_MAX_FACTOR_SIZE = 3_200_000
#: factors at least this wide go by Lanczos whatever their rows (the dense route's p^2 per row dominates)
LANCZOS_ALWAYS_RANK = 512
#: Lanczos steps of :func:`factor_lanczos_extremes` (the largest eigenvalue of each sign is what it is for:
#: on the 5,000 x 256 principal factors of the three kernels of the default exact command at n = m = 2,500,
#: 201 labellings, the largest relative error against a float64 eigensolve: for the narrowest bandwidth
#: (x0.5, the flattest spectrum) 0.27 / 3.8e-3 / 1.8e-6 at 8 / 12 / 16 steps, the others 2.4e-4 or less at 8;
#: all three 1.8e-6 or less at 16, as at 24)
TOP_LANCZOS_STEPS = 16


def lanczos_subspace(factor: Any) -> bool:
    """Whether :func:`subspace_extremes` answers for ``factor`` by Lanczos (a numpy factor wider than
    :data:`SUBSPACE_DENSE_RANK` and of at most :data:`LANCZOS_MAX_FACTOR_SIZE` entries, or at least
    :data:`LANCZOS_ALWAYS_RANK` wide: its products use the BLAS's threads) rather than by dense solves. A
    rule on the shape alone: the same statistic for every labelling and every run."""
    if not isinstance(factor, np.ndarray) or factor.shape[1] <= SUBSPACE_DENSE_RANK:
        return False
    rows, rank = factor.shape
    return rows * rank <= LANCZOS_MAX_FACTOR_SIZE or rank >= LANCZOS_ALWAYS_RANK


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


def principal_factor(operand: tuple[str, Any], rank: int, *, seed: int = 0) -> Any:
    """A factor P (N x at most ``rank``) with P P^T close to the best rank-``rank`` approximation of G, where
    G = F F^T for ``("features", F)`` and G itself for ``("gram", G)``: the seeded Nystrom approximation
    G Om (Om^T G Om)^+ Om^T G with a Gaussian Om of ``rank`` + 10 columns, computed stably with a small
    shift (Tropp, Yurtsever, Udell & Cevher 2017, "Fixed-rank approximation of a positive-semidefinite
    matrix from streaming data", Alg. 3), truncated to its ``rank`` leading directions. One product G Om
    (two for a factor); None when the operand is already that narrow.

    P depends on G and the seeded draw only, never on sample weights: P^T diag(w) P (Lambda restricted to
    G's leading principal subspace) is one function applied alike to every labelling of the samples, so a
    permutation test on its extremes is exact. Those extremes approach F^T diag(w) F's as the part of G's
    spectrum left out shrinks. Same backend and dtype as the operand.
    """
    kind, a = operand
    xp, on = array_namespace(a), backend_of(a)
    size = a.shape[0]
    if (kind == "features" and a.shape[1] <= rank) or size <= rank:
        return None
    name = "float32" if a.dtype == xp.float32 else "float64"
    sketch = on.asarray(np.random.default_rng(seed).standard_normal((size, min(size, rank + 10))), dtype=name)
    y = a @ sketch if kind == "gram" else a @ (xp.matrix_transpose(a) @ sketch)  # G Om (N x l)
    with blas_threads_for(size):  # (N x l by l x l products: the BLAS's threads above SMALL_BLAS rows)
        return _nystrom_factor(y, sketch, rank, precision=name, dtype=a.dtype)


def _nystrom_factor(y: Any, sketch: Any, rank: int, *, precision: str, dtype: Any) -> Any:
    """:func:`principal_factor` from G Om and Om: the stabilised Nystrom factor's ``rank`` leading
    directions (in ``dtype``; the shift from ``precision``, the one G was computed in)."""
    xp = array_namespace(y)
    y, sketch = xp.asarray(y, dtype=xp.float64), xp.asarray(sketch, dtype=xp.float64)
    eps = float(np.finfo(np.float32 if precision == "float32" else np.float64).eps)
    # Tropp et al.'s shift, eps |Y|_2 (|Y|_2 from the l x l Y^T Y): G's and Y's round-off in a's precision
    shift = eps * float(xp.sqrt(xp.max(xp.linalg.eigvalsh(xp.matrix_transpose(y) @ y))))
    for _ in range(4):  # (a core that round-off left indefinite: a larger shift)
        core = xp.matrix_transpose(sketch) @ (y + shift * sketch)  # Om^T (G + shift) Om
        try:
            chol = xp.linalg.cholesky((core + xp.matrix_transpose(core)) / 2)
            break
        except Exception:  # numpy's LinAlgError, torch's _LinAlgError
            shift = max(10 * shift, 1e-30)
    y = y + shift * sketch
    f = y @ xp.matrix_transpose(xp.linalg.inv(chol))  # F F^T = G Om core^-1 Om^T G (+ shift)
    vals, vecs = xp.linalg.eigh(xp.matrix_transpose(f) @ f)  # F = U S V^T: S^2 = vals, U = F V / S
    vals, vecs = vals[-rank:], vecs[:, -rank:]
    scale = xp.sqrt(xp.clip(vals - shift, min=0.0)) / xp.sqrt(xp.clip(vals, min=1e-300))
    return xp.asarray(f @ (vecs * scale[None, :]), dtype=dtype)  # U sqrt(S^2 - shift)


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

    ``steps`` (default :data:`TOP_LANCZOS_STEPS`) Lanczos steps for all columns in lockstep (two products
    with P per step, in P's precision), every run from the same start vector (one draw from ``seed``), so a
    labelling's numbers are one function of its weights. The largest eigenvalue of each sign (what a
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
    start = np.tile(rng.standard_normal(rank), (w.shape[0], 1))
    steps = min(rank, TOP_LANCZOS_STEPS if steps is None else int(steps))
    ritz = _lanczos_on_host_checks(lambda q, wt: (wt * (q @ ft)) @ f, None, w, rank, steps=steps,
                                   rng=rng, start=start)
    pos, neg = signed_extremes(ritz, n_top)
    if whole_first and w.shape[0]:
        f64 = np.asarray(f, dtype=np.float64)
        whole = signed_extremes(np.linalg.eigvalsh(f64.T @ (np.asarray(weights, np.float64)[:, :1] * f64)),
                                n_top)
        for mine, dense in zip((pos, neg), whole, strict=True):
            mine[0, 1:] = np.minimum(dense[1:], mine[0, 0])
    return pos, neg


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
    import scipy.linalg

    out = np.empty(alpha.shape)
    for k in range(alpha.shape[0]):
        out[k] = scipy.linalg.eigvalsh_tridiagonal(alpha[k], beta[k, : alpha.shape[1] - 1])
    return out


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
    subspace continues from a fresh random vector orthogonal to its basis (drawn from ``rng``)."""
    xp, basis, images, name = _krylov_storage(wt, metric, steps, dim)
    on = backend_of(wt)
    dot, orthogonalise, normalise = _krylov_helpers(xp, metric, basis, images)
    b = wt.shape[0]
    alpha = np.zeros((b, steps))
    beta = np.zeros((b, steps))
    q, g = _unit_start(normalise, metric, on.asarray(start, dtype=name))
    for j in range(steps):
        u = _store_and_apply(apply, wt, basis, images, q, g, j)
        alpha[:, j] = to_numpy(dot(g, u))
        u = orthogonalise(u, j + 1)
        if j == steps - 1:
            break
        u, gu, norms = normalise(u)
        norms_h = np.asarray(to_numpy(norms), dtype=np.float64)
        scale = np.maximum(np.max(np.abs(alpha[:, : j + 1]), axis=1), 1e-30)
        dead = norms_h <= 1e-5 * scale
        if dead.any():  # invariant subspace found: continue from a fresh vector orthogonal to the basis
            rows = on.asarray(np.flatnonzero(dead))
            fresh = orthogonalise(on.asarray(rng.standard_normal((rows.shape[0], dim)), dtype=name), j + 1,
                                  rows)
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

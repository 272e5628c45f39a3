"""Array operations the core needs where the array API standard and numpy/torch differ.

Core functions are written once over the array API (:mod:`promptprism.backend`): ``xp = array_namespace(x)``,
``@``, ``xp.sqrt``, ... Each function here is the one small place where a backend gets its own branch:
numpy keeps the SciPy/LAPACK routine that is best on the CPU (divide-and-conquer ``eigh``, ARPACK for a few
vectors, ``bincount``), torch gets its native equivalent. Every function takes and returns arrays of the
backend of its inputs.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._two_stage import eigvalsh_two_stage, has_two_stage
from .backend import array_namespace, is_numpy

#: matrices up to this size are faster on one BLAS thread than on several: thread start-up and
#: synchronisation dominate. Quiet 2-core machine: a 300-sample Scendi bootstrap (200 replicates) 13.9 s on
#: two threads, 3.2 s on one; PromptSplit's permutation test at N = 400: 0.19 s vs 0.11 s, but at
#: N = 1,000 two threads win (0.37 s vs 0.51 s). On a busy machine the gap at small sizes is far larger.
SMALL_BLAS = 512


def blas_threads_for(size: int) -> Any:
    """A context for a loop of products of matrices of side ``size``: one BLAS thread when ``size`` is at
    most :data:`SMALL_BLAS`, the library's default otherwise."""
    return contextlib.nullcontext() if size > SMALL_BLAS else blas_limits(1)


_CONTROLLER: dict = {}


def _blas_controller() -> Any:
    """threadpoolctl's view of the BLAS libraries, made once per set of loaded modules (a fresh
    ``threadpool_limits`` scans every shared library of the process: ~1 ms once SciPy is loaded, paid per
    block of relabellings by the permutation test)."""
    import sys

    key = len(sys.modules)
    if _CONTROLLER.get("key") != key:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.update(key=key, controller=ThreadpoolController().select(user_api="blas"))
    return _CONTROLLER["controller"]


def blas_limits(threads: int) -> Any:
    """A context limiting the BLAS libraries to ``threads`` threads (threadpoolctl's ``limit``)."""
    return _blas_controller().limit(limits=threads)


def blas_thread_counts() -> list[int]:
    """Each BLAS library's thread setting now (empty where threadpoolctl knows none, e.g. Apple's
    Accelerate)."""
    return [lib.num_threads for lib in _blas_controller().lib_controllers]


def blas_thread_count() -> int:
    """The BLAS libraries' thread setting now (the smallest over the libraries; 1 when none is loaded)."""
    return min(blas_thread_counts() or [1])


def pool_workers(cap: int | None = None) -> int:
    """How many threads :func:`map_in_threads` runs on by default: the BLAS's thread count now (the thread
    budget of the command), at most ``cap`` (tasks that each hold large blocks)."""
    n = blas_thread_count()
    return max(1, n if cap is None else min(n, int(cap)))


def map_in_threads(fn: Any, items: Sequence, workers: int | None = None, *, cap: int | None = None) -> list:
    """[fn(x) for x in items], in order, on a pool of ``workers`` threads (default :func:`pool_workers`
    (``cap``)) under one BLAS thread each: one BLAS thread per product gives the same numbers whatever the
    number of workers, and numpy's products and element-wise functions release the interpreter, so many
    small solves, or large tasks' element-wise work between their products, run side by side (several BLAS
    threads on each small product cost far more than they give: on 2 busy cores, K-way's 1,275 comparison
    spectra took 83 s that way, 5.4 s on one thread)."""
    items = list(items)
    workers = pool_workers(cap) if workers is None else int(workers)
    if workers <= 1 or len(items) < 2:
        with blas_limits(1):
            return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with blas_limits(1), ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


def mirror_upper(a: np.ndarray, block: int = 512) -> np.ndarray:
    """Copy the strict upper triangle of the square numpy array ``a`` onto its lower triangle, in place,
    block by block (no full-size temporary, unlike ``triu(a) + triu(a, 1).T``). Returns ``a``."""
    d = a.shape[0]
    for j0 in range(0, d, block):
        j1 = min(d, j0 + block)
        a[j1:, j0:j1] = a[j0:j1, j1:].T
        diag = a[j0:j1, j0:j1]
        diag[...] = np.triu(diag) + np.triu(diag, 1).T
    return a


def symmetric_part(a: Any) -> Any:
    """(a + a^T) / 2 as a new array; numpy: a Fortran-ordered copy averaged block by block in place (one
    d x d allocation instead of two)."""
    if not is_numpy(a):
        return 0.5 * (a + a.T)
    out = np.array(a, order="F", dtype=np.result_type(a.dtype, np.float32))
    d, block = out.shape[0], 512
    for j0 in range(0, d, block):
        j1 = min(d, j0 + block)
        upper, lower = out[j0:j1, j1:], out[j1:, j0:j1]
        upper += lower.T
        upper *= 0.5
        lower[...] = upper.T
        diag = out[j0:j1, j0:j1]
        diag[...] = 0.5 * (diag + diag.T)
    return out


def column_gram(f: Any) -> Any:
    """f^T f (columns' inner products) of an (n, d) array, in f's precision. numpy recognises a product with
    its own transpose and runs BLAS syrk (half the flops of a general product), filling both triangles from
    one: the result is exactly symmetric. torch: a plain product."""
    if is_numpy(f):
        f = np.ascontiguousarray(f)
    return f.T @ f


def row_norms(a: Any) -> Any:
    """|a_i| per row, as a column (n, 1), computed on rows first scaled to max |value| 1, so squares neither
    overflow (rows near 1e300) nor underflow (rows near 1e-300); 0 for all-zero rows."""
    xp = array_namespace(a)
    scale = xp.max(xp.abs(a), axis=1, keepdims=True)
    safe = xp.where(scale > 0, scale, xp.ones_like(scale))
    return xp.linalg.vector_norm(a / safe, axis=1, keepdims=True) * scale


def column_median(a: Any) -> Any:
    """The coordinate-wise median of the rows of ``a`` (torch: the lower median): a centre that a few
    extreme rows cannot move, unlike the mean."""
    if not is_numpy(a):
        return a.median(dim=0).values
    n = a.shape[0]
    if n < 64 or not np.isfinite(a).all():  # (np.median's NaN rules)
        return np.median(a, axis=0)
    rows = np.ascontiguousarray(a.T)  # one column per row: partitions over contiguous memory, 2-3x faster
    k = n // 2
    if n % 2:
        return np.partition(rows, k, axis=1)[:, k]
    part = np.partition(rows, (k - 1, k), axis=1)
    return (part[:, k - 1] + part[:, k]) / 2


def index_array(indices: Any, like: Any) -> Any:
    """``indices`` (a numpy int array) as an index array of ``like``'s backend and device."""
    if is_numpy(like):
        return np.asarray(indices, dtype=np.intp)
    import torch

    return torch.as_tensor(np.asarray(indices, dtype=np.int64), device=like.device)


def as_like(values: Any, like: Any) -> Any:
    """``values`` (numpy or a sequence) as an array of ``like``'s backend, device and dtype."""
    if is_numpy(like):
        return np.asarray(values, dtype=like.dtype)
    import torch

    return torch.as_tensor(values, dtype=like.dtype, device=like.device)


def device_of(like: Any) -> dict:
    """``{'device': ...}`` for a torch array, ``{}`` for numpy: keyword arguments that create an array
    (``xp.zeros(..., **device_of(a))``) where ``like`` lives."""
    return {} if is_numpy(like) else {"device": like.device}


def grid(rows: Any, cols: Any, like: Any) -> tuple[Any, Any]:
    """Index arrays (rows[:, None], cols[None, :]) selecting the block rows x cols of ``like`` (read or write;
    numpy's ``np.ix_``, on either backend)."""
    r, c = index_array(rows, like), index_array(cols, like)
    return r[:, None], c[None, :]


def symmetric_eigh(a: Any, *, values_only: bool = False) -> Any:
    """Eigenvalues (ascending) and, unless ``values_only``, eigenvectors of the symmetric part of ``a``.

    numpy: LAPACK divide and conquer through SciPy (``evd``); torch: ``torch.linalg.eigh``/``eigvalsh``.
    """
    a = symmetric_part(a)
    if is_numpy(a):
        import scipy.linalg

        if values_only:
            vals = eigvalsh_two_stage(a, overwrite_a=True) if a.shape[0] >= TWO_STAGE_MIN else None
            return vals if vals is not None else scipy.linalg.eigvalsh(a, driver="evd", check_finite=False,
                                                                      overwrite_a=True)
        return scipy.linalg.eigh(a, driver="evd", check_finite=False, overwrite_a=True)
    xp = array_namespace(a)
    return xp.linalg.eigvalsh(a) if values_only else tuple(xp.linalg.eigh(a))


#: numpy: above this size the top eigenvectors come from the tridiagonal form of the values-only solve
DENSE_VECTORS_MAX = 1000
#: numpy: from this size on the eigenvalues come from LAPACK's two-stage reduction (:mod:`._two_stage`)
#: and the top vectors from Lanczos. Two-stage vs divide and conquer, quiet 2-core machine, float64:
#: d = 3,000 1.4 s vs 1.6 s, 4,000 3.1 vs 3.5, 5,000 3.9-4.8 vs 7.0-7.9; float32: 1.2 vs 0.7, 1.7 vs 1.6,
#: 2.5 vs 4.0
TWO_STAGE_MIN = 4500


def values_and_top_vectors(a: Any, n_top: int) -> tuple[Any, Any]:
    """Every eigenvalue of a symmetric matrix (descending) and the unit eigenvectors of the top ``n_top``.

    numpy: up to ``DENSE_VECTORS_MAX`` one divide-and-conquer solve; above it one tridiagonal reduction
    serves both (:func:`tridiagonal_values_and_top_vectors`: the reduction is the whole cost, the vectors of a
    full solve or a separate Lanczos run cost more than it). torch: one ``eigh`` (on a GPU the full solve is
    the fast one).
    """
    xp = array_namespace(a)
    size = a.shape[0]
    if n_top <= 0:
        return xp.flip(symmetric_eigh(a, values_only=True), axis=0), a[:, :0]
    if not is_numpy(a) or size <= DENSE_VECTORS_MAX or n_top + 1 >= size // 2:
        vals, vecs = symmetric_eigh(a)
        return xp.flip(vals, axis=0), xp.flip(vecs, axis=1)[:, :n_top]
    pair = two_stage_values_and_top_vectors(a, n_top) if size >= TWO_STAGE_MIN else None
    return pair if pair is not None else tridiagonal_values_and_top_vectors(a, n_top)


def values_and_top_vectors_of(matrices: list[Any], n_top: int) -> list[tuple[Any, Any]]:
    """:func:`values_and_top_vectors` of each matrix. numpy matrices of at least :data:`TWO_STAGE_MIN` are
    solved side by side, one BLAS thread each: the two-stage reduction scales poorly over threads (quiet
    2-core machine, two d = 5,000 solves: 8.3-9.9 s one after the other on two threads, 7.3-7.9 s side by
    side). The results are those of one-thread solves."""
    if len(matrices) > 1 and all(is_numpy(m) and m.shape[0] >= TWO_STAGE_MIN for m in matrices):
        from concurrent.futures import ThreadPoolExecutor

        with blas_limits(1), ThreadPoolExecutor(len(matrices)) as pool:
            return list(pool.map(lambda m: values_and_top_vectors(m, n_top), matrices))
    return [values_and_top_vectors(m, n_top) for m in matrices]


def two_stage_values_and_top_vectors(a: np.ndarray, n_top: int) -> tuple[np.ndarray, np.ndarray] | None:
    """All eigenvalues (descending, LAPACK's two-stage solver) and the top ``n_top`` unit eigenvectors
    (Lanczos, ARPACK ``eigsh`` to machine precision, a fixed start vector) of the symmetric part of ``a``.

    The Lanczos values must equal the top of the full spectrum (to 1000 eps of its largest magnitude): a
    Krylov method can miss a copy of a repeated eigenvalue, and then None is returned (as where the two-stage
    solver is unavailable, or ARPACK fails) and the caller takes the tridiagonal route.
    """
    import scipy.sparse.linalg as spla

    if not has_two_stage(a.dtype):
        return None
    sym = symmetric_part(a)
    size = sym.shape[0]
    v0 = np.full(size, 1.0 / np.sqrt(size), dtype=sym.dtype)
    try:
        top, vecs = spla.eigsh(sym, k=n_top, which="LA", v0=v0, tol=0.0)
    except spla.ArpackError:  # (no convergence is one too) e.g. a zero matrix: the tridiagonal route answers
        return None
    vals = eigvalsh_two_stage(sym, overwrite_a=True)[::-1]
    order = np.argsort(top)[::-1]
    scale = max(float(np.max(np.abs(vals))), np.finfo(np.float64).tiny)
    if np.max(np.abs(top[order] - vals[:n_top])) > 1e3 * np.finfo(sym.dtype).eps * scale:
        return None
    return vals, np.asarray(vecs[:, order], dtype=sym.dtype)


def tridiagonal_values_and_top_vectors(a: np.ndarray, n_top: int) -> tuple[np.ndarray, np.ndarray]:
    """All eigenvalues (descending) and the top ``n_top`` unit eigenvectors of the symmetric part of ``a``
    from ONE Householder tridiagonalisation A = Q T Q^T (LAPACK ``sytrd``, the O(d^3) step):

    * the eigenvalues are T's, by ``sterf`` (what ``syevd`` does for values only: the same numbers);
    * the top vectors are Q z for T's top eigenvectors z (MRRR, ``stemr``), Q applied as its d - 1
      reflectors H(j) = I - tau_j v_j v_j^T by LAPACK ``ormqr`` (blocked, O(d^2 n_top)).
    """
    from scipy.linalg import eigh_tridiagonal, eigvalsh_tridiagonal
    from scipy.linalg.lapack import get_lapack_funcs

    a = symmetric_part(a)
    size = a.shape[0]
    sytrd, sytrd_lwork = get_lapack_funcs(("sytrd", "sytrd_lwork"), (a,))
    lwork, info = sytrd_lwork(size, lower=1)
    c, diag, off, tau, info = sytrd(a, lower=1, lwork=max(int(lwork), size), overwrite_a=1)
    if info != 0:  # pragma: no cover - sytrd fails only on invalid arguments
        raise RuntimeError(f"LAPACK sytrd failed (info = {info})")
    vals = eigvalsh_tridiagonal(diag, off, lapack_driver="sterf", check_finite=False)[::-1]
    top, z = eigh_tridiagonal(diag, off, select="i", select_range=(size - n_top, size - 1),
                              check_finite=False)
    z = np.array(z[:, ::-1], dtype=a.dtype, order="F")  # descending
    # Q z, Q = H(0) ... H(d-2): for the lower form Q = diag(1, Q'), Q' the orthogonal factor whose reflectors
    # sytrd stored as a QR factorisation stores them in c[1:, :-1] (what LAPACK's ormtr does, by ormqr)
    ormqr, = get_lapack_funcs(("ormqr",), (a,))
    applied, _, info = ormqr("L", "N", c[1:, :-1], tau, z[1:], max(1, 64 * z.shape[1]), overwrite_c=1)
    if info != 0:  # pragma: no cover - ormqr fails only on invalid arguments
        raise RuntimeError(f"LAPACK ormqr failed (info = {info})")
    z[1:] = applied
    return vals, z


#: :func:`tridiagonal_eigh` forms the matrix and diagonalises it with numpy up to this size (a few ms; and no
#: import of ``scipy.linalg``, ~0.1 s of a command's start-up), LAPACK's tridiagonal solvers above (O(k^2))
TRIDIAGONAL_DENSE_MAX = 256


def tridiagonal_eigh(diag: np.ndarray, off: np.ndarray, *, values_only: bool = False) -> Any:
    """Eigenvalues (ascending) and, unless ``values_only``, unit eigenvectors of the symmetric tridiagonal
    matrix with diagonal ``diag`` (..., k) and off-diagonal ``off`` (..., k - 1); leading axes are a stack.
    Up to :data:`TRIDIAGONAL_DENSE_MAX`: the matrix formed and ``numpy.linalg.eigh``; above,
    ``scipy.linalg.eigh_tridiagonal``."""
    diag, off = np.asarray(diag, dtype=np.float64), np.asarray(off, dtype=np.float64)
    size = diag.shape[-1]
    if size <= TRIDIAGONAL_DENSE_MAX:
        mat = np.zeros((*diag.shape, size))
        steps = np.arange(size)
        mat[..., steps, steps] = diag
        mat[..., steps[1:], steps[:-1]] = off[..., : size - 1]  # (eigh reads the lower triangle)
        return np.linalg.eigvalsh(mat) if values_only else np.linalg.eigh(mat)
    from scipy.linalg import eigh_tridiagonal

    if diag.ndim > 1:
        parts = [tridiagonal_eigh(d, o, values_only=values_only) for d, o in zip(diag, off, strict=True)]
        return np.stack(parts) if values_only else tuple(np.stack(x) for x in zip(*parts, strict=True))
    return eigh_tridiagonal(diag, off[: size - 1], eigvals_only=values_only, check_finite=False)


def group_sum(values: Any, groups: np.ndarray, n_groups: int) -> Any:
    """Row sums per group: out[g] = sum of ``values[i]`` over rows i with ``groups[i] == g`` (1-d or 2-d)."""
    if is_numpy(values):
        if values.ndim == 1:
            return np.bincount(groups, weights=values, minlength=n_groups).astype(values.dtype)
        import scipy.sparse

        onehot = scipy.sparse.csr_matrix((np.ones(len(groups), dtype=values.dtype),
                                          (groups, np.arange(len(groups)))), shape=(n_groups, len(groups)))
        return np.asarray(onehot @ values)
    import torch

    out = torch.zeros((n_groups, *values.shape[1:]), dtype=values.dtype, device=values.device)
    return out.index_add_(0, index_array(groups, values), values)


def cholesky_solve_right(gram: Any, rhs: Any) -> Any:
    """X = rhs G^-1 for a symmetric positive definite G (``gram``), by its Cholesky factor."""
    if is_numpy(gram):
        import scipy.linalg

        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(gram), rhs.T).T
    import torch

    return torch.cholesky_solve(rhs.T, torch.linalg.cholesky(gram)).T


def trace(a: Any) -> float:
    """The trace of a square matrix, as a Python float."""
    xp = array_namespace(a)
    return float(xp.sum(xp.linalg.diagonal(a)))


#: rows at each end of an array that :func:`edge_digest` reads
DIGEST_ROWS = 8


def sorted_subsample(population: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` of ``population`` (an int n: 0..n-1; or an array of items) drawn without replacement by
    ``rng``, in increasing order: every seeded subsample of rows, one way (``np.sort(rng.choice(...))``)."""
    return np.sort(rng.choice(population, size=size, replace=False))


def edge_digest(*arrays: Any, rows: int = DIGEST_ROWS) -> bytes:
    """A digest of the row count of the first array and of the first and last ``rows`` rows of each (as
    float64): cheap on memory-mapped or streamed arrays, and the same for the same data in any argument
    position. What a seeded draw over several sets is ordered by, so that the sets' order does not change it
    (:func:`canonical_order`)."""
    n = len(arrays[0])
    pick = np.unique(np.r_[np.arange(min(n, rows)), np.arange(max(0, n - rows), n)])
    h = hashlib.sha256(str(n).encode())
    for part in arrays:
        h.update(np.ascontiguousarray(np.asarray(part[pick], dtype=np.float64)).tobytes())
    return h.digest()


def canonical_order(digests: list[bytes]) -> np.ndarray:
    """The positions of several sets sorted by their :func:`edge_digest` (ties keep the given order): drawing
    in this order makes a seeded draw over the sets one function of the sets, not of their order."""
    return np.array(sorted(range(len(digests)), key=digests.__getitem__), dtype=np.int64)

"""Squared distances |a_i - b_j|^2: the one routine every kernel and method reads its distances from.

Pure functions over arrays, numpy or torch (the array API): numpy in, numpy out; torch in, torch out, on its
device and differentiable. One cancellation strategy (:func:`squared_distances`): the rows centred on their
coordinate-wise median, then direct differences for small blocks, the expansion |a|^2 + |b|^2 - 2 <a, b>
for large ones with the pairs that cancelled recomputed directly; numpy's expansion a block of rows at a
time, on the BLAS's threads (:func:`_expanded_blocks`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from array_api_compat import device

from ..array_ops import blas_thread_count, column_median, map_in_threads, mirror_upper
from ..backend import array_namespace, as_float, float_dtype, populated_empty, scalar, unpopulated_empty

#: blocks up to this many pair-coordinates (n * m * d) get their distances from direct differences
DIRECT_MAX = 2**22
#: on the expansion route, pairs with |a - b|^2 below this share of |a|^2 + |b|^2 (centred) have cancelled
#: and are recomputed by direct differences
CLOSE_PAIRS = 1e-6
#: the centre of :func:`squared_distances` is the coordinate-wise median of about this many evenly spaced
#: rows (a centre only has to be robust, not exact: the distances do not depend on it)
CENTER_ROWS = 1024


def _dtype(xp, dtype) -> object:
    """``xp``'s dtype of the numpy dtype (or name) ``dtype``."""
    return float_dtype(xp, np.dtype(dtype).name)


def _tracks_gradient(x: Any) -> bool:
    """Whether ``x`` is a torch tensor autograd records (then nothing is overwritten in place)."""
    return bool(getattr(x, "requires_grad", False))


def _scaled(x: Any, factor: Any) -> Any:
    """x * factor, in place unless autograd needs x's value."""
    if _tracks_gradient(x) or _tracks_gradient(factor):
        return x * factor
    x *= factor
    return x


def _direct_rows(xp, a, b) -> Any:
    """sum_k (a_ik - b_jk)^2 by direct differences, in row blocks of bounded memory: (n, m)."""
    n, m, d = a.shape[0], b.shape[0], a.shape[1]
    d2 = xp.empty((n, m), dtype=a.dtype, device=device(a))
    step = max(1, DIRECT_MAX // max(m * d, 1))
    for start in range(0, n, step):
        diff = a[start : start + step, None, :] - b[None, :, :]
        d2[start : start + step, ...] = xp.sum(diff * diff, axis=2)
    return d2


def _expanded(xp, a, b, same: bool) -> Any:
    """|a|^2 + |b|^2 - 2 <a, b>, with the pairs where it cancelled recomputed by direct differences."""
    sq_a = xp.sum(a * a, axis=1)
    sq_b = sq_a if same else xp.sum(b * b, axis=1)
    d2 = a @ b.T
    d2 = _scaled(d2, -2.0)
    d2 = d2 + sq_a[:, None] + sq_b[None, :] if _tracks_gradient(d2) else _add_norms(d2, sq_a, sq_b)
    step = max(1, DIRECT_MAX // max(b.shape[0], 1))
    top_b = scalar(xp.max(sq_b)) if sq_b.shape[0] else 0.0
    for start in range(0, a.shape[0], step):
        _recompute_cancelled(xp, a, b, d2, start, start + step, sq_a, sq_b, top_b)
    return d2


def _recompute_cancelled(xp, a, b, d2, start: int, stop: int, sq_a, sq_b, top_b: float) -> None:
    """In rows ``start:stop`` of the expansion ``d2``, the pairs that cancelled (below :data:`CLOSE_PAIRS`
    of |a|^2 + |b|^2) recomputed by direct differences, in place: one pass with a bound for the rows, then
    the exact test on the few candidates, recomputed a bounded number at a time."""
    sq_rows = sq_a[start:stop]
    bound = CLOSE_PAIRS * (scalar(xp.max(sq_rows)) + top_b) if sq_rows.shape[0] else 0.0
    rows, cols = xp.nonzero(d2[start:stop, ...] <= bound)
    keep = d2[rows + start, cols] <= CLOSE_PAIRS * (sq_rows[rows] + sq_b[cols])
    rows, cols = rows[keep] + start, cols[keep]
    per = max(1, DIRECT_MAX // max(a.shape[1], 1))  # pairs recomputed per step: bounded memory
    for lo in range(0, rows.shape[0], per):
        r, c = rows[lo : lo + per], cols[lo : lo + per]
        diff = a[r] - b[c]
        d2[r, c] = xp.sum(diff * diff, axis=1)


def _add_norms(d2, sq_a, sq_b):
    d2 += sq_a[:, None]
    d2 += sq_b[None, :]
    return d2


#: rows of a numpy distance matrix the expansion route computes and finishes at a time: every pass over a
#: block (norms, the cancelled pairs' test, the clean-up, a kernel's exp) runs while it is in the cache,
#: instead of one pass over the whole N x M matrix each (256 x 5,000 float64: 10 MB)
BLOCK_ROWS = 256


def _expanded_blocks(a: np.ndarray, b: np.ndarray, same: bool, finish: Any = None) -> np.ndarray:
    """:func:`_expanded` for numpy rows, :data:`BLOCK_ROWS` rows at a time, each block finished in place
    while in cache: cancelled pairs recomputed by direct differences, NaN (inf - inf) to inf, negatives to 0,
    the diagonal of a matrix of ``a`` with itself to 0, then ``finish(block)`` when given (a kernel's
    elementwise map). A matrix of ``a`` with itself is computed from its diagonal block on (half the product
    and half the finishing) and mirrored: symmetric bit for bit. Under several BLAS threads the blocks run on
    as many threads, one BLAS thread each, and map the result's pages as they write them
    (:func:`~promptprism.backend.unpopulated_empty`); else the pages are mapped at allocation
    (:func:`~promptprism.backend.populated_empty`)."""
    n, m = a.shape[0], b.shape[0]
    sq_a = np.einsum("ij,ij->i", a, a)
    sq_b = sq_a if same else np.einsum("ij,ij->i", b, b)
    starts = range(0, n, BLOCK_ROWS)
    workers = min(blas_thread_count(), len(starts))
    d2 = (unpopulated_empty if workers > 1 else populated_empty)((n, m), a.dtype)
    top_b = float(sq_b.max()) if m else 0.0
    # NaN needs an inf - inf: impossible when every squared norm is finite and the products cannot overflow
    huge = float(np.finfo(a.dtype).max) / 8
    may_nan = not (np.all(np.isfinite(sq_a)) and top_b < huge and (n == 0 or float(sq_a.max()) < huge))

    def rows(start: int) -> None:
        stop = min(n, start + BLOCK_ROWS)
        first = start if same else 0  # (the first column computed: the lower triangle is mirrored)
        block = d2[start:stop, first:]
        np.matmul(a[start:stop], b[first:].T, out=block)
        block *= -2.0
        block += sq_a[start:stop, None]
        block += sq_b[None, first:]
        _recompute_cancelled(np, a, b[first:], d2[:, first:], start, stop, sq_a, sq_b[first:], top_b)
        if may_nan:
            block[np.isnan(block)] = np.inf
        np.maximum(block, 0.0, out=block)
        if same:
            i = np.arange(stop - start)
            block[i, i] = 0.0
        if finish is not None:
            finish(block)
        if same:  # (the blocks' regions, above and mirrored below, do not overlap)
            mirror_upper(block[:, : stop - start])
            d2[stop:, start:stop] = block[:, stop - start:].T

    if workers <= 1:
        for start in starts:
            rows(start)
        return d2
    errors = np.geterr()  # (the caller's floating-point error handling: numpy keeps it per thread)

    def rows_as_called(start: int) -> None:
        with np.errstate(**errors):
            rows(start)

    # blocks on as many threads as the BLAS had, one BLAS thread each: the element-wise passes (norms, the
    # cancelled pairs' test, the clean-up, the kernel, the mirror) run beside each other's products
    map_in_threads(rows_as_called, list(starts), workers)
    return d2


def squared_distances(a, b=None, *, dtype: type = np.float64):
    """|a_i - b_j|^2, exact to round-off for any location of the data; never negative, never NaN.

    One cancellation strategy: the distance is translation invariant, so the rows are first centred on their
    coordinate-wise median (of about :data:`CENTER_ROWS` evenly spaced rows; robust: one row at 1e300 does not
    shift the others into round-off, as their mean would); then small blocks take direct differences
    sum_k (a_ik - b_jk)^2, large ones the expansion
    |a|^2 + |b|^2 - 2 <a, b>, in which the pairs that still cancelled (near-duplicates: below
    :data:`CLOSE_PAIRS` of their squared norms) are recomputed by direct differences, so a repeated row is at
    distance exactly 0 (numpy: :data:`BLOCK_ROWS` rows at a time). Squares beyond float64 give inf (a kernel
    value of 0). The centring is float64, the distances (and the result) in ``dtype``. numpy in, numpy out;
    torch in, torch out (on its device, with autograd intact).
    """
    return _distances(a, b, dtype)


def _distances(a, b, dtype, finish: Any = None):
    """:func:`squared_distances`, then ``finish(d2)`` in place (numpy's expansion route: on each block of
    rows while it is in the cache)."""
    xp = array_namespace(a)
    f8, dt = xp.float64, _dtype(xp, dtype)
    a = as_float(xp, a, f8)
    same = b is None
    b = a if same else as_float(xp, b, f8)
    n, m = a.shape[0], b.shape[0]
    # the median of every step-th row of [a; b], taken without stacking the two
    step = max(1, (n if same else n + m) // CENTER_ROWS)
    every = a[::step] if same else xp.concat([a[::step], b[(-n) % step :: step]], axis=0)
    center = column_median(every)
    # rows whose squares overflow: their distances are inf (kernel 0), never NaN, and no numpy warning
    with np.errstate(over="ignore", invalid="ignore"):
        a = _centred(xp, a, center, dt)
        b = a if same else _centred(xp, b, center, dt)
        return _centred_distances(xp, a, b, same, finish)


def _centred_distances(xp, a, b, same: bool, finish: Any = None):
    """The squared distances of :func:`_distances` between rows already centred (and in the result's dtype),
    then ``finish(d2)`` in place; the caller handles the floating-point errors."""
    n, m, d = a.shape[0], b.shape[0], a.shape[1]
    if n * m * d > DIRECT_MAX and isinstance(a, np.ndarray) and not _tracks_gradient(a):
        return _expanded_blocks(a, b, same, finish)
    d2 = _direct_rows(xp, a, b) if n * m * d <= DIRECT_MAX else _expanded(xp, a, b, same)
    d2 = xp.where(xp.isnan(d2), xp.inf, d2) if _tracks_gradient(d2) else _clean_inplace(xp, d2)
    if same:
        i = xp.arange(n, device=device(d2))
        d2[i, i] = 0.0
    if finish is not None:
        finish(d2)
    return d2


def _centred(xp, x, center, dtype):
    """x - center computed in float64 and stored in ``dtype`` (numpy: straight into the result, without a
    float64 temporary of x's size)."""
    if isinstance(x, np.ndarray) and not _tracks_gradient(x):
        out = np.empty(x.shape, dtype=dtype)
        return np.subtract(x, center, out=out, casting="same_kind")
    return xp.astype(x - center, dtype)


def _clean_inplace(xp, d2):
    d2[xp.isnan(d2)] = xp.inf
    d2[d2 < 0.0] = 0.0
    return d2

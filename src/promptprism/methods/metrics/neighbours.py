"""Exact k-NN radii and ball memberships from float32 GEMM blocks, re-checked in float64 near each radius.

The k-NN metrics (:mod:`.prdc`) need, for sets of distinct rows, (1) each row's squared distance to its k-th
nearest other row of its own set and (2) the pairs (i, j) of the two sets whose distance lies below one of
their radii. Both are first decided on float32 squared distances D from one GEMM per row block, and every
decision the float32 value cannot settle is taken on the exact float64 distance of that pair.

* One GEMM gives the distances: with the rows centred, L_i = [x_i, 1, |x_i|^2] and R_j = [-2 x_j, |x_j|^2, 1]
  in float32, L_i . R_j = |x_i|^2 + |x_j|^2 - 2 <x_i, x_j> = |x_i - x_j|^2, with no further pass over the
  block (the expansion works on numbers the size of the distances because the rows are centred).
* Its error is bounded: a dot product of n terms is within gamma_n sum_k |a_k b_k| of the exact one
  (Higham 2002, Accuracy and Stability of Numerical Algorithms, eq. 3.5; gamma_n = n u / (1 - n u),
  u = 2^-24, any summation order), here at most about 2 gamma_(d+2) (|x_i|^2 + |x_j|^2); rounding the
  centred rows to float32 moves |x_i - x_j|^2 by at most 4 u (|x_i|^2 + |x_j|^2) and rounding their squared
  norms by u (|x_i|^2 + |x_j|^2) (centring in float64 and the power-of-two scale add nothing of that
  order). So |D_ij - d_ij| <= m_ij = c (|x_i|^2 + |x_j|^2) with c = 2 (2 d + 16) u, over twice the bound
  (2 d + 9) u, plus an absolute allowance for products that fall to subnormals.
* Radii: the k-th smallest D of row i, t_i, brackets the exact k-th d_k: t_i - M_i <= d_k <= t_i + M_i
  (M_i = max_j m_ij). Entries with D_ij + m_ij < t_i - M_i lie below d_k for sure and are only counted;
  the others up to t_i + 2 M_i are recomputed exactly, and d_k is the right order statistic among them. t_i
  itself is found among the entries below a bound read off a sample of the columns (one comparison pass,
  no partition of whole rows), and within a set only the upper triangle of D is computed, each entry a
  candidate for its row and for its column.
* Memberships: pair (i, j) can lie below a radius r only when D_ij < r + m_ij; of those candidates, the
  ones within m_ij of either radius are decided on their exact distance, the others on D.

Exact distances are sum_k (a_k - b_k)^2 of the raw rows in float64 (direct differences, no cancellation).
With ``exact=False`` the float32 values decide (no margin, no re-check): the ``float32`` precision.
Memory: one float32 copy of each set's distinct rows (n x (d + 2)), one block of ``block_rows`` x n
distances with its masks per thread, and the candidates of the rows not settled yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...array_ops import map_in_threads

#: most threads the metrics' large tasks run on (each holds its own blocks); float32's unit round-off
MAX_THREADS, U32 = 4, 2.0**-24
#: columns of the sample whose k-th smallest distance bounds a row's k-th from above
SAMPLE_COLUMNS = 1024
#: rows per chunk of the rows' float64 mean; pair-coordinates per chunk of exact distances
CHUNK_ROWS, PAIR_BUDGET = 8192, 2**18
#: rows per chunk of the float32 forms: float64 temporaries in cache (10,000 x 2,048, 1 thread: 0.10 s)
FORM_CHUNK_ROWS = 512
#: columns of the sample rows' distances partitioned at a time for the rows' bounds
BOUND_COLUMNS = 4096


def margin_factor(dim: int) -> float:
    """c of the module docstring: |D_ij - d_ij| <= c (|x_i|^2 + |x_j|^2) for d = ``dim``."""
    return 2.0 * (2 * dim + 16) * U32


@dataclass(frozen=True)
class Rows:
    """The distinct rows of one set: ``data`` (any row-indexable array) and ``index`` (the distinct rows'
    indices into it, ascending; None when every row is distinct)."""

    data: Any
    index: np.ndarray | None

    def __len__(self) -> int:
        return int(self.data.shape[0] if self.index is None else self.index.size)

    @property
    def dim(self) -> int:
        """The number of columns."""
        return int(self.data.shape[1])

    def block(self, lo: int, hi: int) -> np.ndarray:
        """Distinct rows lo..hi in float64."""
        rows = self.data[lo:hi] if self.index is None else self.data[self.index[lo:hi]]
        return np.asarray(rows, dtype=np.float64)

    def take(self, idx: np.ndarray) -> np.ndarray:
        """The distinct rows ``idx`` in float64."""
        return np.asarray(self.data[idx if self.index is None else self.index[idx]], dtype=np.float64)

    def mean(self) -> np.ndarray:
        """The mean of the distinct rows, in float64 (chunked)."""
        total = np.zeros(self.dim)
        for lo in range(0, len(self), CHUNK_ROWS):
            total += self.block(lo, lo + CHUNK_ROWS).sum(axis=0)
        return total / max(len(self), 1)


@dataclass(frozen=True)
class Form:
    """One set's float32 GEMM operand: R = [-2 x, |x|^2, 1] of its distinct rows x = ``scale`` (row -
    ``shift``), ``scale`` a power of two that brings the largest centred row's norm near 1 (no float32
    overflow or underflow whatever the data's units), and ``sq``, the unscaled |row - shift|^2 in float64."""

    rows: Rows
    right: np.ndarray
    sq: np.ndarray
    shift: np.ndarray
    scale: float


def _power_of_two_scale(max_sq: float) -> float:
    return 1.0 if not max_sq > 0 else float(2.0 ** -np.round(0.5 * np.log2(max_sq)))


def _left(x: np.ndarray) -> np.ndarray:
    """L = [x, 1, |x|^2] in float32 of scaled, centred float64 rows (|x|^2 of the float32-rounded rows)."""
    out = np.empty((x.shape[0], x.shape[1] + 2), dtype=np.float32)
    out[:, :-2] = x
    wide = out[:, :-2].astype(np.float64)
    out[:, -2] = 1.0
    out[:, -1] = np.einsum("ij,ij->i", wide, wide)
    return out


def make_form(rows: Rows, shift: np.ndarray) -> Form:
    """The :class:`Form` of ``rows`` centred on ``shift`` (two passes over the rows)."""
    n, d = len(rows), rows.dim
    sq = np.empty(n)
    for lo in range(0, n, FORM_CHUNK_ROWS):
        x = rows.block(lo, lo + FORM_CHUNK_ROWS) - shift
        sq[lo : lo + x.shape[0]] = np.einsum("ij,ij->i", x, x)
    scale = _power_of_two_scale(float(sq.max(initial=0.0)))
    right = np.empty((n, d + 2), dtype=np.float32)
    for lo in range(0, n, FORM_CHUNK_ROWS):
        left = _left((rows.block(lo, lo + FORM_CHUNK_ROWS) - shift) * scale)
        hi = lo + left.shape[0]
        np.multiply(left[:, :d], -2.0, out=right[lo:hi, :d])  # exact in binary floating point
        right[lo:hi, d] = left[:, d + 1]
        right[lo:hi, d + 1] = 1.0
    return Form(rows, right, sq, shift, scale)


def rescaled(form: Form, max_sq: float, *, in_place: bool = True) -> Form:
    """``form`` at the scale of rows of largest centred squared norm ``max_sq`` (R times a power of two:
    exact), in place (``form`` is then stale) or, ``in_place`` False, on a copy where the scale changes."""
    scale = _power_of_two_scale(max_sq)
    right = form.right if in_place or scale == form.scale else form.right.copy()
    if scale != form.scale:
        f = scale / form.scale
        right[:, :-2] *= f
        right[:, -2] *= f * f
    return Form(form.rows, right, form.sq, form.shift, scale)


def _left_of_right(right: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """L = [x, 1, |x|^2] of rows lo..hi from their R (x = -R / 2, exact)."""
    d = right.shape[1] - 2
    out = np.empty((hi - lo, d + 2), dtype=np.float32)
    np.multiply(right[lo:hi, :d], -0.5, out=out[:, :d])
    out[:, d] = 1.0
    out[:, d + 1] = right[lo:hi, d]
    return out


def _slack(dim: int) -> float:
    """An absolute allowance (in scaled units, largest row norm ~1) for products that fall to subnormals."""
    return (dim + 2) * 2.0**-120


def _up32(t: np.ndarray) -> np.ndarray:
    """float32 thresholds at or above the float64 ``t`` (so a float32 comparison keeps every candidate)."""
    t32 = np.asarray(t, dtype=np.float32)
    return np.where(t32.astype(np.float64) < t, np.nextafter(t32, np.float32(np.inf)), t32)


def sparse_nonzero(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.nonzero`` of a C-contiguous 2-D boolean mask with few True entries, read 8 entries at a time."""
    rows, cols = mask.shape
    flat = mask.reshape(-1)
    whole = flat.size // 8 * 8
    words = np.flatnonzero(flat[:whole].view(np.uint64))
    pos = (words[:, None] * 8 + np.arange(8)).reshape(-1)
    pos = np.concatenate([pos[flat[pos]], whole + np.flatnonzero(flat[whole:])])
    return pos // cols, pos % cols


def segment_kth(rows: np.ndarray, values: np.ndarray, kth: int | np.ndarray, n_rows: int) -> np.ndarray:
    """The ``kth`` smallest (0-based; one for all rows or one per row) of ``values`` within each row label
    (``rows`` ascending, every row holding more than its ``kth`` values)."""
    counts = np.bincount(rows, minlength=n_rows)
    starts = np.cumsum(counts) - counts
    grid = np.full((n_rows, int(counts.max(initial=1))), np.inf, dtype=values.dtype)
    grid[rows, np.arange(rows.size) - starts[rows]] = values
    if np.ndim(kth) == 0:
        return np.partition(grid, kth, axis=1)[:, kth]
    return np.take_along_axis(np.sort(grid, axis=1), np.asarray(kth)[:, None], axis=1)[:, 0]


def exact_sq(a: Rows, ai: np.ndarray, b: Rows, bi: np.ndarray) -> np.ndarray:
    """|a[ai] - b[bi]|^2 pair by pair, by direct differences of the raw rows in float64."""
    out = np.empty(ai.size)
    step = max(1, PAIR_BUDGET // max(a.dim, 1))
    for lo in range(0, ai.size, step):
        diff = a.take(ai[lo : lo + step])
        diff -= b.take(bi[lo : lo + step])
        out[lo : lo + step] = np.einsum("ij,ij->i", diff, diff)
    return out


def _sample_columns(n: int, kth: int) -> np.ndarray | None:
    """Evenly spaced columns whose k-th smallest distance bounds a row's k-th from above (None for small
    sets: each row's own k-th is read off its whole row)."""
    size = max(SAMPLE_COLUMNS, n // 32, 4 * (kth + 1))
    return None if 2 * size >= n else np.unique(np.linspace(0, n - 1, size).round().astype(np.int64))


def _row_bounds(right: np.ndarray, sample: np.ndarray, kth: int, block_rows: int) -> np.ndarray:
    """Per row, the k-th smallest float32 distance to the ``sample`` columns (scaled units): at least k + 1
    distances of the row lie at or below it."""
    n = right.shape[0]
    sample = right[sample]
    bounds = np.empty(n)
    for lo in range(0, n, block_rows):
        part = _left_of_right(right, lo, min(n, lo + block_rows)) @ sample.T
        bounds[lo : lo + part.shape[0]] = np.partition(part, kth, axis=1)[:, kth]
    return bounds


def _by_row(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple:
    """(rows, columns, values) of the candidate parts, concatenated and sorted by row (stable)."""
    rows, cols, vals = (np.concatenate([p[i] for p in parts]) for i in range(3))
    order = np.argsort(rows, kind="stable")
    return rows[order], cols[order], vals[order]


def _settle_rows(form: Form, lo: int, hi: int, cand: tuple, kth: int, margin: np.ndarray, exact: bool
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Radii and closed-ball counts of rows lo..hi from their candidates (rows, columns, float32 values).

    Exact: the k-th smallest float32 value t bounds the exact k-th d_k: t - M <= d_k <= t + M (M: the row's
    largest margin). Candidates with D + m < t - M lie below d_k for sure and are only counted; those up to
    t + 2 M are recomputed, and d_k is the right order statistic among them.
    """
    rr, cc, vals = cand
    rr = rr - lo
    vals = vals.astype(np.float64)
    t = segment_kth(rr, vals, kth, hi - lo)
    if not exact:
        keep = vals <= t[rr]
        rr, vals = rr[keep], vals[keep] / form.scale**2
        r = t / form.scale**2
        return r, np.bincount(rr, weights=vals <= r[rr], minlength=hi - lo).astype(np.int64) - 1
    c, slack = margin_factor(form.rows.dim) * form.scale**2, _slack(form.rows.dim)
    pair = c * (form.sq[rr + lo] + form.sq[cc]) + slack  # each candidate's own margin
    low = (t - margin[lo:hi])[rr]
    below = vals + pair < low
    counted = np.bincount(rr[below], minlength=hi - lo)
    rest = ~below & (vals <= (t + 2.0 * margin[lo:hi])[rr])
    rr, cc = rr[rest], cc[rest]
    vals = exact_sq(form.rows, rr + lo, form.rows, cc)
    r = segment_kth(rr, vals, kth - counted, hi - lo)
    return r, counted + np.bincount(rr, weights=vals <= r[rr], minlength=hi - lo).astype(np.int64) - 1


def own_radii(form: Form, k: int, *, exact: bool, block_rows: int, visit: Callable | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """Squared distance of each distinct row of ``form`` to its k-th nearest other row (with k or fewer
    others: the farthest) and how many other rows its closed ball holds (k without ties).

    Distances are symmetric, so only the upper triangle is computed: row block [lo, hi) against columns
    lo..n, each entry a candidate of its row (D_ij <= bound_i + 2 m_i) and of its column (D_ij <= bound_j +
    2 m_j, the later rows), with bound_i the k-th smallest distance to a sample of the columns.
    ``visit(order)`` (position p of the pass holds distinct row ``order[p]``, None: p) returns a function
    shown each block once (block, lo): positions lo.. by lo.. (its square's lower part is not the triangle's).
    """
    right, n = form.right, len(form.rows)
    kth = min(k, n - 1)
    radii, held = np.zeros(n), np.zeros(n, dtype=np.int64)
    if kth < 1:
        return radii, held
    # candidates are chosen with the error margin even when the float32 values decide: the bound comes
    # from another product, whose entries may round differently
    margin = margin_factor(form.rows.dim) * form.scale**2 * (form.sq + float(form.sq.max())) \
        + _slack(form.rows.dim)
    sample = _sample_columns(n, kth)
    if sample is None:  # a small set: whole rows, each row's bound its own k-th
        seen = visit and visit(None)
        for lo in range(0, n, block_rows):
            hi = min(n, lo + block_rows)
            d2 = _left_of_right(right, lo, hi) @ right.T
            d2[np.arange(hi - lo), np.arange(lo, hi)] = 0.0  # itself, exactly
            if seen is not None:
                seen(d2[:, lo:], lo)
            bound = np.partition(d2, kth, axis=1)[:, kth].astype(np.float64)
            rr, cc = sparse_nonzero(d2 <= _up32(bound + 2.0 * margin[lo:hi])[:, None])
            radii[lo:hi], held[lo:hi] = _settle_rows(form, lo, hi, (rr + lo, cc, d2[rr, cc]), kth, margin,
                                                     exact)
        return radii, held
    step = min(block_rows, max(256, -(-n // 8)))
    if sample.size > block_rows:  # (the sample's distances to every row exceed one block: computed twice)
        thr = _up32(_row_bounds(right, sample, kth, block_rows) + 2.0 * margin)
        return _upper_pass(form, thr, margin, kth, exact, starts=list(range(0, n, step)),
                           visit=visit and visit(None))
    # the sample rows first: their distances to every row give every row's bound, and their upper
    # triangle is the pass's first blocks, computed once (the rows' order changes no distance)
    order = np.r_[sample, np.delete(np.arange(n), sample)]
    rows = form.rows
    moved = Form(Rows(rows.data, order if rows.index is None else rows.index[order]), right[order],
                 form.sq[order], form.shift, form.scale)
    first = _left_of_right(moved.right, 0, sample.size) @ moved.right.T  # (sample, n), scaled
    first[np.arange(sample.size), np.arange(sample.size)] = 0.0  # itself, exactly
    bounds = np.empty(n)  # (distances are symmetric; partitioned a few columns at a time: no whole copy)
    for c0 in range(0, n, BOUND_COLUMNS):
        bounds[c0:c0 + BOUND_COLUMNS] = np.partition(first[:, c0:c0 + BOUND_COLUMNS], kth, axis=0)[kth]
    thr = _up32(bounds + 2.0 * margin[order])
    starts = [*range(0, sample.size, step), *range(sample.size, n, step)]
    radii[order], held[order] = _upper_pass(moved, thr, margin[order], kth, exact, starts=starts, first=first,
                                            visit=visit and visit(order))
    return radii, held


def _upper_pass(form: Form, thr: np.ndarray, margin: np.ndarray, kth: int, exact: bool, *, starts: list[int],
                first: np.ndarray | None = None, visit: Callable | None = None) -> tuple:
    """:func:`own_radii`' pass over the upper triangle, row blocks beginning at ``starts``: each entry a
    candidate of its row and of its column against ``thr``; ``first``: the first rows' distances to every
    row, already computed (their blocks are read from it); ``visit``: shown each block (block, lo)."""
    right, n = form.right, len(form.rows)
    radii, held = np.zeros(n), np.zeros(n, dtype=np.int64)
    pending: dict[int, list] = {lo: [] for lo in starts}
    for at, lo in enumerate(starts):
        hi = starts[at + 1] if at + 1 < len(starts) else n
        if first is not None and hi <= first.shape[0]:
            d2 = first[lo:hi, lo:]
        else:
            d2 = _left_of_right(right, lo, hi) @ right[lo:].T  # scaled: s^2 |x_i - x_j|^2, columns lo..n
            d2[np.arange(hi - lo), np.arange(hi - lo)] = 0.0  # itself, exactly
        if visit is not None:
            visit(d2, lo)
        rr, cc = sparse_nonzero(d2 <= thr[lo:hi, None])
        pending[lo].append((rr + lo, cc + lo, d2[rr, cc]))
        ii, jj = sparse_nonzero(d2[:, hi - lo :] <= thr[None, hi:])  # the same entries as column j's rows
        order = np.argsort(jj, kind="stable")
        ii, jj = (ii[order] + lo).astype(np.int32), (jj[order] + hi).astype(np.int32)  # held till their rows
        later = starts[at + 1:]
        cuts = np.append(np.searchsorted(jj, later), jj.size)
        for start, a, b in zip(later, cuts[:-1], cuts[1:], strict=True):
            pending[start].append((jj[a:b], ii[a:b], d2[ii[a:b] - lo, jj[a:b] - lo]))
        radii[lo:hi], held[lo:hi] = _settle_rows(form, lo, hi, _by_row(pending.pop(lo)), kth, margin, exact)
    return radii, held


@dataclass
class Memberships:
    """Per distinct row: fake row i inside some real ball (``in_real``), the weighted count of real balls
    holding it (``balls``); real row j inside some fake ball (``in_fake``), real j's ball holding a fake row
    (``covered``)."""

    in_real: np.ndarray
    balls: np.ndarray
    in_fake: np.ndarray
    covered: np.ndarray


def _membership_block(real: Form, fake: Rows, lo: int, hi: int, r_real: np.ndarray, r_fake: np.ndarray,
                      weight: np.ndarray, exact: bool, visit: Callable | None = None) -> tuple:
    """Fake rows lo..hi against every real row: (in_real, balls) of those rows, and the real rows some of
    them cover and the real rows inside their balls."""
    s2, c = real.scale**2, margin_factor(fake.dim) if exact else 0.0
    slack = _slack(fake.dim) if exact else 0.0
    x = fake.block(lo, hi) - real.shift
    sq = np.einsum("ij,ij->i", x, x)
    left = _left(x * real.scale)
    d2 = left @ real.right.T  # scaled
    if visit is not None:
        visit(d2, lo, x, left)
    mask = d2 < _up32(s2 * (r_real + c * (real.sq + sq.max())) + slack)[None, :]
    mask |= d2 < _up32(s2 * (r_fake[lo:hi] + c * (sq + float(real.sq.max()))) + slack)[:, None]
    rr, cc = sparse_nonzero(mask)
    dist = d2[rr, cc].astype(np.float64) / s2
    if exact:  # recompute the pairs within their margin of either radius
        pair = c * (sq[rr] + real.sq[cc]) + slack / s2
        unsure = (np.abs(dist - r_real[cc]) <= pair) | (np.abs(dist - r_fake[rr + lo]) <= pair)
        dist[unsure] = exact_sq(fake, rr[unsure] + lo, real.rows, cc[unsure])
    inside, held_by = dist < r_real[cc], dist < r_fake[rr + lo]
    return (np.bincount(rr[inside], minlength=hi - lo) > 0,
            np.bincount(rr[inside], weights=weight[cc[inside]], minlength=hi - lo), cc[inside], cc[held_by])


def memberships(real: Form, fake: Rows, r_real: np.ndarray, r_fake: np.ndarray, weight: np.ndarray, *,
                exact: bool, block_rows: int, parallel: bool = False, visit: Callable | None = None
                ) -> Memberships:
    """Which pairs lie strictly inside a ball: d(fake i, real j)^2 < ``r_real[j]`` or < ``r_fake[i]``
    (squared radii), the fake rows centred and scaled as ``real``'s form; ``weight``: each real ball's weight
    in ``balls``; ``parallel``: the row blocks on :data:`MAX_THREADS` threads at most; ``visit`` is shown
    each block (block, lo, fake rows lo.. less the real rows' centre, their operand L)."""
    n, m = len(real.rows), len(fake)
    out = Memberships(np.zeros(m, dtype=bool), np.zeros(m), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool))
    blocks = [(lo, min(m, lo + block_rows)) for lo in range(0, m, block_rows)]
    done = map_in_threads(lambda b: _membership_block(real, fake, *b, r_real, r_fake, weight, exact, visit),
                          blocks, 1 if not parallel else None, cap=MAX_THREADS)
    for (lo, hi), (in_real, balls, covered, held_by) in zip(blocks, done, strict=True):
        out.in_real[lo:hi], out.balls[lo:hi] = in_real, balls
        out.covered[covered] = True
        out.in_fake[held_by] = True
    return out

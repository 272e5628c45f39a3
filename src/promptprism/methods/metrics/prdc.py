"""Precision, recall (Kynkäänniemi et al. 2019) and density, coverage (Naeem et al. 2020), in row blocks.

With real (reference) samples X_1..X_N, fake (generated) samples Y_1..Y_M and the k-nearest-neighbour radius
r_k(Z) of a sample within its own set (the distance to its k-th nearest other sample):

* precision = (1/M) sum_j 1[exists i: |Y_j - X_i| < r_k(X_i)]             (Kynkäänniemi et al. eq. 1-2)
* recall    = (1/N) sum_i 1[exists j: |X_i - Y_j| < r_k(Y_j)]             (Kynkäänniemi et al. eq. 1-2)
* density   = (1/(kM)) sum_j sum_i w_i 1[|Y_j - X_i| < r_k(X_i)]          (Naeem et al. eq. 3, w_i = 1)
* coverage  = (1/N) sum_i 1[exists j: |X_i - Y_j| < r_k(X_i)]             (Naeem et al. eq. 4)

Balls are open, as in the reference package ``prdc`` (with closed balls two identical sets would read
density (k + 1) / k: each ball's k-th neighbour sits on its sphere). For sets without exact duplicate rows
this is exactly ``prdc`` (tests/). Duplicates are where the published definitions break down, and where
this module departs, on purpose:

* A radius counts distinct neighbours: the copies of a sample are not its neighbours (in ``prdc``, k copies
  make its radius 0, its open ball empty, and two identical constant sets read density and coverage 0:
  prdc issue #7); a sample with fewer than k distinct neighbours gets the distance to its farthest one.
* Distances within round-off of a radius count as on the sphere (outside), so identical sets read exactly 1;
  a radius of 0 (a set with one distinct row) is a ball of round-off size: it holds its own copies.
* Density weights each reference ball by w_i = k / (m_i max(h_i, 1)), with m_i the multiplicity of X_i and
  h_i the distinct neighbours its closed ball holds (k without ties at the radius): 1 without duplicates;
  duplicating both sets leaves every metric unchanged, and two identical constant sets read 1 throughout.

Distances are computed in row blocks against the whole other set (bounded memory: ``block_rows`` x N
distances at a time), never as the full N x M matrix: float32 GEMM blocks, every decision they cannot settle
re-checked on the float64 distance (:mod:`.neighbours`), so the radii and indicators are those of float64
distances.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._validation import check_feature_pair, check_same_width
from ...array_ops import map_in_threads, pool_workers
from ...errors import InputError, OptionError
from .neighbours import MAX_THREADS, Rows, make_form, memberships, own_radii, rescaled

#: the distance block's budget in bytes (block_rows x other-set rows x 8)
BLOCK_BYTES = 256 * 2**20
#: at most this many rows per block: a float32 block of 1,024 x 10,000 (40 MB) and its masks stay near the
#: cache, where the comparison passes run several times faster than from memory
MAX_BLOCK_ROWS = 1024
#: sets of at least this many coordinates (rows x d) run their blocks on threads
PARALLEL_ENTRIES = 2**20


@dataclass(frozen=True)
class NeighbourIndicators:
    """Per-sample indicators behind the four metrics (their means are the metrics; bootstrap resamples them).

    ``in_real_manifold[j]`` (fake j inside some real ball), ``real_balls[j]`` (the weighted count of real
    balls holding fake j), ``in_fake_manifold[i]`` (real i inside some fake ball), ``covered[i]`` (real i's
    own ball holds a fake sample), the radii, and the exact duplicate rows of each set.
    """

    in_real_manifold: np.ndarray
    real_balls: np.ndarray
    in_fake_manifold: np.ndarray
    covered: np.ndarray
    real_radii: np.ndarray
    fake_radii: np.ndarray
    k: int
    duplicates: dict

    def metrics(self) -> dict[str, float]:
        """{'precision', 'recall', 'density', 'coverage'}: the means of the indicators."""
        return {"precision": float(self.in_real_manifold.mean()),
                "recall": float(self.in_fake_manifold.mean()),
                "density": float(self.real_balls.mean() / self.k), "coverage": float(self.covered.mean())}


def check_nearest_k(k: Any, n_real: int, n_fake: int) -> int:
    """``k`` when both sets have more than k rows (a k-NN radius leaves the sample itself out)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise OptionError(f"nearest_k must be an integer >= 1, got {k!r}")
    for what, n in (("reference", n_real), ("generated", n_fake)):
        if n < k + 1:
            raise InputError(f"the {what} set has {n} samples; nearest_k={k} needs at least {k + 1} (each "
                             f"sample's k-NN radius is the distance to its {k}-th nearest other sample)",
                             parameter="nearest_k")
    return int(k)


def distinct_rows(x: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first row of each distinct row, each row's distinct index, each distinct row's multiplicity).

    Rows are equal when their bytes are: a 64-bit hash of each row's bytes (integer arithmetic, exact)
    groups them, and the rows of each group are compared with its first; if two different rows ever shared
    a hash, the rows are sorted by their bytes instead.
    """
    arr = np.ascontiguousarray(x)
    width = arr.dtype.itemsize * arr.shape[1]
    if arr.shape[0] and width % 4 == 0:
        words = arr.view(np.uint32).reshape(arr.shape[0], -1).astype(np.uint64)
        odd = np.random.default_rng(0).integers(1, 2**63, size=words.shape[1], dtype=np.uint64) * 2 + 1
        _, first, inverse, counts = np.unique(words @ odd, return_index=True, return_inverse=True,
                                              return_counts=True)
        again = np.flatnonzero(counts[inverse] > 1)
        if np.array_equal(words[again], words[first[inverse[again]]]):
            return first, inverse.reshape(-1), counts
    view = arr.view(np.dtype((np.void, width))).ravel()
    _, first, inverse, counts = np.unique(view, return_index=True, return_inverse=True, return_counts=True)
    return first, inverse.reshape(-1), counts


def shared_row_count(a: Any, b: Any, chunk: int = 1024) -> int:
    """How many rows of ``a`` equal (byte for byte, after a cast to ``b``'s dtype) some row of ``b``: a
    64-bit hash of each row's bytes finds the candidates, which are then compared whole."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape[1] != b.shape[1] or not a.size or not b.size:
        return 0
    a = a.astype(b.dtype, copy=False)
    odd = np.random.default_rng(1).integers(1, 2**63, size=b.shape[1] * b.dtype.itemsize // 4 or 1,
                                            dtype=np.uint64) * 2 + 1

    def hashes(x: np.ndarray) -> np.ndarray:
        if (x.dtype.itemsize * x.shape[1]) % 4:
            return np.array([hash(row.tobytes()) for row in x], dtype=np.int64).view(np.uint64)
        out = np.empty(x.shape[0], dtype=np.uint64)
        for lo in range(0, x.shape[0], chunk):
            part = np.ascontiguousarray(x[lo:lo + chunk])
            words = part.view(np.uint32).reshape(part.shape[0], -1).astype(np.uint64)
            out[lo:lo + part.shape[0]] = words @ odd
        return out

    hb = hashes(b)
    order = np.argsort(hb, kind="stable")
    sorted_hb, ha = hb[order], hashes(a)
    at = np.searchsorted(sorted_hb, ha)
    found = (at < hb.size) & (sorted_hb[np.minimum(at, hb.size - 1)] == ha)
    count = 0
    for i in np.flatnonzero(found):  # (a hash match: compare the rows; equal hashes are adjacent)
        j = at[i]
        while j < hb.size and sorted_hb[j] == ha[i]:
            if np.array_equal(a[i], b[order[j]]):
                count += 1
                break
            j += 1
    return count


def _block_rows(other: int, block_rows: int | None) -> int:
    return int(block_rows) if block_rows else max(1, min(MAX_BLOCK_ROWS, BLOCK_BYTES // (8 * max(other, 1))))


def knn_radii(x: np.ndarray, x_sq: np.ndarray | None = None, k: int = 5, *, block_rows: int | None = None,
              exact: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Squared distance of each (distinct) row of ``x`` to its k-th nearest other row, and how many other
    rows its closed ball holds (k without ties), in row blocks (:mod:`.neighbours`: float32 GEMM blocks,
    the rows near each radius re-checked in float64 when ``exact``). With k or fewer other rows: the
    farthest. ``x_sq`` (the rows' squared norms) is not needed any more and ignored."""
    rows = Rows(x, None)
    form = make_form(rows, rows.mean())
    return own_radii(form, k, exact=exact, block_rows=_block_rows(len(rows), block_rows))


def _distinct(x: Any) -> tuple[Rows, np.ndarray, np.ndarray, int]:
    """(the distinct rows, each row's distinct index, each row's multiplicity, the number of duplicates);
    the distinct rows are the first occurrences, in row order."""
    arr = x if isinstance(x, np.ndarray) else np.asarray(x)
    first, inverse, counts = distinct_rows(arr)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    index = None if first.size == arr.shape[0] else first[order]
    return Rows(arr, index), rank[inverse], counts[inverse], int(arr.shape[0] - first.size)


def _one_set(x: Any, centre: np.ndarray | None, spread_about: np.ndarray | None, *, k: int, exact: bool,
             block_rows: int | None, visitors: Sequence[Callable] = ()) -> tuple:
    """One set's distinct rows (:func:`_distinct`), its form centred on ``centre`` (None: its own mean),
    its radii and closed-ball counts (:func:`.neighbours.own_radii`; its blocks shown to each of
    ``visitors``: functions (inverse, form) giving a ``visit`` of own_radii, as
    :meth:`.subset_gather.SubsetGather.own_visitor`), and the largest squared distance of its distinct rows
    from ``spread_about`` (0.0 when None)."""
    rows, inverse, mult, dup = _distinct(x)
    form = make_form(rows, rows.mean() if centre is None else centre)
    starts = [made(inverse, form) for made in visitors]

    def visit(order: np.ndarray | None) -> Callable[[np.ndarray, int], None]:
        seen = [start(order) for start in starts]

        def each(d2: np.ndarray, lo: int) -> None:
            for one in seen:
                one(d2, lo)
        return each

    radii, held = own_radii(form, k, exact=exact, block_rows=_block_rows(len(rows), block_rows),
                            visit=visit if starts else None)
    spread = 0.0
    for lo in range(0, len(rows) if spread_about is not None else 0, 2048):
        diff = rows.block(lo, lo + 2048) - spread_about
        spread = max(spread, float(np.max(np.einsum("ij,ij->i", diff, diff))))
    return rows, inverse, mult, dup, form, radii, held, spread


def _side_visitor(gather: Any, side: str) -> list[Callable]:
    """``gather``'s own-block visitor of ``side``, as a :func:`_one_set` visitor (none without a gather)."""
    return [] if gather is None else [lambda inverse, form: gather.own_visitor(side, inverse, form)]


def neighbour_indicators(real: Any, fake: Any, k: int = 5, *, dtype: Any = np.float64,
                         block_rows: int | None = None, gather: Any = None) -> NeighbourIndicators:
    """The per-sample indicators of precision, recall, density and coverage (module docstring, eqs.).

    ``dtype``: the distances' precision. float64 (the default): exact, float32 GEMM blocks with every pair
    near a radius re-checked in float64 (:mod:`.neighbours`); float32: the float32 values decide (ties can
    then differ from float64 at round-off). Memory: a float32 copy of each set's distinct rows plus one block
    of ``block_rows`` x (N or M) float32 distances. ``gather``: a :class:`.subset_gather.SubsetGather` (sides
    'generated' = ``fake``, 'reference' = ``real``) that reads KID's and MMD's subset sums off the blocks.
    """
    return neighbour_indicators_each(real, [fake], k, dtype=dtype, block_rows=block_rows,
                                     gathers=[gather])[0]


def neighbour_indicators_each(real: Any, fakes: Sequence[Any], k: int = 5, *, dtype: Any = np.float64,
                              block_rows: int | None = None, gathers: Sequence[Any] | None = None
                              ) -> list[NeighbourIndicators]:
    """:func:`neighbour_indicators` of each of ``fakes`` against ``real`` (with ``gathers[i]`` for
    ``fakes[i]``, or None), the reference's own pass (its radii, and its blocks shown to every gather) made
    once for all of them: K generated sets cost K + 1 own passes and K cross passes instead of 2K and K.
    Memory: the reference's float32 rows and those of as many generated sets as there are threads (at least
    two) at a time."""
    fakes = list(fakes)
    gathers = list(gathers) if gathers is not None else [None] * len(fakes)
    if len(gathers) != len(fakes):
        raise ValueError(f"{len(gathers)} gathers for {len(fakes)} generated sets")
    for fake in fakes:
        check_same_width(real, fake)
        k = check_nearest_k(k, real.shape[0], fake.shape[0])
    exact = np.finfo(np.dtype(dtype)).eps < np.finfo(np.float32).eps
    shift = np.zeros(real.shape[1])
    for start in range(0, real.shape[0], 8192):
        shift += np.asarray(real[start : start + 8192], dtype=np.float64).sum(axis=0)
    shift /= real.shape[0]
    opts = dict(k=k, exact=exact, block_rows=block_rows)
    # the reference's own pass beside the first generated sets', then the others as many at a time as there
    # are threads (on threads when large); each generated set's memberships once its own pass is done
    real_visitors = [v for g in gathers for v in _side_visitor(g, "reference")]
    tasks = [(real, shift, None, real_visitors)] + [(f, None, shift, _side_visitor(g, "generated"))
                                                   for f, g in zip(fakes, gathers, strict=True)]
    step = max(2, pool_workers(MAX_THREADS))
    batches = [tasks[i:i + step] for i in range(0, len(tasks), step)]
    reference, out = None, []
    for batch in batches:
        parallel = max(t[0].shape[0] for t in batch) * real.shape[1] >= PARALLEL_ENTRIES
        done = map_in_threads(lambda t: _one_set(t[0], t[1], t[2], visitors=t[3], **opts), batch,
                              None if parallel else 1, cap=MAX_THREADS)
        if reference is None:
            reference, done = done[0], done[1:]
        for own in done:
            i = len(out)
            parallel = max(real.shape[0], fakes[i].shape[0]) * real.shape[1] >= PARALLEL_ENTRIES
            out.append(_indicators(reference, own, k, dtype, exact, block_rows, gathers[i], parallel,
                                   last=i == len(fakes) - 1))
    return out


def _indicators(reference: tuple, own: tuple, k: int, dtype: Any, exact: bool, block_rows: int | None,
                gather: Any, parallel: bool, *, last: bool) -> NeighbourIndicators:
    """The memberships of one generated set (``own``: its :func:`_one_set`) in the reference's balls
    (``reference``: the reference's) and of the reference in its own; the reference's form is rescaled in
    place only for the ``last`` set (the others rescale a copy where the scale changes)."""
    re, re_inv, _, re_dup, real_form, re_radii, re_held, _ = reference
    fa, fa_inv, _, fa_dup, _, fa_radii, _, fake_sq = own
    # the round-off of the expansion |a|^2 + |b|^2 - 2<a, b>: a sample on a ball's sphere (identical sets:
    # the k-th neighbour) stays outside whichever way its two computed distances round, and a zero radius
    # still holds its own copies
    floor = 64 * np.finfo(np.dtype(dtype)).eps * max(float(real_form.sq.max()), fake_sq, 1e-300)
    r_real = np.maximum(re_radii - floor, floor)
    r_fake = np.maximum(fa_radii - floor, floor)
    # (at the scale the fake rows fit too)
    cross_form = rescaled(real_form, max(float(real_form.sq.max()), fake_sq), in_place=last)
    inside = memberships(cross_form, fa, r_real, r_fake, k / np.maximum(re_held, 1), exact=exact,
                         block_rows=_block_rows(len(re), block_rows), parallel=parallel,
                         visit=None if gather is None else gather.cross_visitor(cross_form))
    return NeighbourIndicators(inside.in_real[fa_inv], inside.balls[fa_inv], inside.in_fake[re_inv],
                               inside.covered[re_inv], np.sqrt(re_radii[re_inv]), np.sqrt(fa_radii[fa_inv]),
                               k, {"reference": re_dup, "generated": fa_dup})


def prdc(real: Any, fake: Any, nearest_k: int = 5, *, dtype: Any = np.float64, block_rows: int | None = None
         ) -> dict[str, float]:
    """{'precision', 'recall', 'density', 'coverage'} of ``fake`` against ``real`` (Kynkaanniemi et al. 2019
    and Naeem et al. 2020, module docstring), with ``nearest_k`` neighbours (the ``prdc`` package's name);
    ``real`` and ``fake`` checked (2-D, finite, one encoder's); ``dtype``, ``block_rows``: as
    :func:`neighbour_indicators`."""
    real, fake = check_feature_pair(real, fake, ("real", "fake"))
    return neighbour_indicators(real, fake, nearest_k, dtype=dtype, block_rows=block_rows).metrics()

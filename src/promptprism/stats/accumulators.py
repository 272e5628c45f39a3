"""Accumulators for statistics that are sums over samples, in the torchmetrics manner.

Each has ``update(batch)``, ``merge(other)`` and ``compute()``; the state is a few arrays and a count, so the
same object serves one process, chunks of a memory-mapped file, and partitions on a cluster (merge the
partial states in any order: the result is the same up to floating-point summation order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..array_ops import mirror_upper
from ..backend import backend_of, is_numpy, populated_empty, populated_zeros, to_numpy
from ..errors import InputError


@dataclass
class CovarianceAccumulator:
    """Uncentred second moment C = (1/n) sum_i f_i f_i^T of feature vectors f_i in R^dim.

    The running sum ``sum_upper`` is read by its upper triangle only (each batch's f^T f is a symmetric
    rank-k update, BLAS syrk, about twice as fast as a full product); :meth:`sum_outer` returns the full
    symmetric sum.

    ``precision='float32'``: each batch's f^T f is computed in float32 (twice the float64 rate) and added
    to the running sum, which stays float64, so round-off does not grow with the number of batches: the
    error is that of one batch's float32 sum (relative ~1e-7 to 1e-6, see docs/precision.md). On a torch
    device the float32 running sum stays float32 with a compensation term (Kahan summation), the same bound
    without a float64 array on the device (Apple's MPS has none; on GPUs float64 is the slow path); it
    becomes float64 when the sum is read (:meth:`to_host`).
    """

    dim: int
    sum_upper: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    _scratch: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)
    #: torch float32: the Kahan compensation of ``sum_upper`` and a spare buffer for the next sum
    _compensation: Any = field(default=None, init=False, repr=False, compare=False)
    _spare: Any = field(default=None, init=False, repr=False, compare=False)
    count: int = 0
    precision: str = "float64"  #: 'float64' or 'float32': the arithmetic of each batch's update
    #: every update so far added a numpy product, whose two triangles are equal bit for bit (numpy's
    #: ``f.T @ f`` copies the triangle its syrk computed): :meth:`sum_outer` then has nothing to mirror
    exactly_symmetric: bool = field(default=True, compare=False)

    def __post_init__(self) -> None:
        if self.sum_upper is None:
            self.sum_upper = populated_zeros((self.dim, self.dim), np.float64, order="F")
        else:  # (a sum given by the caller: its upper triangle is what counts)
            self.exactly_symmetric = False

    def update(self, features: np.ndarray, weight: float = 1.0) -> CovarianceAccumulator:
        """Add ``weight`` sum_i f_i f_i^T over the rows of ``features`` (n, dim).

        A signed combination such as C_test - eta C_ref (weights 1/n and -eta/m) accumulates in one running
        sum; :meth:`compute` (sum / count) then has no meaning, :meth:`sum_outer` is the combination.
        """
        f = np.asarray(features) if is_numpy(features) else features
        if f.ndim != 2 or f.shape[1] != self.dim:
            raise InputError(f"CovarianceAccumulator.update: expected shape (n, {self.dim}), got "
                             f"{tuple(f.shape)}")
        if not is_numpy(f):  # a torch batch: f^T f on its device, summed there (no read to the host)
            self.exactly_symmetric = False  # (a general product: its triangles may differ in the last bit)
            self._update_on_device(f, weight)
        elif f.shape[0]:
            dtype = np.float32 if self.precision == "float32" else np.float64
            f = np.ascontiguousarray(f, dtype=dtype)
            # the product goes to a scratch matrix reused chunk after chunk (a fresh dim x dim result per
            # chunk cost page faults: ~1 s of system time at r = 3000). numpy computes f^T f by BLAS syrk
            # (half a general product), fills both triangles, and releases the GIL while it runs (SciPy's
            # syrk wrapper holds it), so partitions on threads (scale.runner.LocalRunner) run side by side
            if self._scratch is None or self._scratch.dtype != dtype:
                self._scratch = populated_empty((self.dim, self.dim), dtype, order="F")
            product = np.matmul(f.T, f, out=self._scratch.T).T
            if weight != 1.0:  # (in the batch's precision: a rounding no larger than the product's own)
                np.multiply(product, weight, out=product)
            self.sum_upper += product
            self.count += f.shape[0]
        return self

    def _update_on_device(self, f: Any, weight: float) -> None:
        """A torch batch: float64 batches add to a float64 sum; float32 ones to a float32 sum with Kahan's
        compensation c (y = w f^T f - c in the product's own update, t = s + y, c = (t - s) - y, s = t; the
        sum is s - c), every array reused from batch to batch."""
        import torch

        on = backend_of(f)
        if f.dtype == torch.float64 or self.precision != "float32":
            if is_numpy(self.sum_upper):
                self.sum_upper = on.asarray(self.sum_upper)
            product = (f.T @ f).to(torch.float64)
            self.sum_upper += product if weight == 1.0 else weight * product
            self.count += f.shape[0]
            return
        f = f.to(torch.float32)
        if self._compensation is None:  # a float64 host sum goes over as s + its residual as -c
            host = np.asarray(to_numpy(self.sum_upper), dtype=np.float64)
            rounded = host.astype(np.float32)
            self.sum_upper = on.asarray(np.ascontiguousarray(rounded))
            self._compensation = on.asarray(np.ascontiguousarray(rounded - host, dtype=np.float32))
            self._spare, self._scratch = torch.empty_like(self.sum_upper), torch.empty_like(self.sum_upper)
        y = torch.addmm(self._compensation, f.T, f, beta=-1.0, alpha=weight, out=self._scratch)
        t = torch.add(self.sum_upper, y, out=self._spare)
        torch.sub(t, self.sum_upper, out=self._compensation).sub_(y)
        self._spare, self.sum_upper = self.sum_upper, t
        self.count += f.shape[0]

    def to_host(self) -> CovarianceAccumulator:
        """Move a running sum kept on a torch device to numpy float64 (for merging, pickling, computing);
        self."""
        total = np.asfortranarray(to_numpy(self.sum_upper), dtype=np.float64)
        if self._compensation is not None:
            total -= to_numpy(self._compensation)
        self.sum_upper, self._scratch, self._compensation, self._spare = total, None, None, None
        return self

    def sum_outer(self, *, copy: bool = True) -> np.ndarray:
        """sum_i f_i f_i^T (full, symmetric): a new dim x dim array, no other temporary; ``copy=False``: the
        running sum itself, made symmetric in place (for a final result: later updates would add to it)."""
        self.to_host()
        total = np.array(self.sum_upper, order="F") if copy else self.sum_upper
        return total if self.exactly_symmetric else mirror_upper(total)

    def merge(self, other: CovarianceAccumulator) -> CovarianceAccumulator:
        """Add another accumulator's sum and count to this one."""
        if other.dim != self.dim:
            raise InputError(f"cannot merge accumulators of dimension {self.dim} and {other.dim}")
        self.to_host()
        self.sum_upper += other.to_host().sum_upper
        self.count += other.count
        self.exactly_symmetric = self.exactly_symmetric and other.exactly_symmetric
        return self

    def compute(self) -> np.ndarray:
        """C = (1/n) sum_i f_i f_i^T."""
        if self.count == 0:
            raise InputError("no samples were accumulated (the set is empty)")
        c = self.sum_outer()
        c /= self.count
        return c

    def reset(self) -> None:
        """Zero the sum and the count, keeping the buffer."""
        self.sum_upper[...] = 0.0
        if self._compensation is not None:
            self._compensation[...] = 0.0
        self.count = 0


@dataclass
class KeyedCovarianceAccumulator:
    """Uncentred second-moment sums of several groups of rows at once: ``sums[key]`` is a
    :class:`CovarianceAccumulator` (made on the key's first update; all of them share one scratch matrix).

    PromptSplit's covariance pass keeps the test and the reference sums apart, so both Lambda (their weighted
    difference, eq. 2) and the pooled second moment (their sum, which no relabelling of the samples
    changes) come from the same products, with no product computed twice."""

    dim: int
    precision: str = "float64"  #: as :class:`CovarianceAccumulator`'s
    sums: dict = field(default_factory=dict)

    def update(self, key: str, features: np.ndarray) -> KeyedCovarianceAccumulator:
        """Add sum_i f_i f_i^T over the rows of ``features`` to the sum of ``key``."""
        acc = self.sums.get(key)
        if acc is None:
            acc = self.sums[key] = CovarianceAccumulator(self.dim, precision=self.precision)
            acc._scratch = next((a._scratch for a in self.sums.values() if a._scratch is not None), None)
        acc.update(features)
        return self

    def to_host(self) -> KeyedCovarianceAccumulator:
        """Every sum moved to numpy (:meth:`CovarianceAccumulator.to_host`); self."""
        for acc in self.sums.values():
            acc.to_host()
        return self

    def merge(self, other: KeyedCovarianceAccumulator) -> KeyedCovarianceAccumulator:
        """Add another accumulator's sums key by key (a key only ``other`` has is taken over)."""
        if other.dim != self.dim:
            raise InputError(f"cannot merge accumulators of dimension {self.dim} and {other.dim}")
        for key, acc in other.sums.items():
            if key in self.sums:
                self.sums[key].merge(acc)
            else:
                self.sums[key] = acc.to_host()
        return self


@dataclass
class GroupSumAccumulator:
    """Per-group sums of row vectors and counts: sums[g] = sum_{i in g} x_i (groups are integer labels)."""

    n_groups: int
    dim: int
    sums: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    counts: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.sums is None:
            self.sums = np.zeros((self.n_groups, self.dim), dtype=np.float64)
        if self.counts is None:
            self.counts = np.zeros(self.n_groups, dtype=np.int64)

    def update(self, labels: np.ndarray, values: np.ndarray) -> GroupSumAccumulator:
        """Add each row of ``values`` to the sum of its group label."""
        labels = np.asarray(labels, dtype=np.int64)
        values = np.asarray(values, dtype=np.float64)
        if values.ndim == 1 and self.dim == 1:
            values = values[:, None]
        if labels.ndim != 1 or values.shape != (labels.shape[0], self.dim):
            raise InputError(f"GroupSumAccumulator.update: expected {labels.shape[0]} labels and values of "
                             f"shape ({labels.shape[0]}, {self.dim}), got labels {labels.shape} and values "
                             f"{values.shape}")
        if labels.size and (labels.min() < 0 or labels.max() >= self.n_groups):
            raise InputError(f"GroupSumAccumulator.update: labels must lie in [0, {self.n_groups})")
        # one bincount over the (label, column) cells of the labels present (np.add.at's unbuffered scatter
        # is 1-5x slower; a bincount over every group's cells costs more than the rows when groups are many)
        present, local = np.unique(labels, return_inverse=True)
        cells = (local.reshape(-1, 1) * self.dim + np.arange(self.dim)).ravel()
        self.sums[present] += np.bincount(cells, weights=values.ravel(), minlength=present.size * self.dim
                                          ).reshape(present.size, self.dim)
        self.counts[present] += np.bincount(local, minlength=present.size)
        return self

    def merge(self, other: GroupSumAccumulator) -> GroupSumAccumulator:
        """Add another accumulator's group sums and counts to this one."""
        if (other.n_groups, other.dim) != (self.n_groups, self.dim):
            raise InputError(f"cannot merge group sums of shape ({self.n_groups}, {self.dim}) and "
                             f"({other.n_groups}, {other.dim})")
        self.sums += other.sums
        self.counts += other.counts
        return self

    def compute(self) -> tuple[np.ndarray, np.ndarray]:
        """(sums, counts)."""
        return self.sums, self.counts


@dataclass
class TopKAccumulator:
    """For each of ``n_columns`` score columns, the ``k`` rows with the largest |score|.

    Rows are identified by an integer id (for example a global sample index); ties keep the smaller id.
    """

    k: int
    n_columns: int
    ids: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    scores: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.ids is None:
            self.ids = np.empty((0, self.n_columns), dtype=np.int64)
            self.scores = np.empty((0, self.n_columns), dtype=np.float64)

    def update(self, ids: np.ndarray, scores: np.ndarray) -> TopKAccumulator:
        """Keep the best ``k`` per column among the kept rows and these."""
        ids = np.asarray(ids, dtype=np.int64)
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim == 1 and self.n_columns == 1:
            scores = scores[:, None]
        if ids.ndim != 1 or scores.shape != (ids.shape[0], self.n_columns):
            raise InputError(f"TopKAccumulator.update: expected {ids.shape[0]} ids and scores of shape "
                             f"({ids.shape[0]}, {self.n_columns}), got ids {ids.shape} and scores "
                             f"{scores.shape}")
        all_ids = np.concatenate([self.ids, np.repeat(ids[:, None], self.n_columns, axis=1)])
        all_scores = np.concatenate([self.scores, scores])
        self._keep(all_ids, all_scores)
        return self

    def merge(self, other: TopKAccumulator) -> TopKAccumulator:
        """Keep the best ``k`` per column of both accumulators' rows."""
        if other.n_columns != self.n_columns:
            raise InputError(f"cannot merge top-k accumulators of {self.n_columns} and {other.n_columns} "
                             "columns")
        self._keep(np.concatenate([self.ids, other.ids]), np.concatenate([self.scores, other.scores]))
        return self

    def _keep(self, ids: np.ndarray, scores: np.ndarray) -> None:
        if ids.shape[0] == 0:
            return
        # per column: the rows at least as strong as the k-th largest |score| (ties included), then sorted by
        # (-|score|, id); lexsort uses the last key as primary
        k = min(self.k, ids.shape[0])
        magnitude = np.abs(scores)
        kth = -np.partition(-magnitude, k - 1, axis=0)[k - 1]
        order = np.empty((k, self.n_columns), dtype=np.int64)
        for j in range(self.n_columns):
            rows = np.flatnonzero(~(magnitude[:, j] < kth[j]))  # (all rows when kth is nan)
            order[:, j] = rows[np.lexsort((ids[rows, j], -magnitude[rows, j]))[:k]]
        self.ids = np.take_along_axis(ids, order, axis=0)
        self.scores = np.take_along_axis(scores, order, axis=0)

    def compute(self) -> tuple[np.ndarray, np.ndarray]:
        """(ids, scores), each (min(k, seen), n_columns), best first."""
        return self.ids, self.scores


@dataclass
class SumsAccumulator:
    """Named running sums: ``sums`` are added on merge, ``log_sums`` are log-added (log(e^a + e^b)).

    ``log_sums`` hold the logarithm of sums of terms that underflow one by one (kernel values
    exp(-gamma d^2) of far-apart images): log-adding partial log-sums loses nothing. A name missing on one
    side is taken from the other, so partitions may contribute to different names.
    """

    sums: dict = field(default_factory=dict)
    log_sums: dict = field(default_factory=dict)

    def update(self, sums: dict | None = None, log_sums: dict | None = None) -> SumsAccumulator:
        """Add ``sums`` and log-add ``log_sums`` into the running values."""
        for k, v in (sums or {}).items():
            v = np.asarray(v, dtype=np.float64)
            self.sums[k] = self.sums[k] + v if k in self.sums else v.copy()
        for k, v in (log_sums or {}).items():
            v = np.asarray(v, dtype=np.float64)
            self.log_sums[k] = np.logaddexp(self.log_sums[k], v) if k in self.log_sums else v.copy()
        return self

    def merge(self, other: SumsAccumulator) -> SumsAccumulator:
        """Add another accumulator's sums (log-add its log-sums)."""
        return self.update(other.sums, other.log_sums)

    def compute(self) -> tuple[dict, dict]:
        """(sums, log_sums)."""
        return self.sums, self.log_sums


@dataclass
class MinMaxAccumulator:
    """Element-wise minimum and maximum over rows of arrays of one shape (per pixel, per feature)."""

    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    count: int = 0

    def update(self, rows: np.ndarray) -> MinMaxAccumulator:
        """Fold the rows' element-wise minimum and maximum in."""
        rows = np.asarray(rows, dtype=np.float64)
        if rows.shape[0]:
            lo, hi = rows.min(axis=0), rows.max(axis=0)
            self.lo = lo if self.lo is None else np.minimum(self.lo, lo)
            self.hi = hi if self.hi is None else np.maximum(self.hi, hi)
            self.count += rows.shape[0]
        return self

    def merge(self, other: MinMaxAccumulator) -> MinMaxAccumulator:
        """Combine with another accumulator's minimum and maximum."""
        if other.count:
            self.lo = other.lo.copy() if self.lo is None else np.minimum(self.lo, other.lo)
            self.hi = other.hi.copy() if self.hi is None else np.maximum(self.hi, other.hi)
            self.count += other.count
        return self

    def compute(self) -> tuple[np.ndarray, np.ndarray]:
        """(min, max) over all rows."""
        if self.count == 0:
            raise InputError("no rows were accumulated (the set is empty)")
        return self.lo, self.hi

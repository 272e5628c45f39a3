"""Means and covariances of rows: a mergeable accumulator (``update`` / ``merge`` / ``compute``, as those of
:mod:`.accumulators`) and the two forms the methods use, plain and weighted (the Gaussians of the Fréchet
distance, Heusel et al. 2017, eq. 6, and of its bootstrap replicates)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError

#: rows per block when :func:`feature_moments` accumulates (bounded memory for 50k x 2048 float32 inputs)
MOMENT_BLOCK_ROWS = 8192


@dataclass
class MomentsAccumulator:
    """Mean and unbiased covariance (divisor n - 1, as ``np.cov``) of rows, in float64: sums of the rows
    and of their outer products taken about a ``shift`` (the first batch's mean), so float64 cancellation
    stays small when the mean is large: cov = (sum z z^T - n zbar zbar^T) / (n - 1), z = x - shift."""

    dim: int
    shift: np.ndarray | None = None
    total: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    cross: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    count: int = 0

    def __post_init__(self) -> None:
        self.total = np.zeros(self.dim) if self.total is None else self.total
        self.cross = np.zeros((self.dim, self.dim)) if self.cross is None else self.cross

    def update(self, rows: Any) -> MomentsAccumulator:
        """Add the rows (n, dim), taken in float64."""
        block = np.asarray(rows, dtype=np.float64)
        if block.shape[0]:
            if self.shift is None:
                self.shift = block.mean(axis=0)
            block = block - self.shift
            self.total += block.sum(axis=0)
            self.cross += block.T @ block
            self.count += block.shape[0]
        return self

    def merge(self, other: MomentsAccumulator) -> MomentsAccumulator:
        """Add another accumulator's sums, moved from its shift to this one's."""
        if other.count and self.shift is None:
            self.shift, self.total, self.cross = other.shift, other.total.copy(), other.cross.copy()
        elif other.count:
            delta = other.shift - self.shift  # z about self.shift = z about other.shift + delta
            self.total += other.total + other.count * delta
            self.cross += (other.cross + np.outer(other.total, delta) + np.outer(delta, other.total)
                           + other.count * np.outer(delta, delta))
        self.count += other.count
        return self

    def compute(self) -> tuple[np.ndarray, np.ndarray]:
        """(mean, covariance with divisor n - 1, symmetrised)."""
        n = self.count
        if n < 2:
            raise InputError(f"a covariance needs at least 2 rows, got {n}")
        centred_mean = self.total / n
        cov = (self.cross - n * np.outer(centred_mean, centred_mean)) / (n - 1)
        return centred_mean + self.shift, (cov + cov.T) / 2


def feature_moments(x: Any) -> tuple[np.ndarray, np.ndarray]:
    """Mean and unbiased covariance (divisor n - 1, as ``np.cov``) of the rows of ``x`` in float64, the
    Gaussian fitted to a feature set in the Fréchet distance (Heusel et al. 2017, eq. 6's mu and Sigma): a
    :class:`MomentsAccumulator` over row blocks of :data:`MOMENT_BLOCK_ROWS` (an array or a memory map)."""
    n = int(x.shape[0])
    if n < 2:
        raise InputError(f"a covariance needs at least 2 rows, got {n}")
    acc = MomentsAccumulator(int(x.shape[1]))
    for start in range(0, n, MOMENT_BLOCK_ROWS):
        acc.update(x[start : start + MOMENT_BLOCK_ROWS])
    return acc.compute()


def weighted_moments(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance (divisor n - 1, n = sum w) of the rows of ``x`` repeated ``w`` times (a bootstrap
    replicate's Gaussian in the Fréchet distance, Heusel et al. 2017, eq. 6)."""
    n = w.sum()
    mu = w @ x / n
    c = x - mu
    return mu, (c.T * w) @ c / (n - 1)


__all__ = ["MOMENT_BLOCK_ROWS", "MomentsAccumulator", "feature_moments", "weighted_moments"]

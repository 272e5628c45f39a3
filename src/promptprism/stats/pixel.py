"""Mergeable accumulator of the pixel-by-pixel CKA matrix (the regions method, Algorithm 1).

Same protocol as :mod:`promptprism.stats.accumulators`: ``update`` / ``merge`` / ``compute`` / ``reset``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError


@dataclass
class PixelCKAAccumulator:
    """Sum over blocks of the d x d CKA matrices F F^T (upper triangle) and the number of blocks.

    Each block contributes F F^T where row a of F is pixel a's centred Gram matrix H K_a H of that block,
    scaled to unit Frobenius norm (its upper triangle, off-diagonal entries times sqrt 2): entry (a, b) of
    F F^T is then CKA(K_a, K_b) of eq. 13 of the disentangled-mean-embeddings paper.
    """

    dim: int
    sum_upper: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    n_blocks: int = 0

    def __post_init__(self) -> None:
        if self.sum_upper is None:
            self.sum_upper = np.zeros((self.dim, self.dim))

    def update(self, rows: np.ndarray, n_blocks: int) -> PixelCKAAccumulator:
        """Add F F^T for ``rows`` F (d x k), the unit centred rows of ``n_blocks`` blocks side by side."""
        rows = np.ascontiguousarray(rows)
        # numpy computes a product with its own transpose by BLAS syrk and releases the GIL meanwhile
        # (SciPy's syrk wrapper holds it): partitions on threads run side by side
        self.sum_upper += rows @ rows.T
        self.n_blocks += int(n_blocks)
        return self

    def add_product(self, rows_a: slice, rows_b: slice, product: np.ndarray) -> PixelCKAAccumulator:
        """Add one tile F_a F_b^T of a block too large to stack (count the block with :meth:`count_block`)."""
        self.sum_upper[rows_a, rows_b] += product
        return self

    def count_block(self, n_blocks: int = 1) -> PixelCKAAccumulator:
        """Count blocks whose tiles were added with :meth:`add_product`."""
        self.n_blocks += int(n_blocks)
        return self

    def merge(self, other: PixelCKAAccumulator) -> PixelCKAAccumulator:
        """Add another accumulator's blocks (same number of pixels)."""
        if other.dim != self.dim:
            raise InputError(f"cannot merge CKA matrices of {self.dim} and {other.dim} pixels")
        self.sum_upper += np.triu(other.sum_upper)
        self.n_blocks += other.n_blocks
        return self

    def compute(self) -> np.ndarray:
        """M = mean over blocks of the CKA matrices: symmetric, unit diagonal, clipped to [-1, 1]."""
        if self.n_blocks == 0:
            raise InputError("pixel CKA: no blocks were accumulated")
        m = np.triu(self.sum_upper)
        m = m + np.triu(m, 1).T
        m /= self.n_blocks
        np.fill_diagonal(m, 1.0)
        np.clip(m, -1.0, 1.0, out=m)
        return m

    def reset(self) -> None:
        """Forget every block."""
        self.sum_upper[...] = 0.0
        self.n_blocks = 0

"""Cross-region CKA (how far Theorem 1's independence assumption holds) and constant-pixel detection.

Both are sums over real images run as partition tasks on :func:`promptprism.scale.current_runner`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...scale import current_runner
from ...stats.accumulators import MinMaxAccumulator, SumsAccumulator
from ...stats.two_sample import center_gram
from .region_cms import region_sqdists
from .sources import as_pixels, onehot, read_pixels, task_rows
from .two_sample import block_indices


def cross_cka_partition(source: Any, indices: np.ndarray | None, block_size: int, labels: np.ndarray,
                        gamma: float) -> SumsAccumulator:
    """Task: sum over consecutive blocks of the given images of the C x C region CKA (eq. 13), and count."""
    px = read_pixels(source, indices)
    member = onehot(labels)
    n_reg = member.shape[1]
    acc = np.zeros((n_reg, n_reg))
    b = int(block_size)
    for s in range(0, px.shape[0] // b * b, b):
        dist = region_sqdists(px[s:s + b], px[s:s + b], member)
        with np.errstate(over="ignore"):  # a huge gamma: kernel 0 off the diagonal, its limit
            kc = center_gram(np.exp(-gamma * dist))  # (C, b, b)
        flat = kc.reshape(n_reg, -1)
        norms = np.linalg.norm(flat, axis=1)
        tol = 1e-12 * b
        flat = flat * np.where(norms > tol, 1.0 / np.where(norms > tol, norms, 1.0), 0.0)[:, None]
        acc += flat @ flat.T
    return SumsAccumulator().update(sums={"cka": acc, "n": float(px.shape[0] // b)})


def pixel_range_partition(source: Any, indices: np.ndarray | None) -> MinMaxAccumulator:
    """Task: per pixel and channel, the minimum and maximum over the given images (constant pixels)."""
    return MinMaxAccumulator().update(read_pixels(source, indices))


def cross_region_cka_rows(source: Any, rows: np.ndarray, regions: Any, gamma: float, *,
                          block_size: int | None, seed: int, partition_rows: int = 512) -> np.ndarray:
    """Cross-region CKA over images ``rows`` of ``source``: one task per group of blocks."""
    labels = np.asarray(regions, dtype=np.int64).reshape(-1)
    n = len(rows)
    b = None if block_size is None or block_size >= n else int(block_size)
    blocks = [rows[i] for i, _ in block_indices(n, n, b, seed, what="cross-region CKA", paired=True)]
    size = len(blocks[0])
    per_task = max(1, int(partition_rows) // size)
    tasks = [(*task_rows(source, np.concatenate(blocks[s:s + per_task])), size, labels, gamma)
             for s in range(0, len(blocks), per_task)]
    sums, _ = current_runner().map_reduce(cross_cka_partition, tasks,
                                          description="cross-region CKA").compute()
    acc = sums["cka"] / float(sums["n"])
    np.fill_diagonal(acc, 1.0)
    return acc


def cross_region_cka(x: Any, regions: Any, gamma: float, *, block_size: int | None = 100,
                     seed: int = 0, partition_rows: int = 512) -> np.ndarray:
    """C x C CKA (eq. 13) between region kernels exp(-gamma |x_I - x'_I|^2) on (real) images, block-averaged.

    Theorem 1 assumes the off-diagonal entries are 0; their size says how far the product can be trusted.
    """
    px = as_pixels(x)
    return cross_region_cka_rows(px, np.arange(px.shape[0]), regions, gamma, block_size=block_size,
                                 seed=seed, partition_rows=partition_rows)

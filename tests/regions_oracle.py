"""The paper's nested loop for the pixel CKA matrix (Algorithm 1): the test oracle of the regions method.

Also imported by ``benchmarks/regions.py``, which times it against the matrix-product method.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from promptprism.methods.regions.sources import as_pixels


def sqdist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a_i - b_j|^2 by direct differences (rows are samples)."""
    a = np.asarray(a, dtype=np.float64).reshape(len(a), -1)
    b = np.asarray(b, dtype=np.float64).reshape(len(b), -1)
    return ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)


def pixel_cka_loop(images: Any, *, gamma: float, block_size: int | None = None, seed: int = 0,
                   pairs: Sequence[tuple[int, int]] | None = None) -> np.ndarray:
    """Reference: the paper's nested loop, CKA (eq. 13) of every pixel pair from explicit Gram matrices.

    Same blocks as :func:`promptprism.pixel_cka_matrix` with ``max_images=None``. With ``pairs`` only those
    entries are computed (the rest stay NaN): the benchmark times a subset this way. O(d^2 b^3) per block.
    """
    px = as_pixels(images)
    n, d, _ = px.shape
    rng = np.random.default_rng(seed)
    b = n if block_size is None else int(block_size)
    order = np.arange(n) if block_size is None else rng.permutation(n)
    n_blocks = n // b
    todo = pairs if pairs is not None else [(i, j) for i in range(d) for j in range(d)]
    out = np.full((d, d), np.nan)
    h = np.eye(b) - np.ones((b, b)) / b
    for i, j in todo:
        acc = 0.0
        for blk in range(n_blocks):
            vals = px[order[blk * b:(blk + 1) * b]]
            ki = np.exp(-gamma * sqdist(vals[:, i], vals[:, i]))
            kj = np.exp(-gamma * sqdist(vals[:, j], vals[:, j]))
            hij = np.trace(ki @ h @ kj @ h)
            hii = np.trace(ki @ h @ ki @ h)
            hjj = np.trace(kj @ h @ kj @ h)
            tol = 1e-12 * b
            if i == j:
                acc += 1.0
            elif math.sqrt(max(hii, 0.0)) <= tol or math.sqrt(max(hjj, 0.0)) <= tol:
                acc += 0.0
            else:
                acc += hij / math.sqrt(hii * hjj)
        out[i, j] = acc / n_blocks
    return out

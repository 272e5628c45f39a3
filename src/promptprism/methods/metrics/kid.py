"""Kernel distances on subsets: KID (Binkowski et al. 2018) and MMD with promptprism's kernels.

KID is the unbiased squared MMD (Gretton et al. 2012, eq. 3, the U-statistic MMD^2_u) under the cubic
polynomial kernel k(a, b) = (<a, b> / d + 1)^3, averaged over random subsets of both sets (Binkowski et
al. 2018, sec. 3 and app. D; clean-fid's ``kernel_distance`` and torchmetrics' KID: 100 subsets of 1000).
The per-subset MMD^2_u is the regions method's :func:`~promptprism.methods.regions.two_sample.mmd2`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import InputError, OptionError
from ...kernels import kernel_gram, polynomial_gram
from ..regions.two_sample import mmd2

Gram = Callable[[np.ndarray, np.ndarray | None], np.ndarray]


def subset_indices(n: int, m: int, size: int, n_subsets: int, seed: int
                   ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n_subsets`` pairs of row indices, ``size`` rows of each set drawn without replacement (seeded)."""
    rng = np.random.default_rng(seed)
    return [(np.sort(rng.choice(n, size, replace=False)), np.sort(rng.choice(m, size, replace=False)))
            for _ in range(n_subsets)]


def subset_mmd2(x: Any, y: Any, gram: Gram, *, n_subsets: int, subset_size: int, seed: int) -> np.ndarray:
    """MMD^2_u (Gretton et al. 2012, eq. 3) of ``gram`` on each of ``n_subsets`` random subset pairs.

    ``subset_size`` rows of each set per subset, at most the smaller set's size; every subset is the whole
    of both sets when ``subset_size`` equals both sizes: then one value, the full-set MMD^2_u.
    """
    n, m = int(x.shape[0]), int(y.shape[0])
    if subset_size == n == m:
        n_subsets = 1  # every subset would be the whole of both sets
    if subset_size < 2:
        raise OptionError(f"subset_size must be >= 2 (MMD^2_u leaves the diagonal out), got {subset_size}")
    if subset_size > min(n, m):
        raise InputError(f"subset_size {subset_size} exceeds the smaller set ({min(n, m)} rows); "
                         "pass a smaller subset_size")
    values = np.empty(n_subsets)
    for s, (i, j) in enumerate(subset_indices(n, m, subset_size, n_subsets, seed)):
        a = np.asarray(x[i], dtype=np.float64)
        b = np.asarray(y[j], dtype=np.float64)
        values[s] = mmd2(gram(a, b), gram(a, None), gram(b, None), unbiased=True)
    return values


def kernel_inception_distance(x: Any, y: Any, *, n_subsets: int = 100, subset_size: int = 1000,
                              seed: int = 0, degree: int = 3, gamma: float | None = None,
                              coef: float = 1.0) -> np.ndarray:
    """KID's per-subset values: MMD^2_u under (gamma <a, b> + coef)^degree, gamma = 1/d (Binkowski et al.
    2018, sec. 3). KID is their mean; torchmetrics also reports their standard deviation.

    ``subset_size`` is capped at the smaller set's size, as clean-fid does.
    """
    if x.shape[1] != y.shape[1]:
        raise InputError(f"the two feature sets have {x.shape[1]} and {y.shape[1]} dimensions; "
                         "they must come from the same encoder")
    size = min(int(subset_size), int(x.shape[0]), int(y.shape[0]))

    def gram(a: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        return polynomial_gram(a, b, degree=degree, gamma=gamma, coef=coef)

    return subset_mmd2(x, y, gram, n_subsets=n_subsets, subset_size=size, seed=seed)


def kernel_mmd2(x: Any, y: Any, *, kernel: str, sigma: float | None = None, n_subsets: int = 100,
                subset_size: int = 1000, seed: int = 0) -> np.ndarray:
    """Per-subset MMD^2_u (Gretton et al. 2012, eq. 3) under one of promptprism's normalised kernels
    (``cosine``, or ``gaussian`` with bandwidth ``sigma``: :func:`~promptprism.kernels.kernel_gram`)."""
    size = min(int(subset_size), int(x.shape[0]), int(y.shape[0]))

    def gram(a: np.ndarray, b: np.ndarray | None) -> np.ndarray:
        return kernel_gram(kernel, a, b, sigma=sigma)

    return subset_mmd2(x, y, gram, n_subsets=n_subsets, subset_size=size, seed=seed)

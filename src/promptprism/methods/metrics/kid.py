"""Kernel distances on subsets: KID (Binkowski et al. 2018) and MMD with promptprism's kernels.

KID is the unbiased squared MMD (Gretton et al. 2012, eq. 3, the U-statistic MMD^2_u) under the cubic
polynomial kernel k(a, b) = (<a, b> / d + 1)^3, averaged over random subsets of both sets (Binkowski et
al. 2018, sec. 3 and app. D; clean-fid's ``kernel_distance`` and torchmetrics' KID: 100 subsets of 1000).
The per-subset MMD^2_u is the shared :func:`~promptprism.stats.two_sample.mmd2` for a
Gram callable (:func:`subset_mmd2`); KID and promptprism's kernels compute the same equation from kernel
sums, every kernel from one Gram matrix per subset pair (:mod:`.kernel_sums`), the pairs on threads, or
for float32 features from the k-NN metrics' distance blocks (:func:`gather_subsets`, :mod:`.subset_gather`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._validation import check_feature_pair, check_same_width
from ...array_ops import map_in_threads, sorted_subsample
from ...errors import InputError, OptionError
from ...kernels.gram import check_kernel
from ...stats.two_sample import mmd2
from .kernel_sums import KernelSums, SubsetKernel, kernel_sums, mmd2_from_sums
from .neighbours import MAX_THREADS
from .subset_gather import SubsetGather, fusable

Gram = Callable[[np.ndarray, np.ndarray | None], np.ndarray]
#: the largest value KID's polynomial kernel may reach: the squares of its values, summed over a subset's
#: pairs for the interval, stay finite in float64 (and the U-statistic keeps a meaningful precision)
KID_MAX_KERNEL = 1e100
#: the smallest log10 of gamma |<a, b>| (bounded by gamma d max|a| max|b|) beside the kernel's constant that
#: KID accepts: below it a kernel value keeps under 4 of float64's 16 digits of what the inner product adds
KID_MIN_LOG_INNER = -12.0


def check_kid_scale(x: Any, y: Any, *, degree: int, gamma: float, coef: float) -> None:
    """Refuse embeddings whose scale takes (gamma <a, b> + coef)^degree beyond :data:`KID_MAX_KERNEL`, or
    keeps gamma <a, b> so small beside ``coef`` that the kernel rounds to a constant
    (:data:`KID_MIN_LOG_INNER`), bounded by |<a, b>| <= d max|a| max|b| over every pair the estimate reads
    (a set with itself too: the larger of the two sets' scales, squared; in logarithms: the values may be
    near float64's own limits)."""
    if not (np.isfinite(gamma) and gamma > 0):
        raise OptionError(f"gamma must be a finite number > 0, got {gamma!r}", parameter="gamma")
    amax = [0.0 if v.size == 0 else max(abs(float(np.max(v))), abs(float(np.min(v)))) for v in
            (np.asarray(x), np.asarray(y))]  # in the features' own dtype: max and min are exact, no copy
    if max(amax) == 0.0:
        return
    log_inner = np.log10(gamma * x.shape[1]) + 2.0 * np.log10(max(amax))
    if coef and log_inner - np.log10(abs(coef)) < KID_MIN_LOG_INNER:
        raise InputError(f"KID: output values at most {max(amax):.3g} (with gamma = {gamma:.3g}) keep "
                         f"gamma <a, b> below "
                         f"1e{log_inner:.0f} beside the kernel's constant {coef:g}: in float64 the kernel "
                         "rounds to a constant and KID reads 0 whatever the sets; rescale the embeddings "
                         "(KID is not scale-invariant; e.g. L2-normalise them)")
    log_bound = degree * max(log_inner, np.log10(abs(coef))) + degree * np.log10(2.0)
    if log_bound > np.log10(KID_MAX_KERNEL):
        raise InputError(f"KID: output values up to {max(amax):.3g} take its polynomial kernel "
                         f"(<a, b>/d + {coef:g})^{degree} to about 1e{log_bound:.0f}, beyond "
                         f"{KID_MAX_KERNEL:.0e}: "
                         "its estimate and interval lose all precision or overflow float64; rescale the "
                         "embeddings (KID is not scale-invariant; e.g. L2-normalise them)")


#: subset pairs of at least this many coordinates (subset_size x d) run on threads; smaller ones in turn
PARALLEL_ENTRIES = 2**16


def subset_indices(n: int, m: int, size: int, n_subsets: int, seed: int
                   ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n_subsets`` pairs of row indices, ``size`` rows of each set drawn without replacement (seeded)."""
    rng = np.random.default_rng(seed)
    return [(sorted_subsample(n, size, rng), sorted_subsample(m, size, rng))
            for _ in range(n_subsets)]


def projection_variances_from_sums(sums: KernelSums, gx: np.ndarray | None = None,
                                   gy: np.ndarray | None = None, *, conditional: bool = False
                                   ) -> tuple[float, float]:
    """(v_x, v_y) of :func:`projection_variances` from the kernel sums of :mod:`.kernel_sums`; with
    ``conditional`` those of :func:`conditional_variance` (the prompts held fixed)."""
    def one(rows_self: np.ndarray, diag: np.ndarray, cross: np.ndarray, other: int,
            groups: np.ndarray | None) -> float:
        rows = rows_self.size
        h = (rows_self - diag) / (rows - 1) - cross / other
        if conditional and groups is not None:
            return conditional_variance(h, groups)
        h = h - h.mean()
        sums_ = h if groups is None else np.bincount(np.unique(groups, return_inverse=True)[1], h)
        return float(np.sum(sums_**2) / rows**2)

    return (one(sums.rows_aa, sums.diag_aa, sums.rows_ab, sums.rows_bb.size, gx),
            one(sums.rows_bb, sums.diag_bb, sums.cols_ab, sums.rows_aa.size, gy))


def conditional_variance(h: np.ndarray, groups: np.ndarray) -> float:
    """The variance of the mean of ``h`` over rows drawn independently within fixed prompts ``groups``:
    sum_g sum_{i in g} (h(i) - mean_g h)^2 n_g / (n_g - 1) / rows^2 (each prompt's own spread, unbiased);
    a prompt of one row is taken about the mean of all rows (its own spread is not seen)."""
    codes, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, h, minlength=codes.size) / counts
    single = counts[inverse] == 1
    dev = np.where(single, h - h.mean(), h - means[inverse])
    scale = np.where(single, 1.0, counts[inverse] / np.maximum(counts[inverse] - 1, 1))
    return float(np.sum(dev**2 * scale) / h.size**2)


def projection_variances(k_xy: np.ndarray, k_xx: np.ndarray, k_yy: np.ndarray, gx: np.ndarray | None = None,
                         gy: np.ndarray | None = None) -> tuple[float, float]:
    """(v_x, v_y): the cluster-robust variances of the means of MMD^2_u's first-order (Hoeffding)
    projections over these rows, h_x(i) = mean_{j != i} K_xx[i, j] - mean_j K_xy[i, j] and h_y(j) =
    mean_{i != j} K_yy[i, j] - mean_i K_xy[i, j]: v = sum_g (sum_{i in g} (h(i) - mean h))^2 / rows^2 over
    the clusters g (``gx``, ``gy``: labels; None: each row its own). Var(MMD^2_u) ~ 4 v_x + 4 v_y (the
    two-sample U-statistic's delta method, Serfling 1980, sec. 5.5, for a kernel of degree (2, 2))."""
    sums = KernelSums(k_xx.sum(axis=1), np.diag(k_xx).copy(), k_yy.sum(axis=1), np.diag(k_yy).copy(),
                      k_xy.sum(axis=1), k_xy.sum(axis=0))
    return projection_variances_from_sums(sums, gx, gy)


def mmd2_interval(values: np.ndarray, parts: np.ndarray, sizes: tuple[int, int], level: float) -> dict:
    """{'low', 'high'}: a normal interval for the population MMD^2 around the mean of the subset values.

    ``parts`` (subsets, 2): each subset's :func:`projection_variances` at its own size s; scaled to the
    full sets (n, m) by s / n and s / m, they give Var of the full-set MMD^2_u (the mean over all subsets
    of a U-statistic is the full-set U-statistic); the subsets' own spread adds Var(values) / subsets.
    """
    from scipy.stats import norm

    n, m = sizes
    var = 4.0 * float(np.mean(parts[:, 0])) + 4.0 * float(np.mean(parts[:, 1]))
    if values.size > 1:
        var += float(np.var(values, ddof=1)) / values.size
    half = float(norm.ppf(0.5 + level / 2.0)) * np.sqrt(max(var, 0.0))
    centre = float(values.mean())
    return {"low": centre - half, "high": centre + half}


def _check_subsets(n: int, m: int, subset_size: int, n_subsets: int) -> int:
    """The number of subsets to draw (1 when every subset would be the whole of both sets)."""
    if subset_size < 2:
        raise OptionError(f"subset_size must be >= 2 (MMD^2_u leaves the diagonal out), got {subset_size}")
    if subset_size > min(n, m):
        raise InputError(f"subset_size {subset_size} exceeds the smaller set ({min(n, m)} rows); "
                         "pass a smaller subset_size")
    return 1 if subset_size == n == m else n_subsets


def subset_mmd2(x: Any, y: Any, gram: Gram, *, n_subsets: int, subset_size: int, seed: int,
                groups: tuple | None = None) -> np.ndarray:
    """MMD^2_u (Gretton et al. 2012, eq. 3) of ``gram`` on each of ``n_subsets`` random subset pairs.

    ``subset_size`` rows of each set per subset, at most the smaller set's size; every subset is the whole
    of both sets when ``subset_size`` equals both sizes: then one value, the full-set MMD^2_u. With
    ``groups`` = (labels of x's rows or None, labels of y's rows or None) the result is (values, parts):
    each subset's :func:`projection_variances` too, scaled to the full sets (:func:`mmd2_interval`).
    """
    n, m = int(x.shape[0]), int(y.shape[0])
    n_subsets = _check_subsets(n, m, subset_size, n_subsets)
    values, parts = np.empty(n_subsets), np.empty((n_subsets, 2))
    for s, (i, j) in enumerate(subset_indices(n, m, subset_size, n_subsets, seed)):
        a = np.asarray(x[i], dtype=np.float64)
        b = np.asarray(y[j], dtype=np.float64)
        k_xy, k_xx, k_yy = gram(a, b), gram(a, None), gram(b, None)
        values[s] = mmd2(k_xy, k_xx, k_yy, unbiased=True)
        if groups is not None:
            gx, gy = (None if g is None else np.asarray(g)[rows]
                      for g, rows in zip(groups, (i, j), strict=True))
            vx, vy = projection_variances(k_xy, k_xx, k_yy, gx, gy)
            parts[s] = vx * subset_size / n, vy * subset_size / m
    return values if groups is None else (values, parts)


def gram_precision(x: Any, y: Any) -> type:
    """The subset Gram matrices' precision: float32 when both sets are float32 or narrower (the features'
    own precision, as torchmetrics' KID), else float64."""
    narrow = all(np.issubdtype(v.dtype, np.floating) and np.dtype(v.dtype).itemsize <= 4 for v in (x, y))
    return np.float32 if narrow else np.float64


def subset_kernel_mmd2(x: Any, y: Any, kernels: list[SubsetKernel], *, n_subsets: int, subset_size: int,
                       seed: int, groups: tuple | None = None, gathered: SubsetGather | None = None,
                       conditional: tuple[bool, ...] = ()) -> list:
    """MMD^2_u of each kernel on each of ``n_subsets`` random subset pairs (the same pairs for every
    kernel), one Gram matrix per pair in :func:`gram_precision` for all of them
    (:func:`.kernel_sums.kernel_sums`), or the sums ``gathered`` off the k-NN metrics' distance blocks
    (:func:`gather_subsets`, passed through :func:`.prdc.neighbour_indicators`).

    As :func:`subset_mmd2` (same subsets, same values), one entry per kernel: the values, or with
    ``groups`` (values, parts); ``conditional`` (one flag per kernel, default all False): that kernel's
    parts with the prompts held fixed (:func:`conditional_variance`).
    """
    n, m = int(x.shape[0]), int(y.shape[0])
    n_subsets = _check_subsets(n, m, subset_size, n_subsets)
    gram_dtype = gram_precision(x, y)
    pairs = subset_indices(n, m, subset_size, n_subsets, seed)
    ready = None if gathered is None else dict(enumerate(gathered.sums_for(pairs, kernels)))

    def one_pair(at: int) -> list[tuple[float, tuple[float, float]]]:
        i, j = pairs[at]
        sums = ready[at] if ready is not None else kernel_sums(np.asarray(x[i]), np.asarray(y[j]), kernels,
                                                                gram_dtype=gram_dtype)
        labels = None if groups is None else [None if g is None else np.asarray(g)[rows]
                                              for g, rows in zip(groups, (i, j), strict=True)]
        out = []
        for one, fixed in zip(sums, conditional or (False,) * len(kernels), strict=True):
            vx, vy = (0.0, 0.0) if labels is None else projection_variances_from_sums(one, *labels,
                                                                                      conditional=fixed)
            out.append((mmd2_from_sums(one), (vx * subset_size / n, vy * subset_size / m)))
        return out

    # one BLAS thread per product, in turn as on threads: the same sums whatever the number of workers
    parallel = ready is None and subset_size * x.shape[1] >= PARALLEL_ENTRIES
    done = map_in_threads(one_pair, range(len(pairs)), None if parallel else 1, cap=MAX_THREADS)
    values = [np.array([pair[q][0] for pair in done]) for q in range(len(kernels))]
    parts = [np.array([pair[q][1] for pair in done]).reshape(-1, 2) for q in range(len(kernels))]
    return values if groups is None else list(zip(values, parts, strict=True))


def kernel_inception_distance(x: Any, y: Any, *, n_subsets: int = 100, subset_size: int = 1000,
                              seed: int = 0, degree: int = 3, gamma: float | None = None,
                              coef: float = 1.0, groups: tuple | None = None) -> np.ndarray:
    """KID's per-subset values: MMD^2_u under (gamma <a, b> + coef)^degree, gamma = 1/d (Binkowski et al.
    2018, sec. 3). KID is their mean; torchmetrics also reports their standard deviation.

    ``subset_size`` is capped at the smaller set's size, as clean-fid does. ``groups``: as
    :func:`subset_mmd2` (then (values, variance parts)).
    """
    x, y = check_feature_pair(x, y, ("x", "y"))
    size = min(int(subset_size), int(x.shape[0]), int(y.shape[0]))
    check_kid_scale(x, y, degree=degree, gamma=1.0 / x.shape[1] if gamma is None else gamma, coef=coef)
    kernel = SubsetKernel("polynomial", degree=degree, gamma=gamma, coef=coef)
    return subset_kernel_mmd2(x, y, [kernel], n_subsets=n_subsets, subset_size=size, seed=seed,
                              groups=groups)[0]


def mmd_kernel(kernel: str, sigma: float | None) -> SubsetKernel:
    """The :class:`SubsetKernel` of one of promptprism's normalised kernels (``cosine``, or ``gaussian`` with
    bandwidth ``sigma``: the kernels of :func:`~promptprism.kernels.kernel_gram`)."""
    if check_kernel(kernel) == "gaussian" and sigma is None:
        raise OptionError("the gaussian kernel needs a bandwidth sigma")
    return SubsetKernel(kernel, sigma=sigma if kernel == "gaussian" else None)


def kernel_mmd2(x: Any, y: Any, *, kernel: str, sigma: float | None = None, n_subsets: int = 100,
                subset_size: int = 1000, seed: int = 0, groups: tuple | None = None) -> np.ndarray:
    """Per-subset MMD^2_u (Gretton et al. 2012, eq. 3) under one of promptprism's normalised kernels
    (``cosine``, or ``gaussian`` with bandwidth ``sigma``: :func:`~promptprism.kernels.kernel_gram`)."""
    size = min(int(subset_size), int(x.shape[0]), int(y.shape[0]))
    return subset_kernel_mmd2(x, y, [mmd_kernel(kernel, sigma)], n_subsets=n_subsets, subset_size=size,
                              seed=seed, groups=groups)[0]


def kid_and_mmd2(x: Any, y: Any, *, kernel: str, sigma: float | None = None, n_subsets: int = 100,
                 subset_size: int = 1000, seed: int = 0, groups: tuple | None = None,
                 gathered: SubsetGather | None = None, conditional: bool = False) -> tuple:
    """(:func:`kernel_inception_distance`, :func:`kernel_mmd2`) with their defaults, on the same subsets
    from one Gram matrix per subset pair: MMD costs KID's elementwise work, no second product. With
    ``gathered`` (:func:`gather_subsets` of the same arguments, its blocks visited) the sums are read
    from it instead. ``conditional``: MMD's variance parts with the prompts held fixed (KID's stay
    cluster-robust)."""
    check_same_width(x, y)
    size = min(int(subset_size), int(x.shape[0]), int(y.shape[0]))
    check_kid_scale(x, y, degree=3, gamma=1.0 / x.shape[1], coef=1.0)
    kid, mmd = subset_kernel_mmd2(x, y, _kid_and_mmd_kernels(kernel, sigma), n_subsets=n_subsets,
                                  subset_size=size, seed=seed, groups=groups, gathered=gathered,
                                  conditional=(False, conditional))
    return kid, mmd


def _kid_and_mmd_kernels(kernel: str, sigma: float | None) -> list[SubsetKernel]:
    return [SubsetKernel("polynomial"), mmd_kernel(kernel, sigma)]


def gather_subsets(x: Any, y: Any, *, kernel: str, sigma: float | None = None, n_subsets: int = 100,
                   subset_size: int = 1000, seed: int = 0) -> SubsetGather | None:
    """A :class:`.subset_gather.SubsetGather` of :func:`kid_and_mmd2`'s subsets and kernels (the same
    arguments) for :func:`.prdc.neighbour_indicators` to fill from its distance blocks, or None where
    they cannot serve (features wider than float32 (:func:`gram_precision`), the cosine kernel:
    :func:`.subset_gather.fusable`)."""
    kernels = _kid_and_mmd_kernels(kernel, sigma)
    n, m = int(x.shape[0]), int(y.shape[0])
    size = min(int(subset_size), n, m)
    if gram_precision(x, y) is not np.float32 or not fusable(kernels) or x.shape[1] != y.shape[1] \
            or size < 2:  # (the Gram route says why not)
        return None
    count = _check_subsets(n, m, size, n_subsets)
    return SubsetGather(int(x.shape[1]), kernels, subset_indices(n, m, size, count, seed))

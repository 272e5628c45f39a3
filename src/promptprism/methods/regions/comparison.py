"""Region CMS of generated sets against real images: tasks mapped, sums assembled, bootstrap intervals.

Exact (``block_size`` None): eq. 4 from kernel sums over all pairs of images, one task per pair of row
chunks; the real-vs-real sums are computed once for all sets. Bootstrap (``bootstrap`` B > 0): the real
images and each generated set are resampled with replacement B times (seeded); the tasks add the
resample-weighted kernel sums (sum_ij w_i w'_j k_ij for the counts w, w' of each resample), so the B
replicates of the whole-image CMS, each region's CMS and their product cost one extra pass of matrix
products, not B recomputations. The intervals are for the population CMS (eq. 4 as n, m -> infinity):
the replicates use the U-statistic form M_xy / sqrt(U_xx U_yy) (pair means over distinct images), because
eq. 4 itself reads low by its diagonal share, relatively about (1/n)(1/U_xx - 1) / 2 + (1/m)(1/U_yy - 1) / 2
(0.987 for two halves of the same digits), and a percentile interval of a biased estimate would exclude the
value it should cover (a same-distribution region never covered 1). Each interval is reported with the
U-form estimate on all images (``debiased``); eq. 4's own estimate (the point estimate, ``cms``, the same
with or without the bootstrap) can sit just below the interval. The U form can exceed 1 where eq. 4
cannot: generated images that copy real ones pair with k = 1 across the sets while the within-set means
leave each image's pair with itself out; every value and bound is therefore clipped to [-1, 1] (the
interval intersected with it) and the excess named in the set's ``notes`` (:mod:`.bounds`).
Percentile interval at ``level``; coverage on a simulation: tests/test_regions_bootstrap.py.

Blocks (``block_size`` b): one task per block pair (appendix C). ``block_estimator="corrected"`` (default)
pools each block's unbiased pair means and puts them into eq. 4 for all n, m images
(:func:`~.region_cms.log_cms_from_pair_means`), so the estimate targets the full-sample CMS; ``"paper"``
is the paper's average of per-block eq. 4, biased downwards by about the share 1/b of the diagonal
(``block_bias`` in the result says which was used). The bootstrap then resamples the blocks (U-form
replicates from the pooled pair means, as above).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._progress import progress_enabled
from ..._validation import check_choice, check_memory, check_positive_number
from ...backend import NUMPY, Backend, resolve_backend
from ...errors import InputError
from ...scale import current_runner
from ...stats.resampling import percentile_interval, resample_counts
from .bounds import bounded_row
from .options import BLOCK_ESTIMATORS
from .region_cms import (
    log_cms_from_pair_means,
    logsumexp,
    region_block_partition,
    region_sums_partition,
)
from .sources import as_pixels, chunk_rows, source_shape, task_rows
from .two_sample import block_indices

#: default level of the bootstrap intervals
LEVEL = 0.95


def bootstrap_rng(seed: int) -> np.random.Generator:
    """The generator of the bootstrap draws: a stream of its own, derived from ``seed``."""
    return np.random.default_rng([int(seed), 0xB0075])


def log_u_cms(l_xy: np.ndarray, lu_xx: np.ndarray, lu_yy: np.ndarray, n: int, m: int) -> np.ndarray:
    """log of the U-statistic form of eq. 4, M_xy / sqrt(U_xx U_yy), from log pair means: the limit of eq. 4
    as n, m -> infinity (the population CMS), estimated without eq. 4's O(1/n) diagonal bias.

    Where a set has no two distinct images with a kernel value above the smallest float (U = 0), the U form
    is undefined and eq. 4's form for n and m images is used instead.
    """
    l_xy, lu_xx, lu_yy = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (l_xy, lu_xx, lu_yy)))
    out = np.array(log_cms_from_pair_means(l_xy, lu_xx, lu_yy, n, m), dtype=np.float64)
    ok = np.isfinite(lu_xx) & np.isfinite(lu_yy)
    out[ok] = l_xy[ok] - 0.5 * (lu_xx[ok] + lu_yy[ok])
    return out


def intervals_dict(replicates: np.ndarray, debiased: np.ndarray, level: float) -> dict[str, Any]:
    """The result's ``intervals`` entry from U-form replicates (C + 1, B) (regions, then the whole image)
    and the U-form estimate on all images (C + 1,) (``debiased``)."""
    lo, hi = percentile_interval(replicates, level, axis=-1, omit_nan=False)
    lo_p, hi_p = percentile_interval(np.prod(replicates[:-1], axis=0), level, axis=-1, omit_nan=False)
    return {"cms": {"low": float(lo[-1]), "high": float(hi[-1]), "debiased": float(debiased[-1])},
            "product_cms": {"low": float(lo_p), "high": float(hi_p),
                            "debiased": float(np.prod(debiased[:-1]))},
            "region_cms": [{"low": float(a), "high": float(b), "debiased": float(c)}
                           for a, b, c in zip(lo[:-1], hi[:-1], debiased[:-1], strict=True)]}


def _exact_intervals(logs: dict, k: int, *, n: int, m: int, counts: list, level: float) -> dict[str, Any]:
    """U-form replicates from the bootstrap-weighted sums over pairs of distinct images: a resample's copies
    of one image are not paired with each other (their k = 1 would bias U_xx up by about 1 / (n U_xx)), so
    U*_xx = sum_{i != j} w_i w_j k_ij / sum_{i != j} w_i w_j, where sum_{i != j} w_i w_j = n^2 - sum w_i^2."""
    def both(key: str, what: str) -> np.ndarray:
        return np.concatenate([logs[f"{key}/{what}_region"], logs[f"{key}/{what}_whole"][None]])

    def lu_boot(key: str, w: np.ndarray, size: int) -> np.ndarray:
        pairs = float(size) * size - np.sum(w * w, axis=0)  # 0 when one image was drawn size times
        with np.errstate(divide="ignore", invalid="ignore"):
            lu = both(key, "boot") - np.log(pairs)[None]
        lu[:, pairs == 0] = -np.inf  # no two distinct images: log_u_cms falls back to eq. 4's form
        return lu

    rep = np.exp(log_u_cms(both(f"{k}:xy", "boot") - math.log(n * m), lu_boot("xx", counts[0], n),
                           lu_boot(f"{k}:yy", counts[k + 1], m), n, m))
    debiased = np.exp(log_u_cms(both(f"{k}:xy", "off") - math.log(n * m),
                                both("xx", "off") - math.log(n * (n - 1)),
                                both(f"{k}:yy", "off") - math.log(m * (m - 1)), n, m))
    return intervals_dict(rep, debiased, level)


def _exact_tasks(ref: Any, sets: list, labels: np.ndarray, gamma: float, *, size: int,
                 counts: list | None, backend: Backend = NUMPY) -> list[tuple]:
    # each chunk is sliced once: the pair tasks share the slices (or the file set and its indices)
    rows = [chunk_rows(source_shape(src)[0], size) for src in [ref, *sets]]
    parts = [[task_rows(src, r) for r in rs] for src, rs in zip([ref, *sets], rows, strict=True)]

    def w(k: int, r: np.ndarray) -> np.ndarray | None:
        return None if counts is None else counts[k][r]

    tasks = []
    for k, key in enumerate(["xx"] + [f"{j}:yy" for j in range(len(sets))]):
        for ia, a in enumerate(parts[k]):
            for ib in range(ia, len(parts[k])):
                same = ib == ia
                boot = None if counts is None else (w(k, rows[k][ia]), None if same else w(k, rows[k][ib]))
                tasks.append((key, *a, *((None, None) if same else parts[k][ib]), labels, gamma,
                              1.0 if same else 2.0, boot, backend))
    for j in range(len(sets)):
        for ia, a in enumerate(parts[0]):
            for ib, b in enumerate(parts[j + 1]):
                boot = None if counts is None else (w(0, rows[0][ia]), w(j + 1, rows[j + 1][ib]))
                tasks.append((f"{j}:xy", *a, *b, labels, gamma, 1.0, boot, backend))
    return tasks


def _block_values(sums: dict, key: str, *, n: int, m: int, b: int, corrected: bool) -> dict[str, Any]:
    if not corrected:
        count = float(sums[f"{key}/n"])
        per = sums[f"{key}/region"] / count
        return {"cms": float(sums[f"{key}/whole"]) / count, "region_cms": per,
                "mmd2": float(sums[f"{key}/mmd"]) / count}
    nb = sums[f"{key}/blk_xy"].shape[0]
    l_xy = logsumexp(sums[f"{key}/blk_xy"], (0,)) - math.log(nb * b * b)
    lu_xx = logsumexp(sums[f"{key}/blk_xx"], (0,)) - math.log(nb * b * (b - 1))
    lu_yy = logsumexp(sums[f"{key}/blk_yy"], (0,)) - math.log(nb * b * (b - 1))
    val = np.exp(log_cms_from_pair_means(l_xy, lu_xx, lu_yy, n, m))
    vxx = 1.0 / n + (1.0 - 1.0 / n) * math.exp(lu_xx[-1])
    vyy = 1.0 / m + (1.0 - 1.0 / m) * math.exp(lu_yy[-1])
    mmd = float(vxx + vyy - 2.0 * math.exp(l_xy[-1]))
    return {"cms": float(val[-1]), "region_cms": val[:-1], "mmd2": mmd}


def _block_intervals(sums: dict, key: str, *, sizes: tuple[int, int], b: int, counts: np.ndarray,
                     level: float) -> dict[str, Any]:
    """U-form replicates with the blocks resampled (``counts``: (B, n_blocks)), pair means pooled."""
    nb = counts.shape[1]
    xy, xx, yy = (sums[f"{key}/blk_{p}"] for p in ("xy", "xx", "yy"))  # (n_blocks, C + 1)
    with np.errstate(divide="ignore"):
        logc = np.log(counts)[:, :, None]  # (B, n_blocks, 1)
    pair, within = math.log(nb * b * b), math.log(nb * b * (b - 1))
    rep = np.exp(log_u_cms(logsumexp(xy[None] + logc, (1,)) - pair, logsumexp(xx[None] + logc, (1,)) - within,
                           logsumexp(yy[None] + logc, (1,)) - within, *sizes)).T
    debiased = np.exp(log_u_cms(logsumexp(xy, (0,)) - pair, logsumexp(xx, (0,)) - within,
                                logsumexp(yy, (0,)) - within, *sizes))
    return intervals_dict(rep, debiased, level)


#: fewest blocks per set a block bootstrap resamples
MIN_BOOTSTRAP_BLOCKS = 5


def region_labels(regions: Any, pixels: int) -> np.ndarray:
    """The region map as int64 labels, one per pixel (row-major), refused unless they are the integers
    0..C-1 with every region holding a pixel: a label -1 would index the last region and a gap would add an
    empty region (CMS 1) to the product of Theorem 1."""
    raw = np.asarray(regions).reshape(-1)
    if raw.shape[0] != pixels:
        raise InputError(f"regions: {raw.shape[0]} labels for {pixels} pixels", parameter="regions")
    if raw.dtype == bool or not np.issubdtype(raw.dtype, np.number) or (
            raw.size and not np.all(np.isfinite(raw) & (raw == np.round(raw)))):
        raise InputError(f"regions: labels must be the integers 0..C-1, got {raw.dtype} values such as "
                         f"{raw[:3].tolist()}", parameter="regions")
    labels = raw.astype(np.int64)
    if labels.size and labels.min() < 0:
        raise InputError(f"regions: pixel {int(np.argmin(labels))} has the label {int(labels.min())}; labels "
                         "must be 0..C-1", parameter="regions")
    empty = np.flatnonzero(np.bincount(labels, minlength=1) == 0) if labels.size else np.array([], int)
    if empty.size:
        raise InputError(f"regions: region {int(empty[0])} has no pixel (labels 0..{int(labels.max())}); "
                         "number the regions 0..C-1 with every label used", parameter="regions")
    return labels


def compare_sources(ref: Any, sets: list, regions: Any, gamma: float, *, block_size: int | None = None,
                    seed: int = 0, partition_rows: int = 512, progress: bool | None = False,
                    bootstrap: int = 0, level: float = LEVEL, block_estimator: str = "corrected",
                    device: str | Backend = "cpu") -> list[dict[str, Any]]:
    """Region CMS of each generated set in ``sets`` against ``ref`` (pixels (n, d, c) or ImageRows).

    Returns per set ``{"cms", "product_cms", "region_cms" (C,), "mmd2", "intervals", "notes"}``
    (``intervals`` empty when ``bootstrap`` is 0): every CMS-type value and bound clipped to [-1, 1], and
    ``notes`` naming any that was beyond it (:func:`~.bounds.bounded_row`). Tasks run on
    :func:`promptprism.scale.current_runner`, their kernel sums on the backend ``device`` names
    (:func:`promptprism.backend.resolve_backend`).
    """
    backend = resolve_backend(device)
    n, d, _ = source_shape(ref)
    labels = region_labels(regions, d)
    size = int(check_positive_number(partition_rows, "partition_rows", integer=True))
    check_choice(block_estimator, BLOCK_ESTIMATORS, parameter="block_estimator")
    n_boot = int(bootstrap)
    if n_boot and block_size is None and min(n, *(source_shape(s)[0] for s in sets)) < 2:
        one = [k for k, s in enumerate(sets) if source_shape(s)[0] < 2]
        which = "the real images" if n < 2 else f"generated set {1 + one[0]} (of those given)"
        raise InputError(f"bootstrap: every image set needs at least 2 images (the intervals use pairs of "
                         f"distinct images); {which} has 1")
    if n_boot and block_size is not None:
        fewest = min(n, *(source_shape(s)[0] for s in sets)) // int(block_size)
        if fewest < MIN_BOOTSTRAP_BLOCKS:
            raise InputError(f"bootstrap: with block_size {int(block_size)} a set has {fewest} block(s) to "
                             f"resample; at least {MIN_BOOTSTRAP_BLOCKS} are needed (resampling "
                             f"{fewest} blocks gives a handful of values, an interval often one point): "
                             "lower block_size or drop it", parameter="bootstrap")
    if n_boot:  # the replicates' draw counts (int64, then float64), refused before anything is computed
        rows = n + sum(source_shape(s)[0] for s in sets)
        check_memory(16.0 * n_boot * rows, what=f"bootstrap {n_boot} ({n_boot:,} replicates over {rows:,} "
                                                 "images)", parameter="bootstrap")
    rng = bootstrap_rng(seed)
    corrected = block_estimator == "corrected"
    if block_size is None:
        counts = None if n_boot == 0 else [resample_counts(source_shape(s)[0], n_boot, rng)
                                           for s in [ref, *sets]]
        func, tasks = region_sums_partition, _exact_tasks(ref, sets, labels, gamma, size=size, counts=counts,
                                                          backend=backend)
    else:
        func, tasks = region_block_partition, []
        for k, s in enumerate(sets):
            blocks = list(block_indices(n, source_shape(s)[0], block_size, seed, what="region CMS"))
            for j, (i, jj) in enumerate(blocks):
                tasks.append((str(k), *task_rows(ref, i), *task_rows(s, jj), labels, gamma, (j, len(blocks)),
                              backend))
    sums, logs = current_runner().map_reduce(func, tasks, description="region CMS",
                                             progress=progress_enabled(progress)).compute()
    out = []
    for k, s in enumerate(sets):
        m = source_shape(s)[0]
        intervals: dict[str, Any] = {}
        if block_size is None:
            per = np.exp(logs[f"{k}:xy/region"] - 0.5 * (logs["xx/region"] + logs[f"{k}:yy/region"]))
            whole = float(np.exp(logs[f"{k}:xy/whole"] - 0.5 * (logs["xx/whole"] + logs[f"{k}:yy/whole"])))
            mmd = float(sums["xx/k"] / (n * n) + sums[f"{k}:yy/k"] / (m * m)
                        - 2.0 * sums[f"{k}:xy/k"] / (n * m))
            if n_boot:
                intervals = _exact_intervals(logs, k, n=n, m=m, counts=counts, level=level)
        else:
            b = int(block_size)
            vals = _block_values(sums, str(k), n=n, m=m, b=b, corrected=corrected)
            per, whole, mmd = vals["region_cms"], vals["cms"], vals["mmd2"]
            if n_boot:
                nb = sums[f"{k}/blk_xy"].shape[0]
                intervals = _block_intervals(sums, str(k), sizes=(n, m), b=b, level=level,
                                             counts=resample_counts(nb, n_boot, rng).T)
        out.append(bounded_row({"cms": whole, "product_cms": float(np.prod(per)),
                                "region_cms": np.asarray(per), "mmd2": mmd, "intervals": intervals},
                               replicates=int(n_boot or 0), blocks=block_size is not None))
    return out


def region_cms(x: Any, y: Any, regions: Any, gamma: float, *, block_size: int | None = None,
               seed: int = 0, partition_rows: int = 512, bootstrap: int = 0, level: float = LEVEL,
               block_estimator: str = "corrected", device: str = "cpu") -> dict[str, Any]:
    """CMS (eq. 4) of the whole image, of each region and their product (Theorem 1), real ``x`` vs ``y``.

    ``x``, ``y``: images (n, H, W[, C]) of the same size; ``regions``: H*W labels 0..C-1 (row-major).
    Returns ``{"cms", "product_cms", "region_cms" (C,), "mmd2", "intervals", "notes"}`` (values clipped to
    [-1, 1], :func:`~.bounds.bounded_row`); with ``block_size`` the block
    estimator (``block_estimator``: "corrected" or the paper's average) and the product is of the block
    estimates of each region. ``bootstrap`` B > 0 adds percentile intervals at ``level`` (seeded by
    ``seed``). The kernel sums run as tasks over pairs of row chunks of ``partition_rows``, on the backend
    ``device`` names ('cpu' = numpy, 'torch', 'cuda', 'auto', ...).
    """
    px, py = as_pixels(x, "real images"), as_pixels(y, "generated images")
    if px.shape[1:] != py.shape[1:]:
        raise InputError(f"real and generated images differ in size or channels: {np.shape(x)[1:]} vs "
                         f"{np.shape(y)[1:]}")
    return compare_sources(px, [py], regions, gamma, block_size=block_size, seed=seed,
                           partition_rows=partition_rows, bootstrap=bootstrap, level=level,
                           block_estimator=block_estimator, device=device)[0]

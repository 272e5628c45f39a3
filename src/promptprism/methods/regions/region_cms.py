"""CMS of the whole image, of each region and their product (Theorem 1), exact or over blocks.

The image kernel is k_img(x, y) = exp(-gamma |x - y|^2) = prod_I exp(-gamma |x_I - y_I|^2) (one gamma for
every region, :mod:`promptprism.kernels.rbf`), so eq. 4 applies to every region kernel k_I and to k_img.
Sums of kernel values are kept in log space (log-sum-exp of -gamma d^2): kernel values that underflow one
by one still count, and a CMS reads 0 only when it is itself below the smallest float. The squared
distances are the kernels' one routine (:func:`promptprism.kernels.distances.squared_distances`: exact for
offset-dominated pixels; inf, i.e. kernel 0, beyond float64), so pixels of 1e300 give a CMS of 0, never
NaN.

Every sum over images is a partition task returning a mergeable
:class:`~promptprism.stats.accumulators.SumsAccumulator`: :func:`region_sums_partition` (the exact sums over
a pair of image chunks, with bootstrap-weighted sums when resampling counts are given) and
:func:`region_block_partition` (one block of the block estimators). They run on
:func:`promptprism.scale.current_runner`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...array_ops import index_array, is_numpy
from ...backend import NUMPY, Backend, array_namespace, to_numpy
from ...kernels.gram import squared_distances
from ...stats.accumulators import SumsAccumulator
from ...stats.two_sample import mmd2
from .sources import onehot, read_pixels


def region_sqdists(x: Any, y: Any, membership: Any) -> Any:
    """Per-region squared distances |x_I - y_I|^2 as (C, n, m): the kernels' one squared-distance routine
    (:func:`~promptprism.kernels.distances.squared_distances`) on each region's pixels; their sum over
    regions is the whole image's.

    ``x``, ``y``: pixels (n, d, c) and (m, d, c) (``y is x``: the distances within ``x``, diagonal 0);
    ``membership``: (d, C) one-hot regions. On the backend of ``x`` (numpy or torch); a distance beyond
    float64 is inf (kernel value 0).
    """
    same = y is x
    xp = array_namespace(x)
    out = xp.empty((membership.shape[1], x.shape[0], y.shape[0]), dtype=xp.float64,
                   **({} if is_numpy(x) else {"device": x.device}))
    member = to_numpy(membership)
    for r in range(membership.shape[1]):
        sel = index_array(np.flatnonzero(member[:, r] > 0), x)
        xr = xp.reshape(x[:, sel], (x.shape[0], -1))
        out[r] = squared_distances(xr, None if same else xp.reshape(y[:, sel], (y.shape[0], -1)))
    return out


def logsumexp(a: Any, axis: tuple[int, ...]) -> Any:
    """log sum exp over ``axis`` (kept stable by the maximum); -inf where every term is -inf (a sum of 0)."""
    xp = array_namespace(a)
    mx = xp.max(a, axis=axis, keepdims=True)
    mx = xp.where(xp.isfinite(mx), mx, xp.zeros_like(mx))
    with np.errstate(divide="ignore"):
        return xp.squeeze(xp.log(xp.sum(xp.exp(a - mx), axis=axis, keepdims=True)) + mx, axis=axis)


def weighted_logsumexp(a: Any, wx: Any, wy: Any) -> Any:
    """log sum_ij wx[i, b] wy[j, b] exp(a[..., i, j]) for each column b of the weights: (..., B).

    The bootstrap form of the kernel sums of eq. 4: ``wx``, ``wy`` hold how often each image is drawn in
    each resample.
    """
    xp = array_namespace(a)
    mx = xp.max(a, axis=(-2, -1), keepdims=True)
    mx = xp.where(xp.isfinite(mx), mx, xp.zeros_like(mx))
    e = xp.exp(a - mx)
    s = e @ wy  # (..., i, B)
    s *= wx
    with np.errstate(divide="ignore"):
        return xp.log(xp.sum(s, axis=-2)) + mx[..., 0, 0][..., None]


def _without_diagonal(e: Any) -> Any:
    """A copy of log-kernel values (..., n, n) with the diagonal (an image with itself) at -inf."""
    e = array_namespace(e).asarray(e, copy=True)
    idx = index_array(np.arange(e.shape[-1]), e)
    e[..., idx, idx] = -np.inf
    return e


def _on_backend(backend: Backend, *pixels: np.ndarray) -> tuple[Backend, tuple]:
    """The backend a task computes on and its pixels there (float64 on torch)."""
    if backend.name == "numpy":
        return NUMPY, pixels
    return backend, tuple(backend.asarray(np.require(p, requirements="W"), "float64") for p in pixels)


def _wide(backend: Backend) -> str | None:
    """The dtype values moved to ``backend`` take: unchanged on numpy, float64 on torch."""
    return None if backend.name == "numpy" else "float64"


def _host(logs: dict) -> dict:
    """The values of ``logs`` as numpy (float64) arrays or floats."""
    return {k: (np.asarray(to_numpy(v), dtype=np.float64) if hasattr(v, "shape") and v.ndim else
                float(v)) for k, v in logs.items()}


def log_cms_from_pair_means(l_xy: Any, lu_xx: Any, lu_yy: Any, n: int, m: int) -> np.ndarray:
    """log of eq. 4 for n and m samples from log pair means (log-space form of ``cms_from_pair_means``).

    ``l_xy``: log mean of k over cross pairs; ``lu_xx``, ``lu_yy``: log means over distinct pairs within each
    sample. log CMS = l_xy - (log(1/n + (1 - 1/n) e^lu_xx) + log(1/m + (1 - 1/m) e^lu_yy)) / 2.
    """
    with np.errstate(divide="ignore"):
        den_x = np.logaddexp(-math.log(n), math.log1p(-1.0 / n) + np.asarray(lu_xx) if n > 1 else -np.inf)
        den_y = np.logaddexp(-math.log(m), math.log1p(-1.0 / m) + np.asarray(lu_yy) if m > 1 else -np.inf)
    return np.asarray(l_xy) - 0.5 * (den_x + den_y)  # the denominators are >= -log n: never -inf


def region_sums_partition(key: str, x_source: Any, x_indices: np.ndarray | None, y_source: Any,
                          y_indices: np.ndarray | None, labels: np.ndarray, gamma: float,
                          weight: float = 1.0, counts: tuple | None = None,
                          backend: Backend = NUMPY) -> SumsAccumulator:
    """Task: kernel sums between two chunks of images, times ``weight`` (the terms of eq. 4 and eq. 16).

    Log-sums ``key/region`` (C,) of sum_ij exp(-gamma |x_I - y_I|^2) per region and ``key/whole`` of the
    image kernel, and the plain sum ``key/k`` of the image kernel (for MMD^2). ``y_source`` None: the chunk
    with itself (the rows are read once). ``key/off_region`` and ``key/off_whole``: the same over pairs of
    distinct images only (the chunk with itself leaves its diagonal out), for the U-statistic pair means.
    ``counts``: ``(wx, wy)``, how often each row of the chunks is drawn in each of B bootstrap resamples
    (``wy`` None with ``y_source`` None); adds the weighted log-sums over pairs of distinct images,
    ``key/boot_region`` (C, B) and ``key/boot_whole`` (B,). ``backend``: where the sums are computed.
    """
    x = read_pixels(x_source, x_indices)
    if y_source is None:
        backend, (x,) = _on_backend(backend, x)
        y = x
    else:
        backend, (x, y) = _on_backend(backend, x, read_pixels(y_source, y_indices))
    xp = backend.xp
    dist = region_sqdists(x, y, backend.asarray(onehot(labels), _wide(backend)))
    with np.errstate(over="ignore"):  # a huge gamma: log-kernels of -inf, i.e. kernel 0, its limit
        e = -gamma * dist
        whole = -gamma * xp.sum(dist, axis=0)
    log_w = math.log(weight)
    ax = (-2, -1)
    log_sums = {f"{key}/region": logsumexp(e, ax) + log_w, f"{key}/whole": logsumexp(whole, ax) + log_w}
    if y_source is None:
        e, whole_off = _without_diagonal(e), _without_diagonal(whole)
    else:
        whole_off = whole
    log_sums[f"{key}/off_region"] = logsumexp(e, ax) + log_w
    log_sums[f"{key}/off_whole"] = logsumexp(whole_off, ax) + log_w
    if counts is not None:
        wx, wy = counts
        wy = wx if wy is None else wy
        wx, wy = backend.asarray(wx, _wide(backend)), backend.asarray(wy, _wide(backend))
        log_sums[f"{key}/boot_region"] = weighted_logsumexp(e, wx, wy) + log_w
        log_sums[f"{key}/boot_whole"] = weighted_logsumexp(whole_off, wx, wy) + log_w
    return SumsAccumulator().update(sums={f"{key}/k": weight * float(xp.sum(xp.exp(whole)))},
                                    log_sums=_host(log_sums))


def region_block_partition(key: str, x_source: Any, x_indices: np.ndarray | None, y_source: Any,
                           y_indices: np.ndarray | None, labels: np.ndarray, gamma: float,
                           block: tuple[int, int] | None = None, backend: Backend = NUMPY
                           ) -> SumsAccumulator:
    """Task: one block pair of the block estimators (appendix C), as sums ``key/...`` with a count.

    The paper's per-block values: CMS per region ``key/region`` and whole ``key/whole`` (eq. 4 on the
    block), MMD^2 ``key/mmd`` (eq. 16), ``key/n`` = 1. With ``block = (s, n_blocks)`` also the block's log
    pair sums, row s of ``key/blk_xy`` (all cross pairs), ``key/blk_xx`` and ``key/blk_yy`` (distinct pairs):
    (n_blocks, C + 1) arrays (regions, then the whole image) for the corrected estimator and the bootstrap.
    ``backend``: where the sums are computed.
    """
    backend, (xb, yb) = _on_backend(backend, read_pixels(x_source, x_indices),
                                    read_pixels(y_source, y_indices))
    xp = backend.xp
    member = backend.asarray(onehot(labels), _wide(backend))
    dxx, dxy, dyy = (region_sqdists(xb, xb, member), region_sqdists(xb, yb, member),
                     region_sqdists(yb, yb, member))
    ax = (-2, -1)
    per = xp.exp(logsumexp(-gamma * dxy, ax)
                 - 0.5 * (logsumexp(-gamma * dxx, ax) + logsumexp(-gamma * dyy, ax)))
    sxx, sxy, syy = xp.sum(dxx, axis=0), xp.sum(dxy, axis=0), xp.sum(dyy, axis=0)
    whole = float(xp.exp(logsumexp(-gamma * sxy, ax)
                         - 0.5 * (logsumexp(-gamma * sxx, ax) + logsumexp(-gamma * syy, ax))))
    mmd = mmd2(xp.exp(-gamma * sxy), xp.exp(-gamma * sxx), xp.exp(-gamma * syy))  # eq. 16
    sums = {f"{key}/region": np.asarray(to_numpy(per)), f"{key}/whole": whole, f"{key}/mmd": mmd,
            f"{key}/n": 1.0}
    if block is not None:
        s, n_blocks = block
        for name, e in (("xy", -gamma * dxy), ("xx", -gamma * dxx), ("yy", -gamma * dyy)):
            e = xp.concat([e, xp.sum(e, axis=0)[None]])  # (C + 1, b, b): the regions, then the whole image
            if name != "xy":  # distinct pairs only: the diagonal's k = 1 is the bias of the paper's form
                e = _without_diagonal(e)
            row = np.zeros((n_blocks, e.shape[0]))
            row[s] = to_numpy(logsumexp(e, ax))
            sums[f"{key}/blk_{name}"] = row
    return SumsAccumulator().update(sums=sums)

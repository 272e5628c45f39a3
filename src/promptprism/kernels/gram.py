"""Gram matrices of the normalised kernels (pure functions over arrays, numpy or torch: the array API)."""

from __future__ import annotations

import numpy as np
from array_api_compat import device

from ..array_ops import column_median, row_norms
from ..backend import array_namespace, float_dtype, inplace
from ..errors import OptionError

KERNELS = ("cosine", "gaussian")


def check_kernel(kernel: str) -> str:
    """``kernel`` when it names one of :data:`KERNELS`; otherwise an OptionError naming the parameter."""
    if kernel not in KERNELS:
        raise OptionError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
    return kernel


#: blocks up to this many pair-coordinates (n * m * d) get their distances from direct differences
DIRECT_MAX = 2**22


def _dtype(xp, dtype) -> object:
    """``xp``'s dtype of the numpy dtype (or name) ``dtype``."""
    return float_dtype(xp, np.dtype(dtype).name)


def _zero_diagonal(xp, x) -> None:
    i = xp.arange(x.shape[0], device=device(x))
    x[i, i] = 0.0


def squared_distances(a, b=None, *, dtype: type = np.float64):
    """|a_i - b_j|^2, exact to round-off for any location of the data; never negative.

    The distance is translation invariant, so the rows are first centred on their coordinate-wise median
    (robust: one row at 1e300 does not shift the others into round-off, as their mean would): the
    expansion |a|^2 + |b|^2 - 2 <a, b> then works on numbers of the size of the distances themselves and does
    not cancel catastrophically for near-duplicate rows far from the origin (e.g. rows of ones plus 1e-12
    noise). Small blocks use direct differences sum_k (a_ik - b_jk)^2. The centring is float64, the
    distances (and the result) in ``dtype``. Written over the array API: numpy arrays in, numpy out; torch
    tensors in, torch out (on their device).
    """
    xp = array_namespace(a)
    f8, dt = xp.float64, _dtype(xp, dtype)
    a = xp.asarray(a, dtype=f8)
    same = b is None
    b = a if same else xp.asarray(b, dtype=f8)
    n, m, d = a.shape[0], b.shape[0], a.shape[1]
    center = column_median(a if same else xp.concat([a, b], axis=0))
    # rows whose squares overflow: their distances are inf (kernel 0), never NaN, and no numpy warning
    with np.errstate(over="ignore", invalid="ignore"):
        a = xp.astype(a - center, dt)
        b = a if same else xp.astype(b - center, dt)
        if n * m * d <= DIRECT_MAX:
            d2 = xp.empty((n, m), dtype=dt, device=device(a))
            step = max(1, DIRECT_MAX // max(m * d, 1))
            for start in range(0, n, step):
                diff = a[start : start + step, None, :] - b[None, :, :]
                d2[start : start + step, ...] = xp.sum(diff * diff, axis=2)
        else:
            sq_a = xp.sum(a * a, axis=1)
            sq_b = sq_a if same else xp.sum(b * b, axis=1)
            d2 = a @ b.T
            d2 *= -2.0
            d2 += sq_a[:, None]
            d2 += sq_b[None, :]
            d2[xp.isnan(d2)] = xp.inf
            d2[d2 < 0.0] = 0.0
    if same:
        _zero_diagonal(xp, d2)
    return d2


def _unit_rows(xp, a):
    return a / row_norms(a)


def cosine_gram(a, b=None, *, dtype: type = np.float64):
    """k(a, b) = <a, b> / (|a| |b|), in ``dtype`` (numpy or torch, as the input)."""
    xp = array_namespace(a)
    dt = _dtype(xp, dtype)
    an = _unit_rows(xp, xp.asarray(a, dtype=dt))
    if b is None:
        k = an @ an.T
        i = xp.arange(k.shape[0], device=device(k))
        k[i, i] = 1.0
        return k
    return an @ _unit_rows(xp, xp.asarray(b, dtype=dt)).T


def gaussian_gram(a, b=None, *, sigma: float, dtype: type = np.float64):
    """k(a, b) = exp(-|a - b|^2 / (2 sigma^2)), in ``dtype`` (numpy or torch, as the input)."""
    if not sigma > 0:
        raise OptionError(f"gaussian kernel bandwidth sigma must be > 0, got {sigma!r}")
    d2 = squared_distances(a, b, dtype=dtype)
    d2 *= -1.0 / (2.0 * sigma * sigma)
    return inplace("exp", d2)


def kernel_gram(kernel: str, a, b=None, *, sigma: float | None = None, dtype: type = np.float64):
    """Dispatch on the kernel name ('cosine' or 'gaussian'); the matrix in ``dtype``."""
    if check_kernel(kernel) == "cosine":
        return cosine_gram(a, b, dtype=dtype)
    if sigma is None:
        raise OptionError("the gaussian kernel needs a bandwidth sigma")
    return gaussian_gram(a, b, sigma=sigma, dtype=dtype)


def polynomial_gram(a, b=None, *, degree: int = 3, gamma: float | None = None, coef: float = 1.0,
                    dtype: type = np.float64):
    """k(a, b) = (gamma <a, b> + coef)^degree, gamma = 1 / d by default: KID's kernel (Binkowski et al.
    2018, sec. 3; degree 3, coef 1). Not normalised (k(a, a) != 1), so not one of :data:`KERNELS`."""
    xp = array_namespace(a)
    dt = _dtype(xp, dtype)
    a = xp.asarray(a, dtype=dt)
    b = a if b is None else xp.asarray(b, dtype=dt)
    g = 1.0 / a.shape[1] if gamma is None else float(gamma)
    k = a @ b.T
    k *= g
    k += coef
    return k**degree

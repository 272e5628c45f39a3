"""Gram matrices of the normalised kernels (pure functions over arrays)."""

from __future__ import annotations

import numpy as np

from ..errors import OptionError

KERNELS = ("cosine", "gaussian")


def check_kernel(kernel: str) -> str:
    """``kernel`` when it names one of :data:`KERNELS`; otherwise an OptionError naming the parameter."""
    if kernel not in KERNELS:
        raise OptionError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
    return kernel


#: blocks up to this many pair-coordinates (n * m * d) get their distances from direct differences
DIRECT_MAX = 2**22


def squared_distances(a: np.ndarray, b: np.ndarray | None = None, *, dtype: type = np.float64
                      ) -> np.ndarray:
    """|a_i - b_j|^2, exact to round-off for any location of the data; never negative.

    The distance is translation invariant, so the rows are first centred on their common mean: the
    expansion |a|^2 + |b|^2 - 2 <a, b> then works on numbers of the size of the distances themselves and does
    not cancel catastrophically for near-duplicate rows far from the origin (e.g. rows of ones plus 1e-12
    noise). Small blocks use direct differences sum_k (a_ik - b_jk)^2. The centring is float64, the
    distances (and the result) in ``dtype``.
    """
    a = np.asarray(a, dtype=np.float64)
    same = b is None
    b = a if same else np.asarray(b, dtype=np.float64)
    n, m, d = a.shape[0], b.shape[0], a.shape[1]
    center = a.mean(axis=0) if same else (a.sum(axis=0) + b.sum(axis=0)) / max(n + m, 1)
    a = (a - center).astype(dtype, copy=False)
    b = a if same else (b - center).astype(dtype, copy=False)
    if n * m * d <= DIRECT_MAX:
        d2 = np.empty((n, m), dtype=dtype)
        step = max(1, DIRECT_MAX // max(m * d, 1))
        for start in range(0, n, step):
            diff = a[start : start + step, None, :] - b[None, :, :]
            d2[start : start + step] = np.einsum("ijk,ijk->ij", diff, diff)
    else:
        sq_a = np.einsum("ij,ij->i", a, a)
        sq_b = sq_a if same else np.einsum("ij,ij->i", b, b)
        d2 = a @ b.T
        d2 *= -2.0
        d2 += sq_a[:, None]
        d2 += sq_b[None, :]
        np.maximum(d2, 0.0, out=d2)
    if same:
        np.fill_diagonal(d2, 0.0)
    return d2


def cosine_gram(a: np.ndarray, b: np.ndarray | None = None, *, dtype: type = np.float64) -> np.ndarray:
    """k(a, b) = <a, b> / (|a| |b|), in ``dtype``."""
    a = np.asarray(a, dtype=dtype)
    an = a / np.linalg.norm(a, axis=1, keepdims=True)
    if b is None:
        k = an @ an.T
        np.fill_diagonal(k, 1.0)
        return k
    b = np.asarray(b, dtype=dtype)
    return an @ (b / np.linalg.norm(b, axis=1, keepdims=True)).T


def gaussian_gram(a: np.ndarray, b: np.ndarray | None = None, *, sigma: float, dtype: type = np.float64
                  ) -> np.ndarray:
    """k(a, b) = exp(-|a - b|^2 / (2 sigma^2)), in ``dtype``."""
    if not sigma > 0:
        raise OptionError(f"gaussian kernel bandwidth sigma must be > 0, got {sigma!r}")
    d2 = squared_distances(a, b, dtype=dtype)
    d2 *= -1.0 / (2.0 * sigma * sigma)
    return np.exp(d2, out=d2)


def kernel_gram(kernel: str, a: np.ndarray, b: np.ndarray | None = None, *, sigma: float | None = None,
                dtype: type = np.float64) -> np.ndarray:
    """Dispatch on the kernel name ('cosine' or 'gaussian'); the matrix in ``dtype``."""
    if check_kernel(kernel) == "cosine":
        return cosine_gram(a, b, dtype=dtype)
    if sigma is None:
        raise OptionError("the gaussian kernel needs a bandwidth sigma")
    return gaussian_gram(a, b, sigma=sigma, dtype=dtype)

"""Gram matrices of the normalised kernels (pure functions over arrays)."""

from __future__ import annotations

import numpy as np

from ..errors import OptionError

KERNELS = ("cosine", "gaussian")


def squared_distances(a: np.ndarray, b: np.ndarray | None = None, *, dtype: type = np.float64
                      ) -> np.ndarray:
    """|a_i - b_j|^2 = |a_i|^2 + |b_j|^2 - 2 <a_i, b_j>, clipped at 0 against round-off, in ``dtype``."""
    a = np.asarray(a, dtype=dtype)
    same = b is None
    b = a if same else np.asarray(b, dtype=dtype)
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
    if kernel == "cosine":
        return cosine_gram(a, b, dtype=dtype)
    if kernel == "gaussian":
        if sigma is None:
            raise OptionError("the gaussian kernel needs a bandwidth sigma")
        return gaussian_gram(a, b, sigma=sigma, dtype=dtype)
    raise OptionError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")

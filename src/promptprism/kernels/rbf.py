"""The gaussian (RBF) kernel in the ``gamma`` parameterisation of the disentangled-mean-embeddings paper.

It is the same kernel as :func:`~promptprism.kernels.gram.gaussian_gram` (which builds it either way),
written with ``gamma`` instead of a bandwidth ``sigma``:

    k(a, b) = exp(-gamma |a - b|^2) = exp(-|a - b|^2 / (2 sigma^2)),   gamma = 1 / (2 sigma^2).

The regions method uses ``gamma`` because the kernel of an image is then the product of its pixel (or
region) kernels with one shared ``gamma`` (k_img = prod_I k_I), and the paper's bandwidth rule sets gamma
directly (``gamma = factor / median |x - x'|_2``: :func:`~promptprism.kernels.bandwidth.gamma_from_median`).
:func:`sigma_from_gamma` and :func:`gamma_from_sigma` convert between the two.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .._validation import check_positive_number
from .gram import gaussian_gram

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]


def gamma_from_sigma(sigma: float) -> float:
    """gamma = 1 / (2 sigma^2): the gaussian kernel of bandwidth ``sigma`` written as exp(-gamma d^2)."""
    sigma = float(check_positive_number(sigma, "sigma"))
    return 1.0 / (2.0 * sigma * sigma)


def sigma_from_gamma(gamma: float) -> float:
    """sigma = 1 / sqrt(2 gamma): the inverse of :func:`gamma_from_sigma`."""
    gamma = float(check_positive_number(gamma, "gamma"))
    return 1.0 / math.sqrt(2.0 * gamma)


def flat_rows(a: np.ndarray) -> np.ndarray:
    """Samples as float64 rows: (n, ...) -> (n, prod(...))."""
    a = np.asarray(a, dtype=np.float64)
    return a.reshape(a.shape[0], -1)


def rbf_kernel(gamma: float) -> Kernel:
    """k(a, b) = exp(-gamma |a - b|^2) as a callable (a, b) -> Gram matrix (rows are samples, any trailing
    shape): :func:`~promptprism.kernels.gram.gaussian_gram` with ``gamma``."""
    gamma = float(check_positive_number(gamma, "gamma"))

    def k(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return gaussian_gram(flat_rows(a), flat_rows(b), gamma=gamma)

    return k

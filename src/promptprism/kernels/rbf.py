"""The gaussian (RBF) kernel in the ``gamma`` parameterisation of the disentangled-mean-embeddings paper.

It is the same kernel as :func:`~promptprism.kernels.gram.gaussian_gram`, written with ``gamma`` instead of
a bandwidth ``sigma``:

    k(a, b) = exp(-gamma |a - b|^2) = exp(-|a - b|^2 / (2 sigma^2)),   gamma = 1 / (2 sigma^2).

The regions method uses ``gamma`` because the kernel of an image is then the product of its pixel (or
region) kernels with one shared ``gamma`` (k_img = prod_I k_I), and the paper's bandwidth rule sets gamma
directly (``gamma = factor / median |x - x'|_2``, see ``methods/regions``). :func:`sigma_from_gamma` and
:func:`gamma_from_sigma` convert between the two.

Squared distances of very large values (pixels of 1e300) overflow as |a|^2 + |b|^2 - 2 <a, b>, and values
dominated by a common offset cancel catastrophically (:func:`needs_rescaling` tells). Then the distances are
taken by direct differences (:func:`direct_squared_distances`) of values divided by a power of two
(:func:`power_of_two_scale`, exact), and gamma |a - b|^2 is formed as t * (t * d) (:func:`scale_energies`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .._validation import check_positive_number

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]

#: above this magnitude the squared norms are computed on rescaled values (squares would overflow)
_SAFE_MAGNITUDE = 1e100
#: values whose magnitude exceeds this multiple of their spread are centred first (cancellation)
_OFFSET_RATIO = 1e4


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


def expanded_squared_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a_i - b_j|^2 as |a_i|^2 + |b_j|^2 - 2 <a_i, b_j> (rows are samples), clipped at 0.

    Exact enough when the values are of moderate size and not dominated by a common offset; see
    :func:`needs_rescaling`.
    """
    d2 = np.einsum("ij,ij->i", a, a)[:, None] + np.einsum("ij,ij->i", b, b)[None, :] - 2.0 * (a @ b.T)
    return np.maximum(d2, 0.0, out=d2)


def rbf_kernel(gamma: float) -> Kernel:
    """k(a, b) = exp(-gamma |a - b|^2) as a callable (a, b) -> Gram matrix (rows are samples)."""
    gamma = float(check_positive_number(gamma, "gamma"))

    def k(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.exp(-gamma * expanded_squared_distances(flat_rows(a), flat_rows(b)))

    return k


def needs_rescaling(*arrays: np.ndarray) -> bool:
    """True when the expansion |a|^2 + |b|^2 - 2 <a, b> over these values would overflow (magnitude above
    1e100) or cancel (magnitude above 1e4 times the spread of the values across samples, or above 1e4 when
    every sample is the same)."""
    big, spread = 0.0, 0.0
    lo = hi = None
    for a in arrays:
        if a.size == 0:
            continue
        big = max(big, float(np.abs(a).max()))
        a_lo, a_hi = a.min(axis=0), a.max(axis=0)
        lo = a_lo if lo is None else np.minimum(lo, a_lo)
        hi = a_hi if hi is None else np.maximum(hi, a_hi)
    if lo is not None:
        spread = float(np.max(hi - lo)) if np.all(np.isfinite(hi - lo)) else math.inf
    if big > _SAFE_MAGNITUDE:
        return True
    # all samples identical (spread 0): only an offset far from the origin cancels badly
    return big > _OFFSET_RATIO * (spread if spread > 0 else 1.0)


def power_of_two_scale(*arrays: np.ndarray) -> float:
    """A power of two s >= the largest magnitude when that exceeds 1e100, else 1: dividing by it is exact
    and brings the values into [-1, 1], so their squares cannot overflow."""
    big = max((float(np.abs(a).max()) for a in arrays if a.size), default=0.0)
    if big <= _SAFE_MAGNITUDE:
        return 1.0
    return math.ldexp(1.0, math.frexp(big)[1])


def direct_squared_distances(a: np.ndarray, b: np.ndarray, groups: np.ndarray | None = None) -> np.ndarray:
    """sum over the columns of each group of (a_ik - b_jk)^2, by direct differences: (C, n, m), or (n, m)
    without ``groups`` ((p, C) one-hot columns -> groups).

    Exact to rounding for any offset (no |a|^2 - 2 <a, b> + |b|^2 cancellation); one row of ``a`` at a
    time, so memory is O(m p).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    g = np.ones((a.shape[1], 1)) if groups is None else groups
    out = np.empty((g.shape[1], a.shape[0], b.shape[0]))
    with np.errstate(over="ignore"):
        for i in range(a.shape[0]):
            diff = b - a[i]
            diff *= diff
            out[:, i, :] = (diff @ g).T
    return out[0] if groups is None else out


def scale_energies(d2: np.ndarray, t: float) -> np.ndarray:
    """gamma |a - b|^2 = t * (t * d2) (in place) for squared distances ``d2`` of values divided by s and
    t = sqrt(gamma) s; t * (t * d) never forms inf * 0: a zero distance stays 0, a huge one becomes inf
    (kernel value 0, which is what exp(-gamma d) rounds to)."""
    with np.errstate(over="ignore"):
        d2 *= t
        d2 *= t
    return d2

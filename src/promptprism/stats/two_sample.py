"""Two-sample and dependence statistics over Gram matrices, and Holm's step-down adjustment: one copy each,
shared by the methods (regions, metrics, naming, CompCon).

SPEC, "Cosine mean similarity and disentangled regions" (the disentangled-mean-embeddings paper):

    MMD^2       = mean K_xx + mean K_yy - 2 mean K_xy   (plug-in, eq. 16; ``unbiased=True`` drops the
                  diagonals of K_xx and K_yy: sum_{i!=j} / (n (n-1)), Gretton et al. 2012, eq. 3)
    H K H,      H = I - 11^T / n                       (double centring, eq. 11)
    HSIC(K, L)  = tr(K H L H)                                                                     (eq. 11)
    CKA(K, L)   = HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L))                                        (eq. 13)

A constant variable has a centred Gram matrix of zero, so HSIC(K, .) = 0 and CKA's denominator vanishes;
CKA is then defined as 0.

Holm's step-down (Holm 1979): with p_(1) <= ... <= p_(k), the adjusted p_(j) = max_{i <= j} min(1,
(k - i + 1) p_(i)); it controls the family-wise error at any dependence between the tests (naming's
candidates, CompCon's attributes, the quality findings).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._validation import first_non_finite
from ..backend import array_namespace, is_numpy
from ..errors import InputError


def _finite(k: np.ndarray, name: str) -> np.ndarray:
    bad = first_non_finite(k)
    if bad:
        raise InputError(f"{name}: {bad}; a Gram matrix needs finite entries")
    return k


def _square(k: Any, name: str) -> np.ndarray:
    k = np.asarray(k, dtype=np.float64)
    if k.ndim != 2 or k.shape[0] != k.shape[1]:
        raise InputError(f"{name}: expected a square Gram matrix, got shape {k.shape}")
    return _finite(k, name)


def three_grams(k_xy: Any, k_xx: Any, k_yy: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """K_xy, K_xx, K_yy as float64 arrays, checked: K_xx and K_yy square, K_xy (rows of K_xx, rows of
    K_yy), both samples non-empty."""
    k_xx, k_yy = _square(k_xx, "K_xx"), _square(k_yy, "K_yy")
    k_xy = np.asarray(k_xy, dtype=np.float64)
    if k_xy.shape != (k_xx.shape[0], k_yy.shape[0]):
        raise InputError(f"K_xy: expected shape {(k_xx.shape[0], k_yy.shape[0])} (rows of K_xx, rows of "
                         f"K_yy), got {k_xy.shape}")
    _finite(k_xy, "K_xy")
    if min(k_xx.shape[0], k_yy.shape[0]) == 0:
        raise InputError("CMS/MMD: both samples need at least one row")
    return k_xy, k_xx, k_yy


def mmd2(k_xy: Any, k_xx: Any, k_yy: Any, *, unbiased: bool = False) -> float:
    """Squared MMD: plug-in (eq. 16, biased) or unbiased (diagonals of K_xx, K_yy left out; Gretton et al.
    2012, eq. 3). numpy Gram matrices are taken in float64; torch ones are reduced on their device, in their
    dtype (the plug-in form)."""
    if not all(is_numpy(k) for k in (k_xy, k_xx, k_yy)):
        if unbiased:
            raise InputError("unbiased MMD^2 takes numpy Gram matrices")
        xp = array_namespace(k_xy, k_xx, k_yy)
        return float(xp.mean(k_xx) + xp.mean(k_yy) - 2.0 * xp.mean(k_xy))
    k_xy, k_xx, k_yy = three_grams(k_xy, k_xx, k_yy)
    n, m = k_xx.shape[0], k_yy.shape[0]
    if not unbiased:
        return float(k_xx.mean() + k_yy.mean() - 2.0 * k_xy.mean())
    if n < 2 or m < 2:
        raise InputError("unbiased MMD^2 needs at least 2 rows in each sample")
    xx = (k_xx.sum() - np.trace(k_xx)) / (n * (n - 1))
    yy = (k_yy.sum() - np.trace(k_yy)) / (m * (m - 1))
    return float(xx + yy - 2.0 * k_xy.mean())


def center_gram(k: Any) -> np.ndarray:
    """H K H with H = I - 11^T / n (double centring, eq. 11), for a square or stacked (..., n, n) Gram."""
    k = np.asarray(k, dtype=np.float64)
    return (k - k.mean(axis=-1, keepdims=True) - k.mean(axis=-2, keepdims=True)
            + k.mean(axis=(-2, -1), keepdims=True))


def center_symmetric_(k: Any) -> Any:
    """H K H (eq. 11) in place, for a stack (p, b, b) of *symmetric* Gram matrices on any backend (numpy or
    torch): row means equal column means, so K - r 1^T - 1 r^T + mean(r); returns ``k``."""
    xp = array_namespace(k)
    r = xp.mean(k, axis=2)
    mu = xp.mean(r, axis=1)
    k -= r[:, :, None]
    k -= r[:, None, :]
    k += mu[:, None, None]
    return k


def _paired_squares(k: Any, l: Any, what: str) -> tuple[np.ndarray, np.ndarray]:  # noqa: E741
    k, l = _square(k, "K"), _square(l, "L")  # noqa: E741
    if k.shape != l.shape:
        raise InputError(f"{what}: K and L must have the same shape, got {k.shape} and {l.shape}")
    return k, l


def hsic(k: Any, l: Any) -> float:  # noqa: E741
    """HSIC(K, L) = tr(K H L H) (eq. 11, no 1/(n-1)^2 factor) = <HKH, HLH>_F."""
    k, l = _paired_squares(k, l, "HSIC")  # noqa: E741
    return float(np.vdot(center_gram(k), center_gram(l)))


def _zero_tol(k: np.ndarray) -> float:
    # HKH of a constant variable is exactly 0 up to round-off of order eps * max|K| * n
    return 1e-12 * max(1.0, float(np.abs(k).max(initial=0.0))) * k.shape[-1]


def cka(k: Any, l: Any) -> float:  # noqa: E741
    """CKA(K, L) = HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L)) (eq. 13); 0 when either variable is constant."""
    k, l = _paired_squares(k, l, "CKA")  # noqa: E741
    kc, lc = center_gram(k), center_gram(l)
    nk, nl = float(np.linalg.norm(kc)), float(np.linalg.norm(lc))
    if nk <= _zero_tol(k) or nl <= _zero_tol(l):
        return 0.0
    return float(np.vdot(kc, lc)) / (nk * nl)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979, module docstring): family-wise error over the tests,
    any dependence. Tied p-values get the same adjusted value whatever their order."""
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    k = p.size
    adjusted = np.empty(k)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (k - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


__all__ = ["center_gram", "center_symmetric_", "cka", "holm", "hsic", "mmd2", "three_grams"]

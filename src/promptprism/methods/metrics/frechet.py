"""Fréchet distance between Gaussians fitted to two feature sets (FID on Inception features, FD-DINOv2).

Heusel et al. 2017 (eq. 6), the Fréchet (2-Wasserstein) distance between N(mu1, S1) and N(mu2, S2):

    d^2 = |mu1 - mu2|^2 + tr(S1) + tr(S2) - 2 tr (S1^{1/2} S2 S1^{1/2})^{1/2}

The cross term is computed on symmetric matrices only (a Cholesky factor of S1 and the eigenvalues of
L^T S2 L, eigenvalues clipped at 0; S1's eigendecomposition when S1 is singular), in float64 whatever the
input dtype: ``tr (S1 S2)^{1/2}`` equals ``tr (S1^{1/2} S2 S1^{1/2})^{1/2}`` (the products are similar), and
the symmetric form never produces the complex square roots that ``scipy.linalg.sqrtm(S1 @ S2)`` returns for
near-singular products.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._validation import check_feature_pair
from ...errors import InputError
from ...stats.moments import feature_moments


def _psd_sqrt(s: np.ndarray) -> np.ndarray:
    """Symmetric square root of a symmetric positive semi-definite matrix (negative round-off clipped)."""
    w, v = np.linalg.eigh(s)
    return (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T


def trace_sqrt_product(sigma1: Any, sigma2: Any) -> float:
    """``tr (S1^{1/2} S2 S1^{1/2})^{1/2}``, the cross term of Heusel et al. 2017 eq. 6, by eigenvalues.

    The eigenvalues are those of the symmetric L^T S2 L with S1 = L L^T (Cholesky; L^T S2 L = L^-1 (S1 S2) L
    is similar to S1 S2, as S1^{1/2} S2 S1^{1/2} is): eigenvalues only, no eigenvectors, by LAPACK's
    generalized symmetric solver for S2 S1 x = lambda x (``dsygvd``, type 2: Cholesky, then L^T S2 L formed
    from the triangle, then the eigenvalues; at d = 2,048 0.68-0.77 s against 0.87-0.94 s for Cholesky,
    two full products and ``eigvalsh``, the same sum). When S1 is singular (fewer samples than dimensions)
    and Cholesky stops, S1^{1/2} from its eigendecomposition instead.
    """
    from scipy.linalg import eigh

    s1 = np.asarray(sigma1, dtype=np.float64)
    s2 = np.asarray(sigma2, dtype=np.float64)
    s1, s2 = (s1 + s1.T) / 2, (s2 + s2.T) / 2
    try:
        eig = eigh(s2, s1, type=2, eigvals_only=True, check_finite=False)
    except np.linalg.LinAlgError:
        root1 = _psd_sqrt(s1)
        middle = root1 @ s2 @ root1
        eig = np.linalg.eigvalsh((middle + middle.T) / 2)
    return float(np.sqrt(np.clip(eig, 0.0, None)).sum())


def frechet_distance_from_moments(mu1: Any, sigma1: Any, mu2: Any, sigma2: Any) -> float:
    """Fréchet distance d^2 between N(mu1, sigma1) and N(mu2, sigma2) (Heusel et al. 2017, eq. 6).

    This is the squared 2-Wasserstein distance, the number FID reports (no square root is taken).
    """
    m1 = np.atleast_1d(np.asarray(mu1, dtype=np.float64))
    m2 = np.atleast_1d(np.asarray(mu2, dtype=np.float64))
    s1 = np.atleast_2d(np.asarray(sigma1, dtype=np.float64))
    s2 = np.atleast_2d(np.asarray(sigma2, dtype=np.float64))
    d = m1.shape[0]
    for name, arr, shape in (("mu2", m2, (d,)), ("sigma1", s1, (d, d)), ("sigma2", s2, (d, d))):
        if arr.shape != shape:
            raise InputError(f"{name}: expected shape {shape} to match mu1 ({d} dimensions), got {arr.shape}")
    diff = m1 - m2
    value = float(diff @ diff + np.trace(s1) + np.trace(s2) - 2.0 * trace_sqrt_product(s1, s2))
    return max(value, 0.0)  # round-off can leave -1e-12 for identical sets


def frechet_distance(x: Any, y: Any) -> float:
    """Fréchet distance between Gaussians fitted to the rows of ``x`` and ``y`` (Heusel et al. 2017, eq. 6).

    ``x`` and ``y`` are (n, d) feature matrices with the same d (e.g. Inception pool features for FID), at
    least 2 rows each, finite (checked); means and covariances are computed in float64
    (:func:`promptprism.stats.moments.feature_moments`).
    """
    x, y = check_feature_pair(x, y, ("x", "y"), min_rows=2)
    mu1, s1 = feature_moments(x)
    mu2, s2 = feature_moments(y)
    return frechet_distance_from_moments(mu1, s1, mu2, s2)

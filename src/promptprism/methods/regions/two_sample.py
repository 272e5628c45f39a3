"""Two-sample estimators over any kernel: CMS, and the block (mini-batch) versions of CMS, MMD^2, HSIC, CKA.

The functional core of the disentangled-mean-embeddings paper (SPEC, "Cosine mean similarity and
disentangled regions"), pure functions over Gram matrices or samples; MMD^2, HSIC and CKA on one Gram
matrix are the shared statistics of :mod:`promptprism.stats.two_sample` (re-exported here):

    CMS(X, Y)   = sum_ij k(X_i, Y_j) / sqrt( sum_ij k(X_i, X_j) * sum_ij k(Y_i, Y_j) )        (eq. 4)
    MMD^2       = mean K_xx + mean K_yy - 2 mean K_xy   (plug-in, eq. 16; ``unbiased=True`` drops the
                  diagonals of K_xx and K_yy: sum_{i!=j} / (n (n-1)))
    HSIC(K, L)  = tr(K H L H),  H = I - 11^T / n                                                   (eq. 11)
    CKA(K, L)   = HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L))                                         (eq. 13)

(eq. 17 of the paper drops the square root of eq. 4: a typo; eq. 4 is used.) A constant variable has a
centred Gram matrix of zero, so HSIC(K, .) = 0 and CKA's denominator vanishes; CKA is then defined as 0.

Block versions (appendix C): both samples are shuffled with a seeded permutation, cut into
``floor(min(n, m) / b)`` blocks of ``b`` rows (left-over rows are not used). The paper averages the
per-block estimates. For CMS that average is biased downwards: each block's denominator carries its b
diagonal ones (k(x, x) = 1), a share 1/b of the block instead of 1/n of the whole sample (on
same-distribution digits, b = 150 reads 0.924 where eq. 4 on all images reads 0.987). The corrected form
(:func:`cms_from_pair_means`, ``corrected=True``) pools unbiased pair means over the blocks (the mean of
k over all cross pairs, and over distinct pairs within each sample) and puts them into eq. 4's closed form
for the n and m images::

    eq. 4 = M_xy / sqrt( (1/n + (1 - 1/n) U_xx) (1/m + (1 - 1/m) U_yy) )

(exact: sum K_xx = n + n (n-1) U_xx when k(x, x) = 1), so the block estimate targets the full-sample
estimator and differs from it by sampling noise only.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..._validation import check_positive_number
from ...errors import InputError
from ...kernels.rbf import Kernel
from ...stats.two_sample import cka, hsic, mmd2, three_grams


def cms(k_xy: Any, k_xx: Any, k_yy: Any) -> float:
    """Cosine mean similarity (eq. 4) from the three Gram matrices: sum K_xy / sqrt(sum K_xx * sum K_yy)."""
    k_xy, k_xx, k_yy = three_grams(k_xy, k_xx, k_yy)
    den = float(k_xx.sum()) * float(k_yy.sum())
    if not den > 0:
        raise InputError("CMS: sum K_xx * sum K_yy must be > 0 (a mean embedding of norm 0)")
    return float(k_xy.sum()) / math.sqrt(den)


def cms_from_pair_means(m_xy: float, u_xx: float, u_yy: float, n: int, m: int) -> float:
    """Eq. 4 for n and m samples of a kernel with k(x, x) = 1, from its pair means.

    ``m_xy``: mean of k(x_i, y_j) over all cross pairs; ``u_xx``, ``u_yy``: means of k over distinct pairs
    within each sample. CMS = m_xy / sqrt((1/n + (1 - 1/n) u_xx) (1/m + (1 - 1/m) u_yy)). With the exact
    pair means of the whole samples this *is* eq. 4; with means pooled over blocks it is the bias-corrected
    block estimator.
    """
    den = (1.0 / n + (1.0 - 1.0 / n) * u_xx) * (1.0 / m + (1.0 - 1.0 / m) * u_yy)
    if not den > 0:
        raise InputError("CMS: the mean embeddings have norm 0")
    return float(m_xy) / math.sqrt(den)


def block_indices(n: int, m: int, block_size: int | None, seed: int, *, what: str = "block estimator",
                  paired: bool = False) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Seeded row blocks of two samples (appendix C); one block of everything when ``block_size`` is None.

    ``floor(min(n, m) / b)`` blocks of ``b`` rows from one seeded permutation of each sample (the same one
    for both when ``paired``); left-over rows are not used.
    """
    if block_size is None:
        yield np.arange(n), np.arange(m)
        return
    b = int(check_positive_number(block_size, "block_size", integer=True))
    if min(n, m) < b:
        raise InputError(f"{what}: fewer rows than one block: {min(n, m)} < block_size {b}; lower "
                         "block_size or pass more samples", parameter="block_size")
    rng = np.random.default_rng(seed)
    px = rng.permutation(n)
    py = px if paired else rng.permutation(m)
    for s in range(min(n, m) // b):
        yield px[s * b:(s + 1) * b], py[s * b:(s + 1) * b]


def _off_diagonal_mean(k: np.ndarray) -> float:
    n = k.shape[0]
    if n < 2:
        raise InputError("the corrected block estimator needs blocks of at least 2 rows")
    return float((k.sum() - np.trace(k)) / (n * (n - 1)))


def block_cms(x: Any, y: Any, kernel: Kernel, *, block_size: int | None = None, seed: int = 0,
              corrected: bool = False) -> float:
    """CMS (eq. 4) of samples ``x`` and ``y`` under ``kernel`` over seeded blocks (appendix C).

    ``corrected=False``: the paper's average of per-block eq. 4 (biased downwards for small blocks).
    ``corrected=True``: pair means pooled over the blocks, put into eq. 4 for all n, m rows
    (:func:`cms_from_pair_means`; needs a kernel with k(x, x) = 1).
    """
    x, y = np.asarray(x), np.asarray(y)
    blocks = list(block_indices(len(x), len(y), block_size, seed, what="CMS"))
    if not corrected:
        return float(np.mean([cms(kernel(x[i], y[j]), kernel(x[i], x[i]), kernel(y[j], y[j]))
                              for i, j in blocks]))
    m_xy = np.mean([kernel(x[i], y[j]).mean() for i, j in blocks])
    u_xx = np.mean([_off_diagonal_mean(kernel(x[i], x[i])) for i, _ in blocks])
    u_yy = np.mean([_off_diagonal_mean(kernel(y[j], y[j])) for _, j in blocks])
    return cms_from_pair_means(m_xy, u_xx, u_yy, len(x), len(y))


def block_mmd2(x: Any, y: Any, kernel: Kernel, *, block_size: int | None = None, seed: int = 0,
               unbiased: bool = False) -> float:
    """MMD^2 of samples ``x`` and ``y`` under ``kernel``, averaged over seeded blocks (appendix C)."""
    x, y = np.asarray(x), np.asarray(y)
    vals = [mmd2(kernel(x[i], y[j]), kernel(x[i], x[i]), kernel(y[j], y[j]), unbiased=unbiased)
            for i, j in block_indices(len(x), len(y), block_size, seed, what="MMD^2")]
    return float(np.mean(vals))


def _check_paired(x: np.ndarray, y: np.ndarray) -> None:
    if len(x) != len(y):
        raise InputError(f"HSIC/CKA need paired samples: x has {len(x)} rows, y has {len(y)}")


def block_hsic(x: Any, y: Any, kernel_x: Kernel, kernel_y: Kernel | None = None, *,
               block_size: int | None = None, seed: int = 0) -> float:
    """HSIC (eq. 11) of paired samples (x_i, y_i), averaged over seeded blocks."""
    x, y = np.asarray(x), np.asarray(y)
    _check_paired(x, y)
    ky = kernel_y or kernel_x
    return float(np.mean([hsic(kernel_x(x[i], x[i]), ky(y[i], y[i])) for i, _ in block_indices(
        len(x), len(y), block_size, seed, what="HSIC", paired=True)]))


def block_cka(x: Any, y: Any, kernel_x: Kernel, kernel_y: Kernel | None = None, *,
              block_size: int | None = None, seed: int = 0) -> float:
    """CKA (eq. 13) of paired samples (x_i, y_i), averaged over seeded blocks (the paper's mini-batch CKA)."""
    x, y = np.asarray(x), np.asarray(y)
    _check_paired(x, y)
    ky = kernel_y or kernel_x
    return float(np.mean([cka(kernel_x(x[i], x[i]), ky(y[i], y[i])) for i, _ in block_indices(
        len(x), len(y), block_size, seed, what="CKA", paired=True)]))

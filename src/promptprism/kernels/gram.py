"""Distances and Gram matrices of the normalised kernels: the one place every method builds its kernels.

Pure functions over arrays, numpy or torch (the array API): numpy in, numpy out; torch in, torch out, on its
device and differentiable (autograd flows through :func:`squared_distances` and the builders, so the
guidance losses are these same functions on tensors).

* :func:`squared_distances` (:mod:`.distances`): |a_i - b_j|^2, the one squared-distance routine;
* :func:`kernel_gram`: the cosine or gaussian Gram matrix (the gaussian as exp(-|a - b|^2 / (2 sigma^2)),
  or exp(-gamma |a - b|^2) in the regions method's parameterisation);
* :func:`joint_gram`: the product kernel k_T k_Z over stacked samples (PromptSplit's G, eq. 3), and
  :func:`covariance_difference_norm`, ||C_a - eta C_b||_F^2 read off it;
* :func:`feature_gram`: the Gram matrix of an explicit feature map, Phi Phi^T.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from array_api_compat import device

from .._validation import check_positive_number, check_precision
from ..array_ops import column_median, is_numpy, map_in_threads, row_norms
from ..backend import Backend, array_namespace, as_float, backend_of, inplace
from ..errors import OptionError
from .distances import (
    CENTER_ROWS,
    _centred_distances,
    _distances,
    _dtype,
    _scaled,
    _tracks_gradient,
    squared_distances,
)

KERNELS = ("cosine", "gaussian")


def check_kernel(kernel: str) -> str:
    """``kernel`` when it names one of :data:`KERNELS`; otherwise an OptionError naming the parameter."""
    if kernel not in KERNELS:
        raise OptionError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
    return kernel


def _unit_rows(xp, a):
    return a / row_norms(a)


def unit_rows(rows: Any) -> np.ndarray:
    """Each row scaled to norm 1, in float64; a zero row stays zero (where the cosine kernel, which refuses
    one, is not what is computed: a kernel family's gaussians on unit rows, a nearest-gold cosine)."""
    rows = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1.0)


def cosine_gram(a, b=None, *, dtype: type = np.float64):
    """k(a, b) = <a, b> / (|a| |b|), in ``dtype`` (numpy or torch, as the input)."""
    xp = array_namespace(a)
    dt = _dtype(xp, dtype)
    an = _unit_rows(xp, as_float(xp, a, dt))
    if b is None:
        k = an @ an.T
        i = xp.arange(k.shape[0], device=device(k))
        k[i, i] = 1.0
        return k
    return an @ _unit_rows(xp, as_float(xp, b, dt)).T


def _exp_of_scaled(factor: float) -> Callable[[Any], None]:
    """The gaussian kernel's finish of a block of squared distances d2: exp(factor d2), in place."""
    return lambda d2: inplace("exp", _scaled(d2, factor))


def gaussian_gram(a, b=None, *, sigma: float | None = None, gamma: float | None = None,
                  dtype: type = np.float64):
    """k(a, b) = exp(-|a - b|^2 / (2 sigma^2)), or exp(-gamma |a - b|^2) given ``gamma`` (the same kernel,
    gamma = 1 / (2 sigma^2)), in ``dtype`` (numpy or torch, as the input)."""
    if (sigma is None) == (gamma is None):
        raise OptionError("the gaussian kernel needs one bandwidth: sigma or gamma")
    if sigma is not None and not sigma > 0:
        raise OptionError(f"sigma must be > 0 (the gaussian kernel's bandwidth), got {sigma!r}")
    if gamma is not None and not gamma > 0:
        raise OptionError(f"gamma must be > 0 (the gaussian kernel's inverse width), got {gamma!r}")
    factor = -1.0 / (2.0 * sigma * sigma) if gamma is None else -float(gamma)
    if _tracks_gradient(a) or _tracks_gradient(b):
        d2 = _scaled(squared_distances(a, b, dtype=dtype), factor)
        return array_namespace(d2).exp(d2)

    return _distances(a, b, dtype, _exp_of_scaled(factor))


def kernel_gram(kernel: str, a, b=None, *, sigma: float | None = None, gamma: float | None = None,
                dtype: type = np.float64):
    """The Gram matrix of ``kernel`` ('cosine', or 'gaussian' with ``sigma`` or ``gamma``), in ``dtype``."""
    if check_kernel(kernel) == "cosine":
        return cosine_gram(a, b, dtype=dtype)
    if sigma is None and gamma is None:
        raise OptionError("the gaussian kernel needs a bandwidth sigma")
    return gaussian_gram(a, b, sigma=sigma, gamma=gamma, dtype=dtype)


def joint_gram(prompts_a: Any, outputs_a: Any, prompts_b: Any = None, outputs_b: Any = None, *,
               kernel: str, sigma_prompt: float | None = None, sigma_output: float | None = None,
               precision: str = "float64", backend: Backend | None = None, columns: Any = None) -> Any:
    """G = K_T o K_Z over the stacked samples [a; b] (PromptSplit eq. 3's joint kernel matrix; elementwise
    product); over the samples a alone without b. ``columns`` (indices into the stack): only G[:, columns],
    the kernel between every sample and those (N x len(columns), the columns a Nystrom factor reads).

    For gaussians the product is one gaussian on the rescaled concatenation:
    exp(-|t - t'|^2 / (2 s_t^2) - |z - z'|^2 / (2 s_z^2)) = exp(-|w - w'|^2 / 2), w = [t / s_t ; z / s_z].
    ``precision`` ('float64' or 'float32') is the dtype of the distances and of G. ``backend``: where G is
    computed and held (numpy, or torch on its device; default: that of ``outputs_a``). On torch tensors G is
    differentiable in the embeddings.
    """
    dtype = check_precision(precision)
    backend = backend_of(outputs_a) if backend is None else backend
    xp = backend.xp
    parts = [(prompts_a, outputs_a)] + ([] if prompts_b is None else [(prompts_b, outputs_b)])
    t = xp.concat([backend.asarray(p, "float64") for p, _ in parts])
    z = xp.concat([backend.asarray(o, "float64") for _, o in parts])
    if kernel == "gaussian" and sigma_prompt is not None and sigma_output is not None:
        check_positive_number(sigma_prompt, "sigma_prompt")
        check_positive_number(sigma_output, "sigma_output")
        # one gaussian (sigma 1) on the concatenation [t / sigma_t ; z / sigma_z]: a single distance matrix
        w = xp.concat([t / sigma_prompt, z / sigma_output], axis=1)
        return gaussian_gram(w, None if columns is None else w[columns, ...], sigma=1.0, dtype=dtype)
    cols = (lambda x: None) if columns is None else (lambda x: x[columns, ...])
    g = kernel_gram(kernel, t, cols(t), sigma=sigma_prompt, dtype=dtype)
    return _scaled(g, kernel_gram(kernel, z, cols(z), sigma=sigma_output, dtype=dtype))


#: rows :func:`joint_gram_columns` scales and centres at a time
_CENTRING_ROWS = 4096


def joint_gram_columns(prompts: Any, outputs: Any, *, kernel: str, sigma_prompt: float | None = None,
                       sigma_output: float | None = None, precision: str = "float64"
                       ) -> Callable[[np.ndarray], Any]:
    """``columns(idx)`` = G[:, idx], the columns of :func:`joint_gram` over the rows (``prompts``,
    ``outputs``) at the sample indices ``idx``, for a caller that reads G a block of columns at a time (a
    pivoted Cholesky factor). numpy rows and the gaussian kernel: the rows scaled, joined into w = [t / s_t ;
    z / s_z] and centred on their coordinate-wise median once (it was per call: 40,000 rows of 768, 0.3 s a
    call, against 0.06 s), each call then only the same cancellation-safe distances to its columns and the
    exp; otherwise :func:`joint_gram` with ``columns`` per call."""
    if not (kernel == "gaussian" and sigma_prompt is not None and sigma_output is not None
            and is_numpy(prompts) and is_numpy(outputs)):
        return lambda idx: joint_gram(prompts, outputs, kernel=kernel, sigma_prompt=sigma_prompt,
                                      sigma_output=sigma_output, precision=precision, columns=idx)
    dtype = check_precision(precision)
    check_positive_number(sigma_prompt, "sigma_prompt")
    check_positive_number(sigma_output, "sigma_output")
    n, width = prompts.shape[0], prompts.shape[1]

    def scaled(lo: int, hi: int, step: int = 1) -> np.ndarray:  # w's rows lo:hi:step, float64
        return np.concatenate([np.asarray(prompts[lo:hi:step], dtype=np.float64) / sigma_prompt,
                               np.asarray(outputs[lo:hi:step], dtype=np.float64) / sigma_output], axis=1)

    center = column_median(scaled(0, n, max(1, n // CENTER_ROWS)))
    rows = np.empty((n, width + outputs.shape[1]), dtype=dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        for lo in range(0, n, _CENTRING_ROWS):  # (a block at a time: no float64 copy of w)
            np.subtract(scaled(lo, lo + _CENTRING_ROWS), center, out=rows[lo:lo + _CENTRING_ROWS],
                        casting="same_kind")

    def columns(idx: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            return _centred_distances(np, rows, rows[np.asarray(idx)], False,
                                      _exp_of_scaled(-0.5))

    return columns


def covariance_difference_norm(gram: Any, n: int, eta: float) -> Any:
    """||C_a - eta C_b||_F^2 = tr(D G D G) = sum_ij D_i D_j G_ij^2, D = diag(1/n 1_n, -eta/m 1_m), from the
    joint Gram matrix G of n samples of a then m of b (the PromptSplit distance, paper eq. 2 / SPEC; with
    m = 0, ||C_a||_F^2, the Joint-Diversity term). Block sums in float64 whatever G's precision; a float for
    numpy, a 0-d tensor (differentiable) for torch; at least 0 (the expansion's cancellation leaves about
    -1e-16 on sets that agree)."""
    xp = array_namespace(gram)
    m = gram.shape[0] - n
    if is_numpy(gram):
        sums = block_square_sums(gram, [0, n, gram.shape[0]] if m else [0, n])
        total = float(sums[0, 0]) / n**2
        if m:
            total = total + eta**2 * float(sums[1, 1]) / m**2 - 2.0 * eta * float(sums[0, 1]) / (n * m)
        return max(0.0, total)
    g2 = gram * gram

    def block(x: Any) -> Any:
        s = xp.sum(x, dtype=xp.float64)
        return float(s) if is_numpy(gram) else s

    total = block(g2[:n, :n]) / n**2
    if m:
        total = total + eta**2 * block(g2[n:, n:]) / m**2 - 2.0 * eta * block(g2[:n, n:]) / (n * m)
    return total.clamp(min=0.0) if hasattr(total, "clamp") else max(0.0, total)


#: rows of G squared at a time by :func:`block_square_sums` (a 20 MB float64 block at 5,000 columns)
_SQUARE_ROWS = 512


def block_square_sums(gram: np.ndarray, bounds: Any) -> np.ndarray:
    """S_ab = sum_{i in a, j in b} G_ij^2 for the K consecutive row (and column) blocks of a numpy G given by
    ``bounds`` (K + 1 offsets), float64: E^T (G o G) E with E the blocks' N x K indicator, a block of
    :data:`_SQUARE_ROWS` rows at a time (no N x N square held; the blocks on the BLAS's threads, one BLAS
    thread each, their sums added in row order whatever the threads). Every distance read off a Gram matrix
    (:func:`covariance_difference_norm`, K-way PromptSplit's pairs) sums through it, so they agree to the
    last bit."""
    bounds = np.asarray(bounds, dtype=np.int64)
    size = gram.shape[0]
    label = np.repeat(np.arange(bounds.size - 1), np.diff(bounds))
    member = np.zeros((size, bounds.size - 1))
    member[np.arange(size), label] = 1.0

    def part(start: int) -> np.ndarray:
        rows = np.asarray(gram[start : start + _SQUARE_ROWS], dtype=np.float64)  # (float64 G: a view of it)
        block = rows * rows
        return member[start : start + _SQUARE_ROWS].T @ (block @ member)

    out = np.zeros((bounds.size - 1, bounds.size - 1))
    for block_sums in map_in_threads(part, list(range(0, size, _SQUARE_ROWS))):  # (added in row order)
        out += block_sums
    return out


def feature_gram(features: Any) -> Any:
    """K = Phi Phi^T: the Gram matrix of the kernel whose finite feature map gave the rows ``features``."""
    return features @ features.T


def polynomial_gram(a, b=None, *, degree: int = 3, gamma: float | None = None, coef: float = 1.0,
                    dtype: type = np.float64):
    """k(a, b) = (gamma <a, b> + coef)^degree, gamma = 1 / d by default: KID's kernel (Binkowski et al.
    2018, sec. 3; degree 3, coef 1). Not normalised (k(a, a) != 1), so not one of :data:`KERNELS`."""
    xp = array_namespace(a)
    dt = _dtype(xp, dtype)
    a = as_float(xp, a, dt)
    b = a if b is None else as_float(xp, b, dt)
    g = 1.0 / a.shape[1] if gamma is None else float(gamma)
    k = a @ b.T
    k *= g
    k += coef
    return k**degree

"""Kernel matrix sums on one subset pair, for several kernels from one Gram matrix: KID's and MMD's core.

MMD^2_u on a subset pair (rows a_1..a_s of one set, b_1..b_s of the other; Gretton et al. 2012, eq. 3),

    MMD^2_u = (sum K_aa - tr K_aa) / (s (s - 1)) + (sum K_bb - tr K_bb) / (s (s - 1)) - 2 sum K_ab / s^2,

and its first-order (Hoeffding) projections (:func:`.kid.projection_variances`) need, per kernel, only the
row sums and diagonals of K_aa and K_bb and the row and column sums of K_ab: :class:`KernelSums`.

Every kernel here is a function of the rows' inner products, so one Gram matrix G = Z Z^T of the
stacked rows centred on their mean c (float64, or float32 when both sets are float32: the features' own
precision, as torchmetrics computes KID; the rows are then centred in float32, no float64 copy of them is
made, and the kernels and sums are still taken in float64), Z = [a - c; b - c] (one symmetric product,
BLAS syrk: two thirds of
the work of the three products K_aa, K_bb, K_ab), serves them all:

* polynomial (KID; Binkowski et al. 2018, sec. 3): (gamma <a_i, b_j> + coef)^degree, where
  <a_i, b_j> = G_ij + <z_i, c> + <z_j, c> + |c|^2;
* gaussian: exp(-|z_i - z_j|^2 / (2 sigma^2)) = exp(G_ij / sigma^2) e^(-h_i) e^(-h_j), h = |z|^2 / (2 sigma^2)
  (the expansion on centred rows: its cancellation is that of the distances themselves; for rows so far out
  that exp(G_ij / sigma^2) could overflow, exp((G_ij - |z_i|^2 / 2 - |z_j|^2 / 2) / sigma^2) clipped at 1);
* cosine: <a_i, b_j> / (|a_i| |b_j|).

The elementwise work runs on row chunks small enough to stay in cache, over the upper triangle only of
the symmetric blocks K_aa and K_bb; the per-row factors (e^(-h), 1 / |a|) enter the sums through products
with the chunk (k f, f^T k), not through passes over it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...array_ops import row_norms
from ...errors import OptionError

KINDS = ("polynomial", "gaussian", "cosine")
#: Gram entries per elementwise chunk (float64: 512 KiB)
CHUNK_ENTRIES = 2**16
#: up to this many stacked rows the whole kernel matrices are built at once
SMALL_ROWS = 512


@dataclass(frozen=True)
class SubsetKernel:
    """A kernel of :data:`KINDS`: polynomial (``degree``, ``gamma`` (None: 1 / d), ``coef``), gaussian
    (``sigma``), cosine."""

    kind: str
    degree: int = 3
    gamma: float | None = None
    coef: float = 1.0
    sigma: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise OptionError(f"unknown subset kernel {self.kind!r}; choose one of {', '.join(KINDS)}")
        if self.kind == "gaussian" and not (self.sigma is not None and self.sigma > 0):
            raise OptionError(f"sigma must be > 0 (the gaussian kernel's bandwidth), got {self.sigma!r}")


@dataclass(frozen=True)
class KernelSums:
    """Row sums and diagonals of K_aa and K_bb, row and column sums of K_ab (float64)."""

    rows_aa: np.ndarray
    diag_aa: np.ndarray
    rows_bb: np.ndarray
    diag_bb: np.ndarray
    rows_ab: np.ndarray
    cols_ab: np.ndarray


@dataclass(frozen=True)
class _Terms:
    """K_ij = post(scale G_ij + add_i + add_j) factor_i factor_j (``add``, ``factor``: None when absent)."""

    scale: float
    add: np.ndarray | None
    factor: np.ndarray | None = None


#: the gaussian is read as exp(G_ij / sigma^2) e^(-h_i) e^(-h_j), h = |z|^2 / (2 sigma^2), while
#: exp(G_ij / sigma^2) <= e^(h_i + h_j) cannot overflow
GAUSSIAN_FACTORED_MAX_H = 300.0


def _terms(kernel: SubsetKernel, z: np.ndarray, c: np.ndarray, raw: np.ndarray) -> _Terms:
    """The per-row terms of ``kernel`` over the centred rows ``z`` (centre ``c``; ``raw``: uncentred)."""
    if kernel.kind == "gaussian":
        inv = 1.0 / kernel.sigma**2
        h = 0.5 * inv * np.einsum("ij,ij->i", z, z)
        if h.max(initial=0.0) <= GAUSSIAN_FACTORED_MAX_H:
            return _Terms(inv, None, np.exp(-h))
        return _Terms(inv, -h)
    inner = z @ c + 0.5 * float(c @ c)  # <a_i, b_j> = G_ij + inner_i + inner_j
    if kernel.kind == "cosine":
        return _Terms(1.0, inner, 1.0 / row_norms(raw)[:, 0])
    gamma = 1.0 / z.shape[1] if kernel.gamma is None else float(kernel.gamma)
    return _Terms(gamma, gamma * inner + 0.5 * kernel.coef)


def _values(kernel: SubsetKernel, g: np.ndarray, terms: _Terms, rows: slice, cols: slice,
            out: np.ndarray) -> np.ndarray:
    """The kernel on the Gram block ``g`` (at ``rows``, ``cols`` of the stacked rows) in ``out``, before its
    factors (:func:`_sums` applies them)."""
    np.multiply(g, terms.scale, out=out)
    if terms.add is not None:
        out += terms.add[rows, None]
        out += terms.add[None, cols]
    if kernel.kind == "gaussian":
        if terms.add is not None:
            np.minimum(out, 0.0, out=out)  # |z_i - z_j|^2 >= 0
        return np.exp(out, out=out)
    if kernel.kind == "cosine":
        return out
    if kernel.degree == 3:
        square = np.square(out)
        out *= square
        return out
    return np.power(out, kernel.degree, out=out)


def _sums(k: np.ndarray, terms: _Terms, rows: slice, cols: slice) -> tuple[np.ndarray, np.ndarray]:
    """(row sums, column sums) of the kernel block ``k`` with its factors."""
    if terms.factor is None:
        return k.sum(axis=1), k.sum(axis=0)
    fr, fc = terms.factor[rows], terms.factor[cols]
    return (k @ fc) * fr, (fr @ k) * fc


def _symmetric_sums(kernels: list[SubsetKernel], g: np.ndarray, terms: list[_Terms], lo: int, hi: int
                    ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per kernel, (row sums, diagonal) of its symmetric block over stacked rows lo..hi, from the upper
    triangle of ``g`` (chunks of rows, every kernel on a chunk while it is in cache)."""
    s = hi - lo
    out = [(np.zeros(s), np.empty(s)) for _ in kernels]
    step = max(1, CHUNK_ENTRIES // max(s, 1))
    buf = np.empty(step * s)
    upper = np.triu(np.ones((min(step, s), min(step, s))))  # the square's lower triangle is not filled in g
    for r0 in range(0, s, step):
        r1 = min(s, r0 + step)
        block, w = g[lo + r0 : lo + r1, lo + r0 : hi], r1 - r0
        at_rows, at_cols = slice(lo + r0, lo + r1), slice(lo + r0, hi)
        for kernel, term, (rows, diag) in zip(kernels, terms, out, strict=True):
            k = _values(kernel, block, term, at_rows, at_cols, buf[: block.size].reshape(block.shape))
            k[:, :w] *= upper[:w, :w]
            diag[r0:r1] = k[np.arange(w), np.arange(w)]
            if term.factor is not None:
                diag[r0:r1] *= term.factor[at_rows] ** 2
            row, col = _sums(k, term, at_rows, at_cols)
            rows[r0:r1] += row + col[:w] - diag[r0:r1]  # the entries below the diagonal, by symmetry
            rows[r1:] += col[w:]
    return out


def _cross_sums(kernels: list[SubsetKernel], g: np.ndarray, terms: list[_Terms], s: int
                ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per kernel, (row sums, column sums) of K_ab: stacked rows 0..s against s..end."""
    n_b = g.shape[0] - s
    out = [(np.empty(s), np.zeros(n_b)) for _ in kernels]
    step = max(1, CHUNK_ENTRIES // max(n_b, 1))
    buf = np.empty(step * n_b)
    for r0 in range(0, s, step):
        r1 = min(s, r0 + step)
        block = g[r0:r1, s:]
        for kernel, term, (rows, cols) in zip(kernels, terms, out, strict=True):
            k = _values(kernel, block, term, slice(r0, r1), slice(s, None),
                        buf[: block.size].reshape(block.shape))
            rows[r0:r1], col = _sums(k, term, slice(r0, r1), slice(s, None))
            cols += col
    return out


def _small_sums(kernel: SubsetKernel, g: np.ndarray, terms: _Terms, s: int) -> KernelSums:
    """:class:`KernelSums` from the whole kernel matrix of the stacked rows (small subsets)."""
    every = slice(0, g.shape[0])
    k = _values(kernel, g, terms, every, every, np.empty_like(g))
    if terms.factor is not None:
        k *= np.outer(terms.factor, terms.factor)
    aa, bb, ab = k[:s, :s], k[s:, s:], k[:s, s:]
    return KernelSums(aa.sum(axis=1), np.diag(aa).copy(), bb.sum(axis=1), np.diag(bb).copy(), ab.sum(axis=1),
                      ab.sum(axis=0))


def upper_gram(z: np.ndarray, dtype: Any = np.float64) -> np.ndarray:
    """Z Z^T in ``dtype`` (only its upper triangle is read): numpy's product of a matrix with its own
    transpose is one BLAS syrk, and numpy releases the GIL around it (SciPy's BLAS wrappers hold it), so the
    subset pairs' products run side by side on threads."""
    z = np.ascontiguousarray(z, dtype=dtype)
    return z @ z.T


#: rows per chunk when the float32 operand's per-row terms are taken in float64 (a chunk stays in cache)
TERM_CHUNK_ROWS = 32


def _float32_operand(a: np.ndarray, b: np.ndarray, kernels: list[SubsetKernel]
                     ) -> tuple[np.ndarray, list[_Terms]]:
    """(Z, the kernels' terms) for a float32 Gram: the stacked rows centred in float32 on a float32 centre c
    (the mean of the two sets' means, in float32: any centre near the rows keeps the precision),
    Z = fl32([a; b] - c). Each kernel is then evaluated at the points Z + c, within float32's rounding of
    the centred rows (|Z - ([a; b] - c)| <= 2^-24 |[a; b] - c| entrywise), and its per-row terms are taken
    from Z in float64, consistently with the Gram (distances of the same points). No float64 copy of the
    rows is made (polynomial and gaussian kernels)."""
    s = a.shape[0]
    c32 = (np.float32(0.5) * (a.mean(axis=0, dtype=np.float32) + b.mean(axis=0, dtype=np.float32))
           ).astype(np.float32)
    z = np.empty((s + b.shape[0], a.shape[1]), dtype=np.float32)
    np.subtract(a, c32, out=z[:s])
    np.subtract(b, c32, out=z[s:])
    c = c32.astype(np.float64)
    sq, inner = np.empty(z.shape[0]), np.empty(z.shape[0])
    buf = np.empty((TERM_CHUNK_ROWS, z.shape[1]))  # reused: no fresh pages per chunk
    for lo in range(0, z.shape[0], TERM_CHUNK_ROWS):
        hi = min(z.shape[0], lo + TERM_CHUNK_ROWS)
        part = buf[: hi - lo]
        part[...] = z[lo:hi]
        np.einsum("ij,ij->i", part, part, out=sq[lo:hi])
        np.matmul(part, c, out=inner[lo:hi])
    inner += 0.5 * float(c @ c)  # <a_i, b_j> = G_ij + inner_i + inner_j
    terms = []
    for kernel in kernels:
        if kernel.kind == "gaussian":
            inv = 1.0 / kernel.sigma**2
            h = 0.5 * inv * sq
            terms.append(_Terms(inv, None, np.exp(-h)) if h.max(initial=0.0) <= GAUSSIAN_FACTORED_MAX_H
                         else _Terms(inv, -h))
        else:
            gamma = 1.0 / z.shape[1] if kernel.gamma is None else float(kernel.gamma)
            terms.append(_Terms(gamma, gamma * inner + 0.5 * kernel.coef))
    return z, terms


def kernel_sums(a: np.ndarray, b: np.ndarray, kernels: list[SubsetKernel], *,
                gram_dtype: Any = np.float64) -> list[KernelSums]:
    """:class:`KernelSums` of each kernel on the rows ``a`` and ``b``, from one Gram matrix of the centred
    rows in ``gram_dtype`` (float32: the product at twice the speed; entries off by about sqrt(d) x 6e-8 x
    |z_i| |z_j|, which average out of the sums; the rows are then centred in float32,
    :func:`_float32_operand`, unless a kernel is the cosine). The kernels and their sums are in float64."""
    s = a.shape[0]
    if np.dtype(gram_dtype) == np.float32 and all(k.kind != "cosine" for k in kernels) \
            and a.shape[0] + b.shape[0] > SMALL_ROWS:
        z, terms = _float32_operand(a, b, kernels)
        g = z @ z.T  # one BLAS syrk; numpy releases the GIL around it
    else:
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        raw = np.concatenate([a, b])
        c = 0.5 * (a.mean(axis=0) + b.mean(axis=0))
        z = raw - c
        terms = [_terms(kernel, z, c, raw) for kernel in kernels]
        if raw.shape[0] <= SMALL_ROWS:  # few rows: whole matrices, fewer numpy calls
            return [_small_sums(kernel, z @ z.T, term, s)
                    for kernel, term in zip(kernels, terms, strict=True)]
        g = upper_gram(z, gram_dtype)
    n_rows = g.shape[0]
    aa = _symmetric_sums(kernels, g, terms, 0, s)
    bb = _symmetric_sums(kernels, g, terms, s, n_rows)
    ab = _cross_sums(kernels, g, terms, s)
    return [KernelSums(*x, *y, *xy) for x, y, xy in zip(aa, bb, ab, strict=True)]


def mmd2_from_sums(sums: KernelSums) -> float:
    """MMD^2_u (Gretton et al. 2012, eq. 3) from the kernel sums (module docstring)."""
    n, m = sums.rows_aa.size, sums.rows_bb.size
    xx = (sums.rows_aa.sum() - sums.diag_aa.sum()) / (n * (n - 1))
    yy = (sums.rows_bb.sum() - sums.diag_bb.sum()) / (m * (m - 1))
    return float(xx + yy - 2.0 * sums.rows_ab.sum() / (n * m))

"""Disentangled mean embeddings: which pixel regions make a generator's images differ from real ones.

Two-sample estimators over any kernel (SPEC, "Cosine mean similarity and disentangled regions"):

    CMS(X, Y)   = sum_ij k(X_i, Y_j) / sqrt( sum_ij k(X_i, X_j) * sum_ij k(Y_i, Y_j) )        (eq. 4)
    MMD^2       = mean K_xx + mean K_yy - 2 mean K_xy   (plug-in, eq. 16; ``unbiased=True`` drops the
                  diagonals of K_xx and K_yy: sum_{i!=j} / (n (n-1)))
    HSIC(K, L)  = tr(K H L H),  H = I - 11^T / n                                                   (eq. 11)
    CKA(K, L)   = HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L))                                         (eq. 13)

(eq. 17 of the paper drops the square root of eq. 4: a typo; eq. 4 is used.) A constant variable has a
centred Gram matrix of zero, so HSIC(K, .) = 0 and CKA's denominator vanishes; CKA is then defined as 0 (the
variable is independent of everything) rather than NaN.

Block (mini-batch) versions (appendix C): both samples are shuffled with a seeded permutation, cut into
``floor(min(n, m) / b)`` blocks of ``b`` rows (left-over rows are not used) and the per-block estimates are
averaged. For CKA the two samples are paired row by row, so they are cut with the same permutation.

Regions (Algorithm 1). Images are flattened into d pixels of c channels each (colour pixels are 3-vectors).
The pixel kernel is k_pxl(a, b) = exp(-gamma |a - b|^2) and the image kernel is the product of pixel kernels,
k_img(x, y) = exp(-gamma |x - y|^2), so the kernel of a region I (the product over its pixels) is
exp(-gamma |x_I - y_I|^2) and k_img = prod_I k_I.

*Bandwidth convention* (the paper, section 4): ``gamma = 1 / median`` where ``median`` is the median of the
non-zero pairwise **Euclidean (not squared) distances** |x - x'|_2 between whole flattened **real training
images** (all pixels and channels; a seeded subsample of at most 1,000 images). One gamma serves every pixel,
every region and the whole image, which is what makes k_img = prod_I k_I hold exactly. ``"0.5*median"``
scales it (gamma = 0.5 / median); a number fixes gamma.

The pixel-by-pixel CKA matrix M (d x d) is computed without the paper's O(d^2 n^3) double loop: per block of
b images and per pixel a, the centred Gram matrix HK_aH is formed, normalised to unit Frobenius norm and
stored as one row of a matrix F (its upper triangle, off-diagonal entries scaled by sqrt 2, so that row dot
products are Frobenius inner products). Then M = mean over blocks of F F^T: one symmetric rank-k update
(BLAS syrk) per block (one task per block, see below), with pixel rows formed in chunks so that F and the
temporaries stay within ``max_bytes`` (2 GiB by default; F gets 60% of it). Cost O(d^2 b^2 n_blocks) flops
and O(d^2 + max_bytes) memory; for 64x64 images, n = 1,000 and b = 100 this is d = 4,096 rows of 5,050
entries per block (a 165 MB F per block). ``cka_block_size=None`` uses all images as one block (exact
eq. 13 over the whole set; F then has n (n + 1) / 2 columns, so pairs of pixel chunks are multiplied and rows
recomputed).

Regions come from average-linkage hierarchical clustering of 1 - M (scipy). The dendrogram is cut into C
regions from the top, splitting the highest merge whose two branches both hold at least ``min_region_size``
pixels (default: a quarter of the average region size, d / (4 C)); smaller branches met on the way are not
made regions and each such pixel joins the region with the highest mean CKA to it. Without this, a few
near-constant pixels (digit borders), whose CKA with everything is ~0, become singleton "regions" and use up
C. ``min_region_size=1`` is the plain cut. The largest gap between successive split heights suggests C.
Pixels that are constant over all training images carry no information (CKA 0 with everything): they are
left out of the clustering and given the region of the nearest non-constant pixel on the image grid.

CMS per region and for the whole image are computed in log space (log-sum-exp of -gamma * distance^2): kernel
values that underflow one by one still count, and the CMS reads 0 only when it is itself below the smallest
float.
Theorem 1: when regions are independent, CMS(image) = prod_I CMS(I); both sides are reported, with the
cross-region CKA that measures how far the independence assumption holds.

*One code path, one process or a cluster* (docs/scaling.md). Every sum over images is a partition task that
returns a mergeable accumulator: :func:`pixel_cka_partition` (a group of CKA blocks ->
:class:`PixelCKAAccumulator`), :func:`pixel_range_partition` (constant pixels), :func:`region_sums_partition`
(log-sums of the kernels over a pair of image chunks: the exact CMS and MMD^2), :func:`region_block_partition`
(one block of the block estimators) and :func:`cross_cka_partition`. ``fit``/``compare`` map them with a
``LocalRunner`` (in order, here) or, given a dask ``client``, a ``DaskRunner`` (one task per partition, tree
reduction). Image sets given as paths travel to the tasks as an :class:`~promptprism.data.images.ImageRows`
plus image indices, so each worker reads its own images; in-memory arrays are sliced per task.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._progress import progress_enabled
from .._validation import check_positive_number, check_seed
from .._version import __version__
from ..errors import InputError, OptionError
from ..kernels.bandwidth import median_pairwise_distance, parse_bandwidth
from ..results import Result

Kernel = Callable[[np.ndarray, np.ndarray], np.ndarray]

#: default mini-batch size of the pixel CKA estimator (the paper uses 100)
CKA_BLOCK_SIZE = 100
#: default number of real images the CKA matrix and the median rule are computed on (the paper: 1,000)
CKA_MAX_IMAGES = 1000
#: default memory budget (bytes) for the stacked centred Gram matrices of the pixel CKA computation
MAX_BYTES = 2 * 1024**3
#: result.json carries the CKA matrix inline up to this many pixels (d x d numbers); above, only the file
INLINE_CKA_MAX_PIXELS = 1024


# ------------------------------------------------------------------------------------- two-sample estimators
def _square(k: Any, name: str) -> np.ndarray:
    k = np.asarray(k, dtype=np.float64)
    if k.ndim != 2 or k.shape[0] != k.shape[1]:
        raise InputError(f"{name}: expected a square Gram matrix, got shape {k.shape}")
    return k


def _three_grams(k_xy: Any, k_xx: Any, k_yy: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k_xx, k_yy = _square(k_xx, "K_xx"), _square(k_yy, "K_yy")
    k_xy = np.asarray(k_xy, dtype=np.float64)
    if k_xy.shape != (k_xx.shape[0], k_yy.shape[0]):
        raise InputError(f"K_xy: expected shape {(k_xx.shape[0], k_yy.shape[0])} (rows of K_xx, rows of "
                         f"K_yy), got {k_xy.shape}")
    if min(k_xx.shape[0], k_yy.shape[0]) == 0:
        raise InputError("CMS/MMD: both samples need at least one row")
    return k_xy, k_xx, k_yy


def cms(k_xy: Any, k_xx: Any, k_yy: Any) -> float:
    """Cosine mean similarity (eq. 4) from the three Gram matrices: sum K_xy / sqrt(sum K_xx * sum K_yy)."""
    k_xy, k_xx, k_yy = _three_grams(k_xy, k_xx, k_yy)
    den = float(k_xx.sum()) * float(k_yy.sum())
    if not den > 0:
        raise InputError("CMS: sum K_xx * sum K_yy must be > 0 (a mean embedding of norm 0)")
    return float(k_xy.sum()) / math.sqrt(den)


def mmd2(k_xy: Any, k_xx: Any, k_yy: Any, *, unbiased: bool = False) -> float:
    """Squared MMD: plug-in (eq. 16, biased) or unbiased (diagonals of K_xx, K_yy left out)."""
    k_xy, k_xx, k_yy = _three_grams(k_xy, k_xx, k_yy)
    n, m = k_xx.shape[0], k_yy.shape[0]
    if not unbiased:
        return float(k_xx.mean() + k_yy.mean() - 2.0 * k_xy.mean())
    if n < 2 or m < 2:
        raise InputError("unbiased MMD^2 needs at least 2 rows in each sample")
    xx = (k_xx.sum() - np.trace(k_xx)) / (n * (n - 1))
    yy = (k_yy.sum() - np.trace(k_yy)) / (m * (m - 1))
    return float(xx + yy - 2.0 * k_xy.mean())


def center_gram(k: Any) -> np.ndarray:
    """H K H with H = I - 11^T / n (double centring), for a square or stacked (..., n, n) Gram matrix."""
    k = np.asarray(k, dtype=np.float64)
    return (k - k.mean(axis=-1, keepdims=True) - k.mean(axis=-2, keepdims=True)
            + k.mean(axis=(-2, -1), keepdims=True))


def hsic(k: Any, l: Any) -> float:  # noqa: E741
    """HSIC(K, L) = tr(K H L H) (eq. 11, no 1/(n-1)^2 factor) = <HKH, HLH>_F."""
    k, l = _square(k, "K"), _square(l, "L")  # noqa: E741
    if k.shape != l.shape:
        raise InputError(f"HSIC: K and L must have the same shape, got {k.shape} and {l.shape}")
    return float(np.vdot(center_gram(k), center_gram(l)))


def _zero_tol(k: np.ndarray) -> float:
    # HKH of a constant variable is exactly 0 up to round-off of order eps * max|K| * n
    return 1e-12 * max(1.0, float(np.abs(k).max(initial=0.0))) * k.shape[-1]


def cka(k: Any, l: Any) -> float:  # noqa: E741
    """CKA(K, L) = HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L)) (eq. 13); 0 when either variable is constant."""
    k, l = _square(k, "K"), _square(l, "L")  # noqa: E741
    if k.shape != l.shape:
        raise InputError(f"CKA: K and L must have the same shape, got {k.shape} and {l.shape}")
    kc, lc = center_gram(k), center_gram(l)
    nk, nl = float(np.linalg.norm(kc)), float(np.linalg.norm(lc))
    if nk <= _zero_tol(k) or nl <= _zero_tol(l):
        return 0.0
    return float(np.vdot(kc, lc)) / (nk * nl)


def rbf_kernel(gamma: float) -> Kernel:
    """k(a, b) = exp(-gamma |a - b|^2) as a callable (a, b) -> Gram matrix (rows are samples)."""
    gamma = float(check_positive_number(gamma, "gamma"))

    def k(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.exp(-gamma * _sqdist(_flat(a), _flat(b)))

    return k


def _flat(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    return a.reshape(a.shape[0], -1)


def _sqdist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d2 = np.einsum("ij,ij->i", a, a)[:, None] + np.einsum("ij,ij->i", b, b)[None, :] - 2.0 * (a @ b.T)
    return np.maximum(d2, 0.0, out=d2)


def _blocks(n: int, m: int, block_size: int | None, seed: int, what: str,
            paired: bool = False) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Seeded row blocks of the two samples (one block of everything when ``block_size`` is None)."""
    if block_size is None:
        yield np.arange(n), np.arange(m)
        return
    b = int(check_positive_number(block_size, "block_size", integer=True))
    if min(n, m) < b:
        raise InputError(f"{what}: fewer rows than one block: {min(n, m)} < block_size {b}; lower "
                         "block_size or pass more samples")
    rng = np.random.default_rng(seed)
    px = rng.permutation(n)
    py = px if paired else rng.permutation(m)
    for s in range(min(n, m) // b):
        yield px[s * b:(s + 1) * b], py[s * b:(s + 1) * b]


def block_cms(x: Any, y: Any, kernel: Kernel, *, block_size: int | None = None, seed: int = 0) -> float:
    """CMS (eq. 4) of samples ``x`` and ``y`` under ``kernel``, averaged over seeded blocks (appendix C)."""
    x, y = np.asarray(x), np.asarray(y)
    vals = [cms(kernel(x[i], y[j]), kernel(x[i], x[i]), kernel(y[j], y[j]))
            for i, j in _blocks(len(x), len(y), block_size, seed, "CMS")]
    return float(np.mean(vals))


def block_mmd2(x: Any, y: Any, kernel: Kernel, *, block_size: int | None = None, seed: int = 0,
               unbiased: bool = False) -> float:
    """MMD^2 of samples ``x`` and ``y`` under ``kernel``, averaged over seeded blocks (appendix C)."""
    x, y = np.asarray(x), np.asarray(y)
    vals = [mmd2(kernel(x[i], y[j]), kernel(x[i], x[i]), kernel(y[j], y[j]), unbiased=unbiased)
            for i, j in _blocks(len(x), len(y), block_size, seed, "MMD^2")]
    return float(np.mean(vals))


def block_hsic(x: Any, y: Any, kernel_x: Kernel, kernel_y: Kernel | None = None, *,
               block_size: int | None = None, seed: int = 0) -> float:
    """HSIC of paired samples (x_i, y_i), averaged over seeded blocks."""
    x, y = np.asarray(x), np.asarray(y)
    _check_paired(x, y)
    ky = kernel_y or kernel_x
    return float(np.mean([hsic(kernel_x(x[i], x[i]), ky(y[i], y[i]))
                          for i, _ in _blocks(len(x), len(y), block_size, seed, "HSIC", paired=True)]))


def block_cka(x: Any, y: Any, kernel_x: Kernel, kernel_y: Kernel | None = None, *,
              block_size: int | None = None, seed: int = 0) -> float:
    """CKA of paired samples (x_i, y_i), averaged over seeded blocks (the paper's mini-batch CKA)."""
    x, y = np.asarray(x), np.asarray(y)
    _check_paired(x, y)
    ky = kernel_y or kernel_x
    return float(np.mean([cka(kernel_x(x[i], x[i]), ky(y[i], y[i]))
                          for i, _ in _blocks(len(x), len(y), block_size, seed, "CKA", paired=True)]))


def _check_paired(x: np.ndarray, y: np.ndarray) -> None:
    if len(x) != len(y):
        raise InputError(f"HSIC/CKA need paired samples: x has {len(x)} rows, y has {len(y)}")


# ------------------------------------------------------------------------------------------ pixel CKA matrix
def as_pixels(images: Any, name: str = "images") -> np.ndarray:
    """(n, H, W) or (n, H, W, C) images -> float64 (n, d, c) pixels, d = H * W in row-major order."""
    arr = np.asarray(images)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise InputError(f"{name}: expected a numeric image array, got dtype {arr.dtype}")
    if arr.ndim == 3:
        arr = arr[..., None]
    if arr.ndim != 4:
        raise InputError(f"{name}: expected shape (n, H, W) or (n, H, W, C), got {arr.shape}")
    if 0 in arr.shape:
        raise InputError(f"{name}: empty image array of shape {arr.shape}")
    arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise InputError(f"{name}: image {int(bad[0])} (0-based) has a non-finite value at pixel "
                         f"({int(bad[1])}, {int(bad[2])}); all values must be finite")
    n, h, w, c = arr.shape
    return arr.reshape(n, h * w, c)


def median_gamma(pixels: np.ndarray, spec: Any = "median", *, seed: int = 0,
                 max_samples: int = CKA_MAX_IMAGES) -> float:
    """gamma from a spec: a number, or ``factor / median |x - x'|_2`` over whole flattened images."""
    parsed = parse_bandwidth(spec, "gamma")
    if isinstance(parsed, float):
        return parsed
    _, factor = parsed
    med = median_pairwise_distance(pixels.reshape(pixels.shape[0], -1), max_samples=max_samples, seed=seed)
    if not np.isfinite(med) or med <= 0:
        raise InputError("gamma: the median rule found no two distinct real images; every real image is "
                         "the same (pass a number for gamma, or more varied images)")
    return factor / med


def _unit_centred_rows(vals: np.ndarray, gamma: float, tri: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Per pixel: HK_aH of one block, as a unit-norm row of its weighted upper triangle (zero if constant).

    ``vals``: (b, p, c) pixel values of b images for p pixels. Returns (p, b (b + 1) / 2).
    """
    v = np.ascontiguousarray(np.transpose(vals, (1, 0, 2)))  # (p, b, c)
    p, b = v.shape[0], v.shape[1]
    k = np.subtract(v[:, :, None, 0], v[:, None, :, 0])
    k *= k
    for ch in range(1, v.shape[2]):
        diff = np.subtract(v[:, :, None, ch], v[:, None, :, ch])
        diff *= diff
        k += diff
    k *= -gamma
    np.exp(k, out=k)
    # double centring of a symmetric matrix: row means = column means
    r = k.mean(axis=2)
    mu = r.mean(axis=1)
    k -= r[:, :, None]
    k -= r[:, None, :]
    k += mu[:, None, None]
    off, diag = tri
    flat = k.reshape(p, b * b)
    rows = np.empty((p, off.size + diag.size))
    np.take(flat, off, axis=1, out=rows[:, :off.size])
    rows[:, :off.size] *= math.sqrt(2.0)
    np.take(flat, diag, axis=1, out=rows[:, off.size:])
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    tol = 1e-12 * b  # |K| <= 1: HKH of a constant pixel is 0 up to this round-off
    scale = np.where(norms > tol, 1.0 / np.where(norms > tol, norms, 1.0), 0.0)
    rows *= scale[:, None]
    return rows


def pixel_cka_matrix(images: Any, *, gamma: Any = "median", block_size: int | None = CKA_BLOCK_SIZE,
                     max_images: int | None = CKA_MAX_IMAGES, seed: int = 0, max_bytes: int = MAX_BYTES,
                     progress: bool | None = False, dtype: str = "float64", client: Any = None) -> np.ndarray:
    """The d x d pixel-by-pixel CKA matrix of Algorithm 1, with matrix products instead of a double loop.

    ``images``: (n, H, W) or (n, H, W, C) (or already (n, d, c) pixels via :func:`as_pixels`). At most
    ``max_images`` images are used (a seeded subsample), in seeded blocks of ``block_size`` whose CKA matrices
    are averaged (``None``: one block of all images). The pixel kernel is exp(-gamma |a - b|^2); see the
    module docstring for the gamma convention. A pixel constant within a block has CKA 0 with every other
    pixel and 1 with itself in that block. Returns a symmetric float64 array with unit diagonal.
    ``dtype="float32"`` runs the big product in single precision (about twice as fast; entries then agree
    with the float64 result to ~1e-6, plenty for clustering). Each block is a task returning a
    :class:`PixelCKAAccumulator`; ``client`` (a dask Client) runs them on a cluster, otherwise they run
    here, one after the other.
    """
    return _pixel_cka_px(as_pixels(images), gamma=gamma, block_size=block_size, max_images=max_images,
                         seed=seed, max_bytes=max_bytes, progress=progress, dtype=dtype, client=client)


def _pixel_cka_px(px: np.ndarray, *, gamma: Any, block_size: int | None, max_images: int | None, seed: int,
                  max_bytes: int, progress: bool | None, dtype: str = "float64",
                  client: Any = None) -> np.ndarray:
    seed = check_seed(seed)
    if dtype not in ("float64", "float32"):
        raise OptionError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
    n = px.shape[0]
    rng = np.random.default_rng(seed)
    if max_images is not None:
        max_images = int(check_positive_number(max_images, "max_images", integer=True))
        if n > max_images:
            px = px[np.sort(rng.choice(n, size=max_images, replace=False))]
            n = max_images
    g = median_gamma(px, gamma, seed=seed) if not isinstance(gamma, (int, float)) else \
        float(check_positive_number(gamma, "gamma"))
    if block_size is None:
        order = np.arange(n)
    else:
        b = int(check_positive_number(block_size, "cka_block_size", integer=True))
        if n < b:
            raise InputError(f"pixel CKA: fewer images than one block: {n} < cka_block_size {b}; lower the "
                             "block size or pass more images")
        order = rng.permutation(n)
    return _pixel_cka_rows(px, order, g, block_size=block_size, max_bytes=max_bytes, progress=progress,
                           dtype=dtype, client=client)


def _pixel_cka_rows(source: Any, order: np.ndarray, gamma: float, *, block_size: int | None, max_bytes: int,
                    progress: bool | None, dtype: str, client: Any) -> np.ndarray:
    """The CKA matrix over blocks of ``source`` rows ``order[k b:(k+1) b]``: one task per block.

    (A task could stack several blocks into one syrk, but one task per block spreads the work over the
    workers of a cluster, and in one process a syrk of b (b + 1) / 2 columns is already efficient.)
    """
    n = len(order)
    b = n if block_size is None else int(block_size)
    if b < 2:
        raise InputError("pixel CKA needs at least 2 images per block")
    max_bytes = int(check_positive_number(max_bytes, "max_bytes", integer=True))
    tasks = [(*_task_rows(source, order[s * b:(s + 1) * b]), b, gamma, max_bytes, dtype)
             for s in range(n // b)]
    acc = _runner(client).map_reduce(pixel_cka_partition, tasks, description="pixel CKA",
                                     progress=progress_enabled(progress))
    return acc.compute()


@dataclass
class PixelCKAAccumulator:
    """Sum over blocks of the d x d CKA matrices F F^T (upper triangle) and the number of blocks."""

    dim: int
    sum_upper: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    n_blocks: int = 0

    def __post_init__(self) -> None:
        if self.sum_upper is None:
            self.sum_upper = np.zeros((self.dim, self.dim))

    def update(self, rows: np.ndarray, n_blocks: int) -> PixelCKAAccumulator:
        """Add F F^T for ``rows`` F (d x k), the unit centred rows of ``n_blocks`` blocks side by side."""
        from scipy.linalg.blas import dsyrk, ssyrk

        if rows.dtype == np.float32:
            self.sum_upper += ssyrk(1.0, rows, lower=0)  # upper triangle; the lower one stays 0
        else:
            self.sum_upper = dsyrk(1.0, rows, beta=1.0, c=self.sum_upper, lower=0, overwrite_c=1)
        self.n_blocks += int(n_blocks)
        return self

    def merge(self, other: PixelCKAAccumulator) -> PixelCKAAccumulator:
        if other.dim != self.dim:
            raise InputError(f"cannot merge CKA matrices of {self.dim} and {other.dim} pixels")
        self.sum_upper += np.triu(other.sum_upper)
        self.n_blocks += other.n_blocks
        return self

    def compute(self) -> np.ndarray:
        """M = mean over blocks of the CKA matrices: symmetric, unit diagonal, clipped to [-1, 1]."""
        if self.n_blocks == 0:
            raise InputError("pixel CKA: no blocks were accumulated")
        m = np.triu(self.sum_upper)
        m = m + np.triu(m, 1).T
        m /= self.n_blocks
        np.fill_diagonal(m, 1.0)
        np.clip(m, -1.0, 1.0, out=m)
        return m


def pixel_cka_partition(source: Any, indices: np.ndarray | None, block_size: int, gamma: float,
                        max_bytes: int, dtype: str = "float64") -> PixelCKAAccumulator:
    """Task: the summed CKA matrices of consecutive blocks of ``block_size`` of the given images.

    ``source``/``indices``: pixels (k, d, c) with ``indices`` None, or an :class:`ImageRows` and the image
    indices to read here (on the worker).
    """
    px = _read_px(source, indices)
    k, d, _ = px.shape
    b = int(block_size)
    n_blocks = k // b
    single = dtype == "float32"
    item = 4 if single else 8
    width = b * (b + 1) // 2
    iu = np.triu_indices(b, k=1)
    tri = (iu[0] * b + iu[1], np.arange(b) * (b + 1))  # flat indices: upper triangle, diagonal
    # budget: ~60% for the stacked rows F, ~25% for the per-pixel-chunk temporaries (the (p, b, b) Gram
    # stack, its difference and centred copies, and the rows), the rest for M (d x d) and slack
    p_chunk = max(1, min(d, int(0.25 * max_bytes) // (8 * (4 * b * b + width))))
    acc = PixelCKAAccumulator(d)
    if n_blocks > 1 or d * width * item <= 0.6 * max_bytes:
        f = np.empty((d, width * n_blocks), dtype=np.float32 if single else np.float64)
        for j in range(n_blocks):
            vals = px[j * b:(j + 1) * b]
            for s in range(0, d, p_chunk):
                f[s:s + p_chunk, j * width:(j + 1) * width] = _unit_centred_rows(
                    vals[:, s:s + p_chunk], gamma, tri)
        return acc.update(f, n_blocks)
    # one block too large to stack for all pixels: pairs of pixel chunks, rows recomputed
    p = max(1, int(0.6 * max_bytes // (2 * width * item)))
    starts = list(range(0, d, p))
    vals = px[:b]
    for ia, a in enumerate(starts):
        fa = _unit_centred_rows(vals[:, a:a + p], gamma, tri).astype(dtype, copy=False)
        for bb in starts[ia:]:
            fb = fa if bb == a else \
                _unit_centred_rows(vals[:, bb:bb + p], gamma, tri).astype(dtype, copy=False)
            acc.sum_upper[a:a + p, bb:bb + p] += fa @ fb.T
    acc.n_blocks = 1
    return acc


# ------------------------------------------------------------------------------ partitions and their inputs
def _runner(client: Any) -> Any:
    from ..scale.runner import DaskRunner, LocalRunner

    return LocalRunner() if client is None else DaskRunner(client)


def _is_rows(source: Any) -> bool:
    from ..data.images import ImageRows

    return isinstance(source, ImageRows)


def _source_shape(source: Any) -> tuple[int, int, int]:
    """(n, d, c) of pixels (n, d, c) or of an :class:`ImageRows` set."""
    if _is_rows(source):
        n, h, w, c = source.shape
        return n, h * w, c
    return source.shape


def _task_rows(source: Any, indices: np.ndarray) -> tuple[Any, np.ndarray | None]:
    """What a task needs for rows ``indices``: a file-backed set travels as itself plus the indices (the
    worker reads them), in-memory pixels as the slice."""
    if _is_rows(source):
        return source, np.asarray(indices, dtype=np.int64)
    return np.ascontiguousarray(source[np.asarray(indices, dtype=np.int64)]), None


def _read_px(source: Any, indices: np.ndarray | None) -> np.ndarray:
    if indices is None:
        return source
    return as_pixels(source.read(indices), source.where)


def pixel_cka_loop(images: Any, *, gamma: float, block_size: int | None = None, seed: int = 0,
                   pairs: Sequence[tuple[int, int]] | None = None) -> np.ndarray:
    """Reference: the paper's nested loop, CKA (eq. 13) of every pixel pair from explicit Gram matrices.

    Same blocks as :func:`pixel_cka_matrix` with ``max_images=None``. With ``pairs`` only those entries are
    computed (the rest stay NaN): the benchmark times a subset this way. O(d^2 b^3) per block.
    """
    px = as_pixels(images)
    n, d, _ = px.shape
    rng = np.random.default_rng(seed)
    b = n if block_size is None else int(block_size)
    order = np.arange(n) if block_size is None else rng.permutation(n)
    n_blocks = n // b
    todo = pairs if pairs is not None else [(i, j) for i in range(d) for j in range(d)]
    out = np.full((d, d), np.nan)
    h = np.eye(b) - np.ones((b, b)) / b
    for i, j in todo:
        acc = 0.0
        for blk in range(n_blocks):
            vals = px[order[blk * b:(blk + 1) * b]]
            ki = np.exp(-gamma * _sqdist(vals[:, i], vals[:, i]))
            kj = np.exp(-gamma * _sqdist(vals[:, j], vals[:, j]))
            hij = np.trace(ki @ h @ kj @ h)
            hii = np.trace(ki @ h @ ki @ h)
            hjj = np.trace(kj @ h @ kj @ h)
            tol = 1e-12 * b
            if i == j:
                acc += 1.0
            elif math.sqrt(max(hii, 0.0)) <= tol or math.sqrt(max(hjj, 0.0)) <= tol:
                acc += 0.0
            else:
                acc += hij / math.sqrt(hii * hjj)
        out[i, j] = acc / n_blocks
    return out


# ---------------------------------------------------------------------------------------------- clustering
def _linkage(cka_matrix: np.ndarray) -> np.ndarray:
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import squareform

    dist = 1.0 - np.asarray(cka_matrix, dtype=np.float64)
    dist = np.clip((dist + dist.T) / 2.0, 0.0, None)
    np.fill_diagonal(dist, 0.0)
    return linkage(squareform(dist, checks=False), method="average")


def _top_down(m: np.ndarray, max_splits: int,
              min_size: int) -> tuple[list[list[int]], list[int], list[float]]:
    """Walk the average-linkage dendrogram of 1 - M from the root, splitting the highest merge first.

    A merge is split only when both branches hold at least ``min_size`` pixels; smaller branches met on the
    way down are set aside as outliers. Returns the cores (pixel lists), the outliers and the split heights.
    """
    from scipy.cluster.hierarchy import to_tree

    root = to_tree(_linkage(m))

    def descend(node):
        skipped: list[int] = []
        while not node.is_leaf():
            left, right = node.get_left(), node.get_right()
            if min(left.get_count(), right.get_count()) >= min_size:
                return node, skipped
            small, node = (left, right) if left.get_count() < right.get_count() else (right, left)
            skipped.extend(small.pre_order())
        return None, skipped

    cores, outliers, heights = [root], [], []
    while len(cores) <= max_splits:
        best = None
        for i, node in enumerate(cores):
            split, skipped = descend(node)
            if split is not None and (best is None or split.dist > best[1].dist):
                best = (i, split, skipped)
        if best is None:
            break
        i, split, skipped = best
        cores[i:i + 1] = [split.get_left(), split.get_right()]
        outliers.extend(skipped)
        heights.append(float(split.dist))
    return [c.pre_order() for c in cores], outliers, heights


def default_min_region_size(n_pixels: int, n_regions: int) -> int:
    """Smallest region the cut keeps: a quarter of the average region size (at least 1 pixel)."""
    return max(1, n_pixels // (4 * max(1, n_regions)))


def suggest_n_regions(cka_matrix: Any, *, max_regions: int = 10, min_region_size: int | None = None) -> int:
    """C at the largest gap between successive split heights of the dendrogram, C in [2, max_regions]."""
    m = np.asarray(cka_matrix, dtype=np.float64)
    d = m.shape[0]
    if d < 2:
        return 1
    ms = default_min_region_size(d, max_regions) if min_region_size is None else int(min_region_size)
    _, _, heights = _top_down(m, max_regions, ms)
    if len(heights) < 2:
        return max(1, len(heights) + 1)
    # heights[k] is the split that makes k + 2 clusters; cutting between heights[c-2] and heights[c-1]
    # leaves c clusters (only C with a next split to compare with are candidates)
    gaps = {c: heights[c - 2] - heights[c - 1] for c in range(2, min(max_regions, len(heights)) + 1)}
    return max(gaps, key=lambda c: (gaps[c] - 1e-12 * c))


def discover_regions(cka_matrix: Any, n_regions: int | str = "auto", *, max_regions: int = 10,
                     min_region_size: int | None = None) -> np.ndarray:
    """Average-linkage clustering of 1 - M cut into C regions; labels 0..C-1, numbered by first pixel.

    The cut walks the dendrogram from the top and splits the highest merge whose two branches both have at
    least ``min_region_size`` pixels (default: a quarter of d / C), so that a few outlier pixels with low CKA
    to everything (near-constant borders) do not take up regions of their own; each such outlier joins the
    region with the highest mean CKA to it. ``min_region_size=1`` is the plain cut of the dendrogram into C
    clusters. ``n_regions="auto"`` picks C with :func:`suggest_n_regions`.
    """
    m = np.asarray(cka_matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise InputError(f"CKA matrix: expected a square matrix, got shape {m.shape}")
    d = m.shape[0]
    if n_regions == "auto":
        n_regions = suggest_n_regions(m, max_regions=max_regions, min_region_size=min_region_size)
    c = int(check_positive_number(n_regions, "n_regions", integer=True))
    if c > d:
        raise OptionError(f"n_regions = {c} is more than the {d} pixels that can be clustered")
    if c == 1 or d == 1:
        return np.zeros(d, dtype=np.int64)
    ms = default_min_region_size(d, c) if min_region_size is None else int(
        check_positive_number(min_region_size, "min_region_size", integer=True))
    cores, outliers, _ = _top_down(m, c - 1, ms)
    if len(cores) < c:  # C regions of that size do not exist: plain cut
        cores, outliers, _ = _top_down(m, c - 1, 1)
    labels = np.full(d, -1, dtype=np.int64)
    for k, core in enumerate(cores):
        labels[core] = k
    if outliers:
        onehot = np.zeros((d, len(cores)))
        for k, core in enumerate(cores):
            onehot[core, k] = 1.0 / len(core)
        labels[outliers] = np.argmax(m[outliers] @ onehot, axis=1)
    return _relabel(labels)


def _relabel(labels: np.ndarray) -> np.ndarray:
    _, first = np.unique(labels, return_index=True)
    order = labels[np.sort(first)]
    mapping = {int(v): i for i, v in enumerate(order)}
    return np.array([mapping[int(v)] for v in labels], dtype=np.int64)


def fill_constant_pixels(labels: np.ndarray, constant: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Give each constant pixel (``labels`` there is ignored) the label of the nearest other pixel."""
    from scipy.ndimage import distance_transform_edt

    if not constant.any():
        return labels
    grid_const = constant.reshape(shape)
    _, (ri, ci) = distance_transform_edt(grid_const, return_indices=True)
    full = labels.reshape(shape)
    return full[ri, ci].reshape(-1).astype(np.int64)


# ------------------------------------------------------------------------------------------ region CMS
def _region_sqdists(x: np.ndarray, y: np.ndarray, onehot: np.ndarray) -> np.ndarray:
    """(C, n, m) squared distances restricted to each region; x, y: (n, d, c), onehot: (d, C)."""
    xx = np.einsum("ndc,ndc->nd", x, x) @ onehot  # (n, C)
    yy = xx if y is x else np.einsum("ndc,ndc->nd", y, y) @ onehot
    out = np.empty((onehot.shape[1], x.shape[0], y.shape[0]))
    for r in range(onehot.shape[1]):
        sel = np.flatnonzero(onehot[:, r] > 0)
        xr = x[:, sel].reshape(x.shape[0], -1)
        yr = xr if y is x else y[:, sel].reshape(y.shape[0], -1)
        np.matmul(xr, yr.T, out=out[r])
        out[r] *= -2.0
        out[r] += xx[:, r, None]
        out[r] += yy[None, :, r]
    return np.maximum(out, 0.0, out=out)


def _logsumexp(a: np.ndarray, axis: tuple[int, ...]) -> np.ndarray:
    mx = a.max(axis=axis, keepdims=True)
    return (np.log(np.exp(a - mx).sum(axis=axis, keepdims=True)) + mx).squeeze(axis)


def log_cms_rbf(d_xy: np.ndarray, d_xx: np.ndarray, d_yy: np.ndarray, gamma: float) -> np.ndarray:
    """log CMS under exp(-gamma d) from squared distances; leading axes (regions) are kept."""
    ax = (-2, -1)
    return (_logsumexp(-gamma * d_xy, ax)
            - 0.5 * (_logsumexp(-gamma * d_xx, ax) + _logsumexp(-gamma * d_yy, ax)))


def region_cms(x: Any, y: Any, regions: Any, gamma: float, *, block_size: int | None = None,
               seed: int = 0, partition_rows: int = 512, client: Any = None) -> dict[str, Any]:
    """CMS of the whole image, of each region and their product, for real ``x`` and generated ``y``.

    ``x``, ``y``: images (n, H, W[, C]) of the same size; ``regions``: H*W labels 0..C-1 (row-major).
    Returns ``{"cms", "product_cms", "region_cms" (C,), "mmd2"}`` (block-averaged when ``block_size`` is
    given; the product is then of the block-averaged region CMS, the quantity a user would multiply).
    The kernel sums run as tasks over pairs of row chunks of ``partition_rows`` (one task per block when
    ``block_size`` is given), here or on a dask ``client``.
    """
    px, py = as_pixels(x, "real images"), as_pixels(y, "generated images")
    if px.shape[1:] != py.shape[1:]:
        raise InputError(f"real and generated images differ in size or channels: {np.shape(x)[1:]} vs "
                         f"{np.shape(y)[1:]}")
    return _region_cms_sources(px, [py], regions, gamma, block_size=block_size, seed=seed,
                               partition_rows=partition_rows, client=client)[0]


def _onehot(labels: np.ndarray) -> np.ndarray:
    labels = np.asarray(labels, dtype=np.int64).reshape(-1)
    onehot = np.zeros((labels.shape[0], int(labels.max()) + 1))
    onehot[np.arange(labels.shape[0]), labels] = 1.0
    return onehot


def region_sums_partition(key: str, x_source: Any, x_indices: np.ndarray | None, y_source: Any,
                          y_indices: np.ndarray | None, labels: np.ndarray, gamma: float,
                          weight: float = 1.0) -> Any:
    """Task: kernel sums between two chunks of images, times ``weight``.

    Log-sums ``key/region`` (C,) of sum_ij exp(-gamma |x_I - y_I|^2) per region and ``key/whole`` of the
    image kernel, and the plain sum ``key/k`` of the image kernel (for MMD^2). ``y_source`` None: the chunk
    with itself (the rows are read once).
    """
    from ..stats.accumulators import SumsAccumulator

    x = _read_px(x_source, x_indices)
    y = x if y_source is None else _read_px(y_source, y_indices)
    dist = _region_sqdists(x, y, _onehot(labels))
    whole = -gamma * dist.sum(0)
    log_w = math.log(weight)
    return SumsAccumulator().update(
        sums={f"{key}/k": weight * float(np.exp(whole).sum())},
        log_sums={f"{key}/region": _logsumexp(-gamma * dist, (-2, -1)) + log_w,
                  f"{key}/whole": _logsumexp(whole, (-2, -1)) + log_w})


def region_block_partition(key: str, x_source: Any, x_indices: np.ndarray | None, y_source: Any,
                           y_indices: np.ndarray | None, labels: np.ndarray, gamma: float) -> Any:
    """Task: the CMS (whole, per region) and MMD^2 of one block pair, as sums ``key/...`` with a count."""
    from ..stats.accumulators import SumsAccumulator

    xb, yb = _read_px(x_source, x_indices), _read_px(y_source, y_indices)
    onehot = _onehot(labels)
    dxx, dxy, dyy = (_region_sqdists(xb, xb, onehot), _region_sqdists(xb, yb, onehot),
                     _region_sqdists(yb, yb, onehot))
    ax = (-2, -1)
    per = np.exp(_logsumexp(-gamma * dxy, ax) - 0.5 * (_logsumexp(-gamma * dxx, ax)
                                                       + _logsumexp(-gamma * dyy, ax)))
    sxx, sxy, syy = dxx.sum(0), dxy.sum(0), dyy.sum(0)
    whole = float(np.exp(_logsumexp(-gamma * sxy, ax)
                         - 0.5 * (_logsumexp(-gamma * sxx, ax) + _logsumexp(-gamma * syy, ax))))
    mmd = float(np.exp(-gamma * sxx).mean() + np.exp(-gamma * syy).mean() - 2.0 * np.exp(-gamma * sxy).mean())
    return SumsAccumulator().update(sums={f"{key}/region": per, f"{key}/whole": whole, f"{key}/mmd": mmd,
                                          f"{key}/n": 1.0})


def _chunk_rows(n: int, size: int) -> list[np.ndarray]:
    return [np.arange(a, min(a + size, n)) for a in range(0, n, size)]


def _region_cms_sources(ref: Any, sets: list, regions: Any, gamma: float, *, block_size: int | None,
                        seed: int, partition_rows: int, client: Any = None,
                        progress: bool | None = False) -> list[dict[str, Any]]:
    """Region CMS of each generated set in ``sets`` against ``ref`` (pixels (n, d, c) or ImageRows).

    Exact (``block_size`` None): one task per pair of row chunks; the real-vs-real sums are computed once for
    all sets (over chunk pairs i <= j, the off-diagonal pairs counted twice). Blocks: one task per block.
    """
    labels = np.asarray(regions, dtype=np.int64).reshape(-1)
    n, d, _ = _source_shape(ref)
    if labels.shape[0] != d:
        raise InputError(f"regions: {labels.shape[0]} labels for {d} pixels")
    size = int(check_positive_number(partition_rows, "partition_rows", integer=True))
    tasks = []
    if block_size is None:
        func = region_sums_partition
        # each chunk is sliced once: the pair tasks share the slices (or the file set and its indices)
        parts = [[_task_rows(src, rows) for rows in _chunk_rows(_source_shape(src)[0], size)]
                 for src in [ref, *sets]]
        for key, chunks in [("xx", parts[0])] + [(f"{k}:yy", p) for k, p in enumerate(parts[1:])]:
            for ia, a in enumerate(chunks):
                for ib in range(ia, len(chunks)):
                    other = (None, None) if ib == ia else chunks[ib]
                    tasks.append((key, *a, *other, labels, gamma, 1.0 if ib == ia else 2.0))
        for k, chunks in enumerate(parts[1:]):
            for a in parts[0]:
                for b in chunks:
                    tasks.append((f"{k}:xy", *a, *b, labels, gamma, 1.0))
    else:
        func = region_block_partition
        for k, s in enumerate(sets):
            for i, j in _blocks(n, _source_shape(s)[0], block_size, seed, "region CMS"):
                tasks.append((str(k), *_task_rows(ref, i), *_task_rows(s, j), labels, gamma))
    sums, logs = _runner(client).map_reduce(func, tasks, description="region CMS",
                                            progress=progress_enabled(progress)).compute()
    out = []
    for k, s in enumerate(sets):
        if block_size is None:
            m = _source_shape(s)[0]
            per = np.exp(logs[f"{k}:xy/region"] - 0.5 * (logs["xx/region"] + logs[f"{k}:yy/region"]))
            whole = float(np.exp(logs[f"{k}:xy/whole"] - 0.5 * (logs["xx/whole"] + logs[f"{k}:yy/whole"])))
            mmd = float(sums["xx/k"] / (n * n) + sums[f"{k}:yy/k"] / (m * m)
                        - 2.0 * sums[f"{k}:xy/k"] / (n * m))
        else:
            count = float(sums[f"{k}/n"])
            per = sums[f"{k}/region"] / count
            whole, mmd = float(sums[f"{k}/whole"]) / count, float(sums[f"{k}/mmd"]) / count
        out.append({"cms": whole, "product_cms": float(np.prod(per)), "region_cms": per, "mmd2": mmd})
    return out


def cross_region_cka(x: Any, regions: Any, gamma: float, *, block_size: int | None = CKA_BLOCK_SIZE,
                     seed: int = 0, partition_rows: int = 512, client: Any = None) -> np.ndarray:
    """C x C CKA between region kernels exp(-gamma |x_I - x'_I|^2) on (real) images, block-averaged.

    Theorem 1 assumes the off-diagonal entries are 0; their size says how far the product can be trusted.
    """
    px = as_pixels(x)
    return _cross_region_cka_rows(px, np.arange(px.shape[0]), regions, gamma, block_size=block_size,
                                  seed=seed, partition_rows=partition_rows, client=client)


def cross_cka_partition(source: Any, indices: np.ndarray | None, block_size: int, labels: np.ndarray,
                        gamma: float) -> Any:
    """Task: sum over consecutive blocks of the given images of the C x C region CKA, and the count."""
    from ..stats.accumulators import SumsAccumulator

    px = _read_px(source, indices)
    onehot = _onehot(labels)
    n_reg = onehot.shape[1]
    acc = np.zeros((n_reg, n_reg))
    b = int(block_size)
    for s in range(0, px.shape[0] // b * b, b):
        kc = center_gram(np.exp(-gamma * _region_sqdists(px[s:s + b], px[s:s + b], onehot)))  # (C, b, b)
        flat = kc.reshape(n_reg, -1)
        norms = np.linalg.norm(flat, axis=1)
        tol = 1e-12 * b
        flat = flat * np.where(norms > tol, 1.0 / np.where(norms > tol, norms, 1.0), 0.0)[:, None]
        acc += flat @ flat.T
    return SumsAccumulator().update(sums={"cka": acc, "n": float(px.shape[0] // b)})


def pixel_range_partition(source: Any, indices: np.ndarray | None) -> Any:
    """Task: per pixel and channel, the minimum and maximum over the given images (constant pixels)."""
    from ..stats.accumulators import MinMaxAccumulator

    return MinMaxAccumulator().update(_read_px(source, indices))


def _cross_region_cka_rows(source: Any, rows: np.ndarray, regions: Any, gamma: float, *,
                           block_size: int | None, seed: int, partition_rows: int = 512,
                           client: Any = None) -> np.ndarray:
    """Cross-region CKA over images ``rows`` of ``source``: one task per group of blocks."""
    labels = np.asarray(regions, dtype=np.int64).reshape(-1)
    n = len(rows)
    b = None if block_size is None or block_size >= n else int(block_size)
    blocks = [rows[i] for i, _ in _blocks(n, n, b, seed, "cross-region CKA", paired=True)]
    size = len(blocks[0])
    per_task = max(1, int(partition_rows) // size)
    tasks = [(*_task_rows(source, np.concatenate(blocks[s:s + per_task])), size, labels, gamma)
             for s in range(0, len(blocks), per_task)]
    sums, _ = _runner(client).map_reduce(cross_cka_partition, tasks, description="cross-region CKA").compute()
    acc = sums["cka"] / float(sums["n"])
    np.fill_diagonal(acc, 1.0)
    return acc


# ------------------------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class RegionsResult(Result):
    """Disentangled CMS of one or more generated sets against real images.

    ``cms``, ``product_cms``, ``mmd2``: one value per generated set (in ``names`` order); ``region_cms``: one
    row per set, one column per region; ``regions``: the region of each pixel, row-major over (H, W);
    ``cka_matrix``: the d x d pixel CKA matrix (None in result.json above ``INLINE_CKA_MAX_PIXELS`` pixels;
    ``cka_matrix.npy`` beside it always holds it); ``cross_region_cka``: C x C CKA of the region kernels.
    """

    kind = "regions"

    names: list
    cms: list
    product_cms: list
    region_cms: list
    mmd2: list
    regions: list
    image_shape: list
    n_regions: int
    region_sizes: list
    suggested_n_regions: int
    cross_region_cka: list
    cka_matrix: Any
    constant_pixels: list
    gamma: float
    n_real: int
    n_generated: list
    config: dict
    seed: int
    timings: dict = field(default_factory=dict)
    version: str = __version__

    def region_map(self) -> np.ndarray:
        """The region labels as an (H, W) array."""
        return np.asarray(self.regions, dtype=np.int64).reshape(self.image_shape[:2])

    def table(self) -> list[dict]:
        """One row per generated set: name, cms, product, log gap and each region's CMS (the curves)."""
        rows = []
        for k, name in enumerate(self.names):
            row = {"set": name, "cms": self.cms[k], "product_cms": self.product_cms[k], "mmd2": self.mmd2[k]}
            row.update({f"region_{r}": v for r, v in enumerate(self.region_cms[k])})
            rows.append(row)
        return rows

    def to_dict(self) -> dict:
        import dataclasses

        from ..results import to_jsonable

        big = len(self.regions) > INLINE_CKA_MAX_PIXELS
        data = {"kind": self.kind}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            data[f.name] = None if (f.name == "cka_matrix" and big) else to_jsonable(value)
        return data

    def save(self, out_dir):  # type: ignore[override]
        """Write cka_matrix.npy and curves.csv, then result.json last (all atomically)."""
        from pathlib import Path

        from ..io import atomic_write_bytes, atomic_write_text

        out = Path(out_dir)
        if self.cka_matrix is not None:
            import io

            buf = io.BytesIO()
            np.save(buf, np.asarray(self.cka_matrix, dtype=np.float64))
            atomic_write_bytes(out / "cka_matrix.npy", buf.getvalue())
        rows = self.table()
        header = list(rows[0]) if rows else ["set"]
        lines = [",".join(header)] + [",".join(_csv(r[h]) for h in header) for r in rows]
        atomic_write_text(out / "curves.csv", "\n".join(lines) + "\n")
        return super().save(out)


def _csv(v: Any) -> str:
    if isinstance(v, str):
        return '"' + v.replace('"', '""') + '"' if any(ch in v for ch in ',"\n') else v
    return repr(float(v))


# ----------------------------------------------------------------------------------------------- estimator
@dataclass
class RegionCMS:
    """Disentangled CMS: ``fit(real_images)`` finds the regions, ``compare(generated_sets)`` scores sets.

    ``n_regions``: C, or ``"auto"`` (largest dendrogram gap, 2..``max_regions``). ``gamma``: ``"median"``
    (1 / median Euclidean distance between real images; ``"0.5*median"`` scales it) or a number.
    ``block_size``: mini-batch size of the CMS estimator (None: all images, exact eq. 4).
    ``cka_block_size``: mini-batch size of the pixel CKA (None: one block; ``"auto"``: 100 as in the paper,
    or one block of all images when there are fewer). ``cka_max_images``: real images (seeded subsample)
    for the CKA and the median rule. ``partition_rows``: images per task of the sums over images (the
    pixel CKA has one task per block, the exact CMS one per pair of chunks of this many images); tasks run
    in this process, or on a dask cluster when ``fit``/``compare`` get a ``client``.
    """

    n_regions: int | str = "auto"
    gamma: Any = "median"
    block_size: int | None = None
    cka_block_size: int | str | None = "auto"
    cka_max_images: int | None = CKA_MAX_IMAGES
    max_regions: int = 10
    min_region_size: int | None = None
    seed: int = 0
    max_bytes: int = MAX_BYTES
    progress: bool | None = False
    precision: str = "float64"
    partition_rows: int = 512

    # set by fit
    regions_: np.ndarray | None = field(default=None, init=False, repr=False)
    cka_matrix_: np.ndarray | None = field(default=None, init=False, repr=False)

    def _validate(self) -> None:
        check_seed(self.seed)
        if self.n_regions != "auto":
            check_positive_number(self.n_regions, "n_regions", integer=True)
        check_positive_number(self.max_regions, "max_regions", integer=True)
        if self.block_size is not None:
            b = check_positive_number(self.block_size, "block_size", integer=True)
            if b < 2:
                raise OptionError(f"block_size must be >= 2, got {b}")
        if self.cka_block_size not in (None, "auto"):
            b = check_positive_number(self.cka_block_size, "cka_block_size", integer=True)
            if b < 2:
                raise OptionError(f"cka_block_size must be >= 2, got {b}")
        if self.cka_max_images is not None:
            check_positive_number(self.cka_max_images, "cka_max_images", integer=True)
        check_positive_number(self.partition_rows, "partition_rows", integer=True)
        parse_bandwidth(self.gamma, "gamma")
        if self.precision not in ("float64", "float32"):
            raise OptionError(f"precision must be 'float64' or 'float32', got {self.precision!r}")

    def fit(self, real: Any, *, client: Any = None) -> RegionCMS:
        """Pixel CKA matrix on (a seeded subsample of) the real images, then the regions.

        ``real``: an image array (n, H, W[, C]), or a path (image folder, ``.npy``, manifest) or
        :class:`~promptprism.data.images.ImageRows`, whose images the tasks read where they run.
        ``client``: a dask ``Client``; the sums over images (pixel CKA, constant pixels) then run as tasks on
        its cluster, with the same task functions as here.
        """
        self._validate()
        t0 = time.perf_counter()
        src = self._source(real, "real images")
        n, d, c = _source_shape(src)
        if _is_rows(src):
            self.image_shape_ = tuple(src.shape[1:])
        else:
            arr_shape = np.shape(real)
            self.image_shape_ = (arr_shape[1], arr_shape[2], c)
        h, w = self.image_shape_[:2]
        if n < 2:
            raise InputError(f"real images: {n} image(s); at least 2 are needed")
        if self.n_regions != "auto" and int(self.n_regions) > d:
            raise OptionError(f"n_regions = {self.n_regions} is more than the {d} pixels of a "
                              f"{h}x{w} image")
        rng = np.random.default_rng(self.seed)
        sub_rows = np.arange(n)
        if self.cka_max_images is not None and n > self.cka_max_images:
            sub_rows = np.sort(rng.choice(n, size=int(self.cka_max_images), replace=False))
        n_sub = sub_rows.size
        if isinstance(parse_bandwidth(self.gamma, "gamma"), float):
            self.gamma_ = float(parse_bandwidth(self.gamma, "gamma"))
        else:  # the median rule reads the (at most cka_max_images) subsample here
            self.gamma_ = median_gamma(_read_px(*_task_rows(src, sub_rows)), self.gamma, seed=self.seed)
        cka_b = self.cka_block_size
        if cka_b == "auto":  # the paper's 100, or one block of everything when there are fewer images
            cka_b = CKA_BLOCK_SIZE if n_sub >= CKA_BLOCK_SIZE else None
        elif cka_b is not None and cka_b > n_sub:
            raise InputError(f"real images: fewer images than one CKA block: {n_sub} < "
                             f"cka_block_size {cka_b}; lower the CKA block size or pass more images")
        self.cka_block_size_ = cka_b
        t1 = time.perf_counter()
        order = np.arange(n_sub) if cka_b is None else np.random.default_rng(self.seed).permutation(n_sub)
        m = _pixel_cka_rows(src, sub_rows[order], self.gamma_, block_size=cka_b, max_bytes=self.max_bytes,
                            progress=self.progress, dtype=self.precision, client=client)
        t2 = time.perf_counter()
        lo, hi = _runner(client).map_reduce(pixel_range_partition, [
            _task_rows(src, rows) for rows in _chunk_rows(n, self.partition_rows)],
            description="constant pixels").compute()
        constant = (hi - lo).max(axis=1) == 0.0  # constant over *all* real images
        t3 = time.perf_counter()
        free = np.flatnonzero(~constant)
        if free.size == 0:
            raise InputError("real images: every pixel is constant across the images; there is nothing to "
                             "find regions in")
        sub_m = m[np.ix_(free, free)]
        self.suggested_n_regions_ = suggest_n_regions(sub_m, max_regions=self.max_regions,
                                                      min_region_size=self.min_region_size)
        c_req = self.suggested_n_regions_ if self.n_regions == "auto" else int(self.n_regions)
        if c_req > free.size:
            raise OptionError(f"n_regions = {c_req} is more than the {free.size} non-constant pixels of the "
                              "real images")
        labels = np.zeros(d, dtype=np.int64)
        labels[free] = discover_regions(sub_m, c_req, min_region_size=self.min_region_size)
        labels = fill_constant_pixels(labels, constant, self.image_shape_[:2])
        self.regions_ = _relabel(labels)
        self.cka_matrix_ = m
        self.constant_ = constant
        self.real_source_ = src
        self.cka_rows_ = sub_rows
        self.timings_ = {"median_rule_s": t1 - t0, "pixel_cka_s": t2 - t1, "constant_pixels_s": t3 - t2,
                         "clustering_s": time.perf_counter() - t3}
        return self

    def _source(self, images: Any, name: str) -> Any:
        """Pixels (n, d, c) of an array, or an ImageRows for a path (read later, by the tasks)."""
        import os

        from ..data.images import ImageRows

        if isinstance(images, (str, os.PathLike)):
            return ImageRows.open(images, name)
        if isinstance(images, ImageRows):
            return images
        arr = np.asarray(images)
        if arr.ndim not in (3, 4):
            raise InputError(f"{name}: expected shape (n, H, W) or (n, H, W, C), got {arr.shape}")
        return as_pixels(arr, name)

    def compare(self, generated: Any, names: Sequence[str] | None = None, *,
                reference: Any = None, client: Any = None) -> RegionsResult:
        """CMS (whole, per region, product) of each generated set against the real images.

        ``generated``: one image set (an array, a path, an ImageRows) or a list of them (checkpoints,
        epochs); ``reference``: real images to compare against (default: those given to ``fit``; the paper
        uses held-out test images). ``client``: a dask ``Client`` to run the kernel sums on.
        """
        import os

        from ..data.images import ImageRows

        if self.regions_ is None:
            raise OptionError("RegionCMS.compare: call fit(real_images) first")
        single = isinstance(generated, (np.ndarray, ImageRows, str, os.PathLike))
        sets = [generated] if single else list(generated)
        if not sets:
            raise InputError("generated: no generated sets given")
        names = [f"set_{k}" for k in range(len(sets))] if names is None else [str(s) for s in names]
        if len(names) != len(sets):
            raise InputError(f"names: {len(names)} names for {len(sets)} generated sets")
        h, w, c = self.image_shape_
        ref = self.real_source_ if reference is None else self._check_shape(reference, "reference images")
        t0 = time.perf_counter()
        srcs, n_gen = [], []
        for name, g in zip(names, sets, strict=True):
            py = self._check_shape(g, f"generated set {name!r}")
            m = _source_shape(py)[0]
            if self.block_size is not None and min(m, _source_shape(ref)[0]) < self.block_size:
                raise InputError(f"generated set {name!r}: fewer images than one block: "
                                 f"{min(m, _source_shape(ref)[0])} < block_size {self.block_size}")
            srcs.append(py)
            n_gen.append(int(m))
        rows = _region_cms_sources(ref, srcs, self.regions_, self.gamma_, block_size=self.block_size,
                                   seed=self.seed, partition_rows=self.partition_rows, client=client,
                                   progress=self.progress)
        t1 = time.perf_counter()
        cross = _cross_region_cka_rows(self.real_source_, self.cka_rows_, self.regions_, self.gamma_,
                                       block_size=self.cka_block_size_, seed=self.seed,
                                       partition_rows=self.partition_rows, client=client)
        timings = dict(self.timings_, cms_s=t1 - t0, cross_region_cka_s=time.perf_counter() - t1)
        n_reg = int(self.regions_.max()) + 1
        return RegionsResult(
            names=names, cms=[r["cms"] for r in rows], product_cms=[r["product_cms"] for r in rows],
            region_cms=[list(map(float, r["region_cms"])) for r in rows], mmd2=[r["mmd2"] for r in rows],
            regions=self.regions_.tolist(), image_shape=[h, w, c], n_regions=n_reg,
            region_sizes=np.bincount(self.regions_, minlength=n_reg).tolist(),
            suggested_n_regions=int(self.suggested_n_regions_), cross_region_cka=cross.tolist(),
            cka_matrix=self.cka_matrix_.tolist() if self.cka_matrix_.shape[0] <= INLINE_CKA_MAX_PIXELS
            else self.cka_matrix_,
            constant_pixels=np.flatnonzero(self.constant_).tolist(), gamma=float(self.gamma_),
            n_real=int(_source_shape(ref)[0]), n_generated=n_gen,
            config={"n_regions": self.n_regions, "gamma": self.gamma, "gamma_value": float(self.gamma_),
                    "block_size": self.block_size, "cka_block_size": self.cka_block_size_,
                    "cka_max_images": self.cka_max_images, "max_regions": self.max_regions,
                    "min_region_size": self.min_region_size, "precision": self.precision,
                    "partition_rows": self.partition_rows,
                    "gamma_convention": "gamma = factor / median Euclidean distance between real images"},
            seed=int(self.seed), timings=timings)

    def _check_shape(self, images: Any, name: str) -> Any:
        import os

        from ..data.images import ImageRows

        h, w, c = self.image_shape_
        if isinstance(images, (str, os.PathLike, ImageRows)):
            src = images if isinstance(images, ImageRows) else ImageRows.open(images, name)
            if src.shape[1:3] != (h, w):
                raise InputError(f"{name}: images are {src.shape[1]}x{src.shape[2]} but the real images are "
                                 f"{h}x{w}; all images must have the same size")
            if src.shape[3] != c:
                raise InputError(f"{name}: images have {src.shape[3]} channel(s) but the real images have "
                                 f"{c}")
            return src
        arr = np.asarray(images)
        if arr.ndim == 3:
            arr = arr[..., None]
        if arr.ndim != 4:
            raise InputError(f"{name}: expected shape (n, H, W) or (n, H, W, C), got {arr.shape}")
        if arr.shape[1:3] != (h, w):
            raise InputError(f"{name}: images are {arr.shape[1]}x{arr.shape[2]} but the real images are "
                             f"{h}x{w}; all images must have the same size")
        if arr.shape[3] != c:
            raise InputError(f"{name}: images have {arr.shape[3]} channel(s) but the real images have {c}")
        return as_pixels(arr, name)

    def fit_compare(self, real: Any, generated: Any, names: Sequence[str] | None = None, *,
                    reference: Any = None, client: Any = None) -> RegionsResult:
        return self.fit(real, client=client).compare(generated, names, reference=reference, client=client)

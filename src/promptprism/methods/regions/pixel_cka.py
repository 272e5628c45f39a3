"""The pixel-by-pixel CKA matrix of Algorithm 1 (eq. 13 for every pair of pixels), and the median rule.

*Bandwidth convention* (the paper, section 4; :func:`promptprism.kernels.bandwidth.gamma_from_median`):
``gamma = 1 / median`` where ``median`` is the median of the
non-zero pairwise **Euclidean (not squared) distances** |x - x'|_2 between whole flattened **real training
images** (all pixels and channels; a seeded subsample of at most 1,000 images). One gamma serves every pixel,
every region and the whole image, which is what makes k_img = prod_I k_I hold exactly
(:mod:`promptprism.kernels.rbf`). ``"0.5*median"`` scales it (gamma = 0.5 / median); a number fixes gamma.

The matrix M (d x d) is computed without the paper's O(d^2 n^3) double loop: per block of b images and per
pixel a, the centred Gram matrix HK_aH is formed, normalised to unit Frobenius norm and stored as one row of
a matrix F (its upper triangle, off-diagonal entries scaled by sqrt 2, so that row dot products are Frobenius
inner products). Then M = mean over blocks of F F^T: one symmetric rank-k update (BLAS syrk) per block, in
a :class:`~promptprism.stats.pixel.PixelCKAAccumulator` (one task per block), with pixel rows formed in
chunks so that F and the temporaries stay within ``max_bytes`` (F gets 60% of it). Cost O(d^2 b^2 n_blocks)
flops and O(d^2 + max_bytes) memory. ``block_size=None`` uses all images as one block (exact eq. 13; F then
has n (n + 1) / 2 columns, so pairs of pixel chunks are multiplied and rows recomputed).

Pixel differences are formed directly (no |a|^2 - 2ab + |b|^2 expansion), so the entries are exact for any
offset; pixels above 1e100 in magnitude are multiplied by sqrt(gamma) first, so gamma |a - b|^2 does not
overflow where its value is finite.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._progress import progress_enabled
from ..._validation import check_positive_number, check_seed
from ...array_ops import index_array, sorted_subsample
from ...backend import NUMPY, Backend, array_namespace, resolve_backend, to_numpy
from ...errors import InputError, OptionError
from ...kernels.bandwidth import Bandwidth
from ...scale import current_runner
from ...stats.pixel import PixelCKAAccumulator
from ...stats.two_sample import center_symmetric_
from .sources import as_pixels, read_pixels, task_rows

#: default mini-batch size of the pixel CKA estimator (the paper uses 100)
CKA_BLOCK_SIZE = 100
#: default number of real images the CKA matrix and the median rule are computed on (the paper: 1,000)
CKA_MAX_IMAGES = 1000
#: default memory budget (bytes) for the stacked centred Gram matrices of the pixel CKA computation
MAX_BYTES = 2 * 1024**3
#: pixels above this magnitude are rescaled before squared differences are formed
_HUGE = 1e100


def unit_centred_rows(vals: np.ndarray, gamma: float, tri: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Per pixel: H K_a H of one block (eq. 11's centring) as a unit-norm row of its weighted upper triangle.

    ``vals``: (b, p, c) pixel values of b images for p pixels; K_a[i, j] = exp(-gamma |v_ia - v_ja|^2).
    ``tri``: flat indices of the strict upper triangle and of the diagonal of a b x b matrix. Returns
    (p, b (b + 1) / 2); the row of a pixel constant within the block is 0. Row dot products are CKA (eq. 13).
    Runs on the backend of ``vals`` (numpy or torch); ``tri`` holds numpy index arrays.
    """
    xp = array_namespace(vals)
    v = xp.permute_dims(vals, (1, 0, 2))  # (p, b, c)
    p, b = v.shape[0], v.shape[1]
    k = v[:, :, None, 0] - v[:, None, :, 0]
    k *= k
    for ch in range(1, v.shape[2]):
        diff = v[:, :, None, ch] - v[:, None, :, ch]
        diff *= diff
        k += diff
    k *= -gamma
    k = xp.exp(k)
    k = center_symmetric_(k)  # double centring of symmetric matrices, in place
    off, diag = (index_array(t, k) for t in tri)
    flat = xp.reshape(k, (p, b * b))
    rows = xp.concat([xp.take(flat, off, axis=1) * math.sqrt(2.0), xp.take(flat, diag, axis=1)], axis=1)
    norms = xp.linalg.vector_norm(rows, axis=1)
    tol = 1e-12 * b  # |K| <= 1: HKH of a constant pixel is 0 up to this round-off
    ok = norms > tol
    scale = xp.where(ok, 1.0 / xp.where(ok, norms, xp.ones_like(norms)), xp.zeros_like(norms))
    rows *= scale[:, None]
    return rows


def pixel_cka_partition(source: Any, indices: np.ndarray | None, block_size: int, gamma: float,
                        max_bytes: int, dtype: str = "float64", backend: Backend = NUMPY
                        ) -> PixelCKAAccumulator:
    """Task: the summed CKA matrices (eq. 13) of consecutive blocks of ``block_size`` of the given images.

    ``source``/``indices``: pixels (k, d, c) with ``indices`` None, or an :class:`ImageRows` and the image
    indices to read here (on the worker). ``backend``: where the rows and their products are computed
    (numpy: BLAS syrk; torch: ``F @ F.T`` on its device, added to the numpy accumulator).
    """
    px = read_pixels(source, indices)
    if float(np.abs(px).max()) > _HUGE:  # gamma |a - b|^2 = |sqrt(gamma) a - sqrt(gamma) b|^2
        px, gamma = px * math.sqrt(gamma), 1.0
    if backend.name != "numpy":  # torch wraps writable arrays only (inputs may be read-only memory maps)
        px = backend.asarray(np.require(px, requirements="W"), "float64")
    xp = backend.xp
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
        f = xp.empty((d, width * n_blocks), dtype=xp.float32 if single else xp.float64,
                     **({} if backend.name == "numpy" else {"device": backend.torch_device}))
        for j in range(n_blocks):
            vals = px[j * b:(j + 1) * b]
            for s in range(0, d, p_chunk):
                f[s:s + p_chunk, j * width:(j + 1) * width] = xp.astype(unit_centred_rows(
                    vals[:, s:s + p_chunk], gamma, tri), f.dtype)
        if backend.name == "numpy":
            return acc.update(f, n_blocks)
        return acc.add_product(slice(None), slice(None), to_numpy(f @ f.T)).count_block(n_blocks)
    # one block too large to stack for all pixels: pairs of pixel chunks, rows recomputed
    p = max(1, int(0.6 * max_bytes // (2 * width * item)))
    starts = list(range(0, d, p))
    vals = px[:b]
    for ia, a in enumerate(starts):
        fa = xp.astype(unit_centred_rows(vals[:, a:a + p], gamma, tri), getattr(xp, dtype))
        for bb in starts[ia:]:
            fb = fa if bb == a else \
                xp.astype(unit_centred_rows(vals[:, bb:bb + p], gamma, tri), getattr(xp, dtype))
            acc.add_product(slice(a, a + p), slice(bb, bb + p), to_numpy(fa @ fb.T))
    return acc.count_block()


def pixel_cka_blocks(source: Any, order: np.ndarray, gamma: float, *, block_size: int | None,
                     max_bytes: int = MAX_BYTES, progress: bool | None = False,
                     dtype: str = "float64", device: str | Backend = "cpu") -> np.ndarray:
    """The CKA matrix over blocks of ``source`` rows ``order[k b:(k+1) b]``: one task per block, run by
    :func:`promptprism.scale.current_runner`, computing on the backend ``device`` names."""
    backend = resolve_backend(device)
    n = len(order)
    b = n if block_size is None else int(block_size)
    if b < 2:
        raise InputError("pixel CKA needs at least 2 images per block")
    max_bytes = int(check_positive_number(max_bytes, "max_bytes", integer=True))
    tasks = [(*task_rows(source, order[s * b:(s + 1) * b]), b, gamma, max_bytes, dtype, backend)
             for s in range(n // b)]
    acc = current_runner().map_reduce(pixel_cka_partition, tasks, description="pixel CKA",
                                      progress=progress_enabled(progress), threads=backend.name == "numpy")
    return acc.compute()


def pixel_cka_matrix(images: Any, *, gamma: Any = "median", block_size: int | None = CKA_BLOCK_SIZE,
                     max_images: int | None = CKA_MAX_IMAGES, seed: int = 0, max_bytes: int = MAX_BYTES,
                     progress: bool | None = False, dtype: str = "float64", device: str = "cpu"
                     ) -> np.ndarray:
    """The d x d pixel-by-pixel CKA matrix of Algorithm 1 (eq. 13 per pixel pair), by matrix products.

    ``images``: (n, H, W) or (n, H, W, C). At most ``max_images`` images are used (a seeded subsample), in
    seeded blocks of ``block_size`` whose CKA matrices are averaged (``None``: one block of all images). The
    pixel kernel is exp(-gamma |a - b|^2) (see the module docstring for the gamma convention). A pixel
    constant within a block has CKA 0 with every other pixel and 1 with itself in that block. Returns a
    symmetric float64 array with unit diagonal. ``dtype="float32"`` runs the big product in single precision
    (about twice as fast; entries agree with float64 to ~1e-6). The blocks run as tasks on
    :func:`promptprism.scale.current_runner` (here, or on the cluster of an enclosing ``execution``), on the
    backend ``device`` names ('cpu' = numpy, 'torch', 'cuda', 'auto', ...).
    """
    px = as_pixels(images)
    seed = check_seed(seed)
    if dtype not in ("float64", "float32"):
        raise OptionError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
    n = px.shape[0]
    rng = np.random.default_rng(seed)
    if max_images is not None:
        max_images = int(check_positive_number(max_images, "max_images", integer=True))
        if n > max_images:
            px = px[sorted_subsample(n, max_images, rng)]
            n = max_images
    g = Bandwidth.parse(gamma, "gamma", kind="gamma").resolve(px, name="gamma", seed=seed).value
    if block_size is None:
        order = np.arange(n)
    else:
        b = int(check_positive_number(block_size, "block_size", integer=True))
        if n < b:
            raise InputError(f"block_size: {b} is more than the {n} images (one block at least); lower it, "
                             "pass block_size=None (all images, exact eq. 13) or more images",
                             parameter="block_size")
        order = rng.permutation(n)
    return pixel_cka_blocks(px, order, g, block_size=block_size, max_bytes=max_bytes, progress=progress,
                            dtype=dtype, device=device)

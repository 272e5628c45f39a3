"""The regions estimator: ``fit(real)`` learns the regions and returns them (:class:`~.fitted.FittedRegions`),
whose ``compare(sets)`` returns a result.

:class:`RegionCMS` holds its parameters, checked when it is made (declared in ``_parameter_constraints``)
and never changed; ``fit`` resolves the defaults (gamma by the median rule, the CKA block size) into what it
returns and calls the functional core: :func:`~.pixel_cka.pixel_cka_blocks`,
:func:`~.clustering.discover_regions`, :func:`~.comparison.compare_sources`,
:func:`~.cross_cka.cross_region_cka_rows`. Where the sums over images run is chosen by
:func:`promptprism.scale.execution` around the calls (here, or on a dask cluster).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..._params import (
    BOOLEAN,
    BOOTSTRAP,
    PRECISION,
    SEED,
    Check,
    Estimator,
    Options,
    at_least,
    between,
    positive,
    validate_params,
)
from ...array_ops import sorted_subsample
from ...backend import DEVICE, resolve_backend
from ...errors import InputError, OptionError
from ...kernels.bandwidth import Bandwidth
from ...scale import current_runner
from .clustering import discover_regions, fill_constant_pixels, relabel, suggest_n_regions
from .comparison import BLOCK_ESTIMATORS, LEVEL
from .cross_cka import pixel_range_partition
from .fitted import FittedRegions
from .pixel_cka import CKA_BLOCK_SIZE, CKA_MAX_IMAGES, MAX_BYTES, pixel_cka_blocks
from .sources import as_pixels, chunk_rows, is_rows, read_pixels, source_shape, task_rows


def _gamma(value: Any, name: str) -> Bandwidth:
    return Bandwidth.parse(value, name, kind="gamma")


@dataclass(frozen=True)
class RegionCMS(Estimator):
    """Disentangled CMS: ``fit(real_images)`` finds the regions (a :class:`~.fitted.FittedRegions`), whose
    ``compare(generated_sets)`` scores sets (a :class:`RegionsResult`).

    ``n_regions``: C, or ``"auto"`` (largest dendrogram gap, 2..``max_regions``). ``gamma``: ``"median"``
    (1 / median Euclidean distance between real images; ``"0.5*median"`` scales it) or a number.
    ``block_size``: mini-batch size of the CMS estimator (None: all images, exact eq. 4);
    ``block_estimator``: ``"corrected"`` (pair means pooled over blocks, targets eq. 4 on all images) or
    ``"paper"`` (average of per-block eq. 4, biased downwards). ``bootstrap``: B resamples for percentile
    intervals at ``level`` of the whole-image, product and per-region CMS (0: off; seeded by ``seed``).
    ``cka_block_size``: mini-batch size of the pixel CKA (None: one block; ``"auto"``: 100 as in the paper,
    or one block of all images when there are fewer). ``cka_max_images``: real images (seeded subsample)
    for the CKA and the median rule. ``partition_rows``: images per task of the sums over images (the
    pixel CKA has one task per block, the exact CMS one per pair of chunks of this many images); tasks run
    where :func:`promptprism.scale.execution` says (this process by default). ``device``: the backend of
    the pixel CKA and the CMS sums (:func:`promptprism.backend.resolve_backend`: 'auto' = torch on CUDA when
    present else numpy, 'cpu' = numpy, 'cuda', 'cuda:N', 'mps', 'torch' = torch on the CPU).
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
    bootstrap: int = 0
    level: float = LEVEL
    block_estimator: str = "corrected"
    device: str = "auto"

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "n_regions": [Options(("auto",)), positive()],
        "gamma": [Check(_gamma, "a number > 0 or a rule ('median', '0.5*median')")],
        "block_size": [at_least(2), None], "cka_block_size": [Options(("auto",)), at_least(2), None],
        "cka_max_images": [at_least(2), None], "max_regions": [positive()],
        "min_region_size": [positive(), None], "seed": [SEED], "max_bytes": [positive()],
        "progress": [BOOLEAN, None], "precision": [PRECISION], "partition_rows": [positive()],
        "bootstrap": [BOOTSTRAP], "level": [between(0.0, 1.0)],
        "block_estimator": [Options(BLOCK_ESTIMATORS)], "device": [DEVICE]}

    #: options a result's ``config`` leaves out (the seed and bootstrap are recorded on their own)
    NOT_IN_CONFIG: ClassVar[tuple[str, ...]] = ("seed", "max_bytes", "progress", "bootstrap", "level")

    def validate(self) -> RegionCMS:
        """Check every parameter again (they were when it was made); :class:`OptionError` naming the
        parameter. Returns self."""
        validate_params(self._parameter_constraints, self.get_params())
        return self

    def fit(self, real: Any) -> FittedRegions:
        """Pixel CKA matrix on (a seeded subsample of) the real images, then the regions: what was learned
        (a :class:`~.fitted.FittedRegions`; its ``compare`` scores generated sets).

        ``real``: an image array (n, H, W[, C]), or a path (image folder, ``.npy``, manifest) or
        :class:`~promptprism.data.images.ImageRows`, whose images the tasks read where they run.
        """
        t0 = time.perf_counter()
        src = _source(real, "real images")
        n, d, c = source_shape(src)
        image_shape = tuple(src.shape[1:]) if is_rows(src) else (*np.shape(real)[1:3], c)
        self._check_real_count(n, d, image_shape)
        sub_rows = self._cka_rows(n)
        gamma = self._resolve_gamma(src, sub_rows)
        cka_block_size = self._resolve_cka_block_size(sub_rows.size)
        t1 = time.perf_counter()
        m = self._pixel_cka(src, sub_rows, gamma, cka_block_size)
        t2 = time.perf_counter()
        constant = self._constant_pixels(src, n)
        t3 = time.perf_counter()
        regions, suggested = self._regions(m, constant, d, image_shape)
        return FittedRegions(
            estimator=self, image_shape_=image_shape, gamma_=gamma, cka_block_size_=cka_block_size,
            regions_=regions, suggested_n_regions_=suggested, cka_matrix_=m, constant_=constant,
            real_source_=src, cka_rows_=sub_rows,
            timings_={"median_rule_s": t1 - t0, "pixel_cka_s": t2 - t1, "constant_pixels_s": t3 - t2,
                      "clustering_s": time.perf_counter() - t3})

    def compare(self, *_: Any, **__: Any) -> Any:
        """Refused: the regions are learned first, ``fit(real_images).compare(generated_sets)``."""
        raise OptionError("RegionCMS.compare: call fit(real_images) first (fit returns the fitted regions, "
                          "whose compare scores the generated sets)")

    # the steps of fit
    def _check_real_count(self, n: int, d: int, image_shape: tuple) -> None:
        if n < 2:
            raise InputError(f"real images: {n} image(s); at least 2 are needed")
        if self.n_regions != "auto" and int(self.n_regions) > d:
            h, w = image_shape[:2]
            raise OptionError(f"n_regions = {self.n_regions} is more than the {d} pixels of a "
                              f"{h}x{w} image")

    def _cka_rows(self, n: int) -> np.ndarray:
        """The real images of the CKA and the median rule: all, or ``cka_max_images`` of them (seeded)."""
        if self.cka_max_images is not None and n > self.cka_max_images:
            rng = np.random.default_rng(self.seed)
            return sorted_subsample(n, int(self.cka_max_images), rng)
        return np.arange(n)

    def _resolve_gamma(self, src: Any, sub_rows: np.ndarray) -> float:
        """``gamma`` as a number; the median rule reads the (at most cka_max_images) subsample."""
        gamma = _gamma(self.gamma, "gamma")
        if gamma.fixed:
            return float(gamma.value)
        return gamma.resolve(read_pixels(*task_rows(src, sub_rows)), name="gamma", seed=self.seed).value

    def _resolve_cka_block_size(self, n_sub: int) -> int | None:
        """'auto': the paper's 100, or one block of everything (None) when there are fewer images."""
        cka_b = self.cka_block_size
        if cka_b == "auto":
            return CKA_BLOCK_SIZE if n_sub >= CKA_BLOCK_SIZE else None
        if cka_b is not None and cka_b > n_sub:
            raise InputError(f"real images: fewer images than one CKA block: {n_sub} < "
                             f"cka_block_size {cka_b}; lower the CKA block size or pass more images",
                             parameter="cka_block_size")
        return cka_b

    def _pixel_cka(self, src: Any, sub_rows: np.ndarray, gamma: float, cka_b: int | None) -> np.ndarray:
        order = (np.arange(sub_rows.size) if cka_b is None
                 else np.random.default_rng(self.seed).permutation(sub_rows.size))
        m = pixel_cka_blocks(src, sub_rows[order], gamma, block_size=cka_b, max_bytes=self.max_bytes,
                             progress=self.progress, dtype=self.precision,
                             device=resolve_backend(self.device))
        if not np.isfinite(m).all():
            raise InputError("real images: the pixel CKA matrix is not finite (pixel values beyond what "
                             "float64 kernels can resolve); rescale the images (e.g. to [0, 1])")
        return m

    def _constant_pixels(self, src: Any, n: int) -> np.ndarray:
        """Pixels constant over *all* real images."""
        lo, hi = current_runner().map_reduce(pixel_range_partition, [
            task_rows(src, rows) for rows in chunk_rows(n, self.partition_rows)],
            description="constant pixels").compute()
        return (hi - lo).max(axis=1) == 0.0

    def _regions(self, m: np.ndarray, constant: np.ndarray, d: int, image_shape: tuple
                 ) -> tuple[np.ndarray, int]:
        """(regions of the non-constant pixels (C given or suggested), constant pixels filled in; the
        suggested C)."""
        free = np.flatnonzero(~constant)
        if free.size == 0:
            raise InputError("real images: every pixel is constant across the images; there is nothing to "
                             "find regions in")
        sub_m = m[np.ix_(free, free)]
        suggested = suggest_n_regions(sub_m, max_regions=self.max_regions,
                                      min_region_size=self.min_region_size)
        c_req = suggested if self.n_regions == "auto" else int(self.n_regions)
        if c_req > free.size:
            raise OptionError(f"n_regions = {c_req} is more than the {free.size} non-constant pixels of the "
                              "real images")
        labels = np.zeros(d, dtype=np.int64)
        labels[free] = discover_regions(sub_m, c_req, min_region_size=self.min_region_size)
        return relabel(fill_constant_pixels(labels, constant, image_shape[:2])), suggested


def _source(images: Any, name: str) -> Any:
    """Pixels (n, d, c) of an array, or an ImageRows for a path (read later, by the tasks)."""
    import os

    from ...data.images import ImageRows

    if isinstance(images, (str, os.PathLike)):
        return ImageRows.open(images, name)
    if isinstance(images, ImageRows):
        return images
    arr = np.asarray(images)
    if arr.ndim not in (3, 4):
        raise InputError(f"{name}: expected shape (n, H, W) or (n, H, W, C), got {arr.shape}")
    return as_pixels(arr, name)

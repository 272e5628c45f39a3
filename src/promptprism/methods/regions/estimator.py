"""The regions estimator: ``fit(real)`` learns the regions, returns self; ``compare(sets)`` returns a result.

:class:`RegionCMS` validates its parameters when it is made (and again in :meth:`RegionCMS.validate`, for
parameters changed afterwards), resolves the defaults (gamma by the median rule, the CKA block size) and calls
the functional core: :func:`~.pixel_cka.pixel_cka_blocks`, :func:`~.clustering.discover_regions`,
:func:`~.comparison.compare_sources`, :func:`~.cross_cka.cross_region_cka_rows`. Where the sums over images
run is chosen by :func:`promptprism.scale.execution` around the calls (here, or on a dask cluster).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._validation import check_positive_number, check_seed
from ...backend import resolve_backend
from ...errors import InputError, OptionError
from ...kernels.bandwidth import parse_bandwidth
from ...scale import current_runner
from ..rankings import regions_ranking
from .calibration import interval_validity
from .clustering import discover_regions, fill_constant_pixels, relabel, suggest_n_regions
from .comparison import BLOCK_ESTIMATORS, LEVEL, compare_sources
from .cross_cka import cross_region_cka_rows, pixel_range_partition
from .pixel_cka import CKA_BLOCK_SIZE, CKA_MAX_IMAGES, MAX_BYTES, median_gamma, pixel_cka_blocks
from .result import INLINE_CKA_MAX_PIXELS, RegionsResult
from .sources import as_pixels, check_same_shape, chunk_rows, is_rows, read_pixels, source_shape, task_rows

#: the paper's block average on same-distribution digits (issue notes): what its bias looks like
PAPER_BLOCK_BIAS = ("the paper's block average is biased downwards: each block's denominator keeps its b "
                    "diagonal ones (k(x, x) = 1), a share 1/b instead of 1/n (on same-distribution digits "
                    "b = 150 reads 0.924 where eq. 4 on all images reads 0.987)")


@dataclass
class RegionCMS:
    """Disentangled CMS: ``fit(real_images)`` finds the regions (returns self), ``compare(generated_sets)``
    scores sets (returns a :class:`RegionsResult`).

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

    # set by fit
    regions_: np.ndarray | None = field(default=None, init=False, repr=False)
    cka_matrix_: np.ndarray | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> RegionCMS:
        """Check every parameter; raises :class:`OptionError` naming the parameter. Returns self."""
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
        if self.min_region_size is not None:
            check_positive_number(self.min_region_size, "min_region_size", integer=True)
        check_positive_number(self.partition_rows, "partition_rows", integer=True)
        check_positive_number(self.max_bytes, "max_bytes", integer=True)
        parse_bandwidth(self.gamma, "gamma")
        if self.precision not in ("float64", "float32"):
            raise OptionError(f"precision must be 'float64' or 'float32', got {self.precision!r}")
        if isinstance(self.bootstrap, bool) or not isinstance(self.bootstrap, (int, np.integer)) \
                or self.bootstrap < 0:
            raise OptionError(f"bootstrap must be an integer >= 0 (0: off), got {self.bootstrap!r}")
        if 0 < self.bootstrap < 20:
            raise OptionError(f"bootstrap must be 0 (off) or at least 20 resamples for a 95% interval, got "
                              f"{self.bootstrap}")
        if isinstance(self.level, bool) or not isinstance(self.level, (int, float)) \
                or not 0.0 < float(self.level) < 1.0:
            raise OptionError(f"level must be a number in (0, 1), got {self.level!r}")
        if self.block_estimator not in BLOCK_ESTIMATORS:
            raise OptionError(f"block_estimator must be one of {', '.join(BLOCK_ESTIMATORS)}, got "
                              f"{self.block_estimator!r}")
        resolve_backend(self.device)
        return self

    def fit(self, real: Any) -> RegionCMS:
        """Pixel CKA matrix on (a seeded subsample of) the real images, then the regions; returns self.

        ``real``: an image array (n, H, W[, C]), or a path (image folder, ``.npy``, manifest) or
        :class:`~promptprism.data.images.ImageRows`, whose images the tasks read where they run.
        """
        self.validate()
        t0 = time.perf_counter()
        src = self._source(real, "real images")
        n, d, c = source_shape(src)
        if is_rows(src):
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
            self.gamma_ = median_gamma(read_pixels(*task_rows(src, sub_rows)), self.gamma, seed=self.seed)
        cka_b = self.cka_block_size
        if cka_b == "auto":  # the paper's 100, or one block of everything when there are fewer images
            cka_b = CKA_BLOCK_SIZE if n_sub >= CKA_BLOCK_SIZE else None
        elif cka_b is not None and cka_b > n_sub:
            raise InputError(f"real images: fewer images than one CKA block: {n_sub} < "
                             f"cka_block_size {cka_b}; lower the CKA block size or pass more images")
        self.cka_block_size_ = cka_b
        t1 = time.perf_counter()
        order = np.arange(n_sub) if cka_b is None else np.random.default_rng(self.seed).permutation(n_sub)
        m = pixel_cka_blocks(src, sub_rows[order], self.gamma_, block_size=cka_b, max_bytes=self.max_bytes,
                             progress=self.progress, dtype=self.precision,
                             device=resolve_backend(self.device))
        if not np.isfinite(m).all():
            raise InputError("real images: the pixel CKA matrix is not finite (pixel values beyond what "
                             "float64 kernels can resolve); rescale the images (e.g. to [0, 1])")
        t2 = time.perf_counter()
        lo, hi = current_runner().map_reduce(pixel_range_partition, [
            task_rows(src, rows) for rows in chunk_rows(n, self.partition_rows)],
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
        self.regions_ = relabel(labels)
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

        from ...data.images import ImageRows

        if isinstance(images, (str, os.PathLike)):
            return ImageRows.open(images, name)
        if isinstance(images, ImageRows):
            return images
        arr = np.asarray(images)
        if arr.ndim not in (3, 4):
            raise InputError(f"{name}: expected shape (n, H, W) or (n, H, W, C), got {arr.shape}")
        return as_pixels(arr, name)

    def compare(self, generated: Any, names: Sequence[str] | None = None, *,
                reference: Any = None) -> RegionsResult:
        """CMS (whole, per region, product) of each generated set against the real images; a result.

        ``generated``: one image set (an array, a path, an ImageRows) or a list of them (checkpoints,
        epochs); ``reference``: real images to compare against (default: those given to ``fit``; the paper
        uses held-out test images). A value that is not finite is refused (InputError naming the set),
        never written as null.
        """
        import os

        from ...data.images import ImageRows

        if self.regions_ is None:
            raise OptionError("RegionCMS.compare: call fit(real_images) first")
        self.validate()
        single = isinstance(generated, (np.ndarray, ImageRows, str, os.PathLike))
        sets = [generated] if single else list(generated)
        if not sets:
            raise InputError("generated: no generated sets given")
        names = [f"set_{k}" for k in range(len(sets))] if names is None else [str(s) for s in names]
        if len(names) != len(sets):
            raise InputError(f"names: {len(names)} names for {len(sets)} generated sets")
        h, w, c = self.image_shape_
        ref = self.real_source_ if reference is None else self._check_shape(reference, "reference images")
        n_ref = int(source_shape(ref)[0])
        t0 = time.perf_counter()
        srcs, n_gen = [], []
        for name, g in zip(names, sets, strict=True):
            py = self._check_shape(g, f"generated set {name!r}")
            m = source_shape(py)[0]
            if self.block_size is not None and min(m, n_ref) < self.block_size:
                raise InputError(f"generated set {name!r}: fewer images than one block: "
                                 f"{min(m, n_ref)} < block_size {self.block_size}")
            srcs.append(py)
            n_gen.append(int(m))
        rows = compare_sources(ref, srcs, self.regions_, self.gamma_, block_size=self.block_size,
                               seed=self.seed, partition_rows=self.partition_rows, progress=self.progress,
                               bootstrap=self.bootstrap, level=self.level,
                               block_estimator=self.block_estimator, device=resolve_backend(self.device))
        for name, r in zip(names, rows, strict=True):
            values = [r["cms"], r["product_cms"], r["mmd2"], *np.ravel(r["region_cms"])]
            iv = r["intervals"]
            bounds = [iv["cms"], iv["product_cms"], *iv["region_cms"]] if iv else []
            values += [b[k] for b in bounds for k in ("low", "high", "debiased")]
            if not all(math.isfinite(float(v)) for v in values):
                raise InputError(f"generated set {name!r}: the CMS is not finite (pixel values beyond what "
                                 "float64 kernels can resolve); rescale the images (e.g. to [0, 1])")
        t1 = time.perf_counter()
        cross = cross_region_cka_rows(self.real_source_, self.cka_rows_, self.regions_, self.gamma_,
                                      block_size=self.cka_block_size_, seed=self.seed,
                                      partition_rows=self.partition_rows)
        timings = dict(self.timings_, cms_s=t1 - t0, cross_region_cka_s=time.perf_counter() - t1)
        n_reg = int(self.regions_.max()) + 1
        result = RegionsResult(
            names=names, cms=[r["cms"] for r in rows], product_cms=[r["product_cms"] for r in rows],
            region_cms=[list(map(float, r["region_cms"])) for r in rows], mmd2=[r["mmd2"] for r in rows],
            regions=self.regions_.tolist(), image_shape=[h, w, c], n_regions=n_reg,
            region_sizes=np.bincount(self.regions_, minlength=n_reg).tolist(),
            suggested_n_regions=int(self.suggested_n_regions_), cross_region_cka=cross.tolist(),
            cka_matrix=self.cka_matrix_.tolist() if self.cka_matrix_.shape[0] <= INLINE_CKA_MAX_PIXELS
            else self.cka_matrix_,
            constant_pixels=np.flatnonzero(self.constant_).tolist(), gamma=float(self.gamma_),
            n_real=n_ref, n_generated=n_gen,
            config={"n_regions": self.n_regions, "gamma": self.gamma, "gamma_value": float(self.gamma_),
                    "block_size": self.block_size, "cka_block_size": self.cka_block_size_,
                    "cka_max_images": self.cka_max_images, "max_regions": self.max_regions,
                    "min_region_size": self.min_region_size, "precision": self.precision,
                    "partition_rows": self.partition_rows,
                    "block_estimator": self.block_estimator if self.block_size is not None else None,
                    "gamma_convention": "gamma = factor / median Euclidean distance between real images",
                    "device": resolve_backend(self.device).label},
            seed=int(self.seed), timings=timings,
            intervals=[r["intervals"] for r in rows] if self.bootstrap else [],
            bootstrap={} if not self.bootstrap else {
                "replicates": int(self.bootstrap), "level": float(self.level), "seed": int(self.seed),
                "resample": "images (real and each generated set, with replacement)"
                if self.block_size is None else "blocks (with replacement)",
                "validity": interval_validity(self.block_size, n_ref, n_gen)},
            block_bias=self._block_bias(n_ref, n_gen))
        return dataclasses.replace(result, ranking=regions_ranking(result))

    def _block_bias(self, n_ref: int, n_gen: list[int]) -> str | None:
        if self.block_size is None:
            return None
        b = int(self.block_size)
        if self.block_estimator == "corrected":
            blocks = ", ".join(str(min(n_ref, m) // b) for m in n_gen)
            return (f"block estimator with b = {b}, bias-corrected: each block's pair means (all cross "
                    f"pairs, distinct pairs within each set) are pooled over the blocks ({blocks} per set) "
                    f"and put into eq. 4 for all {n_ref} real and each set's generated images, so it "
                    "targets eq. 4 on all images (the paper's average of per-block CMS would read lower)")
        return f"block estimator with b = {b}, uncorrected: {PAPER_BLOCK_BIAS}"

    def _check_shape(self, images: Any, name: str) -> Any:
        import os

        from ...data.images import ImageRows

        if isinstance(images, (str, os.PathLike, ImageRows)):
            src = images if isinstance(images, ImageRows) else ImageRows.open(images, name)
            check_same_shape(src.shape, self.image_shape_, name)
            return src
        arr = np.asarray(images)
        if arr.ndim == 3:
            arr = arr[..., None]
        if arr.ndim != 4:
            raise InputError(f"{name}: expected shape (n, H, W) or (n, H, W, C), got {arr.shape}")
        check_same_shape(arr.shape, self.image_shape_, name)
        return as_pixels(arr, name)

    def fit_compare(self, real: Any, generated: Any, names: Sequence[str] | None = None, *,
                    reference: Any = None) -> RegionsResult:
        """``fit(real).compare(generated, names, reference=reference)``."""
        return self.fit(real).compare(generated, names, reference=reference)

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
from typing import Any, ClassVar

import numpy as np

from ..._validation import check_choice, check_interval, check_positive_number, check_precision, check_seed
from ...backend import resolve_backend
from ...errors import InputError, OptionError
from ...kernels.bandwidth import Bandwidth
from ...scale import current_runner
from ..rankings import regions_ranking
from .calibration import interval_validity
from .clustering import discover_regions, fill_constant_pixels, relabel, suggest_n_regions
from .comparison import BLOCK_ESTIMATORS, LEVEL, compare_sources
from .cross_cka import cross_region_cka_rows, pixel_range_partition
from .pixel_cka import CKA_BLOCK_SIZE, CKA_MAX_IMAGES, MAX_BYTES, pixel_cka_blocks
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

    #: options a result's ``config`` leaves out (the seed and bootstrap are recorded on their own)
    NOT_IN_CONFIG: ClassVar[tuple[str, ...]] = ("seed", "max_bytes", "progress", "bootstrap", "level")

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
        self.gamma = Bandwidth.parse(self.gamma, "gamma", kind="gamma")  # parsed once
        check_precision(self.precision)
        if isinstance(self.bootstrap, bool) or not isinstance(self.bootstrap, (int, np.integer)) \
                or self.bootstrap < 0:
            raise OptionError(f"bootstrap must be an integer >= 0 (0: off), got {self.bootstrap!r}")
        if 0 < self.bootstrap < 20:
            raise OptionError(f"bootstrap must be 0 (off) or at least 20 resamples for a 95% interval, got "
                              f"{self.bootstrap}")
        check_interval(self.level, 0.0, 1.0, parameter="level")
        check_choice(self.block_estimator, BLOCK_ESTIMATORS, parameter="block_estimator")
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
        self.image_shape_ = tuple(src.shape[1:]) if is_rows(src) else (*np.shape(real)[1:3], c)
        self._check_real_count(n, d)
        sub_rows = self._cka_rows(n)
        self.gamma_ = self._resolve_gamma(src, sub_rows)
        self.cka_block_size_ = self._resolve_cka_block_size(sub_rows.size)
        t1 = time.perf_counter()
        m = self._pixel_cka(src, sub_rows)
        t2 = time.perf_counter()
        constant = self._constant_pixels(src, n)
        t3 = time.perf_counter()
        self.regions_ = self._regions(m, constant, d)
        self.cka_matrix_, self.constant_, self.real_source_, self.cka_rows_ = m, constant, src, sub_rows
        self.timings_ = {"median_rule_s": t1 - t0, "pixel_cka_s": t2 - t1, "constant_pixels_s": t3 - t2,
                         "clustering_s": time.perf_counter() - t3}
        return self

    # the steps of fit
    def _check_real_count(self, n: int, d: int) -> None:
        if n < 2:
            raise InputError(f"real images: {n} image(s); at least 2 are needed")
        if self.n_regions != "auto" and int(self.n_regions) > d:
            h, w = self.image_shape_[:2]
            raise OptionError(f"n_regions = {self.n_regions} is more than the {d} pixels of a "
                              f"{h}x{w} image")

    def _cka_rows(self, n: int) -> np.ndarray:
        """The real images of the CKA and the median rule: all, or ``cka_max_images`` of them (seeded)."""
        if self.cka_max_images is not None and n > self.cka_max_images:
            rng = np.random.default_rng(self.seed)
            return np.sort(rng.choice(n, size=int(self.cka_max_images), replace=False))
        return np.arange(n)

    def _resolve_gamma(self, src: Any, sub_rows: np.ndarray) -> float:
        """``gamma`` as a number; the median rule reads the (at most cka_max_images) subsample."""
        if self.gamma.fixed:
            return float(self.gamma.value)
        return self.gamma.resolve(read_pixels(*task_rows(src, sub_rows)), name="gamma", seed=self.seed).value

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

    def _pixel_cka(self, src: Any, sub_rows: np.ndarray) -> np.ndarray:
        cka_b = self.cka_block_size_
        order = (np.arange(sub_rows.size) if cka_b is None
                 else np.random.default_rng(self.seed).permutation(sub_rows.size))
        m = pixel_cka_blocks(src, sub_rows[order], self.gamma_, block_size=cka_b, max_bytes=self.max_bytes,
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

    def _regions(self, m: np.ndarray, constant: np.ndarray, d: int) -> np.ndarray:
        """Regions of the non-constant pixels (C given or suggested), constant pixels filled in."""
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
        return relabel(fill_constant_pixels(labels, constant, self.image_shape_[:2]))

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
        if self.regions_ is None:
            raise OptionError("RegionCMS.compare: call fit(real_images) first")
        self.validate()
        sets, names = _named_sets(generated, names)
        ref = self.real_source_ if reference is None else self._check_shape(reference, "reference images")
        n_ref = int(source_shape(ref)[0])
        t0 = time.perf_counter()
        srcs = [self._generated_source(g, name, n_ref) for name, g in zip(names, sets, strict=True)]
        rows = compare_sources(ref, srcs, self.regions_, self.gamma_, block_size=self.block_size,
                               seed=self.seed, partition_rows=self.partition_rows, progress=self.progress,
                               bootstrap=self.bootstrap, level=self.level,
                               block_estimator=self.block_estimator, device=resolve_backend(self.device))
        for name, r in zip(names, rows, strict=True):
            _check_finite(name, r)
        t1 = time.perf_counter()
        cross = cross_region_cka_rows(self.real_source_, self.cka_rows_, self.regions_, self.gamma_,
                                      block_size=self.cka_block_size_, seed=self.seed,
                                      partition_rows=self.partition_rows)
        timings = dict(self.timings_, cms_s=t1 - t0, cross_region_cka_s=time.perf_counter() - t1)
        n_gen = [int(source_shape(py)[0]) for py in srcs]
        result = self._result(names, rows, cross, n_ref=n_ref, n_gen=n_gen, timings=timings)
        return dataclasses.replace(result, ranking=regions_ranking(result))

    def _generated_source(self, images: Any, name: str, n_ref: int) -> Any:
        """One generated set's pixels (or ImageRows), checked against the real images' shape and the block."""
        src = self._check_shape(images, f"generated set {name!r}")
        m = source_shape(src)[0]
        if self.block_size is not None and min(m, n_ref) < self.block_size:
            raise InputError(f"generated set {name!r}: fewer images than one block: "
                             f"{min(m, n_ref)} < block_size {self.block_size}", parameter="block_size")
        return src

    def _result(self, names: list[str], rows: list[dict], cross: np.ndarray, *, n_ref: int, n_gen: list[int],
                timings: dict) -> RegionsResult:
        h, w, c = self.image_shape_
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
            n_real=n_ref, n_generated=n_gen, config=self._config(), seed=int(self.seed), timings=timings,
            intervals=[r["intervals"] for r in rows] if self.bootstrap else [],
            bootstrap={} if not self.bootstrap else {
                "replicates": int(self.bootstrap), "level": float(self.level), "seed": int(self.seed),
                "resample": "images (real and each generated set, with replacement)"
                if self.block_size is None else "blocks (with replacement)",
                "validity": interval_validity(self.block_size, n_ref, n_gen)},
            block_bias=self._block_bias(n_ref, n_gen))

    def _config(self) -> dict:
        """The result's ``config``: the options (but those in ``NOT_IN_CONFIG``) with the resolved values."""
        config = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                  if f.init and f.name not in self.NOT_IN_CONFIG}
        config.update(gamma=self.gamma.given, gamma_value=float(self.gamma_),
                      cka_block_size=self.cka_block_size_,
                      block_estimator=self.block_estimator if self.block_size is not None else None,
                      gamma_convention="gamma = factor / median Euclidean distance between real images",
                      device=resolve_backend(self.device).label)
        return config

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


def _named_sets(generated: Any, names: Sequence[str] | None) -> tuple[list, list[str]]:
    """The generated sets as a list (one set given alone, or several) and their names."""
    import os

    from ...data.images import ImageRows

    single = isinstance(generated, (np.ndarray, ImageRows, str, os.PathLike))
    sets = [generated] if single else list(generated)
    if not sets:
        raise InputError("generated: no generated sets given")
    names = [f"set_{k}" for k in range(len(sets))] if names is None else [str(s) for s in names]
    if len(names) != len(sets):
        raise InputError(f"names: {len(names)} names for {len(sets)} generated sets")
    return sets, names


def _check_finite(name: str, row: dict) -> None:
    """A set's CMS values and interval bounds must be finite (never written as null)."""
    values = [row["cms"], row["product_cms"], row["mmd2"], *np.ravel(row["region_cms"])]
    iv = row["intervals"]
    bounds = [iv["cms"], iv["product_cms"], *iv["region_cms"]] if iv else []
    values += [b[k] for b in bounds for k in ("low", "high", "debiased")]
    if not all(math.isfinite(float(v)) for v in values):
        raise InputError(f"generated set {name!r}: the CMS is not finite (pixel values beyond what "
                         "float64 kernels can resolve); rescale the images (e.g. to [0, 1])")

"""What :meth:`RegionCMS.fit <.estimator.RegionCMS.fit>` learned from the real images, and the comparison
of generated sets against them: :class:`FittedRegions` (``compare(generated_sets)`` -> a
:class:`~.result.RegionsResult`)."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...backend import resolve_backend
from ...errors import InputError, OptionError
from ...kernels.bandwidth import Bandwidth
from ..rankings import regions_ranking
from .calibration import interval_validity
from .comparison import compare_sources
from .cross_cka import cross_region_cka_rows
from .result import INLINE_CKA_MAX_PIXELS, RegionsResult
from .sources import as_pixels, check_same_shape, pixel_span, scale_note, source_shape

#: the paper's block average on same-distribution digits (issue notes): what its bias looks like
PAPER_BLOCK_BIAS = ("the paper's block average is biased downwards: each block's denominator keeps its b "
                    "diagonal ones (k(x, x) = 1), a share 1/b instead of 1/n (on same-distribution digits "
                    "b = 150 reads 0.924 where eq. 4 on all images reads 0.987)")


@dataclass(frozen=True, eq=False)
class FittedRegions:
    """The regions :meth:`RegionCMS.fit` found (scikit-learn's names for what was learned): ``regions_``
    (a region per pixel), ``cka_matrix_``, ``gamma_`` (the bandwidth, resolved), ``cka_block_size_``,
    ``suggested_n_regions_``, ``constant_`` (pixels constant over the real images), ``image_shape_``,
    ``timings_``; ``estimator`` is the :class:`RegionCMS` that was fitted (its parameters).
    ``compare(generated_sets)`` scores sets against the real images (a :class:`RegionsResult`)."""

    estimator: Any  #: the :class:`~.estimator.RegionCMS` that was fitted
    image_shape_: tuple
    gamma_: float
    cka_block_size_: int | None
    regions_: np.ndarray
    suggested_n_regions_: int
    cka_matrix_: np.ndarray
    constant_: np.ndarray
    real_source_: Any = dataclasses.field(repr=False)
    cka_rows_: np.ndarray = dataclasses.field(repr=False)
    timings_: dict = dataclasses.field(default_factory=dict)

    def compare(self, generated: Any, names: Sequence[str] | None = None, *,
                reference: Any = None) -> RegionsResult:
        """CMS (whole, per region, product) of each generated set against the real images; a result.

        ``generated``: one image set (an array, a path, an ImageRows) or a list of them (checkpoints,
        epochs); ``reference``: real images to compare against (default: those given to ``fit``; the paper
        uses held-out test images). A value that is not finite is refused (InputError naming the set),
        never written as null.
        """
        est = self.estimator
        sets, names = _named_sets(generated, names)
        ref = self.real_source_ if reference is None else self._check_shape(reference, "reference images")
        n_ref = int(source_shape(ref)[0])
        t0 = time.perf_counter()
        srcs = [self._generated_source(g, name, n_ref) for name, g in zip(names, sets, strict=True)]
        if est.bootstrap and est.block_size is None:  # (named here: compare_sources knows positions only)
            for name, src in zip(names, srcs, strict=True):
                if source_shape(src)[0] < 2:
                    raise InputError(f"{name}: 1 image; intervals need at least 2 in every set (they use "
                                     "pairs of distinct images): set bootstrap to 0 or add images",
                                     parameter="bootstrap")
        rows = compare_sources(ref, srcs, self.regions_, self.gamma_, block_size=est.block_size,
                               seed=est.seed, partition_rows=est.partition_rows, progress=est.progress,
                               bootstrap=est.bootstrap, level=est.level,
                               block_estimator=est.block_estimator, device=resolve_backend(est.device))
        real_span = pixel_span(ref)
        for name, r, src in zip(names, rows, srcs, strict=True):
            _check_finite(name, r)
            note = scale_note(pixel_span(src), real_span)
            if note is not None:
                r["notes"] = [*r.get("notes", []), note]
        t1 = time.perf_counter()
        cross = cross_region_cka_rows(self.real_source_, self.cka_rows_, self.regions_, self.gamma_,
                                      block_size=self.cka_block_size_, seed=est.seed,
                                      partition_rows=est.partition_rows)
        timings = dict(self.timings_, cms_s=t1 - t0, cross_region_cka_s=time.perf_counter() - t1)
        n_gen = [int(source_shape(py)[0]) for py in srcs]
        result = self._result(names, rows, cross, n_ref=n_ref, n_gen=n_gen, timings=timings)
        return dataclasses.replace(result, ranking=regions_ranking(result))

    def _generated_source(self, images: Any, name: str, n_ref: int) -> Any:
        """One generated set's pixels (or ImageRows), checked against the real images' shape and the block."""
        src = self._check_shape(images, f"generated set {name!r}")
        m = source_shape(src)[0]
        b = self.estimator.block_size
        if b is not None and min(m, n_ref) < b:
            raise InputError(f"generated set {name!r}: fewer images than one block: "
                             f"{min(m, n_ref)} < block_size {b}", parameter="block_size")
        return src

    def _result(self, names: list[str], rows: list[dict], cross: np.ndarray, *, n_ref: int, n_gen: list[int],
                timings: dict) -> RegionsResult:
        est = self.estimator
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
            n_real=n_ref, n_generated=n_gen, config=self._config(), seed=int(est.seed), timings=timings,
            intervals=[r["intervals"] for r in rows] if est.bootstrap else [],
            bootstrap={} if not est.bootstrap else {
                "replicates": int(est.bootstrap), "level": float(est.level), "seed": int(est.seed),
                "resample": "images (real and each generated set, with replacement)"
                if est.block_size is None else "blocks (with replacement)",
                "around": "the U-form estimate M_xy / sqrt(U_xx U_yy) on all images ('debiased'); the "
                          "point estimate cms is eq. 4, the same with or without intervals",
                "validity": interval_validity(est.block_size, n_ref, n_gen)},
            block_bias=self._block_bias(n_ref, n_gen),
            notes=[f"{name}: {note}" for name, r in zip(names, rows, strict=True) for note in r["notes"]]
            + self._unused_notes())

    def _unused_notes(self) -> list[str]:
        """A note for ``block_estimator`` set without ``block_size``: the exact estimator ran, which it does
        not change (it was dropped without a word)."""
        est = self.estimator
        if est.block_size is None and est.block_estimator != "corrected":
            return [f"block_estimator={est.block_estimator!r} applies to the block estimator only "
                    "(block_size); the exact estimator ran, so it was not used"]
        return []

    def _config(self) -> dict:
        """The result's ``config``: the options (but those in ``NOT_IN_CONFIG``) with the resolved values."""
        est = self.estimator
        config = {k: v for k, v in est.get_params().items() if k not in est.NOT_IN_CONFIG}
        config.update(gamma=Bandwidth.parse(est.gamma, "gamma", kind="gamma").given,
                      gamma_value=float(self.gamma_), cka_block_size=self.cka_block_size_,
                      block_estimator=est.block_estimator if est.block_size is not None else None,
                      gamma_convention="gamma = factor / median Euclidean distance between real images",
                      device=resolve_backend(est.device).label)
        return config

    def _block_bias(self, n_ref: int, n_gen: list[int]) -> str | None:
        est = self.estimator
        if est.block_size is None:
            return None
        b = int(est.block_size)
        if est.block_estimator == "corrected":
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
    if len(set(names)) != len(names):
        raise OptionError(f"names must be distinct, got {names}", parameter="names")
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

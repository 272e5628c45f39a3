"""Disentangled mean embeddings: which pixel regions make a generator's images differ from real ones.

A package split by concept (each module's docstring states the equations of the disentangled-mean-embeddings
paper it implements; SPEC, "Cosine mean similarity and disentangled regions"):

* :mod:`.two_sample` - the two-sample functional core: CMS (eq. 4), MMD^2 (eq. 16), HSIC (eq. 11),
  CKA (eq. 13) from Gram matrices, their block versions (appendix C) and the bias-corrected block CMS.
* :mod:`.pixel_cka` - the pixel-by-pixel CKA matrix of Algorithm 1 by matrix products, and the median rule
  for gamma (the kernel itself, exp(-gamma |a - b|^2), is :mod:`promptprism.kernels.rbf`).
* :mod:`.clustering` - regions from the CKA matrix (average linkage, cut from the top).
* :mod:`.region_cms` and :mod:`.comparison` - CMS per region, of the whole image and their product
  (Theorem 1) in log space, exact or over blocks, with bootstrap intervals.
* :mod:`.cross_cka` - the cross-region CKA that says how far Theorem 1's independence assumption holds.
* :mod:`.result` - :class:`RegionsResult` and its files; :mod:`.estimator` - :class:`RegionCMS`.

The estimator contract: ``RegionCMS(...).fit(real)`` learns the regions and returns the estimator;
``compare(generated_sets)`` returns a :class:`RegionsResult`. Every sum over images is a partition task that
returns a mergeable accumulator (``promptprism.stats``); the tasks run on
:func:`promptprism.scale.current_runner`, chosen once with ``with promptprism.execution(...)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports
from .comparison import region_cms  # (named as a module of the package: imported eagerly, see lazy_exports)

#: module -> the public names it defines, imported on first use (see :mod:`promptprism._lazy`)
_EXPORTS = {
    "...kernels.bandwidth": ("DegenerateKernelWarning", "gamma_from_median"),
    "...kernels.rbf": ("Kernel", "rbf_kernel"),
    "...stats.pixel": ("PixelCKAAccumulator",),
    ".clustering": (
        "default_min_region_size", "discover_regions", "fill_constant_pixels", "suggest_n_regions",
    ),
    ".comparison": ("compare_sources", "percentile_interval", "resample_counts"),
    ".cross_cka": ("cross_cka_partition", "cross_region_cka", "pixel_range_partition"),
    ".estimator": ("RegionCMS",),
    ".options": ("BLOCK_ESTIMATORS",),
    ".pixel_cka": (
        "CKA_BLOCK_SIZE", "CKA_MAX_IMAGES", "MAX_BYTES", "pixel_cka_matrix", "pixel_cka_partition",
        "unit_centred_rows",
    ),
    ".region_cms": (
        "log_cms_from_pair_means", "log_cms_rbf", "region_block_partition", "region_sqdists",
        "region_sums_partition", "weighted_logsumexp",
    ),
    ".result": ("INLINE_CKA_MAX_PIXELS", "RegionsResult"),
    ".sources": ("as_pixels",),
    ".two_sample": (
        "block_cka", "block_cms", "block_hsic", "block_indices", "block_mmd2", "center_gram", "cka", "cms",
        "cms_from_pair_means", "hsic", "mmd2",
    ),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from ...kernels.bandwidth import DegenerateKernelWarning, gamma_from_median
    from ...kernels.rbf import Kernel, rbf_kernel
    from ...stats.pixel import PixelCKAAccumulator
    from .clustering import default_min_region_size, discover_regions, fill_constant_pixels, suggest_n_regions
    from .comparison import compare_sources, percentile_interval, region_cms, resample_counts
    from .cross_cka import cross_cka_partition, cross_region_cka, pixel_range_partition
    from .estimator import RegionCMS
    from .options import BLOCK_ESTIMATORS
    from .pixel_cka import (
        CKA_BLOCK_SIZE,
        CKA_MAX_IMAGES,
        MAX_BYTES,
        pixel_cka_matrix,
        pixel_cka_partition,
        unit_centred_rows,
    )
    from .region_cms import (
        log_cms_from_pair_means,
        log_cms_rbf,
        region_block_partition,
        region_sqdists,
        region_sums_partition,
        weighted_logsumexp,
    )
    from .result import INLINE_CKA_MAX_PIXELS, RegionsResult
    from .sources import as_pixels
    from .two_sample import (
        block_cka,
        block_cms,
        block_hsic,
        block_indices,
        block_mmd2,
        center_gram,
        cka,
        cms,
        cms_from_pair_means,
        hsic,
        mmd2,
    )

__all__ = [
    "BLOCK_ESTIMATORS",
    "CKA_BLOCK_SIZE",
    "CKA_MAX_IMAGES",
    "INLINE_CKA_MAX_PIXELS",
    "DegenerateKernelWarning",
    "Kernel",
    "MAX_BYTES",
    "PixelCKAAccumulator",
    "RegionCMS",
    "RegionsResult",
    "as_pixels",
    "block_cka",
    "block_cms",
    "block_hsic",
    "block_indices",
    "block_mmd2",
    "center_gram",
    "cka",
    "cms",
    "cms_from_pair_means",
    "compare_sources",
    "cross_cka_partition",
    "cross_region_cka",
    "default_min_region_size",
    "discover_regions",
    "fill_constant_pixels",
    "hsic",
    "log_cms_from_pair_means",
    "gamma_from_median",
    "log_cms_rbf",
    "mmd2",
    "percentile_interval",
    "pixel_cka_matrix",
    "pixel_cka_partition",
    "pixel_range_partition",
    "rbf_kernel",
    "region_block_partition",
    "region_cms",
    "region_sqdists",
    "region_sums_partition",
    "resample_counts",
    "suggest_n_regions",
    "unit_centred_rows",
    "weighted_logsumexp",
]

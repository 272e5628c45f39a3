"""Disentangled mean embeddings: which pixel regions make a generator's images differ from real ones.

A package split by concept (each module's docstring states the equations of the disentangled-mean-embeddings
paper it implements; SPEC, "Cosine mean similarity and disentangled regions"):

* :mod:`.two_sample` - the two-sample functional core: CMS (eq. 4) from Gram matrices, the block versions
  (appendix C) of CMS, MMD^2 (eq. 16), HSIC (eq. 11) and CKA (eq. 13), and the bias-corrected block CMS (the
  one-Gram MMD^2, HSIC and CKA are the shared :mod:`promptprism.stats.two_sample`).
* :mod:`.pixel_cka` - the pixel-by-pixel CKA matrix of Algorithm 1 by matrix products, and the median rule
  for gamma (the kernel itself, exp(-gamma |a - b|^2), is :mod:`promptprism.kernels.rbf`).
* :mod:`.clustering` - regions from the CKA matrix (average linkage, cut from the top).
* :mod:`.region_cms` and :mod:`.comparison` - CMS per region, of the whole image and their product
  (Theorem 1) in log space, exact or over blocks, with bootstrap intervals.
* :mod:`.bounds` - every reported CMS kept in [-1, 1], the range of a cosine (intervals intersected with it).
* :mod:`.cross_cka` - the cross-region CKA that says how far Theorem 1's independence assumption holds.
* :mod:`.result` - :class:`RegionsResult` and its files; :mod:`.estimator` - :class:`RegionCMS`;
  :mod:`.fitted` - :class:`FittedRegions`, what ``fit`` learned.

The estimator contract: ``RegionCMS(...).fit(real)`` learns the regions and returns them (a
:class:`FittedRegions`; the estimator itself is never changed), whose ``compare(generated_sets)`` returns a
:class:`RegionsResult`. Every sum over images is a partition task that
returns a mergeable accumulator (``promptprism.stats``); the tasks run on
:func:`promptprism.scale.current_runner`, chosen once with ``with promptprism.execution(...)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports
from .comparison import region_cms  # (named as a module of the package: imported eagerly, see lazy_exports)

#: module -> the public names it defines, imported on first use (see :mod:`promptprism._lazy`); the rest
#: of the package is importable from its modules and is not part of the public API
_EXPORTS = {
    "...kernels.rbf": ("rbf_kernel",),
    ".clustering": (
        "discover_regions",
        "suggest_n_regions",
    ),
    ".cross_cka": ("cross_region_cka",),
    ".estimator": ("RegionCMS",),
    ".fitted": ("FittedRegions",),
    ".pixel_cka": ("pixel_cka_matrix",),
    ".result": ("RegionsResult",),
    ".two_sample": (
        "block_cka",
        "block_cms",
        "block_hsic",
        "block_mmd2",
        "cka",
        "cms",
        "hsic",
        "mmd2",
    ),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from ...kernels.rbf import rbf_kernel
    from .clustering import discover_regions, suggest_n_regions
    from .cross_cka import cross_region_cka
    from .estimator import RegionCMS
    from .fitted import FittedRegions
    from .pixel_cka import pixel_cka_matrix
    from .result import RegionsResult
    from .two_sample import block_cka, block_cms, block_hsic, block_mmd2, cka, cms, hsic, mmd2

__all__ = [
    "FittedRegions",
    "RegionCMS",
    "RegionsResult",
    "block_cka",
    "block_cms",
    "block_hsic",
    "block_mmd2",
    "cka",
    "cms",
    "cross_region_cka",
    "discover_regions",
    "hsic",
    "mmd2",
    "pixel_cka_matrix",
    "rbf_kernel",
    "region_cms",
    "suggest_n_regions",
]

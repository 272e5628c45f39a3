"""Reference-set metrics on embeddings: Fréchet distance, KID, precision, recall, density, coverage."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports
from .prdc import prdc  # (named as a module of the package: imported eagerly, see lazy_exports)

#: module -> the public names it defines, imported on first use (see :mod:`promptprism._lazy`)
_EXPORTS = {
    ".alignment": ("CLIPSCORE_WEIGHT", "check_joint_space", "clip_scores"),
    ".estimator": ("ReferenceMetrics",),
    ".findings": ("FindingQuality",),
    ".findings_rank": ("FindingRanking",),
    ".findings_clusters": ("ClusterQuality", "cluster_preference"),
    ".findings_facets": ("FacetQuality", "FacetRanking", "facet_preference"),
    ".judge": ("FindingPreference",),
    ".frechet": (
        "feature_moments", "frechet_distance", "frechet_distance_from_moments", "trace_sqrt_product",
    ),
    ".kid": ("kernel_inception_distance", "kernel_mmd2", "subset_mmd2"),
    ".prdc": ("NeighbourIndicators", "knn_radii", "neighbour_indicators"),
    ".result": ("MetricsResult", "SetMetrics"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .alignment import CLIPSCORE_WEIGHT, check_joint_space, clip_scores
    from .estimator import ReferenceMetrics
    from .findings import FindingQuality
    from .findings_clusters import ClusterQuality, cluster_preference
    from .findings_facets import FacetQuality, FacetRanking, facet_preference
    from .findings_rank import FindingRanking
    from .frechet import feature_moments, frechet_distance, frechet_distance_from_moments, trace_sqrt_product
    from .judge import FindingPreference
    from .kid import kernel_inception_distance, kernel_mmd2, subset_mmd2
    from .prdc import NeighbourIndicators, knn_radii, neighbour_indicators, prdc
    from .result import MetricsResult, SetMetrics

__all__ = ["CLIPSCORE_WEIGHT", "ClusterQuality", "FacetQuality", "FacetRanking", "FindingPreference",
           "FindingQuality", "FindingRanking",
           "MetricsResult", "NeighbourIndicators", "ReferenceMetrics", "SetMetrics", "check_joint_space",
           "clip_scores", "cluster_preference", "facet_preference",
           "feature_moments", "frechet_distance", "frechet_distance_from_moments",
           "kernel_inception_distance", "kernel_mmd2", "knn_radii", "neighbour_indicators", "prdc",
           "subset_mmd2", "trace_sqrt_product"]

"""Mergeable accumulators (update / merge / compute) and eigen-solvers."""

from .accumulators import (
    CovarianceAccumulator,
    GroupSumAccumulator,
    MinMaxAccumulator,
    SumsAccumulator,
    TopKAccumulator,
)
from .eigen import (
    GramEigen,
    gram_factor,
    select_modes,
    signed_extremes,
    symmetric_eigenpairs,
    symmetric_extreme_eigenpairs,
    weighted_factor_extremes,
    weighted_gram_eigenpairs,
    weighted_gram_extremes,
)
from .modes import ModeStats
from .pixel import PixelCKAAccumulator

__all__ = [
    "CovarianceAccumulator",
    "GramEigen",
    "GroupSumAccumulator",
    "MinMaxAccumulator",
    "ModeStats",
    "PixelCKAAccumulator",
    "SumsAccumulator",
    "TopKAccumulator",
    "gram_factor",
    "select_modes",
    "signed_extremes",
    "symmetric_eigenpairs",
    "symmetric_extreme_eigenpairs",
    "weighted_factor_extremes",
    "weighted_gram_eigenpairs",
    "weighted_gram_extremes",
]

"""Mergeable accumulators (update / merge / compute) and eigen-solvers; the statistics the methods share live
in its modules: :mod:`.resampling` (bootstrap over prompts, jackknife, intervals), :mod:`.two_sample` (MMD^2,
centring, HSIC, CKA, Holm), :mod:`.moments` (means and covariances), :mod:`.intervals` (an interval)."""

from .accumulators import (
    CovarianceAccumulator,
    GroupSumAccumulator,
    MinMaxAccumulator,
    SumsAccumulator,
    TopKAccumulator,
)
from .batched_eigen import weighted_factor_extremes, weighted_gram_extremes
from .eigen import (
    GramEigen,
    gram_factor,
    select_modes,
    signed_extremes,
    symmetric_eigenpairs,
    symmetric_extreme_eigenpairs,
    weighted_gram_eigenpairs,
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

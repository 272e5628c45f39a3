"""Mergeable accumulators (update / merge / compute) and eigen-solvers."""

from .accumulators import (
    CovarianceAccumulator,
    GroupSumAccumulator,
    MinMaxAccumulator,
    SumsAccumulator,
    TopKAccumulator,
)
from .eigen import GramEigen, gram_factor, symmetric_eigenpairs, weighted_gram_eigenpairs
from .pixel import PixelCKAAccumulator

__all__ = [
    "CovarianceAccumulator",
    "GramEigen",
    "GroupSumAccumulator",
    "MinMaxAccumulator",
    "PixelCKAAccumulator",
    "SumsAccumulator",
    "TopKAccumulator",
    "gram_factor",
    "symmetric_eigenpairs",
    "weighted_gram_eigenpairs",
]

"""Mergeable accumulators (update / merge / compute) and eigen-solvers."""

from .accumulators import (
    CovarianceAccumulator,
    GroupSumAccumulator,
    MinMaxAccumulator,
    SumsAccumulator,
    TopKAccumulator,
)
from .eigen import GramEigen, gram_factor, symmetric_eigenpairs, weighted_gram_eigenpairs

__all__ = [
    "CovarianceAccumulator",
    "GramEigen",
    "GroupSumAccumulator",
    "MinMaxAccumulator",
    "SumsAccumulator",
    "TopKAccumulator",
    "gram_factor",
    "symmetric_eigenpairs",
    "weighted_gram_eigenpairs",
]

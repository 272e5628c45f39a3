"""Permutation statistics shared by the tests: rank p-values among labellings and min-p aggregation.

A test draws K relabellings beside the observed labelling (column 0) and computes a statistic on each; the
p-value of a labelling is its rank among all K + 1 (the add-one permutation p-value), and several kernels'
statistics combine by the minimum of their p-values, calibrated on the relabellings' own minima (min-p,
Westfall and Young 1993; the aggregated kernel family of PromptSplit's test).
"""

from __future__ import annotations

import numpy as np


def can_reject(permutations: int, alpha: float) -> bool:
    """Whether a permutation test of ``permutations`` relabellings can reject at ``alpha``: its smallest
    p-value is 1 / (K + 1) (the observed labelling counts as one of the K + 1). No test (K = 0): True
    (there is nothing that could not answer)."""
    return not permutations or 1.0 / (permutations + 1) <= alpha


def labelling_statistic(top_pos: np.ndarray, top_neg: np.ndarray) -> np.ndarray:
    """T(l) for each of the K + 1 labellings: max over signs of the top |eigenvalue| divided by that sign's
    median over the labellings (the first-step statistic of PromptSplit's step-down test)."""
    cols = [np.asarray(x, dtype=np.float64) for x in (top_pos, top_neg)]
    return np.max(np.stack([c / max(float(np.median(c)), 1e-300) for c in cols]), axis=0)


def labelling_pvalues(stat: np.ndarray) -> np.ndarray:
    """p(l) = #{l': T(l') >= T(l)} / (K + 1) for every labelling l (the observed one's is the add-one
    permutation p-value)."""
    stat = np.asarray(stat, dtype=np.float64)
    ordered = np.sort(stat)
    below = np.searchsorted(ordered, stat - 1e-12 * np.abs(stat), side="left")
    return (stat.size - below) / stat.size


def adjust_pvalues(p: np.ndarray, null_min_p: np.ndarray) -> np.ndarray:
    """(1 + #{relabellings l: min_k p_k(l) <= p}) / (1 + K): a kernel's p-value adjusted for the family."""
    ordered = np.sort(np.asarray(null_min_p, dtype=np.float64))
    counts = np.searchsorted(ordered, np.asarray(p, dtype=np.float64) * (1 + 1e-12), side="right")
    return (1.0 + counts) / (1.0 + ordered.size)


def min_p_aggregate(stats: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """From each kernel's statistic over the K + 1 labellings (kernels x (K + 1), column 0 observed):
    (p_agg, each kernel's own p-value of the observed labelling, the K relabellings' min-p values)."""
    p = np.stack([labelling_pvalues(s) for s in np.atleast_2d(stats)])
    min_p = p.min(axis=0)
    p_agg = float(adjust_pvalues(min_p[:1], min_p[1:])[0])
    return p_agg, p[:, 0], min_p[1:]


__all__ = ["adjust_pvalues", "can_reject", "labelling_pvalues", "labelling_statistic", "min_p_aggregate"]

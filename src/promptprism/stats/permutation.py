"""Permutation statistics shared by the tests: rank p-values among labellings, min-p aggregation, and the
stratified permutation test of a difference of means.

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


def stratified_permutation_test(a: np.ndarray, strata_a: np.ndarray, b: np.ndarray, strata_b: np.ndarray,
                                *, permutations: int, seed: int, block: int = 1 << 21
                                ) -> tuple[float, float]:
    """(mean(a) - mean(b), two-sided add-one p-value) with the labels a/b exchanged within each stratum.

    Each relabelling draws, in every stratum, which of its samples carry a's label (as many as a has there:
    the k smallest of uniform keys, a uniformly random k-subset), so only the sum of a's scores is needed;
    the relabellings run as arrays, ``block`` keys at a time.
    """
    scores = np.r_[np.asarray(a, np.float64), np.asarray(b, np.float64)]
    n_a, n_b = np.size(a), np.size(b)
    total = scores.sum()
    _, inverse = np.unique(np.r_[strata_a, strata_b], return_inverse=True)
    rng = np.random.default_rng(seed)
    sum_a = np.zeros(permutations)
    for group in np.split(np.argsort(inverse, kind="stable"), np.cumsum(np.bincount(inverse))[:-1]):
        k = int(np.count_nonzero(group < n_a))
        if k in (0, group.size):
            sum_a += scores[group].sum() if k else 0.0
            continue
        values, step = scores[group], max(1, block // group.size)
        for lo in range(0, permutations, step):
            keys = rng.random((min(step, permutations - lo), group.size))
            chosen = np.argpartition(keys, k - 1, axis=1)[:, :k]
            sum_a[lo:lo + keys.shape[0]] += values[chosen].sum(axis=1)
    observed_stat = scores[:n_a].sum() / n_a - (total - scores[:n_a].sum()) / n_b
    null = sum_a / n_a - (total - sum_a) / n_b
    hits = int(np.count_nonzero(np.abs(null) >= abs(observed_stat) - 1e-12))
    return float(np.mean(a) - np.mean(b)), (1 + hits) / (1 + permutations)

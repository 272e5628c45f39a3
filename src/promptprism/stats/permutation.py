"""Permutation statistics shared by the tests: rank p-values among labellings, min-p aggregation, and the
stratified permutation test of a difference of means.

A test draws K relabellings beside the observed labelling (column 0) and computes a statistic on each; the
p-value of a labelling is its rank among all K + 1 (the add-one permutation p-value), and several kernels'
statistics combine by the minimum of their p-values, calibrated on the relabellings' own minima (min-p,
Westfall and Young 1993; the aggregated kernel family of PromptSplit's test).
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError, OptionError


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


def stratum_weights(*strata: np.ndarray) -> dict:
    """{stratum: 1 / sum_k 1 / n_k} over the strata every one of the samples holds (n_k: the k-th sample's
    count there). Two samples: n_a n_b / (n_a + n_b), the Cochran-Mantel-Haenszel weights of a difference
    of means (a stratum's weight is the inverse variance of its difference); K samples: one weighting of
    the strata all hold, for K means shown side by side (:func:`stratified_mean`)."""
    counts = []
    for labels in strata:
        keys, n = np.unique(np.asarray(labels), return_counts=True)
        counts.append(dict(zip(keys.tolist(), n.tolist(), strict=True)))
    shared = set(counts[0]).intersection(*counts[1:]) if counts else set()
    return {k: 1.0 / sum(1.0 / c[k] for c in counts) for k in sorted(shared, key=str)}


def by_stratum(values: np.ndarray, strata: np.ndarray) -> dict:
    """{stratum: its values, in their order} by one stable sort (a mask per stratum costs strata x rows)."""
    keys, inverse = np.unique(np.asarray(strata), return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    parts = np.split(np.asarray(values)[order], np.cumsum(np.bincount(inverse, minlength=keys.size))[:-1])
    return dict(zip(keys.tolist(), parts, strict=True))


def stratified_mean(scores: np.ndarray, strata: np.ndarray, weights: dict) -> float:
    """sum_s w_s mean_s / sum_s w_s: the mean of ``scores`` within each stratum of ``weights``, weighted
    (:func:`stratum_weights`); NaN without a stratum."""
    total = sum(weights.values())
    if not weights or total <= 0:
        return float("nan")
    groups = by_stratum(scores, strata)
    return float(sum(w * np.mean(groups[k]) for k, w in weights.items()) / total)


def stratified_permutation_test(a: np.ndarray, strata_a: np.ndarray, b: np.ndarray, strata_b: np.ndarray,
                                *, permutations: int, seed: int, weights: dict | None = None,
                                block: int = 1 << 21) -> tuple[float, float]:
    """(difference, two-sided add-one p-value): the stratified difference of means,
    sum_s w_s (mean_a,s - mean_b,s) / sum_s w_s over the strata both hold (``weights``, default
    :func:`stratum_weights` of the two; given, e.g. those of K samples, its strata both must hold), tested
    by exchanging the labels a/b within each stratum. Strata of one side only say nothing about the
    difference and are left out; with none shared, (NaN, NaN). Pooling the samples instead would compare the
    strata's mix (a model closer on every stratum can read farther: Simpson's paradox).

    Each relabelling draws, in every stratum, which of its samples carry a's label (as many as a has there:
    the k smallest of uniform keys, a uniformly random k-subset), so only each stratum's sum of a's scores is
    needed; the relabellings run as arrays, ``block`` keys at a time.
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    strata_a, strata_b = np.asarray(strata_a), np.asarray(strata_b)
    for side, scores in (("a", a), ("b", b)):
        bad = np.flatnonzero(~np.isfinite(scores))
        if bad.size:
            raise InputError(f"{side}: score {scores[bad[0]]} at row {bad[0]}; the test needs finite scores")
    held = stratum_weights(strata_a, strata_b)
    if weights is None:
        weights = held
    else:
        wrong = next((k for k, w in weights.items() if k not in held or not np.isfinite(w) or w <= 0), None)
        if wrong is not None:
            raise OptionError(f"weights: stratum {wrong!r} has weight {weights[wrong]!r}; every stratum "
                              "must be held by both samples and weigh a finite number > 0",
                              parameter="weights")
    if not weights:
        return float("nan"), float("nan")
    total_w = sum(weights.values())
    rng = np.random.default_rng(seed)
    observed, null = 0.0, np.zeros(permutations)
    of_a, of_b = by_stratum(a, strata_a), by_stratum(b, strata_b)
    for key, w in weights.items():
        mine, theirs = of_a[key], of_b[key]
        values, na, nb = np.r_[mine, theirs], mine.size, theirs.size
        scale, total = w / total_w, values.sum()
        observed += scale * (mine.sum() / na - theirs.sum() / nb)
        step = max(1, block // values.size)
        for lo in range(0, permutations, step):
            keys = rng.random((min(step, permutations - lo), values.size))
            sum_a = values[np.argpartition(keys, na - 1, axis=1)[:, :na]].sum(axis=1)
            null[lo:lo + keys.shape[0]] += scale * (sum_a / na - (total - sum_a) / nb)
    hits = int(np.count_nonzero(np.abs(null) >= abs(observed) - 1e-12))
    return float(observed), (1 + hits) / (1 + permutations)


__all__ = ["adjust_pvalues", "by_stratum", "can_reject", "labelling_pvalues", "labelling_statistic",
           "min_p_aggregate", "stratified_mean", "stratified_permutation_test", "stratum_weights"]

"""Permutation statistics shared by the tests: the max-statistic step-down over keyed statistics, rank
p-values among labellings, min-p aggregation, and the stratified permutation test of a difference of means.

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


def labelling_statistic(*tops: np.ndarray) -> np.ndarray:
    """T(l) for each of the K + 1 labellings: the max over the keys (e.g. a comparison's two signs) of the
    key's top |eigenvalue| divided by its median over the labellings (the first-step statistic of
    :func:`step_down_pvalues`, as in the aggregated test of Schrab et al. 2023; PromptSplit's test, SPEC)."""
    cols = [np.asarray(x, dtype=np.float64) for x in tops]
    return np.max(np.stack([c / max(float(np.median(c)), 1e-300) for c in cols]), axis=0)


def step_down_scales(observed: dict, null_largest: dict) -> dict:
    """{key: the median of its largest value over the K + 1 labellings} (the K relabellings' ``null_largest``
    and the observed largest, ``observed[key][0]``; 1e-300 at least): the scale that puts every key of a
    max-statistic on one footing, a symmetric function of the labellings, so the test stays exact."""
    out = {}
    for key, obs in observed.items():
        null = np.asarray(null_largest[key], float)
        first = np.asarray(obs, float)[:1]
        out[key] = max(float(np.median(np.r_[null, first])) if null.size else 0.0, 1e-300)
    return out


def step_down_pvalues(observed: dict, null_largest: dict) -> dict:
    """FWER-adjusted add-one p-values of every observed value of every key (max-statistic, step-down;
    Westfall and Young 1993; PromptSplit's test over the (comparison, sign) keys, SPEC).

    ``observed[key]``: the key's descending values tested (e.g. |eigenvalues| of one sign of one
    comparison); ``null_largest[key]``: its *largest* value under each of the K relabellings. Each key is
    scaled by :func:`step_down_scales`; the values are tested in decreasing scaled order (ties: the keys'
    order, then position), each against the per-relabelling maximum over the keys that still have untested
    values; p = (1 + #{null >= observed}) / (1 + K), made monotone along the order. Every value of a key is
    compared with the relabellings' largest, not their j-th: once the real modes are set aside, the
    remaining noise modes behave like the top of a noise spectrum, so the j-th against the j-th would
    overstate significance under partial nulls. Returns {key: p-values in ``observed[key]``'s order}.
    """
    keys = list(observed)
    obs = {s: np.asarray(observed[s], float) for s in keys}
    null = {s: np.asarray(null_largest[s], float) for s in keys}
    count = next(iter(null.values())).shape[0] if null else 0
    scale = step_down_scales(obs, null)
    rank = {s: i for i, s in enumerate(keys)}
    order = sorted(((obs[s][j] / scale[s], s, j) for s in keys for j in range(obs[s].size)),
                   key=lambda x: (-x[0], rank[x[1]], x[2]))
    # step i tests against the max over the keys whose last value comes at step >= i: one reverse pass
    # (each key's null joins the running maximum at its last step), then the p-values made monotone
    last = {s: i for i, (_, s, _) in enumerate(order)}
    worst = np.full(count, -np.inf)
    counts = np.zeros(len(order))
    for i in range(len(order) - 1, -1, -1):
        stat, s, _ = order[i]
        if last[s] == i:
            worst = np.maximum(worst, null[s] / scale[s])
        counts[i] = np.count_nonzero(worst >= stat * (1 - 1e-12))
    running = np.maximum.accumulate((1.0 + counts) / (1.0 + count)) if order else counts
    p = {s: np.ones(obs[s].size) for s in keys}
    for i, (_, s, j) in enumerate(order):
        p[s][j] = running[i]
    return p


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
    D = sum_s w_s (mean_a,s - mean_b,s) / sum_s w_s over the strata both hold (``weights``, default
    :func:`stratum_weights` of the two; given, e.g. those of K samples, its strata both must hold), tested
    by exchanging the labels a/b within each stratum. Strata of one side only say nothing about the
    difference and are left out; with none shared, (NaN, NaN). Pooling the samples instead would compare the
    strata's mix (a model closer on every stratum can read farther: Simpson's paradox).

    The test's statistic is D studentised, T = D / sqrt(sum_s c_s^2 (v_a,s / n_a,s + v_b,s / n_b,s))
    (c_s = w_s / sum w; v each side's sample variance on the stratum: Welch's statistic, stratified;
    :func:`stratified_variance`, :func:`studentised_difference`): the raw D's permutation test is exact only
    for "the same distribution on every stratum", and read two models of equal means but unequal spreads
    and sample counts as different (the Behrens-Fisher problem: 0.36 of null sets at alpha = 0.05 with 3
    against 15 samples a prompt). Studentised, it stays exact for equal distributions, and its level for
    equal means approaches alpha as the strata grow in number (Janssen 1997; Chung and Romano 2013; measured
    0.05-0.09 on few, small strata). With one sample a side on every stratum there is no spread to
    studentise by, and T = D.

    Each relabelling draws, in every stratum, which of its samples carry a's label (as many as a has there:
    the k smallest of uniform keys, a uniformly random k-subset), so only each stratum's sums of a's scores
    and squares are needed; the relabellings run as arrays, ``block`` keys at a time.
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    strata_a, strata_b = np.asarray(strata_a), np.asarray(strata_b)
    for side, scores in (("a", a), ("b", b)):
        bad = np.flatnonzero(~np.isfinite(scores))
        if bad.size:
            raise InputError(f"{side}: score {scores[bad[0]]} at row {bad[0]} (0-based); the test needs "
                             "finite scores")
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
    of_a, of_b = by_stratum(a, strata_a), by_stratum(b, strata_b)
    # per labelling (column 0: the observed one): sum_s scale_s (mean_a - mean_b), and each stratum's sides'
    # sums of squares about their means (for the variance of that difference)
    diff = np.zeros(permutations + 1)
    parts: list[tuple[float, int, int, np.ndarray]] = []
    observed = 0.0
    for key, w in weights.items():
        mine, theirs = of_a[key], of_b[key]
        values, na = np.r_[mine, theirs], mine.size
        scale = w / total_w
        observed += scale * (mine.mean() - theirs.mean())
        sums = np.empty((permutations + 1, 2))
        sums[0] = mine.sum(), np.square(mine).sum()
        step = max(1, block // values.size)
        for lo in range(0, permutations, step):
            keys = rng.random((min(step, permutations - lo), values.size))
            picked = values[np.argpartition(keys, na - 1, axis=1)[:, :na]]
            sums[1 + lo : 1 + lo + keys.shape[0]] = np.c_[picked.sum(axis=1), np.square(picked).sum(axis=1)]
        d, ss = studentised_terms(values, na, sums)
        diff += scale * d
        parts.append((scale, na, values.size - na, ss))
    variance = stratified_variance(parts)
    stat = diff if variance is None else studentised_difference(diff, variance)
    hits = int(np.count_nonzero(np.abs(stat[1:]) >= abs(stat[0]) * (1 - 1e-12) - 1e-300))
    return float(observed), (1 + hits) / (1 + permutations)


def studentised_terms(values: np.ndarray, n_a: int, sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One stratum's mean_a - mean_b and each side's sum of squares about its mean (2 x labellings), for each
    labelling whose a-side holds the sums of scores and of squares ``sums`` (labellings x 2) out of the
    stratum's ``values``."""
    n_b = values.size - n_a
    total, total_sq = values.sum(), np.square(values).sum()
    sum_a, sq_a = sums[:, 0], sums[:, 1]
    sum_b, sq_b = total - sum_a, total_sq - sq_a
    ss = np.stack([np.maximum(sq_a - sum_a * sum_a / n_a, 0.0), np.maximum(sq_b - sum_b * sum_b / n_b, 0.0)])
    return sum_a / n_a - sum_b / n_b, ss


def stratified_variance(parts: list[tuple[float, int, int, np.ndarray]]) -> np.ndarray | None:
    """sum_s c_s^2 (v_a,s / n_a,s + v_b,s / n_b,s) per labelling, from each stratum's (c_s, n_a,s, n_b,s,
    sums of squares (2 x labellings)): v a side's own sample variance on the stratum, or for a side of one
    sample there, that side's variance pooled over the strata (both sides' where it has no two samples
    anywhere); None when no side holds two samples on any stratum (nothing to studentise by)."""
    squares = sum(ss for *_, ss in parts)
    dof = np.array([sum(max(n - 1, 0) for _, n, _, _ in parts), sum(max(n - 1, 0) for *_, n, _ in parts)],
                   dtype=float)
    if not dof.any():
        return None
    pooled = np.where(dof[:, None] > 0, squares / np.maximum(dof, 1)[:, None], squares.sum(0) / dof.sum())
    total = np.zeros(squares.shape[1])
    for scale, n_a, n_b, ss in parts:
        for side, n in ((0, n_a), (1, n_b)):
            total += scale**2 * (ss[side] / (n - 1) if n > 1 else pooled[side]) / n
    return total


def studentised_difference(diff: np.ndarray, var: np.ndarray) -> np.ndarray:
    """diff / sqrt(var) (the stratified Welch statistic), 0 where both are 0 and +-inf where only the
    variance is (every stratum's sides constant and apart)."""
    diff, var = np.asarray(diff, np.float64), np.asarray(var, np.float64)
    scale = np.abs(diff).max(initial=0.0) * 1e-12
    out = np.zeros_like(diff)
    spread = var > scale * scale
    out[spread] = diff[spread] / np.sqrt(var[spread])
    flat = ~spread & (np.abs(diff) > scale)
    out[flat] = np.sign(diff[flat]) * np.inf
    return out


__all__ = ["adjust_pvalues", "by_stratum", "can_reject", "labelling_pvalues", "labelling_statistic",
           "min_p_aggregate", "stratified_mean", "stratified_permutation_test", "stratum_weights",
           "step_down_pvalues", "step_down_scales", "stratified_variance", "studentised_difference",
           "studentised_terms"]

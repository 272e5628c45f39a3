"""Resampling shared by the methods: the bootstrap over prompts (grouped), over rows, and the delete-one-group
jackknife; percentile, basic and jackknife intervals from the replicates.

The unit resampled is the prompt (a cluster) wherever a set has prompts (SPEC, "Uncertainty": resample
"prompt groups, when outputs share prompts"): a replicate draws as many prompts as there are, with
replacement, and keeps every output of each drawn prompt as often as the prompt was drawn. Outputs of one
prompt share it and are not independent, so resampling rows would understate the spread. A replicate is
described by counts: how often each group (or row) is drawn; a method computes its estimate on the rows so
weighted.

The intervals (SPEC, "Uncertainty": percentile intervals at the stated level; the basic and the jackknife
interval where a method's coverage grid calls for them, Efron and Tibshirani 1993, ch. 13 and 11):

    percentile   [q_(1-level)/2, q_(1+level)/2]                  of the replicates
    basic        [2 e - q_(1+level)/2, 2 e - q_(1-level)/2]       (pivotal; e the estimate)
    jackknife    centre +- t_{G-1} SE_jack,  centre = G e - (G - 1) mean_g e_(g),
                 SE_jack^2 = (G - 1) / G sum_g (e_(g) - mean)^2   (e_(g): group g deleted)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._validation import check_memory
from ..errors import InputError

#: the fewest prompts (or rows) an interval resamples: with 2, its replicates take three values at most
MIN_BOOTSTRAP_CLUSTERS = 3

Bounds = tuple[float | None, float | None]


def check_bootstrap_memory(replicates: int, *, rows: int, groups: int = 0) -> None:
    """Refuse, before anything is computed, a bootstrap whose draws cannot fit in memory: per replicate 16
    bytes per prompt (its draws, counted: int64) and per row (its multiplicity, int64 then float64)."""
    if replicates:
        check_memory(16.0 * float(replicates) * (int(groups) + int(rows)),
                     what=f"bootstrap {replicates} ({replicates:,} replicates over {rows:,} rows)",
                     parameter="bootstrap")


def prompt_draws(n_groups: int, replicates: int, seed: int) -> np.ndarray:
    """(replicates, n_groups) counts: how often each prompt is drawn in each replicate of the bootstrap over
    prompt groups (SPEC, "Uncertainty": resample prompt groups with replacement, B times, seeded).

    A replicate that draws one prompt n_groups times is drawn again (from the same seeded stream): with one
    prompt there is no prompt-driven part to split off and no second fold to cross-fit on. That happens with
    probability n_groups^(1 - n_groups): 1/2 for 2 prompts, 1/9 for 3, below 2e-3 from 5 on.
    """
    if n_groups < 2:
        raise InputError("a bootstrap over prompts needs at least 2 distinct prompts; this set has "
                         f"{n_groups} (its intervals would be empty): pass bootstrap=0")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_groups, size=(replicates, n_groups))
    for b in range(replicates):
        while np.all(draws[b] == draws[b, 0]):
            draws[b] = rng.integers(0, n_groups, size=n_groups)
    return np.stack([np.bincount(d, minlength=n_groups) for d in draws])


def cluster_counts(groups: np.ndarray | None, n: int, replicates: int, seed: int) -> np.ndarray:
    """(replicates, n) multiplicity of each row in the bootstrap of SPEC, "Uncertainty": its prompt's draw
    count (:func:`prompt_draws`), or, with fewer than two prompts, its own (samples resampled)."""
    if groups is not None and np.unique(groups).size >= 2:
        _, labels = np.unique(groups, return_inverse=True)
        draws = prompt_draws(int(labels.max()) + 1, replicates, seed)
        return draws[:, labels]
    rng = np.random.default_rng(seed)
    return np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(replicates)])


def resample_counts(n: int, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """(n, B) float counts of the bootstrap over samples (SPEC, "Uncertainty"): how often each of n items is
    drawn in each of B resamples of size n with replacement (one multinomial draw per resample)."""
    return rng.multinomial(n, np.full(n, 1.0 / n), size=replicates).T.astype(np.float64)


def jackknife_counts(groups: np.ndarray) -> np.ndarray:
    """(G, max label + 1) counts of the delete-one-group jackknife (Efron and Tibshirani 1993, ch. 11, over
    SPEC's prompt groups): row g holds every present group once except the g-th present one (labels absent
    from ``groups`` count 0)."""
    labels = np.unique(groups)
    counts = np.ones((len(labels), int(np.max(groups)) + 1), dtype=np.int64)
    counts[np.arange(len(labels)), labels] = 0
    absent = np.setdiff1d(np.arange(counts.shape[1]), labels)
    counts[:, absent] = 0
    return counts


def grouped_replicates(groups: np.ndarray, counts: np.ndarray, estimate: Callable[..., dict],
                       keys: Sequence[str]) -> dict[str, np.ndarray]:
    """Each of ``keys``' value in each replicate: ``counts[b, g]`` copies of group g's rows in replicate b
    (a bootstrap over prompts, :func:`prompt_draws`, or the jackknife, :func:`jackknife_counts`).

    ``estimate(rows, weights, groups, b)`` returns the table of the distinct ``rows`` drawn, weighted by
    their multiplicities (normalised to sum 1).
    """
    out: dict[str, list[float]] = {m: [] for m in keys}
    for b, row_counts in enumerate(counts):
        mult = row_counts[groups]
        rows = np.flatnonzero(mult > 0)
        scores = estimate(rows, mult[rows] / mult[rows].sum(), groups[rows], b)
        for m in keys:
            out[m].append(scores[m])
    return {m: np.asarray(v) for m, v in out.items()}


def percentile_interval(values: Any, level: float, *, axis: int | None = None, omit_nan: bool = True
                        ) -> tuple[Any, Any]:
    """(low, high): the (1 - level) / 2 and (1 + level) / 2 quantiles of the replicates, the percentile
    interval at the stated level (SPEC, "Uncertainty"), over ``axis`` (None: all values); ``omit_nan``:
    replicates without a value (NaN) are left out, else a NaN makes the bound NaN."""
    q = [(1 - level) / 2, (1 + level) / 2]
    if omit_nan:
        lo, hi = np.nanquantile(np.asarray(values, dtype=np.float64), q, axis=axis)
    else:
        lo, hi = np.quantile(values, q, axis=axis)
    return lo, hi


def basic_interval(values: np.ndarray, estimate: float, level: float, *, bounds: Bounds = (None, None)
                   ) -> dict:
    """{'low', 'high'}: the basic (pivotal) bootstrap interval [2 e - q_hi, 2 e - q_lo] (Efron and Tibshirani
    1993, ch. 13; SPEC, "Uncertainty", where a method's coverage grid calls for it), clipped to ``bounds``,
    with q_lo, q_hi the (1 -+ level) / 2 quantiles of the replicates (NaN ones left out) and e the estimate.

    It corrects for the estimator's bias as the bootstrap sees it (the replicates' shift from e mirrors the
    estimate's shift from the truth). Like the percentile interval, it contains e exactly when
    q_lo <= e <= q_hi.
    """
    q_lo, q_hi = percentile_interval(values, level)
    low, high = intersect_interval(2.0 * estimate - float(q_hi), 2.0 * estimate - float(q_lo), bounds)
    return {"low": low, "high": high}


def estimate_hull(low: float, high: float, centre: float, estimate: float) -> tuple[float, float]:
    """[low, high], an interval around a bias-corrected ``centre``, hulled with the same interval moved to be
    around the ``estimate`` itself: where the bias correction is small the two coincide; where it is large
    (a nonlinear statistic on few groups: the correction is then mostly noise) neither side's claim is taken
    alone, so the interval holds the estimate and excludes a value only when both placements do."""
    shift = float(estimate) - float(centre)
    return float(min(low, low + shift)), float(max(high, high + shift))


def intersect_interval(low: float, high: float, bounds: Bounds) -> tuple[float, float]:
    """[low, high] intersected with ``bounds`` (None: unbounded side): cut, not moved, so an interval for a
    quantity that lies within the bounds keeps its coverage (an interval wholly outside becomes the nearest
    bound)."""
    lo_b, hi_b = bounds
    if lo_b is not None:
        low, high = max(low, lo_b), max(high, lo_b)
    if hi_b is not None:
        low, high = min(low, hi_b), min(high, hi_b)
    return float(low), float(high)


def jackknife_interval(values: np.ndarray, estimate: float, level: float, *, bounds: Bounds = (None, None)
                       ) -> dict:
    """{'low', 'high', 'centre'}: centre +- t_{G-1} SE_jack from the delete-one-group values (NaN ones left
    out): centre = G e - (G - 1) mean_g e_(g) (the jackknife's bias correction), SE_jack^2 =
    (G - 1) / G sum_g (e_(g) - mean)^2 (Efron and Tibshirani 1993, ch. 11); clipped to ``bounds``."""
    from scipy.stats import t as student

    vals = np.asarray(values, dtype=np.float64)
    vals = vals[np.isfinite(vals)]
    g = len(vals)
    if g < 2:
        raise InputError(f"a jackknife interval needs at least 2 prompts whose deletion leaves a value; {g} "
                         "here: pass bootstrap=0")
    se = float(np.sqrt((g - 1) / g * np.sum((vals - vals.mean()) ** 2)))
    q = float(student.ppf(0.5 + level / 2, g - 1))
    lo_b, hi_b = bounds
    centre = float(np.clip(g * estimate - (g - 1) * vals.mean(), lo_b, hi_b))
    low, high = (float(np.clip(centre + s * q * se, lo_b, hi_b)) for s in (-1.0, 1.0))
    return {"low": low, "high": high, "centre": centre}


__all__ = ["basic_interval", "check_bootstrap_memory", "cluster_counts", "estimate_hull",
           "grouped_replicates", "intersect_interval", "jackknife_counts", "jackknife_interval",
           "percentile_interval", "prompt_draws", "resample_counts"]

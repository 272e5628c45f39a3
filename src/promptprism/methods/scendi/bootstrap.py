"""Bootstrap confidence intervals for Scendi's scores, and differences between models.

The unit resampled is the prompt (a cluster): a replicate draws as many prompts as there are, with
replacement, and keeps every output of each drawn prompt, as often as the prompt was drawn. Outputs of one
prompt are not independent (they share it), so resampling rows would understate the spread. A replicate is
the same estimator on the weighted set (weights = multiplicities), computed in sample space
(:mod:`.dual`) on the distinct rows drawn; the cross-fitted estimator keeps the ridge chosen on the full set
and deals the drawn prompts into fresh folds. Intervals are the delete-one-prompt jackknife's
(:func:`jackknife_interval`, the default: calibrated on the simulation grid) or basic bootstrap intervals
(:func:`basic_interval`); :func:`prompt_intervals` chooses.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import InputError, OptionError
from ...stats.intervals import hold_estimate
from ...stats.resampling import (
    basic_interval,
    check_bootstrap_memory,
    estimate_hull,
    grouped_replicates,
    intersect_interval,
    jackknife_counts,
    jackknife_interval,
    prompt_draws,
)

#: the scores given an interval (result.json ``intervals`` keys)
INTERVAL_METRICS = ("scendi", "scendi_prompt", "vendi", "rke", "model_share", "prompt_share")


def bootstrap_replicates(groups: np.ndarray, counts: np.ndarray, estimate: Callable[..., dict]
                         ) -> dict[str, np.ndarray]:
    """Each of :data:`INTERVAL_METRICS`' value in each replicate: ``counts[b, g]`` copies of prompt g's rows
    in replicate b (:func:`promptprism.stats.resampling.grouped_replicates`).

    ``estimate(rows, weights, groups, b)`` returns the score table of the distinct ``rows`` drawn, weighted
    by their multiplicities (normalised to sum 1): duplicating a row and doubling its weight give the same
    covariances.
    """
    return grouped_replicates(groups, counts, estimate, INTERVAL_METRICS)


#: the range each metric can take: intervals are clipped to it
METRIC_RANGE = {"scendi": (1.0, None), "scendi_prompt": (1.0, None), "vendi": (1.0, None), "rke": (1.0, None),
                "model_share": (0.0, 1.0), "prompt_share": (0.0, 1.0)}


def difference_range(metric: str) -> tuple[float | None, float | None]:
    """The range of a difference a - b of two values of ``metric``: [lo - hi, hi - lo] for a metric bounded
    on both sides in :data:`METRIC_RANGE` (shares: [-1, 1]), unbounded otherwise. A difference's interval
    is clipped to it: intersecting an interval with the parameter space keeps its coverage."""
    lo, hi = METRIC_RANGE.get(metric, (None, None))
    if lo is None or hi is None:
        return None, None
    return lo - hi, hi - lo


def metric_intervals(replicates: dict[str, np.ndarray], estimates: dict, level: float) -> dict:
    """{metric: {'low', 'high', 'centre', 'contains_estimate'}}: each of :data:`INTERVAL_METRICS`'
    :func:`basic_interval` from its replicates and its estimate, clipped to the metric's
    :data:`METRIC_RANGE`; ``centre`` = 2 e - median(replicates), the bootstrap-bias-corrected estimate the
    basic interval is built around (clipped alike), and whether the interval holds the estimate e itself.

    The basic interval corrects for the bias the bootstrap sees: entropy scores of a finite set are biased
    low, and their percentile intervals covered the truth in 70-78% of simulated sets where these covered it
    in 90-93% (docs/scendi.md)."""
    out = {}
    for m in INTERVAL_METRICS:
        iv = basic_interval(replicates[m], estimates[m], level, bounds=METRIC_RANGE[m])
        lo_b, hi_b = METRIC_RANGE[m]
        centre = float(np.clip(2.0 * estimates[m] - np.nanmedian(replicates[m]), lo_b, hi_b))
        out[m] = iv | {"centre": centre, "contains_estimate": bool(iv["low"] <= estimates[m] <= iv["high"])}
    return out


#: above this share of bootstrap replicates without a value (the drawn prompts leave the debiased estimator no
#: residual degree of freedom), the intervals come from the leave-one-prompt-out jackknife instead
MAX_EMPTY_REPLICATES = 0.05
#: the jackknife needs this many distinct prompts (fewer: the basic bootstrap interval is used)
MIN_JACKKNIFE_PROMPTS = 5


def jackknife_intervals(groups: np.ndarray, estimate: Callable[..., dict], estimates: dict, level: float
                        ) -> tuple[dict, dict[str, np.ndarray]]:
    """{metric: {'low', 'high', 'centre', 'contains_estimate'}}: the delete-one-prompt jackknife interval
    centre +- t_{G-1} SE_jack, with the jackknife's bias-corrected centre G e - (G - 1) mean_g e_(g) and
    standard error SE_jack^2 = (G - 1) / G sum_g (e_(g) - mean)^2 (clipped to :data:`METRIC_RANGE`)
    (:func:`jackknife_interval`); and the replicates (row g: the g-th present prompt deleted)."""
    counts = jackknife_counts(groups)

    def deleted(rows, weights, groups_, b):  # a deletion that leaves too little to estimate has no value
        try:
            return estimate(rows, weights, groups_, b)
        except (InputError, OptionError):
            return dict.fromkeys(INTERVAL_METRICS, float("nan"))

    reps = bootstrap_replicates(groups, counts, deleted)
    out = {}
    for m in INTERVAL_METRICS:
        iv = jackknife_interval(reps[m], estimates[m], level, bounds=METRIC_RANGE[m])
        out[m] = iv | {"contains_estimate": bool(iv["low"] <= estimates[m] <= iv["high"])}
    return out, reps


def interval_method(requested: str, estimator: str) -> str:
    """'jackknife' or 'basic' for the ``interval`` option: 'auto' is the jackknife, but the basic bootstrap
    for the cross-fitted estimator (its folds are dealt afresh in each replicate, which makes the
    jackknife's spread, multiplied by G - 1, G-fold noisy)."""
    if requested != "auto":
        return requested
    return "basic" if estimator == "cross-fit" else "jackknife"


def prompt_intervals(groups: np.ndarray, counts: np.ndarray, estimate: Callable[..., dict], estimates: dict,
                     level: float, method: str = "basic") -> tuple[dict, dict | None, str]:
    """(intervals, replicates, method): ``method`` 'jackknife': :func:`jackknife_intervals`; 'basic': basic
    intervals of the prompt bootstrap, and when more than :data:`MAX_EMPTY_REPLICATES` of its replicates have
    no value, the jackknife's. The method returned starts with 'jackknife' when the jackknife was used."""
    if method == "jackknife" and len(np.unique(groups)) >= MIN_JACKKNIFE_PROMPTS:
        return (*jackknife_intervals(groups, estimate, estimates, level), "jackknife over prompts")
    reps = bootstrap_replicates(groups, counts, estimate)
    empty = float(np.mean(~np.isfinite(reps["model_share"])))
    if empty <= MAX_EMPTY_REPLICATES:
        return metric_intervals(reps, estimates, level), reps, "basic"
    return (*jackknife_intervals(groups, estimate, estimates, level),
            f"jackknife over prompts ({empty:.0%} of bootstrap replicates drew too few distinct "
            "prompts for the debiased estimator)")


def hold_estimates(intervals: dict, estimates: dict) -> dict:
    """Each interval widened to hold its estimate (:func:`~promptprism.stats.intervals.hold_estimate`):
    scendi_prompt 7.40 with [1.27, 3.95] was once reported; coverage can only rise (docs/scendi.md measures
    it per cell)."""
    return {m: hold_estimate(iv, estimates[m]) for m, iv in intervals.items()}


def interval_notes(intervals: dict, estimates: dict) -> list[str]:
    """One line per interval that excludes its own estimate, naming both numbers and why (the basic interval
    is centred on the bias-corrected estimate, :func:`metric_intervals`), and one per interval
    :func:`hold_estimates` widened to hold it visibly (at the 4 significant digits printed: the entropy's
    clamp of zero eigenvalues moves a score of 1 by ~1e-9 per eigenvalue, and "[1, 1] left out 1 and was
    widened to [1, 1]" is no news; ``widened_from`` keeps every widening)."""
    notes = []
    for m, iv in intervals.items():
        if iv.get("widened_from") and m in estimates:
            lo, hi = iv["widened_from"]
            e = float(estimates[m])
            if f"{min(lo, e):.4g} {max(hi, e):.4g}" == f"{lo:.4g} {hi:.4g}":  # not visible as printed
                continue
            centre = iv.get("centre", float("nan"))
            notes.append(f"{m}: its interval [{lo:.4g}, {hi:.4g}] (around the bias-corrected value "
                         f"{centre:.4g}) left out the estimate {estimates[m]:.4g} and "
                         f"was widened to [{iv['low']:.4g}, {iv['high']:.4g}]: resampling the prompts finds "
                         "the estimate biased by about the distance between the two")
        elif not iv.get("contains_estimate", True):
            notes.append(f"{m} = {estimates[m]:.4g} lies outside its interval [{iv['low']:.4g}, "
                         f"{iv['high']:.4g}]: resampling the prompts finds the estimate biased (its "
                         "replicates shift away from it), so the interval is built around the bias-corrected "
                         f"value {iv['centre']:.4g} (what a larger set would give, not this set's number)")
    return notes


def compare_models(names: list[str], points: list[dict], replicates: list[dict[str, np.ndarray]] | None,
                   intervals: list[dict], *, level: float,
                   metrics: tuple[str, ...] = ("scendi", "model_share"), jackknife: bool = False,
                   pivots: list[dict] | None = None) -> list[dict]:
    """Pairwise differences a - b of each metric, and whether they exceed the sampling noise.

    ``pivots``: the estimates the replicates belong to, when ``points`` were clipped to their ranges
    (:mod:`.ranges`): the paired intervals are built around their difference (default: ``points``).

    With ``replicates`` from the same prompt draws for every model (the models answered the same prompts),
    the difference's own basic interval is used (paired bootstrap; ``separated`` when it excludes 0); with
    ``jackknife`` replicates (the same prompt deleted in row g for every model) its jackknife interval.
    Otherwise the models' intervals are compared (``separated`` when they do not overlap; conservative).
    A paired interval is hulled with itself moved around the estimate (:func:`.resampling.estimate_hull`:
    two same-distribution models on 10 prompts read 0.72 with a bias-corrected [2.17, 7.47], "separated"),
    then intersected with the difference's range (:func:`difference_range`: [-1, 1] for the
    shares; cut, not moved, it keeps its coverage).
    A pair where either value is not a number (no output diversity: the shares are undefined) has no row.
    """
    out = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            for m in metrics:
                if not (np.isfinite(points[i][m]) and np.isfinite(points[j][m])):
                    continue
                d = float(points[i][m] - points[j][m])
                row = {"a": names[i], "b": names[j], "metric": m, "difference": d}
                if replicates is not None:
                    diff = replicates[i][m] - replicates[j][m]
                    e = d if pivots is None else float(pivots[i][m] - pivots[j][m])
                    iv = jackknife_interval(diff, e, level) if jackknife else basic_interval(diff, e, level)
                    centre = iv["centre"] if jackknife else 2.0 * e - float(np.nanmedian(diff))
                    low, high = intersect_interval(*estimate_hull(iv["low"], iv["high"], centre, d),
                                                   difference_range(m))
                    row.update(low=low, high=high, separated=bool(low > 0 or high < 0),
                               method="paired jackknife" if jackknife else "paired bootstrap")
                else:  # (two intervals in the metric's range: their difference lies in the difference's)
                    a, b = intervals[i][m], intervals[j][m]
                    low, high = a["low"] - b["high"], a["high"] - b["low"]
                    row.update(low=low, high=high,
                               separated=bool(a["low"] > b["high"] or b["low"] > a["high"]),
                               method="interval overlap")
                out.append(row)
    return out


__all__ = ["INTERVAL_METRICS", "METRIC_RANGE", "basic_interval", "bootstrap_replicates",
           "check_bootstrap_memory", "compare_models", "difference_range", "hold_estimates",
           "interval_method", "interval_notes", "jackknife_interval", "jackknife_intervals", "prompt_draws",
           "prompt_intervals"]

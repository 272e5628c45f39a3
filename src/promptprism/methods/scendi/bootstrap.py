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

from ..._validation import check_interval, check_memory
from ...errors import InputError, OptionError

#: the scores given an interval (result.json ``intervals`` keys)
INTERVAL_METRICS = ("scendi", "scendi_prompt", "vendi", "rke", "model_share", "prompt_share")


def check_bootstrap(replicates: int, level: float) -> None:
    """Validate the ``bootstrap`` replicate count (>= 0) and the ``confidence`` level (in (0, 1))."""
    if isinstance(replicates, bool) or not isinstance(replicates, (int, np.integer)) or replicates < 0:
        raise OptionError(f"bootstrap must be an integer >= 0 (0 turns it off), got {replicates!r}")
    if 0 < replicates < 20:
        raise OptionError(f"bootstrap must be 0 (off) or at least 20 replicates for a 95% interval to mean "
                          f"anything, got {replicates}")
    check_interval(level, 0.0, 1.0, parameter="confidence")


def check_bootstrap_memory(replicates: int, *, rows: int, groups: int = 0) -> None:
    """Refuse, before anything is computed, a bootstrap whose draws cannot fit in memory: per replicate 16
    bytes per prompt (its draws, counted: int64) and per row (its multiplicity, int64 then float64)."""
    if replicates:
        check_memory(16.0 * float(replicates) * (int(groups) + int(rows)),
                     what=f"bootstrap {replicates} ({replicates:,} replicates over {rows:,} rows)",
                     parameter="bootstrap")


def prompt_draws(n_groups: int, replicates: int, seed: int) -> np.ndarray:
    """(replicates, n_groups) counts: how often each prompt is drawn in each replicate (seeded).

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


def bootstrap_replicates(groups: np.ndarray, counts: np.ndarray, estimate: Callable[..., dict]
                         ) -> dict[str, np.ndarray]:
    """Each metric's value in each replicate: ``counts[b, g]`` copies of prompt g's rows in replicate b.

    ``estimate(rows, weights, groups, b)`` returns the score table of the distinct ``rows`` drawn, weighted
    by their multiplicities (normalised to sum 1): duplicating a row and doubling its weight give the same
    covariances.
    """
    out: dict[str, list[float]] = {m: [] for m in INTERVAL_METRICS}
    for b, row_counts in enumerate(counts):
        mult = row_counts[groups]
        rows = np.flatnonzero(mult > 0)
        scores = estimate(rows, mult[rows] / mult[rows].sum(), groups[rows], b)
        for m in INTERVAL_METRICS:
            out[m].append(scores[m])
    return {m: np.asarray(v) for m, v in out.items()}


def percentile_interval(values: np.ndarray, level: float) -> dict:
    """{'low', 'high'}: the (1 - level) / 2 and (1 + level) / 2 quantiles of the replicates (NaN ones, where a
    replicate has no value, left out)."""
    lo, hi = np.nanquantile(np.asarray(values, dtype=np.float64), [(1 - level) / 2, (1 + level) / 2])
    return {"low": float(lo), "high": float(hi)}


#: the range each metric can take: intervals are clipped to it
METRIC_RANGE = {"scendi": (1.0, None), "scendi_prompt": (1.0, None), "vendi": (1.0, None), "rke": (1.0, None),
                "model_share": (0.0, 1.0), "prompt_share": (0.0, 1.0)}


def basic_interval(values: np.ndarray, estimate: float, level: float, *,
                   bounds: tuple[float | None, float | None] = (None, None)) -> dict:
    """{'low', 'high'}: the basic (pivotal) bootstrap interval [2 e - q_hi, 2 e - q_lo], clipped to
    ``bounds``, with q_lo, q_hi the (1 -+ level) / 2 quantiles of the replicates and e the estimate.

    It corrects for the estimator's bias as the bootstrap sees it (the replicates' shift from e mirrors the
    estimate's shift from the truth): entropy scores of a finite set are biased low, and their percentile
    intervals covered the truth in 70-78% of simulated sets where these covered it in 90-93% (docs/scendi.md).
    Like the percentile interval, it contains e exactly when q_lo <= e <= q_hi.
    """
    q = percentile_interval(values, level)
    low, high = 2.0 * estimate - q["high"], 2.0 * estimate - q["low"]
    lo_b, hi_b = bounds
    if lo_b is not None:
        low, high = max(low, lo_b), max(high, lo_b)
    if hi_b is not None:
        low, high = min(low, hi_b), min(high, hi_b)
    return {"low": float(low), "high": float(high)}


def metric_intervals(replicates: dict[str, np.ndarray], estimates: dict, level: float) -> dict:
    """{metric: {'low', 'high', 'centre', 'contains_estimate'}}: each of :data:`INTERVAL_METRICS`'
    :func:`basic_interval` from its replicates and its estimate, clipped to the metric's
    :data:`METRIC_RANGE`; ``centre`` = 2 e - median(replicates), the bootstrap-bias-corrected estimate the
    basic interval is built around (clipped alike), and whether the interval holds the estimate e itself."""
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


def jackknife_interval(values: np.ndarray, estimate: float, level: float, *,
                       bounds: tuple[float | None, float | None] = (None, None)) -> dict:
    """{'low', 'high', 'centre'}: centre +- t_{G-1} SE_jack from the delete-one-prompt values (NaN ones left
    out): centre = G e - (G - 1) mean_g e_(g) (the jackknife's bias correction), SE_jack^2 =
    (G - 1) / G sum_g (e_(g) - mean)^2; clipped to ``bounds``."""
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


def jackknife_intervals(groups: np.ndarray, estimate: Callable[..., dict], estimates: dict, level: float
                        ) -> tuple[dict, dict[str, np.ndarray]]:
    """{metric: {'low', 'high', 'centre', 'contains_estimate'}}: the delete-one-prompt jackknife interval
    centre +- t_{G-1} SE_jack, with the jackknife's bias-corrected centre G e - (G - 1) mean_g e_(g) and
    standard error SE_jack^2 = (G - 1) / G sum_g (e_(g) - mean)^2 (clipped to :data:`METRIC_RANGE`)
    (:func:`jackknife_interval`); and the replicates (row g: the g-th present prompt deleted)."""
    labels = np.unique(groups)
    counts = np.ones((len(labels), int(np.max(groups)) + 1), dtype=np.int64)
    counts[np.arange(len(labels)), labels] = 0
    absent = np.setdiff1d(np.arange(counts.shape[1]), labels)
    counts[:, absent] = 0

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
    """Each interval widened to hold its estimate: [min(low, e), max(high, e)], with ``widened_from`` the
    interval before (when it excluded e) and ``contains_estimate`` True.

    The jackknife and basic intervals are built around a bias-corrected centre; where that correction is
    larger than the interval's half-width the interval excluded the estimate (scendi_prompt 7.40 with
    [1.27, 3.95] was reported). The hull keeps the corrected side and adds the estimate's: it covers whenever
    the interval did (coverage can only rise; docs/scendi.md measures it per cell) and never contradicts the
    printed number."""
    out = {}
    for m, iv in intervals.items():
        e = float(estimates[m])
        new = dict(iv)
        if not iv["low"] <= e <= iv["high"]:
            new["widened_from"] = [float(iv["low"]), float(iv["high"])]
            new["low"], new["high"] = float(min(iv["low"], e)), float(max(iv["high"], e))
        new["contains_estimate"] = True
        out[m] = new
    return out


def interval_notes(intervals: dict, estimates: dict) -> list[str]:
    """One line per interval that excludes its own estimate, naming both numbers and why (the basic interval
    is centred on the bias-corrected estimate, :func:`metric_intervals`), and one per interval
    :func:`hold_estimates` widened to hold it."""
    notes = []
    for m, iv in intervals.items():
        if iv.get("widened_from") and m in estimates:
            lo, hi = iv["widened_from"]
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
    """
    out = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            for m in metrics:
                d = float(points[i][m] - points[j][m])
                row = {"a": names[i], "b": names[j], "metric": m, "difference": d}
                if replicates is not None:
                    diff = replicates[i][m] - replicates[j][m]
                    e = d if pivots is None else float(pivots[i][m] - pivots[j][m])
                    iv = jackknife_interval(diff, e, level) if jackknife else basic_interval(diff, e, level)
                    row.update(low=iv["low"], high=iv["high"],
                               separated=bool(iv["low"] > 0 or iv["high"] < 0),
                               method="paired jackknife" if jackknife else "paired bootstrap")
                else:
                    a, b = intervals[i][m], intervals[j][m]
                    row.update(low=float(a["low"] - b["high"]), high=float(a["high"] - b["low"]),
                               separated=bool(a["low"] > b["high"] or b["low"] > a["high"]),
                               method="interval overlap")
                out.append(row)
    return out


__all__ = ["INTERVAL_METRICS", "METRIC_RANGE", "basic_interval", "bootstrap_replicates", "check_bootstrap",
           "check_bootstrap_memory", "compare_models", "hold_estimates", "interval_method", "interval_notes",
           "jackknife_interval", "jackknife_intervals", "percentile_interval", "prompt_draws",
           "prompt_intervals"]

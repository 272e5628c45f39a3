"""Candidate interval methods for Scendi's scores, computed from one fit's jackknife and bootstrap replicates.

benchmarks/scendi_coverage.py ``--methods`` judges each on the same simulated sets: the library's default
(``default``: whatever ``Scendi`` prints), and from the delete-one-prompt jackknife values e_(g) and the
prompt bootstrap's replicates e*_b of the same fit:

* ``jackknife``: the bias-corrected centre G e - (G - 1) mean e_(g) +- t_{G-1} SE_jack;
* ``jackknife-e``: the plug-in e +- t_{G-1} SE_jack (no bias correction);
* ``basic``: [2 e - q_hi, 2 e - q_lo] of the bootstrap replicates; ``percentile``: [q_lo, q_hi];
* ``bca``: Efron's bias-corrected and accelerated percentile interval (z0 from the share of replicates
  below e, the acceleration from the jackknife values' skewness);
* ``<method>+e``: the hull of the interval and the estimate (never excludes it; covers at least as often).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student

METHODS = ("default", "jackknife", "jackknife-e", "basic", "percentile", "bca", "jackknife+e", "bca+e")


def jackknife_pair(values: np.ndarray, estimate: float, level: float) -> dict[str, tuple[float, float]]:
    """'jackknife' (bias-corrected centre) and 'jackknife-e' (centred on e) intervals, unclipped."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    g = len(v)
    se = float(np.sqrt((g - 1) / g * np.sum((v - v.mean()) ** 2)))
    q = float(student.ppf(0.5 + level / 2, g - 1))
    centre = g * estimate - (g - 1) * v.mean()
    return {"jackknife": (centre - q * se, centre + q * se),
            "jackknife-e": (estimate - q * se, estimate + q * se)}


def bca(boot: np.ndarray, jack: np.ndarray, estimate: float, level: float) -> tuple[float, float]:
    """Efron's BCa interval: quantiles Phi(z0 + (z0 + z) / (1 - a (z0 + z))) of the replicates, z the
    normal quantiles of the level, z0 = Phi^-1(share of replicates below e, ties counted half), a = sum d^3 /
    (6 (sum d^2)^1.5) with d = mean(e_(g)) - e_(g)."""
    b = np.asarray(boot, dtype=np.float64)
    b = b[np.isfinite(b)]
    j = np.asarray(jack, dtype=np.float64)
    j = j[np.isfinite(j)]
    share = (np.sum(b < estimate) + 0.5 * np.sum(b == estimate)) / len(b)
    z0 = float(norm.ppf(np.clip(share, 0.5 / len(b), 1 - 0.5 / len(b))))
    d = j.mean() - j
    den = 6.0 * float(np.sum(d * d)) ** 1.5
    a = float(np.sum(d ** 3)) / den if den > 0 else 0.0
    out = []
    for z in norm.ppf([(1 - level) / 2, (1 + level) / 2]):
        out.append(float(np.quantile(b, norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))))))
    return out[0], out[1]


def candidates(estimate: float, jack: np.ndarray, boot: np.ndarray, level: float) -> dict[str, tuple]:
    """Every method of :data:`METHODS` but 'default': {method: (low, high)} (NaN where it has no value)."""
    out = jackknife_pair(jack, estimate, level)
    b = np.asarray(boot, dtype=np.float64)
    b = b[np.isfinite(b)]
    if len(b) >= 20:
        lo, hi = np.quantile(b, [(1 - level) / 2, (1 + level) / 2])
        out["percentile"] = (float(lo), float(hi))
        out["basic"] = (2 * estimate - float(hi), 2 * estimate - float(lo))
        out["bca"] = bca(b, jack, estimate, level)
    else:
        out.update(dict.fromkeys(("percentile", "basic", "bca"), (np.nan, np.nan)))
    for m in ("jackknife", "bca"):
        lo, hi = out[m]
        out[m + "+e"] = (min(lo, estimate), max(hi, estimate))
    return out

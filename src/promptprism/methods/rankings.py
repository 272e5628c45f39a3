"""Rankings with honest ties of several models' results (:mod:`promptprism.stats.ranking`), built from the
uncertainty the results already carry: Scendi's pairwise differences (paired bootstrap) and intervals, and
the CMS intervals of ``regions`` across generated sets (checkpoints)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..stats.ranking import intervals_separated, ranking

#: Scendi metrics ranked, the most diverse (or most model-driven) first
DIVERSITY_METRICS = ("scendi", "scendi_prompt", "vendi", "rke", "model_share")


def _separated_by_differences(names: list[str], differences: list, metric: str
                              ) -> tuple[np.ndarray, str] | None:
    rows = [d for d in differences if isinstance(d, dict) and d.get("metric") == metric]
    if not rows:
        return None
    index = {n: i for i, n in enumerate(names)}
    sep = np.zeros((len(names), len(names)), dtype=bool)
    for d in rows:
        i, j = index[d["a"]], index[d["b"]]
        sep[i, j] = sep[j, i] = bool(d["separated"])
    return sep, str(rows[0].get("method", "the pairwise test"))


def _separated_by_intervals(intervals: list, key: str) -> tuple[np.ndarray, str] | None:
    ivs = [iv.get(key) if isinstance(iv, dict) else None for iv in intervals]
    if not ivs or any(not isinstance(iv, dict) for iv in ivs):
        return None
    return intervals_separated([iv["low"] for iv in ivs], [iv["high"] for iv in ivs]), "interval overlap"


def diversity_rankings(comparison: Any) -> dict[str, dict]:
    """Per Scendi metric, the models ranked most diverse first, tied where the paired bootstrap of their
    difference (or, without one, their intervals) does not separate them; metrics without any uncertainty
    are left out (a ranking of bare numbers would claim more than they show)."""
    out = {}
    for metric in DIVERSITY_METRICS:
        models = [m for m in comparison.models if _defined(getattr(m, metric))]  # (an undefined share: out)
        names = [m.name for m in models]
        found = (_separated_by_differences(names, list(comparison.differences or []), metric)
                 or _separated_by_intervals([m.intervals for m in models], metric))
        if found is None or len(models) < 2:
            continue
        out[metric] = ranking(names, [float(getattr(m, metric)) for m in models], found[0], metric=metric,
                              basis=found[1])
    return out


def _defined(value: Any) -> bool:
    """Whether a model's value is a number to rank (not None, not NaN)."""
    return value is not None and bool(np.isfinite(float(value)))


def regions_ranking(result: Any) -> dict:
    """The generated sets ranked by CMS to the real images (higher first), tied where their bootstrap
    intervals overlap; {} without intervals or with fewer than two sets."""
    names = [str(n) for n in result.names]
    found = _separated_by_intervals(list(result.intervals or []), "cms")
    if found is None or len(names) < 2:
        return {}
    return ranking(names, [float(v) for v in result.cms], found[0], metric="CMS", basis=found[1])

"""Rankings whose ties are honest: models that no interval or paired test separates share a rank.

rank(k) = 1 + #{j : j scores better than k and (j, k) are separated} (competition ranking over the separated
pairs only), so a model is placed below exactly the models shown to beat it. "Separated" is whatever the
caller's uncertainty supports: a paired test (a paired-bootstrap interval of the difference excluding 0) or
non-overlapping intervals (conservative).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def intervals_separated(lows: Sequence[float], highs: Sequence[float]) -> np.ndarray:
    """K x K booleans: intervals i and j do not overlap."""
    lo, hi = np.asarray(lows, float), np.asarray(highs, float)
    return (lo[:, None] > hi[None, :]) | (lo[None, :] > hi[:, None])


def tied_ranks(values: Sequence[float], separated: np.ndarray, *, higher_is_better: bool = True,
               ahead: np.ndarray | None = None) -> list[int]:
    """rank(k) = 1 + #{j better than k with (j, k) separated}: ties wherever nothing separates. ``ahead``
    (K x K booleans, j ahead of k): which of a pair is better, where the pair's own test compared them on
    other data than the values (e.g. on the prompts that pair holds); default, the larger value."""
    v = np.asarray(values, float) * (1.0 if higher_is_better else -1.0)
    sep = np.asarray(separated, bool)
    better = v[:, None] > v[None, :] if ahead is None else np.asarray(ahead, bool)
    return [1 + int(np.sum(better[:, k] & sep[:, k])) for k in range(v.size)]


def ranking(names: Sequence[str], values: Sequence[float], separated: np.ndarray, *, metric: str,
            basis: str, higher_is_better: bool = True, ahead: np.ndarray | None = None) -> dict:
    """{'metric', 'basis', 'order', 'rows', 'words'}: per model its value, rank and the models it is not
    separated from; ``words`` says the ranking and its ties in one sentence (``ahead``: as
    :func:`tied_ranks`)."""
    ranks = tied_ranks(values, separated, higher_is_better=higher_is_better, ahead=ahead)
    sep = np.asarray(separated, bool)
    sign = 1.0 if higher_is_better else -1.0
    order = sorted(range(len(names)), key=lambda k: (ranks[k], -sign * float(values[k])))
    rows = [{"name": names[k], "value": float(values[k]), "rank": ranks[k],
             "not_separated_from": [names[j] for j in order if j != k and not sep[j, k]]} for k in order]
    groups: dict[int, list[str]] = {}
    for row in rows:
        groups.setdefault(row["rank"], []).append(row["name"])
    parts = [f"{g[0]} ranks {r}" if len(g) == 1 else f"{', '.join(g[:-1])} and {g[-1]} share rank {r}"
             for r, g in groups.items()]
    direction = "higher" if higher_is_better else "lower"
    words = (f"{metric} ({direction} is ranked first; ties where {basis} does not separate): "
             + "; ".join(parts))
    loose = [f"{row['name']} is not separated from {', '.join(row['not_separated_from'])}" for row in rows
             if any(n not in groups[row["rank"]] for n in row["not_separated_from"])]
    if loose:
        words += " (" + "; ".join(loose) + ")"
    return {"metric": metric, "basis": basis, "higher_is_better": higher_is_better, "rows": rows,
            "words": words}

"""Held-out verification of a description: does a judge say it applies more often to one side than the other?

A candidate description ``d`` of "what side A does that side B doesn't" is tested on samples the namer never
saw. A judge decides, for each held-out sample, whether ``d`` applies (True/False). With ``a`` of the ``n_a``
side-A samples and ``b`` of the ``n_b`` side-B samples judged to match, the one-sided exact test of
H0: P(applies | A) <= P(applies | B) is Fisher's exact test on the 2 x 2 table [[a, n_a - a], [b, n_b - b]]
(conditional on the margins, valid at any sample size, so a judge that answers "yes" to everything, or at
random, is rejected at rate <= alpha). Several candidates per finding are tested at once: Holm's step-down
adjustment keeps the family-wise error over them at alpha.

The accuracy reported is the judge's accuracy as a classifier of the side, ``(a + n_b - b) / (n_a + n_b)``,
with a Wilson interval; it is 0.5 for a judge that cannot tell the sides apart on balanced data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..._validation import check_interval, check_seed
from ...errors import OptionError


@dataclass(frozen=True)
class Separation:
    """How well one description separates held-out samples of side A from side B."""

    matches_a: int  #: side-A samples the judge says the description applies to
    n_a: int
    matches_b: int  #: side-B samples the judge says it applies to
    n_b: int
    accuracy: float  #: (matches_a + n_b - matches_b) / (n_a + n_b)
    interval: tuple[float, float]  #: Wilson interval of the accuracy at ``level``
    p_value: float  #: one-sided Fisher exact test: applies more often to A than to B
    level: float


def separation(applies_a: Sequence[bool], applies_b: Sequence[bool], *, level: float = 0.95) -> Separation:
    """The 2 x 2 table of a judge's decisions on held-out samples, its accuracy and Fisher's exact p-value."""
    from scipy.stats import binomtest, fisher_exact

    a, b = np.asarray(applies_a, dtype=bool), np.asarray(applies_b, dtype=bool)
    if a.size == 0 or b.size == 0:
        raise OptionError("separation needs held-out samples of both sides, got "
                          f"{a.size} of side A and {b.size} of side B")
    ka, kb = int(a.sum()), int(b.sum())
    correct, total = ka + (b.size - kb), a.size + b.size
    ci = binomtest(correct, total).proportion_ci(confidence_level=level, method="wilson")
    p = float(fisher_exact([[ka, a.size - ka], [kb, b.size - kb]], alternative="greater").pvalue)
    return Separation(matches_a=ka, n_a=int(a.size), matches_b=kb, n_b=int(b.size),
                      accuracy=correct / total, interval=(float(ci.low), float(ci.high)),
                      p_value=min(1.0, p), level=level)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error over the candidates, any dependence)."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    k = p.size
    adjusted = np.empty(k)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (k - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


def held_out_split(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(shown, held_out)`` of ``n`` samples: a seeded ``fraction`` goes to the namer, the rest is
    held out for the judge (never shown to the namer)."""
    check_interval(fraction, 0.0, 1.0, parameter="shown_fraction")
    rng = np.random.default_rng(check_seed(seed))
    order = rng.permutation(n)
    k = int(round(n * fraction))
    return np.sort(order[:k]), np.sort(order[k:])

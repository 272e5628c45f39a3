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

A judge that returns a *score* per sample (how strongly the description applies, e.g. a log-probability)
is tested by rank instead (:func:`rank_separation`): the Mann-Whitney statistic U of side A's scores
over side B's, reported as the AUC ``U / (n_a n_b)`` (the probability that a random A sample outscores a
random B one, ties counting 1/2) with the Hanley & McNeil (1982) interval, and a one-sided permutation
p-value (H0: the scores are exchangeable between the sides), ``(1 + #{U_perm >= U}) / (1 + permutations)``
over seeded relabellings. A constant score gives every relabelling the observed U, so p = 1: a judge that
says the same for everything is never accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..._validation import check_interval, check_seed
from ...errors import OptionError
from ...stats.preference import wilson_interval


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
    from scipy.stats import fisher_exact

    a, b = np.asarray(applies_a, dtype=bool), np.asarray(applies_b, dtype=bool)
    if a.size == 0 or b.size == 0:
        raise OptionError("separation needs held-out samples of both sides, got "
                          f"{a.size} of side A and {b.size} of side B")
    ka, kb = int(a.sum()), int(b.sum())
    correct, total = ka + (b.size - kb), a.size + b.size
    ci = wilson_interval(correct, total, level)
    p = float(fisher_exact([[ka, a.size - ka], [kb, b.size - kb]], alternative="greater").pvalue)
    return Separation(matches_a=ka, n_a=int(a.size), matches_b=kb, n_b=int(b.size),
                      accuracy=correct / total, interval=(float(ci[0]), float(ci[1])),
                      p_value=min(1.0, p), level=level)


@dataclass(frozen=True)
class RankSeparation:
    """How well one description's scores rank held-out samples of side A above side B's."""

    n_a: int
    n_b: int
    mean_a: float  #: mean score of side A's held-out samples
    mean_b: float
    accuracy: float  #: the AUC, U / (n_a n_b)
    interval: tuple[float, float]  #: Hanley-McNeil interval of the AUC at ``level`` (clipped to [0, 1])
    p_value: float  #: one-sided permutation p-value of U
    permutations: int
    level: float
    statistic: str = "auc"


def auc_interval(auc: float, n_a: int, n_b: int, level: float) -> tuple[float, float]:
    """The normal interval of an AUC with Hanley & McNeil's (1982, eq. 2) standard error."""
    from scipy.stats import norm

    q1, q2 = auc / (2 - auc), 2 * auc ** 2 / (1 + auc)
    var = (auc * (1 - auc) + (n_a - 1) * (q1 - auc ** 2) + (n_b - 1) * (q2 - auc ** 2)) / (n_a * n_b)
    half = float(norm.ppf(0.5 + level / 2)) * float(np.sqrt(max(var, 0.0)))
    return max(0.0, auc - half), min(1.0, auc + half)


def rank_separation(scores_a: Sequence[float], scores_b: Sequence[float], *, seed: int,
                    permutations: int = 9999, level: float = 0.95) -> RankSeparation:
    """Mann-Whitney U of A's scores over B's as an AUC, its interval and a seeded one-sided permutation
    p-value (module docstring)."""
    from scipy.stats import rankdata

    a, b = np.asarray(scores_a, dtype=np.float64), np.asarray(scores_b, dtype=np.float64)
    if a.size == 0 or b.size == 0:
        raise OptionError("rank_separation needs held-out scores of both sides, got "
                          f"{a.size} of side A and {b.size} of side B")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise OptionError("rank_separation needs finite scores")
    if int(permutations) != permutations or permutations < 1:
        raise OptionError(f"permutations must be an integer >= 1, got {permutations!r}")
    na, nb = a.size, b.size
    ranks = rankdata(np.concatenate([a, b]))
    u = float(ranks[:na].sum() - na * (na + 1) / 2)
    rng = np.random.default_rng(check_seed(seed))
    draws = np.argsort(rng.random((int(permutations), na + nb)), axis=1)[:, :na]
    u_perm = ranks[draws].sum(axis=1) - na * (na + 1) / 2
    p = (1.0 + float(np.sum(u_perm >= u - 1e-9))) / (1.0 + permutations)
    auc = u / (na * nb)
    return RankSeparation(n_a=na, n_b=nb, mean_a=float(a.mean()), mean_b=float(b.mean()), accuracy=auc,
                          interval=auc_interval(auc, na, nb, level), p_value=p,
                          permutations=int(permutations), level=level)


def held_out_split(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(shown, held_out)`` of ``n`` samples: a seeded ``fraction`` goes to the namer, the rest is
    held out for the judge (never shown to the namer)."""
    check_interval(fraction, 0.0, 1.0, parameter="shown_fraction")
    rng = np.random.default_rng(check_seed(seed))
    order = rng.permutation(n)
    k = int(round(n * fraction))
    return np.sort(order[:k]), np.sort(order[k:])

"""FD's bootstrap interval on two sets of the same prompts resamples the prompts once for both: drawn apart,
each replicate compared two prompt mixtures and the basic interval fell to [0, 0] on every data set (then
widened to [0, FD], which says nothing). Checked for coverage of the known population FD."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.methods.metrics.frechet import frechet_distance_from_moments
from promptprism.methods.metrics.intervals import frechet_bootstrap, shared_prompts
from promptprism.stats.moments import weighted_moments

G, R, D = 60, 8, 8


def _pair(rng, w):
    pe = np.repeat(rng.standard_normal((G, D)), R, axis=0)
    labels = np.repeat(np.arange(G), R)
    return pe @ w + rng.standard_normal((G * R, D)), pe @ w + 0.5 * rng.standard_normal((G * R, D)), labels


def test_shared_prompts_needs_the_same_prompts_and_two_of_them():
    assert shared_prompts(np.array([1, 2, 2]), np.array([2, 1]))
    assert not shared_prompts(np.array([1, 2]), np.array([1, 3]))
    assert not shared_prompts(np.array([1, 1]), np.array([1]))
    assert not shared_prompts(None, np.array([1, 2]))


@pytest.mark.slow
def test_the_interval_on_shared_prompts_covers_the_population_fd():
    """40 data sets (60 prompts x 8 rows, d = 8, prompts explain most of the spread; truth from the model's
    covariances): coverage near the level, and no interval collapsed to [0, 0] (before: 0 of 25 covered)."""
    w = np.random.default_rng(123).standard_normal((D, D))
    lam = np.linalg.eigvalsh(w.T @ w)
    truth = float(np.sum((np.sqrt(lam + 1.0) - np.sqrt(lam + 0.25)) ** 2))
    covered, collapsed = 0, 0
    for rep in range(40):
        x, y, labels = _pair(np.random.default_rng(rep), w)
        fd = frechet_distance_from_moments(*weighted_moments(x, np.ones(len(x))),
                                           *weighted_moments(y, np.ones(len(y))))
        iv = frechet_bootstrap(x, y, estimate=fd, replicates=200, level=0.95, seed=rep,
                               groups=(labels, labels))
        covered += iv["low"] <= truth <= iv["high"]
        collapsed += iv["high"] <= 0.0
    assert collapsed == 0
    assert covered >= 34  # (0.85 of 40: binomial 0.95 gives fewer than 34 with probability < 0.3 %)

"""The reference-metrics coverage harness (benchmarks/metrics_coverage.py): its truths are right and its
table measures what it says. The full grid (200 sets per cell) runs in the benchmark."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import metrics_coverage as harness  # noqa: E402

from promptprism.kernels import kernel_gram, polynomial_gram  # noqa: E402
from promptprism.methods.metrics import frechet_distance  # noqa: E402
from promptprism.methods.regions.two_sample import mmd2  # noqa: E402


@pytest.mark.parametrize("dim", [8, 64])
def test_population_values_match_large_samples(dim):
    """The closed forms (FD of two Gaussians, MMD^2 under the cubic and the gaussian kernel) against the
    estimates on 2,000 + 2,000 fresh rows (KID and MMD^2 unbiased: within 4 of their standard errors), in
    the grid's 8 dimensions and the ``hi-d64`` cells' 64."""
    truth = harness.population(dim)
    rng = np.random.default_rng(5)
    _, x = harness.draw("generated", 2000, 1, rng, dim)
    _, y = harness.draw("reference", 2000, 1, rng, dim)
    assert x.shape == (2000, dim)
    assert frechet_distance(x, y) == pytest.approx(truth["fd"], rel=0.05)
    cubic = mmd2(polynomial_gram(x, y), polynomial_gram(x, None), polynomial_gram(y, None), unbiased=True)
    assert cubic == pytest.approx(truth["kid"], rel=0.1)

    def gauss(a, b=None):
        return kernel_gram("gaussian", a, b, sigma=harness.MMD_SIGMA)

    assert mmd2(gauss(x, y), gauss(x), gauss(y), unbiased=True) == pytest.approx(truth["mmd2"], rel=0.1)


@pytest.mark.slow
def test_a_slice_of_the_grid_measures_coverage():
    """20 sets of the smallest cell (40 prompts x 5): every printed interval is judged, and each covers its
    truth in most sets (the grid's 200 sets: 0.905-0.97)."""
    cell = harness.GRID[0]
    rows = {r["metric"]: r for r in harness.coverage_table([cell], n_sets=20, bootstrap=50, jobs=1)}
    assert set(rows) == set(harness.METRICS)
    for m, r in rows.items():
        assert r["coverage"] >= 0.75, (m, r)
        assert r["sets"] == 20 and np.isfinite(r["bias_over_se"])

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
from promptprism.methods.regions.estimators import mmd2  # noqa: E402


def test_population_values_match_large_samples():
    """The closed forms (FD of two Gaussians, MMD^2 under the cubic and the gaussian kernel) against the
    estimates on 2,000 + 2,000 fresh rows (KID and MMD^2 unbiased: within 4 of their standard errors)."""
    truth = harness.population()
    rng = np.random.default_rng(5)
    _, x = harness.draw("generated", 2000, 1, rng)
    _, y = harness.draw("reference", 2000, 1, rng)
    assert frechet_distance(x, y) == pytest.approx(truth["fd"], rel=0.05)
    cubic = mmd2(polynomial_gram(x, y), polynomial_gram(x, None), polynomial_gram(y, None), unbiased=True)
    assert cubic == pytest.approx(truth["kid"], rel=0.1)

    def gauss(a, b=None):
        return kernel_gram("gaussian", a, b, sigma=harness.MMD_SIGMA)

    assert mmd2(gauss(x, y), gauss(x), gauss(y), unbiased=True) == pytest.approx(truth["mmd2"], rel=0.1)


@pytest.mark.slow
def test_a_slice_of_the_grid_measures_coverage():
    """30 sets of the row cell: every printed interval is judged, the k-NN intervals cover their conditional
    truths in most sets and the KID interval its population value."""
    cell = next(c for c in harness.GRID if not c.clustered)
    rows = {r["metric"]: r for r in harness.coverage_table([cell], n_sets=30, bootstrap=50, jobs=1)}
    assert set(rows) == {"precision", "recall", "density", "coverage", "fd", "kid", "mmd2"}
    for m in ("precision", "recall", "density", "coverage", "kid", "mmd2"):
        assert rows[m]["coverage"] >= 0.75, (m, rows[m])
    assert abs(rows["kid"]["bias_over_se"]) < 0.6  # unbiased without prompt clusters

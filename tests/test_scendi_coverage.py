"""The simulation harness (benchmarks/scendi_coverage.py) on a slice of its grid: it measures what it says.

The full grid (200 sets per cell) runs in the benchmark; here 40 sets of one cell with 30-d prompts and one
output per prompt, where the in-sample Gamma* is known to be biased low (fitted degrees of freedom 30 of
120 prompts) and the debiased estimator is not.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import scendi_coverage as harness  # noqa: E402

pytestmark = [pytest.mark.slow]

CELL = next(c for c in harness.GRID if c.name == "text-hi-120x1")


@pytest.fixture(scope="module")
def rows():
    return harness.coverage_table([CELL], ("in-sample", "debiased"), n_sets=40, bootstrap=40, jobs=1)


def _row(rows, route, metric):
    return next(r for r in rows if r["route"] == route and r["metric"] == metric)


def test_population_values_are_a_proper_split():
    truth = harness.population(CELL, rows=100_000)
    assert truth["model_share"] + truth["prompt_share"] == pytest.approx(1.0, abs=1e-9)
    assert 1.0 <= truth["scendi"] <= truth["vendi"]


def test_the_harness_sees_the_in_sample_bias_and_the_debiased_estimator_removes_it(rows):
    ins, deb = _row(rows, "in-sample", "model_share"), _row(rows, "debiased", "model_share")
    assert ins["bias_over_se"] < -3  # measured over 200 sets: -6.5
    assert abs(deb["bias_over_se"]) < 0.6  # 40 sets: its Monte Carlo error is 1 / sqrt(40) = 0.16
    assert deb["coverage"] >= 0.85 and ins["mean"] < deb["mean"]
    assert {r["taken"] for r in rows if r["route"] == "debiased"} == {"debiased/jackknife"}
    assert "| text-hi-120x1 | debiased (debiased/jackknife) | model_share |" in harness.format_table(rows)

"""The CMS coverage harness (benchmarks/cms_coverage.py): its closed-form truths are right in 2 x 2 and in
8 x 8 images. The grid (200 sets per cell) runs in the benchmark; the table is in docs/regions.md."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import cms_coverage as harness  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("name", ["shift-n80", "hi-shift-n80"])
def test_truths_match_large_samples(name):
    """1,500 + 1,500 fresh images: every U-form estimate within 0.01 of the closed form (its sd at this size
    is about 0.004), and the regions labelled top half 0, bottom half 1."""
    cell = harness.GRID[[c.name for c in harness.GRID].index(name)]
    big = harness.Cell(cell.name, 1500, cell.shift, side=cell.side, gamma=cell.gamma)
    assert list(big.regions) == [0] * (big.side**2 // 2) + [1] * (big.side**2 // 2)
    est = harness.one_set(big, seed=3, bootstrap=20)
    for key, truth in harness.truths(big).items():
        assert est[key][0] == pytest.approx(truth, abs=0.01), (key, est[key], truth)
    assert harness.truths(big)["region 1"] < 0.95  # the shift is visible
    assert np.isfinite(est["cms"][1])

"""benchmarks/peers.py's extrapolation of prdc's time (t = c n^2): the fit recovers c and one point slowed by
load does not move it."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from peers import quadratic_fit  # noqa: E402


def test_quadratic_fit_recovers_c_and_slope_two():
    sizes = [10_000, 15_000, 20_000]
    c, spread, slope = quadratic_fit(sizes, [3e-7 * n**2 for n in sizes])
    assert np.isclose(c, 3e-7) and spread < 1e-12 and np.isclose(slope, 2.0)


def test_one_point_slowed_by_load_does_not_move_c():
    sizes = [10_000, 15_000, 20_000]
    times = [3e-7 * n**2 for n in sizes]
    times[1] *= 4.0  # a burst of load during the middle point
    c, spread, _ = quadratic_fit(sizes, times)
    assert np.isclose(c, 3e-7)
    assert np.isclose(spread, 3.0)  # the slowed point is reported 300 % off
    x = np.asarray(sizes, dtype=float)
    least_squares = np.sum(np.asarray(times) * x**2) / np.sum(x**4)
    assert least_squares > 1.5 * 3e-7  # what the earlier fit would have extrapolated from

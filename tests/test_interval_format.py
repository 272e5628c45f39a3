"""The one interval formatter: what it prints, and that it never prints an interval that says nothing or
contradicts its estimate."""

import math

import pytest

from promptprism.stats.intervals import Interval, format_estimate


def test_an_interval_that_holds_its_estimate_is_printed():
    assert format_estimate(0.5, {"low": 0.4, "high": 0.6}, ".2f") == "0.50 [0.40, 0.60]"
    assert format_estimate(0.5, (0.4, 0.6), ".2f", sep="\n") == "0.50\n[0.40, 0.60]"
    assert format_estimate(0.5, None, ".2f") == "0.50"
    assert format_estimate(1.0, {"low": 1.0, "high": 1.0}, ".1f") == "1.0 [1.0, 1.0]"  # a point, on it


@pytest.mark.parametrize("bounds", [(0.0, 0.0), (0.3, 0.2), (math.nan, 1.0), (0.0, math.inf)])
def test_a_degenerate_interval_is_not_printed(bounds):
    text = format_estimate(0.2099, bounds, ".4g")
    assert text == "0.2099 (no interval: degenerate)"


def test_an_interval_that_excludes_its_estimate_says_so():
    text = format_estimate(7.40, {"low": 1.27, "high": 3.95}, ".2f")
    assert text.startswith("7.40 (its interval [1.27, 3.95] excludes it: not a confidence interval")
    assert "[" not in format_estimate(7.4, {"low": 1.0, "high": 1.0}, ".1f")


def test_missing_values_and_shapes():
    assert format_estimate(None, {"low": 0, "high": 1}) == "–"
    assert format_estimate(math.nan, None, missing="-") == "-"
    expected = {"low": 1.0, "high": 2.0, "level": 0.95}
    assert Interval.of({"low": 1, "high": 2, "level": 0.95}).to_dict() == expected
    assert Interval.of("nonsense") is None and Interval.of({"low": 1}) is None
    assert Interval(0.0, 1.0).contains(1.0 + 1e-12) and not Interval(0.0, 1.0).contains(1.001)

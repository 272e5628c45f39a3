"""The one estimator shape (:mod:`promptprism._params`): constraints declared once, checked in one place."""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np
import pytest

from promptprism._params import (
    POSITIVE_INT,
    Estimator,
    Interval,
    Options,
    Rule,
    check_declared,
    describe_constraints,
    validate_params,
)
from promptprism.errors import OptionError

ODD = [0, -1, math.nan, math.inf, -math.inf, 1e308, 1e-308, True, "3", None]


@dataclasses.dataclass(frozen=True)
class Toy(Estimator):
    n_modes: int = 10
    eta: float = 1.0
    kernel: str = "gaussian"
    sigma: object = "median"
    seed: int = 0
    _parameter_constraints = {
        "n_modes": [POSITIVE_INT],
        "eta": [Interval(numbers.Real, 0, 1e6, closed="right")],
        "kernel": [Options(("gaussian", "cosine"))],
        "sigma": [Interval(numbers.Real, 0, None, closed="neither"),
                  Rule(r"(\d+(\.\d+)?\*)?median", "a rule")],
        "seed": ["seed"],
    }

    def _check_together(self) -> None:
        if self.kernel == "cosine" and self.sigma != "median":
            raise OptionError("sigma applies to the gaussian kernel only", parameter="sigma")


def _brute_interval(value, low, high, closed):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return False
    x = float(value)
    if x != x or x in (math.inf, -math.inf):
        return False
    lo_ok = x >= low if closed in ("left", "both") else x > low
    hi_ok = x <= high if closed in ("right", "both") else x < high
    return lo_ok and hi_ok


@pytest.mark.parametrize("closed", ["neither", "left", "right", "both"])
def test_interval_accepts_exactly_its_values(closed):
    c = Interval(numbers.Real, 0.0, 2.0, closed=closed)
    for v in [0, 0.0, 1, 2, 2.0, -1e-12, 2 + 1e-12, *ODD, np.float32(1.5), np.int64(1)]:
        assert c.accepts(v) == _brute_interval(v, 0.0, 2.0, closed), (v, closed)


def test_integer_interval_refuses_reals_and_booleans():
    assert POSITIVE_INT.accepts(3) and POSITIVE_INT.accepts(np.int64(3))
    assert not any(POSITIVE_INT.accepts(v) for v in (0, -1, 3.0, True, "3", None, math.inf))
    even = Interval(numbers.Integral, 2, None, even=True)
    assert even.accepts(4) and not even.accepts(5)


def test_every_odd_value_is_refused_in_one_line_naming_the_parameter():
    for v in ODD:
        with pytest.raises(OptionError) as info:
            Toy(n_modes=v)
        assert info.value.parameter == "n_modes"
        assert str(info.value).startswith("n_modes must be an integer >= 1, got ")
        assert "\n" not in str(info.value)


def test_several_constraints_one_of_which_must_hold():
    assert Toy(sigma=0.5).sigma == 0.5 and Toy(sigma="0.5*median").sigma == "0.5*median"
    with pytest.raises(OptionError, match=r"sigma must be a number > 0 or a rule, got 'mean'"):
        Toy(sigma="mean")
    with pytest.raises(OptionError, match="kernel must be one of 'gaussian', 'cosine', got 'rbf'"):
        Toy(kernel="rbf")
    with pytest.raises(OptionError, match="seed must be a non-negative integer"):
        Toy(seed=-1)


def test_rules_between_parameters_run_after_each_one_is_valid():
    with pytest.raises(OptionError) as info:
        Toy(kernel="cosine", sigma=2.0)
    assert info.value.parameter == "sigma"


def test_set_params_and_clone_return_new_checked_estimators():
    a = Toy(n_modes=3)
    b = a.set_params(n_modes=4, eta=2.0)
    assert (a.n_modes, b.n_modes, b.eta) == (3, 4, 2.0)  # a is unchanged
    assert a.clone() == a and a.clone() is not a
    with pytest.raises(OptionError, match="n_modes must be"):
        a.set_params(n_modes=0)
    with pytest.raises(OptionError, match="Toy has no parameter 'n_mode'") as info:
        a.set_params(n_mode=4)
    assert info.value.parameter == "n_mode"
    assert a.get_params() == {"n_modes": 3, "eta": 1.0, "kernel": "gaussian", "sigma": "median", "seed": 0}


def test_undeclared_parameters_are_listed():
    @dataclasses.dataclass(frozen=True)
    class Loose(Estimator):
        a: int = 1
        b: int = 2
        _parameter_constraints = {"a": [POSITIVE_INT]}

    assert check_declared(Loose) == ["b"]
    assert check_declared(Toy) == []


def test_validate_params_and_descriptions():
    validate_params({"x": [None, POSITIVE_INT]}, {"x": None, "y": "anything"})
    assert describe_constraints([POSITIVE_INT, None]) == "an integer >= 1 or None"
    assert describe_constraints([Interval(numbers.Real, None, None)]) == "a finite number"
    with pytest.raises(OptionError, match=r"x must be an integer >= 1 or None, got 0"):
        validate_params({"x": [POSITIVE_INT, None]}, {"x": 0})


def test_one_value_is_named_without_one_of():
    assert str(Options(("cv",))) == "'cv'"
    cv_or_number = [Options(("cv",)), Interval(numbers.Real, 0, None)]
    assert describe_constraints(cv_or_number) == "'cv' or a number >= 0"


def test_scikit_learn_clone_and_get_params_deep_work():
    from sklearn.base import clone

    import promptprism as pp
    from promptprism.methods.metrics import ReferenceMetrics

    for made in (pp.PromptSplit(eta=0.5, seed=3), pp.Scendi(bootstrap=20), ReferenceMetrics(nearest_k=3)):
        copy = clone(made)
        assert copy == made and copy is not made
        assert made.get_params(deep=True) == made.get_params(deep=False) == made.get_params()

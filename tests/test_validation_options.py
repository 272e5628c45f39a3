"""The one option gate: each check names the parameter in its message and carries it as data."""

import pickle

import numpy as np
import pytest

from promptprism._validation import (
    check_choice,
    check_interval,
    check_positive_number,
    check_precision,
    check_seed,
    chunks,
)
from promptprism.data.paired import PairedSet, as_paired_set
from promptprism.errors import InputError, OptionError


def test_check_choice_accepts_members_and_names_the_parameter():
    assert check_choice("b", ("a", "b"), parameter="mode") == "b"
    with pytest.raises(OptionError, match=r"^mode must be one of a, b, got 'c'$") as err:
        check_choice("c", ("a", "b"), parameter="mode")
    assert err.value.parameter == "mode"
    with pytest.raises(OptionError):  # an unhashable value is refused, not a TypeError
        check_choice(["a"], ("a", "b"), parameter="mode")


@pytest.mark.parametrize("closed, inside, outside", [
    ("neither", [0.5, 1e-12, np.float32(0.9)], [0.0, 1.0, -1, 2, float("nan"), True, "0.5", None]),
    ("left", [0.0, 0.5], [1.0, -0.1]),
    ("right", [1.0, 0.5], [0.0, 1.1]),
    ("both", [0.0, 1.0], [-1e-9, 1 + 1e-9, float("inf")]),
])
def test_check_interval_ends(closed, inside, outside):
    for x in inside:
        assert check_interval(x, 0.0, 1.0, parameter="alpha", closed=closed) == float(x)
    for x in outside:
        with pytest.raises(OptionError, match=r"^alpha must ") as err:
            check_interval(x, 0.0, 1.0, parameter="alpha", closed=closed)
        assert err.value.parameter == "alpha"


def test_open_interval_message_is_the_one_users_saw_before():
    with pytest.raises(OptionError, match=r"alpha must lie strictly between 0 and 1, got 1.5"):
        check_interval(1.5, 0, 1, parameter="alpha")
    with pytest.raises(OptionError, match=r"q must be in \[0, 1\), got 1"):
        check_interval(1, 0, 1, parameter="q", closed="left")


def test_one_precision_check():
    assert check_precision("float32") is np.float32 and check_precision("float64") is np.float64
    with pytest.raises(OptionError, match="precision must be 'float32' or 'float64', got 'half'") as err:
        check_precision("half")
    assert err.value.parameter == "precision"


def test_positive_number_and_seed_carry_their_parameter():
    for call, name in ((lambda: check_positive_number(0, "top_k", integer=True), "top_k"),
                       (lambda: check_positive_number(3, "number of features", integer=True, even=True),
                        "number of features"),
                       (lambda: check_seed(-1), "seed")):
        with pytest.raises(OptionError) as err:
            call()
        assert err.value.parameter == name


def test_parameter_survives_pickling_and_defaults_to_the_leading_name():
    err = pickle.loads(pickle.dumps(OptionError("x is bad", parameter="sigma_output")))
    assert err.parameter == "sigma_output" and str(err) == "x is bad"
    assert OptionError("n_modes must be > 0").parameter == "n_modes"
    assert OptionError("pass --endpoint or --generator").parameter in (None, "pass")
    assert OptionError("a.npz: bad").parameter is None
    assert InputError("n_modes is named, but an input error is about data").parameter is None


def test_chunks_cover_every_row_once():
    for n, size in ((0, 3), (1, 3), (7, 3), (9, 3)):
        spans = list(chunks(n, size))
        assert [i for a, b in spans for i in range(a, b)] == list(range(n))
        assert all(0 < b - a <= size for a, b in spans)


def test_as_paired_set():
    rng = np.random.default_rng(0)
    t, o = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    s = as_paired_set((t, o), "test")
    assert isinstance(s, PairedSet) and s.name == "test" and as_paired_set(s) is s
    with pytest.raises(OptionError, match="reference must be a PairedSet") as err:
        as_paired_set([t, o], "reference")
    assert err.value.parameter == "reference"

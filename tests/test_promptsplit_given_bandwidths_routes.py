"""The default (aggregated) test never asks for a bandwidth that was given (issue 42, item 3), on every route.

One prompt shared by every row makes the prompt side's kernel all ones, and its median rule impossible ("no
two distinct embeddings"). tests/test_promptsplit_family_bandwidths.py checks the exact route with numbers
passed; here the same case on the random-feature routes, through K-way PromptSplit, with the bandwidths
written as strings ('1.0', as a config file gives them), and where nothing was given the error stays the
parameter's own (aggregate='none' and the default alike).
"""

from __future__ import annotations

import numpy as np
import pytest

from promptprism import PromptSplit
from promptprism.errors import OptionError
from promptprism.methods.promptsplit.kway import KWaySplit


def _one_prompt(seed: int = 0, n: int = 60, unit: bool = False, shift: float = 0.8) -> list[tuple]:
    rng = np.random.default_rng(seed)
    prompt = np.tile(rng.standard_normal((1, 8)), (n, 1))
    outs = [rng.standard_normal((n, 5)) + k * shift for k in range(3)]
    if unit:
        outs = [z / np.linalg.norm(z, axis=1, keepdims=True) for z in outs]
    return [(prompt, z) for z in outs]


def _members(res) -> dict:
    return {k["name"]: k for k in res.significance["aggregation"]["kernels"]}


@pytest.mark.parametrize(("kernel", "method"),
                         [("gaussian", "rff"), ("cosine", "sketch"), ("cosine", "exact")])
def test_given_bandwidths_on_one_shared_prompt_every_route(kernel, method):
    """Numbers passed (one prompt on every row): the default test runs on every route, its gaussians at
    multiples of the numbers given, and finds the 0.8 s.d. shift of every output coordinate."""
    a, b, _ = _one_prompt()
    res = PromptSplit(kernel=kernel, method=method, n_features=200, sigma_prompt=1.0, sigma_output=3.0,
                      permutations=19, seed=0).fit(a, b)
    members = _members(res)
    gaussians = {k: v for k, v in members.items() if not v["fitted"] and v.get("kernel") == "gaussian"}
    assert gaussians
    for name, m in gaussians.items():
        c = float(name.split("x")[1])
        assert (m["sigma_prompt"], m["sigma_output"]) == pytest.approx((c * 1.0, c * 3.0), rel=1e-12)
    assert res.significance["aggregation"]["p"] <= 0.05


def test_bandwidths_written_as_strings_are_given_numbers():
    """'1.0' and '3' with the cosine kernel (whose own map takes no bandwidth): the family's gaussians are
    centred on 1 and 3, said to be given, as for the numbers; before, the string '1.0' on the constant prompt
    side was replaced by 1 'every row the same point' and '3' called a rule of the pooled embeddings."""
    a, b, _ = _one_prompt(1, unit=True)
    as_text = PromptSplit(kernel="cosine", sigma_prompt="2.0", sigma_output="3", permutations=19,
                          seed=0).fit(a, b)
    as_numbers = PromptSplit(kernel="cosine", sigma_prompt=2.0, sigma_output=3.0, permutations=19,
                             seed=0).fit(a, b)
    centre = as_text.significance["aggregation"]["bandwidth_centre"]
    assert centre == "sigma_prompt 2 (given); sigma_output 3 (given)"
    assert centre == as_numbers.significance["aggregation"]["bandwidth_centre"]
    m = _members(as_text)["gaussian x2"]
    assert (m["sigma_prompt"], m["sigma_output"]) == pytest.approx((4.0, 6.0), rel=1e-12)
    assert as_text.significance["aggregation"]["p"] == as_numbers.significance["aggregation"]["p"]
    with pytest.raises(OptionError, match="sigma_prompt"):  # (a bad value named where it enters)
        PromptSplit(kernel="cosine", sigma_prompt="-1", permutations=19, seed=0).fit(a, b)


def test_kway_default_test_with_given_bandwidths_on_one_shared_prompt():
    sets = _one_prompt(2)
    res = KWaySplit(sigma_prompt=1.0, sigma_output=3.0, permutations=19, seed=0).fit(sets)
    assert res.pairs and all(p.significance for p in res.pairs)


@pytest.mark.parametrize("aggregate", ["auto", "none"])
def test_nothing_given_on_one_shared_prompt_takes_one_and_says_why(aggregate):
    """The median rule on one point has nothing to measure, and needs nothing: a gaussian of any bandwidth
    is 1 between equal rows, so 1 is taken and recorded (a one-prompt comparison stopped with an error)."""
    a, b, _ = _one_prompt(3)
    res = PromptSplit(aggregate=aggregate, permutations=19, seed=0).fit(a, b)
    assert res.config["sigma_prompt"] == 1.0
    given = PromptSplit(aggregate=aggregate, permutations=19, seed=0, sigma_prompt=7.0).fit(a, b)
    assert res.eigenvalues == pytest.approx(given.eigenvalues, abs=1e-12)  # (the bandwidth changes nothing)

"""The aggregated test's kernel family takes its bandwidths from what the user gave (issue 42, item 3).

The family's gaussians sit at multiples c of a centre pair: with the gaussian kernel, the fitted kernel's own
resolved bandwidths (a number passed, a median rule or 'stable'), so nothing is resolved twice and the
fitted kernel is the member c = 1; with the cosine kernel, the bandwidths passed as numbers, else the pooled
medians, and a side whose rows are all one point (one prompt shared by every row) takes 1.0 (a gaussian of
any bandwidth is 1 between equal rows). Before, one prompt shared by every row with ``sigma_prompt=1.0``
ended in "sigma_prompt: the median rule found no two distinct embeddings" although 1.0 was given.
"""

from __future__ import annotations

import numpy as np
import pytest

from promptprism import PromptSplit
from promptprism.kernels.bandwidth import Bandwidth


def _one_prompt(seed: int = 0, n: int = 60, unit: bool = False) -> tuple[tuple, tuple]:
    """Test and reference sets sharing one prompt on every row; the reference's outputs shifted."""
    rng = np.random.default_rng(seed)
    prompt = np.tile(rng.standard_normal((1, 8)), (n, 1))
    z_test, z_ref = rng.standard_normal((n, 5)), rng.standard_normal((n, 5)) + 0.8
    if unit:
        z_test, z_ref = (z / np.linalg.norm(z, axis=1, keepdims=True) for z in (z_test, z_ref))
    return (prompt, z_test), (prompt, z_ref)


def _members(res) -> dict[str, dict]:
    return {k["name"]: k for k in res.significance["aggregation"]["kernels"]}


def test_one_shared_prompt_with_given_bandwidths_runs_the_default_test_around_them():
    """The reported case: one prompt, sigma_prompt=1.0, sigma_output=3.0; the default test runs, its
    gaussians at 0.5x and 2x the given pair, and its fitted kernel's p-value is aggregate='none''s."""
    test, ref = _one_prompt()
    options = {"sigma_prompt": 1.0, "sigma_output": 3.0, "permutations": 49, "seed": 3}
    res = PromptSplit(**options).fit(test, ref)
    alone = PromptSplit(aggregate="none", **options).fit(test, ref)
    a = res.significance["aggregation"]
    members = _members(res)
    assert a["modality"] == "image" and list(members) == ["gaussian x1", "gaussian x0.5", "gaussian x2"]
    assert members["gaussian x1"]["fitted"]
    for name, c in (("gaussian x0.5", 0.5), ("gaussian x2", 2.0)):
        assert members[name]["sigma_prompt"] == pytest.approx(c * 1.0, rel=1e-12)
        assert members[name]["sigma_output"] == pytest.approx(c * 3.0, rel=1e-12)
    assert a["bandwidth_centre"] == "the fitted kernel's bandwidths"
    assert members["gaussian x1"]["p"] == pytest.approx(alone.significance["p_largest"])
    assert a["p"] <= 0.05  # (the outputs differ by 0.8 s.d. in every coordinate)


def test_text_family_with_given_bandwidths_scales_them():
    """Unit-norm outputs (text family): cosine and gaussian 2x the given pair, the fitted gaussian x1."""
    test, ref = _one_prompt(1, unit=True)
    res = PromptSplit(sigma_prompt=0.7, sigma_output=0.4, permutations=19, seed=0).fit(test, ref)
    members = _members(res)
    assert list(members) == ["gaussian x1", "cosine", "gaussian x2"]
    assert members["cosine"]["sigma_prompt"] is None
    assert (members["gaussian x2"]["sigma_prompt"], members["gaussian x2"]["sigma_output"]) == \
        pytest.approx((1.4, 0.8), rel=1e-12)


def test_a_scaled_median_rule_centres_the_family_on_the_fitted_bandwidths():
    """'0.5*median': the members are multiples of the fitted kernel's resolved bandwidths (its config)."""
    rng = np.random.default_rng(2)
    t, z = rng.standard_normal((120, 4)), rng.standard_normal((120, 6))
    res = PromptSplit(sigma_prompt="0.5*median", sigma_output="0.5*median", permutations=19,
                      seed=1).fit((t[:60], z[:60]), (t[60:], z[60:]))
    fitted = res.config["sigma_prompt"], res.config["sigma_output"]
    median = Bandwidth.parse("median").resolve_pooled([t[:60], t[60:]], name="sigma_prompt", seed=1).value
    assert fitted[0] == pytest.approx(0.5 * median, rel=1e-12)  # (the fitted kernel: half the median)
    members = _members(res)
    for name, c in (("gaussian x0.5", 0.5), ("gaussian x2", 2.0)):
        assert (members[name]["sigma_prompt"], members[name]["sigma_output"]) == \
            pytest.approx((c * fitted[0], c * fitted[1]), rel=1e-12)


def test_cosine_kernel_family_on_one_shared_prompt():
    """Cosine kernel, one prompt, default bandwidth rules: the gaussians' prompt bandwidth is 1 (any
    value gives the same kernel on equal rows), their output bandwidth the pooled median's multiples; with
    numbers passed, multiples of those numbers (never a median of what was given)."""
    test, ref = _one_prompt(4, unit=True)
    res = PromptSplit(kernel="cosine", permutations=19, seed=0).fit(test, ref)
    members = _members(res)
    median = Bandwidth.parse("median").resolve_pooled([test[1], ref[1]], name="sigma_output", seed=0).value
    for name, c in (("gaussian x1", 1.0), ("gaussian x2", 2.0)):
        assert members[name]["sigma_prompt"] == pytest.approx(c)
        assert members[name]["sigma_output"] == pytest.approx(c * median, rel=1e-12)
    centre = res.significance["aggregation"]["bandwidth_centre"]
    assert "every row the same point" in centre and "median" in centre
    given = PromptSplit(kernel="cosine", sigma_prompt=0.3, sigma_output=2.5, permutations=19,
                        seed=0).fit(test, ref)
    members = _members(given)
    assert (members["gaussian x2"]["sigma_prompt"], members["gaussian x2"]["sigma_output"]) == \
        pytest.approx((0.6, 5.0), rel=1e-12)
    assert "(given)" in given.significance["aggregation"]["bandwidth_centre"]

"""The 'stable' bandwidth rule: scan multiples of the median, keep the smallest with settled spectra."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism import PromptSplit
from promptprism.datasets import gaussian_mixture
from promptprism.errors import InputError, OptionError
from promptprism.kernels.bandwidth import (
    STABLE_MULTIPLIERS,
    STABLE_TOLERANCE,
    Bandwidth,
    median_pairwise_distance,
    resolve_bandwidth,
    stable_bandwidth,
    stable_multiples,
)
from promptprism.methods.promptsplit.core import top_eigenvalues


def test_scan_picks_smallest_settled_sigma():
    # top eigenvalues that move fast for small sigma and settle from 2 x median on
    values = {0.5: 0.5, 0.71: 0.4, 1.0: 0.3, 1.41: 0.2, 2.0: 0.105, 2.83: 0.1, 4.0: 0.1}
    scan = stable_bandwidth([np.array([values[round(s / 3.0, 2)]]) for s in stable_multiples(3.0)], 3.0)
    assert scan["plateau"] and scan["chosen"] == pytest.approx(2.0 * 3.0)
    assert scan["sigmas"] == pytest.approx([f * 3.0 for f in STABLE_MULTIPLIERS])
    assert scan["tolerance"] == STABLE_TOLERANCE and "less than" in scan["note"]


def test_no_plateau_keeps_the_median_and_says_so():
    scan = stable_bandwidth([np.array([s]) for s in stable_multiples(1.0)], 1.0)
    assert not scan["plateau"] and scan["chosen"] == 1.0 and "no plateau" in scan["note"]


@pytest.mark.slow
def test_stable_rule_in_promptsplit_matches_its_recorded_scan():
    test, ref, _ = gaussian_mixture(1, per_component=20, seed=0)
    res = PromptSplit(method="exact", sigma_output="stable", n_modes=3, permutations=0).fit(test, ref)
    scan = res.bandwidth_scan["output"]
    tops = np.array(scan["top_eigenvalues"])
    steps = np.max(np.abs(np.diff(tops, axis=0)), axis=1)
    median = resolve_bandwidth("median", np.r_[test.output_embeddings, ref.output_embeddings])
    assert scan["sigmas"][2] == pytest.approx(median)  # multiplier 1
    if scan["plateau"]:
        first = int(np.flatnonzero(steps < scan["tolerance"])[0])
        assert scan["chosen"] == pytest.approx(scan["sigmas"][first])
    else:
        assert (steps >= scan["tolerance"]).all() and scan["chosen"] == pytest.approx(median)
    assert res.config["sigma_output"] == pytest.approx(scan["chosen"])
    assert res.config["sigma_output_rule"] == "stable" and "prompt" not in res.bandwidth_scan
    # the recorded spectra are those of the exact route at each sigma (all samples: fewer than the subsample)
    sp = median_pairwise_distance(np.r_[test.prompt_embeddings, ref.prompt_embeddings])
    again = top_eigenvalues(test.prompt_embeddings, test.output_embeddings, ref.prompt_embeddings,
                            ref.output_embeddings, kernel="gaussian", sigma_prompt=sp,
                            sigma_output=scan["sigmas"][3], eta=1.0, n_top=5)
    np.testing.assert_allclose(again, tops[3], rtol=1e-9, atol=1e-12)


def test_no_plateau_warns(monkeypatch):
    import promptprism.kernels.bandwidth as bw

    monkeypatch.setattr(bw, "STABLE_TOLERANCE", 0.0)
    test, ref, _ = gaussian_mixture(1, per_component=10, seed=1)
    with pytest.warns(UserWarning, match="no plateau"):
        res = PromptSplit(method="exact", sigma_prompt="stable", permutations=0).fit(test, ref)
    assert res.bandwidth_scan["prompt"]["plateau"] is False


def test_stable_is_only_for_methods_that_resolve_it():
    parsed = Bandwidth.parse("stable", "sigma", rules=("median", "stable"))
    assert (parsed.rule, parsed.factor) == ("stable", 1.0)
    with pytest.raises(OptionError, match="sigma"):
        Bandwidth.parse("stable", "sigma")
    with pytest.raises(OptionError, match="sigma_prompt"):
        PromptSplit(sigma_prompt="stabl")


def test_median_counts_a_row_beyond_float64_squares_as_the_farthest_without_warnings():
    import warnings

    from promptprism.kernels.bandwidth import median_pairwise_distance

    x = np.random.default_rng(0).standard_normal((24, 6))
    far, huge = x.copy(), x.copy()
    far[3] *= 1e30  # its 23 distances are the largest, and finite
    huge[3] *= 1e300  # |x|^2 overflows float64: the same 23 pairs must still count as the largest
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert median_pairwise_distance(huge) == median_pairwise_distance(far)
    assert median_pairwise_distance(huge) != median_pairwise_distance(np.delete(x, 3, axis=0))


@pytest.mark.parametrize("scale", [1e200, 1e-200, 2.0 ** -700])
def test_the_median_rule_gives_every_magnitude_its_own_median(scale):
    """Squared distances of rows at 1e200 overflow float64 and at 1e-200 underflow to 0 (before: 'no two
    distinct embeddings'); scaled by a power of two first, the rule's sigma is the unscaled one times the
    scale."""
    x = np.random.default_rng(1).standard_normal((40, 5))
    sigma = Bandwidth.parse("median", "sigma_output").resolve(x * scale, name="sigma_output").value
    assert sigma == pytest.approx(median_pairwise_distance(x) * scale, rel=1e-12)
    assert np.isnan(median_pairwise_distance(x * 1e-200))  # what the unscaled rule saw: every pair at 0


def test_a_median_beyond_float64_is_refused_naming_the_values():
    x = np.sign(np.random.default_rng(1).standard_normal((40, 5))) * 1.5e308  # distinct rows 3e308 apart
    with pytest.raises(InputError, match="sigma_output: embedding values up to 1.5e\\+308 put the median"):
        Bandwidth.parse("median", "sigma_output").resolve(x, name="sigma_output")


def test_stable_rule_does_not_depend_on_the_grid():
    """top(sigma) = 1/sigma changes by less than 0.01 across a factor sqrt(2) from sigma > 29.3 on: a
    sqrt(2) grid and a 2^(1/4) grid both pick 32 (comparing neighbours, the fine grid would pick 16)."""
    coarse = tuple(2 ** (k / 2) for k in range(13))
    fine = tuple(2 ** (k / 4) for k in range(25))
    for grid in (coarse, fine):
        scan = stable_bandwidth([np.array([1.0 / s]) for s in stable_multiples(1.0, grid)], 1.0,
                                multipliers=grid)
        assert scan["plateau"] and scan["chosen"] == pytest.approx(32.0)

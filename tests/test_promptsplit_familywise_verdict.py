"""The verdict of the test aggregated over a kernel family is the family-wise answer: where the aggregate
rejects but no mode of the fitted kernel is significant alone, it says the sets differ (and by which
kernel's modes), never "no significant difference"; a test whose permutations cannot reach alpha warns."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import promptprism as pp


def _planted(seed_a: int = 0, seed_b: int = 1, shift: float = 2.0):
    """10 prompts x 6 samples; the second set's first two prompts' outputs shifted (a user's data set where
    the family found the difference and the fitted kernel alone did not)."""
    rng = np.random.default_rng(seed_a)
    prompts = [f"prompt {i}" for i in range(10) for _ in range(6)]
    pe = np.repeat(rng.normal(size=(10, 8)), 6, axis=0).astype(np.float32)
    a = rng.normal(size=(60, 6)).astype(np.float32)
    b = np.random.default_rng(seed_b).normal(size=(60, 6)).astype(np.float32)
    b[:12] += shift
    return (pp.PairedSet(pe, a, prompts=prompts, name="a"), pp.PairedSet(pe, b, prompts=prompts, name="b"))


def test_an_aggregated_rejection_is_the_verdict_even_without_a_fitted_mode():
    a, b = _planted()
    result = pp.PromptSplit(seed=0).fit(a, b)
    agg = result.significance["aggregation"]
    # the case under test: the family rejects, the fitted kernel alone does not
    assert agg["p"] <= 0.05 and result.significance["n_significant"] == 0
    verdict = result.verdict
    assert verdict.startswith("a significant difference between test and reference at alpha = 0.05")
    assert "no significant difference" not in verdict
    found = [k["name"] for k in agg["kernels"] if k.get("n_significant")]
    assert found and all(name in verdict for name in found)


@pytest.mark.slow  # (over 0.5 s)
def test_a_fitted_mode_keeps_the_fitted_kernels_verdict():
    a, b = _planted(shift=4.0)
    result = pp.PromptSplit(seed=0, permutations=999).fit(a, b)  # (p about 0.02-0.04: 200 draw near 0.05)
    assert result.significance["n_significant"] >= 1
    assert "modes differ significantly" in result.verdict
    assert "tested over 3 kernels together" in result.verdict


@pytest.mark.parametrize("permutations, alpha, warned", [(10, 0.05, True), (19, 0.05, False),
                                                          (30, 0.02, True), (49, 0.02, False)])
def test_too_few_permutations_to_reject_warn(permutations, alpha, warned):
    a, b = _planted()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pp.PromptSplit(seed=0, permutations=permutations, alpha=alpha, aggregate="none").fit(a, b)
    said = [str(w.message) for w in caught if "can never reject" in str(w.message)]
    assert bool(said) == warned
    if warned:
        assert f"1/{permutations + 1}" in said[0]


def test_a_spectrum_outside_its_range_warns_and_a_sound_one_does_not():
    a, b = _planted()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        few = pp.PromptSplit(kernel="cosine", method="sketch", n_features=1, permutations=0, seed=3).fit(a, b)
    assert max(abs(v) for v in few.eigenvalues) > 1  # (the case: one sketch feature)
    assert any("outside [-1, 1]" in str(w.message) for w in caught)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pp.PromptSplit(kernel="cosine", method="sketch", n_features=2000, permutations=0).fit(a, b)
    assert not any("outside [-1, 1]" in str(w.message) for w in caught)


def test_kway_says_and_gates_an_aggregated_rejection_without_a_significant_pair():
    from promptprism.gate import evaluate

    a, b = _planted()
    result = pp.KWaySplit(seed=0, aggregate="auto").fit([a, b])
    agg = result.significance["aggregation"]
    assert agg["p"] <= 0.05 and not result.significant_pairs  # (the case under test)
    assert result.verdict.startswith("a significant difference among the 2 sets at alpha = 0.05")
    [check] = evaluate(result, ["significant"])
    assert check.failed and "aggregated over 3 kernels rejects" in check.message


def test_no_range_warning_on_the_exact_route_or_within_minus_eta_to_one():
    a, b = _planted()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exact = pp.PromptSplit(eta=1e6, n_modes=2, permutations=0).fit(a, b)
    assert exact.method == "exact" and min(exact.eigenvalues) < -1  # (in [-eta, 1], as it must be)
    assert not any("outside [" in str(w.message) for w in caught)
    from promptprism.methods.promptsplit.verdicts import out_of_range_note

    assert out_of_range_note([-3.0, 0.5], "rff", 400, eta=4.0) is None
    assert "outside [-4, 1]" in out_of_range_note([-4.5], "rff", 400, eta=4.0)
    assert "outside [-1, 1]" in out_of_range_note([1.3], "sketch", 1)


def test_the_cosine_kernels_family_is_blind_to_norms_as_the_kernel_is():
    """kernel='cosine' ignores norms; its family's gaussians ran on the raw rows, so scaling the reference by
    5 turned 'no difference' (p = 1) into 'a significant difference' (p = 0.01). They run on unit rows."""
    rng = np.random.default_rng(0)
    prompts = [f"prompt {i}" for i in range(10) for _ in range(8)]
    pe = np.repeat(rng.normal(size=(10, 16)), 8, axis=0)
    oa = pe @ rng.normal(size=(16, 12)) * 0.3 + rng.normal(size=(80, 12))
    ob = oa + np.random.default_rng(5).normal(size=oa.shape) * 0.05
    scales = np.random.default_rng(1).uniform(0.5, 20.0, size=(80, 1))
    runs = [pp.PromptSplit(n_modes=3, seed=0, kernel="cosine", permutations=99).fit(
        pp.PairedSet(pe, oa, prompts=prompts), pp.PairedSet(pe * s1, ob * s2, prompts=prompts))
        for s1, s2 in ((1.0, 1.0), (1.0, 5.0), (scales, scales[::-1]))]
    aggs = [r.significance["aggregation"] for r in runs]
    assert all(a["p"] == aggs[0]["p"] for a in aggs) and aggs[0]["p"] > 0.05
    assert len({r.verdict for r in runs}) == 1 and runs[0].verdict.startswith("no significant difference")
    sig_out = {k["sigma_output"] for a in aggs for k in a["kernels"] if k.get("sigma_output") and k["name"]
               == "gaussian x1"}
    assert len({round(v, 6) for v in sig_out}) == 1  # (the bandwidths of unit rows: the same for every scale)

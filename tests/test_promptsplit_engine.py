"""One comparison engine for two-way and K-way PromptSplit (issue 39): K-way gains the device (torch
backend), the 'stable' bandwidth rule and the aggregated kernel family through the two-way code, and with
K = 2 gives the two-way numbers."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from promptprism.methods.promptsplit import PromptSplit
from promptprism.methods.promptsplit.kway import KWaySplit
from test_promptsplit_kway import model_sets


def _pvalues(comparison) -> list:
    return [m.p_value for m in comparison.modes]


@pytest.mark.parametrize("method, options", [
    ("exact", {"kernel": "gaussian"}),
    ("rff", {"kernel": "gaussian", "n_features": 200, "precision": "float64"}),
    ("sketch", {"kernel": "cosine", "n_features": 200, "precision": "float64"}),
])
def test_kway_on_torch_equals_numpy_within_the_documented_tolerances(method, options):
    """docs/devices.md (torch on the CPU): eigenvalues and distances to 1e-12 of the largest eigenvalue
    (exact, sketch in float64), 1e-6 (rff: float32 cos/sin); the same top samples; the p-values identical
    (or one permutation apart where a permuted eigenvalue ties the observed one)."""
    pytest.importorskip("torch")
    from backends import TORCH_DEVICE
    sets = model_sets(11, 3, prompts=5, per=6, shift=1.5, planted=1)
    base = KWaySplit(method=method, permutations=19, n_modes=3, seed=0, device="cpu", **options)
    with threadpool_limits(1):
        r_np = base.fit(sets)
        r_t = dataclasses.replace(base, device=TORCH_DEVICE).fit(sets)
    assert r_np.config["device"] == "numpy" and r_t.config["device"].startswith("torch")
    tol = 1e-6 if method == "rff" else 1e-12
    scale = max(np.abs(c.eigenvalues).max() for c in r_np.pairs + r_np.one_vs_rest)
    np.testing.assert_allclose(r_t.distances, r_np.distances, rtol=0, atol=tol * scale)
    for a, b in zip(r_np.pairs + r_np.one_vs_rest, r_t.pairs + r_t.one_vs_rest, strict=True):
        n = min(len(a.eigenvalues), len(b.eigenvalues))
        np.testing.assert_allclose(b.eigenvalues[:n], a.eigenvalues[:n], rtol=0, atol=tol * scale)
        assert b.distance == pytest.approx(a.distance, rel=tol, abs=tol * scale)
        for ma, mb in zip(a.modes, b.modes, strict=True):
            assert [s.index for s in ma.top_samples] == [s.index for s in mb.top_samples]
        np.testing.assert_allclose(_pvalues(b), _pvalues(a), rtol=0, atol=1.0 / 20 + 1e-12)
    assert r_t.pair_p_values == r_np.pair_p_values or np.allclose(
        [[x or 0.0 for x in row] for row in r_t.pair_p_values],
        [[x or 0.0 for x in row] for row in r_np.pair_p_values], atol=1.0 / 20 + 1e-12)


def test_kway_stable_bandwidth_is_promptsplits_for_two_sets():
    a, b = model_sets(12, 2, prompts=6, per=8, shift=1.0)
    opts = dict(method="exact", permutations=0, n_modes=3, sigma_prompt="stable", sigma_output="stable",
                device="cpu")
    with warnings.catch_warnings():  # (the scan may or may not find its plateau on so small a set)
        warnings.simplefilter("ignore", UserWarning)
        pair = PromptSplit(**opts).fit(a, b)
        kway = KWaySplit(**opts).fit([a, b])
    assert kway.config["sigma_prompt"] == pair.config["sigma_prompt"]
    assert kway.config["sigma_output"] == pair.config["sigma_output"]
    assert kway.config["sigma_prompt_rule"] == "stable"
    assert kway.bandwidth_scan == pair.bandwidth_scan and set(kway.bandwidth_scan) == {"prompt", "output"}
    assert kway.pairs[0].eigenvalues == pair.eigenvalues


def test_kway_stable_bandwidth_watches_every_pair():
    sets = model_sets(13, 3, prompts=5, per=6, shift=1.0)
    with warnings.catch_warnings():  # (no plateau on so small a set: the median is kept, and said)
        warnings.simplefilter("ignore", UserWarning)
        res = KWaySplit(method="exact", permutations=0, n_modes=2, sigma_output="stable",
                        device="cpu").fit(sets)
    scan = res.bandwidth_scan["output"]
    # the top 5 eigenvalues of each sign of each of the 3 pairs, at every scanned bandwidth
    assert all(len(t) == 3 * 2 * 5 for t in scan["top_eigenvalues"])
    assert res.config["sigma_output"] == scan["chosen"]


@pytest.mark.parametrize("aggregate", ["auto", "text"])
def test_kway_aggregated_test_for_two_sets_is_the_two_way_aggregated_test(aggregate):
    a, b = model_sets(14, 2, prompts=6, per=10, shift=1.5)
    opts = dict(method="exact", permutations=40, n_modes=3, aggregate=aggregate, device="cpu")
    with threadpool_limits(1):
        pair = PromptSplit(**opts).fit(a, b)
        kway = KWaySplit(**opts).fit([a, b])
    assert pair.significance["permutations_drawn"] == 40  # (two-way may stop early; here it did not)
    got = kway.pairs[0]
    assert _pvalues(got) == _pvalues(pair) and all(p is not None for p in _pvalues(got))
    agg = kway.significance["aggregation"]
    want = pair.significance["aggregation"]
    assert agg["p"] == want["p"] and agg["found_by"] == want["found_by"]
    assert [k["p_adjusted"] for k in agg["kernels"]] == [k["p_adjusted"] for k in want["kernels"]]
    assert agg["p_modes_fitted_kernel"] == want["p_modes_fitted_kernel"]


def test_kway_aggregated_test_over_three_sets_reports_adjusted_pvalues():
    sets = model_sets(15, 3, prompts=6, per=6, shift=2.0, planted=2)
    with threadpool_limits(1):
        alone = KWaySplit(method="exact", permutations=39, n_modes=2, device="cpu").fit(sets)
        agg = KWaySplit(method="exact", permutations=39, n_modes=2, device="cpu", aggregate="text").fit(sets)
    record = agg.significance["aggregation"]
    assert [k["name"] for k in record["kernels"]] == ["gaussian x1", "cosine", "gaussian x2"]
    assert set(record["p_modes_fitted_kernel"]) == {"m0 vs m1", "m0 vs m2", "m1 vs m2", "m0 vs rest",
                                                    "m1 vs rest", "m2 vs rest"}
    assert "aggregation" not in alone.significance
    for c_alone, c_agg in zip(alone.pairs + alone.one_vs_rest, agg.pairs + agg.one_vs_rest, strict=True):
        raw = [m.p_value for m in c_alone.modes]
        adjusted = [m.p_value for m in c_agg.modes]
        assert all(p is not None for p in adjusted)
        # the adjusted p-value is never below the fitted kernel's own (min-p over the family)
        assert all(q >= p - 1e-12 for p, q in zip(raw, adjusted, strict=True))
    assert "m2" in {d["model"] for d in agg.deviations if d["deviates"]}


@pytest.mark.slow
def test_kway_aggregated_test_is_calibrated_under_the_null():
    """K = 3 identically distributed sets, 100 null data sets, aggregate='text', 39 permutations: the
    fraction with any significant mode (the family-wise event over every mode of the 6 comparisons and
    the 3 kernels) is at most alpha + 2 standard errors."""
    est = KWaySplit(method="exact", permutations=39, n_modes=2, aggregate="text", device="cpu")
    with threadpool_limits(1):
        hits = []
        for s in range(100):
            res = est.fit(model_sets(3000 + s, 3, prompts=5, per=3))
            ps = [m.p_value for c in res.pairs + res.one_vs_rest for m in c.modes if m.p_value is not None]
            hits.append(bool(ps) and min(ps) <= 0.05)
    rate = float(np.mean(hits))
    assert rate <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 100), rate

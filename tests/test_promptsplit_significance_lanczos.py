"""PromptSplit's permutation test through its large-problem path: the lockstep Lanczos null.

The permuted spectra come from a stacked dense solve when the Gram matrix (exact route) or the feature factor
(rff route) has at most ``stats.batched_eigen.DENSE_BATCH_RANK`` (256) columns, and from ``_batched_lanczos``
(all permutations in lockstep, ``LANCZOS_STEPS`` = 40 Krylov vectors each, float32) above it. The calibration
test in test_promptsplit_significance.py runs at n = m = 40, so always on the dense path. Here the threshold
is lowered (monkeypatched) so that data sets of the same kind take the Lanczos path at a size where 40 steps
do not span the whole space (exact: a 120 x 120 Gram matrix; rff: a 56-column factor), as at large n:

* calibration: over 200 null data sets, the rate of runs with any mode significant at alpha = 0.05 lies in
  [0.02, 0.08], for the exact (Gram form) and the rff (factor form) routes;
* power: a planted difference (one prompt's outputs moved in the test set) is found in >= 90 % of data sets;
* brute force: the same data and seed through the dense path (the same permutations, since the labels are
  drawn from the seed before the solver is chosen) give the same p-values.

Tiny float32 matrix products are slow with multithreaded BLAS on a loaded machine (threads wait for each
other), so the loops run with one BLAS thread.
"""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import promptprism.stats.batched_eigen as eigen
from promptprism import PairedSet, PromptSplit

#: (method, n_features): rff with 56 features gives a 56-column factor (factor-form Lanczos, 40 steps < 56)
ROUTES = [("exact", 200), ("rff", 56)]


@pytest.fixture
def lanczos_path(monkeypatch):
    """Lower the dense/Lanczos switch so these small problems take the Lanczos path; record every solve."""
    calls: list[tuple[str, int, int]] = []
    lanczos = eigen._batched_lanczos

    def spy(apply, metric, wt, dim, *, steps, rng):
        calls.append(("gram" if metric is not None else "factor", dim, steps))
        return lanczos(apply, metric, wt, dim, steps=steps, rng=rng)

    def no_dense(*args, **kwargs):
        raise AssertionError("the dense path was taken")

    monkeypatch.setattr(eigen, "DENSE_BATCH_RANK", 8)
    monkeypatch.setattr(eigen, "_batched_lanczos", spy)
    monkeypatch.setattr(eigen, "_dense_extremes", no_dense)
    return calls


def _sets(rng: np.random.Generator, *, shift: float = 0.0, per_prompt: int = 10, n_prompts: int = 6,
          dim: int = 5) -> tuple[PairedSet, PairedSet]:
    """Test and reference sets (prompts one-hot, outputs = the prompt's mean + noise); ``shift`` moves the
    test set's outputs of prompt 0 along the first axis (0: both sets from one distribution)."""
    means = np.random.default_rng(123).standard_normal((n_prompts, dim)) * 2.0
    sets = []
    for name in ("test", "reference"):
        lab = np.repeat(np.arange(n_prompts), per_prompt)
        outputs = means[lab] + rng.standard_normal((lab.size, dim))
        if name == "test":
            outputs[lab == 0, 0] += shift
        sets.append(PairedSet(np.eye(n_prompts)[lab], outputs, prompts=[f"p{c}" for c in lab], name=name))
    return sets[0], sets[1]


def _estimator(method: str, n_features: int, seed: int) -> PromptSplit:
    # the fitted kernel's own test (the solver path under test; the kernel family adds exact Gram calls)
    return PromptSplit(method=method, n_modes=3, n_features=n_features, permutations=100, top_k=2,
                       top_prompts=2, seed=seed, aggregate="none")


def _expected_solver(method: str) -> tuple[str, int, int]:
    """The Lanczos form, operator size and steps each route must take here."""
    return ("gram", 120, 40) if method == "exact" else ("factor", 56, 40)


@pytest.mark.slow
@pytest.mark.parametrize(("method", "n_features"), ROUTES)
def test_lanczos_null_is_calibrated(lanczos_path, method, n_features):
    """200 null data sets through the Lanczos path: any mode significant at alpha = 0.05 in 2-8 % of them."""
    rng = np.random.default_rng(11 if method == "exact" else 12)
    hits = []
    with threadpool_limits(1):
        for i in range(200):
            test, ref = _sets(rng)
            res = _estimator(method, n_features, seed=i).fit(test, ref)
            hits.append(res.significance["n_significant"] > 0)
    assert set(lanczos_path) == {_expected_solver(method)}
    assert len(lanczos_path) == 200  # one lockstep run (101 operators) per data set
    rate = float(np.mean(hits))
    print(f"{method} (Lanczos null): any mode significant in {rate:.3f} of 200 null data sets")
    assert 0.02 <= rate <= 0.08, rate


@pytest.mark.parametrize(("method", "n_features"), ROUTES)
def test_lanczos_null_has_power_on_a_planted_difference(lanczos_path, method, n_features):
    """One prompt's test outputs moved by 3.5 noise s.d.: significant in >= 90 % of 20 data sets, and the
    significant modes point at that prompt."""
    rng = np.random.default_rng(5)
    found = []
    with threadpool_limits(1):
        for i in range(20):
            test, ref = _sets(rng, shift=3.5)
            res = _estimator(method, n_features, seed=i).fit(test, ref)
            sig = [m for m in res.modes if m.significant]
            found.append(bool(sig))
            for m in sig:
                assert m.top_prompts[0].prompt == "p0", (i, m.side, m.rank)
    assert set(lanczos_path) == {_expected_solver(method)}
    print(f"{method} (Lanczos null): planted difference found in {np.mean(found):.2f} of 20 data sets")
    assert np.mean(found) >= 0.9, found


@pytest.mark.parametrize(("method", "n_features"), ROUTES)
@pytest.mark.parametrize("shift", [0.0, 4.0])
def test_lanczos_p_values_equal_the_dense_solves(monkeypatch, method, n_features, shift):
    """Brute force of the fast path: the same data and seed (so the same permutations) through the stacked
    dense solve and through Lanczos give the same p-values (counts of permuted maxima above the observed:
    they agree unless a permuted value lies within the solver's error of the observed one) and the same
    family threshold (a quantile of the permuted largest eigenvalues) to float32 precision."""
    rng = np.random.default_rng(3)
    with threadpool_limits(1):
        for seed in range(3):
            test, ref = _sets(rng, shift=shift)
            dense = _estimator(method, n_features, seed).fit(test, ref)
            with monkeypatch.context() as mp:
                mp.setattr(eigen, "DENSE_BATCH_RANK", 8)
                fast = _estimator(method, n_features, seed).fit(test, ref)
            sd, sf = dense.significance, fast.significance
            for side in ("test", "reference"):  # the family threshold: a quantile of the permuted largest
                assert sf["threshold"][side] == pytest.approx(sd["threshold"][side], rel=1e-4)
            p_dense = [m.p_value for m in dense.modes]
            p_fast = [m.p_value for m in fast.modes]
            if shift:  # the planted difference: small p-values are compared too, not only p ~ 1
                assert min(p_dense) <= 0.05
            assert len(p_dense) == len(p_fast)
            np.testing.assert_allclose(p_fast, p_dense, atol=1.0 / 101 + 1e-12)
            assert sum(a != b for a, b in zip(p_fast, p_dense, strict=True)) <= 1


def test_the_unpatched_switch_sends_problems_above_256_samples_to_lanczos(monkeypatch):
    """What the patched threshold stands in for: without it, 120 samples take the dense solve and 300 the
    Lanczos path (Gram form, 40 steps)."""
    calls: list[str] = []
    lanczos, dense = eigen._batched_lanczos, eigen._dense_extremes
    monkeypatch.setattr(eigen, "_batched_lanczos",
                        lambda *a, **k: calls.append("lanczos") or lanczos(*a, **k))
    monkeypatch.setattr(eigen, "_dense_extremes", lambda *a, **k: calls.append("dense") or dense(*a, **k))
    rng = np.random.default_rng(0)
    with threadpool_limits(1):
        for per_prompt, want in ((10, "dense"), (25, "lanczos")):
            calls.clear()
            test, ref = _sets(rng, per_prompt=per_prompt)
            _estimator("exact", 200, seed=0).fit(test, ref)
            assert calls == [want], (per_prompt, calls)

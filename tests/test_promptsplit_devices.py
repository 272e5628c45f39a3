"""PromptSplit on numpy and on torch (CPU here; the same code runs on CUDA): the same fit, mode for mode.

The brute-force tests (test_promptsplit_exact.py, the SPEC-definition tests of
test_promptsplit_random_features.py, the permutation spectra of test_promptsplit_significance.py) run on
both backends through the ``device`` fixture; here each route's whole result is compared between the two on
the same seed, with the tolerances docs/devices.md states.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from backends import TORCH_DEVICE  # noqa: E402
from promptprism import PromptSplit  # noqa: E402
from promptprism.datasets import gaussian_mixture  # noqa: E402

#: |eigenvalue| differences allowed, relative to the largest: float64 routes agree to round-off; the rff map
#: evaluates cos/sin in float32 (``fast_trig``), where numpy's and torch's cos may differ by one ulp; float32
#: features / Gram matrices to float32 round-off
TOL = {("exact", "float64"): 1e-12, ("exact", "float32"): 1e-6, ("rff", "float64"): 1e-6,
       ("rff", "float32"): 1e-6, ("sketch", "float64"): 1e-12, ("sketch", "float32"): 1e-6}
PERMUTATIONS = 40


def _fit_both(per_component: int = 12, **options) -> tuple:
    test, ref, _ = gaussian_mixture(2, per_component=per_component, seed=0)
    base = PromptSplit(n_modes=3, seed=0, permutations=PERMUTATIONS, device="cpu", **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 'stable' may warn about its plateau: the same on both
        return base.fit(test, ref), dataclasses.replace(base, device=TORCH_DEVICE).fit(test, ref)


def _assert_same(a, b, tol: float) -> None:
    expected = "torch:cpu" if TORCH_DEVICE == "torch" else f"torch:{TORCH_DEVICE}"
    assert a.config["device"] == "numpy" and b.config["device"] == expected
    assert a.eigenvalues_scope == b.eigenvalues_scope and a.method == b.method
    scale = np.abs(a.eigenvalues).max()
    # the reported modes and the top of the spectrum (a dense solve's tail below round-off may differ in
    # length: the two backends factor G differently, see docs/devices.md)
    k = min(len(a.eigenvalues), len(b.eigenvalues), 10)
    np.testing.assert_allclose(b.eigenvalues[:k], a.eigenvalues[:k], rtol=0, atol=tol * scale)
    np.testing.assert_allclose(b.eigenvalues[-k:], a.eigenvalues[-k:], rtol=0, atol=tol * scale)
    assert b.distance == pytest.approx(a.distance, rel=max(tol, 1e-12))
    assert len(a.modes) == len(b.modes) > 0
    for x, y in zip(a.modes, b.modes, strict=True):
        assert y.eigenvalue == pytest.approx(x.eigenvalue, abs=tol * scale)
        assert [s.index for s in x.top_samples] == [s.index for s in y.top_samples]
        np.testing.assert_allclose([s.score for s in y.top_samples], [s.score for s in x.top_samples],
                                   atol=100 * tol * max(abs(s.score) for s in x.top_samples))
        # prompts by contribution: the same values rank for rank (prompts whose contributions tie to
        # round-off may swap places)
        cx, cy = ([p.contribution for p in m.top_prompts] for m in (x, y))
        np.testing.assert_allclose(cy, cx, rtol=0, atol=100 * tol * max(abs(c) for c in cx))
        for i, (p, q) in enumerate(zip(x.top_prompts, y.top_prompts, strict=True)):
            if all(abs(p.contribution - c) > 100 * tol * abs(cx[0]) for j, c in enumerate(cx) if j != i):
                assert p.prompt == q.prompt
        # the permutation test: the same relabellings (numpy-seeded) and the same statistic on both;
        # a p-value may move by one permutation only where a permuted eigenvalue ties the observed one
        assert abs(x.p_value - y.p_value) <= 1.0 / (PERMUTATIONS + 1) + 1e-12
    assert a.significance["n_significant"] == b.significance["n_significant"]


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize(("method", "kernel", "extra"), [
    ("exact", "gaussian", {}), ("exact", "cosine", {"solver": "lanczos"}),
    ("rff", "gaussian", {"n_features": 300}), ("sketch", "cosine", {"n_features": 300})])
@pytest.mark.slow
def test_every_route_gives_the_same_result_on_numpy_and_torch(method, kernel, extra, precision):
    a, b = _fit_both(method=method, kernel=kernel, precision=precision, **extra)
    _assert_same(a, b, TOL[(method, precision)])


@pytest.mark.parametrize("method", ["rff", "sketch"])
@pytest.mark.slow
def test_the_random_feature_routes_subspace_test_is_the_same_on_numpy_and_torch(method):
    """Above 128 samples and features the test runs on the features projected on the pooled second
    moment's leading eigenvectors (computed on the device from the same seeded draw)."""
    a, b = _fit_both(per_component=60, method=method, kernel="gaussian" if method == "rff" else "cosine",
                     n_features=300, precision="float32")
    assert a.n_test + a.n_reference > 128 and "principal subspace" in a.significance["statistic"]
    assert b.significance["statistic"] == a.significance["statistic"]
    _assert_same(a, b, TOL[(method, "float32")])


@pytest.mark.slow
def test_top_k_solvers_and_the_stable_bandwidth_scan_on_torch():
    # rff with more features than the dense limit: ARPACK on numpy, a dense eigh kept to the extremes on torch
    a, b = _fit_both(method="rff", n_features=1200, solver="lanczos")
    _assert_same(a, b, TOL[("rff", "float32")])
    a, b = _fit_both(method="exact", sigma_prompt="stable")
    assert a.config["sigma_prompt"] == pytest.approx(b.config["sigma_prompt"], rel=1e-12)
    _assert_same(a, b, TOL[("exact", "float64")])

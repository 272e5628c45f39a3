"""KID's and MMD's subset sums read off the k-NN metrics' distance blocks (:mod:`.subset_gather`) against the
float64 sums of the full kernel matrices on each subset (:func:`.kernel_sums.kernel_sums`, itself checked
against brute force in test_metrics_fast_core.py), through every path of the k-NN pass, with repeated
rows, an offset the centring must remove, and on threads."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from promptprism.methods.metrics import kid as kid_module
from promptprism.methods.metrics.kernel_sums import SubsetKernel, kernel_sums, mmd2_from_sums
from promptprism.methods.metrics.prdc import neighbour_indicators

FIELDS = ("rows_aa", "diag_aa", "rows_bb", "diag_bb", "rows_ab", "cols_ab")


def _sets(n: int, m: int, d: int, *, offset: float = 0.0, repeats: bool = False, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=(n, d)) + offset).astype(np.float32)
    y = (rng.normal(size=(m, d)) * 1.1 + offset + 0.05).astype(np.float32)
    if repeats:  # repeated rows: one row many times, and pairs of rows, in both sets
        x[10:60] = x[3]
        x[100:200:2] = x[101:201:2]
        y[7:30] = y[0]
    return x, y


def _gathered(x, y, *, sigma: float, subsets: int, size: int, block_rows: int | None = None):
    gather = kid_module.gather_subsets(x, y, kernel="gaussian", sigma=sigma, n_subsets=subsets,
                                       subset_size=size, seed=5)
    assert gather is not None
    neighbour_indicators(y, x, 5, gather=gather, block_rows=block_rows)
    return gather


@pytest.mark.parametrize("n, m, block_rows, offset, repeats", [
    (600, 550, None, 0.0, True),     # small sets: whole rows
    (3000, 2600, None, 3.0, False),  # the sample rows first (their block read once)
    (3000, 2600, 256, 0.0, True),    # the sample wider than a block: the bounds of their own product
])
def test_gathered_sums_are_the_full_kernel_matrices_sums(n, m, block_rows, offset, repeats):
    x, y = _sets(n, m, 24, offset=offset, repeats=repeats)
    sigma = 6.0
    gather = _gathered(x, y, sigma=sigma, subsets=4, size=500, block_rows=block_rows)
    kernels = [SubsetKernel("polynomial"), SubsetKernel("gaussian", sigma=sigma)]
    pairs = kid_module.subset_indices(n, m, 500, 4, 5)
    if repeats:
        assert any(np.unique(x[i], axis=0).shape[0] < i.size for i, _ in pairs)  # (a subset repeats rows)
    for got, (i, j) in zip(gather.sums(), pairs, strict=True):
        want = kernel_sums(x[i].astype(np.float64), y[j].astype(np.float64), kernels)
        for kernel, g, w in zip(kernels, got, want, strict=True):
            size = float(np.max(w.diag_aa))
            for field in FIELDS:  # each sum within float32's rounding of its entries' size
                a, b = getattr(g, field), getattr(w, field)
                per = 1 if field.startswith("diag") else 500
                assert np.max(np.abs(a - b)) <= 1e-6 * size * per, (kernel.kind, field)
            # an entry missing or counted twice would move MMD^2_u by ~size / 500^2 = 4e-6 size
            assert abs(mmd2_from_sums(g) - mmd2_from_sums(w)) <= 2e-8 * size, kernel.kind


def test_the_estimator_reads_its_kid_and_mmd_off_the_knn_blocks(monkeypatch):
    """float32 features: the same metrics and intervals as with KID's own Gram matrices, to float32's
    rounding; the k-NN indicators identical; float64 features take the Gram route."""
    from promptprism.methods.metrics import ReferenceMetrics
    from promptprism.methods.metrics import estimator as est_module

    x, y = _sets(2500, 2400, 32, offset=1.0, seed=3)
    calls = []
    real = est_module.gather_subsets

    def spied(*args, **kwargs):
        calls.append(real(*args, **kwargs))
        return calls[-1]

    monkeypatch.setattr(est_module, "gather_subsets", spied)
    opts = dict(bootstrap=0, subsets=6, subset_size=800)
    fused = ReferenceMetrics(**opts).fit(x, y).models[0]
    assert calls and calls[-1] is not None and calls[-1].cross is not None
    monkeypatch.setattr(est_module, "gather_subsets", lambda *a, **k: None)
    own = ReferenceMetrics(**opts).fit(x, y).models[0]
    for name in ("precision", "recall", "density", "coverage", "fd"):
        assert getattr(fused, name) == getattr(own, name), name
    assert fused.kid == pytest.approx(own.kid, rel=1e-5, abs=1e-9)
    assert fused.mmd2 == pytest.approx(own.mmd2, rel=1e-5, abs=1e-9)
    for name in ("kid", "mmd2"):
        for end in ("low", "high"):
            assert fused.intervals[name][end] == pytest.approx(own.intervals[name][end], rel=1e-5, abs=1e-9)
    assert kid_module.gather_subsets(x.astype(np.float64), y, kernel="gaussian", sigma=1.0) is None
    assert kid_module.gather_subsets(x, y, kernel="cosine") is None


def test_gathered_sums_do_not_depend_on_the_threads(monkeypatch):
    prdc_module = importlib.import_module("promptprism.methods.metrics.prdc")
    monkeypatch.setattr(prdc_module, "PARALLEL_ENTRIES", 1)
    monkeypatch.setattr(prdc_module, "MAX_BLOCK_ROWS", 96)
    x, y = _sets(1500, 1400, 16, repeats=True, seed=4)
    runs = []
    for cores in (1, 3, 3):
        monkeypatch.setattr("promptprism.scale.runner.usable_cores", lambda c=cores: c)
        runs.append(_gathered(x, y, sigma=4.0, subsets=3, size=600).sums())
    for other in runs[1:]:
        for a_pair, b_pair in zip(runs[0], other, strict=True):
            for a, b in zip(a_pair, b_pair, strict=True):
                for field in FIELDS:
                    np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)


def test_each_rows_rounded_norm_is_taken_out_of_its_distances():
    """The float32 product read each row's squared norm rounded; left in, that rounding shifts all of a
    row's distances alike and biases the gaussian MMD^2 (here 5.4e-10 from float64's; taken out: 0.9e-10,
    the float32 Gram route's 0.4e-10)."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(1500, 256)).astype(np.float32)
    y = (rng.normal(size=(1500, 256)) * 1.02 + 0.01).astype(np.float32)
    opts = dict(kernel="gaussian", sigma=float(np.sqrt(512)), n_subsets=3, subset_size=1000, seed=3)
    gather = kid_module.gather_subsets(x, y, **opts)
    neighbour_indicators(y, x, 5, gather=gather)
    _, fused = kid_module.kid_and_mmd2(x, y, **opts, gathered=gather)
    _, exact = kid_module.kid_and_mmd2(x.astype(np.float64), y.astype(np.float64), **opts)
    assert np.max(np.abs(fused - exact)) <= 2.2e-10


def test_a_bandwidth_tiny_against_the_rows_spread_keeps_the_gaussian_finite_and_right():
    """A near-constant reference takes the median-rule bandwidth to ~4e-6 while the generated rows spread
    over ~1: each row's norm-rounding term is then far too large for a factor exp(t) (it overflowed to inf
    and 0 x inf made the MMD NaN); it goes into the exponent, clipped at 0, and the MMD is float64's."""
    from promptprism.kernels.bandwidth import resolve_bandwidth

    rng = np.random.default_rng(0)
    ref = (np.ones((700, 8)) + rng.normal(size=(700, 8)) * 1e-6).astype(np.float32)
    gen = rng.normal(size=(700, 8)).astype(np.float32)
    sigma = resolve_bandwidth("median", ref, name="mmd_sigma", seed=0)
    opts = dict(kernel="gaussian", sigma=sigma, n_subsets=2, subset_size=600, seed=0)
    gather = kid_module.gather_subsets(gen, ref, **opts)
    neighbour_indicators(ref, gen, 5, gather=gather)
    _, fused = kid_module.kid_and_mmd2(gen, ref, **opts, gathered=gather)
    _, exact = kid_module.kid_and_mmd2(gen.astype(np.float64), ref.astype(np.float64), **opts)
    assert np.all(np.isfinite(fused))
    np.testing.assert_allclose(fused, exact, rtol=1e-5)


def test_sums_gathered_for_other_arguments_are_refused():
    x, y = _sets(60, 50, 4, seed=6)
    opts = dict(kernel="gaussian", sigma=1.0, n_subsets=3, subset_size=20, seed=5)
    unvisited = kid_module.gather_subsets(x, y, **opts)
    with pytest.raises(ValueError, match="not visited"):
        kid_module.kid_and_mmd2(x, y, **opts, gathered=unvisited)
    gather = kid_module.gather_subsets(x, y, **opts)
    neighbour_indicators(y, x, 3, gather=gather)
    for other in (dict(seed=6), dict(sigma=3.0), dict(n_subsets=5)):
        with pytest.raises(ValueError, match="other subsets or kernels"):
            kid_module.kid_and_mmd2(x, y, **{**opts, **other}, gathered=gather)
    assert kid_module.gather_subsets(x[:1], y, **opts) is None  # (the k-NN check then names the set)

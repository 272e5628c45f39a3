"""The shared statistics of ``stats/`` (resampling, two-sample, moments) give, to the bit, what each method's
own copy gave before it was moved there: the copies are restated here as oracles, step for step."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.errors import InputError
from promptprism.stats.moments import MomentsAccumulator, feature_moments, weighted_moments
from promptprism.stats.resampling import (
    basic_interval,
    cluster_counts,
    grouped_replicates,
    jackknife_counts,
    percentile_interval,
    prompt_draws,
)
from promptprism.stats.two_sample import center_gram, center_symmetric_, holm, mmd2


# ------------------------------------------------------------------------- the copies, as they stood
def _holm_findings(p_values):  # methods/metrics/findings.py (argsort's default kind)
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p)
    adjusted = np.empty_like(p)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (p.size - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


def _holm_naming(p_values):  # methods/naming/verify.py (a stable sort)
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    k = p.size
    adjusted = np.empty(k)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (k - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


def _feature_moments_frechet(x, block=8192):  # methods/metrics/frechet.py
    n = int(x.shape[0])
    shift = np.asarray(x[: min(n, block)], dtype=np.float64).mean(axis=0)
    total = np.zeros(x.shape[1])
    cross = np.zeros((x.shape[1], x.shape[1]))
    for start in range(0, n, block):
        b = np.asarray(x[start : start + block], dtype=np.float64) - shift
        total += b.sum(axis=0)
        cross += b.T @ b
    centred_mean = total / n
    cov = (cross - n * np.outer(centred_mean, centred_mean)) / (n - 1)
    return centred_mean + shift, (cov + cov.T) / 2


def _percentile_scendi(values, level):  # methods/scendi/bootstrap.py
    lo, hi = np.nanquantile(np.asarray(values, dtype=np.float64), [(1 - level) / 2, (1 + level) / 2])
    return {"low": float(lo), "high": float(hi)}


def _percentile_regions(replicates, level=0.95):  # methods/regions/comparison.py
    return tuple(np.quantile(replicates, [(1.0 - level) / 2.0, (1.0 + level) / 2.0], axis=-1))


# ---------------------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("seed", range(5))
def test_one_holm_equals_both_copies_ties_and_nan_included(seed):
    rng = np.random.default_rng(seed)
    p = np.round(rng.random(40), 2)  # many ties
    p[::7] = np.nan
    for values in (p, p[:1], p[:0], [0.01, 0.04, 0.03], [0.6, 0.9, 0.9]):
        assert holm(values) == _holm_findings(values) == _holm_naming(values)


def test_feature_moments_to_the_bit_and_the_accumulator_merges():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 7)) * 3 + 1e3
    mu, cov = feature_moments(x)
    mu_old, cov_old = _feature_moments_frechet(x)
    assert np.array_equal(mu, mu_old) and np.array_equal(cov, cov_old)
    parts = [MomentsAccumulator(7).update(x[a:b]) for a, b in ((0, 50), (50, 51), (51, 300))]
    merged = parts[0].merge(parts[1]).merge(MomentsAccumulator(7)).merge(parts[2])
    m2, c2 = merged.compute()
    np.testing.assert_allclose(m2, x.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(c2, np.cov(x, rowvar=False), rtol=1e-9)
    m3, c3 = MomentsAccumulator(7).merge(parts[2]).compute()
    np.testing.assert_allclose(c3, np.cov(x[51:], rowvar=False), rtol=1e-9)
    with pytest.raises(InputError, match="at least 2 rows"):
        MomentsAccumulator(7).update(x[:1]).compute()


def test_weighted_moments_are_the_repeated_rows_moments():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(20, 3))
    w = rng.integers(0, 4, 20).astype(np.float64)
    mu, cov = weighted_moments(x, w)
    rep = np.repeat(x, w.astype(int), axis=0)
    np.testing.assert_allclose(mu, rep.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(cov, np.cov(rep, rowvar=False), rtol=1e-10)


def test_one_percentile_interval_gives_each_callers_numbers():
    rng = np.random.default_rng(2)
    reps = rng.normal(size=(5, 199))
    lo, hi = percentile_interval(reps, 0.9, axis=-1, omit_nan=False)
    lo_old, hi_old = _percentile_regions(reps, 0.9)
    assert np.array_equal(lo, lo_old) and np.array_equal(hi, hi_old)
    flat = reps[0].copy()
    flat[3] = np.nan
    lo, hi = percentile_interval(flat, 0.95)
    assert {"low": float(lo), "high": float(hi)} == _percentile_scendi(flat, 0.95)


def test_basic_interval_is_the_fd_bootstraps_reflection_clipped_at_zero():
    vals = np.random.default_rng(3).gamma(2.0, size=300)
    for e in (0.1, 2.0, 5.0):
        q = _percentile_scendi(vals, 0.95)
        old = {"low": max(2.0 * e - q["high"], 0.0), "high": max(2.0 * e - q["low"], 0.0)}
        assert basic_interval(vals, e, 0.95, bounds=(0.0, None)) == old


def test_grouped_draws_and_the_jackknife_counts():
    counts = prompt_draws(6, 50, seed=4)
    assert counts.shape == (50, 6) and (counts.sum(axis=1) == 6).all()
    assert (np.count_nonzero(counts, axis=1) > 1).all()  # never one prompt drawn six times
    groups = np.array([0, 0, 2, 2, 2, 3])
    jk = jackknife_counts(groups)
    assert jk.tolist() == [[0, 0, 1, 1], [1, 0, 0, 1], [1, 0, 1, 0]]
    rows = cluster_counts(groups, 6, 3, seed=1)
    assert rows.shape == (3, 6) and (rows[:, 0] == rows[:, 1]).all()
    def estimate(rows, weights, groups_, b):
        return {"n": float(len(rows)), "w": float(weights.sum())}

    reps = grouped_replicates(groups, jk, estimate, ("n", "w"))
    assert reps["n"].tolist() == [4.0, 3.0, 5.0] and np.allclose(reps["w"], 1.0)


def test_mmd2_is_the_region_blocks_inline_form():
    rng = np.random.default_rng(5)
    sxx, sxy, syy = (rng.random((9, 9)) * 4 for _ in range(3))
    gamma = 0.7
    old = float(np.mean(np.exp(-gamma * sxx)) + np.mean(np.exp(-gamma * syy))
                - 2.0 * np.mean(np.exp(-gamma * sxy)))
    assert mmd2(np.exp(-gamma * sxy), np.exp(-gamma * sxx), np.exp(-gamma * syy)) == old


def test_mmd2_on_torch_is_the_inline_form_there():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    kxx, kxy, kyy = (torch.as_tensor(rng.random((6, 6))) for _ in range(3))
    assert mmd2(kxy, kxx, kyy) == float(torch.mean(kxx) + torch.mean(kyy) - 2.0 * torch.mean(kxy))
    with pytest.raises(InputError):
        mmd2(kxy, kxx, kyy, unbiased=True)


def test_in_place_centring_of_symmetric_stacks():
    rng = np.random.default_rng(7)
    a = rng.random((3, 5, 5))
    k = a + np.transpose(a, (0, 2, 1))
    old = k.copy()  # pixel_cka's steps, as they stood
    r = np.mean(old, axis=2)
    mu = np.mean(r, axis=1)
    old -= r[:, :, None]
    old -= r[:, None, :]
    old += mu[:, None, None]
    new = center_symmetric_(k.copy())
    assert np.array_equal(new, old)
    np.testing.assert_allclose(new, center_gram(k), atol=1e-12)


def test_gram_statistics_refuse_non_finite_entries_and_vendi_a_real_negative_eigenvalue():
    """cms, mmd2, hsic and cka returned NaN (or inf) for a Gram matrix holding one; vendi_score dropped an
    eigenvalue of -0.1 as if it were round-off. Each is now one InputError naming the entry."""
    from promptprism.methods.regions.two_sample import cms
    from promptprism.methods.scendi.core import rke_score, vendi_score
    from promptprism.stats.two_sample import cka, hsic

    k = np.array([[1.0, 0.9, 0.0], [0.9, 1.0, 0.0], [0.0, 0.0, 1.0]])
    for bad_value, word in ((np.nan, "NaN"), (np.inf, "inf")):
        bad = k.copy()
        bad[0, 1] = bad_value
        for func, args in ((cms, (bad, k, k)), (cms, (k, bad, k)), (mmd2, (k, k, bad)), (hsic, (bad, k)),
                           (cka, (k, bad))):
            with pytest.raises(InputError, match=f"row 0 \\(0-based\\), column 1 is {word}"):
                func(*args)
    with pytest.raises(InputError, match="entry 2 .* -0.1"):
        vendi_score([0.6, 0.5, -0.1])
    with pytest.raises(InputError, match="negative eigenvalue"):
        rke_score([0.6, 0.5, -0.1])
    assert vendi_score([0.5, 0.5, -1e-12]) == pytest.approx(2.0)  # round-off is still dropped

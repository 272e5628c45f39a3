"""Kernels: Gram matrices against their loop definitions, random feature maps, bandwidth rules."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.errors import InputError, OptionError
from promptprism.kernels import (
    ProductRandomFourierFeatures,
    ProductRandomProjection,
    RandomFourierFeatures,
    cosine_features,
    cosine_gram,
    gaussian_gram,
    kernel_gram,
    median_pairwise_distance,
    resolve_bandwidth,
    squared_distances,
)
from promptprism.kernels.bandwidth import Bandwidth


def _cos_loop(a, b):
    out = np.empty((len(a), len(b)))
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i, j] = float(x @ y) / (np.sqrt(x @ x) * np.sqrt(y @ y))
    return out


def _gauss_loop(a, b, sigma):
    out = np.empty((len(a), len(b)))
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i, j] = np.exp(-np.sum((x - y) ** 2) / (2 * sigma**2))
    return out


def _brute_median(x):
    d = [np.sqrt(np.sum((x[i] - x[j]) ** 2)) for i in range(len(x)) for j in range(i + 1, len(x))]
    d = np.array(d)
    return float(np.median(d[d > 0]))


@pytest.fixture
def data():
    rng = np.random.default_rng(1)
    return rng.standard_normal((12, 5)) * 2.0, rng.standard_normal((9, 5)) + 1.0


# --------------------------------------------------------------------------------------------- Gram
def test_cosine_gram_matches_loops(data):
    a, b = data
    np.testing.assert_allclose(cosine_gram(a, b), _cos_loop(a, b), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(cosine_gram(a), _cos_loop(a, a), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kernel_gram("cosine", a, b), _cos_loop(a, b), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("sigma", [0.7, 2.5])
def test_gaussian_gram_matches_loops(data, sigma):
    a, b = data
    np.testing.assert_allclose(gaussian_gram(a, b, sigma=sigma), _gauss_loop(a, b, sigma), rtol=1e-10,
                               atol=1e-14)
    np.testing.assert_allclose(gaussian_gram(a, sigma=sigma), _gauss_loop(a, a, sigma), rtol=1e-10,
                               atol=1e-14)
    np.testing.assert_allclose(kernel_gram("gaussian", a, b, sigma=sigma), _gauss_loop(a, b, sigma),
                               rtol=1e-10, atol=1e-14)


def test_squared_distances_matches_loops(data):
    a, b = data
    ref = np.array([[np.sum((x - y) ** 2) for y in b] for x in a])
    np.testing.assert_allclose(squared_distances(a, b), ref, rtol=1e-10)
    d = squared_distances(a)
    assert np.all(np.diag(d) == 0.0) and np.all(d >= 0)


@pytest.mark.parametrize("kernel", ["cosine", "gaussian"])
def test_kernels_are_normalised(data, kernel):
    a, _ = data
    k = kernel_gram(kernel, a, a, sigma=1.3)
    np.testing.assert_allclose(np.diag(k), 1.0, rtol=0, atol=1e-12)
    k = kernel_gram(kernel, a, sigma=1.3)
    np.testing.assert_allclose(np.diag(k), 1.0, rtol=0, atol=1e-12)
    assert np.all(np.abs(k) <= 1.0 + 1e-12)


def test_kernel_gram_rejects_bad_options(data):
    a, _ = data
    with pytest.raises(OptionError, match="unknown kernel"):
        kernel_gram("laplace", a)
    with pytest.raises(OptionError, match="bandwidth"):
        kernel_gram("gaussian", a)
    with pytest.raises(OptionError):
        gaussian_gram(a, sigma=0.0)


def test_cosine_features_exact(data):
    a, b = data
    fa, fb = cosine_features(a), cosine_features(b)
    np.testing.assert_allclose(fa @ fb.T, _cos_loop(a, b), rtol=1e-12, atol=1e-14)
    bad = a.copy()
    bad[4] = 0.0
    with pytest.raises(InputError, match="row 4"):
        cosine_features(bad)


# ------------------------------------------------------------------------------- random features
def test_rff_converges_to_gaussian_kernel():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((15, 4))
    sigma = 1.5
    exact = _gauss_loop(x, x, sigma)
    errors = []
    for n_features in (50, 800, 12800):
        errs = []
        for seed in range(4):
            phi = RandomFourierFeatures(4, n_features, sigma, seed=seed).transform(x)
            np.testing.assert_allclose(np.sum(phi * phi, axis=1), 1.0, rtol=1e-12)  # k(a, a) = 1 exactly
            errs.append(np.mean(np.abs(phi @ phi.T - exact)))
        errors.append(np.mean(errs))
    # each step multiplies the feature count by 16: the error should shrink by ~4 (1/sqrt(D))
    assert errors[0] > 2.0 * errors[1] > 4.0 * errors[2]
    assert errors[2] < 0.02


def test_product_rff_is_rff_of_rescaled_concatenation():
    rng = np.random.default_rng(3)
    t, z = rng.standard_normal((10, 3)), rng.standard_normal((10, 4))
    st, sz = 0.8, 2.0
    prod = ProductRandomFourierFeatures(3, 4, 400, st, sz, seed=5)
    joint = RandomFourierFeatures(7, 400, 1.0, seed=5)
    # same seed draws the same standard normal frequencies: the two maps coincide exactly
    np.testing.assert_allclose(prod.transform(t, z), joint.transform(np.hstack([t / st, z / sz])),
                               rtol=1e-10, atol=1e-12)
    # and in expectation (other seeds, many features) both estimate K_T o K_Z
    target = _gauss_loop(t, t, st) * _gauss_loop(z, z, sz)
    big = ProductRandomFourierFeatures(3, 4, 40000, st, sz, seed=11).transform(t, z)
    concat = RandomFourierFeatures(7, 40000, 1.0, seed=12).transform(np.hstack([t / st, z / sz]))
    assert np.max(np.abs(big @ big.T - target)) < 0.05
    assert np.max(np.abs(concat @ concat.T - target)) < 0.05
    assert np.max(np.abs(big @ big.T - concat @ concat.T)) < 0.08


def test_sketch_map_is_unbiased():
    rng = np.random.default_rng(4)
    t, z = rng.standard_normal((8, 3)), rng.standard_normal((8, 5))
    target = _cos_loop(t, t) * _cos_loop(z, z)
    grams = [
        (lambda f: f @ f.T)(ProductRandomProjection(3, 5, 500, seed=s).transform(t, z)) for s in range(40)
    ]
    mean = np.mean(grams, axis=0)
    # averaged over 40 seeds x 500 features the estimate is within a few standard errors of the truth
    assert np.max(np.abs(mean - target)) < 0.05
    single = np.abs(grams[0] - target).max()
    assert np.max(np.abs(mean - target)) < single


@pytest.mark.parametrize(
    "make",
    [
        lambda s: RandomFourierFeatures(3, 20, 1.0, seed=s),
        lambda s: ProductRandomFourierFeatures(3, 3, 20, 1.0, 2.0, seed=s),
        lambda s: ProductRandomProjection(3, 3, 20, seed=s),
    ],
)
def test_feature_maps_are_seeded(make):
    rng = np.random.default_rng(5)
    t, z = rng.standard_normal((6, 3)), rng.standard_normal((6, 3))

    def feats(seed):
        fmap = make(seed)
        return fmap.transform(t) if isinstance(fmap, RandomFourierFeatures) else fmap.transform(t, z)

    np.testing.assert_array_equal(feats(7), feats(7))
    assert not np.allclose(feats(7), feats(8))


def test_feature_maps_reject_bad_input():
    with pytest.raises(OptionError, match="even"):
        RandomFourierFeatures(3, 21, 1.0)
    with pytest.raises(OptionError):
        ProductRandomFourierFeatures(3, 3, 0, 1.0, 1.0)
    with pytest.raises(OptionError):
        ProductRandomFourierFeatures(3, 3, 10, -1.0, 1.0)
    with pytest.raises(InputError, match="prompt embeddings"):
        ProductRandomProjection(3, 4, 10).transform(np.ones((2, 4)), np.ones((2, 4)))


# ------------------------------------------------------------------------------------- bandwidth
def test_median_rule_matches_brute_force():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((40, 6)) * 3.0
    expected = _brute_median(x)
    assert median_pairwise_distance(x) == pytest.approx(expected, rel=1e-10)
    assert resolve_bandwidth("median", x) == pytest.approx(expected, rel=1e-10)
    assert resolve_bandwidth("0.5*median", x) == pytest.approx(0.5 * expected, rel=1e-10)
    assert resolve_bandwidth(" 2 * Median ", x) == pytest.approx(2.0 * expected, rel=1e-10)


def test_median_rule_ignores_repeated_rows():
    # a prompt bank with few distinct prompts: most pairs are exact duplicates (distance 0)
    rng = np.random.default_rng(7)
    base = rng.standard_normal((5, 64)) * 3.0 + 2.0
    x = np.repeat(base, 12, axis=0)
    expected = _brute_median(x)
    assert median_pairwise_distance(x) == pytest.approx(expected, rel=1e-10)
    # one distinct row: there is no distance to measure
    same = np.repeat(base[:1], 10, axis=0)
    assert np.isnan(median_pairwise_distance(same))
    with pytest.raises(OptionError, match="distinct"):
        resolve_bandwidth("median", same)


def test_median_rule_subsample_is_seeded():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((300, 3))
    a = median_pairwise_distance(x, max_samples=50, seed=1)
    assert a == median_pairwise_distance(x, max_samples=50, seed=1)
    assert a != median_pairwise_distance(x, max_samples=50, seed=2)
    # a subsample of 50 rows: brute force on exactly those rows
    idx = np.sort(np.random.default_rng(1).choice(300, size=50, replace=False))
    assert a == pytest.approx(_brute_median(x[idx]), rel=1e-10)


@pytest.mark.parametrize("value", [0.25, 3, np.float32(1.5), "2.5", "1e-3"])
def test_numbers_pass_through(value):
    x = np.random.default_rng(9).standard_normal((5, 2))
    assert resolve_bandwidth(value, x) == pytest.approx(float(value))


@pytest.mark.parametrize("spec", ["abc", -1, 0, "0", "-1", "median*x", "0*median", "nan", float("inf"),
                                  True, None, "mean"])
def test_bad_bandwidth_specs_raise(spec):
    with pytest.raises(OptionError, match="sigma_prompt"):
        Bandwidth.parse(spec, "sigma_prompt")
    with pytest.raises(OptionError):
        resolve_bandwidth(spec, np.eye(3))

"""Fréchet distance against its reference implementations (clean-fid's formula, torchmetrics' FID)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from promptprism.errors import InputError
from promptprism.methods.metrics import feature_moments, frechet_distance, frechet_distance_from_moments


def cleanfid_frechet_distance(mu1, sigma1, mu2, sigma2):
    """clean-fid's ``cleanfid.fid.frechet_distance`` formula, restated as the oracle (same steps).

    ``scipy.linalg.sqrtm`` of the non-symmetric product ``sigma1 @ sigma2``, its real part, traced. clean-fid
    cannot be imported here: ``cleanfid.fid`` imports torchvision at module level, and torchvision is not a
    promptprism dependency (nor installable beside the CPU-only torch), so its formula is restated.
    """
    diff = np.atleast_1d(mu1) - np.atleast_1d(mu2)
    root = scipy.linalg.sqrtm(np.atleast_2d(sigma1) @ np.atleast_2d(sigma2))
    return float(diff @ diff + np.trace(sigma1) + np.trace(sigma2) - 2 * np.trace(np.real(root)))


def _sets(n=400, d=16, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d)) / np.sqrt(d)
    x = rng.normal(size=(n, d)) @ a
    y = rng.normal(size=(n, d)) @ (a + 0.3 * np.eye(d)) + 0.5
    return x.astype(dtype), y.astype(dtype)


def test_moments_match_numpy_in_row_blocks(monkeypatch):
    from promptprism.stats import moments

    monkeypatch.setattr(moments, "MOMENT_BLOCK_ROWS", 37)  # several blocks and a ragged last one
    x, _ = _sets()
    x = x + 1e3  # a large mean: the shifted accumulation must not lose the covariance
    mu, cov = feature_moments(x)
    np.testing.assert_allclose(mu, x.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(cov, np.cov(x, rowvar=False), rtol=1e-9, atol=1e-12)


def test_equals_cleanfid_formula():
    x, y = _sets()
    mu1, s1 = x.mean(0), np.cov(x, rowvar=False)
    mu2, s2 = y.mean(0), np.cov(y, rowvar=False)
    ours = frechet_distance(x, y)
    assert ours == pytest.approx(cleanfid_frechet_distance(mu1, s1, mu2, s2), rel=1e-6)
    assert ours == pytest.approx(frechet_distance_from_moments(mu1, s1, mu2, s2), rel=1e-10)


@pytest.mark.slow  # imports torchmetrics (and transformers through it): the slow tier
def test_equals_torchmetrics_fid_with_identity_features():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchmetrics")
    from torchmetrics.image.fid import FrechetInceptionDistance

    x, y = _sets(n=300, d=12, seed=1)

    class Identity(torch.nn.Module):
        num_features = 12

        def forward(self, z):
            return z

    metric = FrechetInceptionDistance(feature=Identity(), normalize=True)
    metric.set_dtype(torch.float64)
    metric.update(torch.from_numpy(y), real=True)
    metric.update(torch.from_numpy(x), real=False)
    assert frechet_distance(x, y) == pytest.approx(float(metric.compute()), rel=1e-6)


def test_identical_sets_give_zero_and_gaussian_closed_form():
    x, _ = _sets()
    assert frechet_distance(x, x) == pytest.approx(0.0, abs=1e-9)
    # 1-D closed form: (m1 - m2)^2 + (s1 - s2)^2
    assert frechet_distance_from_moments([1.0], [[4.0]], [3.0], [[9.0]]) == pytest.approx(4.0 + 1.0)


def test_float32_near_singular_product_is_stable():
    # n < d: both covariances are rank-deficient, their product is near-singular; sqrtm of the product
    # returns complex parts there, the symmetric eigenvalue route does not
    x, y = _sets(n=60, d=128, seed=2, dtype=np.float32)
    d32 = frechet_distance(x, y)
    d64 = frechet_distance(x.astype(np.float64), y.astype(np.float64))
    assert d32 == pytest.approx(d64, rel=1e-5)
    mu1, s1 = feature_moments(x.astype(np.float64))
    mu2, s2 = feature_moments(y.astype(np.float64))
    assert d64 == pytest.approx(cleanfid_frechet_distance(mu1, s1, mu2, s2), rel=1e-6)


def test_mismatched_dimensions_refused():
    x, _ = _sets(d=8)
    _, y = _sets(d=9)
    with pytest.raises(InputError, match="same encoder"):
        frechet_distance(x, y)
    with pytest.raises(InputError, match="sigma2"):
        frechet_distance_from_moments(np.zeros(3), np.eye(3), np.zeros(3), np.eye(4))

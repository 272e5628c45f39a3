"""PromptSplit's torch backend (``device``): the same features, covariances and results as numpy.

CPU torch here; on a machine with CUDA, ``device='auto'`` runs the same code there (same tolerances).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from promptprism import PromptSplit  # noqa: E402
from promptprism.backend import NUMPY, resolve_backend, to_numpy  # noqa: E402
from promptprism.datasets import gaussian_mixture  # noqa: E402
from promptprism.errors import OptionError  # noqa: E402
from promptprism.kernels import ProductRandomFourierFeatures, ProductRandomProjection  # noqa: E402
from promptprism.methods.promptsplit import core  # noqa: E402

TORCH = resolve_backend("torch")  # CPU torch; the same code runs on CUDA with device='cuda' / 'auto'


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("kind", ["rff", "sketch"])
def test_torch_features_and_covariance_equal_numpy(kind, precision):
    rng = np.random.default_rng(0)
    t, z = rng.standard_normal((300, 6)) + 3.0, rng.standard_normal((300, 9))
    if kind == "rff":
        # exact cos/sin in float64; with float32 (fast) cos/sin the libraries' cos may differ by 1 ulp
        fmap = ProductRandomFourierFeatures(6, 9, 120, 2.0, 3.0, seed=1, fast_trig=precision == "float32",
                                           precision=precision, center=(t.mean(0), z.mean(0)))
    else:
        fmap = ProductRandomProjection(6, 9, 120, seed=1, precision=precision)
    tol = 1e-12 if precision == "float64" else 1e-5
    f_np = fmap.transform(t, z)
    f_t = to_numpy(fmap.transform(TORCH.asarray(t), TORCH.asarray(z)))
    assert f_t.dtype == f_np.dtype
    np.testing.assert_allclose(f_t, f_np, rtol=0, atol=tol * np.abs(f_np).max())
    ref = core.covariance_partition(fmap, t, z, 0, 300, 64, NUMPY).compute()
    acc = core.covariance_partition(fmap, t, z, 0, 300, 64, TORCH)
    assert acc.count == 300 and acc.sum_upper.dtype == np.float64
    np.testing.assert_allclose(acc.compute(), ref, rtol=0, atol=tol * np.abs(ref).max())


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_torch_fit_equals_numpy_fit(precision):
    test, ref, differ = gaussian_mixture(2, per_component=30, seed=0)
    base = PromptSplit(method="rff", n_features=400, n_modes=3, seed=0, permutations=0, precision=precision,
                       device="cpu")
    r_np = base.fit(test, ref)
    r_t = dataclasses.replace(base, device="torch").fit(test, ref)
    assert r_np.config["device"] == "numpy" and r_t.config["device"] == TORCH.label
    scale = np.abs(r_np.eigenvalues).max()
    # the estimator's rff map evaluates cos/sin in float32 in both precisions (``fast_trig``), where numpy's
    # and torch's cos may differ by one float32 ulp: results agree to ~1e-7 relative, not to 1e-15
    tol = 1e-6
    np.testing.assert_allclose(r_t.eigenvalues, r_np.eigenvalues, rtol=0, atol=tol * scale)
    assert r_t.distance == pytest.approx(r_np.distance, rel=tol)
    for a, b in zip(r_np.modes, r_t.modes, strict=True):
        assert [s.index for s in a.top_samples] == [s.index for s in b.top_samples]
        assert [p.prompt for p in a.top_prompts] == [p.prompt for p in b.top_prompts]


def test_device_option_is_checked_and_auto_is_numpy_without_a_gpu():
    with pytest.raises(OptionError, match="device"):
        PromptSplit(device="gpu")
    test, ref, _ = gaussian_mixture(1, per_component=10, seed=1)
    res = PromptSplit(method="exact", device="auto", permutations=0, n_modes=2).fit(test, ref)
    assert res.config["device"] == ("torch:cuda" if torch.cuda.is_available() else "numpy")

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
    rows = [(t, z, 0, 300, 1.0, None)]  # (one part of weight 1: sum_i psi psi^T over the rows)
    ref = core.difference_partition(fmap, rows, 64, NUMPY).compute()
    acc = core.difference_partition(fmap, rows, 64, TORCH)
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


_HOST_READS = {"__float__", "__int__", "__bool__", "__index__", "item", "tolist", "numpy", "cpu"}


class _DeviceLog(torch.overrides.TorchFunctionMode):
    """Counts reads of device values by the host (each a synchronisation on an accelerator) and the dtypes
    of the tensors made, per route phase."""

    def __init__(self) -> None:
        super().__init__()
        self.reads, self.dtypes = 0, set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.reads += getattr(func, "__name__", "") in _HOST_READS
        if isinstance(out, torch.Tensor):
            self.dtypes.add(out.dtype)
        return out


def _logged_phases(monkeypatch, log: dict) -> None:
    from promptprism.methods.promptsplit import routes

    for name in ("covariance", "mode_stats"):
        method = getattr(routes.FeatureRoute, name)

        def logged(*args, _method=method, _name=name, **kwargs):
            with _DeviceLog() as seen:
                out = _method(*args, **kwargs)
            log[_name] = seen
            return out

        monkeypatch.setattr(routes.FeatureRoute, name, logged)


@pytest.mark.parametrize("keep", [True, False])
def test_torch_pass_reads_the_device_a_fixed_number_of_times_whatever_the_chunks(monkeypatch, keep):
    """On a device the covariance pass and the scoring read nothing back per chunk (the phase-range check
    once per pass, the scores once per side): 10 or 50 chunks a set read the device equally often. In
    float32 no float64 tensor is made on the device (Apple's MPS has none)."""
    from promptprism.methods.promptsplit import routes

    if not keep:  # features not kept: the scoring is a second streaming pass
        monkeypatch.setattr(routes, "feature_memory", lambda backend: 0)
    log: dict = {}
    _logged_phases(monkeypatch, log)
    rng = np.random.default_rng(0)
    t, t2 = (rng.standard_normal((400, 6)).astype(np.float32) for _ in range(2))
    z, z2 = rng.standard_normal((400, 5)).astype(np.float32), rng.standard_normal((400, 5)).astype(np.float32)
    reads = {}
    for chunk in (40, 8):
        est = PromptSplit(method="rff", n_features=64, n_modes=3, chunk_size=chunk, seed=0, permutations=0,
                          precision="float32", device="torch")
        est.fit((t, z), (t2, z2))
        reads[chunk] = {phase: seen.reads for phase, seen in log.items()}
        assert torch.float64 not in log["covariance"].dtypes
    assert reads[8] == reads[40]
    assert reads[8]["covariance"] <= 12 and reads[8]["mode_stats"] <= 8  # (not kept: per task)


def test_deferred_phase_check_raises_at_the_end_of_a_pass_for_any_chunk():
    """A torch pass records each chunk's phase range on the device and checks it once: a bandwidth too small
    for the rows of the last chunk alone is still refused, naming sigma; ordinary rows pass."""
    from promptprism.kernels.features import PhaseRange

    rng = np.random.default_rng(1)
    t, z = rng.standard_normal((90, 3)).astype(np.float32), rng.standard_normal((90, 2)).astype(np.float32)
    fmap = ProductRandomFourierFeatures(3, 2, 16, 1e-3, 1.0, fast_trig=True, precision="float32")
    parts = [(t, z, 0, 90, 0, None)]
    core.side_moments_partition(fmap, parts, 30, TORCH)  # phases up to ~1e4 * 0.06 rad: accepted
    far = t.copy()
    far[-1] *= 1e3  # only the last chunk's phases lose their precision in float32
    with pytest.raises(OptionError, match="sigma"):
        core.side_moments_partition(fmap, [(far, z, 0, 90, 0, None)], 30, TORCH)
    phases = PhaseRange()
    for a in range(0, 90, 30):
        fmap.transform(TORCH.asarray(far[a:a + 30]), TORCH.asarray(z[a:a + 30]), phases=phases)
    with pytest.raises(OptionError, match="sigma"):
        phases.check()


def test_torch_float32_running_sum_is_compensated():
    """The float32 running sum on a device (Kahan's compensation) keeps the float64 sum of the same float32
    products to ~1e-9 over 2,000 batches, where a plain float32 sum drifts by ~1e-6; a float64 host sum it
    starts from keeps its low digits."""
    from promptprism.stats.accumulators import CovarianceAccumulator

    rng = np.random.default_rng(0)
    batches = [(1.0 + 0.1 * rng.standard_normal((16, 8))).astype(np.float32) for _ in range(2000)]
    products = [(torch.from_numpy(b).T @ torch.from_numpy(b)).double().numpy() for b in batches]
    reference = np.sum(products, axis=0)
    acc, plain = CovarianceAccumulator(8, precision="float32"), torch.zeros(8, 8)
    for b in batches:
        acc.update(torch.from_numpy(b))
        plain += torch.from_numpy(b).T @ torch.from_numpy(b)
    scale = np.abs(reference).max()
    assert np.abs(plain.double().numpy() - reference).max() > 1e-7 * scale  # the set-up drifts in float32
    acc.to_host()
    assert acc.sum_upper.dtype == np.float64 and acc.count == 32000
    assert np.abs(acc.sum_upper - reference).max() < 1e-8 * scale
    start = np.full((8, 8), 1.0 + 2.0**-40)  # below float32's resolution
    acc = CovarianceAccumulator(8, sum_upper=start.copy(order="F"), precision="float32")
    acc.update(torch.from_numpy(batches[0]), weight=0.0)
    np.testing.assert_array_equal(acc.to_host().sum_upper, start)
    acc.update(torch.from_numpy(batches[0]))
    acc.reset()
    assert not acc.to_host().sum_upper.any()

"""PromptSplit's ``precision`` option: float32 results equal float64 ones to a documented tolerance.

Tolerance (docs/precision.md): every eigenvalue within ``FLOAT32_RTOL`` times the largest |eigenvalue| of its
float64 value (measured: at most 1.4e-7 on the demo and planted data, both routes), the PromptSplit distance
within ``FLOAT32_RTOL`` relative, and the top modes' samples, their prompts and the prompt ranking unchanged.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from promptprism import PairedSet, PromptSplit
from promptprism.datasets import colored_digits, gaussian_mixture
from promptprism.errors import OptionError
from promptprism.kernels import ProductRandomFourierFeatures, ProductRandomProjection
from promptprism.stats.accumulators import CovarianceAccumulator
from promptprism.stats.eigen import weighted_gram_eigenpairs

FLOAT32_RTOL = 1e-6


def _assert_same_findings(r64, r32):
    v64, v32 = np.array(r64.eigenvalues), np.array(r32.eigenvalues)
    scale = np.max(np.abs(v64))
    k = min(v64.size, v32.size)
    assert k > 0
    np.testing.assert_allclose(v32[:k], v64[:k], rtol=0, atol=FLOAT32_RTOL * scale)
    assert r32.distance == pytest.approx(r64.distance, rel=FLOAT32_RTOL)
    assert len(r32.modes) == len(r64.modes)
    for a, b in zip(r64.modes, r32.modes, strict=True):
        assert (a.side, a.rank) == (b.side, b.rank)
        assert b.eigenvalue == pytest.approx(a.eigenvalue, abs=FLOAT32_RTOL * scale)
        assert [s.index for s in b.top_samples] == [s.index for s in a.top_samples]
        assert [s.index for s in b.top_samples_other] == [s.index for s in a.top_samples_other]
        assert [p.prompt for p in b.top_prompts] == [p.prompt for p in a.top_prompts]
    assert [r["prompt"] for r in r32.prompt_ranking] == [r["prompt"] for r in r64.prompt_ranking]


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize(("method", "extra"), [("exact", {}), ("rff", {"n_features": 1000})])
def test_planted_float32_equals_float64(k, method, extra):
    test, ref, differ = gaussian_mixture(k, per_component=40, seed=0)
    base = PromptSplit(kernel="gaussian", method=method, n_modes=k + 1, top_k=10, seed=0, permutations=0,
                       **extra)
    r64 = dataclasses.replace(base, precision="float64").fit(test, ref)
    r32 = dataclasses.replace(base, precision="float32").fit(test, ref)
    assert (r64.config["precision"], r32.config["precision"]) == ("float64", "float32")
    _assert_same_findings(r64, r32)
    if method == "exact":  # and the float32 fit still finds the planted components
        moved = {f"component {c}" for c in differ}
        assert {m.top_samples[0].prompt for m in r32.positive_modes[:k]} == moved


@pytest.mark.slow
def test_demo_rff_float32_equals_float64():
    d = colored_digits(per_prompt=40, seed=0)
    base = PromptSplit(seed=0, method="rff", n_features=1000, permutations=0)
    r64 = dataclasses.replace(base, precision="float64").fit(d.test, d.reference)
    r32 = base.fit(d.test, d.reference)  # auto: float32 on the random-feature route
    assert r32.config["precision"] == "float32"
    _assert_same_findings(r64, r32)
    expected = set(d.altered_test) | set(d.altered_reference)
    assert {row["prompt"] for row in r32.prompt_ranking[:10]} == expected


@pytest.mark.slow
def test_demo_exact_float32_equals_float64():
    d = colored_digits(per_prompt=40, seed=0)
    base = PromptSplit(seed=0, method="exact", permutations=0)
    r64 = base.fit(d.test, d.reference)  # auto: float64 on the exact route
    assert r64.config["precision"] == "float64"
    r32 = dataclasses.replace(base, precision="float32").fit(d.test, d.reference)
    _assert_same_findings(r64, r32)


def test_auto_precision_is_recorded_and_bad_values_name_the_option():
    test, ref, _ = gaussian_mixture(1, per_component=10, seed=1)
    for method, want in (("exact", "float64"), ("rff", "float32")):
        res = PromptSplit(method=method, n_features=100, permutations=0, n_modes=2).fit(test, ref)
        assert res.config["precision"] == want
    for bad in ("float16", "double", None):
        with pytest.raises(OptionError, match="precision"):
            PromptSplit(precision=bad)


def test_float32_identical_sets_in_another_order_report_no_modes():
    # Lambda = 0 exactly; in float32 the two covariances differ by summation-order round-off, which must
    # stay below the float32 mode threshold
    test, _, _ = gaussian_mixture(0, per_component=30, seed=2)
    perm = np.random.default_rng(0).permutation(len(test))
    shuffled = PairedSet(test.prompt_embeddings[perm], test.output_embeddings[perm],
                         prompts=[test.prompts[i] for i in perm], name="shuffled")
    for method in ("rff", "exact"):
        res = PromptSplit(method=method, n_features=400, precision="float32", chunk_size=37,
                          permutations=0).fit(test, shuffled)
        assert res.modes == [] and res.identical
        assert max(abs(v) for v in res.eigenvalues) < 1e-5


@pytest.mark.parametrize("fmap_cls", [ProductRandomFourierFeatures, ProductRandomProjection])
def test_feature_maps_in_float32(fmap_cls):
    rng = np.random.default_rng(0)
    t, z = rng.standard_normal((50, 6)), rng.standard_normal((50, 9))
    args = (6, 9, 200, 2.0, 3.0) if fmap_cls is ProductRandomFourierFeatures else (6, 9, 200)
    f64 = fmap_cls(*args, seed=5).transform(t, z)
    f32 = fmap_cls(*args, seed=5, precision="float32").transform(t, z)
    assert f64.dtype == np.float64 and f32.dtype == np.float32
    np.testing.assert_allclose(f32, f64, rtol=0, atol=1e-5 * np.abs(f64).max())
    with pytest.raises(OptionError, match="precision"):
        fmap_cls(*args, precision="float16")


def test_float32_covariance_keeps_a_float64_running_sum():
    rng = np.random.default_rng(1)
    f = rng.standard_normal((3000, 40)) / 6.0
    exact = f.T @ f / len(f)
    acc = CovarianceAccumulator(40, precision="float32")
    for a in range(0, 3000, 250):
        acc.update(f[a : a + 250])
    assert acc.sum_upper.dtype == np.float64
    c = acc.compute()
    assert np.abs(c - exact).max() < 1e-6 * np.abs(exact).max()
    other = CovarianceAccumulator(40, precision="float32").update(f[:1000]).merge(
        CovarianceAccumulator(40, precision="float32").update(f[1000:]))
    np.testing.assert_allclose(other.compute(), c, rtol=0, atol=1e-6 * np.abs(exact).max())


@pytest.mark.parametrize("solver", ["dense", "lanczos"])
def test_float32_gram_eigenpairs(solver):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((300, 5))
    d2 = ((x[:, None] - x[None]) ** 2).sum(-1)
    gram = np.exp(-d2 / 10.0)
    w = np.r_[np.full(150, 1 / 150), np.full(150, -1 / 150)]
    e64 = weighted_gram_eigenpairs(gram, w, n_positive=4, n_negative=4, solver=solver)
    e32 = weighted_gram_eigenpairs(gram.astype(np.float32), w, n_positive=4, n_negative=4, solver=solver)
    scale = np.abs(e64.eigenvalues).max()
    # this smooth kernel's spectrum decays fast: the dense route's factor stops at float32's numerical rank
    # (N eps32 max G_ii), dropping directions that carry ~1e-6 of the top eigenvalue (measured 6e-6)
    rtol = FLOAT32_RTOL if solver == "lanczos" else 10 * FLOAT32_RTOL
    np.testing.assert_allclose(e32.eigenvalues, e64.eigenvalues, rtol=0, atol=rtol * scale)
    assert e32.scores.dtype == np.float64
    # scores agree up to each eigenvector's sign
    signs = np.sign(np.einsum("ij,ij->j", e32.scores, e64.scores))
    np.testing.assert_allclose(e32.scores * signs, e64.scores, rtol=0, atol=1e-4 * np.abs(e64.scores).max())


def test_cli_precision_is_recorded_and_checked(tmp_path, capsys):
    import json

    from promptprism.cli import main

    rng = np.random.default_rng(0)
    paths = []
    for name, n in (("test", 14), ("ref", 11)):
        paths.append(tmp_path / f"{name}.npz")
        np.savez(paths[-1], prompt_embeddings=rng.standard_normal((n, 4)),
                 output_embeddings=rng.standard_normal((n, 5)),
                 prompts=np.array([f"prompt {i % 3}" for i in range(n)]))
    for precision, method in (("float64", "rff"), ("float32", "exact")):
        out = tmp_path / f"out-{precision}"
        code = main(["split", *map(str, paths), "--out", str(out), "--method", method, "--features", "64",
                     "--precision", precision, "--quiet", "--no-report", "--permutations", "0"])
        assert code == 0, capsys.readouterr().err
        assert json.loads((out / "result.json").read_text())["config"]["precision"] == precision
    capsys.readouterr()
    out = tmp_path / "bad"
    assert main(["split", *map(str, paths), "--out", str(out), "--precision", "half", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "--precision" in err[0] and "half" in err[0]
    assert not (out / "result.json").exists()


def _as_float32(s: PairedSet) -> PairedSet:
    return PairedSet(s.prompt_embeddings.astype(np.float32), s.output_embeddings.astype(np.float32),
                     prompts=list(s.prompts), name=s.name)


@pytest.mark.slow  # ~5 s: two fits with their tests
def test_exact_auto_precision_is_the_inputs_and_float32_stays_within_tolerance():
    """'auto' on the exact route: a float32 Gram matrix when every embedding is float32 (the inputs' own
    precision), float64 otherwise. On float32 inputs the float32 fit, its test included, is the float64
    fit's to FLOAT32_RTOL (eigenvalues, distance, modes, samples, prompts); p-values equal up to a
    relabelling whose statistic ties the observed one within round-off (none here)."""
    test, ref, _ = gaussian_mixture(2, per_component=40, seed=0)
    t32, r32 = _as_float32(test), _as_float32(ref)
    base = PromptSplit(kernel="gaussian", method="exact", n_modes=3, top_k=10, seed=0, permutations=60)
    auto = base.fit(t32, r32)
    full = dataclasses.replace(base, precision="float64").fit(t32, r32)
    assert (auto.config["precision"], full.config["precision"]) == ("float32", "float64")
    _assert_same_findings(full, auto)
    assert [m.p_value for m in auto.modes] == [m.p_value for m in full.modes]
    assert any(m.significant for m in auto.modes)
    assert base.fit(t32, ref).config["precision"] == "float64"  # one float64 input: float64


@pytest.mark.parametrize("workers", [1, 2])
def test_float32_covariance_pass_matches_float64_brute_force(workers):
    """The rff covariance pass (float32 feature map and SYRK, chunk by chunk, on ``workers`` threads, the
    features kept) against SPEC's definitions in float64: psi(t, z) = sqrt(1/D) [cos(phase), sin(phase)],
    phase_l = w_l . (t - c_t) / sigma_t + u_l . (z - c_z) / sigma_z with (w_l; u_l) the seeded N(0, I)
    draw (the centre c only rotates each (cos, sin) pair: the kernel estimates are unchanged), and
    Lambda_r = (1/n) sum psi psi^T - (eta/m) sum psi' psi'^T, S_ref = sum psi' psi'^T."""
    from promptprism.backend import NUMPY
    from promptprism.methods.promptsplit.routes import choose_route
    from promptprism.scale.runner import LocalRunner

    rng = np.random.default_rng(7)
    n, m, dt, dz, r, sigmas, eta = 2500, 2100, 12, 9, 160, (1.7, 2.3), 1.5
    sets = [PairedSet((rng.standard_normal((k, dt)) + 3.0).astype(np.float32),
                      (rng.standard_normal((k, dz)) + shift).astype(np.float32)) for k, shift in ((n, 0.4),
                                                                                                 (m, -0.2))]
    est = PromptSplit(method="rff", n_features=r, eta=eta, seed=3, chunk_size=700, permutations=0,
                      progress=False)
    route = choose_route(est, sets, sigmas, backend=NUMPY, runner=LocalRunner(workers))
    assert route.fmap.precision == "float32" and route.keep
    distance = route.covariance({})[route.comparisons[0]]

    w = np.random.default_rng(3).standard_normal((dt + dz, r // 2))
    w[:dt] /= sigmas[0]
    w[dt:] /= sigmas[1]
    c_t, c_z = (np.asarray(c, dtype=np.float64) for c in route.fmap.center)

    def psi(s):
        phase = np.concatenate([s.prompt_embeddings - c_t, s.output_embeddings - c_z], axis=1) @ w
        return np.sqrt(2.0 / r) * np.concatenate([np.cos(phase), np.sin(phase)], axis=1)

    f_test, f_ref = psi(sets[0]), psi(sets[1])
    s_ref = f_ref.T @ f_ref
    lam = f_test.T @ f_test / n - eta * s_ref / m
    for kept, exact in zip(route.feats, (f_test, f_ref), strict=True):
        assert kept.dtype == np.float32
        assert np.abs(kept - exact).max() < 1e-5 * np.abs(exact).max()
    assert route.lam.dtype == np.float64 and route.ref_sum.dtype == np.float64
    assert np.abs(route.lam - lam).max() < 2e-6 * (1.0 + eta) * np.abs(s_ref / m).max()
    assert np.abs(route.ref_sum - s_ref).max() < 2e-6 * np.abs(s_ref).max()
    np.testing.assert_allclose(distance, np.sum(lam**2), rtol=1e-4)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_rff_phase_check_names_the_bandwidth(backend):
    """The phase-range check (max |phase| read from the device in one copy) rejects phases that keep no
    precision in float32, and passes ordinary ones, on numpy and torch alike."""
    rng = np.random.default_rng(0)
    t, z = rng.standard_normal((50, 3)).astype(np.float32), rng.standard_normal((50, 2)).astype(np.float32)
    if backend == "torch":
        torch = pytest.importorskip("torch")
        t, z = torch.from_numpy(t), torch.from_numpy(z)
    ok = ProductRandomFourierFeatures(3, 2, 8, 1.0, 1.0, fast_trig=True, precision="float32")
    assert np.isfinite(np.asarray(ok.transform(t, z))).all()
    tiny = ProductRandomFourierFeatures(3, 2, 8, 1e-6, 1.0, fast_trig=True, precision="float32")
    with pytest.raises(OptionError, match="sigma"):
        tiny.transform(t * 1e3, z)

"""PromptSplit, random-feature routes: convergence to the exact spectrum, Theorem 1, streaming, seeds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from brute import cosine_psi, lambda_matrix, padded_sorted, small_sets
from promptprism import PairedSet, PromptSplit
from promptprism.kernels import ProductRandomFourierFeatures, ProductRandomProjection

pytestmark = pytest.mark.slow  # minutes in all: run by `make test` / CI, not by -m 'not slow'

SIGMAS = {"sigma_prompt": 1.5, "sigma_output": 2.0}


@pytest.fixture(scope="module")
def sets():
    (tt, zt, pt), (tr, zr, pr) = small_sets(0, n=40, m=36)
    return PairedSet(tt, zt, prompts=pt, name="test"), PairedSet(tr, zr, prompts=pr, name="ref")


@pytest.fixture(scope="module")
def exact_gaussian(sets):
    return {eta: np.array(PromptSplit(kernel="gaussian", method="exact", eta=eta, solver="dense",
                                      **SIGMAS).fit(*sets).eigenvalues)
            for eta in (1.0, 0.5)}


def _spectral_error(a, b):
    a, b = padded_sorted(a, b)
    return float(np.linalg.norm(a - b))


def _theorem1_bound(r, eta, delta=0.05):
    return np.sqrt((8 + 8 * eta**2) / r) * (1 + np.sqrt(2 * np.log(1 / delta)))


#: eigenvalue / score agreement with numpy's own features: float64 round-off on numpy; on torch the rff map's
#: float32 cos/sin (``fast_trig``) may differ from numpy's by one float32 ulp (docs/devices.md)
RFF_ATOL = {"cpu": 1e-12, "torch": 1e-7}  # (numpy; torch on any device: its cos/sin may differ by an ulp)


def test_rff_matches_lambda_r_from_its_feature_map(sets, device):
    test, ref = sets
    res = PromptSplit(kernel="gaussian", method="rff", n_features=60, seed=3, eta=0.8, n_modes=60,
                      precision="float64", device=device, **SIGMAS).fit(test, ref)
    fmap = ProductRandomFourierFeatures(3, 4, 60, 1.5, 2.0, seed=3,
                                       fast_trig=True)  # as the estimator
    lam = lambda_matrix(fmap.transform(test.prompt_embeddings, test.output_embeddings),
                        fmap.transform(ref.prompt_embeddings, ref.output_embeddings), 0.8)
    vals, vecs = np.linalg.eigh(lam)
    atol = RFF_ATOL["cpu" if device == "cpu" else "torch"]
    np.testing.assert_allclose(res.eigenvalues, vals[::-1], atol=atol)
    assert res.distance == pytest.approx(np.sum(lam**2), rel=1e-10 if device == "cpu" else 1e-6)
    assert res.method == "rff" and res.config["n_features"] == 60
    # scores of the top mode: psi_r(s) . v, oriented so that the strongest test sample is positive
    v = vecs[:, -1]
    s = fmap.transform(test.prompt_embeddings, test.output_embeddings) @ v
    s *= np.sign(s[np.argmax(np.abs(s))])
    top = res.positive_modes[0].top_samples
    np.testing.assert_allclose([x.score for x in top], s[[x.index for x in top]], atol=100 * atol)
    assert top[0].score > 0


def test_sketch_matches_lambda_r_from_its_feature_map(sets, device):
    test, ref = sets
    res = PromptSplit(kernel="cosine", method="sketch", n_features=45, seed=2,
                      precision="float64", device=device).fit(test, ref)
    fmap = ProductRandomProjection(3, 4, 45, seed=2)
    lam = lambda_matrix(fmap.transform(test.prompt_embeddings, test.output_embeddings),
                        fmap.transform(ref.prompt_embeddings, ref.output_embeddings), 1.0)
    np.testing.assert_allclose(res.eigenvalues, np.linalg.eigvalsh(lam)[::-1], atol=1e-12)
    assert res.method == "sketch"


def _lambda_r_spectrum(fmap, test, ref, eta):
    """Non-zero spectrum of Lambda_r = Psi^T D Psi from the map's features, via a thin QR (cheap for r >> N).

    Psi^T = Q R gives Lambda_r = Q (R D R^T) Q^T: the eigenvalues of the small symmetric R D R^T.
    """
    psi = np.vstack([fmap.transform(test.prompt_embeddings, test.output_embeddings),
                     fmap.transform(ref.prompt_embeddings, ref.output_embeddings)])
    n, m = len(test), len(ref)
    d = np.r_[np.full(n, 1.0 / n), np.full(m, -eta / m)]
    _, r_mat = np.linalg.qr(psi.T)
    return np.linalg.eigvalsh(r_mat @ (d[:, None] * r_mat.T))


def test_rff_route_converges_to_exact(sets, exact_gaussian):
    exact = exact_gaussian[1.0]
    errors = []
    for r in (50, 200, 800):
        errs = [_spectral_error(exact, PromptSplit(kernel="gaussian", method="rff", n_features=r, seed=s,
                                                   **SIGMAS).fit(*sets).eigenvalues)
                for s in range(3)]
        errors.append(np.mean(errs))
    # 1/sqrt(r): each 4x step should roughly halve the error; ask for a clear decrease
    assert errors[0] > 1.4 * errors[1] > 1.4**2 * errors[2]


def test_rff_map_spectrum_converges_to_exact(sets, exact_gaussian):
    # the route equals Lambda_r of its feature map (test above); here the map's spectrum for large r
    test, ref = sets
    exact = exact_gaussian[1.0]
    errors = []
    for r in (200, 800, 3200):
        errs = [_spectral_error(exact, _lambda_r_spectrum(
                    ProductRandomFourierFeatures(3, 4, r, 1.5, 2.0, seed=s), test, ref, 1.0))
                for s in range(4)]
        errors.append(np.mean(errs))
        assert max(errs) <= _theorem1_bound(r, 1.0)
    assert errors[0] > 1.4 * errors[1] > 1.4**2 * errors[2]


@pytest.mark.parametrize("eta", [1.0, 0.5])
@pytest.mark.parametrize("r", [50, 200, 400])
def test_rff_within_theorem1_bound(sets, exact_gaussian, eta, r):
    exact = exact_gaussian[eta]
    bound = _theorem1_bound(r, eta)
    for seed in range(4):
        res = PromptSplit(kernel="gaussian", method="rff", n_features=r, seed=seed, eta=eta,
                          **SIGMAS).fit(*sets)
        assert _spectral_error(exact, res.eigenvalues) <= bound


def test_sketch_converges_to_exact(sets):
    test, ref = sets
    psi_t = cosine_psi(test.prompt_embeddings, test.output_embeddings)
    psi_r = cosine_psi(ref.prompt_embeddings, ref.output_embeddings)
    exact = np.linalg.eigvalsh(lambda_matrix(psi_t, psi_r, 1.0))
    route, mapped = [], []
    for r in (50, 200, 800):
        route.append(np.mean([_spectral_error(exact, PromptSplit(kernel="cosine", method="sketch",
                                                                 n_features=r, seed=s).fit(test, ref)
                                              .eigenvalues)
                              for s in range(3)]))
    for r in (400, 1600, 6400):
        mapped.append(np.mean([_spectral_error(exact, _lambda_r_spectrum(
            ProductRandomProjection(3, 4, r, seed=s), test, ref, 1.0)) for s in range(4)]))
    assert route[0] > 1.4 * route[1] > 1.4**2 * route[2]
    assert mapped[0] > 1.4 * mapped[1] > 1.4**2 * mapped[2]
    assert mapped[2] < 0.05


@pytest.mark.parametrize(("kernel", "method", "r"), [("gaussian", "rff", 120), ("cosine", "sketch", 90)])
def test_chunk_size_does_not_change_result(sets, kernel, method, r, device):
    base = PromptSplit(kernel=kernel, method=method, n_features=r, seed=4, top_k=5, n_modes=4,
                       precision="float64", device=device, **SIGMAS)
    ref_res = base.fit(*sets)
    for chunk in (1, 7, 36, 1000):
        res = dataclasses.replace(base, chunk_size=chunk).fit(*sets)
        np.testing.assert_allclose(res.eigenvalues, ref_res.eigenvalues, rtol=0, atol=1e-10)
        assert res.distance == pytest.approx(ref_res.distance, abs=1e-10)
        for a, b in zip(res.modes, ref_res.modes, strict=True):
            assert a.eigenvalue == pytest.approx(b.eigenvalue, abs=1e-10)
            assert [s.index for s in a.top_samples] == [s.index for s in b.top_samples]
            np.testing.assert_allclose([s.score for s in a.top_samples], [s.score for s in b.top_samples],
                                       atol=1e-10)
            assert [p.prompt for p in a.top_prompts] == [p.prompt for p in b.top_prompts]
            np.testing.assert_allclose([p.contribution for p in a.top_prompts],
                                       [p.contribution for p in b.top_prompts], atol=1e-10)


@pytest.mark.parametrize(("kernel", "method"), [("gaussian", "rff"), ("cosine", "sketch")])
def test_seed_reproducible_and_recorded(sets, kernel, method):
    est = PromptSplit(kernel=kernel, method=method, n_features=100, seed=11, n_modes=3,
                      sigma_prompt="median", sigma_output="2*median")
    a, b = est.fit(*sets), est.fit(*sets)
    assert a.eigenvalues == b.eigenvalues
    assert a.modes == b.modes
    assert a.prompt_ranking == b.prompt_ranking
    assert a.seed == 11
    other = dataclasses.replace(est, seed=12).fit(*sets)
    assert other.seed == 12
    assert other.eigenvalues != a.eigenvalues


def test_auto_uses_exact_for_small_sets(sets):
    assert PromptSplit(kernel="cosine").fit(*sets).method == "exact"
    assert PromptSplit(kernel="gaussian").fit(*sets).method == "exact"

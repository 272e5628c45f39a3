"""Scendi against brute force from the SPEC definitions (joint covariance, Schur split, entropies)."""

from __future__ import annotations

import numpy as np
import pytest

import promptprism as pp
from backends import DEVICES
from promptprism.errors import InputError, OptionError
from promptprism.kernels import RandomFourierFeatures, cosine_gram, gaussian_gram
from promptprism.methods.scendi import PromptRankWarning, joint_covariance, scendi_entropy, schur_split
from promptprism.methods.scendi.core import EIGEN_FLOOR, accumulate_joint
from promptprism.stats import CovarianceAccumulator


# ------------------------------------------------------------------------------------------ brute force
def unit(a):
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def brute_split(fi, ft):
    """SPEC, literally: C = (1/n) sum [phi_I; phi_T][phi_I; phi_T]^T, Gamma* = C_IT C_TT^+, ..."""
    n, d_i = fi.shape
    f = np.hstack([fi, ft])
    c = sum(np.outer(row, row) for row in f) / n
    c_ii, c_it, c_tt = c[:d_i, :d_i], c[:d_i, d_i:], c[d_i:, d_i:]
    pinv = np.linalg.pinv(c_tt, rcond=1e-10, hermitian=True)
    gamma = c_it @ pinv
    lam_t = c_it @ pinv @ c_it.T
    return c_ii, lam_t, c_ii - lam_t, gamma


def ref_exp_scendi(mat):
    """The reference implementation's formula: exp(-sum l log(l / sum l)), un-normalised l, clamped 1e-10."""
    lam = np.clip(np.linalg.eigvalsh(mat), 1e-10, None)
    return np.exp(-np.sum(lam * np.log(lam / lam.sum())))


def brute_vendi(mat):
    p = np.clip(np.linalg.eigvalsh(mat), 0, None)
    p = p / p.sum()
    p = p[p > 0]
    return np.exp(-np.sum(p * np.log(p)))


def brute_rke(mat):
    p = np.clip(np.linalg.eigvalsh(mat), 0, None)
    p = p / p.sum()
    return 1.0 / np.sum(p**2)


@pytest.fixture(scope="module")
def data():
    """Outputs (7-d) and prompts (5-d) in different spaces; 6 distinct prompts, repeated."""
    rng = np.random.default_rng(0)
    n = 90
    bank = rng.standard_normal((6, 5))
    which = rng.integers(0, 6, n)
    prompts = bank[which]
    hidden = rng.integers(0, 3, n)
    mix = rng.standard_normal((5, 7))
    outputs = prompts @ mix + 2.0 * np.eye(7)[hidden] + 0.5 * rng.standard_normal((n, 7))
    return pp.PairedSet(prompts, outputs, prompts=[f"prompt {w}" for w in which], name="toy")


# -------------------------------------------------------------------------------------- cosine kernel
@pytest.mark.parametrize("solver", ["eigh", "cholesky"])
def test_cosine_split_matches_brute_force(data, solver):
    fi, ft = unit(data.output_embeddings), unit(data.prompt_embeddings)
    c_ii, lam_t, lam_i, gamma = brute_split(fi, ft)
    split = schur_split(joint_covariance(fi, ft), fi.shape[1], solver=solver)
    np.testing.assert_allclose(split.c_ii, c_ii, atol=1e-12)
    np.testing.assert_allclose(split.lambda_t, lam_t, atol=1e-10)
    np.testing.assert_allclose(split.lambda_i, lam_i, atol=1e-10)
    np.testing.assert_allclose(split.gamma, gamma, atol=1e-8)
    assert split.prompt_rank == 5
    # Tr(C_II) = 1 and the two parts add up to it
    assert np.trace(split.c_ii) == pytest.approx(1.0, abs=1e-12)
    assert np.trace(split.lambda_i) + np.trace(split.lambda_t) == pytest.approx(1.0, abs=1e-12)
    # both parts are PSD, and the prompt-driven part is a real share of the diversity
    assert np.linalg.eigvalsh(split.lambda_i).min() > -1e-12
    assert np.linalg.eigvalsh(split.lambda_t).min() > -1e-12
    assert 0.05 < np.trace(split.lambda_t) < 0.95
    np.testing.assert_allclose(split.lambda_t_eigenvalues, np.sort(np.linalg.eigvalsh(lam_t))[::-1],
                               atol=1e-10)


@pytest.mark.parametrize("device", DEVICES)
def test_cosine_scores_match_reference_formulas(data, device):
    fi, ft = unit(data.output_embeddings), unit(data.prompt_embeddings)
    c_ii, lam_t, lam_i, _ = brute_split(fi, ft)
    res = pp.Scendi(kernel="cosine", chunk_size=7, device=device,  # 13 chunks: streaming path
                    gamma_estimator="in-sample").fit(data)  # (SPEC's formulas; 'auto' debiases them)
    assert res.config["device"] == ("numpy" if device == "cpu" else "torch:cpu")
    assert res.scendi == pytest.approx(ref_exp_scendi(lam_i), rel=1e-9)
    assert res.scendi_prompt == pytest.approx(ref_exp_scendi(lam_t), rel=1e-9)
    assert res.vendi == pytest.approx(brute_vendi(c_ii), rel=1e-9)
    assert res.rke == pytest.approx(brute_rke(c_ii), rel=1e-9)
    # Vendi of the covariance = Vendi of the Gram matrix (same non-zero spectrum, K / n)
    assert res.vendi == pytest.approx(pp.vendi_score_from_gram(cosine_gram(data.output_embeddings)), rel=1e-9)
    assert res.rke == pytest.approx(pp.vendi_score_from_gram(cosine_gram(data.output_embeddings), order=2),
                                    rel=1e-9)
    # exp(Scendi_I) with Scendi_I = sum l log(Tr / l) (appendix eq. 9), written out once more
    lam = np.clip(np.linalg.eigvalsh(lam_i), EIGEN_FLOOR, None)
    assert np.log(res.scendi) == pytest.approx(np.sum(lam * np.log(np.trace(lam_i) / lam)), rel=1e-6)
    # order 2: (1 / sum p^2)^Tr with p = l / Tr
    p = lam / lam.sum()
    assert res.scendi_order2 == pytest.approx((1.0 / np.sum(p**2)) ** lam.sum(), rel=1e-9)
    assert res.model_share == pytest.approx(np.trace(lam_i), abs=1e-12)
    assert res.prompt_share == pytest.approx(np.trace(lam_t), abs=1e-12)
    assert res.model_share + res.prompt_share == pytest.approx(1.0, abs=1e-12)


def test_lambda_i_is_the_covariance_of_the_nullified_embeddings(data):
    nul = pp.PromptNullifier(kernel="cosine").fit(data)
    z = nul.transform(data.prompt_embeddings, data.output_embeddings)
    cov = z.T @ z / len(data)
    np.testing.assert_allclose(cov, nul.split_.lambda_i, atol=1e-12)
    # Proposition 1: Gamma* minimises the mean squared residual |phi_I - Gamma phi_T|^2 (least squares)
    fi, ft = unit(data.output_embeddings), unit(data.prompt_embeddings)
    lsq, *_ = np.linalg.lstsq(ft, fi, rcond=None)
    best = np.sum((fi - ft @ lsq) ** 2) / len(data)
    assert np.sum(z**2) / len(data) == pytest.approx(best, rel=1e-9)
    assert np.trace(nul.split_.lambda_i) == pytest.approx(best, rel=1e-9)
    # the nullified features are uncorrelated with the prompt features
    np.testing.assert_allclose(z.T @ ft / len(data), 0.0, atol=1e-12)


def test_nullifier_applies_to_new_pairs_and_single_concepts(data):
    nul = pp.PromptNullifier(kernel="cosine").fit(data)
    rng = np.random.default_rng(5)
    t_new, x_new = rng.standard_normal((4, 5)), rng.standard_normal((4, 7))
    expected = unit(x_new) - unit(t_new) @ nul.gamma_.T
    np.testing.assert_allclose(nul.transform(t_new, x_new), expected, atol=1e-12)
    # one text (a concept to remove) against many outputs
    one = nul.transform(t_new[0], x_new)
    np.testing.assert_allclose(one, unit(x_new) - unit(t_new[:1]) @ nul.gamma_.T, atol=1e-12)
    with pytest.raises(InputError, match="prompt rows"):
        nul.transform(t_new[:2], x_new)
    with pytest.raises(OptionError, match="not fitted"):
        pp.PromptNullifier().transform(t_new, x_new)


# ------------------------------------------------------------------------------------ gaussian kernel
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shared", [False, True])
def test_gaussian_rff_matches_brute_force(shared, device):
    rng = np.random.default_rng(1)
    n, d = 120, 6
    bank = rng.standard_normal((8, d))
    which = rng.integers(0, 8, n)
    t = bank[which]
    x = t + 0.7 * rng.standard_normal((n, d))
    est = pp.Scendi(kernel="gaussian", gamma_estimator="in-sample", sigma_prompt=1.5 if not shared else 2.0,
                    sigma_output=2.0, n_features=60, shared_frequencies=shared, seed=3, chunk_size=50,
                    device=device)
    res = est.fit(pp.PairedSet(t, x))
    # the documented seed convention: outputs use `seed`, prompts `seed + 1` (or the same map when shared)
    out_map = RandomFourierFeatures(d, 60, 2.0, seed=3)
    prm_map = out_map if shared else RandomFourierFeatures(d, 60, 1.5, seed=4)
    fi, ft = out_map.transform(x), prm_map.transform(t)
    c_ii, lam_t, lam_i, _ = brute_split(fi, ft)
    assert np.trace(c_ii) == pytest.approx(1.0, abs=1e-12)  # |phi(a)|^2 = 1 exactly for RFF
    assert res.scendi == pytest.approx(ref_exp_scendi(lam_i), rel=1e-7)
    assert res.scendi_prompt == pytest.approx(ref_exp_scendi(lam_t), rel=1e-7)
    assert res.vendi == pytest.approx(brute_vendi(c_ii), rel=1e-9)
    assert res.rke == pytest.approx(brute_rke(c_ii), rel=1e-9)
    assert res.model_share + res.prompt_share == pytest.approx(1.0, abs=1e-12)
    assert np.linalg.eigvalsh(lam_i).min() > -1e-12
    assert res.prompt_rank == 8  # 8 distinct prompts
    assert res.config["seed_output"] == 3 and res.config["seed_prompt"] == (3 if shared else 4)
    assert res.seed == 3
    if shared:  # one map: a prompt and an output at the same point get the same features
        nul = pp.PromptNullifier(kernel="gaussian", sigma_output=2.0, n_features=60, shared_frequencies=True,
                                 seed=3).fit(pp.PairedSet(t, x))
        np.testing.assert_allclose(nul.output_features(t[:3]), nul.prompt_features(t[:3]), atol=0)


def test_rff_vendi_approaches_the_exact_gaussian_vendi():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.standard_normal((40, 3)) * 0.3 + c for c in (0.0, 4.0, 8.0)])
    t = np.repeat(np.eye(3), 40, axis=0)
    exact = pp.vendi_score_from_gram(gaussian_gram(x, sigma=1.0))
    errors = []
    for n_features in (20, 400):
        res = pp.Scendi(kernel="gaussian", sigma_output=1.0, sigma_prompt=1.0, n_features=n_features,
                        seed=0).fit((t, x))
        errors.append(abs(res.vendi - exact) / exact)
    assert errors[1] < 0.05
    assert errors[1] < errors[0]


def test_shared_frequencies_need_one_space():
    rng = np.random.default_rng(0)
    with pytest.raises(InputError, match="one embedding space"):
        pp.Scendi(kernel="gaussian", shared_frequencies=True).fit(
            (rng.standard_normal((10, 3)), rng.standard_normal((10, 4))))


def test_a_prompt_bandwidth_beside_shared_frequencies_is_noted_and_the_record_agrees():
    """--sigma-prompt 50 with --shared-frequencies was dropped without a word, and result.json recorded
    sigma_prompt 3 beside the rule '50'."""
    rng = np.random.default_rng(0)
    data = (np.repeat(rng.standard_normal((10, 3)), 4, axis=0), rng.standard_normal((40, 3)))
    fits = [pp.Scendi(kernel="gaussian", shared_frequencies=True, sigma_prompt=s, sigma_output=3.0,
                      n_features=40, bootstrap=0).fit(data) for s in (1.0, 50.0)]
    assert fits[0].scendi == fits[1].scendi
    note = [n for n in fits[1].warnings if n.startswith("sigma_prompt: 50") and "not used" in n]
    assert len(note) == 1 and "sigma_output (3" in note[0]
    assert fits[1].config["sigma_prompt_rule"] == fits[1].config["sigma_output_rule"]
    assert not any("sigma_prompt" in n for n in pp.Scendi(kernel="gaussian", shared_frequencies=True,
                                                          n_features=40, bootstrap=0).fit(data).warnings)


# ---------------------------------------------------------------------------------- scores by themselves
def test_vendi_published_sanity_values():
    assert pp.vendi_score_from_gram([[1, 0.9, 0], [0.9, 1, 0], [0, 0, 1]]) == pytest.approx(2.1573, abs=1e-4)
    pts = np.array([0, 0, 10, 10, 20, 20], dtype=float)
    k = np.exp(-np.abs(pts[:, None] - pts[None, :]))
    assert pp.vendi_score_from_gram(k) == pytest.approx(3.0, abs=1e-3)


def test_entropy_orders_on_a_known_spectrum():
    lam = np.array([0.3, 0.2, 0.1, 0.0])  # un-normalised, trace 0.6
    p = np.array([0.5, 1 / 3, 1 / 6])
    h1 = -np.sum(p * np.log(p))
    floor = 1e-10 * np.log(0.6 / 1e-10)  # the clamped zero eigenvalue
    assert scendi_entropy(lam, 1) == pytest.approx(0.6 * h1 + floor, rel=1e-9)
    assert pp.scendi_score(lam) == pytest.approx(np.exp(0.6 * h1), rel=1e-8)
    assert pp.scendi_score(lam, order=2) == pytest.approx((1 / np.sum(p**2)) ** 0.6, rel=1e-8)
    # with trace 1 they are Vendi and RKE
    q = np.array([0.5, 0.25, 0.25])
    assert pp.scendi_score(q) == pytest.approx(pp.vendi_score(q), rel=1e-9)
    assert pp.scendi_score(q, order=2) == pytest.approx(pp.rke_score(q), rel=1e-9)
    with pytest.raises(OptionError):
        scendi_entropy(q, 3)


# ----------------------------------------------------------------------------------------- streaming
def test_streaming_accumulation_equals_one_pass_and_merges(data):
    fi, ft = unit(data.output_embeddings), unit(data.prompt_embeddings)
    whole = joint_covariance(fi, ft)
    chunks = ((fi[a : a + 16], ft[a : a + 16]) for a in range(0, len(fi), 16))
    streamed = accumulate_joint(chunks, 7, 5).compute()
    np.testing.assert_allclose(streamed, whole, atol=1e-14)
    left = accumulate_joint([(fi[:40], ft[:40])], 7, 5)
    right = accumulate_joint([(fi[40:], ft[40:])], 7, 5, accumulator=CovarianceAccumulator(12))
    np.testing.assert_allclose(left.merge(right).compute(), whole, atol=1e-14)
    a = pp.Scendi(chunk_size=5).fit(data)
    b = pp.Scendi(chunk_size=10_000).fit(data)
    assert a.scendi == pytest.approx(b.scendi, rel=1e-10)
    assert [s.index for s in a.clusters[0].top_samples] == [s.index for s in b.clusters[0].top_samples]


# ------------------------------------------------------------------------------------------ clusters
@pytest.mark.parametrize("device", DEVICES)
def test_clusters_are_top_eigenvectors_with_top_projection_scores(data, device):
    res = pp.Scendi(kernel="cosine", n_clusters=3, top_k=4, device=device,
                    gamma_estimator="in-sample").fit(data)
    fi, ft = unit(data.output_embeddings), unit(data.prompt_embeddings)
    c_ii, _, lam_i, gamma = brute_split(fi, ft)
    for clusters, mat, feats in ((res.clusters, lam_i, fi - ft @ gamma.T),
                                 (res.clusters_unconditioned, c_ii, fi)):
        vals, vecs = np.linalg.eigh(mat)
        vals, vecs = vals[::-1], vecs[:, ::-1]
        assert len(clusters) == 3
        for j, cl in enumerate(clusters):
            assert cl.eigenvalue == pytest.approx(vals[j], abs=1e-10)
            assert cl.share == pytest.approx(vals[j] / np.trace(mat), rel=1e-8)
            s = feats @ vecs[:, j]
            if abs(s.min()) > abs(s.max()):
                s = -s  # oriented so that the strongest sample scores positive
            order = np.argsort(-s, kind="stable")[:4]
            assert [x.index for x in cl.top_samples] == order.tolist()
            np.testing.assert_allclose([x.score for x in cl.top_samples], s[order], atol=1e-8)
            assert cl.top_samples[0].prompt == data.prompts[order[0]]


def test_result_round_trips_through_json(tmp_path, data):
    res = pp.Scendi(kernel="cosine").fit(data)
    res.save(tmp_path)
    back = pp.load_result(tmp_path)
    assert isinstance(back, pp.ScendiResult)
    assert back == res
    both = pp.ScendiComparison(models=[res, res], seed=0)
    assert pp.ScendiComparison.from_json(both.to_json()) == both


# -------------------------------------------------------------------------------------- degenerate data
def test_identical_prompts_warn_and_leave_the_spread_around_the_mean():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((50, 6))
    t = np.tile(rng.standard_normal((1, 4)), (50, 1))
    with pytest.warns(PromptRankWarning, match="all prompts are identical"):
        res = pp.Scendi(kernel="cosine").fit((t, x))
    fi = unit(x)
    m = fi.mean(axis=0)
    centred = fi.T @ fi / 50 - np.outer(m, m)  # Lambda_T = m m^T: the prompt explains only the mean
    assert res.scendi == pytest.approx(ref_exp_scendi(centred), rel=1e-9)
    assert res.prompt_share == pytest.approx(m @ m, rel=1e-9)
    assert res.prompt_rank == 1
    assert any("identical" in w for w in res.warnings)


def test_prompt_rank_near_n_warns():
    rng = np.random.default_rng(0)
    with pytest.warns(PromptRankWarning, match="biased low"):
        res = pp.Scendi(kernel="cosine", gamma_estimator="in-sample").fit(
            (rng.standard_normal((10, 12)), rng.standard_normal((10, 5))))
    assert res.model_share < 1e-10  # every output predicted exactly by its (unique) prompt


@pytest.mark.parametrize("bad, match", [
    ((np.ones((1, 3)), np.ones((1, 4))), "at least 2"),
    ((np.ones((5, 3)), np.ones((4, 4))), "5 rows but output_embeddings has 4"),
])
def test_bad_input(bad, match):
    with pytest.raises(InputError, match=match):
        pp.Scendi().fit(pp.PairedSet(*bad) if len(bad[0]) == len(bad[1]) else bad)


def test_nan_and_zero_rows_are_named():
    x = np.ones((6, 3))
    x[4, 1] = np.nan
    with pytest.raises(InputError, match="row 4"):
        pp.Scendi().fit((np.eye(6), x))
    z = np.ones((6, 3))
    z[2] = 0
    with pytest.raises(InputError, match="row 2"):
        pp.Scendi(kernel="cosine").fit((np.eye(6), z))


@pytest.mark.parametrize("kwargs", [{"kernel": "laplace"}, {"kernel": "gaussian", "n_features": 7},
                                    {"n_clusters": 0}, {"seed": -1},
                                    {"kernel": "gaussian", "sigma_output": -1}])
def test_bad_options(kwargs):
    with pytest.raises(OptionError):
        pp.Scendi(**kwargs)


@pytest.mark.slow
def test_large_matrix_path_matches_full_eigendecomposition():
    """Scendi's feature route solves Lambda_I and C_II by array_ops.values_and_top_vectors_of: above
    DENSE_VECTORS_MAX without a full eigh, the same spectrum and top vectors."""
    from promptprism.array_ops import DENSE_VECTORS_MAX, values_and_top_vectors_of

    rng = np.random.default_rng(3)
    size = DENSE_VECTORS_MAX + 40
    g = rng.standard_normal((size, 60))
    a = g @ np.diag(np.linspace(2, 0.1, 60)) @ g.T / size
    (vals, vecs), _ = values_and_top_vectors_of([a, a.copy()], 3)
    ref_vals, ref_vecs = np.linalg.eigh(a)
    np.testing.assert_allclose(vals, ref_vals[::-1], atol=1e-10)
    for j in range(3):
        assert abs(vecs[:, j] @ ref_vecs[:, -1 - j]) == pytest.approx(1.0, abs=1e-8)


@pytest.mark.parametrize("n_bank", [3, 12])
def test_pseudo_inverse_routes_agree_on_rank_deficient_prompts(n_bank):
    """Repeated prompts make C_TT singular (rank = distinct prompts); both routes are the pseudo-inverse."""
    rng = np.random.default_rng(n_bank)
    bank = rng.standard_normal((n_bank, 20))
    t = bank[rng.integers(0, n_bank, 200)]
    x = t[:, :8] + rng.standard_normal((200, 8))
    fi, ft = unit(x), unit(t)
    c_ii, lam_t, lam_i, gamma = brute_split(fi, ft)
    c = joint_covariance(fi, ft)
    for solver in ("eigh", "cholesky"):
        split = schur_split(c, 8, solver=solver)
        assert split.prompt_rank == n_bank
        np.testing.assert_allclose(split.lambda_t, lam_t, atol=1e-9)
        np.testing.assert_allclose(split.gamma, gamma, atol=1e-8)

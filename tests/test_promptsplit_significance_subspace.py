"""PromptSplit's permutation test on large problems: the principal-subspace statistic and the curtailed rule.

Above ``significance.NULL_RANK`` (128) samples (exact route) or features (rff route) every labelling's
spectrum is that of Lambda restricted to a leading principal subspace of the pooled samples, one dense
eigen-solve of P^T diag(w) P each: on the exact route P is a seeded Nystrom factor of the joint Gram matrix
(:func:`promptprism.stats.batched_eigen.principal_factor`); on the random-feature routes P = psi V, the
features projected on the leading eigenvectors V of the pooled second moment of all samples, which the
covariance pass gives for free (:func:`promptprism.stats.subspaces.leading_eigenvectors`). Neither
sees a label, so the test stays exact. Here the rank is lowered (monkeypatched to 12) so that small data
sets of the same kind take that path:

* brute force: P P^T reproduces a Gram matrix of lower rank exactly, and the leading eigenvalues of a
  full-rank one; the rff route's P is psi V with V spanning the pooled second moment's leading
  eigenvectors; the test's permuted spectra (every labelling's P^T diag(w_k) P from P^T P and one SYRK
  over the rows of its smaller side) equal a plain eigensolve of P^T diag(w_k) P per labelling, also for
  weights that are not a labelling's two values;
* calibration: over 200 null data sets, the rate of runs with any mode significant at alpha = 0.05 lies in
  [0.02, 0.08], exact (Gram) and rff (features) routes, with the default (curtailed) rule;
* power: a planted difference (one prompt's outputs moved in the test set) is found in >= 90 % of data sets.

The curtailed rule (:func:`promptprism.methods.promptsplit.significance.sequential_spectra`) stops drawing
relabellings once a rejection is out of reach: it rejects only where the test on all K relabellings rejects
(brute force: the same fits with the rule switched off), gives the same p-values when it does not stop, and
draws far fewer relabellings on null data. Tiny float32 products are slow with multithreaded BLAS on a loaded
machine, so the loops run with one BLAS thread.
"""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import promptprism.methods.promptsplit.routes as routes
import promptprism.stats.batched_eigen as eigen
import promptprism.stats.subspace_spectra as spectra
import promptprism.stats.subspaces as subspaces
from brute import two_set_weights
from promptprism import PairedSet, PromptSplit
from promptprism.methods.promptsplit import significance as sig
from promptprism.stats.eigen import signed_extremes

#: (method, n_features): rff with 56 features gives a 56-column factor
ROUTES = [("exact", 200), ("rff", 56)]
RANK = 12


@pytest.fixture
def subspace_path(monkeypatch):
    """Lower the rank so these small problems take the principal-subspace path; record every factor built."""
    calls: list[tuple[str, int]] = []
    factor = eigen.principal_factor

    def spy(operand, rank, *, seed=0, positions=None):
        calls.append((operand[0], rank))
        return factor(operand, rank, seed=seed, positions=positions)

    def spy_directions(matrix, rank, *, seed=0):
        calls.append(("features", rank))
        return directions(matrix, rank, seed=seed)

    directions = subspaces.leading_eigenpairs
    monkeypatch.setattr(sig, "NULL_RANK", RANK)
    # (a fixed rank: no uncompressed statistic on small tests, no growth towards NULL_ENERGY)
    monkeypatch.setattr(sig, "FULL_MAX_ROWS", 0)
    monkeypatch.setattr(sig, "NULL_MAX_RANK", RANK)
    monkeypatch.setattr(sig, "FALLBACK_MAX_ROWS", 0)
    monkeypatch.setattr(sig, "principal_factor", spy)
    monkeypatch.setattr(routes, "leading_eigenpairs", spy_directions)
    return calls


def _sets(rng: np.random.Generator, *, shift: float = 0.0, per_prompt: int = 10, n_prompts: int = 6,
          dim: int = 5) -> tuple[PairedSet, PairedSet]:
    """Test and reference sets (prompts one-hot, outputs = the prompt's mean + noise); ``shift`` moves the
    test set's outputs of prompt 0 along the first axis (0: both sets from one distribution)."""
    means = np.random.default_rng(123).standard_normal((n_prompts, dim)) * 2.0
    sets = []
    for name in ("test", "reference"):
        lab = np.repeat(np.arange(n_prompts), per_prompt)
        outputs = means[lab] + rng.standard_normal((lab.size, dim))
        if name == "test":
            outputs[lab == 0, 0] += shift
        sets.append(PairedSet(np.eye(n_prompts)[lab], outputs, prompts=[f"p{c}" for c in lab], name=name))
    return sets[0], sets[1]


def _estimator(method: str, n_features: int, seed: int, permutations: int = 100, aggregate: str = "none"
               ) -> PromptSplit:
    # the fitted kernel's own test, or with the kernel family (aggregate="auto": its kernels' factors from
    # landmark columns above the rank, stats.subspaces.landmark_factor)
    return PromptSplit(method=method, n_modes=3, n_features=n_features, permutations=permutations, top_k=2,
                       top_prompts=2, seed=seed, aggregate=aggregate)


# ------------------------------------------------------------------------------------------- brute force
def test_principal_factor_is_exact_below_its_rank_and_close_above():
    rng = np.random.default_rng(0)
    low = rng.standard_normal((300, 20))
    for operand in (("gram", low @ low.T), ("features", low @ rng.standard_normal((20, 80)))):
        p = eigen.principal_factor(operand, 30, seed=1)
        g = operand[1] if operand[0] == "gram" else operand[1] @ operand[1].T
        assert p.shape[0] == 300 and p.shape[1] <= 30
        np.testing.assert_allclose(p @ p.T, g, atol=1e-9 * np.abs(g).max())
    full = rng.standard_normal((300, 120)) * 0.8 ** np.arange(120)  # a decaying spectrum, like kernels
    g = full @ full.T
    p = eigen.principal_factor(("gram", g), 30, seed=2)
    want = np.linalg.eigvalsh(g)[::-1][:10]
    np.testing.assert_allclose(np.linalg.eigvalsh(p.T @ p)[::-1][:10], want, rtol=1e-3)
    # narrow operands are left alone
    assert eigen.principal_factor(("features", full[:, :20]), 30) is None
    assert eigen.principal_factor(("gram", g[:25, :25]), 30) is None


def test_leading_eigenvectors_span_the_leading_eigenspace():
    rng = np.random.default_rng(4)
    basis = np.linalg.qr(rng.standard_normal((200, 200)))[0]
    vals = np.r_[100.0 * 0.7 ** np.arange(20), np.full(180, 1e-4)]  # 20 directions, then a gap
    a = (basis * vals) @ basis.T
    v = subspaces.leading_eigenvectors(a, 20, seed=1).astype(np.float64)
    assert v.shape == (200, 20)
    np.testing.assert_allclose(v.T @ v, np.eye(20), atol=1e-5)
    # the principal angles to the true leading eigenspace: cosines all ~1
    np.testing.assert_allclose(np.linalg.svd(basis[:, :20].T @ v, compute_uv=False), 1.0, atol=1e-4)
    # the same seed, the same directions; another seed spans the same space
    np.testing.assert_array_equal(subspaces.leading_eigenvectors(a, 20, seed=1), v.astype(np.float32))
    w = subspaces.leading_eigenvectors(a, 20, seed=2).astype(np.float64)
    np.testing.assert_allclose(np.linalg.svd(v.T @ w, compute_uv=False), 1.0, atol=1e-4)


def test_leading_eigenpairs_ritz_values_are_the_rayleigh_quotients():
    """The values returned beside V are diag(V^T A V) in float64 (the shares the rff test's rank rule reads),
    ascending, and near A's own leading eigenvalues when the subspace captures them."""
    rng = np.random.default_rng(5)
    basis = np.linalg.qr(rng.standard_normal((300, 300)))[0]
    vals = np.r_[50.0 * 0.8 ** np.arange(30), np.full(270, 1e-3)]
    a = (basis * vals) @ basis.T
    ritz, v = subspaces.leading_eigenpairs(a, 24, seed=0)
    v64 = v.astype(np.float64)
    quotients = np.einsum("ij,ij->j", v64, a @ v64)
    assert ritz.dtype == np.float64 and np.all(np.diff(ritz) >= 0)
    np.testing.assert_allclose(ritz, quotients, rtol=2e-6, atol=2e-6 * vals.max())
    np.testing.assert_allclose(ritz[::-1], vals[:24], rtol=1e-4)
    np.testing.assert_array_equal(v, subspaces.leading_eigenvectors(a, 24, seed=0))


def test_rff_operand_is_the_features_on_the_pooled_second_moments_leading_eigenvectors(subspace_path):
    """Brute force: the rff route's test operand for any rows is psi(rows) V, where V spans the leading
    eigenvectors of sum_i psi_i psi_i^T over ALL samples of both sets (no labels), and its permuted
    spectra are those of V^T psi^T diag(w) psi V."""
    test, ref = _sets(np.random.default_rng(2), shift=2.0, per_prompt=20)
    est = _estimator("rff", 56, seed=3, permutations=9)
    res = est.fit(test, ref)
    assert subspace_path == [("features", RANK)] and "principal subspace" in res.significance["statistic"]
    route = routes.choose_route(est, {"test": test, "reference": ref},
                                (res.config["sigma_prompt"], res.config["sigma_output"]),
                                backend=routes.NUMPY, runner=__import__("promptprism.scale", fromlist=["x"])
                                .current_runner())
    route.covariance({})
    psi = np.vstack([route.fmap.transform(s.prompt_embeddings, s.output_embeddings) for s in (test, ref)])
    pooled = psi.astype(np.float64).T @ psi.astype(np.float64)
    np.testing.assert_allclose(route._pooled_moment(), pooled, rtol=1e-5, atol=1e-5 * np.abs(pooled).max())
    rows_t, rows_r = np.arange(0, 120, 3), np.arange(5, 120, 2)
    kind, p = route.replicates()(rows_t, rows_r)
    v = subspaces.leading_eigenvectors(route._pooled_moment(), RANK, seed=3)
    want = np.vstack([psi[rows_t], psi[120 + rows_r]]) @ v
    assert kind == "subspace" and p.dtype == np.float32
    np.testing.assert_allclose(p, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
    # V holds (nearly) all of the pooled second moment's leading eigenvalues: its Rayleigh quotient
    top = np.linalg.eigvalsh(pooled)[::-1][:RANK]
    captured = np.trace(v.T.astype(np.float64) @ pooled @ v.astype(np.float64))
    assert 0.99 * top.sum() <= captured <= top.sum() * (1 + 1e-6), (captured, top.sum())
    # every labelling's spectrum: the plain eigensolve of P^T diag(w) P
    labels = sig.test_labellings(np.zeros(rows_t.size + rows_r.size, int), rows_t.size, rows_r.size, 5, 0)
    w = two_set_weights(labels, rows_t.size, rows_r.size, 1.0)
    pos, neg = sig.permuted_spectra((kind, p), w, 2, seed=0)
    for k in range(w.shape[1]):
        want_k = signed_extremes(np.linalg.eigvalsh(want.T @ (w[:, k, None] * want))[None, :], 2)
        np.testing.assert_allclose(pos[k], want_k[0][0], rtol=1e-3, atol=1e-5 * want_k[0].max())
        np.testing.assert_allclose(neg[k], want_k[1][0], rtol=1e-3, atol=1e-5 * want_k[0].max())


@pytest.mark.parametrize("kind", ["gram", "features"])
def test_subspace_spectra_equal_a_plain_eigensolve_per_labelling(kind):
    rng = np.random.default_rng(1)
    psi = rng.standard_normal((200, 90)) * np.linspace(1.0, 0.1, 90)
    labels = sig.test_labellings(np.arange(200) % 4, 100, 100, 7, seed=3)
    w = two_set_weights(labels, 100, 100, 0.9)
    raw = (kind, psi @ psi.T if kind == "gram" else psi)
    operand = sig.principal_operand(raw, seed=5, rank=RANK)
    p = eigen.principal_factor(raw, RANK, seed=5)
    assert p.shape == (200, RANK) and operand[0] == "subspace"
    np.testing.assert_array_equal(operand[1], p.astype(np.float32))  # (the labellings' products: float32)
    pos, neg = sig.permuted_spectra(operand, w, 3, seed=0)
    for k in range(w.shape[1]):
        want = signed_extremes(np.linalg.eigvalsh(p.T @ (w[:, k, None] * p))[None, :], 3)
        tol = 1e-5 * max(want[0].max(), want[1].max())  # (float32 products)
        np.testing.assert_allclose(pos[k], want[0][0], rtol=1e-4, atol=tol)
        np.testing.assert_allclose(neg[k], want[1][0], rtol=1e-4, atol=tol)
    # the labellings shared among threads: the same numbers, bit for bit
    threaded = spectra.subspace_extremes(operand[1], w, 3, workers=3)
    serial = spectra.subspace_extremes(operand[1], w, 3, workers=1)
    np.testing.assert_array_equal(threaded[0], serial[0])
    np.testing.assert_array_equal(threaded[1], serial[1])
    # labellings with more test rows than reference ones (the SYRK then runs over the reference side), and
    # weights of more than two values (every matrix formed from the whole of P)
    lopsided = two_set_weights(sig.test_labellings(np.zeros(200, int), 150, 50, 4, seed=8), 150, 50, 0.9)
    uneven = np.random.default_rng(9).standard_normal((200, 3))
    for weights in (lopsided, uneven):
        pos, neg = sig.permuted_spectra(operand, weights, 3, seed=0)
        for k in range(weights.shape[1]):
            want = signed_extremes(np.linalg.eigvalsh(p.T @ (weights[:, k, None] * p))[None, :], 3)
            tol = 1e-5 * max(want[0].max(), want[1].max())
            np.testing.assert_allclose(pos[k], want[0][0], rtol=1e-4, atol=tol)
            np.testing.assert_allclose(neg[k], want[1][0], rtol=1e-4, atol=tol)


# ---------------------------------------------------------------------------------- calibration and power
@pytest.mark.slow
@pytest.mark.parametrize("aggregate", ["none", "auto"])
@pytest.mark.parametrize(("method", "n_features"), ROUTES)
def test_subspace_null_is_calibrated(subspace_path, method, n_features, aggregate):
    """200 null data sets through the subspace path, default rule: the test rejects in 2-8 % (the fitted
    kernel's test: any mode significant; with the kernel family, aggregate='auto', whose other kernels take
    the landmark path: the aggregated p-value, and no more modes than that)."""
    rng = np.random.default_rng(11 if method == "exact" else 12)
    hits, drawn, rejected = [], [], []
    with threadpool_limits(1):
        for i in range(200):
            test, ref = _sets(rng)
            res = _estimator(method, n_features, seed=i, aggregate=aggregate).fit(test, ref)
            hits.append(res.significance["n_significant"] > 0)
            drawn.append(res.significance["permutations_drawn"])
            family = res.significance.get("aggregation")
            rejected.append(hits[-1] if family is None else family["p"] <= 0.05)
    assert set(subspace_path) == {("gram" if method == "exact" else "features", RANK)}
    rate, modes = float(np.mean(rejected)), float(np.mean(hits))
    print(f"{method}, aggregate={aggregate} (subspace null): the test rejects in {rate:.3f} of 200 null data "
          f"sets, any mode significant in {modes:.3f}; {np.mean(drawn):.0f} of 100 permutations drawn on "
          "average")
    assert 0.02 <= rate <= 0.08, rate
    assert modes <= 0.08, modes  # (modes: adjusted p-values, at most as many as the test's rejections)
    assert np.mean(drawn) < 50  # the curtailed rule stops early on most null sets


@pytest.mark.parametrize("aggregate", ["none", "auto"])
@pytest.mark.parametrize(("method", "n_features"), ROUTES)
@pytest.mark.slow
def test_subspace_null_has_power_on_a_planted_difference(subspace_path, method, n_features, aggregate):
    """One prompt's test outputs moved by 3.5 noise s.d.: significant in >= 90 % of 20 data sets, and the
    significant modes point at that prompt."""
    rng = np.random.default_rng(5)
    found = []
    with threadpool_limits(1):
        for i in range(20):
            test, ref = _sets(rng, shift=3.5)
            res = _estimator(method, n_features, seed=i, aggregate=aggregate).fit(test, ref)
            sig_modes = [m for m in res.modes if m.significant]
            found.append(bool(sig_modes))
            for m in sig_modes:
                assert m.top_prompts[0].prompt == "p0", (i, m.side, m.rank)
    assert subspace_path and {k for k, _ in subspace_path} == {"gram" if method == "exact" else "features"}
    print(f"{method}, aggregate={aggregate} (subspace null): planted difference found in "
          f"{np.mean(found):.2f} of 20 data sets")
    assert np.mean(found) >= 0.9, found


def test_the_unpatched_constants_compress_only_above_1000_samples(monkeypatch):
    """What the patched rank stands in for (issue 42, item 4): without it, 120 samples are solved directly
    and 300 through an exact factor of the whole Gram matrix (both uncompressed: no Nystrom factor built);
    above ``FULL_MAX_ROWS`` (1,200 samples) through a principal subspace built once at NULL_MAX_RANK and
    cut to the least of 128, 256, ... whose leading directions hold NULL_ENERGY of tr G. The record says
    which statistic was used.
    (Before: 300 samples already went through a rank-128 subspace.)"""
    calls: list[int] = []
    factor = eigen.principal_factor
    monkeypatch.setattr(sig, "principal_factor",
                        lambda op, rank, **k: calls.append(rank) or factor(op, rank, **k))
    rng = np.random.default_rng(0)
    with threadpool_limits(1):
        for per_prompt in (10, 25):
            calls.clear()
            res = _estimator("exact", 200, seed=0, permutations=20).fit(*_sets(rng, per_prompt=per_prompt))
            s = res.significance
            assert calls == [] and s["subspace"]["full"] and s["subspace"]["energy"] == 1.0
            assert "uncompressed" in s["statistic"]
            assert ("principal subspace that holds all" in s["statistic"]) == (per_prompt == 25)
        calls.clear()
        res = _estimator("exact", 200, seed=0, permutations=20).fit(*_sets(rng, per_prompt=100))
    s = res.significance["subspace"]
    assert calls == [sig.NULL_MAX_RANK]
    if s["full"]:  # the fallback: the cap's directions held less than NULL_ENERGY, and few enough rows
        assert calls[-1] == sig.NULL_MAX_RANK and "uncompressed" in res.significance["statistic"]
    else:  # the least rank that holds NULL_ENERGY
        assert s["energy"] >= sig.NULL_ENERGY and s["rank"] in (128, 256) and s["rank"] <= calls[-1]
        assert "leading principal subspace" in res.significance["statistic"]


# ---------------------------------------------------------------------------------------- curtailed rule
def test_curtail_at_by_hand():
    # K = 100, alpha = 0.05: 5 exceedances give p >= 6/101 > 0.05, 4 still allow 5/101 <= 0.05
    assert sig.curtail_at(100, 0.05) == 5
    assert sig.curtail_at(200, 0.05) == 10
    assert sig.curtail_at(19, 0.05) == 1  # 0 exceedances: p = 1/20 = 0.05 is still a rejection
    assert sig.curtail_at(100, 0.01) == 1


@pytest.mark.parametrize(("method", "n_features"), ROUTES)
@pytest.mark.slow
def test_curtailed_rule_rejects_only_where_all_permutations_would(monkeypatch, method, n_features):
    """The same fits with the rule on and off (every relabelling drawn): a curtailed rejection is a full
    rejection; a fit that ran to the end has every p-value of the full fit; the record says what happened."""
    rng = np.random.default_rng(9)
    stopped = 0
    with threadpool_limits(1):
        for i in range(16):
            data = _sets(rng, shift=(0.0, 2.0, 3.5, 5.0)[i % 4])
            fast = _estimator(method, n_features, seed=i).fit(*data)
            with monkeypatch.context() as mp:
                mp.setattr(sig, "curtail_at", lambda k, alpha: k + 1)  # never reached: all K drawn
                full = _estimator(method, n_features, seed=i).fit(*data)
            s = fast.significance
            assert full.significance["permutations_drawn"] == 100
            assert s["stopping"]["rule"] == sig.STOPPING_RULE and s["stopping"]["h"] == 5
            if s["n_significant"]:
                assert full.significance["n_significant"] >= 1
            if s["permutations_drawn"] == 100:
                assert [m.p_value for m in fast.modes] == [m.p_value for m in full.modes]
            else:
                stopped += 1
                assert s["n_significant"] == 0 and s["stopping"]["stopped_early"]
                assert s["permutations_drawn"] >= sig.LOOK and s["stopping"]["exceedances"] >= 5
                assert s["stopping"]["p_at_least"] > 0.05 and "stopped after" in s["verdict"]
    assert stopped >= 3  # the null sets stop early


# -------------------------------------------------------------------- wide subspaces: Lanczos per labelling
def test_wide_subspace_extremes_by_lanczos_equal_a_plain_eigensolve():
    """A numpy factor wider than SUBSPACE_DENSE_RANK is answered by Lanczos over the factor: every
    labelling's largest eigenvalue of each sign matches a float64 eigensolve of P^T diag(w_k) P; the
    observed labelling (column 0) gets its whole top of the spectrum; a labelling's numbers do not depend
    on which other labellings share its block."""
    rng = np.random.default_rng(0)
    width = spectra.SUBSPACE_DENSE_RANK + 32
    # a principal factor's shape: decaying column scales
    p = (rng.standard_normal((900, width)) * np.geomspace(1.0, 0.02, width)).astype(np.float32)
    groups = np.repeat(np.arange(30), 30)
    w = two_set_weights(sig.test_labellings(groups, 450, 450, 40, seed=3), 450, 450, 0.9)
    assert spectra.lanczos_subspace(p)
    pos, neg = sig.permuted_spectra(("subspace", p), w, 5, seed=0)
    f64 = p.astype(np.float64)
    for k in range(w.shape[1]):
        want = signed_extremes(np.linalg.eigvalsh(f64.T @ (w[:, k, None] * f64))[None, :], 5)
        scale = max(want[0].max(), want[1].max())
        assert abs(pos[k, 0] - want[0][0, 0]) <= 1e-4 * scale and pos[k, 0] <= want[0][0, 0] + 1e-6 * scale
        assert abs(neg[k, 0] - want[1][0, 0]) <= 1e-4 * scale and neg[k, 0] <= want[1][0, 0] + 1e-6 * scale
        if k == 0:  # the observed labelling: its five modes of each sign
            np.testing.assert_allclose(pos[0], want[0][0], rtol=1e-4, atol=1e-5 * scale)
            np.testing.assert_allclose(neg[0], want[1][0], rtol=1e-4, atol=1e-5 * scale)
    # the same labellings in other blocks (column 0 then a relabelling): the same top eigenvalues
    shared = sig.operand_shared(("subspace", p))
    part = sig.permuted_spectra(("subspace", p), w[:, 17:29], 5, seed=0, shared=shared, observed=False)
    np.testing.assert_allclose(part[0][:, 0], pos[17:29, 0], rtol=1e-5)
    np.testing.assert_allclose(part[1][:, 0], neg[17:29, 0], rtol=1e-5)


def test_lanczos_is_chosen_by_the_factors_shape_alone():
    """Factors wider than SUBSPACE_DENSE_RANK go by Lanczos whatever their rows (the default rff command's
    20,000 x 256 and a 60,000-row one included); narrow and non-numpy factors densely."""
    def shaped(rows, cols):  # (no memory: a zero-stride view of the shape)
        return np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), (rows, cols), (0, 0))

    assert not spectra.lanczos_subspace(shaped(5_000, spectra.SUBSPACE_DENSE_RANK))
    assert spectra.lanczos_subspace(shaped(5_000, 256)) and spectra.lanczos_subspace(shaped(20_000, 256))
    assert spectra.lanczos_subspace(shaped(60_000, spectra.SUBSPACE_DENSE_RANK + 1))
    assert not spectra.lanczos_subspace(shaped(200_000, 64))
    assert not spectra.lanczos_subspace([[0.0] * 300] * 10)


@pytest.mark.slow
@pytest.mark.parametrize(("method", "n_features"), ROUTES)
def test_an_unconverged_lanczos_statistic_keeps_the_test_calibrated_and_powerful(subspace_path, monkeypatch,
                                                                               method, n_features):
    """The test compares one function of each labelling, converged or not: with the Lanczos path forced on
    the rank-12 subspace and only 4 steps (Ritz values well below the eigenvalues), 200 null data sets are
    rejected in 2-8 %. Power is what convergence buys: with 8 steps (short of the 12 that make the Ritz
    values exact) the planted difference is found in >= 75 % of 20 (measured: 100 % exact route, 80 % rff
    route, against >= 90 % for the converged statistic in the tests above)."""
    monkeypatch.setattr(spectra, "SUBSPACE_DENSE_RANK", 4)
    rng = np.random.default_rng(21 if method == "exact" else 22)
    rejected, found = [], []
    with threadpool_limits(1):
        monkeypatch.setattr(spectra, "TOP_LANCZOS_STEPS", 4)
        for i in range(200):
            res = _estimator(method, n_features, seed=i).fit(*_sets(rng))
            rejected.append(res.significance["n_significant"] > 0)
        monkeypatch.setattr(spectra, "TOP_LANCZOS_STEPS", 8)
        for i in range(20):
            res = _estimator(method, n_features, seed=i).fit(*_sets(rng, shift=3.5))
            found.append(any(m.significant for m in res.modes))
    print(f"{method} (Lanczos): 4 steps reject {np.mean(rejected):.3f} of 200 null data sets, 8 steps "
          f"find the planted difference in {np.mean(found):.2f} of 20")
    assert 0.02 <= np.mean(rejected) <= 0.08, np.mean(rejected)
    assert np.mean(found) >= 0.75, found

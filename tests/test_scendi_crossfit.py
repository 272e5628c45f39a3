"""The cross-fitted Gamma*, the sample-space route and the prompt bootstrap, against brute force.

Brute force = SPEC's definitions written out in feature space: for each fold, the training pairs' joint
covariance, Gamma*_f = C_IT^S (C_TT^S + ridge I)^+, the held-out residuals phi_I(x) - Gamma*_f phi_T(t), and
Lambda_I = their covariance over all rows. A bootstrap replicate is checked against the in-sample estimator
run on the set with the drawn prompts' rows literally duplicated.
"""

from __future__ import annotations

import numpy as np
import pytest

import promptprism as pp
from backends import DEVICES, HAS_TORCH
from promptprism.data.paired import prompt_groups
from promptprism.errors import OptionError
from promptprism.methods.scendi import compare
from promptprism.methods.scendi.bootstrap import bootstrap_replicates, prompt_draws
from promptprism.methods.scendi.core import PINV_RCOND
from promptprism.methods.scendi.dual import assign_folds
from promptprism.methods.scendi.nullifier import resolve_feature_maps
from promptprism.methods.scendi.replicates import SampleSpaceReplicates, feature_matrices


def unit(a):
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def exp_entropy(mat):
    lam = np.clip(np.linalg.eigvalsh(mat), 1e-10, None)
    return np.exp(-np.sum(lam * np.log(lam / lam.sum())))


def brute_cross_fit(fi, ft, folds, ridge):
    """Lambda_I (cross-fitted) and SPEC's Lambda_T = C_II - Lambda_I, from the definitions."""
    n = len(fi)
    resid = np.empty_like(fi)
    pred = np.empty_like(fi)
    for f in np.unique(folds):
        s, h = folds != f, folds == f
        c_it = sum(np.outer(fi[i], ft[i]) for i in np.flatnonzero(s)) / s.sum()
        c_tt = sum(np.outer(ft[i], ft[i]) for i in np.flatnonzero(s)) / s.sum()
        mu = np.linalg.eigvalsh(c_tt)
        cut = PINV_RCOND * mu.max()
        vals, vecs = np.linalg.eigh(c_tt)
        keep = vals > cut
        inv = vecs[:, keep] @ np.diag(1.0 / (vals[keep] + ridge)) @ vecs[:, keep].T
        gamma = c_it @ inv
        pred[h] = ft[h] @ gamma.T
        resid[h] = fi[h] - pred[h]
    lam_i = resid.T @ resid / n
    return lam_i, fi.T @ fi / n - lam_i


@pytest.fixture(scope="module")
def one_per_prompt():
    """40 distinct prompts (50-d), one output each (6-d): rank(C_TT) = 40 = n."""
    rng = np.random.default_rng(3)
    n = 40
    t = rng.standard_normal((n, 50))
    x = t[:, :6] + 0.7 * rng.standard_normal((n, 6))
    return pp.PairedSet(t, x, prompts=[f"q{i}" for i in range(n)], name="one-per-prompt")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ridge", [0.0, 0.05])
def test_cross_fit_matches_brute_force(one_per_prompt, ridge, device):
    data = one_per_prompt
    est = pp.Scendi(gamma_estimator="cross-fit", ridge=ridge, n_folds=4, seed=5, n_clusters=3, device=device)
    labels = prompt_groups(data, numbered="content")[0][0]
    folds = assign_folds(labels, 4, 5)
    lam_i, lam_p = brute_cross_fit(unit(data.output_embeddings), unit(data.prompt_embeddings), folds, ridge)
    if np.trace(lam_i) > 1.0:  # ridge 0 here: 40 prompts in 50-d, the pseudo-inverse interpolates (1.19)
        with pytest.raises(OptionError, match="worse than predicting nothing"):
            est.fit(data)
        return
    res = est.fit(data)
    assert res.gamma_estimator.startswith("cross-fit (4 folds")
    assert res.model_share == pytest.approx(np.trace(lam_i), rel=1e-9)
    assert res.prompt_share == pytest.approx(1.0 - np.trace(lam_i), rel=1e-9)
    assert res.scendi == pytest.approx(exp_entropy(lam_i), rel=1e-9)
    assert res.scendi_prompt == pytest.approx(exp_entropy(lam_p), rel=1e-9)
    ref = np.sort(np.linalg.eigvalsh(lam_i))[::-1]
    np.testing.assert_allclose(res.eigenvalues["model"], ref[ref > 1e-10], rtol=1e-8, atol=1e-12)
    assert res.clusters[0].eigenvalue == pytest.approx(ref[0], rel=1e-9)


def test_auto_picks_cross_fit_when_prompts_are_unique_and_in_sample_collapses(one_per_prompt):
    with pytest.warns(pp.PromptRankWarning, match="biased low"):
        ins = pp.Scendi(gamma_estimator="in-sample").fit(one_per_prompt)
    assert ins.model_share < 1e-10  # rank(C_TT) = n: Gamma* interpolates every output
    assert any("gamma_estimator='cross-fit'" in w for w in ins.warnings)
    auto = pp.Scendi().fit(one_per_prompt)
    assert auto.gamma_estimator.startswith("cross-fit")
    assert "chosen by cross-validation" in auto.gamma_estimator
    # the outputs are their prompts' first 6 coordinates plus noise: the prompt explains part, not all
    assert 0.2 < auto.model_share < 0.95
    assert not any("cosine kernel" in w for w in auto.warnings)


def test_repeated_prompts_auto_is_the_debiased_in_sample_estimator():
    """auto with repeated prompts (rank 5 < 6 distinct prompts) takes the degrees-of-freedom corrected
    in-sample estimator (it was the plain in-sample one: its share is biased low, docs/scendi.md); asking for
    'in-sample' keeps the paper's numbers, and the correction only adds to the model share."""
    rng = np.random.default_rng(0)
    bank = rng.standard_normal((6, 5))
    which = rng.integers(0, 6, 120)
    x = bank[which] @ rng.standard_normal((5, 7)) + rng.standard_normal((120, 7))
    a = pp.Scendi().fit((bank[which], x))
    b = pp.Scendi(gamma_estimator="in-sample").fit((bank[which], x))
    c = pp.Scendi(gamma_estimator="debiased").fit((bank[which], x))
    assert a.gamma_estimator.startswith("debiased") and b.gamma_estimator == "in-sample"
    assert a.scendi == c.scendi and a.model_share == c.model_share
    assert a.model_share > b.model_share


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kernel", ["cosine", "gaussian"])
def test_sample_space_route_equals_feature_space_route(kernel, device):
    """n below the feature dimension: the n x n route gives the feature-space numbers (same eigenvalues)."""
    rng = np.random.default_rng(1)
    bank = rng.standard_normal((5, 30))
    which = rng.integers(0, 5, 24)
    t, x = bank[which], rng.standard_normal((24, 40)) + bank[which][:, :1]
    est = pp.Scendi(kernel=kernel, n_features=60, sigma_output=6.0, sigma_prompt=6.0,
                    gamma_estimator="in-sample", n_clusters=3, seed=2, device=device)
    small = est.fit((t, x))  # n = 24 < d: sample space
    assert small.config["route"] == "sample space"
    big = est.fit((np.repeat(t, 6, axis=0), np.repeat(x, 6, axis=0)))  # n = 144 > d: feature space
    assert big.config["route"] == "feature space, grouped prompts"
    for key in ("scendi", "scendi_prompt", "scendi_order2", "vendi", "rke", "model_share", "prompt_share"):
        assert getattr(small, key) == pytest.approx(getattr(big, key), rel=1e-9), key
    for a, b in zip(small.clusters, big.clusters, strict=True):
        assert a.eigenvalue == pytest.approx(b.eigenvalue, rel=1e-9)


def test_a_bootstrap_replicate_is_the_estimator_on_the_duplicated_rows():
    rng = np.random.default_rng(7)
    bank = rng.standard_normal((8, 20))
    which = np.repeat(np.arange(8), 3)
    t, x = bank[which], rng.standard_normal((24, 30)) + np.hstack([bank[which], bank[which][:, :10]])
    data = pp.PairedSet(t, x, name="s")
    notes: list[str] = []
    maps = resolve_feature_maps(data, kernel="cosine", sigma_output=None, sigma_prompt=None, n_features=0,
                                shared_frequencies=False, seed=0, notes=notes)
    groups = which
    fi, fg = feature_matrices(data, maps, groups=groups, chunk_size=7)
    counts = prompt_draws(8, 3, seed=11)
    engine = SampleSpaceReplicates(fi @ fi.T, fg @ fg.T, dim=30)
    reps = bootstrap_replicates(groups, counts, engine)
    for b in range(3):
        rows = np.concatenate([np.flatnonzero(groups == g) for g in range(8) for _ in range(counts[b, g])])
        ref = pp.Scendi(gamma_estimator="in-sample").fit((t[rows], x[rows]))
        for m in ("scendi", "scendi_prompt", "vendi", "rke", "model_share", "prompt_share"):
            assert reps[m][b] == pytest.approx(getattr(ref, m), rel=1e-8), (b, m)


def test_bootstrap_is_seeded_recorded_and_brackets_the_estimate():
    rng = np.random.default_rng(2)
    bank = rng.standard_normal((30, 4))
    which = np.repeat(np.arange(30), 5)
    x = bank[which] @ rng.standard_normal((4, 6)) + rng.standard_normal((150, 6))
    est = pp.Scendi(bootstrap=100, seed=4, interval="basic")
    a, b = est.fit((bank[which], x)), est.fit((bank[which], x))
    assert a.intervals == b.intervals
    assert {k: v for k, v in a.bootstrap.items() if k != "validity"} == {
        "replicates": 100, "level": 0.95, "seed": 4, "resample": "prompts", "interval": "basic"}
    assert a.bootstrap["validity"]["holds"] is False  # 30 prompts: basic intervals under-cover (measured)
    for m in ("scendi", "scendi_prompt", "vendi", "rke", "model_share", "prompt_share"):
        iv = a.intervals[m]
        assert iv["low"] < iv["high"]
        assert iv["low"] <= getattr(a, m) <= iv["high"], m
    assert pp.ScendiResult.from_json(a.to_json()) == a
    c = pp.Scendi(bootstrap=100, seed=5, interval="basic").fit((bank[which], x))
    assert c.intervals != a.intervals


@pytest.mark.parametrize("kwargs, match", [
    ({"bootstrap": -1}, "bootstrap must be an integer >= 0"),
    ({"bootstrap": 5}, "at least 20"),
    ({"confidence": 1.5, "bootstrap": 50}, "confidence must lie strictly between 0 and 1"),
    ({"gamma_estimator": "loo"}, "gamma_estimator must be one of"),
    ({"ridge": -1.0}, "ridge must be 'cv' or a number >= 0"),
    ({"n_folds": 1}, "n_folds must be >= 2"),
    ({"precision": "float16"}, "precision must be"),
])
def test_bad_options(kwargs, match):
    with pytest.raises(OptionError, match=match):
        pp.Scendi(**kwargs)


def test_bootstrap_needs_two_prompts():
    rng = np.random.default_rng(0)
    t = np.tile(rng.standard_normal((1, 3)), (30, 1))
    with pytest.warns(pp.PromptRankWarning):
        with pytest.raises(OptionError, match="at least 2 distinct prompts"):
            pp.Scendi(bootstrap=50).fit((t, rng.standard_normal((30, 4))))
        auto = pp.Scendi(bootstrap="auto").fit((t, rng.standard_normal((30, 4))))
    assert auto.intervals == {} and any("same prompt" in w for w in auto.warnings)


def test_no_replicate_draws_a_single_prompt_and_the_first_draws_are_unchanged():
    """A replicate of one prompt drawn n times is drawn again; other replicates are the plain draws."""
    for g in (2, 3, 8):
        counts = prompt_draws(g, 300, seed=4)
        assert counts.shape == (300, g) and (counts.sum(axis=1) == g).all()
        assert ((counts > 0).sum(axis=1) >= 2).all()
    plain = np.random.default_rng(4).integers(0, 8, size=(300, 8))
    assert all((np.bincount(d, minlength=8) == c).all() for d, c in zip(plain, prompt_draws(8, 300, 4),
                                                                       strict=True) if len(set(d)) > 1)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_a_handful_of_samples_gives_scores_intervals_and_at_most_n_clusters(n):
    """2-4 samples, one prompt each (cross-fit) and the default bootstrap: scores, intervals, <= n clusters
    (it used to stop on an index error or on a replicate of one prompt)."""
    rng = np.random.default_rng(n)
    res = pp.Scendi(bootstrap=50).fit((rng.standard_normal((n, 6)), rng.standard_normal((n, 5))))
    assert np.isfinite(res.scendi) and len(res.clusters) <= n and res.intervals
    assert all(iv["low"] <= iv["high"] for iv in res.intervals.values())


def test_compare_says_which_differences_exceed_the_noise():
    """Two models on the same prompts: one's outputs carry a prompt-independent factor, the other's do not."""
    rng = np.random.default_rng(100)
    bank = rng.standard_normal((40, 5))
    which = np.repeat(np.arange(40), 4)
    mix = rng.standard_normal((5, 8))
    faithful = bank[which] @ mix + 0.2 * rng.standard_normal((160, 8))
    styles = 3.0 * rng.standard_normal((6, 8))
    varied = bank[which] @ mix + styles[rng.integers(0, 6, 160)] + 0.2 * rng.standard_normal((160, 8))
    same = bank[which] @ mix + 0.2 * rng.standard_normal((160, 8))
    sets = [pp.PairedSet(bank[which], y, name=nm) for y, nm in
            ((faithful, "faithful"), (varied, "varied"), (same, "again"))]
    comp = compare(sets, pp.Scendi(bootstrap=200, seed=1))
    by = {(d["a"], d["b"], d["metric"]): d for d in comp.differences}
    assert all(d["method"] == "paired jackknife" for d in comp.differences)  # (the default: jackknife)
    share = by[("faithful", "varied", "model_share")]
    assert share["separated"] and share["high"] < 0
    assert pp.ScendiComparison.from_json(comp.to_json()) == comp


@pytest.mark.slow
def test_paired_differences_are_calibrated_under_the_null():
    """Two models drawn from one distribution on the same prompts: 'separated' at 95% in about 5% of cases."""
    hits = 0
    for seed in range(20):
        rng = np.random.default_rng(100 + seed)
        bank = rng.standard_normal((40, 5))
        which = np.repeat(np.arange(40), 4)
        mix = rng.standard_normal((5, 8))
        a, b = (bank[which] @ mix + 0.2 * rng.standard_normal((160, 8)) for _ in range(2))
        comp = compare([pp.PairedSet(bank[which], a, name="a"), pp.PairedSet(bank[which], b, name="b")],
                       pp.Scendi(bootstrap=200, seed=1))
        hits += sum(d["separated"] for d in comp.differences)
    assert hits <= 5  # of 40 (20 sets x 2 metrics); expected 2


def _few_prompts_pair(seed: int, style_scale: float | None):
    """10 prompts x 6 outputs: two models from one distribution (``style_scale`` None), or a faithful model
    against one that adds prompt-independent styles of that scale."""
    rng = np.random.default_rng(2000 + seed)
    bank, which, mix = rng.standard_normal((10, 5)), np.repeat(np.arange(10), 6), rng.standard_normal((5, 8))
    a = bank[which] @ mix + 0.2 * rng.standard_normal((60, 8))
    b = bank[which] @ mix + 0.2 * rng.standard_normal((60, 8))
    if style_scale is not None:
        b += style_scale * rng.standard_normal((6, 8))[rng.integers(0, 6, 60)]
    return [pp.PairedSet(bank[which], a, name="a"), pp.PairedSet(bank[which], b, name="b")]


def test_a_paired_difference_interval_holds_its_estimate():
    """On 10 prompts the jackknife's bias correction of a difference is mostly noise: two same-distribution
    models read 0.72 with [2.17, 7.47] and were 'separated'. The interval now also holds the estimate."""
    rng = np.random.default_rng(0)
    pe = np.repeat(rng.normal(size=(10, 8)), 6, axis=0)
    a = rng.normal(size=(60, 6))
    rng.normal(size=(60, 6))
    c = np.random.default_rng(5).normal(size=(60, 6))
    comp = compare([pp.PairedSet(pe, a, name="a"), pp.PairedSet(pe, c, name="c")], pp.Scendi(bootstrap=200))
    for d in comp.differences:
        assert d["low"] <= d["difference"] <= d["high"], d
        assert d["separated"] == (d["low"] > 0 or d["high"] < 0)
    assert not any(d["separated"] for d in comp.differences)


@pytest.mark.slow
def test_paired_differences_on_few_prompts_are_calibrated_and_keep_their_power():
    """10 prompts x 6: under the null 'separated' in <= 5% of 60 (0 now; the bias-corrected interval alone:
    5 of 60); a style difference of scale 0.3 still found in most sets (12 of 20 for scendi; 13 before)."""
    null = sum(d["separated"] for s in range(30)
               for d in compare(_few_prompts_pair(s, None), pp.Scendi(bootstrap=200, seed=1)).differences)
    assert null <= 3, null
    found = sum(d["separated"] for s in range(20) for d in compare(
        _few_prompts_pair(s, 0.3), pp.Scendi(bootstrap=200, seed=1)).differences if d["metric"] == "scendi")
    assert found >= 11, found


def test_float32_matches_float64_to_the_documented_tolerance():
    rng = np.random.default_rng(9)
    t = rng.standard_normal((60, 40))
    x = t[:, :30] + rng.standard_normal((60, 30))
    kw = dict(kernel="gaussian", n_features=400, seed=3, gamma_estimator="cross-fit", ridge=0.01)
    a = pp.Scendi(precision="float64", **kw).fit((t, x))
    b = pp.Scendi(precision="float32", **kw).fit((t, x))
    for key in ("scendi", "scendi_prompt", "vendi", "rke", "model_share", "prompt_share"):
        assert getattr(b, key) == pytest.approx(getattr(a, key), rel=1e-3), key
    assert [s.index for s in a.clusters[0].top_samples] == [s.index for s in b.clusters[0].top_samples]


@pytest.mark.slow
def test_bootstrap_intervals_cover_the_truth():
    """40 simulated sets (60 prompts x 5 outputs, a prompt-driven part, 4 prompt-independent styles and
    noise): the 95% intervals cover the population value (from 100,000 pairs) in >= 85% of sets."""
    rng0 = np.random.default_rng(0)
    mix, styles = rng0.standard_normal((3, 5)), rng0.standard_normal((4, 5))
    center = np.array([2.0, 0, 0, 0, 0])

    def draw(rng, n_prompts, per):
        t = rng.standard_normal((n_prompts, 3))
        which = np.repeat(np.arange(n_prompts), per)
        x = (center + t[which] @ mix + styles[rng.integers(0, 4, n_prompts * per)]
             + 0.5 * rng.standard_normal((n_prompts * per, 5)))
        return t[which], x

    truth = pp.Scendi(gamma_estimator="in-sample").fit(draw(np.random.default_rng(1), 20000, 5))
    metrics = ("model_share", "scendi", "scendi_prompt", "vendi", "rke")
    covered = dict.fromkeys(metrics, 0)
    for s in range(40):
        r = pp.Scendi(bootstrap=200, seed=s).fit(draw(np.random.default_rng(10 + s), 60, 5))
        for m in metrics:
            covered[m] += r.intervals[m]["low"] <= getattr(truth, m) <= r.intervals[m]["high"]
    assert all(c >= 34 for c in covered.values()), covered


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_grouped_route_equals_the_streaming_split(precision, device):
    """Repeated prompts, n above the dimension: the grouped route gives the streaming split's numbers."""
    rng = np.random.default_rng(12)
    bank = rng.standard_normal((7, 6))
    which = rng.integers(0, 7, 300)
    x = bank[which] @ rng.standard_normal((6, 9)) + rng.standard_normal((300, 9))
    res = pp.Scendi(precision=precision, n_clusters=2, device=device,
                    gamma_estimator="in-sample").fit((bank[which], x))
    assert res.config["route"] == "feature space, grouped prompts"
    split = pp.PromptNullifier().fit((bank[which], x)).split_
    tol = 1e-9 if precision == "float64" else 1e-4
    assert res.model_share == pytest.approx(np.trace(split.lambda_i), rel=tol)
    assert res.scendi == pytest.approx(pp.scendi_score(np.linalg.eigvalsh(split.lambda_i)), rel=tol)
    assert res.scendi_prompt == pytest.approx(pp.scendi_score(split.lambda_t_eigenvalues), rel=tol)
    assert res.prompt_rank == split.prompt_rank == 6


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
@pytest.mark.parametrize("rows, estimator", [(24, "in-sample"), (24, "cross-fit"), (300, "in-sample")])
def test_torch_backend_gives_the_reference_numbers_and_intervals(rows, estimator):
    """Every route and its bootstrap replicates (sample space in-sample and cross-fitted; grouped feature
    space) on torch equal the numpy reference to float64 round-off."""
    rng = np.random.default_rng(4)
    bank = rng.standard_normal((6, 12))
    which = np.arange(rows) % 6
    x = bank[which] @ rng.standard_normal((12, 10)) + rng.standard_normal((rows, 10))
    kw = dict(gamma_estimator=estimator, ridge=0.01, bootstrap=20, seed=3, n_clusters=2)
    a = pp.Scendi(device="cpu", **kw).fit((bank[which], x))
    b = pp.Scendi(device="torch", **kw).fit((bank[which], x))
    assert a.config["route"] == b.config["route"]
    assert b.config["device"] == "torch:cpu"
    for key in ("scendi", "scendi_prompt", "scendi_order2", "vendi", "rke", "model_share", "prompt_share"):
        assert getattr(b, key) == pytest.approx(getattr(a, key), rel=1e-9), key
    for m, iv in a.intervals.items():
        assert b.intervals[m]["low"] == pytest.approx(iv["low"], rel=1e-8, abs=1e-12), m
        assert b.intervals[m]["high"] == pytest.approx(iv["high"], rel=1e-8, abs=1e-12), m
    assert [s.index for s in a.clusters[0].top_samples] == [s.index for s in b.clusters[0].top_samples]


def test_auto_bootstrap_counts_the_jackknifes_refits(monkeypatch):
    """bootstrap='auto' with the jackknife's intervals (repeated prompts: the debiased estimator) runs one
    refit per distinct prompt G, recorded as the replicates; when G refits cost more than auto's budget (here
    shrunk: 20 replicates of 16 x 16 matrices), no intervals and a note that says how to ask for them."""
    from promptprism.methods.scendi import estimator

    rng = np.random.default_rng(4)
    monkeypatch.setattr(estimator, "AUTO_BOOTSTRAP_MAX_SIZE", 16)
    monkeypatch.setattr(estimator, "AUTO_BOOTSTRAP_REPLICATES", 20)
    for distinct, runs in ((15, True), (30, False)):
        which = np.arange(4 * distinct) % distinct
        t = rng.standard_normal((distinct, 8))[which]
        z = t @ rng.standard_normal((8, 8)) + rng.standard_normal((which.size, 8))
        fit = pp.Scendi(bootstrap="auto", n_clusters=2).fit((t, z))
        assert fit.gamma_estimator.startswith("debiased") or fit.gamma_estimator == "in-sample"
        if runs:
            assert fit.bootstrap["interval"].startswith("jackknife")
            assert fit.bootstrap["replicates"] == distinct and fit.intervals
        else:
            assert fit.intervals == {} and fit.bootstrap == {}
            assert any("once per distinct prompt (30 refits on 16 x 16" in w for w in fit.warnings)


def test_the_same_pairs_in_another_row_order_give_the_same_cross_fitted_scendi():
    """Folds were dealt over prompts in order of first appearance: a shuffled copy of a one-answer-per-
    question set read Scendi 7.14 against 8.43 (outside the first's interval). Now the same up to the
    rounding of sums taken in another order."""
    rng = np.random.default_rng(6)
    pe = rng.normal(size=(40, 60))
    oe = pe[:, :16] + rng.normal(size=(40, 16)) * 0.7 + 0.3
    prompts = [f"q{i}" for i in range(40)]
    perm = np.random.default_rng(101).permutation(40)
    est = pp.Scendi(gamma_estimator="cross-fit", seed=0, bootstrap=20, interval="basic")
    one = est.fit(pp.PairedSet(pe, oe, prompts=prompts))
    two = est.fit(pp.PairedSet(pe[perm], oe[perm], prompts=[prompts[i] for i in perm]))
    assert two.scendi == pytest.approx(one.scendi, rel=1e-9)
    assert two.model_share == pytest.approx(one.model_share, rel=1e-9)
    first, second = one.intervals["scendi"], two.intervals["scendi"]
    assert (second["low"], second["high"]) == pytest.approx((first["low"], first["high"]), rel=1e-9)


def test_a_direction_without_variance_is_not_listed_as_a_cluster():
    """Two rows of one prompt: the second direction's eigenvalue is round-off (-5.6e-17), and it was listed
    as cluster 2 with share -0.0% (-1.7e-16 in result.json) and no sample. Only real clusters, shares in
    [0, 1]."""
    rng = np.random.default_rng(0)
    pe = np.repeat(rng.normal(size=(1, 6)), 2, axis=0)
    result = pp.Scendi(seed=0).fit(pp.PairedSet(pe, rng.normal(size=(2, 8)), prompts=["p0", "p0"]))
    assert len(result.clusters) == 1 and all(0.0 <= c.share <= 1.0 for c in result.clusters)
    assert all(c.top_samples for c in result.clusters)


def test_options_the_fit_does_not_use_are_said_not_dropped():
    """--ridge with the debiased estimator, the gaussian kernel's options with cosine, a level without
    intervals: each ran with the same numbers and no word. Now each group is noted (result warnings and a
    UserWarning); the defaults and options in use say nothing."""
    rng = np.random.default_rng(1)
    pe = np.repeat(rng.normal(size=(20, 6)), 5, axis=0)
    data = pp.PairedSet(pe, pe[:, :4] + rng.normal(size=(100, 4)), prompts=[f"p{i // 5}" for i in range(100)])
    with pytest.warns(UserWarning, match="ridge: used by the cross-fitted Gamma\\* only"):
        noted = pp.Scendi(ridge=0.5, n_features=10, shared_frequencies=True, confidence=0.8).fit(data)
    said = " | ".join(noted.warnings)
    assert "n_features, shared_frequencies: used by the gaussian kernel only" in said
    assert "confidence: used by the intervals (bootstrap > 0) only" in said
    plain = pp.Scendi().fit(data)
    assert not [w for w in plain.warnings if "not used" in w]
    assert noted.scendi == plain.scendi
    crossfit = pp.Scendi(gamma_estimator="cross-fit", ridge=0.5).fit(data)
    assert not [w for w in crossfit.warnings if "not used" in w]

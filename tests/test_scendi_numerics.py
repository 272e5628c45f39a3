"""Scendi's numbers stay in their range, against brute force: ridge 0 is the pseudo-inverse (its share
checked, or refused when it exceeds 1), folds are bounded by the distinct prompts, the cosine route works
whatever the rank of the prompts, and an interval that excludes its estimate says so (issue 25)."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest

import promptprism as pp
from promptprism.data.paired import prompt_groups
from promptprism.errors import OptionError
from promptprism.methods.scendi.dual import assign_folds
from test_scendi_crossfit import brute_cross_fit, exp_entropy, unit


def _set(seed: int, n_prompts: int, per: int, d_t: int, d_x: int, signal: float = 1.0):
    rng = np.random.default_rng(seed)
    bank = rng.standard_normal((n_prompts, d_t))
    which = np.repeat(np.arange(n_prompts), per)
    t = bank[which]
    k = min(d_t, d_x)
    x = signal * t[:, :k] @ rng.standard_normal((k, d_x)) + rng.standard_normal((len(which), d_x))
    return pp.PairedSet(t, x, prompts=[f"q{g}" for g in which], name="s")


def brute_in_sample(fi, ft):
    """SPEC's in-sample Lambda_I, Lambda_T from the joint covariance (pseudo-inverse cut as the library's)."""
    n = len(fi)
    c_ii, c_it, c_tt = fi.T @ fi / n, fi.T @ ft / n, ft.T @ ft / n
    vals, vecs = np.linalg.eigh(c_tt)
    keep = vals > 1e-10 * vals.max()
    lam_t = c_it @ vecs[:, keep] @ np.diag(1.0 / vals[keep]) @ vecs[:, keep].T @ c_it.T
    return c_ii - lam_t, lam_t


def test_ridge_zero_is_the_pseudo_inverse_and_its_share_is_checked():
    data = _set(1, 40, 1, 4, 6)  # prompts in 4-d: the pseudo-inverse is well posed, shares in [0, 1]
    res = pp.Scendi(gamma_estimator="cross-fit", ridge=0, n_folds=5, seed=3).fit(data)
    folds = assign_folds(prompt_groups(data, numbered="content")[0][0], 5, 3)
    lam_i, lam_t = brute_cross_fit(unit(data.output_embeddings), unit(data.prompt_embeddings), folds, 0.0)
    assert 0.0 <= res.model_share <= 1.0
    assert res.model_share == pytest.approx(np.trace(lam_i), rel=1e-9)
    assert res.prompt_share == pytest.approx(np.trace(lam_t), rel=1e-9)
    assert res.scendi == pytest.approx(exp_entropy(lam_i), rel=1e-9)
    assert res.scendi_prompt == pytest.approx(exp_entropy(lam_t), rel=1e-9)
    assert res.config["prompt_part"].startswith("Lambda_T = C_II - Lambda_I")


def test_a_ridge_worse_than_no_prediction_is_refused_and_cv_stays_at_most_one():
    data = _set(2, 30, 1, 60, 5, signal=0.0)  # outputs independent of 60-d prompts: interpolation is noise
    folds = assign_folds(prompt_groups(data, numbered="content")[0][0], 5, 0)
    lam_i, _ = brute_cross_fit(unit(data.output_embeddings), unit(data.prompt_embeddings), folds, 0.0)
    assert np.trace(lam_i) > 1.0  # the brute-force number a user would otherwise see
    with pytest.raises(OptionError, match="worse than predicting nothing"):
        pp.Scendi(gamma_estimator="cross-fit", ridge=0).fit(data)
    cv = pp.Scendi(gamma_estimator="cross-fit", bootstrap=50).fit(data)
    assert 0.0 <= cv.model_share <= 1.0 and 0.0 <= cv.prompt_share <= 1.0
    assert cv.model_share + cv.prompt_share == pytest.approx(1.0, abs=1e-12)
    assert cv.scendi <= cv.vendi * (1 + 1e-9)
    for m in ("model_share", "prompt_share"):
        assert 0.0 <= cv.intervals[m]["low"] <= cv.intervals[m]["high"] <= 1.0


def test_folds_above_the_distinct_prompts_are_refused_and_leave_one_out_matches_brute_force():
    data = _set(4, 12, 2, 3, 4)
    with pytest.raises(OptionError, match="at most 12 folds"):
        pp.Scendi(gamma_estimator="cross-fit", n_folds=1000).fit(data)
    res = pp.Scendi(gamma_estimator="cross-fit", n_folds=12, ridge=0.01, seed=1).fit(data)
    assert res.gamma_estimator.startswith("cross-fit (12 folds")
    folds = assign_folds(prompt_groups(data, numbered="content")[0][0], 12, 1)
    lam_i, _ = brute_cross_fit(unit(data.output_embeddings), unit(data.prompt_embeddings), folds, 0.01)
    assert res.model_share == pytest.approx(np.trace(lam_i), rel=1e-9)
    assert 0.0 <= res.model_share <= 1.0


@pytest.mark.parametrize(("n_prompts", "per", "d_t", "d_x"), [(40, 5, 30, 5), (40, 1, 30, 5), (8, 30, 20, 3)])
def test_cosine_route_works_when_prompts_span_more_directions_than_the_outputs(n_prompts, per, d_t, d_x):
    data = _set(5, n_prompts, per, d_t, d_x)
    with pytest.warns(pp.PromptRankWarning) if 2 * d_t >= len(data) else nullcontext():
        res = pp.Scendi(gamma_estimator="in-sample").fit(data)
    lam_i, lam_t = brute_in_sample(unit(data.output_embeddings), unit(data.prompt_embeddings))
    assert res.model_share == pytest.approx(np.trace(lam_i), rel=1e-8, abs=1e-12)
    assert res.prompt_share == pytest.approx(np.trace(lam_t), rel=1e-8)
    assert res.scendi == pytest.approx(exp_entropy(lam_i), rel=1e-7)
    assert res.scendi_prompt == pytest.approx(exp_entropy(lam_t), rel=1e-8)
    assert res.prompt_rank > d_x


def test_an_interval_excluding_its_estimate_names_both_numbers():
    data = _set(6, 30, 1, 40, 6)  # one output per prompt, n below the feature dimension
    res = pp.Scendi(gamma_estimator="cross-fit", bootstrap=60, seed=2).fit(data)
    for m, iv in res.intervals.items():
        value = getattr(res, m)
        assert iv["contains_estimate"] == (iv["low"] <= value <= iv["high"]), m
        assert iv["low"] <= iv["centre"] <= iv["high"], m
        said = [w for w in res.warnings if w.startswith(f"{m} = ")]
        assert bool(said) == (not iv["contains_estimate"]), m
    assert pp.ScendiResult.from_json(res.to_json()) == res


def brute_debiased(fi, ft, groups):
    """The degrees-of-freedom corrected Lambda_I from its definition (methods/scendi/debias.py): W + c B."""
    n = len(fi)
    labels = np.unique(groups)
    wg = np.array([np.mean(groups == g) for g in labels])
    means = np.stack([fi[groups == g].mean(axis=0) for g in labels])
    y = np.sqrt(wg)[:, None] * np.stack([ft[groups == g][0] for g in labels])
    proj = y @ np.linalg.pinv(y.T @ y, rcond=1e-10) @ y.T
    c = 1.0 / np.sum(wg * (1.0 - np.diag(proj)))
    x_g = np.sqrt(wg)[:, None] * means
    within = fi.T @ fi / n - x_g.T @ x_g
    between = x_g.T @ (np.eye(len(labels)) - proj) @ x_g
    lam_i = within + c * between
    return lam_i, fi.T @ fi / n - lam_i


@pytest.mark.parametrize(("n_prompts", "per", "d_t", "d_x"), [(10, 12, 3, 6), (40, 5, 30, 5), (30, 1, 4, 40)])
def test_debiased_estimator_matches_its_definition_on_every_route(n_prompts, per, d_t, d_x):
    data = _set(7, n_prompts, per, d_t, d_x)
    res = pp.Scendi(gamma_estimator="debiased", bootstrap=30).fit(data)
    groups = prompt_groups(data, numbered="content")[0][0]
    lam_i, lam_t = brute_debiased(unit(data.output_embeddings), unit(data.prompt_embeddings), groups)
    assert res.gamma_estimator.startswith("debiased")
    assert res.model_share == pytest.approx(np.trace(lam_i), rel=1e-8)
    assert res.prompt_share == pytest.approx(np.trace(lam_t), rel=1e-8)
    assert res.scendi == pytest.approx(exp_entropy(lam_i), rel=1e-7)
    assert res.scendi_prompt == pytest.approx(exp_entropy(lam_t), rel=1e-7)
    assert res.config["prompt_part"].startswith("Lambda_T = C_II - Lambda_I")
    ins = pp.Scendi(gamma_estimator="in-sample").fit(data)
    assert res.model_share >= ins.model_share


def test_debiased_bootstrap_replicate_is_the_estimator_on_the_duplicated_rows():
    data = _set(8, 12, 3, 4, 6)
    groups = prompt_groups(data, numbered="content")[0][0]
    from promptprism.methods.scendi.bootstrap import bootstrap_replicates, prompt_draws
    from promptprism.methods.scendi.nullifier import resolve_feature_maps
    from promptprism.methods.scendi.replicates import GroupedReplicates, feature_matrices

    maps = resolve_feature_maps(data, kernel="cosine", sigma_output=None, sigma_prompt=None, n_features=0,
                                shared_frequencies=False, seed=0, notes=[])
    fi, fg = feature_matrices(data, maps, groups=groups, chunk_size=50)
    counts = prompt_draws(12, 2, seed=3)
    reps = bootstrap_replicates(groups, counts, GroupedReplicates(fi, fg))
    t, x = data.prompt_embeddings, data.output_embeddings
    for b in range(2):
        rows = np.concatenate([np.flatnonzero(groups == g) for g in range(12) for _ in range(counts[b, g])])
        # a prompt drawn twice is one prompt with twice the weight (its outputs duplicated)
        lam_i, _ = brute_debiased(unit(x[rows]), unit(t[rows]), groups[rows])
        assert reps["model_share"][b] == pytest.approx(np.trace(lam_i), rel=1e-8)


def test_auto_takes_cross_fit_when_no_residual_degree_of_freedom_remains():
    data = _set(9, 30, 1, 40, 6)  # 30 distinct prompts spanning 30 directions: k = G
    res = pp.Scendi().fit(data)
    assert res.gamma_estimator.startswith("cross-fit")
    with pytest.raises(OptionError, match="no residual degrees"):
        pp.Scendi(gamma_estimator="debiased").fit(data)


def test_the_result_says_whether_its_intervals_are_calibrated():
    data = _set(10, 60, 2, 3, 6)  # 60 prompts in 3-d: debiased estimator, jackknife intervals (calibrated)
    res = pp.Scendi(bootstrap=20).fit(data)
    assert res.gamma_estimator.startswith("debiased")
    assert res.bootstrap["interval"] == "jackknife over prompts"
    assert res.bootstrap["validity"]["not_calibrated"] == ["rke"]  # (rke below 200 prompts: 0.91-0.92)
    assert res.bootstrap["validity"]["holds"] is False
    many = pp.Scendi(bootstrap=20).fit(_set(10, 200, 1, 3, 6))
    assert many.bootstrap["validity"]["holds"] is True
    basic = pp.Scendi(bootstrap=20, interval="basic").fit(data)
    assert basic.bootstrap["validity"]["holds"] is False and "basic bootstrap" in basic.bootstrap["validity"][
        "reason"]
    with pytest.raises(OptionError, match="interval must be 'auto'"):
        pp.Scendi(interval="bca")

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
from promptprism.methods.scendi import assign_folds
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
    folds = assign_folds(prompt_groups(data)[0][0], 5, 3)
    lam_i, lam_t = brute_cross_fit(unit(data.output_embeddings), unit(data.prompt_embeddings), folds, 0.0)
    assert 0.0 <= res.model_share <= 1.0
    assert res.model_share == pytest.approx(np.trace(lam_i), rel=1e-9)
    assert res.prompt_share == pytest.approx(np.trace(lam_t), rel=1e-9)
    assert res.scendi == pytest.approx(exp_entropy(lam_i), rel=1e-9)
    assert res.scendi_prompt == pytest.approx(exp_entropy(lam_t), rel=1e-9)
    assert res.config["prompt_part"].startswith("Lambda_T = C_II - Lambda_I")


def test_a_ridge_worse_than_no_prediction_is_refused_and_cv_stays_at_most_one():
    data = _set(2, 30, 1, 60, 5, signal=0.0)  # outputs independent of 60-d prompts: interpolation is noise
    folds = assign_folds(prompt_groups(data)[0][0], 5, 0)
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
    folds = assign_folds(prompt_groups(data)[0][0], 12, 1)
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

"""Scendi's estimates in their ranges (issue 42, item 2): shares in [0, 1], Scendi and Scendi_T at most Vendi.

The reported case: ``diversity a.npz b.npz`` printed model share 1.0107, prompt share -0.0107 and Scendi
12.02 above Vendi 11.73. The debiased estimator (the default while rank C_TT < the distinct prompts) scales
the between-prompt residual by c = G / (G - k) > 1, so when the prompts explain little of the outputs its
Lambda_I can exceed C_II. Planted here: 40 prompts (30-d) x 5 outputs that barely depend on them. Checked:

* the raw value is the debiased estimator's, by brute force from the definition (W + c B, :mod:`.debias`);
* the result reports it clipped to its range and records field, raw value and range in ``clipped``; the
  warning and the CLI say so; the intervals (built from the raw estimator's replicates) hold the reported
  value; the paired differences pivot on the raw values;
* the in-sample estimator never needs a clip (its parts are PSD by construction) and, over many sets, no
  reported estimate leaves its range;
* :func:`promptprism.methods.scendi.ranges.clip_table` by hand.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from promptprism.data.paired import PairedSet
from promptprism.methods.scendi import Scendi, compare
from promptprism.methods.scendi.bootstrap import jackknife_interval
from promptprism.methods.scendi.ranges import clip_table, clipped_notes
from promptprism.stats.resampling import estimate_hull

warnings.filterwarnings("ignore", category=UserWarning)


def _planted(seed: int = 0, groups: int = 40, per: int = 5, d_prompt: int = 30, d_output: int = 16
             ) -> PairedSet:
    """Outputs nearly independent of their prompts (rank C_TT = 30 < 40 distinct prompts: debiased)."""
    rng = np.random.default_rng(seed)
    t = np.repeat(rng.standard_normal((groups, d_prompt)), per, axis=0)
    x = rng.standard_normal((groups * per, d_output)) + 0.05 * t[:, :d_output]
    return PairedSet(t, x, prompts=[f"p{i // per}" for i in range(groups * per)], name=f"set {seed}")


def _debiased_model_share(data: PairedSet) -> float:
    """Tr Lambda_I^dfc = Tr W + c Tr B from the definition (cosine features, equal row weights)."""
    x = data.output_embeddings / np.linalg.norm(data.output_embeddings, axis=1, keepdims=True)
    t = data.prompt_embeddings / np.linalg.norm(data.prompt_embeddings, axis=1, keepdims=True)
    n = len(x)
    labels = np.unique(np.asarray(data.prompts), return_inverse=True)[1]
    groups = labels.max() + 1
    w = np.bincount(labels) / n
    means = np.stack([x[labels == g].mean(axis=0) for g in range(groups)])
    t_g = np.stack([t[labels == g][0] for g in range(groups)])
    x_g, z_g = np.sqrt(w)[:, None] * means, np.sqrt(w)[:, None] * t_g
    u, s, _ = np.linalg.svd(z_g, full_matrices=False)
    basis = u[:, s > 1e-10 * s[0]]
    h = np.sum(basis ** 2, axis=1)
    c = 1.0 / np.sum(w * (1.0 - h))
    within = x.T @ x / n - x_g.T @ x_g
    between = x_g.T @ (x_g - basis @ (basis.T @ x_g))
    return float(np.trace(within) + c * np.trace(between))


def test_clip_table_by_hand():
    table = {"model_share": 1.02, "prompt_share": -0.02, "scendi": 12.02, "scendi_prompt": 1.5,
             "vendi": 11.73, "rke": 9.0, "entropies": {"scendi": np.log(12.02), "vendi": np.log(11.73)}}
    out, clipped = clip_table(table)
    assert (out["model_share"], out["prompt_share"], out["scendi"]) == (1.0, 0.0, 11.73)
    assert out["scendi_prompt"] == 1.5 and out["rke"] == 9.0
    assert out["entropies"]["scendi"] == pytest.approx(np.log(11.73))
    assert table["scendi"] == 12.02  # (the table given is left alone)
    assert clipped == {"model_share": {"raw": 1.02, "reported": 1.0, "range": "[0, 1]"},
                       "prompt_share": {"raw": -0.02, "reported": 0.0, "range": "[0, 1]"},
                       "scendi": {"raw": 12.02, "reported": 11.73, "range": "[1, vendi]"}}
    line = clipped_notes(clipped, "debiased (in-sample, ...)")[0]
    assert "model_share 1.02 -> 1" in line and "scendi 12.02 -> 11.73" in line and "debiased" in line
    inside = dict(table, model_share=0.9, prompt_share=0.1, scendi=11.0)
    assert clip_table(inside)[1] == {} and clipped_notes({}, "in-sample") == []
    # round-off beyond a bound is clipped without a record
    out, clipped = clip_table(dict(inside, model_share=1.0 + 1e-12, prompt_share=-1e-12))
    assert out["model_share"] == 1.0 and clipped == {}


def test_the_planted_set_is_clipped_and_says_so():
    data = _planted(0)
    res = Scendi(seed=0).fit(data)
    raw = _debiased_model_share(data)
    assert res.gamma_estimator.startswith("debiased") and raw > 1.01  # (the estimator leaves the range)
    assert res.clipped["model_share"]["raw"] == pytest.approx(raw, rel=1e-9)
    assert res.clipped["prompt_share"]["raw"] == pytest.approx(1.0 - raw, abs=1e-9)
    assert (res.model_share, res.prompt_share) == (1.0, 0.0)
    assert res.clipped["scendi"]["raw"] > res.vendi == res.scendi
    assert res.entropies["scendi"] == pytest.approx(res.entropies["vendi"])
    assert any(w.startswith("clipped to the estimates' ranges") for w in res.warnings)
    again = type(res).from_json(res.to_json())  # (saved and read back)
    assert again.clipped == res.clipped


def test_the_in_sample_estimator_needs_no_clip_and_no_estimate_leaves_its_range():
    clipped_debiased = 0
    for seed in range(8):
        data = _planted(seed)
        inside = Scendi(seed=0, gamma_estimator="in-sample").fit(data)
        assert inside.clipped == {}  # Lambda_I, Lambda_T PSD: the theory's ranges hold by construction
        assert inside.scendi <= inside.vendi and inside.scendi_prompt <= inside.vendi
        res = Scendi(seed=0).fit(data)
        clipped_debiased += bool(res.clipped)
        for r in (inside, res):
            assert 0.0 <= r.model_share <= 1.0 and 0.0 <= r.prompt_share <= 1.0
            assert r.model_share + r.prompt_share == pytest.approx(1.0)
            assert 1.0 <= r.scendi <= r.vendi and 1.0 <= r.scendi_prompt <= r.vendi
    assert clipped_debiased >= 2  # (the planted case is common here: 3 of these 8 seeds)


def test_intervals_hold_the_reported_value_and_differences_pivot_on_the_raw_ones():
    """The jackknife intervals come from the raw estimator (clipped to [0, 1] for the shares); the paired
    difference of two models answering the same prompts is the reported values' difference, its interval
    the jackknife's around the raw values' difference."""
    a, b = _planted(0), _planted(1)
    b = PairedSet(a.prompt_embeddings, b.output_embeddings, prompts=list(a.prompts), name="b")
    est = Scendi(seed=0, bootstrap=50)
    comparison = compare([a, b], est, names=["a", "b"])
    ra, rb = comparison.models
    assert ra.clipped and not rb.clipped
    iv = ra.intervals["model_share"]
    assert iv["low"] <= ra.model_share <= iv["high"] <= 1.0 and iv["contains_estimate"]
    row = next(d for d in comparison.differences if d["metric"] == "model_share")
    assert row["difference"] == pytest.approx(ra.model_share - rb.model_share)
    # the replicates (a jackknife over the 40 shared prompts) again, from the raw estimator
    _, reps_a = est.fit_with_draws(a, name="a", groups=np.repeat(np.arange(40), 5))
    _, reps_b = est.fit_with_draws(b, name="b", groups=np.repeat(np.arange(40), 5))
    pivot = ra.clipped["model_share"]["raw"] - rb.model_share
    want = jackknife_interval(reps_a["model_share"] - reps_b["model_share"], pivot, 0.95)
    # (hulled with itself moved around the reported difference: it holds the printed number)
    hull = estimate_hull(want["low"], want["high"], want["centre"], row["difference"])
    assert (row["low"], row["high"]) == pytest.approx(hull, rel=1e-9)
    assert row["low"] <= row["difference"] <= row["high"]


def test_cli_prints_and_records_what_was_clipped(tmp_path):
    from _cli_run import run_cli

    for name, seed in (("a", 0), ("b", 1)):
        s = _planted(seed)
        np.savez(tmp_path / f"{name}.npz", prompt_embeddings=s.prompt_embeddings,
                 output_embeddings=s.output_embeddings, prompts=np.array(s.prompts))
    out = tmp_path / "out"
    code, stdout, stderr = run_cli("diversity", tmp_path / "a.npz", tmp_path / "b.npz", "-o", out,
                                   "--bootstrap", "0", "--no-report")
    assert code == 0, stderr
    assert "! a: clipped to the estimates' ranges: model_share 1.031 -> 1" in " ".join(stdout.split())
    saved = json.loads((out / "result.json").read_text())
    a = saved["models"][0]
    assert a["model_share"] == 1.0 and a["prompt_share"] == 0.0 and a["scendi"] == a["vendi"]
    assert set(a["clipped"]) == {"model_share", "prompt_share", "scendi"}
    assert saved["models"][1]["clipped"] == {}

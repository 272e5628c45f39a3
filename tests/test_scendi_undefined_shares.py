"""Shares where they mean something: difference intervals within [-1, 1], no shares without output
diversity, and spectra with a NaN named where it is."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import promptprism as pp
from _cli_run import run_cli
from promptprism.errors import InputError, OptionError
from promptprism.gate import evaluate
from promptprism.methods.scendi import compare
from promptprism.methods.scendi.ranges import NO_SPLIT_NOTE


def _indep_determ():
    """12 prompts x 5 outputs: outputs that ignore their prompts, and outputs that copy them."""
    r = np.random.default_rng(3)
    pe = np.repeat(r.normal(size=(12, 8)), 5, axis=0)
    prompts = [f"p{i // 5}" for i in range(60)]
    indep = pp.PairedSet(pe, r.normal(size=(60, 6)), prompts=prompts, name="indep")
    determ = pp.PairedSet(pe, pe[:, :6] + 0.01 * r.normal(size=(60, 6)), prompts=prompts, name="determ")
    return indep, determ


def _const(scale=1.0):
    r = np.random.default_rng(0)
    pe = np.repeat(r.normal(size=(20, 8)), 10, axis=0)
    oe = np.repeat(r.normal(size=(1, 6)) * scale, 200, axis=0)
    return pp.PairedSet(pe, oe, prompts=[f"prompt {i // 10}" for i in range(200)], name="const")


@pytest.mark.parametrize("interval", ["jackknife", "basic"])
def test_share_difference_interval_lies_in_minus_one_to_one(interval):
    comparison = compare(list(_indep_determ()), pp.Scendi(bootstrap=200, interval=interval))
    row = next(d for d in comparison.differences if d["metric"] == "model_share")
    assert -1.0 <= row["low"] <= row["difference"] <= row["high"] <= 1.0
    assert row["high"] == 1.0  # (the paired jackknife's upper end was 1.214 before it was intersected)
    # cut, not moved: the lower end is the interval's own (0.835 around the bias-corrected centre; 0.755
    # with it hulled around the estimate, stats.resampling.estimate_hull), never raised by the cut
    assert 0.7 < row["low"] < 0.8


@pytest.mark.parametrize(("scale", "kernel"), [(1.0, "cosine"), (1e12, "cosine"), (1.0, "gaussian")])
def test_constant_outputs_have_no_shares(scale, kernel):
    bandwidth = {"sigma_output": 1.0} if kernel == "gaussian" else {}  # (the median rule has no distance)
    r = pp.Scendi(bootstrap="auto", kernel=kernel, **bandwidth).fit(_const(scale))
    assert r.scendi == pytest.approx(1.0) and r.vendi == pytest.approx(1.0)
    assert r.model_share is None and math.isnan(r.prompt_share)
    assert math.isnan(r.summary()["model_share"])
    assert NO_SPLIT_NOTE in r.warnings
    assert "model_share" not in r.intervals and "prompt_share" not in r.intervals
    assert r.clusters == []
    assert not any("widened" in w for w in r.warnings)  # (round-off of [1, 1] is not news)


def test_constant_outputs_saved_loaded_and_gated(tmp_path):
    r = pp.Scendi(bootstrap="auto").fit(_const())
    r.save(tmp_path)
    data = json.loads((tmp_path / "result.json").read_text())
    assert data["model_share"] is None and data["prompt_share"] is None
    back = pp.load_result(tmp_path / "result.json")
    assert back.model_share is None and math.isnan(back.prompt_share)
    for result in (r, back):
        for cond in ("model_share<0.5", "prompt_share>0.5"):
            with pytest.raises(OptionError, match="is not a number in this result"):
                evaluate(result, [cond])


def test_cli_prints_a_dash_and_the_note(tmp_path):
    c = _const()
    np.savez(tmp_path / "const.npz", prompt_embeddings=c.prompt_embeddings,
             output_embeddings=c.output_embeddings, prompts=np.array(c.prompts))
    code, out, err = run_cli("diversity", tmp_path / "const.npz", "--out", tmp_path / "r")
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("│ const"))
    assert row.rstrip(" │").endswith("–") and "%" not in row
    assert f"! const: {NO_SPLIT_NOTE}" in " ".join(out.split())
    assert "widened" not in out
    html = (tmp_path / "r" / "report.html").read_text()
    assert "model-driven share – of the output variance (prompt-driven –)" in html


def test_comparison_with_a_constant_set_has_no_share_difference_or_ranking():
    indep, determ = _indep_determ()
    const = _const()
    comparison = compare([const, indep, determ], pp.Scendi(bootstrap="auto"))
    shares = [d for d in comparison.differences if d["metric"] == "model_share"]
    assert [(d["a"], d["b"]) for d in shares] == [("indep", "determ")]
    assert "const" not in comparison.rankings["model_share"]["words"]
    two = compare([const, indep], pp.Scendi(bootstrap="auto"))
    assert "model_share" not in two.rankings
    assert not [d for d in two.differences if d["metric"] == "model_share"]


def test_nan_in_a_spectrum_is_named_with_its_row_and_column():
    with pytest.raises(InputError, match=r"vendi_score: entry 1 \(0-based\) is NaN"):
        pp.vendi_score(np.array([1.0, np.nan, 2.0]))
    with pytest.raises(InputError, match=r"rke_score: entry 0 \(0-based\) is NaN"):
        pp.rke_score(np.full(5, np.nan))
    with pytest.raises(InputError, match=r"entry 2 \(0-based\) is inf"):
        pp.vendi_score(np.array([0.5, 0.5, np.inf]))
    with pytest.raises(InputError, match=r"row 1 \(0-based\), column 0 is NaN"):
        pp.vendi_score_from_gram(np.array([[1.0, 0.5], [np.nan, 1.0]]))
    # a matrix (with or without a NaN) is a kernel matrix given to the spectrum's function: said first
    for matrix in (np.eye(2), np.array([[np.nan, 1], [1, 2]])):
        with pytest.raises(InputError, match="expected a 1-D array of eigenvalues.*vendi_score_from_gram"):
            pp.vendi_score(matrix)
    assert pp.vendi_score(np.array([0.5, 0.5])) == pytest.approx(2.0)

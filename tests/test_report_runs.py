"""``promptprism report RUN_DIR RUN_DIR ...``: one page over runs; prompts entering or leaving the
significant set."""

from __future__ import annotations

import pytest

from _cli_run import run_cli
from promptprism.methods.promptsplit.kway import KWaySplit
from promptprism.report.runs import prompt_changes, significant_prompts
from test_promptsplit_kway import model_sets


def _run(tmp_path, name, shift):
    res = KWaySplit(method="exact", permutations=39, n_modes=2).fit(
        model_sets(7, 3, prompts=6, per=6, shift=shift, planted=1))
    res.save(tmp_path / name)
    return res


@pytest.mark.slow
def test_runs_page_over_checkpoints(tmp_path):
    early, late = _run(tmp_path, "ckpt1", 0.0), _run(tmp_path, "ckpt2", 3.0)
    assert significant_prompts(late)["m1"] >= {"prompt 0", "prompt 1"}
    code, stdout, err = run_cli("report", tmp_path / "ckpt1", tmp_path / "ckpt2", "--out", tmp_path / "runs")
    assert code == 0, err
    page = (tmp_path / "runs" / "report.html").read_text()
    for text in ("2 runs", "Verdicts", "Distances", "Significant prompts between runs", "prompt 0"):
        assert text in page
    changes = prompt_changes([("ckpt1", early), ("ckpt2", late)])
    m1 = [c for c in changes if c[2] == "m1"]
    assert m1 and {"prompt 0", "prompt 1"} <= set(m1[0][3]) and m1[0][4] == []


def test_prompts_leaving_the_set_are_listed():
    a, b = _fake(["p1", "p2"]), _fake(["p2", "p3"])
    assert prompt_changes([("a", a), ("b", b)]) == [("a", "b", "split", ["p3"], ["p1"])]


def _fake(prompts):
    from promptprism.methods.promptsplit import PromptSplitResult

    return PromptSplitResult(eigenvalues=[], modes=[], distance=0.0, method="exact", n_test=1, n_reference=1,
                             seed=0, config={}, prompt_ranking=[{"prompt": p} for p in prompts],
                             ranking_basis="significant modes")


def test_several_folders_need_out(tmp_path):
    _run(tmp_path, "a", 0.0)
    code, _, err = run_cli("report", tmp_path / "a", tmp_path / "a")
    assert code == 2 and "--out" in err and len(err.strip().splitlines()) == 1


def test_the_regions_rows_put_the_u_form_estimate_beside_its_interval():
    """eq. 4's CMS reads low by about 1/n, and the interval is the U-form estimate's: paired with eq. 4's
    value alone it 'excluded' it and the page said "not a confidence interval" (0.8505 beside [0.9867, 1])."""
    from types import SimpleNamespace

    from promptprism.report.runs import _regions_rows

    result = SimpleNamespace(kind="regions", names=["gen"], cms=[0.8505], mmd2=[0.03],
                             intervals=[{"cms": {"low": 0.9867, "high": 1.0, "debiased": 1.0}}])
    [(_, _, cms, _)] = _regions_rows("run 1", result)
    assert cms == "0.8505 · U-form 1 [0.9867, 1]" and "excludes" not in cms

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
    a, b = _fake({"p1": 0.5, "p2": 0.4, "p3": 0.1}), _fake({"p1": 0.1, "p2": 0.4, "p3": 0.5})
    assert prompt_changes([("a", a), ("b", b)]) == [("a", "b", "split", ["p3"], ["p1"])]


def test_the_disagreement_moving_to_other_prompts_is_a_change():
    """Every prompt is in a ranking: the set a run calls significant is the prompts above an even share (it
    was the whole ranking, so the disagreement moving from history to science prompts read 'no change')."""
    shares = {f"history {i}": 0.15 for i in range(6)} | {f"science {i}": 0.1 / 24 for i in range(6)}
    shares |= {f"other {i}": 0.1 / 24 for i in range(18)}
    moved = {p: shares[p.replace("history", "x").replace("science", "history").replace("x", "science")]
             for p in shares}
    (row,) = prompt_changes([("a", _fake(shares)), ("b", _fake(moved))])
    assert row[3] == [f"science {i}" for i in range(6)] and row[4] == [f"history {i}" for i in range(6)]


def _fake(shares):
    from promptprism.methods.promptsplit import PromptSplitResult

    ranking = [{"prompt": p, "share": s} for p, s in shares.items()]
    return PromptSplitResult(eigenvalues=[], modes=[], distance=0.0, method="exact", n_test=1, n_reference=1,
                             seed=0, config={}, prompt_ranking=ranking, ranking_basis="significant modes")


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


@pytest.mark.slow
def test_runs_of_one_folder_name_are_told_apart_and_a_run_folder_is_not_overwritten(tmp_path):
    """x/ab and y/ab both read 'ab' on the page (the same folder twice: 'ab -> ab'); --out RUN1 replaced
    RUN1's own page with the runs page."""
    for parent in ("x", "y"):
        _run(tmp_path / parent, "ab", 0.0)
    code, _, err = run_cli("report", tmp_path / "x" / "ab", tmp_path / "y" / "ab", "--out", tmp_path / "runs")
    assert code == 0, err
    assert "x/ab → y/ab" in (tmp_path / "runs" / "report.html").read_text()
    x, y = tmp_path / "x" / "ab", tmp_path / "y" / "ab"
    code, _, err = run_cli("report", x, x, "--out", tmp_path / "twice")
    assert code == 0 and "ab#1 → ab#2" in (tmp_path / "twice" / "report.html").read_text()
    before = sorted(p.name for p in (tmp_path / "x" / "ab").iterdir())
    code, _, err = run_cli("report", x, y, "--out", x)
    assert code == 2 and "holds a result (result.json)" in err and err.count("\n") == 1
    assert sorted(p.name for p in (tmp_path / "x" / "ab").iterdir()) == before

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


def _diversity(scendi):
    from types import SimpleNamespace

    models = [SimpleNamespace(name=n, scendi=v, vendi=v, rke=v, model_share=0.3, intervals={})
              for n, v in scendi.items()]
    return SimpleNamespace(kind="scendi_comparison", models=models, rankings={}, verdict="")


def test_runs_of_other_kinds_are_not_compared_prompt_by_prompt():
    """split -> diversity listed every significant prompt of the split as 'left' (a diversity run has no
    significant-prompt set); runs are compared with the next run of their own kind only."""
    a, b = _fake({"p1": 0.5, "p2": 0.4, "p3": 0.1}), _fake({"p1": 0.1, "p2": 0.4, "p3": 0.5})
    runs = [("a", a), ("div", _diversity({"m": 2.0})), ("b", b)]
    assert prompt_changes(runs) == [("a", "b", "split", ["p3"], ["p1"])]
    assert prompt_changes([("a", a), ("div", _diversity({"m": 2.0}))]) == []


def test_the_runs_page_opens_with_a_verdict_on_what_changed_between_comparable_runs():
    import re
    from html import unescape

    from promptprism.report.runs import render_runs

    a, b = _fake({"p1": 0.5, "p2": 0.4, "p3": 0.1}), _fake({"p1": 0.1, "p2": 0.4, "p3": 0.5})
    runs = [("a", a), ("d1", _diversity({"m": 2.0, "n": 1.0})), ("b", b), ("d2", _diversity({"m": 2.5}))]
    doc = render_runs(runs)
    body = re.sub(r"^.*?<h2>Verdicts</h2>", "", doc, count=1, flags=re.S)
    assert body.lstrip().startswith('<p class="pp-verdict"><b>')
    said = unescape(re.search(r'class="pp-verdict"><b>(.*?)</b>', doc, re.S).group(1))
    assert said.startswith("From a to b (split)")
    assert "1 prompt entered the significant set and 1 left it" in said
    assert "from d1 to d2 (diversity) Scendi m 2 → 2.5" in said
    alone = render_runs([("a", a), ("d1", _diversity({"m": 2.0}))])
    said = unescape(re.search(r'class="pp-verdict"><b>(.*?)</b>', alone, re.S).group(1))
    assert said.startswith("No two runs are of the same kind") and "a (split), d1 (diversity)" in said
    assert "No significant-prompt set, not compared: d1 (diversity)" in unescape(alone)


def test_the_runs_page_links_each_runs_report_and_says_verdicts_without_field_names(tmp_path):
    import dataclasses

    from promptprism.report.references import external_references
    from promptprism.report.runs import render_runs, run_links

    for name in ("r1", "r 2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "report.html").write_text("<html></html>")
    (tmp_path / "r3").mkdir()  # (no report.html: no link)
    out = tmp_path / "runs"
    links = run_links([tmp_path / "r1", tmp_path / "r 2", tmp_path / "r3"], out)
    assert links == ["../r1/report.html", "../r%202/report.html", None]
    split = dataclasses.replace(_fake({"p1": 1.0}), significance={
        "verdict": "1 of 2 modes differ; aggregated over 3 kernels: p = 0.01, modes also found by cosine, "
                   "gaussian x2 (significance.aggregation)"})
    runs = [("r1", split), ("r 2", split), ("r3", split)]
    doc = render_runs(runs, links)
    assert 'href="../r1/report.html"' in doc and 'href="../r%202/report.html"' in doc
    assert "no report.html" in doc
    assert "significance.aggregation" not in doc.split('<script type="application/json"')[0]
    assert external_references(doc) == []  # (a link to another run's page loads nothing)
    assert external_references('<a href="../x/other.html">x</a>') and external_references(
        '<a href="//evil.example/report.html">x</a>') and external_references('<img src="../r1/report.html">')


def test_the_runs_diversity_table_says_which_intervals_are_not_calibrated():
    """The runs page showed a diversity run's intervals as plain brackets where its own page says that one
    is not a calibrated interval (here Vendi's): the same words now, from one formatter."""
    from types import SimpleNamespace

    from promptprism.report.runs import render_runs

    iv = {k: {"low": 1.0, "high": 3.0} for k in ("scendi", "vendi", "rke", "model_share")}
    model = SimpleNamespace(name="m", scendi=2.0, vendi=2.0, rke=2.0, model_share=0.3, intervals=iv,
                            bootstrap={"validity": {"holds": False, "not_calibrated": ["vendi"]}})
    page = render_runs([("d", SimpleNamespace(kind="scendi_comparison", models=[model], rankings={},
                                              verdict=""))])
    row = page[page.index("<h2"):][page[page.index("<h2"):].index("Diversity"):]
    assert "not a calibrated interval" in row

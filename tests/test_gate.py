"""The CI gate's conditions (promptprism.gate): a condition the result cannot answer is refused, never passed;
a ratio from a baseline of 0 is a number the comparison can use."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from _cli_run import run_cli
from promptprism.errors import OptionError
from promptprism.gate import evaluate, ratio
from promptprism.io import atomic_save_npz


def _split(distance: float, significant: int, p_values=(0.01, 0.5), tested: bool = True):
    modes = [SimpleNamespace(p_value=p if tested else None, significant=tested and i < significant)
             for i, p in enumerate(p_values)]
    return SimpleNamespace(kind="promptsplit", distance=distance, modes=modes,
                           significance={"alpha": 0.05} if tested else {})


def _kway(p_value, tested: bool = True):
    return SimpleNamespace(kind="promptsplit_kway", names=["a", "b"], distances=[[0.0, 0.3], [0.3, 0.0]],
                           pair_p_values=[[None, p_value], [p_value, None]],
                           significance={"alpha": 0.05} if tested else {}, significant_pairs=[])


def test_ratio_from_a_zero_baseline_is_one_for_zero_and_infinite_otherwise():
    assert ratio(0.0, 0.0) == 1.0
    assert ratio(2.0, 0.0) == math.inf and ratio(-2.0, 0.0) == -math.inf
    assert ratio(3.0, 2.0) == 1.5


def test_growth_from_zero_fails_a_ratio_gate_and_no_change_passes_it():
    before, grew, same = _split(0.2, 0), _split(0.2, 2), _split(0.2, 0)
    [check] = evaluate(grew, ["ratio(significant_modes)>1.5"], before)
    assert check.failed and check.value == math.inf and "0 -> 2" in check.message
    [check] = evaluate(same, ["ratio(significant_modes)>1.5"], before)
    assert not check.failed and check.value == 1.0
    [check] = evaluate(same, ["ratio(significant_modes)<0.5"], before)
    assert not check.failed  # 0 -> 0 is no change, not a drop


@pytest.mark.parametrize("condition", ["min_p_value<0.05", "change(min_p_value)>0.1"])
def test_a_value_that_is_not_a_number_is_refused_not_passed(condition):
    untested = _split(0.2, 0, tested=False)
    with pytest.raises(OptionError, match="cannot be checked.*min_p_value is not a number.*--permutations"):
        evaluate(untested, [condition], _split(0.2, 1))
    with pytest.raises(OptionError, match="baseline's min_p_value"):
        evaluate(_split(0.2, 1), ["change(min_p_value)>0.1"], untested)


def test_significant_on_an_untested_kway_result_is_refused_like_split():
    with pytest.raises(OptionError, match="compare with --permutations > 0"):
        evaluate(_kway(None, tested=False), ["significant"])
    with pytest.raises(OptionError, match="on a vs b: p_value is not a number"):
        evaluate(_kway(None, tested=False), ["p_value<0.05"])
    [check] = evaluate(_kway(0.01), ["p_value<0.05"])
    assert check.failed and check.row == "a vs b"


def test_significant_on_a_diversity_comparison_without_intervals_is_refused():
    models = [SimpleNamespace(intervals={}), SimpleNamespace(intervals={})]
    result = SimpleNamespace(kind="scendi_comparison", models=models, differences=[])
    with pytest.raises(OptionError, match="--bootstrap > 0"):
        evaluate(result, ["significant"])


def test_cli_compare_without_its_test_exits_2_for_significant(tmp_path):
    rng = np.random.default_rng(0)
    prompts = np.repeat(rng.normal(size=(10, 4)), 6, axis=0)
    sets = []
    for k in range(3):
        path = tmp_path / f"s{k}.npz"
        atomic_save_npz(path, prompt_embeddings=prompts,
                        output_embeddings=prompts[:, :3] + rng.normal(scale=0.3, size=(60, 3)))
        sets.append(path)
    code, _, err = run_cli("compare", *sets, "--out", tmp_path / "run", "--permutations", "0", "--quiet",
                           "--no-report")
    assert code == 0, err
    for condition in ("significant", "p_value<0.05"):
        code, out, err = run_cli("check", tmp_path / "run", "--fail-on", condition)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "--permutations" in err, (out, err)


def _tested(permutations: int, **more):
    return {"alpha": 0.05, "permutations": permutations, **more}


def test_significant_modes_of_an_untested_split_is_refused_not_read_as_zero():
    with pytest.raises(OptionError, match="significant_modes is not a number"):
        evaluate(_split(0.2, 0, tested=False), ["significant_modes>0"])
    with pytest.raises(OptionError, match="baseline's significant_modes"):
        evaluate(_split(0.2, 1), ["change(significant_modes)>0"], _split(0.2, 0, tested=False))


@pytest.mark.parametrize("kind", ["split", "kway"])
def test_a_test_with_too_few_permutations_to_reject_cannot_pass_the_gate(kind):
    made = _split(0.2, 0) if kind == "split" else _kway(0.09)
    made.significance = _tested(10)  # smallest p-value 1/11 > 0.05
    with pytest.raises(OptionError, match=r"1/11 = 0.0909 is above alpha = 0.05.*--permutations >= 19"):
        evaluate(made, ["significant"])
    made.significance = _tested(19)  # 1/20 = 0.05: it can reject
    [check] = evaluate(made, ["significant"])
    assert not check.failed
    if kind == "split":
        made.significance = _tested(10)
        with pytest.raises(OptionError, match="significant_modes is not a number"):
            evaluate(made, ["significant_modes>0"])


def test_an_aggregated_rejection_without_a_fitted_mode_is_significant():
    made = _split(0.2, 0, p_values=(0.1, 0.5))
    made.significance = _tested(200, aggregation={"p": 0.01, "kernels": [
        {"name": "gaussian", "fitted": True, "n_significant": 0},
        {"name": "gaussian x2", "fitted": False, "n_significant": 2}]})
    [check] = evaluate(made, ["significant"])
    assert check.failed and "p = 0.01 <= alpha = 0.05" in check.message and "gaussian x2" in check.message
    made.significance["aggregation"]["p"] = 0.2
    [check] = evaluate(made, ["significant"])
    assert not check.failed


@pytest.mark.parametrize("p, alpha, shown", [(0.049976, 0.05, "0.04998"), (0.0501, 0.05, "0.0501"),
                                             (0.05, 0.05, "0.05"), (0.0125, 0.0125, "0.0125"),
                                             (0.012, 0.05, "0.012"),
                                             (0.0099, 0.01, "0.0099"), (0.01001, 0.01, "0.01001"),
                                             (0.3, None, "0.3")])
def test_a_printed_p_value_stays_on_its_side_of_alpha(p, alpha, shown):
    from promptprism.stats.intervals import format_p

    assert format_p(p, alpha) == shown
    if alpha is not None and p != alpha:
        assert (float(shown) <= alpha) == (p <= alpha) and float(shown) != alpha


def test_rows_of_one_name_are_refused_not_matched():
    made = SimpleNamespace(kind="scendi_comparison", models=[
        SimpleNamespace(name="set", summary=lambda: {"scendi": 2.0}, prompt_share=0.5),
        SimpleNamespace(name="set", summary=lambda: {"scendi": 3.0}, prompt_share=0.4)])
    with pytest.raises(OptionError, match="2 rows named 'set'"):
        evaluate(made, ["scendi>1"])


@pytest.mark.parametrize("kind, condition", [("split", "min_p_value<0.05"), ("kway", "p_value<0.05")])
def test_a_p_value_threshold_on_a_test_that_cannot_reject_is_refused(kind, condition):
    made = _split(0.2, 0, p_values=(0.09, 0.5)) if kind == "split" else _kway(0.09)
    made.significance = _tested(10)
    with pytest.raises(OptionError, match="is not a number"):
        evaluate(made, [condition])


def _kway_named(names, distances, p_values):
    return SimpleNamespace(kind="promptsplit_kway", names=names, distances=distances, pair_p_values=p_values,
                           significance={"alpha": 0.05}, significant_pairs=[])


def test_a_baseline_that_listed_the_same_sets_in_another_order_is_matched_pair_by_pair():
    """'A vs C' now, 'C vs A' in last week's run: with numbers that do not depend on a pair's order
    (eta = 1) it is the same comparison; where they do (eta != 1), refused with the reason."""
    now = _kway_named(["A", "B", "C"], [[0, .2, .3], [.2, 0, .1], [.3, .1, 0]],
                      [[None, .01, .02], [.01, None, .5], [.02, .5, None]])
    before = _kway_named(["C", "A", "B"], [[0, .3 + 1e-17, .1], [.3, 0, .25], [.1, .25, 0]],
                         [[None, .02, .5], [.02, None, .01], [.5, .01, None]])
    checks = {c.row: c for c in evaluate(now, ["change(distance)>0.01"], before)}
    assert checks["A vs C"].value == pytest.approx(0.0) and not checks["A vs C"].failed
    assert checks["A vs B"].value == pytest.approx(-0.05) and not checks["A vs B"].failed
    ordered = _kway_named(["C", "A", "B"], [[0, .3, .1], [.4, 0, .25], [.1, .25, 0]],
                          [[None, .02, .5], [.02, None, .01], [.5, .01, None]])
    with pytest.raises(OptionError, match="'C vs A' is that pair in the other order.*eta != 1"):
        evaluate(now, ["change(distance)>0.01"], ordered)


def _diversity(names, kid=None, fd=None):
    models = [SimpleNamespace(name=n, prompt_share=0.3, reference_metrics={} if fd is None else
                              {"name": n, "n": 50, "fd": fd[i], "precision": 0.8, "clip_score": None},
                              summary=lambda n=n: {"name": n, "scendi": 4.0, "vendi": 5.0,
                                                   "model_share": 0.7})
              for i, n in enumerate(names)]
    return SimpleNamespace(kind="scendi_comparison", models=models)


@pytest.mark.parametrize("names", [["a", "b"], ["5", "0.5"]])
def test_a_name_is_not_a_metric_even_when_it_reads_as_a_number(names):
    """'name>1' on a diversity result was an internal error (exit 1, the gate's 'failed'), and with numeric
    names it compared the names."""
    with pytest.raises(OptionError, match="'name' is not a number of this scendi_comparison result; known: "
                                          "model_share, prompt_share, scendi, vendi$"):
        evaluate(_diversity(names), ["name>1"])


def test_diversity_with_a_reference_gates_on_its_reference_metrics():
    checks = evaluate(_diversity(["a", "b"], fd=[4.1, 1.7]), ["fd>2", "precision<0.5"])
    assert [(c.row, c.failed) for c in checks] == [("a", True), ("b", False), ("a", False), ("b", False)]
    with pytest.raises(OptionError, match="clip_score is not a number"):
        evaluate(_diversity(["a"], fd=[1.0]), ["clip_score<0.2"])


def _metrics(kid):
    return SimpleNamespace(kind="metrics", table=lambda: [{"name": "m", "n": 100, "kid": kid, "fd": 1.0}])


def test_a_ratio_from_a_negative_baseline_is_refused_and_change_still_compares():
    """KID -0.073 -> -0.031 (worse) read ratio 0.43 and passed 'ratio(kid)>1.1'; a better one failed it."""
    with pytest.raises(OptionError, match="baseline's kid is -0.0729, below 0.*use change\\(kid\\)"):
        evaluate(_metrics(-0.0313), ["ratio(kid)>1.1"], _metrics(-0.0729))
    [check] = evaluate(_metrics(-0.0313), ["change(kid)>0.01"], _metrics(-0.0729))
    assert check.failed and check.value == pytest.approx(0.0416)
    [check] = evaluate(_metrics(0.02), ["ratio(kid)>1.1"], _metrics(0.01))  # (a positive baseline: as before)
    assert check.failed and check.value == pytest.approx(2.0)


def _regions(labels, cms):
    return SimpleNamespace(kind="regions", regions=labels, image_shape=[2, 2, 1], n_regions=len(set(labels)),
                           table=lambda: [{"set": "g", "cms": cms, "product_cms": cms, "region_0": cms,
                                           "region_1": cms, "mmd2": 0.1}])


def test_a_regions_baseline_with_another_region_map_is_refused_for_its_regions_only():
    """Two runs of the same images with 2 and 4 regions: region_1 names other pixels in each (it read a
    +0.106 'improvement' between identical images); the whole image's cms still compares."""
    now, before = _regions([0, 1, 1, 0], 0.9), _regions([0, 0, 1, 1], 0.8)
    for metric in ("region_1", "product_cms"):
        with pytest.raises(OptionError, match=f"regions are other pixels.*so {metric} names another part"):
            evaluate(now, [f"change({metric})<-0.01"], before)
    [check] = evaluate(now, ["change(cms)<-0.01"], before)
    assert not check.failed and check.value == pytest.approx(0.1)
    [check] = evaluate(now, ["change(region_1)<-0.01"], _regions([0, 1, 1, 0], 0.95))
    assert check.failed


def test_a_bug_in_check_exits_3_never_the_gates_1(tmp_path, monkeypatch):
    """An exception no input explains ends with one line and exit 3 in every sub-command, so a CI gate
    never reads a crash as a condition that holds (exit 1)."""
    import promptprism.gate as gate

    folder = tmp_path / "run"
    folder.mkdir()
    atomic_save_npz(tmp_path / "a.npz", prompt_embeddings=np.eye(6)[np.arange(12) % 6],
                    output_embeddings=np.random.default_rng(0).standard_normal((12, 3)))
    code, _, err = run_cli("diversity", tmp_path / "a.npz", "--out", folder, "--no-report", "-q",
                           "--bootstrap", "0")
    assert code == 0, err

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(gate, "evaluate", broken)
    code, _, err = run_cli("check", folder, "--fail-on", "scendi>1")
    assert code == 3 and err.count("\n") == 1 and "internal error (RuntimeError: a bug)" in err


def test_a_baseline_row_without_the_metric_says_so_not_that_the_row_is_missing():
    now = _regions([0, 1, 1, 0], 0.9)
    before = SimpleNamespace(kind="regions", regions=[0, 1, 1, 0], image_shape=[2, 2, 1], n_regions=2,
                             table=lambda: [{"set": "g", "cms": 0.8, "region_0": 0.8, "mmd2": 0.1}])
    said = "baseline: its row 'g' has no region_1 to compare with \\(it has cms, mmd2, region_0\\)"
    with pytest.raises(OptionError, match=said):
        evaluate(now, ["change(region_1)<0"], before)

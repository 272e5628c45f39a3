"""The split page calls the two sets one way in its title, headings and verdict: names the user gave
(``--names``, NAME=PATH) exactly as given (a '/' in a name is no path; markup is shown, escaped), names from
files shortened to their stems with the folders that tell colliding stems apart; and the verdict says the
kernel aggregation without a result.json field name."""

from __future__ import annotations

import dataclasses
import re
from html import unescape

import numpy as np
import pytest

from promptprism import PairedSet, PromptSplit
from promptprism.report import render_report

SIDES = {"test": "test set", "reference": "reference set"}


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    which = np.arange(40) % 4
    sets = []
    for k in range(2):
        z = rng.standard_normal((40, 5))
        z[which == 0, 0] += 3.0 * k
        sets.append(PairedSet(np.eye(4)[which], z, prompts=[f"p{w}" for w in which], name=f"s{k}"))
    return PromptSplit(seed=0, n_modes=2, top_k=3, permutations=49).fit(*sets)


def _page(result, test, reference, names=None, verdict=None):
    config = {**result.config, "test": test, "reference": reference}
    if names is not None:
        config["names"] = list(names)
    else:
        config.pop("names", None)
    sig = dict(result.significance)
    sig["verdict"] = verdict or ("2 of 4 modes differ significantly at alpha = 0.05 (family-wise, 49 "
                                 "permutations): 1 that the test set produces more, 1 that the reference "
                                 "produces more; largest eigenvalue p = 0.02")
    doc = render_report(dataclasses.replace(result, config=config, significance=sig))
    title = unescape(re.search(r"<title>(.*?)</title>", doc).group(1))
    said = unescape(re.search(r'class="pp-verdict"><b>(.*?)</b>', doc, re.S).group(1))
    cards = [unescape(x) for x in re.findall(r"samples · ([^<]*)", doc)]
    return doc, title, said, cards


@pytest.mark.parametrize("names", [("team/a", "team/b"), ("v1/model", "v2/model")])
def test_given_names_with_a_slash_are_shown_as_given(fitted, names):
    text = (f"1 of 4 modes differ significantly at alpha = 0.05: 1 that {names[0]} (test) produces more, "
            f"0 that {names[1]} (reference) produces more")
    _, title, said, cards = _page(fitted, *names, names=names, verdict=text)
    assert title == f"PromptSplit · {names[0]} vs {names[1]}"
    assert cards[:2] == list(names)
    assert f"{names[0]} (test)" in said


def test_a_given_name_with_markup_is_shown_whole_and_escaped(fitted):
    names = ("<script>alert(1)</script>", 'B&amp;"q"')
    doc, title, _, cards = _page(fitted, *names, names=names)
    assert title == f"PromptSplit · {names[0]} vs {names[1]}"
    assert cards[:2] == list(names)
    body = doc.split('<script type="application/json"')[0].split("</head>")[1]
    assert "<script>alert(1)</script>" not in body


def test_names_from_files_are_stems_and_the_verdict_uses_them(fitted):
    _, title, said, cards = _page(fitted, "data/big_a.jsonl", "data/big_b.jsonl")
    assert title == "PromptSplit · big_a vs big_b" and cards[:2] == ["big_a", "big_b"]
    assert "1 that big_a (test) produces more, 1 that big_b (reference) produces more" in said


def test_colliding_file_stems_keep_the_folders_that_tell_them_apart(fitted):
    _, title, said, _ = _page(fitted, "d1/m.jsonl", "d2/m.jsonl")
    assert title == "PromptSplit · d1/m vs d2/m"
    assert "that d1/m (test) produces more" in said


def test_one_file_twice_falls_back_to_the_sides_words_everywhere(fitted):
    _, title, said, cards = _page(fitted, "d/m.jsonl", "d/m.jsonl")
    assert title == "PromptSplit · test set vs reference set" and cards[:2] == ["test set", "reference set"]
    assert "that the test set produces more, 1 that the reference set produces more" in said


def test_the_verdict_says_the_kernel_aggregation_without_a_field_name(fitted):
    text = ("2 of 4 modes differ significantly at alpha = 0.05 (family-wise, 49 permutations): 1 that the "
            "test set produces more, 1 that the reference produces more; largest eigenvalue p = 0.02; "
            "aggregated over 3 kernels: p = 0.02, modes also found by cosine, gaussian x2 "
            "(significance.aggregation)")
    _, _, said, _ = _page(fitted, "a.npz", "b.npz", verdict=text)
    assert "significance.aggregation" not in said and "(significance" not in said
    assert said.endswith("tested over 3 kernels together: p = 0.02; the cosine and gaussian x2 kernels find "
                         "these modes too")


def test_set_display_names_rules():
    from promptprism.report.common import set_display_names

    assert set_display_names({"test": "x/a.npz", "reference": "y/a.npz"}, SIDES) == {
        "test": "x/a", "reference": "y/a"}
    assert set_display_names({"test": "a.npz", "reference": "a.jsonl"}, SIDES) == {
        "test": "a.npz", "reference": "a.jsonl"}
    assert set_display_names({"test": "p/q/a.npz", "reference": "r/q/a.npz"}, SIDES) == {
        "test": "p/q/a", "reference": "r/q/a"}
    assert set_display_names({"test": None, "reference": "b.npz"}, SIDES) == SIDES
    assert set_display_names({}, SIDES, given=["x/1", "x/2"]) == {"test": "x/1", "reference": "x/2"}

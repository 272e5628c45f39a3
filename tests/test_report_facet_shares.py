"""A facet value's share of the disagreement on a run with more prompts than result.json's prompt_ranking
keeps (it is cut at max(100, top_prompts) rows): a value every prompt carries reads 100 %, never the sum over
the ranked prompts alone; a value only some unranked prompts carry says which part is known."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

from promptprism import PairedSet, PromptSplit
from promptprism.report import write_report
from promptprism.report.facets import value_shares
from test_report_interactive import page_data

N_PROMPTS, PER = 12, 4
TOPICS = ("cooking", "history", "science")


def manifest_set(path, side: str, shift: float, seed: int) -> PairedSet:
    """12 prompts x 4 samples from a JSONL manifest with a ``topic`` per prompt, a ``seed`` every sample
    carries (0) and a ``flag`` that only prompt 0 carries; prompt 0 differs between the sides."""
    rng = np.random.default_rng(seed)
    which = np.repeat(np.arange(N_PROMPTS), PER)
    prompts = [f"question {w} on {TOPICS[w % 3]}" for w in which]
    rows = [{"prompt": p, "output": f"{side} {i}", "topic": TOPICS[w % 3], "seed": 0,
             "flag": "yes" if w == 0 else "no"} for i, (p, w) in enumerate(zip(prompts, which, strict=True))]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    z = rng.standard_normal((len(which), 5))
    z[which == 0, 0] += shift
    return PairedSet(np.eye(N_PROMPTS)[which], z, prompts=prompts, outputs=[r["output"] for r in rows],
                     name=side, source=str(path))


def recorded_run(tmp_path, changes=lambda result: {}):
    """A split of two manifest sets (:func:`manifest_set`) saved in ``tmp_path / 'run'`` with its inputs
    recorded and its map, as the command writes it; ``changes(result)``: fields to replace first."""
    from promptprism.methods.promptsplit.layout import with_layout
    from promptprism.provenance import record_inputs

    sets = {s: manifest_set(tmp_path / f"{s}.jsonl", s, 4.0 * k, k)
            for k, s in enumerate(("test", "reference"))}
    result = PromptSplit(seed=0, n_modes=2, top_k=4, permutations=0).fit(sets["test"], sets["reference"])
    out = tmp_path / "run"
    out.mkdir()
    recorded = record_inputs({s: tmp_path / f"{s}.jsonl" for s in sets}, out)
    with_layout(dataclasses.replace(result, inputs=recorded, **changes(result)), sets).save(out)
    return out


@pytest.fixture(scope="module")
def cut_page(tmp_path_factory):
    """The page of a run whose ranking was cut to its top 4 prompts (as the 100-row cut does on a large
    run), and the full ranking's shares by prompt."""
    root = tmp_path_factory.mktemp("shares")
    sets = {s: manifest_set(root / f"{s}.jsonl", s, 4.0 * k, k) for k, s in enumerate(("test", "reference"))}
    result = PromptSplit(seed=0, n_modes=2, top_k=4, permutations=0).fit(sets["test"], sets["reference"])
    full = {r["prompt"]: r["share"] for r in result.prompt_ranking}
    assert len(full) == N_PROMPTS and sum(full.values()) == pytest.approx(1.0)
    # (without every prompt's d_p: a result written before prompt_disagreement, or of over 100,000 prompts)
    cut = dataclasses.replace(result, prompt_ranking=result.prompt_ranking[:4], prompt_disagreement={})
    path = write_report(cut, root / "split", inputs=sets)
    kept = dataclasses.replace(result, prompt_ranking=result.prompt_ranking[:4])
    exact = write_report(kept, root / "exact", inputs=sets).read_text(encoding="utf-8")
    return path.read_text(encoding="utf-8"), full, cut, exact


def test_a_value_every_prompt_carries_has_all_of_the_disagreement(cut_page):
    doc, _, cut, _ = cut_page
    facets = {f["name"]: f for f in page_data(doc)["view"]["facets"]}
    seed = facets["seed"]
    assert sum(r["share"] for r in cut.prompt_ranking) < 0.99  # (the ranked prompts alone: less than all)
    assert seed["share"][seed["values"].index("0")] == pytest.approx(1.0)
    row = re.search(r'<tr data-pp-facet="seed:0">(.*?)</tr>', doc, re.S).group(1)
    assert "100.0%" in re.sub(r"<[^>]+>", " ", row)


def test_a_value_only_some_unranked_prompts_carry_gives_its_ranked_part(cut_page):
    doc, full, cut, _ = cut_page
    topic = next(f for f in page_data(doc)["view"]["facets"] if f["name"] == "topic")
    ranked = {r["prompt"] for r in cut.prompt_ranking}
    for k, value in enumerate(topic["values"][:3]):
        mine = [p for p in full if p.endswith(value)]
        if all(p in ranked for p in mine):
            assert topic["share"][k] == pytest.approx(sum(full[p] for p in mine))
        else:  # not known: no number that reads as the whole share
            assert topic["share"][k] is None
            assert topic["share_ranked"][k] == pytest.approx(sum(full[p] for p in mine if p in ranked))
    text = re.sub(r"<[^>]+>", " ", doc[doc.index('id="facets"'):])
    assert "in the ranked prompts" in text
    assert f"the other {N_PROMPTS - 4} prompts carry" in text


def test_a_value_no_unranked_prompt_carries_has_its_exact_share(cut_page):
    doc, full, cut, _ = cut_page
    flag = next(f for f in page_data(doc)["view"]["facets"] if f["name"] == "flag")
    yes = flag["values"].index("yes")
    assert "question 0 on cooking" in {r["prompt"] for r in cut.prompt_ranking}
    assert flag["share"][yes] == pytest.approx(full["question 0 on cooking"])


def test_value_shares_without_any_ranked_prompt_gives_no_share():
    share, ranked, rest = value_shares([{0}, {0, 1}], [None, None], 2)
    assert share == [None, None] and ranked == [None, None] and rest == 0.0


def test_a_negative_share_is_explained_in_the_facets_caption():
    from promptprism.report.facets import facets_block

    shares, ranked, rest = value_shares([{0}, {1}], [1.005, -0.005], 2)
    facet = {"name": "topic", "kind": "cat", "values": ["a", "b"], "counts": {"test": [1, 1]},
             "share": shares, "share_ranked": ranked, "unranked": 0, "keep": [0, 1]}
    html = str(facets_block([facet], {"test": "test"}))
    assert "-0.5%" in html or "−0.5%" in html
    assert "A negative share" in html


def test_report_dir_finds_the_facets_when_the_ranking_holds_few_of_the_prompts(tmp_path):
    """``promptprism report DIR`` matches the manifest's prompt column by the ranked prompts it holds (a
    run with 2,000 prompts ranks 100 of them: 5 % of the column's values, and the facets were lost)."""
    from promptprism.report import report_from_dir

    out = recorded_run(tmp_path, lambda r: {"prompt_ranking": r.prompt_ranking[:2]})
    view = page_data(report_from_dir(out).read_text(encoding="utf-8"))["view"]
    seed = next(f for f in view["facets"] if f["name"] == "seed")
    assert seed["share"][seed["values"].index("0")] == pytest.approx(1.0)


def test_with_every_prompts_disagreement_each_value_has_its_exact_share(cut_page):
    """The result stores every prompt's d_p (prompt_disagreement): the page gives each topic the sum of its
    prompts' shares, though the ranking keeps 4 rows, and no 'ranked part' caveat."""
    _, full, _, exact = cut_page
    topic = next(f for f in page_data(exact)["view"]["facets"] if f["name"] == "topic")
    for k, value in enumerate(topic["values"][:3]):
        assert topic["share"][k] == pytest.approx(sum(v for p, v in full.items() if p.endswith(value)),
                                                  rel=1e-5)
    assert "in the ranked prompts" not in re.sub(r"<[^>]+>", " ", exact[exact.index('id="facets"'):])

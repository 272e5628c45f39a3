"""Facets from the user's own metadata (issue 41): a manifest's extra columns (here ``topic``, a numeric
``length`` and an ``id``-like free-text column) become filters of the split and compare pages."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from promptprism import PairedSet, PromptSplit
from promptprism.methods.promptsplit.kway import KWaySplit
from promptprism.report import write_report
from test_report_interactive import page_data

TOPICS = {0: "medical", 1: "medical", 2: "legal", 3: "cooking"}


def manifest_set(path, side: str, shift: float, seed: int) -> PairedSet:
    """A set whose rows are those of a JSONL manifest at ``path`` (written here) with topic and length."""
    rng = np.random.default_rng(seed)
    which = np.arange(48) % 4
    prompts = [f"question {w} about {TOPICS[w]}" for w in which]
    outputs = [f"{side} answer {i}" for i in range(48)]
    rows = [{"prompt": p, "output": o, "topic": TOPICS[w], "length": 10 + 3 * i, "note": f"free text {i}"}
            for i, (p, o, w) in enumerate(zip(prompts, outputs, which, strict=True))]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    z = rng.standard_normal((48, 6)) + np.eye(4)[which] @ rng.standard_normal((4, 6))
    z[which < 2, 0] += shift  # the medical prompts differ
    return PairedSet(np.eye(4)[which], z, prompts=prompts, outputs=outputs, name=side, source=str(path))


@pytest.fixture(scope="module")
def split_page(tmp_path_factory):
    root = tmp_path_factory.mktemp("facets")
    sets = {s: manifest_set(root / f"{s}.jsonl", s, 3.0 * k, k) for k, s in enumerate(("test", "reference"))}
    result = PromptSplit(seed=0, n_modes=2, top_k=4).fit(sets["test"], sets["reference"])
    return write_report(result, root / "split", inputs=sets, map_points=96), result


def test_the_topic_column_is_a_facet_with_counts_per_side(split_page):
    path, result = split_page
    doc = path.read_text(encoding="utf-8")
    view = page_data(doc)["view"]
    facets = {f["name"]: f for f in view["facets"]}
    assert set(facets) == {"topic", "length"}  # 'note' is free text: left out, with a note
    assert any("'note'" in x for x in view["left_out"])
    topic = facets["topic"]
    assert topic["values"][:3] == ["cooking", "legal", "medical"]
    med = topic["values"].index("medical")
    assert topic["counts"]["test"][med] == topic["counts"]["reference"][med] == 24
    share = sum(r["share"] for r in result.prompt_ranking if "medical" in r["prompt"])
    assert topic["share"][med] == pytest.approx(share)
    for pid, p in enumerate(view["prompts"]):  # each prompt carries its own topic
        assert [topic["values"][k] for k in topic["prompts"][pid]] == [p["prompt"].split()[-1]]
    assert facets["length"]["kind"] == "num" and len(facets["length"]["keep"]) == 5
    assert 'id="facets"' in doc and f'data-pp-facet="topic:{med}"' in doc
    # the facet table says it: "medical prompts carry N % of the disagreement", readable without scripts
    row = re.search(rf'<tr data-pp-facet="topic:{med}">(.*?)</tr>', doc, re.S).group(1)
    assert f"{100 * share:.1f}%" in re.sub(r"<[^>]+>", " ", row)


def test_compare_page_has_the_facets(tmp_path):
    sets = [manifest_set(tmp_path / f"m{k}.jsonl", f"m{k}", 2.0 * (k == 1), k) for k in range(3)]
    result = KWaySplit(method="exact", permutations=19, n_modes=2).fit(sets)
    path = write_report(result, tmp_path / "kway", inputs={s.name: s for s in sets})
    view = page_data(path.read_text(encoding="utf-8"))["view"]
    topic = next(f for f in view["facets"] if f["name"] == "topic")
    assert set(topic["counts"]) == {"m0", "m1", "m2"}
    assert topic["counts"]["m1"][topic["values"].index("legal")] == 12


@pytest.mark.slow
def test_a_facet_value_filters_the_table_and_the_map(split_page):
    from test_report_explore import (
        CHROMEDRIVER,
        CHROMIUM,
        console_errors,
        make_driver,
        requested_urls,
    )
    from test_report_keep import open_ready

    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("headless Chromium or chromedriver is not installed")
    from selenium.webdriver.common.by import By

    path, _ = split_page
    d = make_driver()
    try:
        open_ready(d, path)

        def shown_prompts():
            return sorted({e.text for e in d.find_elements(By.CSS_SELECTOR, "#overview tr[data-pp-prompt] td")
                           if e.is_displayed() and e.text.startswith("question")})

        before = shown_prompts()
        assert any("legal" in t for t in before) and any("medical" in t for t in before)
        row = next(e for e in d.find_elements(By.CSS_SELECTOR, "tr[data-pp-facet]") if "medical" in e.text)
        d.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
        row.click()
        after = shown_prompts()
        assert after and all("medical" in t for t in after)
        assert "facet=topic" in d.current_url
        # the map: only the medical samples are selected
        picked = d.execute_script(
            "var fv = PP.facetOf(PP.state);"
            "return PP.V.map.row.filter(function (r) { return PP.facetRow(fv, r); })"
            ".map(function (r) { return PP.V.prompts[PP.V.rows[r].p].prompt; })")
        assert picked and all("medical" in t for t in picked)
        assert d.find_element(By.ID, "pp-facet").get_attribute("value").startswith("topic:")
        open_ready(d, path, "#facet=" + d.current_url.split("facet=")[1])  # the fragment restores it
        assert shown_prompts() == after
        # the mode cards follow the facet too: under 'legal', no card shows a medical prompt or sample
        # (their rows were left as they were: the other slice's evidence under this slice's label)
        legal = page_data(path.read_text(encoding="utf-8"))["view"]["facets"]
        legal = next(f for f in legal if f["name"] == "topic")["values"].index("legal")
        open_ready(d, path, f"#facet=topic:{legal}")
        in_cards = [e.text for e in d.find_elements(By.CSS_SELECTOR, ".card tr[data-pp-prompt]")
                    if e.is_displayed()]
        assert not any("medical" in t for t in in_cards), in_cards
        assert d.find_elements(By.CSS_SELECTOR, ".card tr[data-pp-prompt]")  # (there were rows to hide)
        # group the prompt table by topic: one head row per value, each prompt under its own topic
        open_ready(d, path, "#by=topic")
        body = d.find_element(By.CSS_SELECTOR, "#overview tr.pp-grouphead").find_element(By.XPATH, "..")
        seen, current = [], None
        for tr in body.find_elements(By.CSS_SELECTOR, "tr"):
            if "pp-grouphead" in (tr.get_attribute("class") or ""):
                current = tr.text.split(" · ")[0].removeprefix("topic: ")
                seen.append(current)
            else:  # a prompt row under its own topic's head
                assert current is not None and f"about {current}" in tr.text
        assert seen == sorted(seen) and "medical" in seen
        assert d.find_element(By.ID, "pp-by").get_attribute("value") == "topic"
        assert not console_errors(d)
        # nothing fetched: the page itself, its data URIs and (keep) the in-page download
        assert all(u.startswith(("file://", "data:", "blob:")) for u in requested_urls(d))
    finally:
        d.quit()


def test_report_dir_reads_the_manifests_metadata_again(tmp_path):
    """``promptprism report DIR`` for a split of manifests: no embeddings to read again, but the facets
    come back from the recorded manifests (fingerprint-checked)."""
    import dataclasses

    from promptprism.provenance import record_inputs
    from promptprism.report import report_from_dir

    sides = ("test", "reference")
    sets = {s: manifest_set(tmp_path / f"{s}.jsonl", s, 3.0 * k, k) for k, s in enumerate(sides)}
    result = PromptSplit(seed=0, n_modes=2, top_k=4).fit(sets["test"], sets["reference"])
    out = tmp_path / "run"
    out.mkdir()
    recorded = record_inputs({s: tmp_path / f"{s}.jsonl" for s in sets}, out)
    from promptprism.methods.promptsplit.layout import with_layout

    with_layout(dataclasses.replace(result, inputs=recorded), sets).save(out)  # (as the command stores it)
    page = report_from_dir(out)
    view = page_data(page.read_text(encoding="utf-8"))["view"]
    topic = next(f for f in view["facets"] if f["name"] == "topic")
    assert topic["counts"]["test"][topic["values"].index("medical")] == 24
    # the manifests' texts come back too, never embedded again: each prompt's outputs, and the stored map
    # (both were left out: "its inputs were not given")
    outputs = {r["o"] for r in view["rows"]} if view["rows"] and "o" in view["rows"][0] else set()
    assert "test answer 0" in outputs or "test answer 0" in page.read_text(encoding="utf-8")
    assert view.get("map") and len(view["map"]["row"]) == 96
    assert "not in the views" not in page.read_text(encoding="utf-8")
    # an edited manifest is not used for the facets (and says so, in the page and on the terminal)
    (tmp_path / "test.jsonl").write_text((tmp_path / "reference.jsonl").read_text(encoding="utf-8"))
    with pytest.warns(UserWarning, match="test manifest .*: holds the reference set of this result, not the "
                                         "test set \\(swapped\\?\\); its facets and outputs per prompt are "
                                         "left out of the page"):
        page = report_from_dir(out)
    view = page_data(page.read_text(encoding="utf-8"))["view"]
    assert set(next(f for f in view["facets"] if f["name"] == "topic")["counts"]) == {"reference"}
    text = page.read_text(encoding="utf-8")
    assert "nothing was written" not in text and "--columns" not in text


def test_a_value_that_reads_missing_is_not_the_gaps_label():
    from promptprism.report.facets import MISSING, _labels

    labels, index = _labels("cat", ["a", MISSING, None, "b"])
    assert labels.count(MISSING) == 1 and len(set(labels)) == len(labels) == 4
    assert labels[index(MISSING)] == MISSING and labels[index(None)] != MISSING

"""The verdict column of the report's facet panel (issue 43): per facet value, which model is closer (or
preferred by the judge) on the findings' samples of that value, with the Holm-adjusted p; split and K-way
pages, from a real ``quality --facet`` record."""

from __future__ import annotations

import dataclasses
import html
import re

import numpy as np
import pytest

from promptprism import PairedSet, PromptSplit
from promptprism.methods.metrics import FacetQuality, FacetRanking
from promptprism.methods.promptsplit.kway import KWaySplit
from promptprism.report import write_report
from promptprism.report.facets import sets_facets
from test_report_facets import TOPICS, manifest_set

CENTRES = np.random.default_rng(123).normal(size=(4, 6))


def centred_set(path, name: str, shift: float, seed: int) -> PairedSet:
    """:func:`test_report_facets.manifest_set`'s manifest (48 rows, 4 questions, topic and length), the
    outputs near one centre per question shared by every set (real data too), shifted by ``shift`` on the
    medical questions."""
    base = manifest_set(path, name, 0.0, seed)
    which = np.arange(48) % 4
    z = CENTRES[which] + 0.3 * np.random.default_rng(seed).normal(size=(48, 6))
    z[which < 2, 0] += shift
    assert [TOPICS[w] for w in which][:2] == ["medical", "medical"]
    return PairedSet(base.prompt_embeddings, z, prompts=base.prompts, outputs=base.outputs, name=name,
                     source=base.source)


def facet_rows(doc: str, facet: str) -> dict[str, str]:
    """The facet panel's rows of ``facet``: value -> the row's text (tags removed)."""
    panel = doc[doc.index('id="facets"'):]
    rows = re.findall(rf'<tr[^>]*data-pp-facet="{facet}:\d+"[^>]*>(.*?)</tr>', panel, re.S)
    out = {}
    for row in rows:
        cells = [re.sub(r"<[^>]+>", " ", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        out[html.unescape(" ".join(cells[0].split()))] = html.unescape(" ".join(" ".join(cells).split()))
    return out


def topic_facet(sets: dict) -> list[dict]:
    found = {f["name"]: f for f in sets_facets(sets, lambda _: 0, lambda: [None])[0]}
    return [{"name": "topic", "values": found["topic"]["values"], "rows": found["topic"]["rows"]}]


def test_the_split_pages_facet_panel_says_who_is_closer_per_value(tmp_path):
    """The test set is shifted on the medical questions, real data is not: the medical row of the topic
    facet says "reference closer" with its p, the values no mode's prompts have say "not tested"."""
    sets = {s: centred_set(tmp_path / f"{s}.jsonl", s, 3.0 * (s == "test"), k)
            for k, s in enumerate(("test", "reference"))}
    real = centred_set(tmp_path / "real.jsonl", "real data", 0.0, 7)
    result = PromptSplit(seed=0, n_modes=2, top_k=4).fit(sets["test"], sets["reference"])
    findings = result.findings()
    assert findings
    record = FacetQuality(permutations=499, bootstrap=50).fit(findings, sets, real, topic_facet(sets))
    doc = write_report(dataclasses.replace(result, quality=record), tmp_path / "split",
                       inputs=sets).read_text(encoding="utf-8")
    rows = facet_rows(doc, "topic")
    assert "verdict on the findings' samples of this value" in html.unescape(doc)
    medical = [f for e in record["findings"] for f in e["facets"] if f["value"] == "medical"]
    assert medical and all(f["closer"] == "reference" for f in medical)
    for f in medical:
        mode = f["id"].split(",")[0]
        assert f"{mode}: reference closer (p = {f['p_adjusted']:.2g})" in rows["medical"]
    tested = {f["value"] for e in record["findings"] for f in e["facets"]}
    for value, text in rows.items():
        assert ("not tested" in text) == (value not in tested), (value, text)
    # without a quality record the panel has no verdict column
    plain = write_report(result, tmp_path / "plain", inputs=sets).read_text(encoding="utf-8")
    assert "verdict on the findings' samples" not in html.unescape(plain) and 'id="facets"' in plain


def test_the_kway_pages_facet_panel_gives_each_values_ranking(tmp_path):
    """m1 is shifted on the medical questions: on its deviation the medical row ranks m1 last."""
    sets = [centred_set(tmp_path / f"m{k}.jsonl", f"m{k}", 3.0 * (k == 1), k) for k in range(3)]
    real = centred_set(tmp_path / "real.jsonl", "real data", 0.0, 7)
    result = KWaySplit(method="exact", permutations=99, n_modes=2).fit(sets)
    by_name = {s.name: s for s in sets}
    findings = [f for f in result.findings() if f["id"] == "m1 vs rest"]
    assert findings
    record = FacetRanking(permutations=499, bootstrap=50).fit(findings, by_name, real, topic_facet(by_name))
    doc = write_report(dataclasses.replace(result, quality=record), tmp_path / "kway",
                       inputs=by_name).read_text(encoding="utf-8")
    rows = facet_rows(doc, "topic")
    cell = next(f for f in record["findings"][0]["facets"] if f["value"] == "medical")
    ranks = {r["name"]: r["rank"] for r in cell["ranking"]["rows"]}
    assert ranks["m1"] == 3 and ranks["m0"] == ranks["m2"] == 1
    assert "m1 vs rest: closer m0 = m2 > m1 (p ≤" in rows["medical"] or \
        "m1 vs rest: closer m2 = m0 > m1 (p ≤" in rows["medical"]
    assert np.isfinite([t["p_adjusted"] for t in cell["pairs"]]).all()


def split_with_verdicts(tmp_path):
    sets = {s: centred_set(tmp_path / f"{s}.jsonl", s, 3.0 * (s == "test"), k)
            for k, s in enumerate(("test", "reference"))}
    real = centred_set(tmp_path / "real.jsonl", "real data", 0.0, 7)
    result = PromptSplit(seed=0, n_modes=2, top_k=4).fit(sets["test"], sets["reference"])
    record = FacetQuality(permutations=499, bootstrap=50).fit(result.findings(), sets, real,
                                                              topic_facet(sets))
    path = write_report(dataclasses.replace(result, quality=record), tmp_path / "split", inputs=sets)
    return path, record


def test_the_explorers_mode_panel_data_carries_each_modes_verdicts(tmp_path):
    from test_report_interactive import page_data

    path, record = split_with_verdicts(tmp_path)
    modes = {m["id"]: m for m in page_data(path.read_text(encoding="utf-8"))["view"]["modes"]}
    for entry in record["findings"]:
        mid = entry["id"].removeprefix("mode ")
        assert modes[mid]["verdicts"][0] == entry["verdict"]
        assert [f["verdict"] for f in entry["facets"]] == modes[mid]["verdicts"][1:]
    assert any(not m["verdicts"] for m in modes.values()) or len(modes) == len(record["findings"])


@pytest.mark.slow
def test_the_mode_panel_and_the_facet_panel_show_the_verdicts_in_a_browser(tmp_path):
    from test_report_explore import CHROMEDRIVER, CHROMIUM, console_errors, make_driver
    from test_report_keep import open_ready

    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("headless Chromium or chromedriver is not installed")
    from selenium.webdriver.common.by import By

    path, record = split_with_verdicts(tmp_path)
    entry = record["findings"][0]
    d = make_driver()
    try:
        open_ready(d, path, "#mode=" + entry["id"].removeprefix("mode "))
        shown = [e.text for e in d.find_elements(By.CSS_SELECTOR, ".pp-mode-verdict") if e.is_displayed()]
        assert shown and shown[0] == entry["verdict"]
        open_ready(d, path)  # (the panel closed)
        row = next(e for e in d.find_elements(By.CSS_SELECTOR, "tr[data-pp-facet]") if "medical" in e.text)
        assert "reference closer (p =" in row.text
        d.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
        row.click()  # the verdict column does not get in the way of the row's filter
        assert "facet=topic" in d.current_url
        assert not console_errors(d)
    finally:
        d.quit()

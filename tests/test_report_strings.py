"""Each string once per page (issue 41): a 100 kB prompt is stored once in the page's string table, the
markup shows it cut with "show all", the data refers to it by index, and the browser resolves it."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from promptprism import PromptSplit
from promptprism.report import write_report
from promptprism.report.strings import REF, StringTable
from promptprism.report.strings import resolve as _resolve

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from report_browser import long_prompt_sets  # noqa: E402


def page_data(html: str) -> dict:
    block = re.search(r'<script type="application/json" id="pp-data">(.*?)</script>', html, re.S).group(1)
    return json.loads(block)


@pytest.fixture(scope="module")
def long_page(tmp_path_factory):
    sets, long = long_prompt_sets()
    result = PromptSplit(seed=0, n_modes=3, top_k=5).fit(sets["test"], sets["reference"])
    path = write_report(result, tmp_path_factory.mktemp("long") / "long", inputs=sets, progress=False,
                        map_points=200)
    return path, long, result


@pytest.mark.slow  # (about a second or more: out of the quick loop)
def test_a_long_prompt_appears_once_in_the_page(long_page):
    path, long, result = long_page
    html = path.read_text(encoding="utf-8")
    assert html.count(long) == 1
    assert html.count(long[:400]) == 1  # the markup only holds cut copies (300 characters)
    assert html.count(long[:250]) > 5  # ... and it does show them: tables, captions, the ranking
    assert 'class="pp-long"' in html
    assert path.stat().st_size < 1_500_000


@pytest.mark.slow  # (the module fixture writes a page: about 2 s)
def test_the_data_resolves_to_the_result(long_page):
    path, long, result = long_page
    data = page_data(path.read_text(encoding="utf-8"))
    table = data.pop("strings")
    assert table.count(long) == 1
    full = _resolve(data, table)
    assert full["result"] == json.loads(json.dumps(result.to_dict(), default=str))
    assert any(p["prompt"] == long for p in full["view"]["prompts"])


def test_references_are_never_ambiguous():
    t = StringTable()
    data = {"a": "short", "b": "x" * 50, "c": [REF + "1", "x" * 50], "d": 3}
    out = t.intern(data)
    assert out["a"] == "short" and out["d"] == 3
    assert out["b"] == out["c"][1] == REF + "0"
    # a string that looks like a reference is interned itself
    assert out["c"][0] == REF + "1" and t.strings[1] == REF + "1"
    assert _resolve(out, t.strings) == data


webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")


@pytest.mark.slow
def test_show_all_in_the_browser(long_page):
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

    path, long, _ = long_page
    d = make_driver()
    try:
        open_ready(d, path)
        spans = d.find_elements(By.CSS_SELECTOR, "span.pp-long[data-pp-str]")
        span = next(s for s in spans if s.is_displayed())
        button = span.find_element(By.CSS_SELECTOR, "button.pp-more")
        assert "100,000 characters" in button.text
        button.click()
        assert len(d.execute_script("return arguments[0].firstChild.textContent", span)) == len(long)
        # the prompt's view: its data resolved from the table, the panel shows it cut with "show all"
        pid = d.execute_script("return PP.V.prompts.findIndex(function (p) { return p.prompt.length > 999 })")
        assert pid >= 0
        open_ready(d, path, f"#prompt={pid}")
        panel = d.find_element(By.ID, "pp-panel")
        assert panel.is_displayed() and panel.find_elements(By.CSS_SELECTOR, "button.pp-more")
        assert d.execute_script(
            "return PP.data.result.prompt_ranking.some(function (r) { return r.prompt.length === 100000; })"
        )
        assert not console_errors(d)
        # nothing fetched: the page itself, its data URIs and (keep) the in-page download
        assert all(u.startswith(("file://", "data:", "blob:")) for u in requested_urls(d))
    finally:
        d.quit()


@pytest.mark.slow
def test_a_page_of_100_prompts_of_100_kb_holds_each_once_and_opens(tmp_path):
    """The issue's worst case: 100 prompts of 100 kB each (10 MB of distinct text). Each is stored once, the
    page is barely larger than its text, and Chromium opens it (its ready time is benchmarks/
    report_browser.py's ``long100`` case)."""
    from report_browser import long_prompt_report

    path = long_prompt_report(tmp_path, 100)
    html = path.read_text(encoding="utf-8")
    data = page_data(html)
    longs = [s for s in data["strings"] if len(s) >= 100_000]
    assert len(longs) == 100
    assert all(html.count(s) == 1 for s in longs[::9])
    assert path.stat().st_size < 1.2 * sum(len(s.encode("utf-8")) for s in longs)
    from test_report_explore import CHROMEDRIVER, CHROMIUM, console_errors, make_driver, requested_urls
    from test_report_keep import open_ready

    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("headless Chromium or chromedriver is not installed")
    from selenium.webdriver.common.by import By

    d = make_driver()
    try:
        open_ready(d, path, "#prompt=7", timeout=60)
        panel = d.find_element(By.ID, "pp-panel")
        assert panel.is_displayed() and panel.find_elements(By.CSS_SELECTOR, "button.pp-more")
        assert not console_errors(d)
        assert all(u.startswith(("file://", "data:")) for u in requested_urls(d))
    finally:
        d.quit()

"""Every prompt and every control within reach (probe 70c): the split page's table of all prompts (paged,
sortable, searchable, filtered by a facet) beside its top-10 ranking, numeric columns sorted largest first,
the side panel taking the keyboard focus and giving it back, narrow screens (no sideways page scroll, a
compact opaque toolbar, sections below it), the regions heat map's interval on hover, and no control that
cannot act on a page's rows (the metrics page's range slider). Browser checks in headless Chromium."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from promptprism import PairedSet, PromptSplit
from promptprism.methods.metrics import ReferenceMetrics
from promptprism.methods.regions import RegionCMS
from promptprism.report import write_report
from test_report_interactive import page_data

TOPICS = ("cooking", "history", "science", "sports")
N_PROMPTS = 40


def manifest_set(path, side: str, shift: float, seed: int, n_prompts: int = N_PROMPTS,
                 per: int = 3) -> PairedSet:
    """n_prompts prompts x per samples, written as a JSONL manifest with a topic and a number column."""
    rng = np.random.default_rng(seed)
    which = np.repeat(np.arange(n_prompts), per)
    prompts = [f"question {w} on {TOPICS[w % 4]}" for w in which]
    outputs = [f"{side} answer {i}" + (" zebra" if side == "test" and w == n_prompts - 1 else "")
               for i, w in enumerate(which)]
    rows = [{"prompt": p, "output": o, "topic": TOPICS[w % 4], "length": 10 + i}
            for i, (p, o, w) in enumerate(zip(prompts, outputs, which, strict=True))]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    t = rng.standard_normal((n_prompts, 5))[which]
    z = rng.standard_normal((len(which), 6)) + t @ rng.standard_normal((5, 6))
    z[which % 4 == 1, 0] += shift  # the history prompts differ
    return PairedSet(t, z, prompts=prompts, outputs=outputs, name=side, source=str(path))


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("reach")
    sets = {s: manifest_set(root / f"{s}.jsonl", s, 3.0 * k, k) for k, s in enumerate(("test", "reference"))}
    split = PromptSplit(seed=0, n_modes=2, top_k=4).fit(sets["test"], sets["reference"])
    out = {"split": write_report(split, root / "split", inputs=sets, map_points=60)}
    gen = manifest_set(root / "gen.jsonl", "gen", 0.5, 2, n_prompts=8, per=4)
    ref = manifest_set(root / "ref.jsonl", "ref", 0.0, 3, n_prompts=8, per=4)
    metrics = ReferenceMetrics(bootstrap=0, subsets=2, subset_size=10).fit([gen], ref)
    out["metrics"] = write_report(metrics, root / "metrics", inputs={"gen": gen, "ref": ref})
    rng = np.random.default_rng(0)
    real = rng.random((40, 6, 6))
    regions = RegionCMS(n_regions=3, seed=0, bootstrap=20).fit(real).compare(
        [np.clip(real[:20] + rng.normal(0, 0.3, (20, 6, 6)), 0, 1)], ["epoch 1"])
    out["regions"] = write_report(regions, root / "regions", inputs={"real": real})
    return out


# ---------------------------------------------------------------------------------------- the markup
@pytest.mark.slow  # (its pages take about 2 s to make: out of the quick loop)
def test_the_ranking_says_how_many_prompts_there_are_and_links_the_table_of_all(pages):
    doc = pages["split"].read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", doc)
    assert f"The top 10 of {N_PROMPTS} prompts; every prompt, sortable and searchable: All prompts." in text
    assert '<section id="prompts">' in doc and 'data-pp-widget="prompts"' in doc
    assert 'href="#prompts"' in doc
    assert len(page_data(doc)["view"]["prompts"]) == N_PROMPTS


def test_the_scripts_load_nothing_and_write_no_markup():
    from promptprism.report.interactive import SCRIPTS, asset
    from promptprism.report.references import external_references

    for name in SCRIPTS:
        js = asset(name)
        assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "document.write" not in js, name
        assert not external_references(f"<script>{js}</script>"), name


# ------------------------------------------------------------------------------------------ browser
@pytest.fixture(scope="module")
def driver():
    from test_report_explore import CHROMEDRIVER, CHROMIUM, make_driver

    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("headless Chromium or chromedriver is not installed")
    d = make_driver()
    yield d
    d.quit()


def _open(d, path, fragment: str = ""):
    from test_report_keep import open_ready

    d.get("about:blank")
    open_ready(d, path, fragment)


def _clean(d):
    from test_report_explore import console_errors, requested_urls

    assert not console_errors(d)
    assert all(u.startswith(("file://", "data:", "blob:")) for u in requested_urls(d))


ROWS = "return [...document.querySelectorAll('#pp-prompts tbody tr')].map(r => +r.dataset.ppPrompt)"


@pytest.mark.slow
def test_every_prompt_is_in_a_paged_table_the_search_and_facets_reach(driver, pages):
    from selenium.webdriver.common.by import By

    d = driver
    _open(d, pages["split"])
    assert len(d.execute_script(ROWS)) == 25  # a page at a time
    assert "Showing 25 of 40 prompts" in d.find_element(By.ID, "pp-prompts-count").text
    d.find_element(By.ID, "pp-prompts-all").click()
    assert sorted(d.execute_script(ROWS)) == list(range(N_PROMPTS))
    # a prompt outside the top 10, found by its output's word: the count says so, the table shows it
    _open(d, pages["split"], "#q=zebra")
    view = page_data(pages["split"].read_text(encoding="utf-8"))["view"]
    last = f"question {N_PROMPTS - 1} "
    target = next(i for i, p in enumerate(view["prompts"]) if p["prompt"].startswith(last))
    assert d.execute_script(ROWS) == [target]
    assert "1 of 40 prompts" in d.find_element(By.ID, "pp-count").text
    d.find_element(By.CSS_SELECTOR, f'#pp-prompts tr[data-pp-prompt="{target}"]').click()
    assert "zebra" in d.find_element(By.ID, "pp-panel").text
    # a facet keeps its prompts, every one of them (10 of the 40)
    topic = next(f for f in view["facets"] if f["name"] == "topic")
    k = topic["values"].index("history")
    _open(d, pages["split"], f"#facet=topic:{k}")
    ids = d.execute_script(ROWS)
    assert len(ids) == N_PROMPTS // 4 and all(view["prompts"][i]["prompt"].endswith("history") for i in ids)
    _clean(d)



def _click(d, element):
    """Scroll ``element`` to the middle of the window and click it (in the page's script)."""
    d.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click()", element)

@pytest.mark.slow
def test_a_numeric_column_sorts_largest_first_on_its_first_click(driver, pages):
    from selenium.webdriver.common.by import By

    d = driver
    _open(d, pages["split"])
    share = d.find_element(By.XPATH, "//table[@id='pp-prompts']//th[starts-with(., 'share')]")
    _click(d, share)
    assert share.get_attribute("aria-sort") == "descending"
    shares = [page_data(pages["split"].read_text(encoding="utf-8"))["view"]["prompts"][i]["share"]
              for i in d.execute_script(ROWS)]
    known = [s for s in shares if s is not None]
    assert known == sorted(known, reverse=True)
    # the markup's tables too: a number column goes largest first, the rank '#' and text smallest first
    th = d.find_element(By.XPATH, "//section[@id='facets']//table[1]//th[starts-with(., 'n ')]")
    _click(d, th)
    assert th.get_attribute("aria-sort") == "descending"
    rank = d.find_element(By.XPATH, "//section[@id='overview']//table//th[.='#']")
    _click(d, rank)
    assert rank.get_attribute("aria-sort") == "ascending"
    _clean(d)


@pytest.mark.slow
def test_the_panel_takes_the_focus_and_gives_it_back(driver, pages):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    d = driver
    _open(d, pages["split"])
    row = d.find_element(By.CSS_SELECTOR, "section#overview tr[data-pp-prompt]")
    d.execute_script("arguments[0].focus()", row)
    row.send_keys(Keys.ENTER)
    panel = d.find_element(By.ID, "pp-panel")
    assert panel.get_attribute("role") == "dialog"
    assert d.execute_script("return document.activeElement.id") == "pp-panel-title"
    d.switch_to.active_element.send_keys(Keys.TAB)
    assert d.execute_script("return !!document.activeElement.closest('#pp-panel')")
    d.switch_to.active_element.send_keys(Keys.ESCAPE)
    assert not panel.is_displayed()
    assert d.execute_script("return document.activeElement") == row
    # the close button too; a row of the table of all prompts (drawn by the script) gets it back as well
    row = d.find_element(By.CSS_SELECTOR, "#pp-prompts tr[data-pp-prompt]")
    d.execute_script("arguments[0].focus()", row)
    row.send_keys(Keys.ENTER)
    d.find_element(By.CSS_SELECTOR, "#pp-panel .pp-close").click()
    assert d.execute_script("return document.activeElement") == row
    _clean(d)


@pytest.mark.slow
def test_a_narrow_screen_never_scrolls_the_page_sideways(driver, pages):
    d = driver
    try:
        d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                          {"width": 400, "height": 900, "deviceScaleFactor": 1, "mobile": False})
        for kind in ("split", "metrics", "regions"):
            _open(d, pages[kind])
            width = d.execute_script("return [document.documentElement.scrollWidth, "
                                     "document.documentElement.clientWidth]")
            assert width[0] <= width[1], (kind, width)
        bar = d.execute_script("var t = document.getElementById('pp-toolbar'); return "
                               "[t.getBoundingClientRect().height, getComputedStyle(t).backgroundColor]")
        assert bar[0] < 80 and bar[1] == "rgb(255, 255, 255)", bar
    finally:
        d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    _open(d, pages["split"])
    for anchor in ("facets", "prompts"):  # a section link leaves the heading below the sticky toolbar
        d.execute_script(f"document.querySelector('nav a[href=\"#{anchor}\"]').click()")
        top, bottom = d.execute_script(
            f"return [document.querySelector('#{anchor} h2').getBoundingClientRect().top, "
            "document.getElementById('pp-toolbar').getBoundingClientRect().bottom]")
        assert top >= bottom - 1, (anchor, top, bottom)
    _clean(d)


@pytest.mark.slow
def test_the_heat_map_tooltip_shows_the_interval_and_its_estimate(driver, pages):
    d = driver
    _open(d, pages["regions"])
    tip = d.execute_script(
        "var cv = document.getElementById('pp-heat'), r = cv.getBoundingClientRect();"
        "cv.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + 2, clientY: r.top + 2,"
        " bubbles: true}));"
        "return document.querySelector('.pp-tip').textContent")
    assert "–" not in tip, tip
    assert re.search(r"CMS \(eq\. 4\) [\d.]+ · U-form [\d.]+ \[[\d.]+, [\d.]+\]", tip), tip
    _clean(d)


@pytest.mark.slow
def test_no_range_slider_on_a_page_without_prompt_rows(driver, pages):
    d = driver
    view = page_data(pages["metrics"].read_text(encoding="utf-8"))["view"]
    assert any(f["name"] == "length" and f["kind"] == "num" for f in view["facets"])
    _open(d, pages["metrics"])
    assert not d.execute_script("return document.querySelector('main [data-pp-prompt]')")
    assert d.execute_script("return document.querySelectorAll('#pp-toolbar .pp-range').length") == 0
    _open(d, pages["split"])  # where it keeps prompts, it stays
    assert d.execute_script("return document.querySelectorAll('#pp-toolbar .pp-range').length") == 1
    _clean(d)

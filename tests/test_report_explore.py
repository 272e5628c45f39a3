"""The interactive report as a user meets it: headless Chromium driven by selenium opens each page from
disk, clicks, types and reads what appears; the browser's console and network logs are read, not assumed.

Skipped when Chromium, chromedriver or selenium is missing (CI installs Debian's chromium and
chromium-driver, see .ci/run).
"""

from __future__ import annotations

import json
import shutil

import pytest

from _report_data import (
    BANK_PROMPTS,
    compcon_result,
    digits_run,
    regions_run,
    scan_record,
    significance_result,
    write_bank,
)
from promptprism import PromptSplit
from promptprism.report import write_report
from test_report_interactive import HOSTILE, hostile_sets

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None or CHROMEDRIVER is None,
        reason="headless Chromium or chromedriver is not installed (Debian: apt-get install chromium "
        "chromium-driver); browser checks of the interactive report skipped",
    ),
]


def make_driver(scripts: bool = True):
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1280,1000", "--disable-background-networking", "--disable-component-update",
              "--no-first-run", "--disable-sync"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    if not scripts:
        opts.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


@pytest.fixture(scope="module")
def driver():
    d = make_driver()
    yield d
    d.quit()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("explore")
    _, inputs, images = digits_run()
    tested = significance_result([0.002, 0.3, 0.6, 0.01, 0.4, 0.9], scan=scan_record())
    out = {"split": write_report(tested, root / "split", inputs=inputs, images=images, map_points=200)}
    test, ref = hostile_sets()
    hostile = PromptSplit(n_modes=2, top_k=4, seed=0).fit(test, ref)
    out["hostile"] = write_report(hostile, root / "hostile", inputs={"test": test, "reference": ref},
                                  map_points=40)
    rg, rin = regions_run()
    out["regions"] = write_report(rg, root / "regions", inputs=rin)
    from promptprism.methods.compcon.image_sources import ImageBank

    a = write_bank(root / "bankA", BANK_PROMPTS, (20, 40, 220))
    b = write_bank(root / "bankB", BANK_PROMPTS, (120, 120, 120))
    out["compcon"] = write_report(
        compcon_result(a, b), root / "compcon", inputs={"A": ImageBank.load(a), "B": ImageBank.load(b)}
    )
    import numpy as np

    from promptprism import PairedSet
    from promptprism.methods.scendi import Scendi, compare

    rng = np.random.default_rng(0)
    which = np.arange(40) % 4
    t = np.eye(4)[which]
    sets = [PairedSet(t, rng.standard_normal((40, 6)) + t @ rng.standard_normal((4, 6)),
                      prompts=[f"prompt {w}" for w in which],
                      outputs=[f"output {i} of {k}" for i in range(40)], name=k) for k in ("m1", "m2")]
    out["scendi"] = write_report(compare(sets, Scendi(n_clusters=2, top_k=4, seed=0), names=["m1", "m2"]),
                                 root / "scendi")
    return out


def open_page(d, path, fragment: str = ""):
    """Open a report and wait (up to 30 s on a loaded machine) for its script to mark the page ready."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    d.get(path.as_uri() + fragment)
    ready = "return document.documentElement.getAttribute('data-pp-ready')"
    try:
        WebDriverWait(d, 30, poll_frequency=0.05).until(lambda drv: drv.execute_script(ready) == "1")
    except TimeoutException:
        pytest.fail(f"{path.name}{fragment} never became ready; console: {console_errors(d)}")


def console_errors(d) -> list:
    return [e for e in d.get_log("browser") if e["level"] == "SEVERE"]


def requested_urls(d) -> list[str]:
    """Every URL the page asked for since the last call, from Chrome's DevTools network events."""
    urls = []
    for entry in d.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    return urls


def visible(d, css: str) -> list:
    return [e for e in d.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]


def test_click_a_mode_then_a_prompt(driver, pages):
    d = driver
    open_page(d, pages["split"])
    requested_urls(d)
    bars = d.find_elements(By.CSS_SELECTOR, ".pp-modebars button[data-pp-mode]")
    assert len(bars) == 6
    bars[0].click()
    panel = d.find_element(By.ID, "pp-panel")
    assert panel.is_displayed() and "Mode +1" in panel.text
    # the mode's top samples of both sets, side by side, as images
    for side in ("test", "reference"):
        assert len(panel.find_elements(By.CSS_SELECTOR, f'[data-pp-col="{side}"] img')) >= 1
    assert "mode=%2B1" in d.current_url
    # its prompts link on: click the first one
    prompt_row = panel.find_elements(By.CSS_SELECTOR, "tr[data-pp-prompt]")[0]
    name = prompt_row.find_elements(By.TAG_NAME, "td")[0].text
    prompt_row.click()
    panel = d.find_element(By.ID, "pp-panel")
    assert panel.find_element(By.TAG_NAME, "h2").text == name
    _, inputs, _ = digits_run()
    for side in ("test", "reference"):
        n = sum(p == name for p in inputs[side].prompts)
        assert len(panel.find_elements(By.CSS_SELECTOR, f'[data-pp-col="{side}"] img')) == min(6, n)
    assert "contribution to each mode" in panel.text and "significant" in panel.text
    assert not console_errors(d)
    assert all(u.startswith(("file://", "data:")) for u in requested_urls(d))


def test_a_prompt_row_and_a_sortable_header_work_from_the_keyboard(driver, pages):
    """Tab reaches what a click opens; Enter opens it (rows, headers and cards were mouse-only)."""
    from selenium.webdriver.common.keys import Keys

    d = driver
    open_page(d, pages["split"])
    row = next(r for r in d.find_elements(By.CSS_SELECTOR, "main tr[data-pp-prompt]") if r.is_displayed())
    assert row.get_attribute("tabindex") == "0"
    d.execute_script("arguments[0].focus()", row)
    d.switch_to.active_element.send_keys(Keys.ENTER)
    panel = d.find_element(By.ID, "pp-panel")
    assert panel.is_displayed() and panel.find_element(By.TAG_NAME, "h2").text in row.text
    assert "prompt=" in d.current_url
    d.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    header = d.find_element(By.CSS_SELECTOR, "main th.pp-sortable")
    d.execute_script("arguments[0].focus()", header)
    d.switch_to.active_element.send_keys(" ")
    assert header.get_attribute("aria-sort") in ("ascending", "descending")
    d.switch_to.active_element.send_keys(Keys.TAB)  # (Tab moves on to the next focusable element)
    assert d.switch_to.active_element != header
    assert not console_errors(d)


def test_search_filters_rows_and_the_fragment_restores_the_view(driver, pages):
    d = driver
    open_page(d, pages["split"])
    rows = d.find_elements(By.CSS_SELECTOR, "tr[data-pp-item][data-pp-prompt]")
    before = len(visible(d, "tr[data-pp-item][data-pp-prompt]"))
    box = d.find_element(By.ID, "pp-search")
    box.send_keys("digit 8")
    shown = visible(d, "tr[data-pp-item][data-pp-prompt]")
    assert 0 < len(shown) < before <= len(rows)
    assert all("digit 8" in r.text for r in shown)
    d.find_element(By.ID, "pp-sig").click()
    assert visible(d, ".card[data-pp-sig='0']") == []
    url = d.current_url
    assert "q=digit+8" in url and "sig=1" in url
    d.find_elements(By.CSS_SELECTOR, "tr[data-pp-prompt]")[0].click()
    url = d.current_url
    # a fresh load of that URL shows the same view: search text, filter, open prompt
    d.get("about:blank")
    open_page(d, pages["split"], "#" + url.split("#", 1)[1])
    assert d.find_element(By.ID, "pp-search").get_attribute("value") == "digit 8"
    assert d.find_element(By.ID, "pp-sig").is_selected()
    assert d.find_element(By.ID, "pp-panel").is_displayed()
    assert len(visible(d, "tr[data-pp-item][data-pp-prompt]")) == len(shown)
    assert not console_errors(d)


def test_sortable_table(driver, pages):
    d = driver
    open_page(d, pages["split"])
    table = d.find_element(By.XPATH, "//section[@id='overview']//table[.//th[contains(., 'share of the')]]")
    head = table.find_elements(By.CSS_SELECTOR, "thead th")[1]  # the prompt column
    head.click()
    names = [r.find_elements(By.TAG_NAME, "td")[1].text for r in table.find_elements(By.TAG_NAME, "tr")[1:]]
    assert names == sorted(names, key=str.lower)
    head.click()
    names = [r.find_elements(By.TAG_NAME, "td")[1].text for r in table.find_elements(By.TAG_NAME, "tr")[1:]]
    assert names == sorted(names, key=str.lower, reverse=True)


def test_map_hover_and_selection(driver, pages):
    d = driver
    open_page(d, pages["split"], "#mode=%2B1")
    canvas = d.find_element(By.ID, "pp-map")
    # hover each of a grid of points until the tooltip shows a sample
    tip = d.find_element(By.CSS_SELECTOR, ".pp-map .pp-tip")
    for dx in range(-300, 300, 20):
        for dy in range(-220, 220, 20):
            ActionChains(d).move_to_element_with_offset(canvas, dx, dy).perform()
            if tip.is_displayed():
                break
        if tip.is_displayed():
            break
    assert tip.is_displayed() and "#" in tip.text and "digit" in tip.text
    assert not console_errors(d)


def test_hostile_text_is_inert_and_legible(driver, pages):
    d = driver
    open_page(d, pages["hostile"])
    assert d.execute_script("return window.pwned") is None
    d.find_element(By.ID, "pp-search").send_keys("RTL override")
    rows = visible(d, "tr[data-pp-prompt]")
    assert rows
    rows[0].click()
    panel = d.find_element(By.ID, "pp-panel")
    assert panel.is_displayed()
    # the search reaches the outputs too: the opened prompt or one of its outputs holds the text, as text
    content = d.execute_script("return document.getElementById('pp-panel').textContent")
    assert HOSTILE[4] in content
    for k in range(len(d.find_elements(By.CSS_SELECTOR, "tr[data-pp-prompt]"))):
        row = d.find_elements(By.CSS_SELECTOR, "tr[data-pp-prompt]")[k]
        if row.is_displayed():
            row.click()
    d.find_element(By.ID, "pp-search").clear()
    d.execute_script("PP.set({q: '', prompt: '0'})")
    texts = d.execute_script(
        "return Array.prototype.map.call(document.querySelectorAll('#pp-panel .pp-text'),"
        "function(e){var r=e.getBoundingClientRect();"
        "return [e.textContent.length, r.width, e.scrollWidth, e.clientWidth]})"
    )
    width = d.execute_script("return document.getElementById('pp-panel').clientWidth")
    assert texts and all(w <= width and sw <= cw + 1 for _, w, sw, cw in texts)  # wrapped, not overflowing
    assert d.execute_script("return window.pwned") is None
    assert not d.find_elements(By.CSS_SELECTOR, "main img[src='x'], #pp-panel img[src='x']")
    assert not console_errors(d)


def test_regions_heat_map_and_compcon_attribute_view(driver, pages):
    d = driver
    open_page(d, pages["regions"])
    requested_urls(d)
    heat = d.find_element(By.ID, "pp-heat")
    ActionChains(d).move_to_element(heat).perform()
    tip = d.find_element(By.CSS_SELECTOR, ".pp-map .pp-tip")
    assert tip.is_displayed() and "region" in tip.text and "CMS" in tip.text
    from selenium.webdriver.support.ui import Select

    Select(d.find_element(By.ID, "pp-checkpoint")).select_by_visible_text("epoch 2")
    ActionChains(d).move_to_element_with_offset(heat, 1, 1).move_to_element(heat).perform()
    assert tip.text.startswith("epoch 2") and "group=epoch+2" in d.current_url
    assert not console_errors(d)
    open_page(d, pages["compcon"])
    d.find_elements(By.CSS_SELECTOR, "tr[data-pp-attr]")[0].click()
    panel = d.find_element(By.ID, "pp-panel")
    assert "blue tint" in panel.text and BANK_PROMPTS[0] in panel.text
    for side in ("A", "B"):
        assert len(panel.find_elements(By.CSS_SELECTOR, f'[data-pp-col="{side}"] img')) == 2 * 2
    assert not console_errors(d)
    assert all(u.startswith(("file://", "data:")) for u in requested_urls(d))


def test_scendi_cluster_view_and_model_filter(driver, pages):
    d = driver
    open_page(d, pages["scendi"])
    heads = d.find_elements(By.CSS_SELECTOR, "h4[data-pp-cluster]")
    assert len(heads) == 8  # 2 models x 2 rows x (model-driven, unconditioned)
    heads[0].click()
    panel = d.find_element(By.ID, "pp-panel")
    cols = panel.find_elements(By.CSS_SELECTOR, "[data-pp-col]")
    assert [c.get_attribute("data-pp-col") for c in cols] == ["model-driven", "unconditioned"]
    assert all("output" in c.text for c in cols) and "cluster=0" in d.current_url
    from selenium.webdriver.support.ui import Select

    Select(d.find_element(By.ID, "pp-group")).select_by_visible_text("m2")
    shown = visible(d, ".card[data-pp-group]")
    assert shown and all(e.get_attribute("data-pp-group") == "m2" for e in shown)
    assert not console_errors(d)


def test_the_network_check_sees_a_request(tmp_path, driver):
    """The no-network check can fail: a page that loads an image from a server is caught."""
    page = tmp_path / "leak.html"
    page.write_text('<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png"></body></html>')
    driver.get(page.as_uri())
    assert any(u.startswith("http://127.0.0.1:9/") for u in requested_urls(driver))


def test_with_scripts_off_the_static_page_still_shows_the_verdict(pages):
    d = make_driver(scripts=False)
    try:
        d.get(pages["split"].as_uri())
        body = d.find_element(By.TAG_NAME, "body").text
        from promptprism.report.significance import verdict

        said = verdict(significance_result([0.002, 0.3, 0.6, 0.01, 0.4, 0.9], scan=scan_record()))
        assert said and said in body and "Prompts where the models disagree most" in body
        assert not d.find_elements(By.ID, "pp-toolbar")
        assert d.find_elements(By.CSS_SELECTOR, "#map svg")  # the static map (inline SVG), not the canvas
        assert all(img.is_displayed() for img in d.find_elements(By.CSS_SELECTOR, "#map svg"))
    finally:
        d.quit()

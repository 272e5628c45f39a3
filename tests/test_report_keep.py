"""Keep what you find (issue 41): tags and notes on prompts and samples, kept in localStorage under the
result's fingerprint, surviving a reload, exported (JSON, CSV; the ids join back to the inputs) and
imported."""

from __future__ import annotations

import csv
import io
import json

import pytest

from _report_data import digits_run
from promptprism.report import render_report, write_report
from test_report_interactive import page_data


def open_ready(d, path, fragment: str = "", timeout: float = 15.0):
    """Open the page and wait until its script marked it ready (a loaded machine may take a moment)."""
    d.get(path.as_uri() + fragment)
    wait_ready(d, timeout)


def wait_ready(d, timeout: float = 15.0):
    from selenium.webdriver.support.ui import WebDriverWait

    script = "return document.documentElement.getAttribute('data-pp-ready')"
    WebDriverWait(d, timeout).until(lambda drv: drv.execute_script(script) == "1")


def test_the_fingerprint_is_the_results_and_stable(tmp_path):
    result, inputs, images = digits_run()
    a = page_data(render_report(result, inputs=inputs, images=images, map_points=40))["fingerprint"]
    b = page_data(render_report(result))["fingerprint"]  # without inputs: the same result, the same key
    assert a == b and len(a) == 16


@pytest.mark.slow
def test_a_tag_survives_a_reload_and_is_exported_and_imported(tmp_path):
    from test_report_explore import (
        CHROMEDRIVER,
        CHROMIUM,
        console_errors,
        make_driver,
        requested_urls,
    )

    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("headless Chromium or chromedriver is not installed")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    result, inputs, images = digits_run()
    path = write_report(result, tmp_path / "split", inputs=inputs, images=images, map_points=40)
    d = make_driver()
    try:
        open_ready(d, path, "#prompt=0")
        d.execute_script("localStorage.clear()")
        open_ready(d, path, "#prompt=0")
        prompt = d.execute_script("return PP.V.prompts[0].prompt")
        box = d.find_element(By.CSS_SELECTOR, "#pp-panel .pp-keep")
        box.find_element(By.CSS_SELECTOR, "input.pp-tag-input").send_keys("check later", Keys.ENTER)
        box.find_element(By.CSS_SELECTOR, "textarea.pp-note").send_keys("odd colour")
        # a sample of the prompt, tagged from its card
        card = d.find_element(By.CSS_SELECTOR, "#pp-panel [data-pp-sample]")
        sample = card.get_attribute("data-pp-sample")
        card.find_element(By.CSS_SELECTOR, "button.pp-tag-sample").click()
        card.find_element(By.CSS_SELECTOR, "input.pp-tag-input").send_keys("blurry", Keys.ENTER)
        assert d.find_element(By.ID, "pp-panel").is_displayed()  # typing did not close or move the panel

        d.refresh()  # the tag and the note survive a reload
        wait_ready(d)
        box = d.find_element(By.CSS_SELECTOR, "#pp-panel .pp-keep")
        assert "check later" in box.find_element(By.CSS_SELECTOR, ".pp-chips").text
        assert box.find_element(By.CSS_SELECTOR, "textarea.pp-note").get_attribute("value") == "odd colour"
        assert d.find_element(By.ID, "pp-kept").text == "kept (2)"

        # the tag filter keeps only the tagged prompt's rows
        open_ready(d, path, "#tag=check+later")
        rows = d.find_elements(By.CSS_SELECTOR, "tr[data-pp-item][data-pp-prompt]")
        shown = {e.get_attribute("data-pp-prompt") for e in rows if e.is_displayed()}
        assert shown == {"0"}

        # export: JSON and CSV, with keys that join back to the inputs
        exported = json.loads(d.execute_script("return PP.keptJson()"))
        items = {(x["kind"], x["id"]): x for x in exported["items"]}
        assert items[("prompt", prompt)]["tags"] == ["check later"]
        assert items[("prompt", prompt)]["note"] == "odd colour"
        side, index = sample.split(":")
        assert items[("sample", sample)]["tags"] == ["blurry"]
        assert inputs[side].prompts[int(index)] == prompt  # the sample id joins back to its input row
        table = list(csv.DictReader(io.StringIO(d.execute_script("return PP.keptCsv()"))))
        assert {r["id"] for r in table} == {prompt, sample}
        shown_csv = list(csv.DictReader(io.StringIO(d.execute_script("return PP.shownCsv()"))))
        assert [r["prompt"] for r in shown_csv] == [prompt] and shown_csv[0]["tags"] == "check later"
        shown_jsonl = [json.loads(x) for x in d.execute_script("return PP.shownJsonl()").splitlines()]
        assert [r["prompt"] for r in shown_jsonl] == [prompt] and shown_jsonl[0]["tags"] == ["check later"]
        # a mode's samples exported (CSV, JSONL): the mode's own samples, ids that join back to the inputs
        open_ready(d, path, "#mode=%2B1")
        assert d.find_element(By.CSS_SELECTOR, "#pp-panel button.pp-export-jsonl").is_displayed()
        mode = result.positive_modes[0]
        got = d.execute_script("return PP.samplesCsv(PP.samplesOf('mode', '+1'))")
        got = list(csv.DictReader(io.StringIO(got)))
        lines = [json.loads(x) for x in d.execute_script("return PP.samplesJsonl(PP.samplesOf('mode', '+1'))")
                 .splitlines()]
        own = [*mode.top_samples, *mode.top_samples_other]
        assert {r["id"] for r in got} == {f"{x.set}:{x.index}" for x in own}
        assert [r["id"] for r in got] == [x["id"] for x in lines]
        for r in lines:
            assert inputs[r["set"]].prompts[r["row"]] == r["prompt"]
        d.find_element(By.ID, "pp-kept").click()
        d.find_element(By.ID, "pp-export-json").click()  # the download is made in the page, no request

        # import into an empty store brings them back
        d.execute_script("localStorage.clear()")
        open_ready(d, path)
        assert d.find_element(By.ID, "pp-kept").text == "kept (0)"
        assert d.execute_script("return PP.importKept(arguments[0])", json.dumps(exported)) == 2
        open_ready(d, path, "#prompt=0")
        assert "check later" in d.find_element(By.CSS_SELECTOR, "#pp-panel .pp-chips").text
        assert not console_errors(d)
        # nothing fetched: the page itself, its data URIs and (keep) the in-page download
        assert all(u.startswith(("file://", "data:", "blob:")) for u in requested_urls(d))
    finally:
        d.quit()

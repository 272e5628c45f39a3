"""The K-way (compare) page as an explorer (issue 41): a prompt opens all K models' outputs side by side, a
deviating model opens its samples against the rest's; the data agrees with the result and the inputs."""

from __future__ import annotations

import pytest

from promptprism.methods.promptsplit.kway import KWaySplit
from promptprism.report import render_report, write_report
from test_promptsplit_kway import model_sets
from test_report_interactive import page_data

K = 3


@pytest.fixture(scope="module")
def kway(tmp_path_factory):
    sets = model_sets(7, K, prompts=6, per=6, shift=3.0, planted=1)
    result = KWaySplit(method="exact", permutations=39, n_modes=2).fit(sets)
    inputs = {s.name: s for s in sets}
    path = write_report(result, tmp_path_factory.mktemp("kway") / "kway", inputs=inputs)
    return result, inputs, path


def test_the_view_data_agrees_with_the_result_and_the_inputs(kway):
    result, inputs, path = kway
    view = page_data(path.read_text(encoding="utf-8"))["view"]
    assert view["kind"] == "kway" and view["models"] == result.names
    rows, prompts = view["rows"], view["prompts"]
    for r in rows:  # every row is what the model's input holds at that index
        s = inputs[r["s"]]
        assert prompts[r["p"]]["prompt"] == s.prompts[r["i"]] and r["t"] == s.outputs[r["i"]]
    for p in prompts:
        for m in result.names:
            assert len(p["rows"][m]) == min(6, sum(x == p["prompt"] for x in inputs[m].prompts))
    dev = {d["model"]: d for d in view["deviations"]}
    m1 = next(d for d in result.deviations if d["model"] == "m1")
    assert m1["deviates"] and dev["m1"]["deviates"]
    got = sorted((rows[k]["s"], rows[k]["i"]) for k in dev["m1"]["samples"]["model"])
    assert got == sorted((s["model"], s["index"]) for s in m1["top_samples"])


def test_without_inputs_the_page_says_what_is_missing(kway):
    result, _, _ = kway
    doc = render_report(result)
    assert "their inputs were not given" in doc


@pytest.mark.slow
def test_open_a_prompt_then_a_deviating_model(kway):
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
    from selenium.webdriver.common.keys import Keys

    result, inputs, path = kway
    d = make_driver()
    try:
        open_ready(d, path)
        row = d.find_element(By.CSS_SELECTOR, "tr[data-pp-prompt]")
        row.click()
        panel = d.find_element(By.ID, "pp-panel")
        assert panel.is_displayed()
        cols = panel.find_elements(By.CSS_SELECTOR, "[data-pp-col]")
        assert [c.get_attribute("data-pp-col") for c in cols] == result.names  # all K models
        assert all(c.find_elements(By.CSS_SELECTOR, ".pp-text") for c in cols)
        assert "#" in d.current_url and "prompt=" in d.current_url
        # the deviating model: its samples against the rest's
        d.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)  # close the panel
        assert not panel.is_displayed()
        button = d.find_element(By.CSS_SELECTOR, 'button[data-pp-model="m1"]')
        d.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
        button.click()
        assert "m1 against the rest" in panel.text
        cols = panel.find_elements(By.CSS_SELECTOR, "[data-pp-col]")
        assert [c.get_attribute("data-pp-col") for c in cols] == ["model", "rest"]
        assert "m1" in cols[0].text and "the rest" in cols[1].text
        assert "model=m1" in d.current_url
        open_ready(d, path, "#model=m1")  # the fragment restores it
        assert d.find_element(By.ID, "pp-panel").is_displayed()
        # the K x K matrix is not sortable (its rows alone reordered broke its symmetry); other tables sort
        # cells such as "0.0239 (p 0.02)" by their number
        matrix = d.find_element(By.CSS_SELECTOR, "table.pp-matrix")
        assert not matrix.find_elements(By.CSS_SELECTOR, "th.pp-sortable")
        assert d.find_elements(By.CSS_SELECTOR, "main table:not(.pp-matrix) th.pp-sortable")
        assert not console_errors(d)
        # nothing fetched: the page itself, its data URIs and (keep) the in-page download
        assert all(u.startswith(("file://", "data:", "blob:")) for u in requested_urls(d))
    finally:
        d.quit()


def test_compare_cli_page_and_report_dir_have_every_models_outputs(tmp_path):
    from _cli_run import run_cli
    from test_cli_compare import _npz

    files = [_npz(tmp_path / f"m{i}.npz", seed=i, shift=2.0 if i == 1 else 0.0) for i in range(3)]
    out = tmp_path / "out"
    code, _, err = run_cli("compare", *files, "--out", out, "--permutations", "19", "--modes", "2", "-q")
    assert code == 0, err
    first = page_data((out / "report.html").read_text(encoding="utf-8"))["view"]
    assert {r["s"] for r in first["rows"]} == {"m0", "m1", "m2"}
    assert all(len(p["rows"][m]) == 6 for p in first["prompts"] for m in ("m0", "m1", "m2"))
    (out / "report.html").unlink()
    code, _, err = run_cli("report", out)  # read again from result.json's inputs: the same views
    assert code == 0, err
    again = page_data((out / "report.html").read_text(encoding="utf-8"))
    assert again["view"]["prompts"] == first["prompts"] and again["view"]["rows"] == first["rows"]

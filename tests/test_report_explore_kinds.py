"""Every kind explorable with the same components (issue 41): the metrics page's per-prompt rows open every
set's samples (the generated sets and the reference side by side), the diversity page's clusters open the
same cluster of every model, the regions page's regions open their mask, each set's values and images.
Each acted on in headless Chromium: open a row, see the samples; no console error; no network request."""

from __future__ import annotations

import numpy as np
import pytest

from _report_data import regions_run
from promptprism import PairedSet
from promptprism.methods.metrics import ReferenceMetrics
from promptprism.report import write_report
from test_report_interactive import page_data


def metrics_sets():
    rng = np.random.default_rng(0)
    which = np.arange(80) % 4
    t = np.eye(4)[which]

    def one(name, shift):
        return PairedSet(t, rng.standard_normal((80, 6)) + shift, prompts=[f"topic {w}" for w in which],
                         outputs=[f"{name} says {i}" for i in range(80)], name=name)

    return [one("gen", 0.5)], one("ref", 0.0)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("kinds")
    gen, ref = metrics_sets()
    result = ReferenceMetrics(bootstrap=0, subsets=2, subset_size=20, min_group_size=5).fit(gen, ref)
    out = {"metrics": write_report(result, root / "metrics", inputs={"gen": gen[0], "ref": ref})}
    rg, rin = regions_run()
    out["regions"] = write_report(rg, root / "regions", inputs=rin)
    from promptprism.methods.scendi import Scendi, compare

    rng = np.random.default_rng(1)
    which = np.arange(40) % 4
    t = np.eye(4)[which]
    sets = [PairedSet(t, rng.standard_normal((40, 6)) + t @ rng.standard_normal((4, 6)),
                      prompts=[f"prompt {w}" for w in which],
                      outputs=[f"output {i} of {k}" for i in range(40)], name=k) for k in ("m1", "m2", "m3")]
    out["diversity"] = write_report(compare(sets, Scendi(n_clusters=2, top_k=4, seed=0),
                                            names=["m1", "m2", "m3"]), root / "diversity")
    return out


def test_metrics_view_data_is_the_inputs_rows(pages):
    view = page_data(pages["metrics"].read_text(encoding="utf-8"))["view"]
    assert view["kind"] == "sets" and view["models"] == ["gen", "ref"]
    gen, ref = metrics_sets()
    sets = {"gen": gen[0], "ref": ref}
    for r in view["rows"]:
        assert r["t"] == sets[r["s"]].outputs[r["i"]]
        assert view["prompts"][r["p"]]["prompt"] == sets[r["s"]].prompts[r["i"]]
    assert all(len(p["rows"]["gen"]) == 6 and len(p["rows"]["ref"]) == 6 for p in view["prompts"])


@pytest.fixture(scope="module")
def driver():
    from test_report_explore import CHROMEDRIVER, CHROMIUM, make_driver

    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("headless Chromium or chromedriver is not installed")
    d = make_driver()
    yield d
    d.quit()


def _clean(d):
    from test_report_explore import console_errors, requested_urls

    assert not console_errors(d)
    assert all(u.startswith(("file://", "data:", "blob:")) for u in requested_urls(d))


@pytest.mark.slow
def test_metrics_row_opens_both_sets_samples(driver, pages):
    from selenium.webdriver.common.by import By

    from test_report_keep import open_ready

    d = driver
    open_ready(d, pages["metrics"])
    row = d.find_element(By.CSS_SELECTOR, "tr[data-pp-prompt]")
    d.execute_script("arguments[0].closest('details').open = true;"
                     "arguments[0].scrollIntoView({block: 'center'})", row)
    row.click()
    panel = d.find_element(By.ID, "pp-panel")
    assert panel.is_displayed()
    cols = panel.find_elements(By.CSS_SELECTOR, "[data-pp-col]")
    assert [c.get_attribute("data-pp-col") for c in cols] == ["gen", "ref"]
    assert "gen says" in cols[0].text and "ref says" in cols[1].text
    assert "prompt=" in d.current_url
    _clean(d)


@pytest.mark.slow
def test_diversity_cluster_opens_every_models_cluster(driver, pages):
    from selenium.webdriver.common.by import By

    from test_report_keep import open_ready

    d = driver
    open_ready(d, pages["diversity"])
    d.find_element(By.CSS_SELECTOR, "h4[data-pp-cluster]").click()
    panel = d.find_element(By.ID, "pp-panel")
    cols = panel.find_elements(By.CSS_SELECTOR, "[data-pp-cluster-col]")
    assert [c.get_attribute("data-pp-cluster-col") for c in cols] == ["m1", "m2", "m3"]
    for c, m in zip(cols, ["m1", "m2", "m3"], strict=True):
        assert f"of {m}" in c.text  # that model's samples
    _clean(d)


@pytest.mark.slow
def test_region_row_opens_its_mask_values_and_images(driver, pages):
    from selenium.webdriver.common.by import By

    from test_report_keep import open_ready

    d = driver
    open_ready(d, pages["regions"])
    row = d.find_element(By.CSS_SELECTOR, 'tr[data-pp-region="1"]')
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
    row.click()
    panel = d.find_element(By.ID, "pp-panel")
    assert "Region 1" in panel.text and "region=1" in d.current_url
    assert panel.find_element(By.ID, "pp-region-mask").is_displayed()
    assert "epoch 1" in panel.text and "epoch 2" in panel.text
    cols = panel.find_elements(By.CSS_SELECTOR, "[data-pp-col]")
    assert [c.get_attribute("data-pp-col") for c in cols] == ["real", "epoch 1", "epoch 2"]
    assert all(len(c.find_elements(By.CSS_SELECTOR, "img")) == 4 for c in cols)
    open_ready(d, pages["regions"], "#region=2")  # the fragment restores it
    assert "Region 2" in d.find_element(By.ID, "pp-panel").text
    _clean(d)


def test_the_regions_page_leaves_the_pixel_cka_matrix_out_of_its_data():
    """d^2 numbers (a 32 x 32 image's: 22 MB of JSON) for a matrix the page shows as a figure."""
    import re

    from promptprism.report import render_report
    from test_report_interactive import page_data

    rg, _ = regions_run()
    assert rg.cka_matrix is not None
    doc = render_report(rg)
    assert page_data(doc)["result"]["cka_matrix"] is None
    assert page_data(doc)["result"]["regions"] == rg.to_dict()["regions"]
    assert re.search(r"<img[^>]+src=\"data:image/png", doc)  # (the figure stays)

"""The map at 20,000 points (issue 41 item 5) and the number range slider (item 3), acted on in Chromium:
the map renders, a lasso (synthetic pointer events along a polygon) selects the points inside it and the side
panel counts them; ``#mode=-1`` and ``#range=col:lo:hi`` restore after a reload."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from promptprism import PairedSet, PromptSplit
from promptprism.report import write_report
from test_report_interactive import page_data

N = 10_000


def _set(path, side: str, shift: float, seed: int) -> PairedSet:
    rng = np.random.default_rng(seed)
    which = np.arange(N) % 8
    prompts = [f"prompt {w}" for w in which]
    outputs = [f"{side} {i}" for i in range(N)]
    rows = [{"prompt": p, "output": o, "length": int(w) * 10 + i % 7}
            for i, (p, o, w) in enumerate(zip(prompts, outputs, which, strict=True))]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    z = rng.standard_normal((N, 4)) + 4.0 * np.eye(8, 4)[which]
    z[which == 1, 1] += shift
    return PairedSet(np.eye(8)[which], z, prompts=prompts, outputs=outputs, name=side, source=str(path))


@pytest.fixture(scope="module")
def big_page(tmp_path_factory):
    root = tmp_path_factory.mktemp("bigmap")
    sets = {s: _set(root / f"{s}.jsonl", s, 3.0 * k, k) for k, s in enumerate(("test", "reference"))}
    result = PromptSplit(method="rff", n_features=400, seed=0, n_modes=2, top_k=4,
                         progress=False).fit(sets["test"], sets["reference"])
    manifests = {s: [json.loads(x) for x in (root / f"{s}.jsonl").read_text(encoding="utf-8").splitlines()]
                 for s in sets}
    return write_report(result, root / "split", inputs=sets, map_points=2 * N), manifests


LASSO = [[100, 100], [400, 90], [380, 330], [220, 250], [110, 360]]  # canvas pixels, a concave polygon


@pytest.mark.slow
def test_a_20k_map_renders_lassoes_and_restores_the_fragment(big_page):
    from test_report_explore import CHROMEDRIVER, CHROMIUM, console_errors, make_driver, requested_urls
    from test_report_keep import open_ready

    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("headless Chromium or chromedriver is not installed")
    from selenium.webdriver.common.by import By

    big_page, manifests = big_page
    view = page_data(big_page.read_text(encoding="utf-8"))["view"]
    assert len(view["map"]["x"]) == 2 * N
    d = make_driver()
    try:
        open_ready(d, big_page, timeout=60)
        cv = d.find_element(By.ID, "pp-map")
        d.execute_script("arguments[0].scrollIntoView({block: 'center'})", cv)
        # the points the polygon holds, by brute force over the page's own pixel positions
        want = d.execute_script("""
            var M = PP.V.map, W = 640, H = 460, pad = 12, n = M.x.length;
            var minx = Math.min.apply(null, M.x), maxx = Math.max.apply(null, M.x);
            var miny = Math.min.apply(null, M.y), maxy = Math.max.apply(null, M.y), c = 0;
            for (var i = 0; i < n; i++) {
              var x = pad + (W - 2 * pad) * (M.x[i] - minx) / ((maxx - minx) || 1);
              var y = H - pad - (H - 2 * pad) * (M.y[i] - miny) / ((maxy - miny) || 1);
              if (PPpure.inPolygon(x, y, arguments[0])) c++;
            }
            return c;""", LASSO)
        assert want > 100
        d.execute_script("""
            var cv = arguments[0], poly = arguments[1], r = cv.getBoundingClientRect();
            function ev(type, p) {
              cv.dispatchEvent(new PointerEvent(type, {bubbles: true, clientX: r.left + p[0] * r.width / 640,
                clientY: r.top + p[1] * r.height / 460, pointerId: 1}));
            }
            ev("pointerdown", poly[0]);
            for (var k = 1; k < poly.length; k++) ev("pointermove", poly[k]);
            ev("pointerup", poly[0]);""", cv, LASSO)
        count = d.find_element(By.ID, "pp-sel-count")
        assert int(count.get_attribute("data-count")) == want
        assert d.find_element(By.ID, "pp-panel").is_displayed() and "sel=p" in d.current_url
        # the selection exported (CSV, JSONL): each line's id is "<set>:<row>" of that set's manifest
        rows = d.execute_script("return PP.samplesCsv(PP.samplesOf('sel'))")
        rows = list(csv.DictReader(io.StringIO(rows)))
        lines = d.execute_script("return PP.samplesJsonl(PP.samplesOf('sel'))").splitlines()
        lines = [json.loads(x) for x in lines]
        assert len(rows) == len(lines) == want and [r["id"] for r in rows] == [x["id"] for x in lines]
        for r in rows[::97]:
            side, index = r["id"].split(":")
            assert manifests[side][int(index)]["prompt"] == r["prompt"]
            assert manifests[side][int(index)]["output"] == r["output"]
        assert d.find_element(By.CSS_SELECTOR, "#pp-panel button.pp-export-csv").is_displayed()
        # the fragment keeps the lasso: a reload selects the same points
        open_ready(d, big_page, "#" + d.current_url.split("#", 1)[1], timeout=60)
        assert int(d.find_element(By.ID, "pp-sel-count").get_attribute("data-count")) == want
        # hover: the tip shows the sample nearest the pointer (brute force over the page's pixel positions)
        hover = d.execute_script("""
            var M = PP.V.map, W = 640, H = 460, pad = 12, n = M.x.length, cv = arguments[0];
            var minx = Math.min.apply(null, M.x), maxx = Math.max.apply(null, M.x);
            var miny = Math.min.apply(null, M.y), maxy = Math.max.apply(null, M.y);
            function px(i) { return pad + (W - 2 * pad) * (M.x[i] - minx) / ((maxx - minx) || 1); }
            function py(i) { return H - pad - (H - 2 * pad) * (M.y[i] - miny) / ((maxy - miny) || 1); }
            var r = cv.getBoundingClientRect(), x = px(1234) + 0.5, y = py(1234) - 0.5, best = -1, bd = 64;
            cv.dispatchEvent(new PointerEvent("pointermove", {bubbles: true, pointerId: 1,
              clientX: r.left + x * r.width / W, clientY: r.top + y * r.height / H}));
            var p = [(r.left + x * r.width / W - r.left) * W / r.width,
                     (r.top + y * r.height / H - r.top) * H / r.height];
            for (var i = 0; i < n; i++) {
              var d2 = (px(i) - p[0]) * (px(i) - p[0]) + (py(i) - p[1]) * (py(i) - p[1]);
              if (d2 < bd) { bd = d2; best = i; }
            }
            var tip = document.querySelector(".pp-tip"), row = PP.V.rows[M.row[best]];
            return [tip.hidden, tip.textContent, row.s + " #" + row.i];""", d.find_element(By.ID, "pp-map"))
        assert hover[0] is False and hover[1].startswith(hover[2] + " ")
        # the mode fragment, ASCII minus, restores after a reload
        open_ready(d, big_page, "#mode=-1", timeout=60)
        assert d.execute_script("return PP.state.mode") == "-1"
        assert d.find_element(By.ID, "pp-panel").is_displayed()
        # a tag on the mode, kept under its ASCII id and exported
        from selenium.webdriver.common.keys import Keys

        d.execute_script("localStorage.clear()")
        d.find_element(By.CSS_SELECTOR, "#pp-panel .pp-keep input.pp-tag-input").send_keys("look", Keys.ENTER)
        kept = json.loads(d.execute_script("return PP.keptJson()"))["items"]
        assert [(x["kind"], x["id"], x["tags"]) for x in kept] == [("mode", "-1", ["look"])]
        # the range slider: the fragment filters the prompt rows and sets the handles
        open_ready(d, big_page, "#range=length:20:25", timeout=60)
        rows = [e for e in d.find_elements(By.CSS_SELECTOR, "#overview tr[data-pp-prompt]")
                if e.is_displayed()]
        assert rows and all("prompt 2" in r.text for r in rows)
        lo = d.find_element(By.CSS_SELECTOR, 'input[data-pp-range="length:lo"]')
        hi = d.find_element(By.CSS_SELECTOR, 'input[data-pp-range="length:hi"]')
        assert 0 < int(lo.get_attribute("value")) < int(hi.get_attribute("value")) < 200
        # moving the high handle to its end writes the fragment again
        d.execute_script("arguments[0].value = 200; arguments[0].dispatchEvent(new Event('input'))", hi)
        assert "range=length%3A20%3A76" in d.current_url or "range=length:20:76" in d.current_url
        assert not console_errors(d)
        assert all(u.startswith(("file://", "data:", "blob:")) for u in requested_urls(d))
    finally:
        d.quit()

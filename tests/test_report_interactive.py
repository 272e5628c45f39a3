"""The interactive layer without a browser: the JSON data block is inert and exact, the inlined script
loads nothing, and the data behind the PromptSplit views says what the result and the inputs say."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from _report_data import digits_run, regions_run
from promptprism import PairedSet, PromptSplit
from promptprism.report import render_report
from promptprism.report.interactive import asset, data_block, json_for_html
from promptprism.report.references import check_self_contained, external_references
from promptprism.report.strings import page_data as resolved_data

HOSTILE = [
    "</script><script>window.pwned=1</script>",
    "<!-- <script>",
    "<img src=x onerror=\"window.pwned=1\">",
    "line\u2028separator\u2029paragraph",
    "\u202eRTL override\u202c and \u200fmark",
    "& &amp; \"quotes\" 'single'",
]


def page_data(doc: str) -> dict:
    m = re.search(r'<script type="application/json" id="pp-data">(.*?)</script>', doc, re.S)
    assert m, "no data block"
    return resolved_data(json.loads(m.group(1)))


@pytest.mark.parametrize("text", HOSTILE)
def test_json_block_is_inert_and_round_trips(text):
    data = {"t": text, "nan": float("nan"), "inf": [float("inf")], "nested": {"k": [text, 1.5]}}
    body = json_for_html(data)
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in body
    assert json.loads(body) == {"t": text, "nan": None, "inf": [None], "nested": {"k": [text, 1.5]}}
    block = data_block(data)
    assert block.count("</script") == 1 and "<!--" not in block
    # finite data (written directly, without the copy) and non-string keys (the copy) alike
    for finite, want in (({"t": text, "k": [text, 1.5]}, {"t": text, "k": [text, 1.5]}),
                         ({1: text, 2.5: [text], "x": float("-inf")}, {"1": text, "2.5": [text], "x": None})):
        body = json_for_html(finite)
        assert not any(bad in body for bad in ("<", ">", "&", "\u2028", "\u2029"))
        assert json.loads(body) == want


def test_the_script_loads_nothing_and_the_check_refuses_one_that_would():
    js, css = asset("report.js") + asset("views.js"), asset("report.css")
    assert "innerHTML" not in js and "eval(" not in js and "document.write" not in js
    assert not external_references(f"<style>{css}</style><script>{js}</script>")
    for bad in ("fetch('x.json')", "new XMLHttpRequest()", "import('./m.js')", "location='https://x.org'",
                "new WebSocket(u)", "navigator.sendBeacon(u)"):
        assert external_references(f"<script>{bad}</script>"), bad
        with pytest.raises(ValueError):
            check_self_contained(f"<script>{bad}</script>")
    # the same words in the inert data block are data, not calls
    check_self_contained('<script type="application/json">{"t":"fetch(https://x)"}</script>')


def hostile_sets(long: int = 100_000) -> tuple[PairedSet, PairedSet]:
    rng = np.random.default_rng(3)
    n = 24
    which = np.arange(n) % 4
    prompts = [HOSTILE[w] for w in which]
    outs = [HOSTILE[(i + 1) % len(HOSTILE)] + f" sample {i}" for i in range(n)]
    outs[0] = "x" * long
    t = np.eye(4)[which]
    test = PairedSet(t, rng.standard_normal((n, 5)) + t @ rng.standard_normal((4, 5)), prompts=prompts,
                     outputs=outs, name="test")
    ref = PairedSet(t, rng.standard_normal((n, 5)), prompts=prompts, outputs=[o[::-1] for o in outs],
                    name="reference")
    return test, ref


def test_hostile_text_stays_text_in_page_and_data():
    test, ref = hostile_sets()
    result = PromptSplit(n_modes=2, top_k=4, seed=0).fit(test, ref)
    doc = render_report(result, inputs={"test": test, "reference": ref}, map_points=40)
    check_self_contained(doc)
    assert "window.pwned" not in doc.split('<script type="application/json"')[0].replace("window.pwned=1", "")
    assert re.findall(r"<script\b[^>]*>", doc) == [
        '<script type="application/json" id="pp-data">',
        '<script id="pp-js">',
    ]
    assert "<img src=x" not in doc and "&lt;img src=x" in doc
    view = page_data(doc)["view"]
    names = {p["prompt"] for p in view["prompts"]}
    assert set(HOSTILE[:4]) <= names  # the prompts arrive intact, as data
    long_rows = [r for r in view["rows"] if r.get("cut")]
    assert long_rows and all(r["cut"] == 100_000 and len(r["t"]) == 4000 for r in long_rows)


def test_promptsplit_view_data_agrees_with_result_and_inputs():
    result, inputs, images = digits_run()
    doc = render_report(result, inputs=inputs, images=images, map_points=60)
    data = page_data(doc)
    assert data["kind"] == "promptsplit"
    assert data["result"] == json.loads(result.to_json())  # result.json's content, embedded once
    view = data["view"]
    rows, prompts = view["rows"], view["prompts"]
    assert len({(r["s"], r["i"]) for r in rows}) == len(rows)  # each sample once
    for r in rows:  # every row is what the input set holds at that index
        s = inputs[r["s"]]
        assert prompts[r["p"]]["prompt"] == s.prompts[r["i"]] and r["t"] == s.outputs[r["i"]]
        assert view["thumbs"][r["im"]].startswith("data:image/")  # every digit has its thumbnail
    for m, mv in zip(result.modes, view["modes"], strict=True):
        want = sorted((s.set, s.index) for s in m.top_samples + m.top_samples_other)
        got = sorted((rows[k]["s"], rows[k]["i"]) for side in mv["samples"] for k in mv["samples"][side])
        assert got == want
        assert [prompts[p[0]]["prompt"] for p in mv["prompts"]] == [pl.prompt for pl in m.top_prompts]
    for pid, p in enumerate(prompts):  # per prompt: its own outputs, up to PER_PROMPT per set
        for side in ("test", "reference"):
            assert all(rows[k]["p"] == pid and rows[k]["s"] == side for k in p["rows"][side])
            assert len(p["rows"][side]) == min(6, sum(x == p["prompt"] for x in inputs[side].prompts))
    m = view["map"]
    assert len(m["x"]) == len(m["y"]) == len(m["row"]) == len(m["mode"]) == 60
    assert set(m["mode"]) <= set(m["colors"])
    # the ranking rows of the static page link to these prompts
    linked = [int(x) for x in re.findall(r'data-pp-prompt="(\d+)"', doc)]
    assert linked and all(0 <= k < len(prompts) for k in linked)


def test_regions_view_data_is_the_region_grid():
    result, inputs = regions_run()
    view = page_data(render_report(result, inputs=inputs))["view"]
    h, w = view["shape"]
    assert len(view["labels"]) == h * w and view["labels"] == list(np.asarray(result.regions).ravel())
    assert len(view["intervals"]) == len(result.names)

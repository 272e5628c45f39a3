"""The answer first on every page (issue 41 item 1): each kind's first section opens with one verdict sentence
(``p.pp-verdict``) before any card, note or table; in headless Chromium it is the first thing in the page's
main column, on screen without scrolling, with scripts on and off."""

from __future__ import annotations

import re
from html import unescape

import numpy as np
import pytest

from _report_data import (
    BANK_PROMPTS,
    compcon_result,
    digits_run,
    regions_run,
    significance_result,
    write_bank,
)
from promptprism import PairedSet, PromptSplit
from promptprism.report import render_report, write_report


def _sets(n_models: int, shift: float = 2.0) -> list[PairedSet]:
    rng = np.random.default_rng(0)
    which = np.arange(40) % 4
    t = np.eye(4)[which]
    return [PairedSet(t, rng.standard_normal((40, 6)) + t @ rng.standard_normal((4, 6)) + shift * (k == 1),
                      prompts=[f"prompt {w}" for w in which],
                      outputs=[f"output {i} of m{k}" for i in range(40)], name=f"m{k}")
            for k in range(n_models)]


def _results(root) -> dict[str, tuple]:
    """(result, write_report keywords) of each kind."""
    from promptprism.methods.compcon.evaluation import CompConEvaluation
    from promptprism.methods.compcon.image_sources import ImageBank
    from promptprism.methods.metrics import ReferenceMetrics
    from promptprism.methods.promptsplit.kway import KWaySplit
    from promptprism.methods.scendi import Scendi, compare

    _, inputs, images = digits_run()
    sets = _sets(3)
    untested = PromptSplit(seed=0, n_modes=2, top_k=3, permutations=0).fit(sets[0], sets[1])
    a = write_bank(root / "bankA", BANK_PROMPTS, (20, 40, 220))
    b = write_bank(root / "bankB", BANK_PROMPTS, (120, 120, 120))
    split = {"attribute_top1": 0.5, "attribute_top5": 1.0, "description_top1": 0.0, "description_top5": 0.5}
    evaluation = CompConEvaluation(summary={"n_splits": 1, **split}, per_split=[
        {"split": 0, "truth_attribute": "fog", "truth_concepts": ["city"], "attribute_ratings": [2],
         "description_ratings": [1], **split}], judge={"model": "a judge"}, config={"k": 5}, failures=[])
    rg, rin = regions_run()
    return {
        "split": (significance_result([0.002, 0.3, 0.6, 0.01, 0.4, 0.9]),
                  {"inputs": inputs, "images": images, "map_points": 60}),
        "split-untested": (untested, {}),
        "compare": (KWaySplit(method="exact", permutations=19, n_modes=2).fit(sets), {}),
        "metrics": (ReferenceMetrics(bootstrap=0, subsets=2, subset_size=20, min_group_size=5)
                    .fit(sets[1:], sets[0]), {}),
        "diversity": (compare(sets[:2], Scendi(n_clusters=2, top_k=3, seed=0), names=["m0", "m1"]), {}),
        "regions": (rg, {"inputs": rin}),
        "compcon": (compcon_result(a, b), {"inputs": {"A": ImageBank.load(a), "B": ImageBank.load(b)}}),
        "compcon-eval": (evaluation, {}),
    }


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("verdict")
    return {k: write_report(r, root / k, progress=False, **kw) for k, (r, kw) in _results(root).items()}


KINDS = ["split", "split-untested", "compare", "metrics", "diversity", "regions", "compcon", "compcon-eval"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_the_first_section_opens_with_one_verdict_sentence(pages, kind):
    doc = pages[kind].read_text(encoding="utf-8")
    first = re.search(r"<main>\s*<section.*?</section>", doc, re.S).group(0)
    body = re.sub(r"^<main>\s*<section[^>]*>\s*<h2>.*?</h2>", "", first, count=1, flags=re.S).lstrip()
    assert re.match(r'(<div class="pp-answer" id="answer">)?<p class="pp-verdict"><b>', body), body[:200]
    verdict = unescape(re.sub(r"<[^>]+>", "", re.search(r'class="pp-verdict"><b>(.*?)</b>', body).group(1)))
    assert len(verdict) > 20
    assert first.count('class="pp-verdict"') == 1


@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_the_verdicts_say_what_was_found():
    rg, _ = regions_run()
    doc = unescape(render_report(rg))
    verdict = re.search(r'class="pp-verdict"><b>(.*?)</b>', doc).group(1)
    head = rg.headline()
    worst = int(np.argmin(head["cms"]))
    assert f"furthest: {rg.names[worst]}" in verdict and "most in region" in verdict
    sets = _sets(2)
    untested = PromptSplit(seed=0, n_modes=2, top_k=3, permutations=0).fit(sets[0], sets[1])
    said = unescape(re.search(r'class="pp-verdict"><b>(.*?)</b>', render_report(untested)).group(1))
    assert said.startswith("Not tested for significance") and "largest eigenvalues +" in said


@pytest.mark.slow
def test_in_chromium_the_verdict_is_the_first_thing_on_screen(pages):
    from test_report_explore import CHROMEDRIVER, CHROMIUM, console_errors, make_driver, requested_urls

    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("headless Chromium or chromedriver is not installed")
    probe = """
        var main = document.querySelector("main"), v = main.querySelector(".pp-verdict");
        var first = null, all = main.querySelectorAll("p, table, .cards, .card, img, canvas, ul");
        for (var i = 0; i < all.length && !first; i++) if (all[i].getClientRects().length) first = all[i];
        var r = v ? v.getBoundingClientRect() : null;
        return [v ? v.textContent : null, first === v, r ? r.top : -1, r ? r.bottom : -1,
                window.innerHeight];"""
    for scripts in (True, False):
        d = make_driver(scripts=scripts)
        try:
            for kind in KINDS:
                d.get(pages[kind].as_uri())
                text, first, top, bottom, height = d.execute_script(probe)
                assert text and first, (kind, scripts)
                assert 0 <= top < bottom <= height, (kind, scripts, top, bottom, height)
                assert not console_errors(d), kind
            assert all(u.startswith(("file://", "data:")) for u in requested_urls(d))
        finally:
            d.quit()

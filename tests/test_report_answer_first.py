"""The answer first on the diversity and metrics pages (issue 41): one verdict sentence before anything
else, at most five finding cards, the caveats grouped by severity, folded, each once."""

from __future__ import annotations

import re
from html import unescape

import numpy as np

from promptprism import PairedSet
from promptprism.methods.metrics import ReferenceMetrics
from promptprism.methods.scendi import Scendi, compare
from promptprism.report import render_report
from promptprism.report.answer import caveats_block, severity


def _static(doc: str) -> str:
    return unescape(doc.split('<script type="application/json"')[0])


def _first_section(doc: str) -> str:
    return re.search(r"<section.*?</section>", doc, re.S).group(0)


def _sets(rng, n_models=2):
    which = np.arange(60) % 4
    bank = rng.standard_normal((4, 5))
    return [PairedSet(bank[which], rng.standard_normal((60, 7)) * (1 + k), prompts=[f"p{w}" for w in which],
                      outputs=[f"output {i} of m{k}" for i in range(60)], name=f"m{k}")
            for k in range(n_models)]


def test_diversity_page_opens_with_the_verdict_and_findings():
    rng = np.random.default_rng(0)
    result = compare(_sets(rng, 3), Scendi(n_clusters=2, top_k=3, seed=0), names=["m0", "m1", "m2"])
    doc = render_report(result)
    first = _first_section(doc)
    body = re.sub(r"^<section[^>]*><h2>.*?</h2>", "", first, count=1)
    assert body.lstrip().startswith('<div class="pp-answer" id="answer"><p class="pp-verdict"><b>')
    verdict = unescape(re.search(r'class="pp-verdict"><b>(.*?)</b>', first).group(1))
    assert "most diverse beyond its prompts" in verdict and verdict.count(". ") == 0  # one sentence
    cards = re.findall(r'class="card pp-finding"', first)
    assert 1 <= len(cards) <= 5
    assert first.index("pp-verdict") < first.index("pp-finding") < first.index("<table")


def test_a_diversity_ranking_within_the_noise_is_said_as_no_difference():
    """Two draws of one model: no Scendi difference exceeds its interval, and the verdict says so first (it
    named a 'most diverse' model while the rankings called the two a tie)."""
    rng = np.random.default_rng(1)
    which = np.arange(80) % 8
    bank = rng.standard_normal((8, 5))
    prompts = [f"p{w}" for w in which]
    sets = [PairedSet(bank[which], rng.standard_normal((80, 7)), prompts=prompts, name=f"m{k}")
            for k in range(2)]
    result = compare(sets, Scendi(n_clusters=1, seed=0, bootstrap=50), names=["m0", "m1"])
    diffs = [d for d in result.differences if d.get("metric") == "scendi"]
    assert diffs and not any(d.get("separated") for d in diffs)
    verdict = unescape(re.search(r'class="pp-verdict"><b>(.*?)</b>', render_report(result)).group(1))
    assert verdict.startswith("No detectable difference in diversity beyond the prompts")
    assert "most diverse" not in verdict


def test_metrics_page_opens_with_the_verdict_names_the_distance_and_folds_caveats():
    rng = np.random.default_rng(0)
    gen = [PairedSet(rng.standard_normal((120, 4)), rng.standard_normal((120, 6)) + k,
                     prompts=[f"g{i % 30}" for i in range(120)], name=f"set{k}") for k in range(2)]
    ref = PairedSet(rng.standard_normal((120, 4)), rng.standard_normal((120, 6)),
                    prompts=[f"r{i % 60}" for i in range(120)], name="ref")
    result = ReferenceMetrics(bootstrap=20, subsets=4, subset_size=50).fit(gen, ref)
    doc = render_report(result)
    static = _static(doc)
    first = _first_section(doc)
    verdict = unescape(re.search(r'class="pp-verdict"><b>(.*?)</b>', first).group(1))
    assert verdict.startswith("Closest to the reference by FD: set0")  # not FID: no Inception features
    assert "FID" not in verdict
    assert first.index("pp-verdict") < first.index("<table")
    # the caveats (intervals not calibrated here) are folded, grouped, and each said once
    caveats = re.search(r'<div class="pp-caveats">(.*?)</div>', first, re.S).group(1)
    assert "<details><summary>" in caveats and "caveat" in caveats
    for m in result.models:
        reason = m.interval_validity["reason"]
        assert static.count(unescape(reason)) == 1


def test_caveats_are_grouped_deduplicated_and_important_first():
    block = caveats_block([("note", "a subsample of 500 rows"), ("important", "not calibrated here"),
                           ("note", "a  subsample of 500 rows"), ("important", "not calibrated here")])
    assert block.count("<li>") == 2 and block.index("caveat") < block.index("note")
    assert severity("its intervals are not calibrated here") == "important"
    assert severity("the median rule chose 0.3") == "note"


def test_a_negative_share_is_marked_and_explained_once():
    import dataclasses

    from _report_data import digits_run

    result, _, _ = digits_run()
    ranking = [dict(r, share=abs(r["share"])) for r in result.prompt_ranking]
    plain = _static(render_report(dataclasses.replace(result, prompt_ranking=ranking)))
    assert "A negative share" not in plain and "†" not in plain
    ranking[1] = dict(ranking[1], share=-0.002)
    doc = _static(render_report(dataclasses.replace(result, prompt_ranking=ranking)))
    assert re.search(r"−0\.2%\s*†|-0\.2%\s*†", re.sub(r"<[^>]+>", "", doc))  # the row's share, marked
    assert doc.count("A negative share: on this prompt the other model shows more") == 1

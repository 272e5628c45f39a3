"""The headlines of the diversity and metrics pages use the pages' own tie-aware ranking: models that the
paired test or the intervals do not separate are named together, as tied, and exactly equal values are
named as a tie (the verdicts named the first of them as the single winner)."""

from __future__ import annotations

import dataclasses
import re
from html import unescape

import numpy as np
import pytest

from promptprism import PairedSet
from promptprism.methods.metrics import ReferenceMetrics
from promptprism.methods.rankings import diversity_rankings
from promptprism.methods.scendi import Scendi, compare
from promptprism.report import render_report


def _verdict(doc: str) -> str:
    return unescape(re.sub(r"<[^>]+>", "", re.search(r'class="pp-verdict"><b>(.*?)</b>', doc, re.S).group(1)))


@pytest.fixture(scope="module")
def diversity():
    rng = np.random.default_rng(0)
    which = np.arange(60) % 4
    bank = rng.standard_normal((4, 5))
    sets = [PairedSet(bank[which], rng.standard_normal((60, 7)) * (1 + k), prompts=[f"p{w}" for w in which],
                      name=f"m{k}") for k in range(3)]
    result = compare(sets, Scendi(n_clusters=1, top_k=2, seed=0, bootstrap=30), names=["m0", "m1", "m2"])
    assert [d for d in result.differences if d["metric"] == "scendi"]
    return result


def test_two_models_the_paired_test_does_not_separate_are_named_as_tied(diversity):
    order = sorted(diversity.models, key=lambda m: -m.scendi)
    top, second, last = (m.name for m in order)
    diffs = [dict(d, separated=d["metric"] != "scendi" or {d["a"], d["b"]} != {top, second})
             if d.get("metric") == "scendi" else d for d in diversity.differences]
    result = dataclasses.replace(diversity, differences=diffs)
    result = dataclasses.replace(result, rankings=diversity_rankings(result))
    assert [r["rank"] for r in result.rankings["scendi"]["rows"]] == [1, 1, 3]
    verdict = _verdict(render_report(result))
    assert verdict.startswith(f"{top} and {second} are the most diverse beyond their prompts, tied")
    assert f"{last} the least" in verdict
    assert f"{top} is the most diverse" not in verdict


def test_a_separated_winner_is_still_named_alone(diversity):
    diffs = [dict(d, separated=True) if d.get("metric") == "scendi" else d for d in diversity.differences]
    result = dataclasses.replace(diversity, differences=diffs)
    result = dataclasses.replace(result, rankings=diversity_rankings(result))
    top = max(result.models, key=lambda m: m.scendi).name
    assert _verdict(render_report(result)).startswith(f"{top} is the most diverse beyond its prompts")


@pytest.fixture(scope="module")
def metrics():
    rng = np.random.default_rng(0)
    gen = [PairedSet(rng.standard_normal((120, 4)), rng.standard_normal((120, 6)) + k,
                     prompts=[f"g{i % 30}" for i in range(120)], name=f"set{k}") for k in range(2)]
    ref = PairedSet(rng.standard_normal((120, 4)), rng.standard_normal((120, 6)),
                    prompts=[f"r{i % 60}" for i in range(120)], name="ref")
    return ReferenceMetrics(bootstrap=20, subsets=4, subset_size=50).fit(gen, ref)


def _with(result, **per_model):
    """``result`` with each model's fields replaced: field -> [(value, interval or None) per model]."""
    models = []
    for k, m in enumerate(result.models):
        intervals = dict(m.intervals or {})
        change = {}
        for key, rows in per_model.items():
            value, iv = rows[k]
            change[key] = value
            if iv is None:
                intervals.pop(key, None)
            else:
                intervals[key] = {"low": iv[0], "high": iv[1]}
        models.append(dataclasses.replace(m, intervals=intervals, **change))
    return dataclasses.replace(result, models=models)


def test_an_exact_tie_on_recall_is_named_as_a_tie(metrics):
    result = _with(metrics, recall=[(0.75, (0.55, 0.9)), (0.75, (0.55, 0.9))])
    verdict = _verdict(render_report(result))
    assert "highest recall: set0 and set1, tied (0.750 each)" in verdict


def test_overlapping_intervals_tie_and_separated_ones_do_not(metrics):
    result = _with(metrics, precision=[(0.9, (0.8, 0.95)), (0.85, (0.7, 0.9))],
                   recall=[(0.9, (0.85, 0.95)), (0.6, (0.5, 0.7))])
    verdict = _verdict(render_report(result))
    assert "highest precision: set0 and set1, tied within their intervals (set0 0.900 [0.8" in verdict
    assert "highest recall: set0 (0.900)" in verdict


def test_a_lead_without_an_interval_says_so(metrics):
    result = _with(metrics, fd=[(1.5, None), (2.5, None)])
    assert _verdict(render_report(result)).startswith(
        "Closest to the reference by FD: set0 (1.5, no interval)")

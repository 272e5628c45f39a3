"""Rankings with honest ties: models that no interval or paired test separates share a rank."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from promptprism.methods.rankings import diversity_rankings, regions_ranking
from promptprism.stats.ranking import intervals_separated, ranking, tied_ranks


def test_ranks_count_only_the_separated_models_above():
    values = [3.0, 2.9, 1.0, 0.5]
    sep = intervals_separated([2.5, 2.4, 0.8, 0.4], [3.5, 3.4, 1.2, 0.9])  # 0-1 overlap; 2-3 overlap
    assert tied_ranks(values, sep) == [1, 1, 3, 3]
    assert tied_ranks(values, sep, higher_is_better=False) == [3, 3, 1, 1]
    assert tied_ranks(values, np.zeros((4, 4), bool)) == [1, 1, 1, 1]  # nothing separated: one shared rank
    assert tied_ranks(values, ~np.eye(4, dtype=bool)) == [1, 2, 3, 4]


def test_a_chain_of_overlaps_is_said_in_words():
    """A beats C, B overlaps both: A and B share rank 1, C ranks 2, and the words say B and C are not
    separated."""
    sep = intervals_separated([2.0, 1.0, 0.0], [3.0, 2.5, 1.5])
    r = ranking(["A", "B", "C"], [2.5, 1.8, 0.7], sep, metric="vendi", basis="interval overlap")
    assert [(x["name"], x["rank"]) for x in r["rows"]] == [("A", 1), ("B", 1), ("C", 2)]
    assert "A and B share rank 1" in r["words"] and "C ranks 2" in r["words"]
    assert "C is not separated from B" in r["words"]


def test_diversity_rankings_prefer_the_paired_test_and_skip_bare_numbers():
    iv = lambda lo, hi: {"low": lo, "high": hi}  # noqa: E731
    models = [SimpleNamespace(name=n, scendi=s, vendi=v, rke=1.0, scendi_prompt=1.0, model_share=0.5,
                              intervals={"scendi": iv(s - 1, s + 1), "vendi": iv(v - 0.1, v + 0.1)})
              for n, s, v in (("a", 5.0, 9.0), ("b", 4.5, 8.0), ("c", 2.0, 8.05))]
    # the intervals of a and b overlap, but the paired bootstrap separates them
    diffs = [{"a": x, "b": y, "metric": "scendi", "separated": True, "method": "paired bootstrap"}
             for x, y in (("a", "b"), ("a", "c"), ("b", "c"))]
    out = diversity_rankings(SimpleNamespace(models=models, differences=diffs))
    assert set(out) == {"scendi", "vendi"}  # rke, scendi_prompt, model_share: no uncertainty, no ranking
    assert [x["rank"] for x in out["scendi"]["rows"]] == [1, 2, 3]
    assert out["scendi"]["basis"] == "paired bootstrap"
    assert [(x["name"], x["rank"]) for x in out["vendi"]["rows"]] == [("a", 1), ("c", 2), ("b", 2)]
    assert "c and b share rank 2" in out["vendi"]["words"]


def test_regions_ranking_by_cms_intervals():
    res = SimpleNamespace(names=["epoch10", "epoch20", "epoch30"], cms=[0.80, 0.90, 0.91],
                          intervals=[{"cms": {"low": lo, "high": hi}} for lo, hi in
                                     ((0.78, 0.82), (0.88, 0.92), (0.89, 0.93))])
    r = regions_ranking(res)
    assert [(x["name"], x["rank"]) for x in r["rows"]] == [("epoch30", 1), ("epoch20", 1), ("epoch10", 3)]
    assert regions_ranking(SimpleNamespace(names=["a", "b"], cms=[1.0, 2.0], intervals=[])) == {}

"""Verdicts per facet value for K models (a compare or diversity comparison) and for one model's Scendi
clusters (issue 43 item 2): the same ranking / cluster-vs-others verdict on each value's samples, planted
signs both ways, Holm over every test, and the cards listing them."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.data import PairedSet
from promptprism.methods.metrics import ClusterQuality, FacetRanking, FindingPreference
from promptprism.methods.metrics.findings import precision_scores
from promptprism.methods.metrics.findings_clusters import cluster_preference
from promptprism.methods.metrics.findings_facets import facet_preference
from test_quality_facets import FAMILY, PrefersGood, make

N = 144  # 12 prompts x 12 samples; rows 0-71 are family 1
CHECKPOINT = np.tile([0, 1], N // 2)  # alternate rows: 0 = old, 1 = new
FAMILY1 = np.arange(N) < 72
FINDINGS = [{"id": "family 1", "prompts": FAMILY[1]}, {"id": "family 2", "prompts": FAMILY[2]}]


def facet_of(*names: str) -> list[dict]:
    return [{"name": "checkpoint", "values": ["old", "new"], "rows": {n: CHECKPOINT.tolist() for n in names}}]


@pytest.mark.slow  # (over 0.5 s: the fast loop, -m 'not slow', stays under a minute)
def test_k_models_are_ranked_per_facet_value_with_both_signs():
    """A is wrong on its 'old' samples of family 1, B on its 'new' samples of family 2, C nowhere: on
    (family 1, old) A ranks last with B and C tied first, on (family 1, new) no model is separated; on
    (family 2, new) B ranks last, on (family 2, old) none; Holm over every pair test."""
    models = {"A": make("A", 1, bad=FAMILY1 & (CHECKPOINT == 0)),
              "B": make("B", 2, bad=~FAMILY1 & (CHECKPOINT == 1)), "C": make("C", 4)}
    real = make("real data", 3)
    record = FacetRanking(permutations=999, bootstrap=100).fit(FINDINGS, models, real,
                                                               facet_of("A", "B", "C"))
    ranks = {(e["id"], f["value"]): {r["name"]: r["rank"] for r in f["ranking"]["rows"]}
             for e in record["findings"] for f in e["facets"]}
    assert ranks[("family 1", "old")] == {"B": 1, "C": 1, "A": 3}
    assert set(ranks[("family 1", "new")].values()) == {1}
    assert ranks[("family 2", "new")] == {"A": 1, "C": 1, "B": 3}
    assert set(ranks[("family 2", "old")].values()) == {1}
    # 2 findings + "all prompts" + 4 values, 3 pairs each
    assert record["tests"] == 21 and all(e["facets_skipped"] == [] for e in record["findings"])
    cell = next(f for f in record["findings"][0]["facets"] if f["value"] == "old")
    assert cell["id"] == "family 1, checkpoint = old" and "A ranks 3" in cell["verdict"]
    rows = np.flatnonzero(FAMILY1 & (CHECKPOINT == 0))  # brute force: A's mean on the cell
    ref = real.output_embeddings[np.isin(real.prompts, FAMILY[1])]
    assert cell["models"]["A"]["mean"] == pytest.approx(
        precision_scores(models["A"].output_embeddings[rows], ref, 5).mean())
    # Holm over every test: each reported adjusted p is at least its raw p, and the family is the 21 tests
    tests = [t for e in [*record["findings"], record["overall"]] for t in e["pairs"]] + [
        t for e in record["findings"] for f in e["facets"] for t in f["pairs"]]
    assert len(tests) == 21 and all(t["p_adjusted"] >= t["p_value"] for t in tests)
    assert min(t["p_adjusted"] for t in tests) == pytest.approx(21 * min(t["p_value"] for t in tests))


def test_a_clusters_verdict_per_facet_value_shows_what_the_whole_cluster_hides():
    """On family 1 a cluster holds half of each prompt's samples; the cluster's 'old' samples and the other
    samples' 'new' ones are shifted away from real data. Over the whole cluster the two cancel (no verdict);
    per value, the other samples are closer on 'old' and the cluster on 'new' (both signs)."""
    in_cluster = FAMILY1 & (np.arange(N) % 4 < 2)  # rows 0, 1 of every 4: both checkpoints
    shifted = (in_cluster & (CHECKPOINT == 0)) | (FAMILY1 & ~in_cluster & (CHECKPOINT == 1))
    model = make("M", 1, bad=shifted)
    real = make("real data", 3)
    finding = {"id": "cluster 1", "rank": 1, "prompts": FAMILY[1],
               "rows": np.flatnonzero(in_cluster).tolist()}
    record = ClusterQuality(permutations=999, bootstrap=100).fit([finding], model, real, facet_of("M"))
    entry = record["findings"][0]
    assert entry["closer"] is None
    by = {f["value"]: f for f in entry["facets"]}
    assert by["old"]["closer"] == "other samples" and by["new"]["closer"] == "cluster 1"
    assert record["tests"] == 3 and by["old"]["id"] == "cluster 1, checkpoint = old"
    ref = real.output_embeddings[np.isin(real.prompts, FAMILY[1])]
    rows = np.flatnonzero(in_cluster & (CHECKPOINT == 1))  # brute force: the cluster's 'new' samples
    assert by["new"]["models"]["cluster 1"]["mean"] == pytest.approx(
        precision_scores(model.output_embeddings[rows], ref, 5).mean())
    assert by["new"]["models"]["cluster 1"]["n"] == rows.size == 18
    # the facet's rows under another name than the set's (the command keys them by the result's model name)
    again = ClusterQuality(permutations=999, bootstrap=100).fit([finding], model, real, facet_of("run 1"))
    assert [f["closer"] for f in again["findings"][0]["facets"]] == [by["old"]["closer"], by["new"]["closer"]]


def with_answers(s: PairedSet, bad: np.ndarray) -> PairedSet:
    return PairedSet(s.prompt_embeddings, s.output_embeddings, prompts=s.prompts, name=s.name,
                     outputs=["bad answer" if x else "good answer" for x in bad])


def test_the_judge_ranks_k_models_per_facet_value():
    """A answers badly on its 'old' samples of family 1: there the judge ranks A last (B = C first); on
    the other cells no model is separated; Holm over 3 pairs x (2 findings + 4 values)."""
    bad = FAMILY1 & (CHECKPOINT == 0)
    models = {"A": with_answers(make("A", 1), bad), "B": with_answers(make("B", 2), np.zeros(N, bool)),
              "C": with_answers(make("C", 4), np.zeros(N, bool))}
    record = facet_preference(FindingPreference(pairs=24), FINDINGS, models, PrefersGood(0.1),
                              facet_of("A", "B", "C"))
    ranks = {(e["id"], f["value"]): {r["name"]: r["rank"] for r in f["ranking"]["rows"]}
             for e in record["findings"] for f in e["facets"]}
    assert ranks[("family 1", "old")] == {"B": 1, "C": 1, "A": 3}
    for cell in (("family 1", "new"), ("family 2", "old"), ("family 2", "new")):
        assert set(ranks[cell].values()) == {1}, cell
    assert record["tests"] == 18


def test_the_judge_compares_a_clusters_samples_per_facet_value():
    """The cluster's 'old' answers are bad, the other samples' 'new' ones: the judge prefers the other
    samples on 'old' and the cluster on 'new'; 3 tests under Holm."""
    in_cluster = FAMILY1 & (np.arange(N) % 4 < 2)
    bad = (in_cluster & (CHECKPOINT == 0)) | (FAMILY1 & ~in_cluster & (CHECKPOINT == 1))
    model = with_answers(make("M", 1), bad)
    finding = {"id": "cluster 1", "rank": 1, "prompts": FAMILY[1],
               "rows": np.flatnonzero(in_cluster).tolist()}
    record = cluster_preference(FindingPreference(pairs=24), [finding], model, PrefersGood(0.1),
                                facet_of("M"))
    by = {f["value"]: f for f in record["findings"][0]["facets"]}
    assert by["old"]["preferred"] == "other samples" and by["new"]["preferred"] == "cluster 1"
    assert record["tests"] == 3


def test_the_cards_list_a_ranking_per_facet_value():
    from promptprism.report.descriptions import quality_block

    rows = [{"name": "B", "rank": 1, "not_separated_from": ["C"]}, {"name": "C", "rank": 1,
                                                                    "not_separated_from": ["B"]},
            {"name": "A", "rank": 3, "not_separated_from": []}]
    ranking = {"rows": rows, "words": "B and C share rank 1; A ranks 3"}
    models = {n: {"mean": 0.5, "n": 9, "interval": {"low": 0.4, "high": 0.6}} for n in "ABC"}
    entry = {"id": "A vs rest", "prompts": 6, "models": models, "ranking": ranking,
             "facets": [{"facet": "checkpoint", "value": "old", "models": models, "ranking": ranking}]}
    judged = {"id": "A vs rest", "prompts": 6, "ranking": ranking, "comparisons": [],
              "facets": [{"facet": "checkpoint", "value": "old", "ranking": ranking, "comparisons": []}]}

    class Result:
        quality = {"closeness": "precision", "findings": [entry], "judge": {"findings": [judged]}}

    html = str(quality_block(Result(), "A vs rest"))
    assert "checkpoint = old: closer <strong>B = C &gt; A</strong>" in html
    assert "checkpoint = old: judge <strong>B = C &gt; A</strong>" in html


@pytest.mark.slow
def test_same_quality_k_models_get_no_verdict_on_any_finding_or_facet_value_over_200_sets():
    """Three models right everywhere, a random two-valued facet, one finding: the share of sets where any
    pair test of the finding, "all prompts" or a facet value separates two models (Holm over 12 tests;
    499 permutations, so the smallest p, 0.002, survives Holm: without the facet tests in the family a
    raw 0.05 would reject far more often) stays within alpha + 2 s.e."""
    alpha, runs, hits = 0.05, 200, 0
    for r in range(runs):
        rng = np.random.default_rng(r)
        models = {n: make(n, 10 * r + k, per_prompt=6) for k, n in enumerate("ABC")}
        real = make("real data", 10 * r + 7, per_prompt=6)
        facets = [{"name": "f", "values": ["x", "y"],
                   "rows": {n: rng.integers(0, 2, 72).tolist() for n in "ABC"}}]
        record = FacetRanking(permutations=499, bootstrap=50, seed=r).fit(FINDINGS[:1], models, real, facets)
        tests = [t for e in [*record["findings"], record["overall"]] for t in e["pairs"]] + [
            t for e in record["findings"] for f in e["facets"] for t in f["pairs"]]
        assert record["tests"] == len(tests) == 12
        hits += any(t["p_adjusted"] <= alpha for t in tests)
    assert hits / runs <= alpha + 2 * np.sqrt(alpha * (1 - alpha) / runs), hits


def test_the_cards_show_an_untested_pair_and_finding_without_failing():
    """A pair with no prompt both models hold is not tested (p None): the facet panel leaves it out of the
    separated pairs and a two-model finding without a test reads "not tested", not "neither"."""
    from promptprism.report.descriptions import facet_verdicts, quality_block

    rows = [{"name": n, "rank": 1, "not_separated_from": [m for m in "AB" if m != n]} for n in "AB"]
    ranking = {"rows": rows, "words": "A and B share rank 1"}
    models = {n: {"mean": 0.5, "n": 9, "interval": {"low": 0.4, "high": 0.6}} for n in "AB"}
    untested = {"a": "A", "b": "B", "difference": None, "p_value": None, "p_adjusted": None}
    cell = {"facet": "checkpoint", "value": "old", "models": models, "ranking": ranking, "pairs": [untested]}
    entry = {"id": "f", "prompts": 2, "models": models, "ranking": ranking, "pairs": [untested],
             "facets": [cell]}

    class Result:
        quality = {"closeness": "precision", "alpha": 0.05, "findings": [entry]}

    assert facet_verdicts(Result()) == {("checkpoint", "old"): ["f: closer no model separated"]}
    two = {"id": "g", "prompts": 2, "models": models, "p_value": None, "p_adjusted": None, "closer": None}

    class Two:
        quality = {"closeness": "precision", "findings": [two]}

    assert "Closer to real data: not tested" in str(quality_block(Two(), "g"))

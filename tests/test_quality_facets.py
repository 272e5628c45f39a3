"""Verdicts per facet value (issue 43 item 2, "per facet value"): a finding's prompts restricted further to
the samples of one value of a manifest column; planted signs, brute force, calibration (Holm over every
test); the command with ``--facet`` is in test_quality_real_llm.py."""

from __future__ import annotations

import numpy as np
import pytest

from promptprism.data import PairedSet
from promptprism.methods.metrics import FacetQuality
from promptprism.methods.metrics.findings import precision_scores

FAMILY = {f: [f"family {f} prompt {q}" for q in range(6)] for f in (1, 2)}
CENTRES = np.random.default_rng(123).normal(size=(12, 6))


def make(name: str, seed: int, bad: np.ndarray | None = None, per_prompt: int = 12) -> PairedSet:
    """12 prompts of two families, ``per_prompt`` samples each, right where real data lies except the
    ``bad`` rows (shifted away)."""
    rng = np.random.default_rng(seed)
    idx = np.repeat(np.arange(12), per_prompt)
    oe = 0.3 * CENTRES[idx] + 0.15 * rng.normal(size=(idx.size, 6))
    if bad is not None:
        oe[bad, 0] += 3.0
    return PairedSet(2 * np.eye(12)[idx] + 0.05 * rng.normal(size=(idx.size, 12)), oe,
                     prompts=[f"family {1 + i // 6} prompt {i % 6}" for i in idx], name=name)


def _brute(gen, ref, k=5):
    d_rr = np.linalg.norm(ref[:, None] - ref[None], axis=2)
    radii = np.sort(d_rr, axis=1)[:, k]
    return (np.linalg.norm(gen[:, None] - ref[None], axis=2) < radii[None]).any(axis=1).astype(float)


def test_each_facet_value_gets_its_own_verdict_with_the_right_sign():
    """A's samples of checkpoint 'old' are wrong on family 1, its 'new' ones right; B is right everywhere:
    on family 1, B is closer for 'old', neither for 'new'; on family 2, neither for either value."""
    n = 144
    checkpoint = np.tile([0, 1], n // 2)  # alternate rows: 0 = old, 1 = new
    family1 = np.arange(n) < 72
    a = make("A", 1, bad=family1 & (checkpoint == 0))
    b, real = make("B", 2), make("real data", 3)
    facets = [{"name": "checkpoint", "values": ["old", "new"],
               "rows": {"A": checkpoint.tolist(), "B": checkpoint.tolist()}}]
    findings = [{"id": "family 1", "prompts": FAMILY[1]}, {"id": "family 2", "prompts": FAMILY[2]}]
    record = FacetQuality(permutations=999, bootstrap=100).fit(findings, {"A": a, "B": b}, real, facets)
    by = {(e["id"], f["value"]): f for e in record["findings"] for f in e["facets"]}
    assert by[("family 1", "old")]["closer"] == "B" and by[("family 1", "new")]["closer"] is None
    assert by[("family 2", "old")]["closer"] is None and by[("family 2", "new")]["closer"] is None
    assert record["findings"][0]["closer"] == "B" and record["tests"] == 6
    # brute force: A's mean on (family 1, new) is the precision indicator of those rows against the real
    # samples of family 1
    ref = real.output_embeddings[np.isin(real.prompts, FAMILY[1])]
    rows = np.flatnonzero(family1 & (checkpoint == 1))
    assert by[("family 1", "new")]["models"]["A"]["mean"] == pytest.approx(
        _brute(a.output_embeddings[rows], ref).mean())
    assert by[("family 1", "old")]["models"]["A"]["mean"] == pytest.approx(
        precision_scores(a.output_embeddings[family1 & (checkpoint == 0)], ref, 5).mean())
    assert "checkpoint = old" in by[("family 1", "old")]["verdict"]


@pytest.mark.slow
def test_same_quality_models_get_no_verdict_on_any_finding_or_facet_value_over_200_sets():
    """Both models right everywhere, a random two-valued facet: the share of sets with any verdict (Holm
    over the 2 findings and their 4 facet values) stays within alpha + 2 s.e. of 200."""
    alpha, runs, hits = 0.05, 200, 0
    findings = [{"id": "family 1", "prompts": FAMILY[1]}, {"id": "family 2", "prompts": FAMILY[2]}]
    for r in range(runs):
        rng = np.random.default_rng(r)
        a, b, real = make("A", 10 * r + 1, per_prompt=8), make("B", 10 * r + 2, per_prompt=8), make(
            "real data", 10 * r + 3, per_prompt=8)
        facets = [{"name": "f", "values": ["x", "y"], "rows": {m: rng.integers(0, 2, 96).tolist()
                                                               for m in "AB"}}]
        record = FacetQuality(permutations=199, bootstrap=50, seed=r).fit(findings, {"A": a, "B": b}, real,
                                                                          facets)
        called = [e["closer"] for e in record["findings"]] + [f["closer"] for e in record["findings"]
                                                               for f in e["facets"]]
        hits += any(c is not None for c in called)
    assert hits / runs <= alpha + 2 * np.sqrt(alpha * (1 - alpha) / runs), hits


def test_the_mode_card_lists_each_facet_values_verdict():
    from promptprism.report.descriptions import quality_block

    models = {"test": {"mean": 0.2, "n": 5, "interval": {"low": 0.1, "high": 0.3}},
              "reference": {"mean": 0.8, "n": 5, "interval": {"low": 0.7, "high": 0.9}}}
    entry = {"id": "mode +1", "prompts": 5, "closer": "reference", "p_adjusted": 0.01, "models": models,
             "facets": [{"facet": "topic", "value": "history", "closer": None, "p_adjusted": 0.2,
                         "models": models}]}

    class Result:
        quality = {"closeness": "gold", "findings": [entry]}

    html = str(quality_block(Result(), "mode +1"))
    assert "topic = history: closer <strong>neither</strong>" in html and "p = 0.2" in html


class PrefersGood:
    """A judge: the answer without 'bad' wins, a tie between two alike; always 'first' with probability
    ``bias`` (position bias, cancelled by asking both orders)."""

    model = "fake"

    def __init__(self, bias: float = 0.0):
        self.rng, self.bias = np.random.default_rng(0), bias

    def chat(self, messages):
        text = messages[0]["content"]
        first = "bad" in text.split('First answer: """', 1)[1].split('"""', 1)[0]
        second = "bad" in text.split('Second answer: """', 1)[1].split('"""', 1)[0]
        if self.rng.random() < self.bias:
            return "first"
        return "tie" if first == second else "second" if first else "first"


def test_the_judge_verdict_per_facet_value_has_the_right_sign():
    """A answers badly on its 'old' samples of family 1: there the judge prefers B; on 'new' it prefers
    neither (ties), and on family 2 neither; Holm over the 2 findings and their 4 values."""
    from promptprism.methods.metrics import FindingPreference
    from promptprism.methods.metrics.findings_facets import facet_preference

    n = 144
    checkpoint = np.tile([0, 1], n // 2)
    bad = (np.arange(n) < 72) & (checkpoint == 0)
    a, b = make("A", 1), make("B", 2)
    a = PairedSet(a.prompt_embeddings, a.output_embeddings, prompts=a.prompts, name="A",
                  outputs=["bad answer" if x else "good answer" for x in bad])
    b = PairedSet(b.prompt_embeddings, b.output_embeddings, prompts=b.prompts, name="B",
                  outputs=["good answer"] * n)
    facets = [{"name": "checkpoint", "values": ["old", "new"],
               "rows": {"A": checkpoint.tolist(), "B": checkpoint.tolist()}}]
    findings = [{"id": "family 1", "prompts": FAMILY[1]}, {"id": "family 2", "prompts": FAMILY[2]}]
    record = facet_preference(FindingPreference(pairs=12), findings, {"A": a, "B": b}, PrefersGood(0.2),
                              facets)
    by = {(e["id"], f["value"]): f for e in record["findings"] for f in e["facets"]}
    assert by[("family 1", "old")]["preferred"] == "B" and by[("family 1", "new")]["preferred"] is None
    assert by[("family 2", "old")]["preferred"] is None and by[("family 2", "new")]["preferred"] is None
    assert record["tests"] == 6 and "checkpoint = old" in by[("family 1", "old")]["verdict"]
    assert by[("family 1", "old")]["comparisons"][0]["losses"] >= 9  # B wins unless the bias ties a pair


def test_the_mode_card_lists_the_judges_verdict_per_facet_value():
    from promptprism.report.descriptions import quality_block

    c = {"a": "test", "b": "reference", "win_rate": 0.1, "pairs": 10, "wins": 1, "losses": 9, "ties": 0,
         "cancelled": 0, "unreadable": 0, "p_adjusted": 0.04, "interval": {"low": 0.0, "high": 0.4}}
    judged = {"id": "mode +1", "preferred": "reference", "comparisons": [c],
              "facets": [{"facet": "topic", "value": "history", "preferred": "reference",
                          "comparisons": [c]}]}

    class Result:
        quality = {"judge": {"findings": [judged]}}

    html = str(quality_block(Result(), "mode +1"))
    assert "topic = history: judge prefers <strong>reference</strong>" in html

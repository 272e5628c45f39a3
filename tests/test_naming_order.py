"""A judge's order effects cannot pass for a difference (issue 42, item 1).

Before, every candidate's held-out samples went to the judge side A first, then side B: a judge whose
yes-rate drifts with the call count (independent of the side) said "yes" more often to A than to B and was
accepted in most runs. Now both sides are judged in one seeded random interleaving
(:func:`promptprism.methods.naming.contrast.judged_order`, recorded per candidate): given the judge's answers,
the sides' positions are a uniformly random draw, so Fisher's test and the rank test stay exact. Fake
judges, no network: yes/no judges whose yes-rate falls or rises along each candidate's calls, and a scoring
judge whose score rises with the call count.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from promptprism.methods.naming import NamingOptions, name_contrast, separation
from promptprism.methods.naming.contrast import judged_order

ALPHA = 0.05


class DriftingJudge:
    """Yes with probability start + (end - start) (i mod period) / (period - 1) at its i-th call, whatever the
    text (one call per text, as a chat judge makes)."""

    name = "drifting"

    def __init__(self, start: float, end: float, period: int, seed: int):
        self.start, self.end, self.period = start, end, period
        self.rng, self.calls = np.random.default_rng(seed), 0

    def decide(self, description, texts, *, shown_a, shown_b):
        out = []
        for _ in texts:
            frac = (self.calls % self.period) / (self.period - 1)
            out.append(bool(self.rng.random() < self.start + (self.end - self.start) * frac))
            self.calls += 1
        return out


class DriftingScorer:
    """A score that rises with the call count, plus noise: nothing about the text."""

    name = "drifting-scores"

    def __init__(self, seed: int):
        self.rng, self.calls = np.random.default_rng(seed), 0

    def score(self, description, texts, *, shown_a, shown_b):
        out = [0.05 * (self.calls + i) + self.rng.normal() for i in range(len(texts))]
        self.calls += len(texts)
        return out


class Names:
    model = "fixed"

    def propose(self, shown_a, shown_b, *, count=3):
        return ["x one", "x two", "x three"][:count]


def _pools(n: int = 60):
    from promptprism.methods.naming import Sample

    a = [Sample(f"q{i % 10}", f"answer a {i}", i) for i in range(n)]
    b = [Sample(f"q{i % 10}", f"answer b {i}", i) for i in range(n)]
    return a, b


def _bound(runs: int) -> float:
    return ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / runs)


def test_judged_order_interleaves_both_sides_and_is_recorded():
    order = judged_order(30, 30, seed=4)
    assert sorted(order.tolist()) == list(range(60))
    np.testing.assert_array_equal(order, judged_order(30, 30, seed=4))
    assert not np.array_equal(order, judged_order(30, 30, seed=5))
    sides = "".join("A" if i < 30 else "B" for i in order)
    assert sides.count("A") == 30 and sides[:30].count("A") not in (0, 30)
    a, b = _pools()
    seen = []

    class Recorder:
        name = "recorder"

        def decide(self, description, texts, *, shown_a, shown_b):
            seen.append(list(texts))
            return [t.startswith("answer a") for t in texts]  # (a perfect judge)

    out = name_contrast(a, b, namer=Names(), judge=Recorder(), options=NamingOptions(seed=2, max_held_out=30))
    assert out.status == "named" and len(seen) == 3  # one call per candidate, both sides in it
    for texts, cand in zip(seen, out.candidates, strict=True):
        got = "".join("A" if t.startswith("answer a") else "B" for t in texts)
        assert got == cand["judged_order"]["sides"] and got.count("A") == 30
        assert cand["matches_a"] == 30 and cand["matches_b"] == 0  # (answers put back with their texts)
        assert cand["judged_order"]["seed"] == 2 + 4 + 7919 * seen.index(texts)


@pytest.mark.slow  # (about a second or more: out of the quick loop)
def test_a_judge_drifting_with_its_call_count_is_accepted_at_most_at_alpha():
    """400 runs (200 with the yes-rate falling 0.9 -> 0.1 along each candidate's 60 calls, 200 rising):
    a name is accepted in at most alpha + 2 s.e. of them. The same judges fed side A first, then side B
    (the former order) reject H0 for the first candidate in most falling runs: the drift is real."""
    a, b = _pools()
    accepted, former = {"falling": 0, "rising": 0}, 0
    for r in range(400):
        kind = ("falling", "rising")[r % 2]
        ends = (0.9, 0.1) if kind == "falling" else (0.1, 0.9)
        out = name_contrast(a, b, namer=Names(), judge=DriftingJudge(*ends, period=60, seed=r),
                            options=NamingOptions(seed=r, max_held_out=30))
        accepted[kind] += out.status == "named"
        if kind == "falling":
            j = DriftingJudge(*ends, period=60, seed=r)
            former += separation(j.decide("x", [""] * 30, shown_a=(), shown_b=()),
                                 j.decide("x", [""] * 30, shown_a=(), shown_b=())).p_value < ALPHA
    rate = sum(accepted.values()) / 400
    print(f"drifting judges: accepted in {rate:.3f} of 400 runs ({accepted}); fed A then B, the falling "
          f"judge's first candidate passed in {former}/200")
    assert rate <= _bound(400), accepted
    assert former >= 150


@pytest.mark.slow  # (about a second or more: out of the quick loop)
def test_a_scorer_drifting_with_its_call_count_is_accepted_at_most_at_alpha():
    """200 runs of a scoring judge whose score rises with the call count: the rank test accepts a name in
    at most alpha + 2 s.e. of them."""
    a, b = _pools()
    accepted = sum(name_contrast(a, b, namer=Names(), judge=DriftingScorer(seed=r),
                                 options=NamingOptions(seed=r, max_held_out=30, permutations=999)
                                 ).status == "named" for r in range(200))
    print(f"drifting scorer: accepted in {accepted}/200 runs")
    assert accepted / 200 <= _bound(200), accepted

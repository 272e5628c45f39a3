"""Which model a judge prefers on each finding (issue 43 item 2): the Wilson interval and the sign test
against their definitions, the pair drawing, calibration under a position-biased random judge, power, and the
cancellation of a pure position bias by asking both orders."""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np
import pytest

from promptprism.errors import OptionError
from promptprism.methods.metrics import FindingPreference
from promptprism.methods.metrics.judge import draw_pairs, pair_outcome, parse_preference
from promptprism.stats.preference import sign_test, wilson_interval

FIRST = re.compile(r'First answer: """(\w)')


class FakeJudge:
    """Answers from which model wrote the first answer (outputs start with the model's letter): a tie with
    probability ``tie``; else 'first' with probability ``first_bias`` (position bias, whatever the content);
    else A's answer with probability ``prefer_a``."""

    model = "fake"

    def __init__(self, seed: int, prefer_a: float = 0.5, first_bias: float = 0.0, tie: float = 0.0,
                 always: str | None = None):
        self.rng, self.prefer_a, self.first_bias, self.tie, self.always = (np.random.default_rng(seed),
                                                                           prefer_a, first_bias, tie, always)
        self.calls = 0

    def chat(self, messages):
        self.calls += 1
        if self.always:
            return self.always
        first_is_a = FIRST.search(messages[0]["content"]).group(1) == "A"
        u = self.rng.random()
        if u < self.tie:
            return "Tie."
        if u < self.tie + self.first_bias:
            return "first"
        picks_a = self.rng.random() < self.prefer_a
        return "First" if picks_a == first_is_a else "second"


def _models(prompts: int = 12, per_prompt: int = 3):
    names = [f"question {k}" for k in range(prompts) for _ in range(per_prompt)]
    return {m: SimpleNamespace(prompts=names, outputs=[f"{m} answer {i}" for i in range(len(names))])
            for m in ("A", "B")}, sorted(set(names))


def test_wilson_interval_is_the_formula_and_scipy():
    stats = pytest.importorskip("scipy.stats")
    for x, n in [(0, 10), (3, 10), (10, 10), (17, 40), (250, 400)]:
        lo, hi = wilson_interval(x, n, 0.95)
        ref = stats.binomtest(x, n).proportion_ci(0.95, method="wilson")
        assert lo == pytest.approx(ref.low, abs=1e-9) and hi == pytest.approx(ref.high, abs=1e-9)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    lo, hi = wilson_interval(5, 10, 0.9)  # symmetric about 1/2 at p = 1/2
    assert lo == pytest.approx(1 - hi)


def test_sign_test_is_the_exact_binomial_test():
    stats = pytest.importorskip("scipy.stats")
    for w, lost in [(0, 0), (5, 5), (9, 1), (1, 9), (0, 7), (30, 18), (120, 90)]:
        d = w + lost
        brute = min(1.0, 2 * sum(math.comb(d, i) for i in range(min(w, lost) + 1)) / 2 ** d)
        assert sign_test(w, lost) == pytest.approx(brute, rel=1e-12)
        if d:
            assert sign_test(w, lost) == pytest.approx(stats.binomtest(w, d).pvalue, rel=1e-9)
    assert sign_test(0, 0) == 1.0


def test_parsing_and_outcomes():
    assert parse_preference("First.") == "first" and parse_preference("**second**") == "second"
    assert parse_preference("It's a tie") == "tie" and parse_preference("Answer 2") == "second"
    with pytest.raises(ValueError):
        parse_preference("I cannot say")
    # (answer with A first, answer with B first)
    assert pair_outcome("first", "second") == "a" and pair_outcome("second", "first") == "b"
    assert pair_outcome("first", "first") == "tie" and pair_outcome("first", "tie") == "a"


def test_pairs_are_disjoint_seeded_and_spread_over_prompts():
    models, prompts = _models(prompts=5, per_prompt=3)
    pa = models["A"].prompts
    drawn = draw_pairs(pa, pa, prompts[:4], pairs=6, rng=np.random.default_rng(0))
    assert drawn == draw_pairs(pa, pa, prompts[:4], pairs=6, rng=np.random.default_rng(0))
    assert len(drawn) == 6 and len({p for p, _, _ in drawn}) == 4  # one per prompt before a second
    assert len({i for _, i, _ in drawn}) == 6 and len({j for _, _, j in drawn}) == 6  # no output twice
    assert all(pa[i] == p == pa[j] for p, i, j in drawn)
    assert len(draw_pairs(pa, pa, prompts[:4], pairs=100, rng=np.random.default_rng(1))) == 12  # all of them


def test_a_pure_position_bias_cancels_to_exactly_one_half():
    """A judge always answering 'first': both orders ask, every pair is a tie, cancelled, win rate 0.5."""
    models, prompts = _models()
    judge = FakeJudge(0, always="first")
    record = FindingPreference(pairs=12, seed=3).fit([{"id": "f", "prompts": prompts}], models, judge)
    c = record["findings"][0]["comparisons"][0]
    assert c["win_rate"] == 0.5 and c["ties"] == c["cancelled"] == c["pairs"] == 12
    assert c["wins"] == c["losses"] == 0 and c["p_value"] == 1.0 and c["first_position_share"] == 1.0
    assert record["findings"][0]["preferred"] is None and judge.calls == 24
    assert "12 cancelled by position" in record["findings"][0]["verdict"]
    assert record["seed"] == 3 and record["order"] == "both orders per pair"


def _runs(runs: int, **judge) -> tuple[float, float, float]:
    """(share of runs whose Wilson interval covers 0.5, share rejecting at 0.05, share preferring A) over
    seeded runs of 30 pairs."""
    models, prompts = _models(prompts=15, per_prompt=2)
    covered = rejected = for_a = 0
    for r in range(runs):
        record = FindingPreference(pairs=30, seed=r).fit([{"id": "f", "prompts": prompts}], models,
                                                        FakeJudge(10_000 + r, **judge))
        c = record["findings"][0]["comparisons"][0]
        covered += c["interval"]["low"] <= 0.5 <= c["interval"]["high"]
        rejected += c["p_value"] <= 0.05
        for_a += c["preferred"] == "A"
    return covered / runs, rejected / runs, for_a / runs


def test_a_random_judge_with_position_bias_is_calibrated():
    """No preference, 30 % 'first' whatever the content, 10 % ties: over 200 seeded runs the sign test
    rejects within alpha + 2 s.e. and the interval covers 0.5 at least at its level - 2 s.e."""
    runs = 200
    covered, rejected, _ = _runs(runs, prefer_a=0.5, first_bias=0.3, tie=0.1)
    se = math.sqrt(0.05 * 0.95 / runs)
    assert rejected <= 0.05 + 2 * se, rejected
    assert covered >= 0.95 - 2 * se, covered


def test_a_judge_preferring_one_side_is_detected():
    """A judge picking A's answer 75 % of the time: found in >= 90 % of 200 runs of 30 pairs, always in A's
    favour (measured: 0.965; with a 20 % position bias on top, 0.905)."""
    _, rejected, for_a = _runs(200, prefer_a=0.75)
    assert for_a >= 0.9 and rejected == for_a, (rejected, for_a)


def test_three_models_are_ranked_with_ties():
    """A better than B and C, B and C alike: A ranks 1, B and C share rank 2."""
    names = [f"q{k}" for k in range(20) for _ in range(2)]
    models = {m: SimpleNamespace(prompts=names, outputs=[f"{m} {i}" for i in range(len(names))])
              for m in ("A", "B", "C")}

    class Prefers:
        model = "fake"

        def chat(self, messages):
            first = FIRST.search(messages[0]["content"]).group(1)
            second = re.search(r'Second answer: """(\w)', messages[0]["content"]).group(1)
            if "A" in (first, second):
                return "first" if first == "A" else "second"
            return "tie"

    record = FindingPreference(pairs=25, seed=0).fit([{"id": "f", "prompts": sorted(set(names))}], models,
                                                     Prefers())
    rows = {r["name"]: r["rank"] for r in record["findings"][0]["ranking"]["rows"]}
    assert rows == {"A": 1, "B": 2, "C": 2} and record["findings"][0]["preferred"] == "A"


def test_bad_options_are_one_clear_error():
    with pytest.raises(OptionError, match="rubric"):
        FindingPreference(rubric="  ")
    with pytest.raises(OptionError, match="pairs"):
        FindingPreference(pairs=0)


def test_the_one_sided_sign_test_is_scipys_binomial_test():
    """compcon's one-sided sign test (McNemar's exact) is stats.preference.sign_test(alternative='greater'),
    equal to scipy's binomtest; naming's Wilson interval is stats.preference.wilson_interval, scipy's."""
    stats = pytest.importorskip("scipy.stats")
    from promptprism.methods.compcon.verify import sign_test as compcon_sign_test

    for a, b in [(0, 0), (0, 5), (3, 3), (7, 2), (20, 4), (1, 30)]:
        ref = 1.0 if a + b == 0 else stats.binomtest(a, a + b, 0.5, alternative="greater").pvalue
        assert sign_test(a, b, alternative="greater") == pytest.approx(ref, rel=1e-12, abs=1e-300)
        assert compcon_sign_test(a, b) == sign_test(a, b, alternative="greater")
    with pytest.raises(ValueError, match="alternative"):
        sign_test(1, 2, alternative="less")

"""Name one contrast: side A's samples against side B's, candidates proposed on one part, tested on the rest.

A *contrast* is two pools of (prompt, output) samples: A, where a finding lives (a PromptSplit mode's
favoured set on the mode's prompts, or a Scendi cluster's samples), and B, what it is compared with (the other
set on the same prompts). :func:`name_contrast` splits each pool (seeded) into a part shown to the namer and a
held-out part, asks the namer for candidates, has the judge decide on every held-out sample, and keeps the
best candidate whose Holm-adjusted p-value is below ``alpha`` (:mod:`.verify`). The judge sees the held-out
samples of both sides in one seeded random interleaving (:func:`judged_order`, recorded per candidate as
``judged_order``), so that an order effect cannot pass for a difference. The test follows what the
judge returns: yes/no decisions (``judge.decide``) get Fisher's exact test, scores (``judge.score``) the
Mann-Whitney rank test with a permutation p-value. When none passes, the finding gets no name: "no
description held up".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import ClassVar

import numpy as np

from ..._params import POSITIVE_INT, PROBABILITY, SEED, Estimator, between
from ...array_ops import sorted_subsample
from ...errors import OptionError
from ...llm.conversation import ChatModel, MalformedAnswerError
from ...stats.two_sample import holm
from .judges import Judge, Namer, as_namer
from .verify import held_out_split, rank_separation, separation

NAMED, REJECTED, TOO_FEW, FAILED = ("named", "no description held up", "too few held-out samples",
                                    "namer failed")


@dataclass(frozen=True)
class Sample:
    """One (prompt, output) of a pool; ``index`` is its row in its set."""

    prompt: str
    output: str
    index: int


@dataclass(frozen=True)
class NamingOptions(Estimator):
    """How a contrast is named and tested (every field is recorded in result.json); ``fit(pool_a, pool_b,
    namer=, judge=)`` names one contrast with them (:func:`name_contrast`). Checked when made (declared in
    ``_parameter_constraints``), never changed."""

    candidates: int = 3  #: descriptions asked of the namer
    shown_fraction: float = 0.4  #: share of each pool shown to the namer; the rest is held out
    max_held_out: int = 40  #: held-out samples judged per side (seeded subsample above)
    min_held_out: int = 5  #: fewer held-out samples on a side: no name is tested
    alpha: float = 0.05  #: family-wise level over the candidates (Holm)
    seed: int = 0
    permutations: int = 9999  #: relabellings of the rank test (scoring judges)

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "candidates": [POSITIVE_INT], "shown_fraction": [PROBABILITY], "max_held_out": [POSITIVE_INT],
        "min_held_out": [POSITIVE_INT], "alpha": [between(0.0, 1.0)], "seed": [SEED],
        "permutations": [POSITIVE_INT]}

    def _check_together(self) -> None:
        if self.min_held_out > self.max_held_out:  # (max_held_out is no option of the command line)
            raise OptionError(f"min_held_out must be at most {self.max_held_out}, the held-out samples "
                              f"judged per side, got {self.min_held_out}", parameter="min_held_out")

    def fit(self, pool_a: Sequence[Sample], pool_b: Sequence[Sample], *, namer: Namer | ChatModel,
            judge: Judge) -> ContrastName:
        """The name of what ``pool_a`` does that ``pool_b`` doesn't, tested on held-out samples:
        :func:`name_contrast` with these options."""
        return name_contrast(pool_a, pool_b, namer=namer, judge=judge, options=self)


@dataclass
class ContrastName:
    """The outcome of naming one contrast."""

    status: str  #: 'named', 'no description held up', 'too few held-out samples' or 'namer failed'
    name: str | None = None
    accuracy: float | None = None  #: held-out accuracy of yes/no decisions, or the AUC of scores
    interval: tuple[float, float] | None = None
    measure: str = "accuracy"  #: what ``accuracy`` is: 'accuracy' (yes/no judge) or 'auc' (scoring judge)
    p_value: float | None = None  #: Holm-adjusted, of the kept name
    candidates: list[dict] = field(default_factory=list)  #: every candidate with its test (rejected too)
    n_shown: tuple[int, int] = (0, 0)
    n_held_out: tuple[int, int] = (0, 0)
    note: str | None = None

    def to_dict(self) -> dict:
        """JSON-ready."""
        return asdict(self)


def _cap(idx: np.ndarray, cap: int, seed: int) -> np.ndarray:
    if idx.size <= cap:
        return idx
    return sorted_subsample(idx, cap, np.random.default_rng(seed))


def judged_order(n_a: int, n_b: int, seed: int) -> np.ndarray:
    """The order in which the judge sees the held-out texts: a seeded random interleaving of side A's
    ``n_a`` (indices 0..n_a-1) and side B's ``n_b`` (n_a..n_a+n_b-1). An order effect of the judge (a
    yes-rate or a score drifting with the call count, a cache warming up) then falls on both sides alike:
    given the judge's answers, the sides' positions are a uniformly random draw, so Fisher's test (and the
    rank test) stay exact for a judge whose answers do not depend on the side."""
    return np.random.default_rng([int(seed), 1]).permutation(n_a + n_b)


def held_out_test(judge: Judge, description: str, held_a: list[str], held_b: list[str],
                  shown_a: Sequence[Sample], shown_b: Sequence[Sample], *, seed: int, permutations: int):
    """(the judge's separation of the held-out sides for one description, the sides in the order judged:
    a string of 'A' and 'B'). Both sides go to the judge in one seeded random interleaving
    (:func:`judged_order`); the rank test of its scores when it scores (``judge.score``), else Fisher's test
    of its yes/no decisions."""
    how = {"shown_a": [s.output for s in shown_a], "shown_b": [s.output for s in shown_b]}
    texts, n_a = [*held_a, *held_b], len(held_a)
    order = judged_order(n_a, len(held_b), seed)
    ask = judge.score if hasattr(judge, "score") else judge.decide
    answers = list(ask(description, [texts[i] for i in order], **how))
    if len(answers) != len(texts):
        raise OptionError(f"judge: {len(answers)} answers for {len(texts)} texts (one per text expected)")
    back = [None] * len(texts)  # (each answer back at its text's place: A's first, then B's)
    for position, i in enumerate(order):
        back[i] = answers[position]
    sides = "".join("A" if i < n_a else "B" for i in order)
    if hasattr(judge, "score"):
        return rank_separation(back[:n_a], back[n_a:], seed=seed, permutations=permutations), sides
    return separation(back[:n_a], back[n_a:]), sides


def name_contrast(pool_a: Sequence[Sample], pool_b: Sequence[Sample], *, namer: Namer | ChatModel,
                  judge: Judge, options: NamingOptions = NamingOptions()) -> ContrastName:
    """Propose names for what A does that B doesn't on the shown samples; keep one only if it separates the
    held-out samples (:func:`held_out_test`, Holm over the candidates, at ``options.alpha``)."""
    o = options
    shown_ia, held_ia = held_out_split(len(pool_a), o.shown_fraction, o.seed)
    shown_ib, held_ib = held_out_split(len(pool_b), o.shown_fraction, o.seed + 1)
    held_ia, held_ib = _cap(held_ia, o.max_held_out, o.seed + 2), _cap(held_ib, o.max_held_out, o.seed + 3)
    shown_a, shown_b = [pool_a[i] for i in shown_ia], [pool_b[i] for i in shown_ib]
    held_a, held_b = [pool_a[i].output for i in held_ia], [pool_b[i].output for i in held_ib]
    result = ContrastName(status=TOO_FEW, n_shown=(len(shown_a), len(shown_b)),
                          n_held_out=(len(held_a), len(held_b)))
    if min(len(held_a), len(held_b)) < o.min_held_out or not shown_a:
        result.note = (f"{len(held_a)} held-out samples of this side and {len(held_b)} of the other; at "
                       f"least {o.min_held_out} of each are needed to test a name")
        return result
    try:
        names = as_namer(namer).propose(shown_a, shown_b, count=o.candidates)
    except MalformedAnswerError as exc:
        result.status, result.note = FAILED, str(exc)
        return result
    if not names:
        result.status, result.note = REJECTED, "the namer proposed no description"
        return result
    seeds = [o.seed + 4 + 7919 * k for k in range(len(names))]
    judged = [held_out_test(judge, d, held_a, held_b, shown_a, shown_b, seed=s, permutations=o.permutations)
              for d, s in zip(names, seeds, strict=True)]
    adjusted = holm([t.p_value for t, _ in judged])
    result.candidates = [{"description": d, **asdict(t), "p_adjusted": q, "accepted": q < o.alpha,
                          "judged_order": {"seed": s, "sides": sides}}
                         for d, (t, sides), q, s in zip(names, judged, adjusted, seeds, strict=True)]
    kept = [c for c in result.candidates if c["accepted"]]
    if not kept:
        result.status = REJECTED
        return result
    best = min(kept, key=lambda c: (c["p_adjusted"], -c["accuracy"]))
    result.status, result.name = NAMED, best["description"]
    result.accuracy, result.interval = best["accuracy"], tuple(best["interval"])
    result.measure = best.get("statistic", "accuracy")
    result.p_value = best["p_adjusted"]
    return result

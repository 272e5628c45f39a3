"""Which model a judge prefers where they differ: pairwise preference per finding, both orders asked.

For each finding (a set of prompts) and each pair of models, pairs of outputs are drawn, seeded (finding i
and its j-th pair of models, in name order, draw from ``numpy.random.default_rng([seed, i, j])``, the pair's
two models in name order: the same pairs whichever order the models came in): on every prompt of the
finding, each model's outputs are shuffled and matched one to one (no output is used twice), and pairs are
taken one prompt at a time in a shuffled prompt order until ``pairs`` are drawn. A chat model
(any OpenAI-compatible endpoint, through :class:`~promptprism.llm.ChatClient` and its cache) reads the prompt,
the two outputs and the rubric, and answers first, second or tie, **twice**: once with A's output first and
once with B's first. A pair's outcome is A when the two answers add up in A's favour (A in both orders, or A
in one and tie in the other), B likewise, else a tie; a judge that picks the same position in both orders
(position bias) cancels to a tie. Ties are stated, never hidden.

Per finding and pair of models: A's win rate (wins + ties / 2) / pairs with a Wilson interval
(:func:`~promptprism.stats.preference.wilson_interval`, conservative with ties) and the exact two-sided sign
test of A's wins against B's, ties dropped (:func:`~promptprism.stats.preference.sign_test`). Under "the judge
cannot tell the models apart" the sign of each pair is a fair coin independently of the others (disjoint
outputs, exchangeable within a prompt), so the test is exact. Holm over every test reported.

Images (``modality='image'``, outputs are image paths): the judge is a vision-language model at the same kind
of endpoint; each request carries the prompt, both images as PNG data URLs in OpenAI ``image_url`` content
parts (first, then second) and the rubric; both orders, as for texts.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, ClassVar

import numpy as np

from ..._params import PROBABILITY, SEED, Estimator, Options
from ..._params import Interval as Between
from ...errors import InputError, OptionError
from ...llm.conversation import ChatModel, MalformedAnswerError, ask, png_data_url
from ...stats.intervals import format_p
from ...stats.preference import sign_test, wilson_interval
from ...stats.ranking import ranking
from ...stats.two_sample import holm

#: outputs are shown to the judge up to this many characters
MAX_SHOWN = 1500
DEFAULT_RUBRIC = ("Prefer the answer that is more correct and more helpful for the prompt, and that does "
                  "what the prompt asks. Answer tie when neither is better.")
JUDGE_PROMPT = """Two answers to the same prompt follow.

Prompt: \"\"\"{prompt}\"\"\"

First answer: \"\"\"{first}\"\"\"

Second answer: \"\"\"{second}\"\"\"

{rubric}
Which answer is better? Reply with one word: first, second or tie."""
DEFAULT_IMAGE_RUBRIC = ("Prefer the image that better shows what the prompt asks for, with fewer defects. "
                        "Answer tie when neither is better.")
IMAGE_PROMPT = "Two images generated for the same prompt follow.\n\nPrompt: \"\"\"{prompt}\"\"\""
IMAGE_QUESTION = "{rubric}\nWhich image is better? Reply with one word: first, second or tie."
MODALITIES = ("text", "image")
_WORDS = {"first": "first", "1": "first", "second": "second", "2": "second", "tie": "tie", "neither": "tie",
          "equal": "tie", "both": "tie"}


def _clip(text: Any, limit: int = MAX_SHOWN) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_preference(text: str) -> str:
    """'first', 'second' or 'tie': the first such word (or 1 / 2, neither / equal / both) of the answer."""
    for token in re.findall(r"[a-z]+|\d+", str(text).lower()):
        if token in _WORDS:
            return _WORDS[token]
    raise ValueError("answer with one word: first, second or tie")


def judge_messages(prompt: str, first: str, second: str, rubric: str) -> list[dict]:
    """The judge's request for one order of one pair."""
    return [{"role": "user", "content": JUDGE_PROMPT.format(prompt=_clip(prompt, 600), first=_clip(first),
                                                            second=_clip(second), rubric=rubric.strip())}]


def judge_image_messages(prompt: str, first: Any, second: Any, rubric: str) -> list[dict]:
    """The judge's request for one order of one pair of images (PIL images or HxWxC uint8 arrays): the
    prompt, 'First image:' and its PNG data URL, 'Second image:' and its data URL, then the rubric and the
    question, as the parts of one user turn."""
    parts = [{"type": "text", "text": IMAGE_PROMPT.format(prompt=_clip(prompt, 600))}]
    for label, image in (("First image:", first), ("Second image:", second)):
        parts += [{"type": "text", "text": label},
                  {"type": "image_url", "image_url": {"url": png_data_url(image)}}]
    parts.append({"type": "text", "text": IMAGE_QUESTION.format(rubric=rubric.strip())})
    return [{"role": "user", "content": parts}]


def draw_pairs(prompts_a: Sequence[str], prompts_b: Sequence[str], finding_prompts: Sequence[str], *,
               pairs: int, rng: np.random.Generator) -> list[tuple[str, int, int]]:
    """(prompt, row of A, row of B) pairs on the finding's prompts: per prompt A's and B's rows shuffled and
    matched one to one (disjoint), then one pair per prompt in turn (prompts in a shuffled order) up to
    ``pairs``."""
    pa, pb = np.asarray(prompts_a, dtype=object), np.asarray(prompts_b, dtype=object)
    queues = []
    for p in sorted(set(finding_prompts)):
        ra, rb = rng.permutation(np.flatnonzero(pa == p)), rng.permutation(np.flatnonzero(pb == p))
        if min(ra.size, rb.size):
            queues.append([(p, int(i), int(j)) for i, j in zip(ra, rb, strict=False)])
    order = rng.permutation(len(queues)) if queues else []
    out: list[tuple[str, int, int]] = []
    depth = 0
    while len(out) < pairs and any(depth < len(q) for q in queues):
        out += [queues[k][depth] for k in order if depth < len(queues[k])][: pairs - len(out)]
        depth += 1
    return out


def _drawn_in_name_order(models: dict[str, Any], a: str, b: str, finding_prompts: Sequence[str], *,
                         pairs: int, rng: np.random.Generator) -> list[tuple[str, int, int]]:
    """:func:`draw_pairs` for models a and b drawn with the two in name order, returned as (prompt, row of a,
    row of b): the same pairs whichever order the models were given in."""
    first, second = sorted((a, b))
    drawn = draw_pairs(models[first].prompts, models[second].prompts, finding_prompts, pairs=pairs, rng=rng)
    return drawn if first == a else [(p, j, i) for p, i, j in drawn]


def pair_outcome(a_first: str, b_first: str) -> str:
    """'a', 'b' or 'tie' from the answer with A shown first and the answer with B shown first."""
    score = {"first": 1, "second": -1, "tie": 0}[a_first] - {"first": 1, "second": -1, "tie": 0}[b_first]
    return "a" if score > 0 else "b" if score < 0 else "tie"


def preference_counts(verdicts: Sequence[tuple[str, str] | None], level: float) -> dict[str, Any]:
    """Counts, A's win rate with its Wilson interval and the sign test from the (A-first, B-first) answers of
    each pair (None: unreadable answers, the pair left out)."""
    read = [v for v in verdicts if v is not None]
    outcomes = [pair_outcome(*v) for v in read]
    wins, losses = outcomes.count("a"), outcomes.count("b")
    ties = len(outcomes) - wins - losses
    n = len(outcomes)
    answers = [x for v in read for x in v]
    low, high = wilson_interval(wins + ties / 2, n, level)
    return {"pairs": n, "wins": wins, "losses": losses, "ties": ties,
            "cancelled": sum(1 for v in read if v[0] == v[1] != "tie"),
            "unreadable": len(verdicts) - n,
            "first_position_share": answers.count("first") / len(answers) if answers else None,
            "win_rate": (wins + ties / 2) / n if n else None,
            "interval": {"low": low, "high": high, "level": level,
                         "method": "Wilson, ties counted as half a win"},
            "p_value": sign_test(wins, losses)}


@dataclass(frozen=True)
class FindingPreference(Estimator):
    """Per finding and pair of models, which one a judge prefers (module docstring).

    ``fit(findings, models, judge)``: ``findings`` a list of ``{'id', 'prompts'}``, ``models`` the paired sets
    by name (with ``prompts`` and ``outputs`` strings; two or more), ``judge`` a chat model
    (``chat(messages) -> str``). ``rubric``: what "better" means, read by the judge (with ``modality='image'``
    the default text rubric is replaced by :data:`DEFAULT_IMAGE_RUBRIC`). ``modality='image'``: the outputs
    are image paths, read and sent as PNG data URLs (:func:`judge_image_messages`) to a vision-language
    judge."""

    pairs: int = 20
    rubric: str = DEFAULT_RUBRIC
    alpha: float = 0.05
    confidence: float = 0.95
    reasks: int = 1
    seed: int = 0
    modality: str = "text"

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "pairs": [Between(numbers.Integral, 1, 10**5)], "rubric": [str], "alpha": [PROBABILITY],
        "confidence": [PROBABILITY], "reasks": [Between(numbers.Integral, 0, 10)], "seed": [SEED],
        "modality": [Options(MODALITIES)]}

    def _check_together(self) -> None:
        if not self.rubric.strip():
            raise OptionError("rubric: an empty rubric; say what makes an answer better", parameter="rubric")

    def fit(self, findings: Sequence[dict], models: dict[str, Any], judge: ChatModel) -> dict[str, Any]:
        """The preference record (``{'rubric', ..., 'findings': [...], 'verdict'}``)."""
        if len(models) < 2:
            raise OptionError(f"models: two or more sets to compare, got {len(models)}", parameter="models")
        for name, s in models.items():
            if getattr(s, "prompts", None) is None or getattr(s, "outputs", None) is None:
                raise InputError(f"{name}: no prompt and output strings; a judge reads the outputs")
        entries = [self._one(f, models, judge, i) for i, f in enumerate(findings)]
        tests = conclude_preferences(entries, list(models) if len(models) > 2 else None, self.alpha)
        shown = [e["verdict"] for e in entries if any(c["preferred"] for c in e["comparisons"])]
        overall = "; ".join(shown) if shown else (
            f"the judge prefers neither model on any finding (sign test, Holm over {tests} test(s) at "
            f"alpha = {self.alpha:g})")
        return {**self.get_params(), "rubric": self.rubric_text, "models": list(models),
                "order": "both orders per pair",
                "findings": entries, "verdict": overall}

    def _one(self, finding: dict, models: dict[str, Any], judge: ChatModel, i: int) -> dict[str, Any]:
        comparisons, named = [], {pair: j for j, pair in enumerate(combinations(sorted(models), 2))}
        for a, b in combinations(models, 2):
            sa, sb = models[a], models[b]
            rng = np.random.default_rng([self.seed, i, named[tuple(sorted((a, b)))]])
            drawn = _drawn_in_name_order(models, a, b, finding["prompts"], pairs=self.pairs, rng=rng)
            verdicts = [self._verdict(judge, p, sa.outputs[ia], sb.outputs[ib]) for p, ia, ib in drawn]
            comparisons.append({"a": a, "b": b, **preference_counts(verdicts, self.confidence)})
        return {"id": finding["id"], "prompts": len(set(finding["prompts"])),
                "example_prompts": list(finding["prompts"])[:3], "comparisons": comparisons}

    @property
    def rubric_text(self) -> str:
        """The rubric the judge reads (the image default in place of the text default for images)."""
        image_default = self.modality == "image" and self.rubric == DEFAULT_RUBRIC
        return DEFAULT_IMAGE_RUBRIC if image_default else self.rubric

    def _verdict(self, judge: ChatModel, prompt: str, out_a: str, out_b: str) -> tuple[str, str] | None:
        if self.modality == "image":
            from ...data.imageio import read_rgb

            a, b = read_rgb(out_a), read_rgb(out_b)
            orders = [judge_image_messages(prompt, x, y, self.rubric_text) for x, y in ((a, b), (b, a))]
        else:
            orders = [judge_messages(prompt, x, y, self.rubric_text)
                      for x, y in ((out_a, out_b), (out_b, out_a))]
        try:
            return tuple(ask(judge, messages, parse_preference, what="judging a pair", reasks=self.reasks)[0]
                         for messages in orders)  # type: ignore[return-value]
        except MalformedAnswerError:
            return None


def conclude_preferences(entries: Sequence[dict], names: list[str] | None, alpha: float) -> int:
    """Holm over every comparison of ``entries`` (each gets ``p_adjusted`` and ``preferred``: the model with
    more wins when the adjusted p is at most ``alpha``), then each entry's sentence (and ranking, ``names``
    given: more than two models); returns the number of tests."""
    tests = [c for e in entries for c in e["comparisons"]]
    for c, p_adj in zip(tests, holm([c["p_value"] for c in tests]) if tests else [], strict=True):
        c["p_adjusted"] = p_adj
        c["preferred"] = (None if p_adj > alpha or c["wins"] == c["losses"]
                          else c["a"] if c["wins"] > c["losses"] else c["b"])
    for e in entries:
        _conclude(e, names, alpha)
    return len(tests)


def _conclude(entry: dict, names: list[str] | None, alpha: float) -> None:
    """The finding's sentence, and with more than two models its ranking (ties where no test separates)."""
    where = f"on the {entry['prompts']} prompts of {entry['id']}"
    if names is None:
        c = entry["comparisons"][0]
        rate = "-" if c["win_rate"] is None else f"{c['win_rate']:.2f}"
        unread = f", {c['unreadable']} more unreadable" if c["unreadable"] else ""
        counts = (f"{c['a']} wins {c['wins']}, {c['b']} wins {c['losses']}, {c['ties']} ties "
                  f"({c['cancelled']} cancelled by position) of {c['pairs']} pairs{unread}")
        head = f"the judge prefers {c['preferred'] or 'neither model'}"
        entry["verdict"] = (f"{where}, {head}: {c['a']}'s win rate {rate} [{c['interval']['low']:.2f}, "
                            f"{c['interval']['high']:.2f}]; {counts}; sign test p = "
                            f"{format_p(c['p_adjusted'], alpha)} (Holm, ties dropped)")
        entry["preferred"] = c["preferred"]
        return
    index = {n: k for k, n in enumerate(names)}
    sep = np.zeros((len(names), len(names)), dtype=bool)
    score, played = np.zeros(len(names)), np.zeros(len(names))
    for c in entry["comparisons"]:
        i, j = index[c["a"]], index[c["b"]]
        sep[i, j] = sep[j, i] = c["preferred"] is not None
        if c["win_rate"] is not None:
            score[i] += c["win_rate"]
            score[j] += 1 - c["win_rate"]
            played[[i, j]] += 1
    rates = np.divide(score, played, out=np.full(len(names), 0.5), where=played > 0)
    entry["ranking"] = ranking(names, rates.tolist(), sep, metric="mean win rate against the others",
                               basis=f"the sign test (Holm, alpha = {alpha:g})")
    entry["preferred"] = next((r["name"] for r in entry["ranking"]["rows"] if r["rank"] == 1
                               and not r["not_separated_from"]), None)
    entry["verdict"] = f"{where}, judge: {entry['ranking']['words']}"

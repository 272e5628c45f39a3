"""Namers and judges: the language-model steps of naming a finding, behind the CompCon chat client.

A *namer* reads a few (prompt, output) pairs of side A and side B and proposes short candidate descriptions of
what A's outputs do that B's don't; it answers in CompCon's attribute format ("Model A contains:" and a
bulleted list), read by the same parser. A *judge* decides whether a description applies to one output. Two
judges: :class:`ChatJudge` asks a chat model yes or no; :class:`EmbeddingJudge` (cheap, no model calls)
thresholds the cosine similarity of the description's and the output's embeddings, the threshold fitted on
the samples the namer was shown, never on the held-out ones it is tested on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ...llm.answers import clip_text, parse_names
from ...llm.conversation import ChatModel, ask

NAMER_PROMPT = """Two assistants, A and B, answered the same questions. Here are some of their answers.

{examples}

What do A's answers do that B's answers do not? Give up to {count} short descriptions (at most 12 words
each). Each must be a property of a single answer that someone can check by reading that answer alone
(for example its language, tone, length, format or content).{avoid}
Answer exactly in this format:
Model A contains:
- <description>
- <description>"""

JUDGE_PROMPT = """Statement: "{description}"

Text: \"\"\"{text}\"\"\"

Is the statement true of the text? Answer with one word: yes or no."""


def examples_by_prompt(shown_a: Sequence[Any], shown_b: Sequence[Any], limit: int
                       ) -> list[tuple[str, str | None, str | None]]:
    """(prompt, an A output, a B output) triples, one per prompt, A and B on the same prompt where both have
    one; at most ``limit`` (samples with ``.prompt`` and ``.output``)."""
    by_b: dict[str, list[str]] = {}
    for s in shown_b:
        by_b.setdefault(s.prompt, []).append(s.output)
    out, used = [], set()
    for s in shown_a:
        if s.prompt in used:
            continue
        used.add(s.prompt)
        partner = by_b.get(s.prompt)
        out.append((s.prompt, s.output, partner[0] if partner else None))
        if len(out) == limit:
            break
    return out


def namer_messages(examples: Sequence[tuple[str, str | None, str | None]], count: int,
                   avoid: Sequence[str] = ()) -> list[dict]:
    """The namer's request for ``examples`` of (prompt, output of A, output of B); an output may be None."""
    blocks = []
    for prompt, out_a, out_b in examples:
        lines = [f"Question: {clip_text(prompt, 300)}"]
        if out_a is not None:
            lines.append(f"A: {clip_text(out_a)}")
        if out_b is not None:
            lines.append(f"B: {clip_text(out_b)}")
        blocks.append("\n".join(lines))
    avoid_text = ("\nDo not repeat these descriptions: " + "; ".join(avoid) + ".") if avoid else ""
    text = NAMER_PROMPT.format(examples="\n\n".join(blocks), count=count, avoid=avoid_text)
    return [{"role": "user", "content": text}]


def propose(client: ChatModel, examples: Sequence[tuple[str, str | None, str | None]], *, count: int = 3,
            reasks: int = 2) -> list[str]:
    """Up to ``count`` distinct candidate descriptions from the namer, asking again (with the ones it gave
    to avoid) while it gives fewer; a namer that never answers readably raises
    :class:`~promptprism.llm.MalformedAnswerError`."""
    names: list[str] = []
    for _ in range(count):
        items, _, _ = ask(client, namer_messages(examples, count, avoid=names), parse_names,
                          what="naming a finding", reasks=reasks)
        fresh = [x for x in items if x.lower() not in {n.lower() for n in names}]
        if not fresh:
            break
        names += fresh
        if len(names) >= count:
            break
    return names[:count]


@dataclass
class ChatNamer:
    """A chat model as namer: it reads up to ``max_examples`` (prompt, A, B) examples of the shown samples."""

    client: ChatModel
    max_examples: int = 8

    @property
    def model(self) -> str:
        """The model's name (recorded in result.json)."""
        return getattr(self.client, "model", type(self.client).__name__)

    def propose(self, shown_a: Sequence, shown_b: Sequence, *, count: int = 3) -> list[str]:
        """Up to ``count`` candidates (see :func:`propose`)."""

        return propose(self.client, examples_by_prompt(shown_a, shown_b, self.max_examples), count=count)


class Namer(Protocol):
    """Proposes names for what the shown samples of side A do that those of side B don't."""

    model: str

    def propose(self, shown_a: Sequence, shown_b: Sequence, *, count: int = 3) -> list[str]:
        """Up to ``count`` candidate names."""


def as_namer(namer: Namer | ChatModel) -> Namer:
    """A namer as it is, or a chat model wrapped as :class:`ChatNamer`."""
    return namer if hasattr(namer, "propose") else ChatNamer(namer)


def parse_yes_no(text: str) -> bool:
    """The first "yes" or "no" in a judge's answer; ``ValueError`` when there is neither."""
    found = re.search(r"\b(yes|no)\b", text[:2000], re.IGNORECASE)
    if not found:
        raise ValueError('no "yes" or "no" in the answer')
    return found.group(1).lower() == "yes"


class Judge(Protocol):
    """Decides whether a description applies to each of ``texts`` (the shown samples may calibrate it)."""

    name: str

    def decide(self, description: str, texts: Sequence[str], *, shown_a: Sequence[str],
               shown_b: Sequence[str]) -> list[bool]:
        """One decision per text."""


@dataclass
class ChatJudge:
    """A chat model answers yes or no for each (description, text); answers are cached by the client."""

    client: ChatModel
    reasks: int = 1
    name: str = "chat"

    def decide(self, description: str, texts: Sequence[str], *, shown_a: Sequence[str] = (),
               shown_b: Sequence[str] = ()) -> list[bool]:
        """Ask once per text (the shown samples are not needed)."""
        out = []
        for text in texts:
            msg = [{"role": "user", "content": JUDGE_PROMPT.format(description=description,
                                                                   text=clip_text(text))}]
            value, _, _ = ask(self.client, msg, parse_yes_no, what="judging a description",
                              reasks=self.reasks)
            out.append(value)
        return out


@dataclass
class EmbeddingJudge:
    """No model calls: a description applies when cos(e(description), e(text)) passes a threshold chosen on
    the shown samples (the midpoint that best separates shown A from shown B)."""

    encode: Callable[[list[str]], np.ndarray]
    name: str = "embedding"

    def decide(self, description: str, texts: Sequence[str], *, shown_a: Sequence[str],
               shown_b: Sequence[str]) -> list[bool]:
        """Threshold fitted on ``shown_a`` / ``shown_b``, applied to ``texts``."""
        emb = np.asarray(self.encode([description, *shown_a, *shown_b, *texts]), dtype=np.float64)
        emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        sims = emb[1:] @ emb[0]
        na, nb = len(shown_a), len(shown_b)
        threshold = best_threshold(sims[:na], sims[na:na + nb])
        return (sims[na + nb:] >= threshold).tolist()


def best_threshold(scores_a: np.ndarray, scores_b: np.ndarray) -> float:
    """The threshold t maximising the balanced accuracy of ``score >= t`` for A versus B (a midpoint between
    sorted scores; +inf when no threshold beats chance, so nothing is said to match)."""
    if len(scores_a) == 0 or len(scores_b) == 0:
        return float("inf")
    pooled = np.unique(np.concatenate([scores_a, scores_b]))
    cuts = np.concatenate([[pooled[0] - 1.0], (pooled[:-1] + pooled[1:]) / 2.0])
    tpr = (scores_a[None, :] >= cuts[:, None]).mean(axis=1)
    fpr = (scores_b[None, :] >= cuts[:, None]).mean(axis=1)
    gain = tpr - fpr
    best = int(np.argmax(gain))
    return float(cuts[best]) if gain[best] > 0 else float("inf")

"""A namer and a judge a very small model can serve: facet questions answered by continuing a sentence, read
as log-probabilities.

A 135M-parameter chat model cannot compare two sets of answers, nor answer yes or no to a statement about a
text (it says "no" to nearly everything, and its yes/no *scores* mostly measure how odd the text is: see
docs/naming.md). It can still continue a sentence about one text. A *facet* is a question about a single text
and the start of its answer, e.g. "In which language is this text written?" and "This text is written in";
the model's next-token distribution after the start (``top_logprobs``, one request per text, greedy, one
token) says which values it finds likely for that text.

* :class:`FacetNamer` asks each facet about every shown sample of both sides and proposes the values whose
  log-probability is higher on side A than on side B (Welch's t over the shown samples, t > ``min_t``), as
  names "<start> <value>" ("This text is written in <value>"). The values come from the model; the facet
  questions are generic and name no value.
* :class:`CompletionJudge` scores a held-out text for such a name: the log-probability of the name's value
  after the facet's start (the smallest of the ``top_logprobs`` when the value is not among them, an upper
  bound). Scores are tested by rank (:func:`~.verify.rank_separation`), not by a threshold.

Both need an endpoint that returns log-probabilities (``ChatClient.complete_logprobs``; the packaged
server does, see :mod:`promptprism.generate._serve`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ...errors import OptionError
from .judges import clip_text

#: alternatives read per request (OpenAI's maximum)
TOP_LOGPROBS = 20
#: continuations that are not a value of the facet
STOPWORDS = frozenset({"the", "this", "that", "and", "not", "its", "his", "her", "their", "very", "more",
                       "most", "one", "two", "which", "what", "with", "from", "for", "about", "some"})
_VALUE = re.compile(r"[^\W\d_]{3,}")


@dataclass(frozen=True)
class Facet:
    """A question about one text and the start of its answer; a name is ``prefix + " " + value``."""

    question: str
    prefix: str


FACETS = (Facet("In which language is this text written?", "This text is written in"),
          Facet("What is the tone of this text?", "The tone of this text is"),
          Facet("What is the format of this text?", "This text is formatted as a"))


class LogprobModel(Protocol):
    """A chat endpoint that returns the log-probabilities of its answer's tokens (``ChatClient``)."""

    model: str

    def complete_logprobs(self, messages: list[dict], *, top_logprobs: int = 20,
                          params: dict | None = None) -> tuple[str, list[dict]]:
        """(text, OpenAI's ``choices[0].logprobs.content``)."""


def facet_messages(facet: Facet, text: str) -> list[dict]:
    """The request for one text: the question, then the answer's start left open for the model."""
    return [{"role": "user", "content": f'Text: """{clip_text(text)}"""\n\n{facet.question}'},
            {"role": "assistant", "content": facet.prefix}]


def value_logprobs(content: list[dict]) -> tuple[dict[str, float], float]:
    """The first generated token's alternatives as {value: log-probability} (values are words of >= 3
    letters, not :data:`STOPWORDS`; variants of one value are summed) and the smallest alternative's
    log-probability (the bound for a value not among them). ``ValueError`` when there is no first token."""
    if not content or not isinstance(content[0], dict) or not content[0].get("top_logprobs"):
        raise ValueError("the answer holds no top_logprobs for its first token")
    values: dict[str, float] = {}
    floor = 0.0
    for alt in content[0]["top_logprobs"]:
        token, lp = str(alt.get("token", "")), alt.get("logprob")
        if not isinstance(lp, (int, float)) or not np.isfinite(lp):
            raise ValueError(f"a top_logprobs entry without a finite logprob: {alt!r:.80}")
        floor = min(floor, float(lp))
        word = token.strip()
        if _VALUE.fullmatch(word) and word.lower() not in STOPWORDS:
            values[word] = float(np.logaddexp(values[word], lp)) if word in values else float(lp)
    return values, floor


def facet_distributions(client: LogprobModel, facet: Facet, texts: Sequence[str], memo: dict | None = None
                        ) -> list[tuple[dict[str, float], float]]:
    """:func:`value_logprobs` of ``facet`` for each text (one greedy one-token request each, cached by the
    client, and in ``memo`` for this process); an answer without log-probabilities raises
    :class:`~promptprism.llm.MalformedAnswerError`."""
    from ...llm.conversation import MalformedAnswerError

    memo = {} if memo is None else memo
    out = []
    for text in texts:
        key = (facet, text)
        if key not in memo:
            answer, content = client.complete_logprobs(facet_messages(facet, text), top_logprobs=TOP_LOGPROBS,
                                                       params={"temperature": 0.0, "max_tokens": 1})
            try:
                memo[key] = value_logprobs(content)
            except ValueError as exc:
                raise MalformedAnswerError(f"reading a facet: {getattr(client, 'model', 'the model')} "
                                           f"{exc}", [answer]) from None
        out.append(memo[key])
    return out


def value_scores(dists: Sequence[tuple[dict[str, float], float]], value: str) -> np.ndarray:
    """Each text's log-probability of ``value`` (its floor when ``value`` is not among its alternatives)."""
    return np.array([d.get(value, floor) for d, floor in dists], dtype=np.float64)


def welch_t(a: np.ndarray, b: np.ndarray) -> float:
    """Welch's t of mean(a) - mean(b) (the variances floored so that constant samples give a finite t)."""
    var = a.var(ddof=1) / a.size + b.var(ddof=1) / b.size if min(a.size, b.size) > 1 else 0.0
    return float((a.mean() - b.mean()) / np.sqrt(max(var, 1e-6)))


def by_facet_turns(ranked: list[dict], facets: Sequence[Facet]) -> list[dict]:
    """``ranked`` (by decreasing t) reordered in turns over the facets: every facet's best value first (by t),
    then every facet's second, ...; so a facet with many noisy values does not crowd out the others."""
    turns: list[list[dict]] = []
    for facet in facets:
        mine = [r for r in ranked if r["name"].startswith(facet.prefix + " ")]
        for k, r in enumerate(mine):
            if k == len(turns):
                turns.append([])
            turns[k].append(r)
    return [r for turn in turns for r in sorted(turn, key=lambda r: (-r["t"], r["name"]))]


@dataclass
class FacetNamer:
    """Proposes "<facet start> <value>" names whose value the model finds likelier on side A's shown
    outputs than on side B's (Welch's t > ``min_t``; the value among the top alternatives of at least
    ``min_docs`` shown A outputs), each facet's best first (:func:`by_facet_turns`)."""

    client: Any
    facets: Sequence[Facet] = FACETS
    min_t: float = 1.0
    min_docs: int = 2
    proposals: list[dict] = field(default_factory=list, init=False)  #: the last call's ranked values
    memo: dict = field(default_factory=dict, init=False, repr=False)  #: (facet, text) -> distribution

    @property
    def model(self) -> str:
        """The model's name (recorded in result.json)."""
        return f"facets of {getattr(self.client, 'model', type(self.client).__name__)}"

    def propose(self, shown_a: Sequence, shown_b: Sequence, *, count: int = 3) -> list[str]:
        """Up to ``count`` names (none when a side has no shown sample to contrast)."""
        texts_a, texts_b = [s.output for s in shown_a], [s.output for s in shown_b]
        ranked: list[dict] = []
        if not texts_a or not texts_b:
            return []
        for facet in self.facets:
            dist_a = facet_distributions(self.client, facet, texts_a, self.memo)
            dist_b = facet_distributions(self.client, facet, texts_b, self.memo)
            seen = [v for d, _ in dist_a for v in d]
            for value in sorted({v for v in seen if seen.count(v) >= self.min_docs}):
                t = welch_t(value_scores(dist_a, value), value_scores(dist_b, value))
                if t > self.min_t:
                    ranked.append({"name": f"{facet.prefix} {value}", "t": t})
        ranked.sort(key=lambda r: (-r["t"], r["name"]))
        self.proposals = ranked
        return [r["name"] for r in by_facet_turns(ranked, self.facets)[:count]]


@dataclass
class CompletionJudge:
    """Scores a "<facet start> <value>" name on each text: the log-probability of the value after the start
    (tested by rank, :func:`~.verify.rank_separation`)."""

    client: Any
    facets: Sequence[Facet] = FACETS
    name: str = "completion"
    memo: dict = field(default_factory=dict, init=False, repr=False)  #: (facet, text) -> distribution

    def facet_of(self, description: str) -> tuple[Facet, str]:
        """The facet whose start ``description`` begins with, and the value after it."""
        for facet in sorted(self.facets, key=lambda f: -len(f.prefix)):
            if description.startswith(facet.prefix + " "):
                value = description[len(facet.prefix):].strip().rstrip(".")
                if value:
                    return facet, value
        raise OptionError(f"the completion judge scores facet names ('{self.facets[0].prefix} ...'), got "
                          f"{description!r}; use the chat or embedding judge for other names")

    def score(self, description: str, texts: Sequence[str], *, shown_a: Sequence[str] = (),
              shown_b: Sequence[str] = ()) -> list[float]:
        """One score per text (the shown samples are not needed)."""
        facet, value = self.facet_of(description)
        return value_scores(facet_distributions(self.client, facet, texts, self.memo), value).tolist()

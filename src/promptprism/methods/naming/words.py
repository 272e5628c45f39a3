"""A namer and a judge that need no model: the words that mark one side's outputs, and their presence.

:class:`WordNamer` ranks words by how much more often they occur in side A's shown outputs than in side B's:
the log-odds ratio with an informative Dirichlet prior and its z-score (Monroe, Colaresi & Quinn 2008,
"Fightin' Words", eq. 16-22), on document presence (a word counts once per output). It proposes
'uses words such as "w1", "w2", "w3"'. :class:`LexicalJudge` says such a name applies to an output that
contains any of the quoted words. The name is derived on the shown samples and tested on held-out ones like
any other (:mod:`.contrast`), so a kept word list generalises beyond the outputs it was read from. It names
*how* the outputs differ in their words (a language, a formula, a refusal phrase), never *why*.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import OptionError

_WORD = re.compile(r"\w+", re.UNICODE)
_QUOTED = re.compile(r'"([^"]+)"')


def words_of(text: str) -> set[str]:
    """The distinct lower-case words of ``text``."""
    return set(_WORD.findall(text.lower()))


def word_count(text: str) -> int:
    """The number of words of ``text``, repeats counted."""
    return len(_WORD.findall(text))


def word_log_odds(texts_a: Sequence[str], texts_b: Sequence[str], *, prior: float = 0.5
                  ) -> list[tuple[str, float]]:
    """(word, z) for every word of A, by decreasing z: the log-odds ratio of a word's presence in A versus B
    with a Dirichlet prior of ``prior`` pseudo-documents each way, over its standard error (Monroe et al.
    2008, eq. 16-22 on presence counts)."""
    docs_a, docs_b = Counter(), Counter()
    for t in texts_a:
        docs_a.update(words_of(t))
    for t in texts_b:
        docs_b.update(words_of(t))
    na, nb = len(texts_a), len(texts_b)
    out = []
    for w, ya in docs_a.items():
        yb = docs_b.get(w, 0)
        delta = (np.log((ya + prior) / (na - ya + prior)) - np.log((yb + prior) / (nb - yb + prior)))
        var = 1 / (ya + prior) + 1 / (na - ya + prior) + 1 / (yb + prior) + 1 / (nb - yb + prior)
        out.append((w, float(delta / np.sqrt(var))))
    return sorted(out, key=lambda wz: (-wz[1], wz[0]))


def words_name(words: Sequence[str]) -> str:
    """The name of a word list: 'uses words such as "w1", "w2"'."""
    return "uses words such as " + ", ".join(f'"{w}"' for w in words)


@dataclass
class WordNamer:
    """Proposes the words that mark side A: the top ``per_name`` words (z > ``min_z``, present in at least
    ``min_docs`` shown A outputs) make the first name, the next ones the second, and so on."""

    per_name: int = 3
    min_z: float = 1.96
    min_docs: int = 2
    model: str = "distinctive words"

    def propose(self, shown_a: Sequence, shown_b: Sequence, *, count: int = 3) -> list[str]:
        """Up to ``count`` word-list names from the shown outputs of both sides."""
        texts_a, texts_b = [s.output for s in shown_a], [s.output for s in shown_b]
        present = Counter(w for t in texts_a for w in words_of(t))
        ranked = [w for w, z in word_log_odds(texts_a, texts_b) if z > self.min_z
                  and present[w] >= self.min_docs]
        chunks = [ranked[i:i + self.per_name] for i in range(0, len(ranked), self.per_name)]
        return [words_name(c) for c in chunks[:count] if c]


@dataclass
class LexicalJudge:
    """A name of the form 'uses words such as "w1", "w2"' applies to an output containing any quoted word."""

    name: str = "lexical"

    def decide(self, description: str, texts: Sequence[str], *, shown_a: Sequence[str] = (),
               shown_b: Sequence[str] = ()) -> list[bool]:
        """Presence of any quoted word of ``description`` in each text."""
        wanted = {w.lower() for w in _QUOTED.findall(description)}
        if not wanted:
            raise OptionError(f"the lexical judge tests word-list names ('uses words such as \"w\"'), got "
                              f"{description!r}; use the chat or embedding judge for other names")
        return [bool(wanted & words_of(t)) for t in texts]

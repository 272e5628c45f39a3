"""A namer and a judge for length, a difference no word list and no small model names: "answers are shorter".

Length is the first thing that differs between two language models' answers (and the first confound of any
judge of them), and a difference by absence (answers cut short) has no marking words. :class:`LengthNamer`
compares the word counts of the shown samples and proposes 'answers are shorter (median 1 word against 45)'
or '... longer ...'; :class:`LengthJudge` scores a held-out sample by its word count (negated for
"shorter"), tested by rank like any scoring judge (:func:`~.verify.rank_separation`). Both need no model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import OptionError
from .words import word_count

_LENGTH_NAME = re.compile(r"^answers are (shorter|longer)\b")


def _words(n: float) -> str:
    n = int(round(n))
    return f"{n} word" if n == 1 else f"{n} words"


def length_name(texts_a: Sequence[str], texts_b: Sequence[str]) -> str | None:
    """'answers are shorter (median a words against b)' when side A's median word count is below B's,
    '... longer ...' when above, None when the medians are equal."""
    med_a = float(np.median([word_count(t) for t in texts_a]))
    med_b = float(np.median([word_count(t) for t in texts_b]))
    if med_a == med_b:
        return None
    way = "shorter" if med_a < med_b else "longer"
    return f"answers are {way} (median {_words(med_a)} against {_words(med_b)})"


@dataclass
class LengthNamer:
    """Proposes at most one name: which way side A's shown answers differ in length from B's."""

    model: str = "length"

    def propose(self, shown_a: Sequence, shown_b: Sequence, *, count: int = 3) -> list[str]:
        """The length name of the shown outputs, if their median word counts differ."""
        name = length_name([s.output for s in shown_a], [s.output for s in shown_b])
        return [name] if name and count >= 1 else []


@dataclass
class LengthJudge:
    """Scores 'answers are shorter/longer ...' on each text by its word count (negated for 'shorter')."""

    name: str = "length"

    def score(self, description: str, texts: Sequence[str], *, shown_a: Sequence[str] = (),
              shown_b: Sequence[str] = ()) -> list[float]:
        """One score per text: higher means more as the description says."""
        found = _LENGTH_NAME.match(description)
        if not found:
            raise OptionError(f"the length judge scores length names ('answers are shorter ...'), got "
                              f"{description!r}; use the chat or embedding judge for other names")
        sign = -1.0 if found.group(1) == "shorter" else 1.0
        return [sign * word_count(t) for t in texts]

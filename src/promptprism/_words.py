"""Small pieces of English for the sentences results say (verdicts, notes): one wording everywhere."""

from __future__ import annotations

from collections.abc import Sequence


def and_join(names: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    names = [str(n) for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1] if names else ""

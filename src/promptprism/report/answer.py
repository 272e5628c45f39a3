"""The answer first: one verdict sentence, up to ``MAX_FINDINGS`` finding cards, then the caveats grouped by
severity and folded (each once), before a page's details.

A finding card says what (its title), where (a model, a cluster, a prompt), how sure (an interval, a
p-value) and shows a quote or a thumbnail. A caveat is ``(severity, text)``: ``"important"`` (it changes
how to read the numbers: intervals not calibrated, no intervals, an estimate outside its interval ...) or
``"note"`` (what was done: truncation, a rule chosen, a subsample); :func:`severity` guesses it from the
text for the free-text warnings and notes a result carries.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .html import Html, details, el, p, snippet

#: finding cards shown under the verdict
MAX_FINDINGS = 5
#: words that make a caveat important (it changes how to read the numbers)
_IMPORTANT = ("not calibrated", "no confidence interval", "no bootstrap", "outside its interval",
              "may be noise", "cannot be told apart", "identical", "degenerate", "too few", "unreliable",
              "not significant", "fails", "failed", "n < d", "fewer samples than")
SEVERITIES = (("important", "read before the numbers"), ("note", "how the numbers were made"))


def severity(text: str) -> str:
    """``"important"`` when ``text`` says the numbers need care, else ``"note"``."""
    low = text.lower()
    return "important" if any(w in low for w in _IMPORTANT) else "note"


def finding_card(title: Any, what: Any = None, *, where: Any = None, sure: Any = None, quote: Any = None,
                 visual: Any = None, attrs: dict | None = None) -> Html:
    """One finding: its title, what it is, where and how sure, and a quote (text) or a visual (markup)."""
    return el(
        "div",
        el("div", title, cls="pp-finding-title"),
        p(what) if what else None,
        p(el("b", "where: "), where, cls="small") if where else None,
        p(el("b", "how sure: "), sure, cls="small") if sure else None,
        el("blockquote", snippet(quote, 240), dir="auto") if quote else None,
        visual,
        cls="card pp-finding",
        **(attrs or {}),
    )


def caveats_block(caveats: Iterable[tuple[str, str]]) -> Html | None:
    """The caveats, each once, grouped by severity, each group folded (its count in the summary)."""
    groups: dict[str, list[str]] = {}
    seen: set[str] = set()
    for sev, text in caveats:
        key = " ".join(str(text).split())
        if not key or key in seen:
            continue
        seen.add(key)
        groups.setdefault(sev if sev in dict(SEVERITIES) else "note", []).append(key)
    if not groups:
        return None
    blocks = [
        details(f"{len(groups[sev])} {'caveat' if sev == 'important' else 'note'}"
                f"{'s' if len(groups[sev]) > 1 else ''}: {label}",
                el("ul", [el("li", t) for t in groups[sev]]))
        for sev, label in SEVERITIES if sev in groups
    ]
    return el("div", blocks, cls="pp-caveats")


def answer_block(verdict: str, findings: list[Html], caveats: Iterable[tuple[str, str]]) -> Html:
    """The verdict (one sentence), up to ``MAX_FINDINGS`` finding cards and the folded caveats."""
    return el(
        "div",
        el("p", el("b", verdict), cls="pp-verdict"),
        el("div", findings[:MAX_FINDINGS], cls="pp-findings") if findings else None,
        caveats_block(caveats),
        cls="pp-answer",
        id="answer",
    )

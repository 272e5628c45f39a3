"""The ranking-with-ties sentences of a result (:mod:`promptprism.methods.rankings`) as a report block."""

from __future__ import annotations

from typing import Any

from .html import el, p


def rankings_block(rankings: Any) -> Any:
    """One line per ranking ('scendi (higher is ranked first; ...): A ranks 1; B and C share rank 2'), or
    None when the result carries none. Accepts one ranking or {metric: ranking}."""
    if not isinstance(rankings, dict) or not rankings:
        return None
    items = [rankings] if "words" in rankings else [r for r in rankings.values() if isinstance(r, dict)]
    lines = [p(str(r["words"])) for r in items if r.get("words")]
    head = el("h3", "Rankings (ties where the uncertainty does not separate)")
    return el("div", head, lines) if lines else None

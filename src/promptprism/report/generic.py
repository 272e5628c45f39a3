"""A page for any result kind without its own renderer: its scalar fields, then everything else collapsed."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .common import finish, notes_block
from .core import renderer
from .html import Page, details, el, fmt, kv_table


@renderer("*")
def render_generic(result: Any, *, notes: list[str] | None = None, **_: Any) -> str:
    """The fallback report page for a result kind without a dedicated page: its fields."""
    kind = getattr(result, "kind", type(result).__name__)
    page = Page(f"{kind} result", "No dedicated report page for this kind yet: the fields of result.json.")
    data = (
        result.to_dict()
        if hasattr(result, "to_dict")
        else (dataclasses.asdict(result) if dataclasses.is_dataclass(result) else dict(vars(result)))
    )
    scalars = [
        (k, fmt(v) if isinstance(v, float) else str(v))
        for k, v in data.items()
        if isinstance(v, (str, int, float, bool)) or v is None
    ]
    nested = [(k, v) for k, v in data.items() if isinstance(v, (dict, list))]
    page.add(
        "Summary",
        notes_block(notes),
        kv_table(scalars),
        [
            details(f"{k} ({len(v)} entries)", el("pre", json.dumps(v, indent=1, default=str)[:200_000]))
            for k, v in nested
        ],
    )
    return finish(page, kind=str(kind), result=result)

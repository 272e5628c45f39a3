"""The prompts file of ``generate``: :func:`promptprism.data.prompts.read_prompt_rows`' rules (one prompt per
line, or a table with a ``prompt`` column; every row a prompt; ids unique), and the extra table columns are
copied into each generated row (``topic``, ``category``...); a column named as a field generate writes
(:data:`WRITTEN`: ``seed``, ``output``, ``model``...) is refused, since its values would be overwritten.
"""

from __future__ import annotations

import os

from ..data.prompts import PromptRow, read_prompt_rows
from ..errors import InputError

#: the fields generate writes into each manifest row (its own and the generators'): a prompts-file column of
#: one of these names would be overwritten
WRITTEN = frozenset({"prompt_id", "sample", "seed", "generation", "content_key", "output", "model",
                     "system_prompt", "image", "generator"})


def read_prompts(path: str | os.PathLike) -> list[PromptRow]:
    """The prompts of a .txt (one per line) or table file, validated (see the module docstring)."""
    rows = []
    for where, row in read_prompt_rows(path):
        if taken := sorted(set(row.meta) & WRITTEN):
            raise InputError(f"{where}: column {taken[0]!r} is a field generate writes into each row of the "
                             f"manifest ({', '.join(sorted(WRITTEN))}), so its values would be lost; rename "
                             f"it (e.g. 'user_{taken[0]}')")
        rows.append(row)
    return rows


__all__ = ["WRITTEN", "PromptRow", "read_prompts"]

"""Prompts files: one prompt per line (.txt), or a table with a ``prompt`` column (``generate``'s prompts,
CompCon's prompt bank).

Tables (``.csv``, ``.jsonl``/``.ndjson``/``.json``, ``.parquet``) are read by the one table reader,
:func:`promptprism.data.tables.read_table`, so prompts files follow the manifest reader's rules: UTF-8
with or without a byte-order mark, a JSON list or JSON lines decided by content (a JSON list may hold plain
strings: each is a prompt), a CSV header naming a column twice refused. A ``.txt`` file is read with the
same decoding (:func:`~promptprism.data.tables.read_text`).

Every row must hold a prompt: an empty line or an empty ``prompt`` cell is an error naming the file and the
row (a silently skipped line would shift every later id). Ids come from an ``id`` column when there is one
(unique), else they are the 1-based row number. Other table columns are kept as each row's ``meta``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from .tables import TABLE_SUFFIXES, check_text, read_table, read_text, text_lines


@dataclass(frozen=True)
class PromptRow:
    """One prompt of a prompts file: its id, its text and the extra columns of its row."""

    id: str
    prompt: str
    meta: dict[str, Any] = field(default_factory=dict)


def _records(path: Path) -> list[tuple[str, Any]]:
    if path.suffix.lower() in TABLE_SUFFIXES:
        return [(rec.where, rec.values) for rec in read_table(path, scalars_as="prompt").records]
    lines = text_lines(read_text(path))
    while lines and not lines[-1].strip():  # a trailing newline is not an empty prompt
        lines.pop()
    return [(f"{path}: line {i}", {"prompt": line}) for i, line in enumerate(lines, 1)]


def read_prompt_rows(path: str | os.PathLike, *, what: str = "prompts file") -> list[tuple[str, PromptRow]]:
    """(where, row) for each prompt of a .txt (one per line) or table file, validated (module docstring);
    ``what`` names the file in the errors."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such {what}")
    records = _records(path)
    if not records:
        raise InputError(f"{path}: the {what} is empty")
    table = path.suffix.lower() in TABLE_SUFFIXES
    rows: list[tuple[str, PromptRow]] = []
    seen: dict[str, str] = {}
    for number, (where, rec) in enumerate(records, 1):
        prompt = rec.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            what_row = "an empty or missing 'prompt'" if table else "an empty line"
            raise InputError(f"{where}: {what_row}; every row needs a prompt (remove the row or fill it)")
        check_text(prompt, where, "prompt")
        rid = rec.get("id")
        rid = str(number) if rid is None or str(rid).strip() == "" else str(rid).strip()
        if rid in seen:
            raise InputError(f"{where}: id {rid!r} repeats {seen[rid]}; ids must be unique")
        seen[rid] = where
        meta = {k: v for k, v in rec.items() if k not in ("id", "prompt")}
        rows.append((where, PromptRow(id=rid, prompt=prompt.strip(), meta=meta)))
    return rows

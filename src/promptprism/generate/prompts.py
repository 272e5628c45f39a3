"""The prompts file of ``generate``: one prompt per line (.txt), or a table (.csv/.jsonl) with ``prompt``.

Every row must hold a prompt: an empty line or an empty ``prompt`` cell is an error naming the file and the
row (a silently skipped line would shift every later id). Ids come from an ``id`` column when there is one
(unique), else they are the 1-based row number. Other table columns are kept and copied into each
generated row (``topic``, ``category``...).
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError


@dataclass(frozen=True)
class PromptRow:
    """One prompt to generate for: its id, its text and the extra columns of its row."""

    id: str
    prompt: str
    meta: dict[str, Any] = field(default_factory=dict)


def _records(path: Path) -> list[tuple[str, Any]]:
    suffix = path.suffix.lower()
    text = path.read_text(encoding="utf-8")
    if suffix in (".jsonl", ".ndjson"):
        out = []
        for line_no, line in enumerate(text.splitlines(), 1):
            where = f"{path}: line {line_no}"
            if not line.strip():
                raise InputError(f"{where}: empty line; every line must be a JSON object with a 'prompt'")
            try:
                out.append((where, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise InputError(f"{where}: not valid JSON ({exc.msg})") from None
        return out
    if suffix == ".csv":
        reader = csv.DictReader(text.splitlines())
        if reader.fieldnames is None or "prompt" not in reader.fieldnames:
            raise InputError(f"{path}: no 'prompt' column (found: {reader.fieldnames or 'no header'})")
        return [(f"{path}: row {i} (line {reader.line_num})", rec) for i, rec in enumerate(reader, 1)]
    lines = text.splitlines()
    while lines and not lines[-1].strip():  # a trailing newline is not an empty prompt
        lines.pop()
    return [(f"{path}: line {i}", {"prompt": line}) for i, line in enumerate(lines, 1)]


def read_prompts(path: str | os.PathLike) -> list[PromptRow]:
    """The prompts of a .txt (one per line), .csv or .jsonl file, validated (see the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such prompts file")
    try:
        records = _records(path)
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not records:
        raise InputError(f"{path}: the prompts file is empty")
    rows: list[PromptRow] = []
    seen: dict[str, str] = {}
    for number, (where, rec) in enumerate(records, 1):
        if not isinstance(rec, dict):
            raise InputError(f"{where}: expected an object with a 'prompt', got {type(rec).__name__}")
        prompt = rec.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            what = "an empty line" if path.suffix.lower() not in (".csv", ".jsonl", ".ndjson") else \
                "an empty or missing 'prompt'"
            raise InputError(f"{where}: {what}; every row needs a prompt (remove the row or fill it)")
        rid = rec.get("id")
        rid = str(number) if rid is None or str(rid).strip() == "" else str(rid).strip()
        if rid in seen:
            raise InputError(f"{where}: id {rid!r} repeats {seen[rid]}; ids must be unique")
        seen[rid] = where
        meta = {k: v for k, v in rec.items() if k not in ("id", "prompt")}
        rows.append(PromptRow(id=rid, prompt=prompt.strip(), meta=meta))
    return rows

"""The one table reader: JSONL, CSV and Parquet files -> rows of records, with errors that name the line.

Every reader of tabular input (manifests, prompts files of image folders, the region method's image
manifests, CompCon image banks and prompt banks) goes through :func:`read_table`, so they accept the same
formats and fail the same way:

* text files must be UTF-8 (a byte-order mark is allowed); anything else (latin-1, UTF-16, binary) is an
  :class:`~promptprism.errors.InputError` naming the file, the line and the byte;
* a string holding a lone surrogate (JSON's ``"\\ud800"``, which no UTF-8 text can hold) is refused by
  :func:`check_text` naming the row and column;
* a CSV row with more fields than its header, a CSV header naming a column twice, or a JSONL line that is
  not a JSON object, names its line;
* ``.json``, ``.jsonl`` and ``.ndjson`` are decided by content, not by name: a file whose text starts with
  ``[`` is one JSON list of rows, anything else is JSON lines (one row per line).
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

TABLE_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".parquet")


@dataclass(frozen=True)
class Record:
    """One row of a table: its 1-based ``number``, ``where`` ("FILE: row N (line L)") and the ``values``."""

    number: int
    where: str
    values: dict[str, Any]


@dataclass(frozen=True)
class Table:
    """The rows of a table file and its columns (declared, or for JSONL the keys in first-seen order)."""

    path: Path
    columns: list[str]
    records: list[Record]

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return f"Table({str(self.path)!r}, rows={len(self.records)}, columns={self.columns})"


def read_text(path: str | os.PathLike) -> str:
    """A UTF-8 text file's content (BOM removed); any other encoding is an error naming line and byte."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{path}: line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                         f"{exc.start}: {exc.reason}); save the file as UTF-8") from None


def check_text(value: str, where: str, column: str) -> str:
    """``value`` unchanged, or an error when it holds a lone surrogate (not encodable as UTF-8)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"{where}: column {column!r} holds a lone surrogate "
                         f"({value[exc.start]!a} at character {exc.start}), which is not valid Unicode "
                         "text") from None
    return value


def _row_object(obj: Any, where: str, scalars_as: str | None) -> dict:
    if scalars_as is not None and isinstance(obj, str):
        return {scalars_as: obj}
    if not isinstance(obj, dict):
        wanted = f"a JSON object (or a string, the {scalars_as!r})" if scalars_as else \
            "a JSON object with keys such as 'prompt' and 'output'"
        raise InputError(f"{where}: expected {wanted}, got {type(obj).__name__}")
    return obj


def _json_list(path: Path, text: str, scalars_as: str | None) -> list[Record]:
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {exc.lineno}: a JSON list that is not valid JSON ({exc.msg} at "
                         f"column {exc.colno})") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply") from None
    if not isinstance(items, list):  # pragma: no cover - text starting with '[' parses to a list or fails
        raise InputError(f"{path}: expected a JSON list of rows")
    return [Record(i, f"{path}: row {i} (list item)", _row_object(obj, f"{path}: row {i} (list item)",
                                                                  scalars_as))
            for i, obj in enumerate(items, 1)]


def text_lines(text: str) -> list[str]:
    """The lines of a text file as JSON Lines and one-per-line files define them: ended by \n (or \r\n)
    only. ``str.splitlines`` also cuts at U+2028, U+2029, U+0085, \f and \v, which JSON strings (and model
    answers) may hold raw."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if lines and lines[-1] == "" else lines


def _jsonl(path: Path, text: str, scalars_as: str | None = None) -> list[Record]:
    if text.lstrip().startswith("["):
        return _json_list(path, text, scalars_as)
    out: list[Record] = []
    for line_no, line in enumerate(text_lines(text), 1):
        if not line.strip():
            continue
        where = f"{path}: row {len(out) + 1} (line {line_no})"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        except RecursionError:
            raise InputError(f"{where}: JSON nested too deeply") from None
        out.append(Record(len(out) + 1, where, _row_object(obj, where, scalars_as)))
    return out


def _csv(path: Path, text: str) -> tuple[list[str], list[Record]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        fields = list(reader.fieldnames or [])
        twice = sorted({f for f in fields if fields.count(f) > 1})
        if twice:
            raise InputError(f"{path}: line 1: the header names column {twice[0]!r} "
                             f"{fields.count(twice[0])} times; every column needs its own name")
        out: list[Record] = []
        for rec in reader:
            where = f"{path}: row {len(out) + 1} (line {reader.line_num})"
            if None in rec:
                raise InputError(f"{where}: has more fields than the header ({len(fields)})")
            out.append(Record(len(out) + 1, where, rec))
    except csv.Error as exc:
        raise InputError(f"{path}: line {reader.line_num}: not a readable CSV file ({exc})") from None
    return fields, out


def read_parquet_table(path: str | os.PathLike):
    """A pyarrow Table (pyarrow is imported only here)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - depends on the installation
        raise InputError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    try:
        return pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None


def read_table(path: str | os.PathLike, *, scalars_as: str | None = None) -> Table:
    """Read a ``.jsonl``/``.ndjson``/``.json``, ``.csv`` or ``.parquet`` file (see the module docstring).

    ``scalars_as``: a JSON row that is a string becomes ``{scalars_as: string}`` (a list of prompts)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise InputError(f"{path}: unsupported table; expected .jsonl, .json, .csv or .parquet")
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if suffix == ".parquet":
        table = read_parquet_table(path)
        records = [Record(i, f"{path}: row {i}", rec) for i, rec in enumerate(table.to_pylist(), 1)]
        return Table(path, list(table.column_names), records)
    text = read_text(path)
    if suffix == ".csv":
        columns, records = _csv(path, text)
        return Table(path, columns, records)
    records = _jsonl(path, text, scalars_as)
    return Table(path, list(dict.fromkeys(k for r in records for k in r.values)), records)


def table_columns(path: str | os.PathLike) -> list[str]:
    """Column names of a table file (JSONL: the keys of all rows, in first-seen order)."""
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        try:
            return list(pq.read_schema(path).names)
        except Exception as exc:
            raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
    return read_table(path).columns

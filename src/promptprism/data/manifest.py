"""Manifests of raw generations, and image folders paired with a prompts file.

A *manifest* is a table with one row per generation (JSONL, CSV or Parquet):

* the prompt: ``prompt`` (text) or ``prompt_image`` (an image path, the captioning direction);
* the output: ``output`` (text) or ``image`` (an image path);
* optional ``id``; every other column is kept as metadata.

Image paths are relative to the manifest's folder (absolute paths are kept as they are).

An *image folder* is paired with a *prompts file* (a table with ``id`` and ``prompt``) by an explicit rule,
never by directory-listing order:

* ``stem`` (the default): an image belongs to the prompt whose ``id`` equals the image's file stem
  (``cat-01.png`` -> id ``cat-01``), or equals the stem without a trailing ``_<k>`` sample number
  (``cat-01_3.png``), or names the sub-folder the image is in (``cat-01/3.png``). An exact stem wins.
* a mapping column: when the prompts file has an ``image`` column, each row names its image (relative to
  the folder) and the file is read as a manifest.

Every image must match a prompt and every prompt must have at least one image; anything else is an error
that lists the names that do not match. Rows come out in prompts-file order, images of one prompt in
natural file-name order, so results do not depend on the file system.

Errors name the file, the 1-based row (and line, for JSONL and CSV) and the path at fault.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError

MANIFEST_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".parquet")
PROMPTS_FILE_NAMES = tuple(f"prompts{s}" for s in (".jsonl", ".csv", ".parquet"))
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")
PROMPT_COLUMNS = ("prompt", "prompt_image")
OUTPUT_COLUMNS = ("output", "image")
_SAMPLE_SUFFIX = re.compile(r"^(?P<id>.+)[_](?P<k>\d+)$")


@dataclass(frozen=True)
class Row:
    """One generation. Exactly one of ``prompt``/``prompt_image`` and of ``output``/``image`` is set."""

    number: int  #: 1-based row number in the source table
    where: str  #: "FILE: row N (line L)", used in messages
    prompt: str | None = None
    prompt_image: Path | None = None
    output: str | None = None
    image: Path | None = None
    id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def prompt_label(self) -> str:
        return self.prompt if self.prompt is not None else str(self.prompt_image)

    @property
    def output_label(self) -> str:
        return self.output if self.output is not None else str(self.image)


@dataclass(frozen=True)
class Manifest:
    """Validated rows plus what kind each side is ('text' or 'image')."""

    rows: list[Row]
    source: str
    prompt_kind: str
    output_kind: str
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)


# ---------------------------------------------------------------------------------------------- tables
def _iter_jsonl(path: Path) -> Iterator[tuple[int, str, dict]]:
    number = 0
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            number += 1
            where = f"{path}: row {number} (line {line_no})"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise InputError(f"{where}: expected a JSON object with keys such as 'prompt' and 'output', "
                                 f"got {type(obj).__name__}")
            yield number, where, obj


def _iter_csv(path: Path) -> Iterator[tuple[int, str, dict]]:
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames is None:
            return
        number = 0
        for rec in reader:
            number += 1
            if None in rec:
                raise InputError(f"{path}: row {number} (line {reader.line_num}): has more fields than the "
                                 f"header ({len(reader.fieldnames)})")
            yield number, f"{path}: row {number} (line {reader.line_num})", rec


def _csv_columns(path: Path) -> list[str]:
    with open(path, encoding="utf-8-sig", newline="") as fh:
        header = next(csv.reader(fh), None)
    return list(header or [])


def read_parquet_table(path: Path):
    """A pyarrow Table (pyarrow is imported only here)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - depends on the installation
        raise InputError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    try:
        return pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None


def _iter_parquet(path: Path) -> Iterator[tuple[int, str, dict]]:
    table = read_parquet_table(path)
    for number, rec in enumerate(table.to_pylist(), 1):
        yield number, f"{path}: row {number}", rec


def _read_table(path: Path) -> tuple[list[str] | None, list[tuple[int, str, dict]]]:
    """(declared columns or None, rows); rows are (1-based number, where, record)."""
    suffix = path.suffix.lower()
    try:
        if suffix in (".jsonl", ".ndjson"):
            return None, list(_iter_jsonl(path))
        if suffix == ".csv":
            return _csv_columns(path), list(_iter_csv(path))
        if suffix == ".parquet":
            return list(read_parquet_table(path).column_names), list(_iter_parquet(path))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise InputError(f"{path}: not a readable CSV file ({exc})") from None
    raise InputError(f"{path}: unsupported table; expected .jsonl, .csv or .parquet")


# ------------------------------------------------------------------------------------------- validation
def _text(value: Any, where: str, column: str, *, allow_empty: bool) -> str:
    if value is None:
        raise InputError(f"{where}: column {column!r} is empty; every row needs one")
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise InputError(f"{where}: column {column!r} must be text, got {type(value).__name__}")
    text = value if isinstance(value, str) else str(value)
    if not allow_empty and not text.strip():
        raise InputError(f"{where}: column {column!r} is empty; every row needs one")
    return text


def check_image(path: Path, where: str, notes: list[str] | None = None) -> None:
    """The file exists and PIL can identify it; a non-RGB mode is recorded in ``notes``."""
    if not path.is_file():
        raise InputError(f"{where}: image file {str(path)!r} does not exist")
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            mode = im.mode
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise InputError(f"{where}: image file {str(path)!r} is not a readable image ({exc})") from None
    if mode != "RGB" and notes is not None:
        notes.append(f"{where}: image {str(path)!r} has mode {mode}; converted to RGB")


def _resolve(base: Path, value: str) -> Path:
    p = Path(value)
    return p if p.is_absolute() else base / p


def _pick(columns: set[str], options: tuple[str, ...], path: Path, what: str, found: list[str]) -> str:
    present = [c for c in options if c in columns]
    if not present:
        raise InputError(f"{path}: no {what} column; expected one of {', '.join(repr(c) for c in options)} "
                         f"(found: {', '.join(repr(c) for c in found) or 'no columns'})")
    if len(present) > 1:
        raise InputError(f"{path}: has both {present[0]!r} and {present[1]!r} columns; keep the one that "
                         f"holds the {what} (rename the other)")
    return present[0]


def _build(path: Path, columns: list[str] | None, records: list[tuple[int, str, dict]],
           base: Path) -> Manifest:
    if not records:
        raise InputError(f"{path}: the manifest has zero rows; expected one row per generation")
    if columns is None:  # JSONL: the union of keys, in first-seen order
        columns = list(dict.fromkeys(k for _, _, rec in records for k in rec))
    colset = set(columns)
    p_col = _pick(colset, PROMPT_COLUMNS, path, "prompt", columns)
    o_col = _pick(colset, OUTPUT_COLUMNS, path, "output", columns)
    notes: list[str] = []
    rows: list[Row] = []
    reserved = {"id", *PROMPT_COLUMNS, *OUTPUT_COLUMNS}
    for number, where, rec in records:
        kw: dict[str, Any] = {}
        if p_col == "prompt":
            kw["prompt"] = _text(rec.get("prompt"), where, "prompt", allow_empty=False)
        else:
            p = _resolve(base, _text(rec.get("prompt_image"), where, "prompt_image", allow_empty=False))
            check_image(p, where, notes)
            kw["prompt_image"] = p
        if o_col == "output":
            kw["output"] = _text(rec.get("output"), where, "output", allow_empty=True)
        else:
            p = _resolve(base, _text(rec.get("image"), where, "image", allow_empty=False))
            check_image(p, where, notes)
            kw["image"] = p
        rid = rec.get("id")
        kw["id"] = None if rid is None or rid == "" else str(rid)
        kw["meta"] = {k: v for k, v in rec.items() if k not in reserved}
        rows.append(Row(number=number, where=where, **kw))
    return Manifest(rows=rows, source=str(path), prompt_kind="text" if p_col == "prompt" else "image",
                    output_kind="text" if o_col == "output" else "image", notes=notes)


def table_columns(path: str | os.PathLike) -> list[str]:
    """Column names of a table file (JSONL: keys of the first row)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            return list(pq.read_schema(path).names)
        except Exception as exc:
            raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
    if suffix == ".csv":
        return _csv_columns(path)
    for _, _, rec in _iter_jsonl(path):
        return list(rec)
    return []


def read_manifest(path: str | os.PathLike, *, base: str | os.PathLike | None = None) -> Manifest:
    """Read and validate a manifest. Image paths are resolved against ``base`` (default: its folder)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such manifest file")
    columns, records = _read_table(path)
    return _build(path, columns, records, Path(base) if base is not None else path.parent)


# ------------------------------------------------------------------------------ image folder + prompts
def _natural_key(name: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def find_prompts_file(folder: Path) -> Path | None:
    found = [folder / n for n in PROMPTS_FILE_NAMES if (folder / n).is_file()]
    if len(found) > 1:
        raise InputError(f"{folder}: holds several prompts files ({', '.join(p.name for p in found)}); "
                         f"keep one or pass prompts=FILE")
    return found[0] if found else None


def list_images(folder: Path) -> list[Path]:
    """Image files under ``folder`` (recursively), hidden files and folders skipped, in natural order."""
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in files:
            if not f.startswith(".") and Path(f).suffix.lower() in IMAGE_SUFFIXES:
                out.append(Path(root) / f)
    return sorted(out, key=lambda p: _natural_key(p.relative_to(folder).as_posix()))


def _preview(names: list[str], k: int = 5) -> str:
    shown = ", ".join(repr(n) for n in names[:k])
    return shown + (f" and {len(names) - k} more" if len(names) > k else "")


def read_image_folder(folder: str | os.PathLike, prompts: str | os.PathLike | None = None) -> Manifest:
    """Pair the images under ``folder`` with the rows of a prompts file (see the module doc for the rule).

    ``prompts`` defaults to ``prompts.jsonl`` / ``prompts.csv`` / ``prompts.parquet`` inside the folder.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder")
    prompts_path = Path(prompts) if prompts is not None else find_prompts_file(folder)
    if prompts_path is None:
        raise InputError(f"{folder}: an image folder needs a prompts file (id, prompt): put prompts.jsonl, "
                         f"prompts.csv or prompts.parquet in it, or pass prompts=FILE")
    if not prompts_path.is_file():
        raise InputError(f"{prompts_path}: no such prompts file")
    columns, records = _read_table(prompts_path)
    if columns is None:
        columns = list(dict.fromkeys(k for _, _, rec in records for k in rec))
    if "image" in columns:  # explicit mapping column: a manifest whose image paths are relative to the folder
        return _build(prompts_path, columns, records, folder)
    if not records:
        raise InputError(f"{prompts_path}: the prompts file has zero rows")
    for col in ("id", "prompt"):
        if col not in columns:
            raise InputError(f"{prompts_path}: no {col!r} column; a prompts file for an image folder needs "
                             f"'id' and 'prompt' (image file stem = id), or an 'image' column naming each "
                             f"image "
                             f"(found: {', '.join(repr(c) for c in columns) or 'no columns'})")
    by_id: dict[str, tuple[int, str, dict, str]] = {}
    for number, where, rec in records:
        rid = _text(rec.get("id"), where, "id", allow_empty=False).strip()
        text = _text(rec.get("prompt"), where, "prompt", allow_empty=False)
        if rid in by_id:
            raise InputError(f"{where}: id {rid!r} repeats {by_id[rid][1]}; ids must be unique")
        by_id[rid] = (number, where, rec, text)
    images = list_images(folder)
    if not images:
        raise InputError(f"{folder}: holds no image files ({', '.join(IMAGE_SUFFIXES)})")
    matched: dict[str, list[Path]] = {rid: [] for rid in by_id}
    unmatched: list[str] = []
    for img in images:
        rel = img.relative_to(folder)
        stem = img.stem
        m = _SAMPLE_SUFFIX.match(stem)
        if stem in by_id:
            rid = stem
        elif m and m.group("id") in by_id:
            rid = m.group("id")
        elif len(rel.parts) > 1 and rel.parts[-2] in by_id:
            rid = rel.parts[-2]
        else:
            unmatched.append(rel.as_posix())
            continue
        matched[rid].append(img)
    if unmatched:
        raise InputError(f"{folder}: {len(unmatched)} image(s) match no id in {prompts_path}: "
                         f"{_preview(unmatched)}; an image's file stem (or stem without '_<k>', or its "
                         f"sub-folder) must equal a prompt id")
    missing = [rid for rid, imgs in matched.items() if not imgs]
    if missing:
        raise InputError(f"{prompts_path}: {len(missing)} prompt id(s) have no image in {folder}: "
                         f"{_preview(missing)}; the prompts and the images do not match")
    notes: list[str] = []
    rows: list[Row] = []
    for rid, (number, where, rec, text) in by_id.items():
        meta = {k: v for k, v in rec.items() if k not in ("id", "prompt")}
        for img in matched[rid]:
            w = f"{where} ({img.relative_to(folder).as_posix()})"
            check_image(img, w, notes)
            rows.append(Row(number=number, where=w, prompt=text, image=img, id=rid, meta=meta))
    return Manifest(rows=rows, source=str(folder), prompt_kind="text", output_kind="image", notes=notes)

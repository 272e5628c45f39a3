"""Manifests of raw generations, and image folders paired with a prompts file.

A *manifest* is a table with one row per generation (JSONL, CSV or Parquet):

* the prompt: ``prompt`` (text) or ``prompt_image`` (an image path, the captioning direction);
* the output: ``output`` (text) or ``image`` (an image path);
* optional ``id`` (unique: a repeated id is an error naming both rows); every other column is kept as
  metadata.

Other column names are mapped with ``columns={"prompt": "question", "output": "answer", "id": "qid"}``
(roles: ``prompt``, ``prompt_image``, ``output``, ``image``, ``id``). Tables are read by
:func:`promptprism.data.tables.read_table` (UTF-8 only, errors name the line) and images checked by
:mod:`promptprism.data.imageio` (pixel limit; how 16-bit, palette and alpha images are converted).

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

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, OptionError
from .imageio import describe_conversion, image_header
from .tables import Table, check_text, read_table, table_columns  # noqa: F401  (table_columns re-exported)

MANIFEST_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".parquet")
PROMPTS_FILE_NAMES = tuple(f"prompts{s}" for s in (".jsonl", ".csv", ".parquet"))
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")
PROMPT_COLUMNS = ("prompt", "prompt_image")
OUTPUT_COLUMNS = ("output", "image")
#: the roles a ``columns=`` mapping can assign
ROLES = ("prompt", "prompt_image", "output", "image", "id")
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
        """The prompt text, or the prompt image's path."""
        return self.prompt if self.prompt is not None else str(self.prompt_image)

    @property
    def output_label(self) -> str:
        """The output text, or the image's path."""
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

    def __repr__(self) -> str:
        """One line: source, rows, the kind of each side (never the rows themselves)."""
        notes = f", {len(self.notes)} notes" if self.notes else ""
        return (f"Manifest({self.source!r}, {len(self.rows)} rows, prompts: {self.prompt_kind}, "
                f"outputs: {self.output_kind}{notes})")


# ------------------------------------------------------------------------------------------- validation
def _text(value: Any, where: str, column: str, *, allow_empty: bool) -> str:
    if value is None:
        raise InputError(f"{where}: column {column!r} is empty; every row needs one")
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise InputError(f"{where}: column {column!r} must be text, got {type(value).__name__}")
    text = check_text(value if isinstance(value, str) else str(value), where, column)
    if not allow_empty and not text.strip():
        raise InputError(f"{where}: column {column!r} is empty; every row needs one")
    return text


def check_image(path: Path, where: str, notes: list[str] | None = None) -> None:
    """The file exists, Pillow can identify it and it is within the pixel limit (header only, no decoding);
    how a non-RGB mode is converted (:mod:`promptprism.data.imageio`) is recorded in ``notes``."""
    if not path.is_file():
        raise InputError(f"{where}: image file {str(path)!r} does not exist")
    mode, _, info = image_header(path, f"{where}: image file {str(path)!r}")
    what = describe_conversion(mode, info)
    if what is not None and notes is not None:
        notes.append(f"{where}: image {str(path)!r} has {what}")


def _resolve(base: Path, value: str) -> Path:
    p = Path(value)
    return p if p.is_absolute() else base / p


def check_columns(columns: Mapping[str, str] | None) -> dict[str, str]:
    """Validate a column mapping ``{role: column in the file}``; roles are ``ROLES``."""
    if columns is None:
        return {}
    if not isinstance(columns, Mapping):
        raise OptionError(f"columns must map roles to column names, e.g. {{'prompt': 'question'}}, got "
                          f"{type(columns).__name__}")
    out: dict[str, str] = {}
    for role, col in columns.items():
        if role not in ROLES:
            raise OptionError(f"columns: unknown role {role!r}; expected one of "
                              f"{', '.join(repr(r) for r in ROLES)}")
        if not isinstance(col, str) or not col:
            raise OptionError(f"columns: the column for {role!r} must be a non-empty string, got {col!r}")
        out[role] = col
    for a, b in (("prompt", "prompt_image"), ("output", "image")):
        if a in out and b in out:
            raise OptionError(f"columns: map either {a!r} or {b!r}, not both")
    sources = list(out.values())
    dup = next((c for c in sources if sources.count(c) > 1), None)
    if dup is not None:
        raise OptionError(f"columns: column {dup!r} is mapped to more than one role")
    return out


def _roles(path: Path, found: list[str], mapping: dict[str, str]) -> dict[str, str]:
    """{role: source column} for the prompt, the output and the id, the mapping taking precedence."""
    colset = set(found)
    shown = ", ".join(repr(c) for c in found) or "no columns"
    for role, col in mapping.items():
        if col not in colset:
            raise InputError(f"{path}: no column {col!r} (mapped to {role!r}); found: {shown}")
    roles: dict[str, str] = {}
    for what, options in (("prompt", PROMPT_COLUMNS), ("output", OUTPUT_COLUMNS)):
        mapped = [r for r in options if r in mapping]
        if mapped:
            roles[mapped[0]] = mapping[mapped[0]]
            continue
        present = [c for c in options if c in colset and c not in mapping.values()]
        taken = [(c, r) for r, c in mapping.items() if c in options and c in colset]
        if not present and taken:
            col, other = taken[0]
            raise InputError(f"{path}: column {col!r} is mapped to the role {other!r}, so the {what} needs "
                             f"another column; map it too (columns={{'{options[0]}': NAME}}, the CLI's "
                             f"--columns {options[0]}=NAME)")
        if not present:
            raise InputError(f"{path}: no {what} column; expected one of "
                             f"{', '.join(repr(c) for c in options)} (found: {shown}); map yours with "
                             f"columns={{'{options[0]}': NAME}} (the CLI's --columns {options[0]}=NAME)")
        if len(present) > 1:
            raise InputError(f"{path}: has both {present[0]!r} and {present[1]!r} columns; keep the one "
                             f"that holds the {what} (rename the other), or map one with columns=")
        roles[present[0]] = present[0]
    if "id" in mapping:
        roles["id"] = mapping["id"]
    elif "id" in colset and "id" not in mapping.values():
        roles["id"] = "id"
    return roles


def _build(table: Table, base: Path, columns: Mapping[str, str] | None = None) -> Manifest:
    path = table.path
    if not table.records:
        raise InputError(f"{path}: the manifest has zero rows; expected one row per generation")
    roles = _roles(path, table.columns, check_columns(columns))
    used = set(roles.values())
    notes: list[str] = []
    rows: list[Row] = []
    seen_ids: dict[str, str] = {}
    numbers: dict[str, list[tuple[str, Any]]] = {}
    blank: list[str] = []  # rows whose output text is empty or white space
    for rec in table.records:
        where, values = rec.where, rec.values
        kw: dict[str, Any] = {}
        for role, col in roles.items():
            if role == "id":
                rid = values.get(col)
                kw["id"] = None if rid is None or rid == "" else _text(rid, where, col, allow_empty=True)
                if kw["id"] is not None:
                    if kw["id"] in seen_ids:
                        raise InputError(f"{where}: id {kw['id']!r} repeats {seen_ids[kw['id']]}; ids must "
                                         "be unique (one row per generation)")
                    seen_ids[kw["id"]] = where
            elif role in ("prompt", "output"):
                raw = values.get(col)
                kw[role] = _text(raw, where, col, allow_empty=role == "output")
                if role == "output" and not kw[role].strip():
                    blank.append(where)
                if isinstance(raw, (int, float)) and not isinstance(raw, bool):
                    numbers.setdefault(col, []).append((where, raw))
            else:  # an image path
                p = _resolve(base, _text(values.get(col), where, col, allow_empty=False))
                check_image(p, where, notes)
                kw[role] = p
        kw["meta"] = {k: v for k, v in values.items() if k not in used}
        rows.append(Row(number=rec.number, where=where, **kw))
    for col, found in numbers.items():  # (a JSON 42 or a Parquet integer column: an id picked by mistake?)
        where, value = found[0]
        share = "every row" if len(found) == len(rows) else f"{len(found)} of {len(rows)} rows"
        notes.append(f"column {col!r} holds numbers, not text, in {share} (first {where}: {value!r}); they "
                     "are read as text; if the column is an id or a label, map the text column with columns= "
                     "(CLI --columns)")
    if blank:  # (a model may answer nothing: kept, but it is one embedding however often it occurs)
        notes.append(f"{len(blank)} of {len(rows)} rows have an empty output (first {blank[0]}); each is "
                     "embedded as the empty text and counted as a generation; if the model failed there "
                     "(generate asks again on an empty answer), drop those rows")
    return Manifest(rows=rows, source=str(path), prompt_kind="text" if "prompt" in roles else "image",
                    output_kind="text" if "output" in roles else "image", notes=notes)


def read_manifest(path: str | os.PathLike, *, base: str | os.PathLike | None = None,
                  columns: Mapping[str, str] | None = None) -> Manifest:
    """Read and validate a manifest. Image paths are resolved against ``base`` (default: its folder).

    ``columns`` maps the roles to the file's own column names, e.g. ``{"prompt": "question", "output":
    "answer"}``; roles are ``prompt``, ``prompt_image``, ``output``, ``image`` and ``id``. A mapped column
    takes the role even when a column of the role's name exists (that one is then kept as metadata).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such manifest file")
    return _build(read_table(path), Path(base) if base is not None else path.parent, columns)


# ------------------------------------------------------------------------------ image folder + prompts
def _natural_key(name: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def find_prompts_file(folder: Path) -> Path | None:
    """The one ``prompts.jsonl|csv|parquet`` inside ``folder`` (None if absent; several are an error)."""
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


def _prompts_by_id(table: Table, prompts_path: Path, id_col: str, prompt_col: str) -> dict[str, tuple]:
    """The prompts file's rows by id: id -> (row number, where, values, prompt text); ids unique."""
    if not table.records:
        raise InputError(f"{prompts_path}: the prompts file has zero rows")
    for col in (id_col, prompt_col):
        if col not in table.columns:
            raise InputError(f"{prompts_path}: no {col!r} column; a prompts file for an image folder needs "
                             f"'id' and 'prompt' (image file stem = id), or an 'image' column naming each "
                             f"image (found: {', '.join(repr(c) for c in table.columns) or 'no columns'}); "
                             "map yours with columns=")
    by_id: dict[str, tuple[int, str, dict, str]] = {}
    for rec in table.records:
        number, where, values = rec.number, rec.where, rec.values
        rid = _text(values.get(id_col), where, id_col, allow_empty=False).strip()
        text = _text(values.get(prompt_col), where, prompt_col, allow_empty=False)
        if rid in by_id:
            raise InputError(f"{where}: id {rid!r} repeats {by_id[rid][1]}; ids must be unique")
        by_id[rid] = (number, where, values, text)
    return by_id


def _match_images(folder: Path, prompts_path: Path, ids: Mapping[str, Any]) -> dict[str, list[Path]]:
    """Each id's images under ``folder`` (file stem = id, stem without '_<k>', or sub-folder = id); every
    image must match an id and every id have an image."""
    images = list_images(folder)
    if not images:
        raise InputError(f"{folder}: holds no image files ({', '.join(IMAGE_SUFFIXES)})")
    matched: dict[str, list[Path]] = {rid: [] for rid in ids}
    unmatched: list[str] = []
    for img in images:
        rel = img.relative_to(folder)
        stem = img.stem
        m = _SAMPLE_SUFFIX.match(stem)
        if stem in ids:
            rid = stem
        elif m and m.group("id") in ids:
            rid = m.group("id")
        elif len(rel.parts) > 1 and rel.parts[-2] in ids:
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
    return matched


def read_image_folder(folder: str | os.PathLike, prompts: str | os.PathLike | None = None, *,
                      columns: Mapping[str, str] | None = None) -> Manifest:
    """Pair the images under ``folder`` with the rows of a prompts file (see the module doc for the rule).

    ``prompts`` defaults to ``prompts.jsonl`` / ``prompts.csv`` / ``prompts.parquet`` inside the folder.
    ``columns`` maps the roles ``id``, ``prompt`` and ``image`` to the prompts file's own column names.
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
    table = read_table(prompts_path)
    mapping = check_columns(columns)
    if mapping.get("image", "image") in table.columns:  # explicit mapping column: a manifest whose image
        return _build(table, folder, mapping)  # paths are relative to the folder
    id_col, prompt_col = mapping.get("id", "id"), mapping.get("prompt", "prompt")
    by_id = _prompts_by_id(table, prompts_path, id_col, prompt_col)
    matched = _match_images(folder, prompts_path, by_id)
    notes: list[str] = []
    rows: list[Row] = []
    for rid, (number, where, rec, text) in by_id.items():
        meta = {k: v for k, v in rec.items() if k not in (id_col, prompt_col)}
        for img in matched[rid]:
            w = f"{where} ({img.relative_to(folder).as_posix()})"
            check_image(img, w, notes)
            rows.append(Row(number=number, where=w, prompt=text, image=img, id=rid, meta=meta))
    return Manifest(rows=rows, source=str(folder), prompt_kind="text", output_kind="image", notes=notes)

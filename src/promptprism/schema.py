"""JSON Schemas of result.json and of ``--json``, one per result kind, derived from the result classes.

The schemas are generated from the fields of each result class (their type hints, the records nested in
them and :data:`promptprism.results.FIELD_TYPES`), so they cannot drift from what is written; the package
ships them as ``promptprism/schemas/<kind>.schema.json`` (and ``<kind>.summary.schema.json`` for
``--json``), rendered in docs/results.md. ``python -m promptprism.schema DIR`` writes them; a test checks
that the shipped files are what this module generates and validates every result.json the suite writes.

Conventions: a ``float`` field may be ``null`` (non-finite numbers are written as null); fields with a
default may be absent (files of older versions are read with the defaults,
:func:`promptprism.results.migrate`); the ``descriptions`` record of ``promptprism describe`` has a
schema of its own (:data:`DESCRIPTIONS`), and so has the ``quality`` record of ``promptprism quality``
(:data:`QUALITY`).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, TypeVar, Union

from .results import FIELD_TYPES, SCHEMA_VERSION, _registry

DRAFT = "https://json-schema.org/draft/2020-12/schema"
#: where the shipped schemas lie inside the package
SHIPPED = Path(__file__).with_name("schemas")

_NAME_ENTRY = {
    "type": "object",
    "required": ["status"],
    "properties": {
        "status": {"type": "string"},
        "name": {"type": ["string", "null"]},
        "accuracy": {"type": ["number", "null"]},
        "interval": {"type": ["array", "null"], "items": {"type": ["number", "null"]}},
        "p_value": {"type": ["number", "null"]},
        "measure": {"type": "string"},
        "candidates": {"type": "array", "items": {"type": "object"}},
        "note": {"type": ["string", "null"]},
    },
}
#: the record ``promptprism describe`` adds (``descriptions``): one entry per mode, deviation or cluster
DESCRIPTIONS = {
    "type": "object",
    "properties": {
        "config": {"type": "object"},
        "modes": {"type": "array", "items": {"$ref": "#/$defs/name_entry"}},
        "deviations": {"type": "array", "items": {"$ref": "#/$defs/name_entry"}},
        "clusters": {"type": "array", "items": {"$ref": "#/$defs/name_entry"}},
        "notes": {"type": "array", "items": {"type": "string"}},
        "calls": {"type": "object", "properties": {"requests": {"type": "integer"},
                                                   "cache_hits": {"type": "integer"}}},
    },
}
_NUMBER = {"type": ["number", "null"]}
_TEXT = {"type": "string"}
#: one finding's closeness verdict (``promptprism quality --real``): two models, or K with their ranking
_QUALITY_ENTRY = {
    "type": "object",
    "required": ["id", "models", "verdict"],
    "properties": {
        "id": _TEXT, "prompts": {"type": "integer"}, "example_prompts": {"type": "array", "items": _TEXT},
        "models": {"type": "object", "additionalProperties": {
            # mean: over the prompts both (every) model hold, each prompt's mean at its weight; n_shared:
            # the samples on those prompts; pooled_mean: the plain mean of all n
            "type": "object", "properties": {"mean": _NUMBER, "n": {"type": "integer"},
                                             "n_shared": {"type": "integer"}, "pooled_mean": _NUMBER,
                                             "interval": {"type": "object"}}}},
        "shared_prompts": {"type": "integer"},
        # null where no prompt holds both models' scored samples (not tested)
        "difference": _NUMBER, "p_value": _NUMBER, "p_adjusted": _NUMBER,
        "pairs": {"type": "array", "items": {"type": "object"}}, "ranking": {"type": "object"},
        "closer": {"type": ["string", "null"]}, "note": {"type": ["string", "null"]}, "verdict": _TEXT,
        # quality --metrics: per model precision, recall, density, coverage, fd, n, intervals, notes
        "metrics": {"type": "object", "additionalProperties": {"type": "object"}},
        # quality --facet: the same verdict per facet value (entries with facet and value), and the values
        # that could not be scored
        "facets": {"type": "array", "items": {"type": "object"}}, "facets_skipped": {"type": "array"},
        "facet": _TEXT, "value": _TEXT,
    },
}
#: one finding's judge verdict (``promptprism quality --judge-base-url``): per pair of models the counts, the
#: win rate with its interval and the sign test
_JUDGE_ENTRY = {
    "type": "object",
    "required": ["id", "comparisons", "verdict"],
    "properties": {
        "id": _TEXT, "prompts": {"type": "integer"},
        "comparisons": {"type": "array", "items": {
            "type": "object",
            "required": ["a", "b", "pairs", "wins", "losses", "ties", "win_rate", "interval", "p_value"],
            "properties": {
                "a": _TEXT, "b": _TEXT, "pairs": {"type": "integer"}, "wins": {"type": "integer"},
                "losses": {"type": "integer"}, "ties": {"type": "integer"}, "cancelled": {"type": "integer"},
                "unreadable": {"type": "integer"}, "first_position_share": _NUMBER, "win_rate": _NUMBER,
                "interval": {"type": "object"}, "p_value": _NUMBER, "p_adjusted": _NUMBER,
                "preferred": {"type": ["string", "null"]}}}},
        "ranking": {"type": "object"}, "preferred": {"type": ["string", "null"]}, "verdict": _TEXT,
        "facets": {"type": "array", "items": {"type": "object"}}, "facets_skipped": {"type": "array"},
        "facet": _TEXT, "value": _TEXT,
    },
}
#: the record ``promptprism quality`` adds (``quality``): closeness per finding, and the judge's preferences
QUALITY = {
    "type": "object",
    "properties": {
        "closeness": _TEXT, "reference": _TEXT, "models": {"type": "array", "items": _TEXT},
        "findings": {"type": "array", "items": {"$ref": "#/$defs/quality_entry"}},
        "overall": {"$ref": "#/$defs/quality_entry"}, "verdict": _TEXT, "tests": {"type": "integer"},
        "metrics": {"type": "boolean"},
        "judge": {"type": "object", "properties": {
            "rubric": _TEXT, "pairs": {"type": "integer"}, "seed": {"type": "integer"}, "order": _TEXT,
            "findings": {"type": "array", "items": _JUDGE_ENTRY}, "endpoint": {"type": "object"},
            "calls": {"type": "object"}, "verdict": _TEXT}},
    },
}
#: one recorded input set (:mod:`promptprism.provenance`)
INPUT_RECORD = {
    "type": "object",
    "required": ["path", "absolute", "bytes", "sha256"],
    "properties": {
        "path": {"type": "string"}, "absolute": {"type": "string"}, "bytes": {"type": "integer"},
        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"}, "rows": {"type": "integer"},
        "prompts_sha256": {"type": ["string", "null"]}, "folder_rule": {"type": "integer"},
    },
}


def _type(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of a type hint (dataclasses become ``$defs`` entries)."""
    if hint is Any or isinstance(hint, TypeVar):
        return {}
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = [h for h in typing.get_args(hint) if h is not type(None)]
        nullable = len(options) < len(typing.get_args(hint))
        parts = [_type(h, defs) for h in options] + ([{"type": "null"}] if nullable else [])
        return parts[0] if len(parts) == 1 else {"anyOf": parts}
    simple = {float: ["number", "null"], int: "integer", str: "string", bool: "boolean"}
    if hint in simple:
        return {"type": simple[hint]}
    if hint is list or origin is list:
        args = typing.get_args(hint)
        return {"type": "array", **({"items": _type(args[0], defs)} if args else {})}
    if hint is dict or origin is dict:
        return {"type": "object"}
    if dataclasses.is_dataclass(hint):
        if hint.__name__ not in defs:
            defs[hint.__name__] = {}  # (a placeholder first: records may nest themselves)
            defs[hint.__name__] = _record(hint, defs)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    return {}


def _record(cls: type, defs: dict[str, Any], overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The schema of one dataclass record: its fields, the required ones, nothing else."""
    hints = typing.get_type_hints(cls)
    nested = getattr(cls, "nested", {})
    props, required = {}, []
    for f in dataclasses.fields(cls):
        if f.name.startswith("_"):
            continue
        hint = list[nested[f.name]] if f.name in nested else (overrides or {}).get(f.name, hints.get(f.name))
        props[f.name] = _type(hint, defs)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    if "descriptions" in props and hints.get("descriptions") is dict:
        props["descriptions"] = {"$ref": "#/$defs/descriptions"}
    if "quality" in props and hints.get("quality") is dict:
        props["quality"] = {"$ref": "#/$defs/quality"}
    if "inputs" in props:
        props["inputs"] = {"type": "object", "additionalProperties": {"$ref": "#/$defs/input"}}
    if "kind" in getattr(cls, "__dataclass_fields__", {}) or hasattr(cls, "nested"):
        props = {"kind": {"type": "string"}, "schema_version": {"type": "integer"}, **props}
    return {"type": "object", "required": required, "properties": props, "additionalProperties": False}


def result_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of a ``kind``'s result.json (draft 2020-12)."""
    cls = _registry()[kind]
    defs: dict[str, Any] = {"descriptions": DESCRIPTIONS, "name_entry": _NAME_ENTRY, "input": INPUT_RECORD}
    body = _record(cls, defs, FIELD_TYPES.get(kind))
    if '"#/$defs/quality"' in json.dumps([body, defs]):  # only the kinds with a quality record
        defs.update(quality=QUALITY, quality_entry=_QUALITY_ENTRY)
    body["properties"]["kind"] = {"const": kind}
    body["properties"]["schema_version"] = {"type": "integer", "minimum": 1, "maximum": SCHEMA_VERSION}
    body["required"] = ["kind", "schema_version", *body["required"]]
    return {"$schema": DRAFT, "$id": f"promptprism/{kind}.schema.json",
            "title": f"promptprism {kind} result (schema version {SCHEMA_VERSION})", **body, "$defs": defs}


def summary_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of what ``--json`` prints for a ``kind``: the result's fields (lists possibly cut,
    K-way comparisons labelled), ``truncated`` (JSON path -> full length), ``files`` and ``verdict``."""
    schema = json.loads(json.dumps(result_schema(kind)))
    schema["$id"] = f"promptprism/{kind}.summary.schema.json"
    schema["title"] = f"promptprism {kind} --json summary (schema version {SCHEMA_VERSION})"
    props = schema["properties"]
    props["truncated"] = {"type": "object", "additionalProperties": {"type": "integer"}}
    props["files"] = {"type": "object", "additionalProperties": {"type": "string"}}
    props.setdefault("verdict", {"type": "string"})
    if kind == "metrics":
        props["table"] = {"type": "array", "items": {"type": "object"}}
    if kind == "promptsplit_kway":
        for field, label in (("pairs", {"pair": {"type": "array", "items": {"type": "string"},
                                                 "minItems": 2, "maxItems": 2}}),
                             ("one_vs_rest", {"model": {"type": "string"}})):
            props[field] = {"type": "array", "items": {"allOf": [
                {"type": "object", "required": list(label), "properties": label},
                {"$ref": "#/$defs/PromptSplitResult_labelled"}]}}
        labelled = json.loads(json.dumps(schema["$defs"]["PromptSplitResult"]))
        labelled["properties"].update({"pair": {}, "model": {}})
        schema["$defs"]["PromptSplitResult_labelled"] = labelled
    schema["required"] = [*schema["required"], "files", "truncated"]
    return schema


def kinds() -> list[str]:
    """Every result kind promptprism defines (not kinds a program registered by subclassing ``Result``)."""
    return sorted(k for k, cls in _registry().items() if cls.__module__.startswith("promptprism."))


def shipped_schema(kind: str, *, summary: bool = False) -> dict[str, Any]:
    """The schema shipped in the package for ``kind`` (``summary``: the ``--json`` one)."""
    name = f"{kind}.summary.schema.json" if summary else f"{kind}.schema.json"
    return json.loads((SHIPPED / name).read_text(encoding="utf-8"))


def write_schemas(folder: str | Path = SHIPPED) -> list[Path]:
    """Write every kind's result and summary schema into ``folder``; their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for kind in kinds():
        for name, schema in ((f"{kind}.schema.json", result_schema(kind)),
                             (f"{kind}.summary.schema.json", summary_schema(kind))):
            path = folder / name
            path.write_text(json.dumps(schema, indent=1, sort_keys=False) + "\n", encoding="utf-8")
            written.append(path)
    return written


if __name__ == "__main__":  # python -m promptprism.schema [DIR]
    for p in write_schemas(sys.argv[1] if len(sys.argv) > 1 else SHIPPED):
        print(p)

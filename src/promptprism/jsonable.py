"""Results' values as plain JSON: numpy scalars and arrays, dataclasses and non-finite floats converted
(:func:`to_jsonable`), and JSON text that a person can read (:func:`readable_json`)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

#: the field names of each dataclass type :func:`to_jsonable` has met (None: not a dataclass)
_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}
#: values :func:`to_jsonable` returns as they are
_PLAIN = (str, int, bool, type(None))


def _field_names(cls: type) -> tuple[str, ...] | None:
    names = _FIELD_NAMES.get(cls, ())
    if names == ():
        names = _FIELD_NAMES[cls] = (tuple(f.name for f in dataclasses.fields(cls))
                                     if dataclasses.is_dataclass(cls) else None)
    return names


def to_jsonable(obj: Any) -> Any:
    """numpy scalars/arrays and dataclasses to plain JSON types; non-finite floats become None. (Each type's
    dataclass fields are looked up once: a K-way result of 50 sets is ~5 million values.)"""
    import numpy as np  # (here, not at the top: ``import promptprism`` does not load numpy)

    cls = type(obj)
    if cls in _PLAIN:
        return obj
    if cls is float:
        return obj if math.isfinite(obj) else None
    names = _field_names(cls)
    if names is not None:
        return {name: to_jsonable(getattr(obj, name)) for name in names}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return _plain_list(obj) or [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, Path):
        return str(obj)
    return obj


#: :func:`readable_json` writes objects and lists one entry per line down to this many levels
PRETTY_DEPTH = 3


def readable_json(data: Any, indent: int = 2, depth: int = PRETTY_DEPTH) -> str:
    """``data`` as JSON text (NaN and infinity refused) whose objects and lists of objects put one entry per
    line, indented, for ``depth`` levels; deeper values, and other lists (a map's coordinates and points, a
    histogram) at any level, are written on one line by json's C encoder (``json.dumps`` with an indent
    runs its pure-Python encoder over every number: 5,000 map points took ~0.1 s)."""
    def write(value: Any, level: int) -> str:
        pad, inner = " " * (indent * level), " " * (indent * (level + 1))
        if level < depth and isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
            items = [f"{inner}{json.dumps(k)}: {write(v, level + 1)}" for k, v in value.items()]
            return "{\n" + ",\n".join(items) + f"\n{pad}}}"
        if level < depth and isinstance(value, list | tuple) and any(isinstance(v, dict) for v in value):
            return "[\n" + ",\n".join(f"{inner}{write(v, level + 1)}" for v in value) + f"\n{pad}]"
        return json.dumps(value, allow_nan=False)

    return write(data, 0)


def _plain_list(items: list | tuple) -> list | None:
    """``items`` as JSON values when every one is a plain float (non-finite ones None) or every one a plain
    int or str (the long lists of a result: coordinates, scores, labels), without a call per item; else
    None."""
    kinds = set(map(type, items))
    if kinds == {float}:
        return [v if math.isfinite(v) else None for v in items]
    if kinds and kinds <= {int, str}:
        return list(items)
    return None

"""Results objects: frozen dataclasses that serialise to ``result.json`` and load back unchanged."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from .errors import InputError
from .io import atomic_write_text

R = TypeVar("R", bound="Result")
_REGISTRY: dict[str, type[Result]] = {}


def to_jsonable(obj: Any) -> Any:
    """numpy scalars/arrays and dataclasses to plain JSON types; non-finite floats become None."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
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


@dataclasses.dataclass(frozen=True)
class Result:
    """Base of every method's result. Subclasses set ``kind`` and are registered for :func:`load_result`."""

    kind: ClassVar[str] = "result"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _REGISTRY[cls.kind] = cls

    def to_dict(self) -> dict:
        return {"kind": self.kind, **to_jsonable(self)}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls: type[R], data: dict) -> R:
        data = {k: v for k, v in data.items() if k != "kind"}
        return cls(**data)

    @classmethod
    def from_json(cls: type[R], text: str) -> R:
        return cls.from_dict(json.loads(text))

    def save(self, out_dir: str | os.PathLike) -> Path:
        """Write ``out_dir/result.json`` atomically and return its path."""
        return atomic_write_text(Path(out_dir) / "result.json", self.to_json())

    def _repr_html_(self) -> str:
        """A compact summary table for notebooks (per-kind summaries: ``promptprism.report.summary``)."""
        from .report.summary import summary_html

        return summary_html(self)


def load_result(path: str | os.PathLike) -> Result:
    """Load a ``result.json`` (or the folder holding one) into the right results class."""
    path = Path(path)
    if path.is_dir():
        path = path / "result.json"
    if not path.exists():
        raise InputError(f"{path}: no such file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: not a results file (expected a JSON object, got {type(data).__name__})")
    kind = data.get("kind")
    if kind not in _REGISTRY:
        raise InputError(f"{path}: unknown result kind {kind!r}; known: {', '.join(sorted(_REGISTRY))}")
    try:
        return _REGISTRY[kind].from_dict(data)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        detail = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise InputError(f"{path}: not a valid {kind} result ({detail})") from None

"""Results objects: frozen dataclasses that serialise to ``result.json`` and load back unchanged."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import threading
import types
import typing
from collections.abc import Callable, Iterator
from html import escape
from pathlib import Path
from typing import Any, ClassVar, TypeVar, Union

from ._gc import collection_paused
from .errors import InputError, OptionError
from .io import write_outputs
from .jsonable import readable_json, to_jsonable

R = TypeVar("R", bound="Result")
#: the version of result.json's layout this promptprism writes (``schema_version``); every version up to it
#: is read (:data:`MIGRATIONS` brings an older one up to date), a newer one is refused in one line. 1: the
#: files written before the field existed (no ``schema_version``); 2: ``schema_version`` and ``inputs``
#: (where each input set lies, relative to the results folder, with its fingerprint).
SCHEMA_VERSION = 2
#: {version: function(data) -> data of version + 1}, applied in order by :func:`load_result`
MIGRATIONS: dict[int, Callable[[dict], dict]] = {1: lambda data: {**data, "inputs": data.get("inputs", {})}}
_REGISTRY: dict[str, type[Result]] = {}
#: set by the package: imports every module that defines a result kind (they register themselves here when
#: imported; the package imports them lazily, so a result.json of any kind is read by the first
#: :func:`load_result`) and the report's summaries (:data:`SUMMARY_RENDERERS`)
LOAD_KINDS: Callable[[], None] | None = None
LOAD_SUMMARIES: Callable[[], None] | None = None


def _registry() -> dict[str, type[Result]]:
    """Every result kind, the modules that define them imported first."""
    if LOAD_KINDS is not None:
        LOAD_KINDS()
    return _REGISTRY


def _renderer(name: str) -> Callable[[Any], str] | None:
    """The summary renderer ``name`` ('text' or 'html'), the report's summaries loaded first."""
    if name not in SUMMARY_RENDERERS and LOAD_SUMMARIES is not None:
        LOAD_SUMMARIES()
    return SUMMARY_RENDERERS.get(name)


#: this thread's memo of results' dicts while :func:`one_dict_per_result` is active
_DICTS = threading.local()


@contextlib.contextmanager
def one_dict_per_result() -> Iterator[None]:
    """Inside, each result's :meth:`Result.to_dict` is computed once and returned again: saving a result
    reads it for result.json, for the report's embedded data and fingerprint and for the command's summary
    (a K-way result of 50 sets: ~5 million values, 2.3 s each time). What runs inside only reads the dicts."""
    if getattr(_DICTS, "memo", None) is not None:  # (already active: the outer one ends it)
        yield
        return
    _DICTS.memo = {}
    try:
        yield
    finally:
        _DICTS.memo = None


@dataclasses.dataclass(frozen=True)
class Result:
    """Base of every method's result. Subclasses set ``kind`` and are registered for :func:`load_result`."""

    kind: ClassVar[str] = "result"
    #: the input sets by name: {'path' (relative to the results folder), 'absolute', 'bytes', 'sha256',
    #: 'rows', 'prompts_sha256'} (:mod:`promptprism.provenance`); filled when the result is saved by a command
    inputs: dict = dataclasses.field(default_factory=dict, kw_only=True)
    #: fields holding lists of nested records, rebuilt by :meth:`from_dict`: {field: class with ``from_dict``}
    nested: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:  # (a shared base such as PerModelResult is no kind of its own)
            _REGISTRY[cls.kind] = cls
        # keep the compact repr: @dataclass does not replace a __repr__ the class itself defines
        cls.__repr__ = Result.__repr__  # type: ignore[method-assign]

    def __repr__(self) -> str:
        """A few lines: the kind, the sizes and the headline numbers (not every eigenvalue or sample)."""
        text = _renderer("text")
        return text(self) if text else f"<{type(self).__name__} ({self.kind})>"

    def to_dict(self) -> dict:
        """The result as JSON-ready plain data, with its ``kind`` and ``schema_version`` (inside
        :func:`one_dict_per_result`, the same dict again on each call)."""
        memo = getattr(_DICTS, "memo", None)
        hit = None if memo is None else memo.get(id(self))
        if hit is not None and hit[0] is self:
            return hit[1]
        data = {"kind": self.kind, "schema_version": SCHEMA_VERSION, **to_jsonable(self)}
        if memo is not None:
            memo[id(self)] = (self, data)
        return data

    def to_json(self, indent: int | None = 2) -> str:
        """The result as JSON text (NaN and infinity are refused): :func:`.jsonable.readable_json` with
        ``indent`` (its objects and lists of objects one entry per line down to
        :data:`.jsonable.PRETTY_DEPTH` levels, other lists on one line), or all on one line
        (``indent=None``)."""
        data = self.to_dict()
        return json.dumps(data, allow_nan=False) if indent is None else readable_json(data, indent)

    @classmethod
    def from_dict(cls: type[R], data: dict) -> R:
        """Rebuild from result.json's dict: ``kind`` dropped, the :attr:`nested` lists' records rebuilt,
        fields added later taking their defaults when absent."""
        data = {k: v for k, v in data.items() if k not in ("kind", "schema_version")}
        for key, item in cls.nested.items():
            data[key] = [item.from_dict(x) if isinstance(x, dict) else x for x in data[key]]
        return cls(**data)

    @classmethod
    def from_json(cls: type[R], text: str) -> R:
        """The result from its JSON text (as written by ``to_json``)."""
        return cls.from_dict(json.loads(text))

    def files(self) -> dict[str, str | bytes]:
        """The files of the result by name: ``result.json`` (a method with more, e.g. regions' curves.csv,
        adds them)."""
        return {"result.json": self.to_json()}

    def save(self, out_dir: str | os.PathLike) -> Path:
        """Write the result's :meth:`files` into ``out_dir`` (a folder, created if needed) in one transaction
        (:func:`save_files`) and return the path of result.json."""
        return save_files(out_dir, self.files())

    def _repr_html_(self) -> str:
        """A compact summary table for notebooks (per-kind summaries: ``promptprism.report.summary``)."""
        html = _renderer("html")
        return html(self) if html else f"<pre>{escape(repr(self))}</pre>"


def save_files(out_dir: str | os.PathLike, files: dict[str, str | bytes]) -> Path:
    """Write a result's ``files`` into the folder ``out_dir`` as one transaction (nothing written when a
    target cannot be); a path that names a .json file, a file in the way or a folder in a file's place is
    refused (OptionError naming ``out_dir``). Returns the path of result.json."""
    out = Path(out_dir)
    if out.suffix.lower() == ".json" and not out.is_dir():
        raise OptionError(f"out_dir {str(out)!r}: names a .json file; a result is saved into a folder "
                          f"(its result.json inside): pass {str(out.parent)!r}", parameter="out_dir")
    return write_outputs(out, files, parameter="out_dir")["result.json"]


@dataclasses.dataclass(frozen=True)
class PerModelResult(Result):
    """A result holding one record per model, in input order (``models``; the record class is
    ``nested['models']``, which also types the list when result.json is loaded): ``table()`` is one
    ``row()`` per record."""

    models: list

    @property
    def names(self) -> list[str]:
        """The models' names, in input order."""
        return [m.name for m in self.models]

    def table(self) -> list[dict]:
        """One row per model (its record's ``row()``)."""
        return [m.row() for m in self.models]


#: how a result shows itself: {'text': repr's few lines, 'html': the notebook table}, each a function of the
#: result; supplied by the presentation layer (``promptprism.report.summary`` registers them when imported,
#: which ``import promptprism`` does), so that results never import the report
SUMMARY_RENDERERS: dict[str, Callable[[Any], str]] = {}


#: element types of fields annotated only as ``list`` (checked when a result.json is loaded)
FIELD_TYPES: dict[str, dict[str, Any]] = {
    "regions": {
        "names": list[str],
        "cms": list[float],
        "product_cms": list[float],
        "region_cms": list[list[float]],
        "mmd2": list[float],
        "regions": list[int],
        "image_shape": list[int],
        "region_sizes": list[int],
        "cross_region_cka": list[list[float]],
        "n_generated": list[int],
        "constant_pixels": list[int],
    },
}


def _type_name(hint: Any) -> str:
    if hint is float:
        return "a number"
    if hint is int:
        return "an integer"
    if hint is str:
        return "a string"
    if hint is bool:
        return "true or false"
    origin = typing.get_origin(hint) or hint
    if origin is list:
        return "a list"
    if origin is dict:
        return "an object"
    if dataclasses.is_dataclass(hint):
        return f"an object ({hint.__name__})"
    return str(hint)


def _json_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


#: the checks of the scalar types a result's fields hold (non-finite floats are written as null)
_SCALAR_CHECKS: dict[Any, Callable[[Any], bool]] = {
    float: lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)),
    int: lambda v: isinstance(v, int) and not isinstance(v, bool),
    str: lambda v: isinstance(v, str),
    bool: lambda v: isinstance(v, bool),
}


def _check(value: Any, hint: Any, where: str) -> None:
    """Raise ``ValueError('FIELD: expected T, got U')`` where parsed JSON ``value`` does not fit ``hint``."""
    if hint in _SCALAR_CHECKS:  # (the leaves, most of a result: no typing lookups for them)
        if not _SCALAR_CHECKS[hint](value):
            raise ValueError(f"{where}: expected {_type_name(hint)}, got {_json_name(value)}")
        return
    if hint is Any or isinstance(hint, TypeVar):
        return
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return
        real = [h for h in options if h is not type(None)]
        errors = []
        for h in real:
            try:
                _check(value, h, where)
                return
            except ValueError as exc:
                errors.append(exc)
        raise errors[0] if len(real) == 1 else ValueError(
            f"{where}: expected {' or '.join(_type_name(h) for h in real)}, got {_json_name(value)}"
        )
    ok = True
    if hint is list or origin is list:
        ok = isinstance(value, list)
        if ok and typing.get_args(hint):
            (item,) = typing.get_args(hint)
            for i, v in enumerate(value):
                _check(v, item, f"{where}[{i}]")
    elif hint is dict or origin is dict:
        ok = isinstance(value, dict)
    elif dataclasses.is_dataclass(hint):
        if isinstance(value, hint):
            return
        if not isinstance(value, dict):
            ok = False
        else:
            _check_fields(value, hint, where)
    if not ok:
        raise ValueError(f"{where}: expected {_type_name(hint)}, got {_json_name(value)}")


@functools.cache
def _field_schema(cls: type) -> tuple[list[tuple[str, Any, bool]], frozenset]:
    """([(field, its type, whether it is required)], the names a record may hold) of a dataclass, once per
    class (``typing.get_type_hints`` evaluates every annotation's text again on each call: a K-way result of
    50 sets checked ~800,000 records in 47 s that way)."""
    hints, nested = typing.get_type_hints(cls), getattr(cls, "nested", {})
    fields = [(f.name, list[nested[f.name]] if f.name in nested else hints.get(f.name, Any),
               f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
              for f in dataclasses.fields(cls)]
    return fields, frozenset(name for name, _, _ in fields) | {"kind", "schema_version"}


def _check_fields(data: dict, cls: type, where: str = "", overrides: dict | None = None) -> None:
    fields, known = _field_schema(cls)
    prefix = f"{where}." if where else ""
    for name, hint, required in fields:
        if name not in data:
            if required:
                raise ValueError(f"{prefix}{name}: missing")
            continue
        _check(data[name], (overrides or {}).get(name, hint), f"{prefix}{name}")
    extra = sorted(set(data) - known)
    if extra:
        raise ValueError(f"{prefix}{extra[0]}: not a field of {cls.__name__}")


def check_result_data(data: dict, kind: str) -> None:
    """Check parsed result.json ``data`` against the fields of the ``kind``'s result class (types of every
    field, nested records included); raise ``ValueError('FIELD: expected T, got U')`` at the first
    mismatch."""
    _check_fields(data, _registry()[kind], overrides=FIELD_TYPES.get(kind))


def migrate(data: dict, where: str = "result.json") -> dict:
    """``data`` (a parsed result.json) brought to :data:`SCHEMA_VERSION`; a newer or malformed version is an
    :class:`~promptprism.errors.InputError` naming ``where``."""
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InputError(f"{where}: schema_version {version!r} is not a version (a positive integer)")
    if version > SCHEMA_VERSION:
        raise InputError(f"{where}: written by a newer promptprism (result schema {version}; this version "
                         f"reads schemas 1 to {SCHEMA_VERSION}); upgrade promptprism to read it")
    while version < SCHEMA_VERSION:
        data = MIGRATIONS[version](data)
        version += 1
    return {**data, "schema_version": SCHEMA_VERSION}


def load_result(path: str | os.PathLike) -> Result:
    """Load a ``result.json`` (or the folder holding one) into the right results class.

    Anything that is not a result of a known kind with fields of the right types is an
    :class:`~promptprism.errors.InputError` naming the file and the first bad field (``modes[2].score:
    expected a number, got a string``), never an error deep inside a report."""
    path = Path(path)
    if path.is_dir():
        path = path / "result.json"
    if not path.exists():
        raise InputError(f"{path}: no such file")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not a results file (not UTF-8 text: byte {exc.start} is binary)") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with collection_paused():  # (parsed, checked and rebuilt: many small objects, no cycles)
        return _parsed_result(text, path)


def _parsed_result(text: str, path: Path) -> Result:
    """:func:`load_result` of ``path``'s ``text``."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: not a results file (expected a JSON object, got {type(data).__name__})")
    kind = data.get("kind")
    registry = _registry()
    if not isinstance(kind, str) or kind not in registry:
        raise InputError(f"{path}: unknown result kind {kind!r}; known: {', '.join(sorted(registry))}")
    data = migrate(data, where=str(path))
    try:
        check_result_data(data, kind)
    except ValueError as exc:
        raise InputError(f"{path}: not a valid {kind} result (field {exc})") from None
    except RecursionError:
        raise InputError(f"{path}: not a valid {kind} result (nested too deeply)") from None
    try:
        return _REGISTRY[kind].from_dict(data)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        detail = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise InputError(f"{path}: not a valid {kind} result ({detail})") from None

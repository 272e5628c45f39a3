"""Dispatch on ``result.kind``, write ``report.html`` atomically, and find a result's inputs again.

A renderer is ``fn(result, *, inputs=None, images=None, base_dir=None, **options) -> str`` (a whole HTML
page), registered with :func:`renderer`. Adding a page for a new result kind is one decorated function.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import OptionError
from ..io import atomic_write_text

REPORT_NAME = "report.html"
Renderer = Callable[..., str]
RENDERERS: dict[str, Renderer] = {}
#: per kind, ``fn(result, result_dir) -> (inputs, images, notes)``: the inputs of a saved result, read again
RELOADERS: dict[str, Callable[..., tuple[Any, Any, list[str]]]] = {}


def renderer(kind: str) -> Callable[[Renderer], Renderer]:
    """Register ``fn`` as the renderer of results of ``kind``."""

    def register(fn: Renderer) -> Renderer:
        RENDERERS[kind] = fn
        return fn

    return register


def reloader(kind: str) -> Callable:
    """Register ``fn(result, result_dir) -> (inputs, images, notes)`` for ``promptprism report DIR``."""

    def register(fn: Callable) -> Callable:
        RELOADERS[kind] = fn
        return fn

    return register


def render_report(
    result: Any,
    *,
    inputs: Mapping[str, Any] | None = None,
    images: Mapping[str, Any] | None = None,
    base_dir: str | os.PathLike | None = None,
    **options: Any,
) -> str:
    """The report page of ``result`` as one self-contained HTML string.

    ``inputs``: what the run read, when the caller still has it (PromptSplit: ``{'test': PairedSet,
    'reference': PairedSet}``; Regions: ``{'real': images}``; CompCon: ``{'A': source, 'B': source}``).
    ``images``: PromptSplit only, per set an array-like of images indexed like the set (``images['test'][i]``
    is sample i's image, (H, W[, C])). ``base_dir``: the results folder (for files saved beside
    result.json, such as ``cka_matrix.npy``). Kinds without a renderer get a generic page.
    """
    fn = RENDERERS.get(getattr(result, "kind", ""), RENDERERS["*"])
    return fn(result, inputs=inputs, images=images, base_dir=base_dir, **options)


def write_report(
    result: Any,
    out_dir: str | os.PathLike,
    *,
    inputs: Mapping[str, Any] | None = None,
    images: Mapping[str, Any] | None = None,
    **options: Any,
) -> Path:
    """Write ``out_dir/report.html`` (atomically) and return its path."""
    out = Path(out_dir)
    page = render_report(result, inputs=inputs, images=images, base_dir=out, **options)
    try:
        return atomic_write_text(out / REPORT_NAME, page)
    except OSError as exc:
        raise OptionError(f"{out}: cannot write {REPORT_NAME} ({exc.strerror or exc})") from None


def reload_inputs(result: Any, result_dir: str | os.PathLike) -> tuple[Any, Any, list[str]]:
    """The inputs a saved result was computed from, read again where they still exist: (inputs, images,
    notes); notes say what could not be found (the report then shows less, never fails)."""
    fn = RELOADERS.get(getattr(result, "kind", ""))
    if fn is None:
        return None, None, []
    return fn(result, Path(result_dir))


def report_from_dir(result_dir: str | os.PathLike, **options: Any) -> Path:
    """``promptprism report DIR``: load ``DIR/result.json``, find its inputs again, write
    ``DIR/report.html``."""
    from ..results import load_result

    folder = Path(result_dir)
    if folder.is_file() and folder.name.endswith(".json"):
        folder = folder.parent
    if not folder.is_dir():
        from ..errors import InputError

        raise InputError(f"{result_dir}: no such results folder")
    result = load_result(folder)
    inputs, images, notes = reload_inputs(result, folder)
    return write_report(result, folder, inputs=inputs, images=images, notes=notes, **options)

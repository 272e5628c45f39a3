"""Dispatch on ``result.kind``, write ``report.html`` atomically, and find a result's inputs again.

A renderer is ``fn(result, *, inputs=None, images=None, base_dir=None, step=None, **options) -> str`` (a
whole HTML page), registered with :func:`renderer`. Adding a page for a new result kind is one decorated
function. Rendering is pure: :func:`render_report` and :func:`render_report_dir` return the page and write
nothing, so a caller can write ``result.json`` and ``report.html`` as one transaction; :func:`write_report`
and :func:`report_from_dir` are the conveniences that also write it (atomically).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
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


@contextlib.contextmanager
def report_steps(enabled: bool | None) -> Iterator[Callable[[str], None]]:
    """``step(description)`` for the report's slow steps: a spinner with the step's name and the elapsed
    time on stderr when ``enabled`` (None: only on a terminal), a no-op otherwise."""
    from .._progress import steps

    with steps(enabled, "report") as step:
        yield step


def render_report(
    result: Any,
    *,
    inputs: Mapping[str, Any] | None = None,
    images: Mapping[str, Any] | None = None,
    base_dir: str | os.PathLike | None = None,
    progress: bool | None = False,
    **options: Any,
) -> str:
    """The report page of ``result`` as one self-contained HTML string.

    ``inputs``: what the run read, when the caller still has it (PromptSplit: ``{'test': PairedSet,
    'reference': PairedSet}``; Regions: ``{'real': images}``; CompCon: ``{'A': source, 'B': source}``).
    ``images``: PromptSplit only, per set an array-like of images indexed like the set (``images['test'][i]``
    is sample i's image, (H, W[, C])). ``base_dir``: the results folder (for files saved beside
    result.json, such as ``cka_matrix.npy``). ``progress``: show the slow steps (map, figures) on stderr
    (None: only on a terminal). Kinds without a renderer get a generic page. Writes nothing.
    """
    fn = RENDERERS.get(getattr(result, "kind", ""), RENDERERS["*"])
    with report_steps(progress) as step:
        return fn(result, inputs=inputs, images=images, base_dir=base_dir, step=step, **options)


def write_report(
    result: Any,
    out_dir: str | os.PathLike,
    *,
    inputs: Mapping[str, Any] | None = None,
    images: Mapping[str, Any] | None = None,
    progress: bool | None = None,
    **options: Any,
) -> Path:
    """Render the page (:func:`render_report`) and write ``out_dir/report.html`` atomically; return its
    path. ``progress``: None shows the slow steps on a terminal."""
    page = render_report(
        result, inputs=inputs, images=images, base_dir=Path(out_dir), progress=progress, **options
    )
    return write_page(out_dir, page)


def reload_inputs(result: Any, result_dir: str | os.PathLike) -> tuple[Any, Any, list[str]]:
    """The inputs a saved result was computed from, read again where they still exist: (inputs, images,
    notes); notes say what could not be found (the report then shows less, never fails)."""
    fn = RELOADERS.get(getattr(result, "kind", ""))
    if fn is None:
        return None, None, []
    return fn(result, Path(result_dir))


def warn_missing(missing: list[str], left_out: str) -> None:
    """One warning (one line on the terminal) naming the inputs of a result that were not found again and
    what the page leaves out without them; nothing when none is missing. The page says it too (a note)."""
    import warnings

    if missing:
        warnings.warn(f"inputs not found: {'; '.join(missing)}; the page is written without {left_out} (copy "
                      "the results folder with its inputs, or run report where they are)", UserWarning,
                      stacklevel=3)


def render_report_dir(result_dir: str | os.PathLike, **options: Any) -> tuple[Path, str]:
    """Load ``DIR/result.json``, find its inputs again and render its page: (the folder, the page). Writes
    nothing (``report_from_dir`` writes it)."""
    from ..results import load_result

    folder = Path(result_dir)
    if folder.is_file() and folder.name.endswith(".json"):
        folder = folder.parent
    if not folder.is_dir():
        from ..errors import InputError

        raise InputError(f"{result_dir}: no such results folder")
    result = load_result(folder)
    inputs, images, notes = reload_inputs(result, folder)
    page = render_report(result, inputs=inputs, images=images, base_dir=folder, notes=notes, **options)
    return folder, page


def write_page(out_dir: str | os.PathLike, page: str) -> Path:
    """Write a rendered page to ``out_dir/report.html`` atomically; an unwritable folder is an
    OptionError naming it."""
    out = Path(out_dir)
    try:
        return atomic_write_text(out / REPORT_NAME, page)
    except OSError as exc:
        raise OptionError(f"{out}: cannot write {REPORT_NAME} ({exc.strerror or exc})") from None


def report_from_dir(result_dir: str | os.PathLike, *, progress: bool | None = None, **options: Any) -> Path:
    """``promptprism report DIR``: load ``DIR/result.json``, find its inputs again, write
    ``DIR/report.html`` (atomically)."""
    folder, page = render_report_dir(result_dir, progress=progress, **options)
    return write_page(folder, page)

"""Self-contained HTML reports of results: ``report.html`` beside ``result.json``.

:func:`write_report` (``result``, folder) writes the page of any result; :func:`render_report` returns it as
a string. One renderer per result kind (``render_promptsplit``, ``render_regions``, ``render_compcon``, ...),
registered on ``result.kind`` with :func:`renderer`; kinds without one get a generic page. A page for a new
kind is one decorated function in a module imported below. Pages embed their figures (PNG) and thumbnails
(PNG/JPEG) as data URIs and refer to nothing outside themselves, so they open offline and can be mailed.
Figures need matplotlib; without it the page says so in place of each figure.
"""

from __future__ import annotations

from . import generic as _generic  # noqa: F401  (registers the fallback page)
from .compcon import render_compcon
from .core import (
    RENDERERS,
    REPORT_NAME,
    reload_inputs,
    render_report,
    renderer,
    report_from_dir,
    write_report,
)
from .promptsplit import render_promptsplit
from .regions import render_regions
from .scendi import render_scendi
from .summary import summary_html

__all__ = [
    "RENDERERS",
    "REPORT_NAME",
    "reload_inputs",
    "render_report",
    "renderer",
    "report_from_dir",
    "write_report",
    "render_promptsplit",
    "render_regions",
    "render_compcon",
    "render_scendi",
    "summary_html",
]

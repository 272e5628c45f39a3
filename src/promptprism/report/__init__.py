"""Self-contained HTML reports of results: ``report.html`` beside ``result.json``.

:func:`render_report` returns the page of any result as a string and writes nothing (pure, so a caller can
write ``result.json`` and ``report.html`` as one transaction); :func:`write_report` (``result``, folder)
renders and writes it atomically; :func:`save_result` writes a result, its files and its page as one
transaction. One renderer per result kind (``render_promptsplit``,
``render_regions``, ``render_compcon``, ...), registered on ``result.kind`` with :func:`renderer`; kinds
without one get a generic page. A page for a new kind is one decorated function in a module imported below.
Pages embed their figures (PNG) and thumbnails (PNG/JPEG) as data URIs and refer to nothing outside
themselves, so they open offline and can be mailed. Figures need matplotlib; without it the page says so in
place of each figure.
"""

from __future__ import annotations

from . import generic as _generic  # noqa: F401  (registers the fallback page)
from .compcon import render_compcon
from .compcon_eval import render_compcon_eval
from .core import (
    RENDERERS,
    REPORT_NAME,
    reload_inputs,
    render_report,
    render_report_dir,
    renderer,
    report_from_dir,
    write_page,
    write_report,
)
from .kway import render_kway
from .metrics import render_metrics
from .promptsplit import render_promptsplit
from .regions import render_regions
from .saving import save_result
from .scendi import render_scendi
from .summary import summary_html

__all__ = [
    "RENDERERS",
    "REPORT_NAME",
    "reload_inputs",
    "render_report",
    "render_report_dir",
    "write_page",
    "renderer",
    "report_from_dir",
    "save_result",
    "write_report",
    "render_promptsplit",
    "render_kway",
    "render_regions",
    "render_compcon",
    "render_compcon_eval",
    "render_scendi",
    "render_metrics",
    "summary_html",
]

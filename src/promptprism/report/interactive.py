"""The report's interactive layer: its data as one JSON block and its script and style sheet, inlined.

A page stays one file that opens offline: :func:`data_block` embeds the data behind the views once, as
``<script type="application/json" id="pp-data">`` (escaped so that no text in it can close the block or
start markup), and :func:`script_block` inlines the scripts of ``SCRIPTS`` (``assets/*.js``: plain
JavaScript, no library) and ``assets/report.css``, package data files read at render time. Without
scripts the page is the static one; with them, every table sorts, a toolbar searches and filters, and
``data-pp-*`` attributes link elements to views (see docs/architecture.md, "How a report section opts
in").
"""

from __future__ import annotations

import functools
import json
import math
from importlib import resources
from typing import Any

from .references import check_self_contained

#: the id of the JSON block; the script reads it with ``JSON.parse``
DATA_ID = "pp-data"
#: characters escaped in the JSON block: ``<`` (no ``</script>`` or ``<!--``), ``>``, ``&`` and the two
#: line terminators that JavaScript source does not allow in strings
_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


@functools.cache
def asset(name: str) -> str:
    """The text of ``report/assets/<name>`` (a package data file)."""
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def _finite(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def json_for_html(data: Any) -> str:
    """``data`` as JSON that is safe inside a ``<script>`` element: non-finite numbers become null and
    ``< > & U+2028 U+2029`` are written as ``\\uXXXX`` escapes (the parsed value is unchanged). Finite
    data (the usual case) is written directly, in one C pass; data with a non-finite number (json refuses
    it) is first copied with those as None and every key as a string."""
    options = {"ensure_ascii": False, "allow_nan": False, "separators": (",", ":"), "default": str}
    try:
        text = json.dumps(data, **options)
    except (ValueError, TypeError):  # (a non-finite number; a key json does not write)
        text = json.dumps(_finite(data), **options)
    for char, escape in _ESCAPES.items():  # (str.replace: one C pass each, far faster than translate)
        if char in text:
            text = text.replace(char, escape)
    return text


def data_block(data: Any) -> str:
    """The page's data as an inert JSON block (``type="application/json"``, never executed); safe markup."""
    return f'<script type="application/json" id="{DATA_ID}">{json_for_html(data)}</script>'


#: the scripts, in order: the pure functions (pure.js: the map's spatial index, the range and selection
#: fragments), the components (report.js; its sortable tables, sort.js; its side panel, panel.js), the views
#: and widgets built on them (views.js), the K-way page's views (compare.js), the Regions page's region view
#: (regions.js), the tags and notes kept in the browser (keep.js), a view's samples exported as CSV/JSONL
#: (export.js), the prompt tables grouped by a facet (facets.js), the sample map (map.js), the number facets'
#: range sliders (range.js), the table of every prompt (prompts.js)
SCRIPTS = ("pure.js", "report.js", "sort.js", "panel.js", "views.js", "compare.js", "regions.js", "keep.js",
           "export.js", "facets.js", "map.js", "range.js", "prompts.js")


@functools.lru_cache(maxsize=1)
def script_block() -> str:
    """The interactive layer's style sheet and scripts, inlined (one ``<script>`` element); built and
    checked for outside references once per process (:func:`.references.check_self_contained`: the same
    text for every page)."""
    js = "\n".join(asset(name) for name in SCRIPTS)
    if "</script" in js.lower() or "<!--" in js:
        raise ValueError("the report's scripts may not contain '</script' or '<!--'")
    block = f'<style id="pp-css">{asset("report.css")}</style><script id="pp-js">{js}</script>'
    check_self_contained(block)
    return block

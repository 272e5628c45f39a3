"""A small builder for self-contained HTML pages: inline CSS, images as data URIs, every text escaped.

Nothing here can point outside the page: :func:`img` takes the image bytes (never a URL), :func:`link` only
takes in-page anchors, and :func:`check_self_contained` refuses a page with any other ``src``/``href``/
``url(...)`` before it is written. The only scripts are the page's own inline ones (:mod:`.interactive`:
its JSON data block and its script, never a ``src``); no web fonts (the system font stack is used).
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterable, Sequence
from typing import Any

from .interactive import data_block, script_block
from .references import LOCAL_REPORT_LINK, check_self_contained
from .strings import LONG_TEXT, SHOWN, cut_attr, end_table, start_table
from .strings import current as current_strings

#: the page's whole style sheet; sized for a laptop screen (max 1180 px wide), system fonts only
CSS = """
:root{--fg:#1d2430;--muted:#5b6576;--line:#dde2ea;--bg:#f6f7f9;--card:#fff;--pos:#2f6db5;--neg:#c8641c}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);
 font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1180px;margin:0 auto;padding:18px 22px 60px}
header.top{background:#1d2430;color:#fff;padding:14px 22px}
header.top .in{max-width:1180px;margin:0 auto}
header.top h1{margin:0;font-size:21px;font-weight:600}
header.top p{margin:4px 0 0;color:#c9d1dc}
nav{margin-top:8px;font-size:13px}
nav a{color:#9cc3f5;margin-right:14px;text-decoration:none}
h2{font-size:18px;margin:26px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:14px 0 6px}
p{margin:6px 0}
.muted{color:var(--muted)}
.small{font-size:12px}
.note{background:#fff8e1;border:1px solid #f0d68a;border-radius:6px;padding:7px 10px;margin:8px 0;
 font-size:13px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.stat{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:8px 12px;min-width:120px}
.stat .v{font-size:18px;font-weight:600}
.stat .k{font-size:12px;color:var(--muted)}
.grid2{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:16px;align-items:start}
@media (max-width:900px){.grid2{grid-template-columns:minmax(0,1fr)}}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 14px;margin:10px 0}
.card.pos{border-left:5px solid var(--pos)}
.card.neg{border-left:5px solid var(--neg)}
table{border-collapse:collapse;margin:6px 0;font-size:13px;background:var(--card)}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.hl td{background:#eaf3ff}
figure{margin:8px 0}
figure img{max-width:100%;height:auto;display:block}
figcaption{font-size:12px;color:var(--muted);margin-top:3px}
.gallery{display:flex;flex-wrap:wrap;gap:6px}
.thumb{width:104px;font-size:11px;color:var(--muted);overflow:hidden}
.thumb img{width:96px;height:96px;object-fit:contain;background:#e9ecf1;border:1px solid var(--line);
 display:block}
.thumb img.px{image-rendering:pixelated}
.snip{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:5px 8px;margin:0 0 5px;
 font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}
.side h4{margin:4px 0;font-size:13px}
.bar{display:inline-block;height:9px;background:var(--pos);vertical-align:middle;margin-right:6px}
.bar.neg{background:var(--neg)}
.tag{display:inline-block;border-radius:4px;padding:0 6px;font-size:12px;color:#fff;background:var(--pos)}
.tag.neg{background:var(--neg)}
details{margin:6px 0}
summary{cursor:pointer;color:var(--muted)}
code{font-size:12px;background:#eef1f5;padding:0 3px;border-radius:3px}
footer{margin-top:30px;font-size:12px;color:var(--muted)}
"""


class Html(str):
    """Markup that is already safe: inserted as is (plain ``str`` children are escaped)."""

    __slots__ = ()


def esc(value: Any) -> Html:
    """Any value as escaped text."""
    return Html(html.escape("" if value is None else str(value), quote=True))


def long_text(text: str) -> Html:
    """A text longer than ``LONG_TEXT`` characters as its first ``SHOWN`` ones, in a span that refers to the
    whole text in the page's string table (the script adds "show all"); the whole text outside a page."""
    table = current_strings()
    if table is None or len(text) <= LONG_TEXT:
        return esc(text)
    return Html(
        f'<span class="pp-long" data-pp-str="{table.ref(text)}" data-pp-len="{len(text)}">'
        f"{esc(text[:SHOWN])}…</span>"
    )


def _render(child: Any) -> str:
    if child is None or child is False:
        return ""
    if isinstance(child, Html):
        return str(child)
    if isinstance(child, (list, tuple)):
        return "".join(_render(c) for c in child)
    if isinstance(child, str) and len(child) > LONG_TEXT:
        return long_text(child)
    return esc(child)


_ATTR_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_-]*$")


def el(name: str, *children: Any, **attrs: Any) -> Html:
    """``<name attrs>children</name>``; ``cls`` is the class attribute, ``data_x`` becomes ``data-x``."""
    parts = [name]
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        key = "class" if key == "cls" else key.rstrip("_").replace("_", "-")
        if not _ATTR_NAME.match(key):
            raise ValueError(f"bad attribute name {key!r}")
        local = name == "a" and key == "href" and LOCAL_REPORT_LINK.match(str(value))
        if key in ("src", "href") and not str(value).startswith(("data:", "#")) and not local:
            raise ValueError(f"{key}={value!r}: a report may only point into itself (data: or #anchor)")
        if key in ("title", "alt", "aria-label") and isinstance(value, str):
            value = cut_attr(str(value))
        parts.append(key if value is True else f'{key}="{html.escape(str(value), quote=True)}"')
    return Html(f"<{' '.join(parts)}>{_render(children)}</{name}>")


def data_uri(data: bytes, mime: str) -> str:
    """``data:<mime>;base64,...``: bytes embedded in a URL."""
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def img(
    data: bytes,
    *,
    alt: str,
    mime: str = "image/png",
    cls: str | None = None,
    width: int | None = None,
    title: str | None = None,
) -> Html:
    """An embedded image (the bytes go into the page as base64)."""
    attrs = {"src": data_uri(data, mime), "alt": alt, "cls": cls, "title": title, "decoding": "async"}
    if width is not None:
        attrs["width"] = str(width)
    return Html(el("img", **attrs).removesuffix("</img>"))


def figure(
    data: bytes | None, *, alt: str, caption: Any = None, mime: str = "image/png", missing: str | None = None
) -> Html:
    """A figure with a caption, or a note saying why it is missing (``data`` None)."""
    if data is None:
        return note(missing or f"figure not available: {alt}")
    return el("figure", img(data, alt=alt, mime=mime), el("figcaption", caption) if caption else None)


def note(*children: Any) -> Html:
    """A highlighted note box."""
    return el("div", *children, cls="note")


def p(*children: Any, cls: str | None = None) -> Html:
    """A paragraph, with an optional CSS class."""
    return el("p", *children, cls=cls)


def link(text: Any, anchor: str) -> Html:
    """A link to an anchor on the same page."""
    return el("a", text, href=f"#{anchor}")


def stat(value: Any, label: Any) -> Html:
    """One headline card: a value above its label."""
    return el("div", el("div", value, cls="v"), el("div", label, cls="k"), cls="stat")


def cards(items: Iterable[tuple[Any, Any]]) -> Html:
    """A row of headline cards from ``(value, label)`` pairs."""
    return el("div", [stat(v, k) for v, k in items], cls="cards")


def fmt(value: Any, digits: int = 4) -> str:
    """Numbers for tables: ``digits`` significant digits, thousands separators for integers."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iu"):
        return f"{int(value):,}"
    try:
        f = float(value)
    except (TypeError, ValueError):
        return str(value)
    if f != f:
        return "NaN"
    return f"{f:.{digits}g}"


def num(value: Any) -> float:
    """``value`` as a float; NaN for None (a non-finite number in result.json) or anything not a number."""
    if isinstance(value, bool):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def fnum(value: Any, spec: str) -> str:
    """``format(value, spec)`` for a number, '–' for None, NaN or anything not a number; a value that rounds
    to zero without its minus sign (a signed share of -0.0004 at '.0%': '0%', not '-0%')."""
    f = num(value)
    if f != f:
        return "–"
    text = format(f, spec)
    return text[1:] if text.startswith("-") and not any(c in "123456789" for c in text) else text


def table(
    headers: Sequence[Any],
    rows: Iterable[Sequence[Any]],
    *,
    numeric: Sequence[int] = (),
    highlight: Iterable[int] = (),
    cls: str | None = None,
    row_attrs: Sequence[dict[str, Any] | None] | None = None,
) -> Html:
    """A table; columns in ``numeric`` are right-aligned, rows in ``highlight`` shaded; ``row_attrs[r]``:
    attributes of row r (e.g. ``{'data_pp_prompt': 3}`` to link it to a view)."""
    num = set(numeric)
    hl = set(highlight)
    head = el("tr", [el("th", h, cls="num" if i in num else None) for i, h in enumerate(headers)])
    body = [
        el(
            "tr",
            [el("td", c, cls="num" if i in num else None) for i, c in enumerate(row)],
            cls="hl" if r in hl else None,
            **((row_attrs[r] or {}) if row_attrs is not None and r < len(row_attrs) else {}),
        )
        for r, row in enumerate(rows)
    ]
    return el("table", el("thead", head), el("tbody", body), cls=cls)


def kv_table(pairs: Iterable[tuple[Any, Any]]) -> Html:
    """A two-column table of bold keys and their values."""
    return table(["", ""], [(el("b", k), v) for k, v in pairs])


def bar(fraction: float, *, neg: bool = False, width: int = 90) -> Html:
    """A small inline bar (0..1 of ``width`` pixels)."""
    f = min(max(float(fraction), 0.0), 1.0) if fraction == fraction else 0.0
    return el("span", cls="bar neg" if neg else "bar", style=f"width:{max(1, round(f * width))}px")


def details(summary: Any, *children: Any, open_: bool = False) -> Html:
    """A collapsible ``<details>`` block with a summary line (closed unless ``open_``)."""
    return el("details", el("summary", summary), *children, open=open_)


def section(title: str, *children: Any, anchor: str) -> Html:
    """A ``<section>`` with a heading, its id set to ``anchor``."""
    return el("section", el("h2", title), *children, id=anchor)


def snippet(text: Any, limit: int = 220) -> str:
    """``text`` with whitespace collapsed, cut to ``limit`` characters (ending in …)."""
    s = "" if text is None else " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


class Page:
    """A whole report page: a header (title, subtitle, section links), sections, a footer."""

    def __init__(self, title: str, subtitle: Any = None) -> None:
        self.title = title
        #: the page's strings, each once (:mod:`.strings`); markup built from now on refers to it
        self.strings = start_table()
        #: the data behind the interactive views (JSON-ready), embedded once; see :mod:`.interactive`
        self.data: dict[str, Any] | None = None
        self.subtitle = subtitle
        self.sections: list[tuple[str, str, Html]] = []
        self.footer: list[Any] = []

    def add(self, title: str, *children: Any, anchor: str | None = None) -> None:
        """Append a section; its anchor defaults to a slug of the title."""
        anchor = anchor or re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or f"s{len(self.sections)}"
        self.sections.append((title, anchor, section(title, *children, anchor=anchor)))

    def render(self) -> str:
        """The whole page as one self-contained HTML document."""
        nav = el("nav", [link(t, a) for t, a, _ in self.sections]) if len(self.sections) > 1 else None
        head = el(
            "header",
            el("div", el("h1", self.title), p(self.subtitle) if self.subtitle else None, nav, cls="in"),
            cls="top",
        )
        body = el("main", [s for _, _, s in self.sections], el("footer", self.footer))
        data = self.strings.intern(self.data) if self.data is not None else None
        if self.strings.strings:
            data = {"strings": self.strings.strings, **(data or {})}
        markup = (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(self.title)}</title><style>{CSS}</style></head>"
            f"<body>{head}{body}"
        )
        # the markup is checked on every page; the data block is inert JSON that cannot close its element
        # (json_for_html escapes '<'), and the fixed scripts are checked once per process (script_block)
        check_self_contained(markup + "</body></html>")
        scripts = script_block()
        end_table()
        return f"{markup}{data_block(data) if data is not None else ''}{scripts}</body></html>\n"

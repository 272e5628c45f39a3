"""Whether a report page refers to anything outside itself: every reference its parsed markup, style sheets
and inline scripts make (:func:`external_references`), and the check that refuses a page with one
(:func:`check_self_contained`)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

_URL_ATTRS = frozenset(
    {"src", "href", "srcset", "action", "poster", "background", "formaction", "xlink:href", "data", "ping"}
)
_FORBIDDEN = frozenset({"link", "iframe", "object", "embed", "base", "frame", "meta-refresh"})
#: what an inline script may not contain: anything that loads from elsewhere
_NETWORK_JS = re.compile(
    r"\b(fetch|XMLHttpRequest|WebSocket|EventSource|importScripts|sendBeacon|Worker)\b|\bimport\s*\(|https?:"
)
#: the one outside reference a page may hold: a link (``<a href>``, followed only when clicked; nothing is
#: loaded) to another results folder's report.html by a relative path, as the runs page links each run's page
LOCAL_REPORT_LINK = re.compile(r"^(?:[A-Za-z0-9._~%\-]+/)*report\.html$")
_CSS_URL = re.compile(r"url\(\s*['\"]?([^)'\"]*)", re.IGNORECASE)
_CSS_IMPORT = re.compile(r"@import\s+([^;]*)", re.IGNORECASE)


class _References(HTMLParser):
    """Collects the references of a page from its parsed tags: attribute values (unescaped, as a browser
    reads them), ``<style>`` sheets and ``style`` attributes. Escaped text (a prompt or a file name that
    mentions ``src=``, inside an element or an attribute such as ``title``) is text, not a tag."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.bad: list[str] = []
        self._in_style = False
        self._in_script = False

    def _css(self, css: str) -> None:
        urls = _CSS_URL.findall(css)
        self.bad += [f"url({u[:80]})" for u in urls if not u.strip().lower().startswith("data:")]
        self.bad += [f"@import {u[:80]}" for u in _CSS_IMPORT.findall(css)]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _FORBIDDEN:
            self.bad.append(f"<{tag}>")
        if tag == "script":
            kind = dict(attrs).get("type") or ""
            # a JSON data block is never executed; any other script is read for network calls
            self._in_script = kind.lower() != "application/json"
        if tag == "meta" and any(k == "http-equiv" and (v or "").lower() == "refresh" for k, v in attrs):
            self.bad.append("<meta http-equiv=refresh>")
        for key, value in attrs:
            value = (value or "").strip()
            if tag == "a" and key == "href" and LOCAL_REPORT_LINK.match(value):
                continue
            if key in _URL_ATTRS and not value.lower().startswith(("data:", "#")):
                self.bad.append(f"{key}={value[:80]}")
            elif key == "style":
                self._css(value)
        self._in_style = tag == "style"

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self._css(data)
        if self._in_script:
            self.bad += [f"script: {m.group(0)}" for m in _NETWORK_JS.finditer(data)]


def external_references(doc: str) -> list[str]:
    """Every ``src``/``href`` (and similar) attribute of the parsed page that is not a data URI or an
    in-page anchor, every CSS ``url()``/``@import`` in its style sheets, and every tag that loads something
    (link, iframe, ...), and every network call in an inline script (``fetch``, ``XMLHttpRequest``, a URL
    scheme, ...; a script with a ``src`` is refused as any other reference). Attribute values are read as
    a browser reads them, so text that merely mentions ``src=`` (escaped, in an element or an attribute)
    is not a reference."""
    parser = _References()
    parser.feed(doc)
    parser.close()
    return parser.bad


def check_self_contained(doc: str) -> None:
    """Refuse a page that refers to anything outside itself (network, local files)."""
    bad = external_references(doc)
    if bad:
        raise ValueError(f"report would refer outside itself: {', '.join(bad[:5])}")

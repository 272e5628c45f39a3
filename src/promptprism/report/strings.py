"""Each string once per page: a string table in the page's data block, referred to by index.

A long prompt used to be copied into a page once per table cell, caption, tooltip and data field that
named it (a 100 kB prompt ~80 times). Now:

* the page's data (result.json's content and the views' data) keeps every string of ``INTERN_MIN``
  characters or more once, in ``strings``; where it was, the data holds a reference: ``"\\u0000<index>"``
  (a string that starts with U+0000; any string of the data that starts with U+0000 is itself interned, so
  a reference is never ambiguous). The page's script resolves them right after parsing (``report.js``);
* the markup shows a text longer than ``LONG_TEXT`` characters cut to its first ``SHOWN`` ones, in a
  ``<span class="pp-long" data-pp-str="<index>">`` that the script gives a "show all" button (the whole
  text comes from the table); attribute values (tooltips, alt texts) are cut too. Without scripts the cut
  text is what shows; the whole of it is in result.json.

The table of the page being built is a context variable, set by :class:`.html.Page` when it is created
and cleared when it is rendered, so that markup built for the page (``el``) can refer to it; markup built
outside a page (a notebook summary) keeps its texts whole.
"""

from __future__ import annotations

import contextvars
from typing import Any

#: data strings this long or longer go to the table (shorter ones cost less inline than a reference)
INTERN_MIN = 40
#: texts longer than this are cut in the markup (a paragraph of explanation is shorter)
LONG_TEXT = 1500
#: characters of a cut text shown before "show all"
SHOWN = 300
#: a reference in the data: this character, then the table index
REF = "\u0000"


#: values :meth:`StringTable.intern` leaves as they are
_PLAIN = frozenset({int, float, bool, type(None)})


class StringTable:
    """The strings of one page, each once: ``strings[i]``; :meth:`ref` gives a string's index."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self._ids: dict[str, int] = {}

    def ref(self, text: str) -> int:
        """The index of ``text`` in the table (added on first use)."""
        i = self._ids.get(text)
        if i is None:
            i = self._ids[text] = len(self.strings)
            self.strings.append(text)
        return i

    def intern(self, data: Any) -> Any:
        """``data`` (JSON-ready) with every string of ``INTERN_MIN`` characters or more, and every string
        that starts with ``REF``, replaced by its reference (dictionary keys are left as they are)."""
        kind = type(data)
        if kind in _PLAIN:
            return data
        if kind is str:
            return f"{REF}{self.ref(data)}" if len(data) >= INTERN_MIN or data.startswith(REF) else data
        if isinstance(data, dict):
            return {k: v if type(v) in _PLAIN else self.intern(v) for k, v in data.items()}
        if isinstance(data, (list, tuple)):
            if all(type(v) in _PLAIN for v in data):  # (a column of numbers: the map's, a histogram's)
                return list(data)
            return [v if type(v) in _PLAIN else self.intern(v) for v in data]
        return data


_CURRENT: contextvars.ContextVar[StringTable | None] = contextvars.ContextVar("pp_strings", default=None)


def start_table() -> StringTable:
    """A new table for the page being built (the current one from now on in this context)."""
    table = StringTable()
    _CURRENT.set(table)
    return table


def end_table() -> None:
    """No page is being built any more (markup built from now on keeps its long texts whole)."""
    _CURRENT.set(None)


def current() -> StringTable | None:
    """The table of the page being built, or None outside a page."""
    return _CURRENT.get()


def cut_attr(value: str) -> str:
    """An attribute value (tooltip, alt text) cut to ``SHOWN`` characters when longer than ``LONG_TEXT``."""
    return value if len(value) <= LONG_TEXT else value[:SHOWN] + f"… ({len(value):,} characters)"


def resolve(value: Any, table: list[str]) -> Any:
    """``value`` with every reference replaced by its string of ``table`` (what the page's script does)."""
    if isinstance(value, str):
        return table[int(value[1:])] if value.startswith(REF) else value
    if isinstance(value, dict):
        return {k: resolve(v, table) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, table) for v in value]
    return value


def page_data(data: dict) -> dict:
    """A page's parsed data block as it was before interning (the ``strings`` table resolved and dropped)."""
    data = dict(data)
    return resolve(data, data.pop("strings", []))

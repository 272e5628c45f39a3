"""Reading chat-model answers: parsers for the answer formats the paper's prompts ask for (CompCon, appendix
C.1 and D.1; the naming module's namers answer in CompCon's attribute format), and the text shown to a model.

Each parser returns the parsed value or raises ``ValueError`` with a short reason;
:func:`promptprism.llm.ask` turns that into a re-ask and, when the model never complies, a
:class:`~promptprism.llm.MalformedAnswerError`.
They are deliberately lenient about markdown (bold, headings, bullets ``*``, ``-``, ``•``, ``**``), quotes
and case, and strict about structure (the section headers the prompts require).

Parsing is bounded, whatever an endpoint sends: an answer is read up to ``MAX_ANSWER_CHARS`` characters, and
a bracketed list is evaluated as a literal (``json.loads``, then :func:`ast.literal_eval`) only up to
``MAX_LITERAL_CHARS``; a longer one, or one that is not a flat list of strings and numbers, is split at
commas instead (``ast.literal_eval`` on a 200 kB answer such as ``[----...1]`` would exhaust the parser's
memory).
"""

from __future__ import annotations

import ast
import json
import re

_BULLET = re.compile(r"^\s*(?:[*\-•+]+|\d+[.)])\s*(.*)$")
_MODEL_A = re.compile(r"^\W*model\s*a\b.*?contains?\W*:?\W*$", re.IGNORECASE)
_MODEL_B = re.compile(r"^\W*model\s*b\b.*?contains?\W*:?\W*$", re.IGNORECASE)
_MAX_ATTRIBUTE_WORDS = 12
#: an answer is parsed up to this many characters (the paper's answers are a few hundred)
MAX_ANSWER_CHARS = 50_000
#: a bracketed list is evaluated as a literal only up to this many characters
MAX_LITERAL_CHARS = 4_000
#: outputs are shown to a model up to this many characters (a 100 kB answer would not fit a small context)
MAX_SHOWN_CHARS = 600


def clip_text(text: str | None, limit: int = MAX_SHOWN_CHARS) -> str:
    """The text shown to a model: at most ``limit`` characters, an ellipsis marking a cut."""
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _bounded(text: str) -> str:
    return text[:MAX_ANSWER_CHARS]


def _literal_list(inner: str) -> list[str] | None:
    """The items of ``[inner]`` when it is a short flat list of strings/numbers, else None."""
    if len(inner) > MAX_LITERAL_CHARS:
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse("[" + inner + "]")
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
            return [str(v) for v in value]
    return None


def clean_item(text: str) -> str:
    """Strip markdown emphasis, quotes, surrounding punctuation and extra spaces from a list item."""
    text = re.sub(r"[*_`]+", "", text)
    text = text.strip().strip("\"'“”‘’").strip()
    text = re.sub(r"\s+", " ", text)
    return text.rstrip(".,;:").strip()


def parse_attributes(text: str) -> list[str]:
    """Attributes listed under "Model A contains:" (up to "Model B contains:"), in order, de-duplicated.

    An answer without a "Model A contains" header is malformed (``ValueError``); a header followed by no
    items is a valid, empty answer.
    """
    text = _bounded(text)
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _MODEL_A.match(line.strip())), None)
    if start is None:
        # tolerate "Model A contains: x, y" on one line
        inline = re.search(r"model\s*a\s*contains?\s*:\s*(.+)", text, re.IGNORECASE)
        if inline and not _BULLET.match(inline.group(1)):
            items = [clean_item(s) for s in inline.group(1).split(",")]
            return _dedupe([s for s in items if s])
        raise ValueError('no "Model A contains:" section')
    items: list[str] = []
    for line in lines[start + 1 :]:
        stripped = line.strip()
        if not stripped:
            continue
        if _MODEL_B.match(stripped):
            break
        m = _BULLET.match(stripped)
        if not m:
            if items:  # prose after the list ends it
                break
            continue
        item = clean_item(m.group(1))
        if item and len(item.split()) <= _MAX_ATTRIBUTE_WORDS:
            items.append(item)
    return _dedupe(items)


def parse_names(text: str) -> list[str]:
    """Candidate names from a namer's answer: the items under "Model A contains:" (:func:`parse_attributes`),
    or, from a model too small to keep the format, its first sentence (at most 15 words)."""
    try:
        return parse_attributes(text)
    except ValueError:
        pass
    first = next((line for line in text.splitlines() if line.strip()), "")
    first = clean_item(re.sub(r"^\W*(?:[A-D]\s*[:.)]\s*)?", "", first))  # a leading 'A:' or '- '
    first = re.split(r"(?<=[.!?])\s", first, maxsplit=1)[0]
    first = clean_item(first)
    if not first or len(first.split()) > 15:
        raise ValueError("no short description (one sentence of at most 15 words)")
    return [first]


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for it in items:
        key = it.lower()
        if key not in seen:
            seen.add(key)
            out.append(it)
    return out


def _section(text: str, header: str, stop: tuple[str, ...]) -> str | None:
    pattern = (
        rf"(?:^|\n)\W*{header}\W*:\s*(.*?)(?=\n\W*(?:{'|'.join(stop)})\W*:|\Z)"
        if stop
        else rf"(?:^|\n)\W*{header}\W*:\s*(.*)\Z"
    )
    m = re.search(pattern, text, re.IGNORECASE | re.DOTALL)
    return m.group(1).strip() if m else None


def parse_concept_list(text: str) -> list[str]:
    """``[a, b, "c"]`` (a Python/JSON-like list), or bullet lines, or a comma-separated line."""
    text = _bounded(text).strip()
    m = re.search(r"\[(.*?)\]", text, re.DOTALL)
    if m:
        items = _literal_list(m.group(1))
        if items is None:
            items = m.group(1).split(",")
    else:
        bullets = [_BULLET.match(line.strip()) for line in text.splitlines()]
        items = [b.group(1) for b in bullets if b] or text.splitlines()[0].split(",")
    return _dedupe([c for c in (clean_item(i) for i in items) if c])


def parse_description(text: str) -> tuple[str, list[str]]:
    """(description, key concepts) from "Description: ... Key Concepts: [...]"."""
    text = _bounded(text)
    description = _section(text, "description", ("key concepts", "thought process"))
    concepts_text = _section(text, r"key\s*concepts", ("description", "thought process"))
    if not description:
        raise ValueError('no "Description:" paragraph')
    if concepts_text is None:
        raise ValueError('no "Key Concepts: [...]" list')
    concepts = parse_concept_list(concepts_text)
    if not concepts:
        raise ValueError('the "Key Concepts" list is empty')
    description = (
        clean_item(description.strip())
        if "\n" not in description
        else re.sub(r"[*_`]+", "", description).strip()
    )
    return description, concepts


def parse_prompt_list(text: str, *, minimum: int = 1) -> list[str]:
    """Prompts from a numbered list ``1. ...`` / ``1) ...``, de-duplicated, in order."""
    items = []
    for line in _bounded(text).splitlines():
        m = re.match(r"^\s*[-*]?\s*\**\s*(\d+)\s*[.)]\**\s+(.+)$", line)
        if m:
            item = clean_item(m.group(2))
            if item:
                items.append(item)
    items = _dedupe(items)
    if len(items) < minimum:
        raise ValueError(
            f"expected a numbered list of at least {minimum} prompt{'s' if minimum > 1 else ''}, "
            f"found {len(items)}"
        )
    return items


def parse_rating(text: str) -> int:
    """A 1-3 rating: ``<rating>2</rating>`` (the paper's 'rating_i...' is this tag with its markup lost),
    ``rating_i2/rating_i``, ``Rating: 2``; the last one in the answer counts (judges explain first)."""
    text = _bounded(text)
    found = re.findall(r"<\s*rating\s*>\s*([1-3])\s*<\s*/\s*rating\s*>", text, re.IGNORECASE)
    found = found or re.findall(r"rating_i\s*([1-3])\s*/?\s*rating_i", text, re.IGNORECASE)
    found = found or re.findall(r"\brating\b\W{0,3}(?:is\W{0,3})?([1-3])\b", text, re.IGNORECASE)
    if not found:
        if re.fullmatch(r"\s*([1-3])\s*\.?\s*", text):
            return int(text.strip().rstrip("."))
        raise ValueError("no rating 1, 2 or 3 in the form <rating>N</rating>")
    return int(found[-1])


def parse_prompt_pairs(text: str) -> list[tuple[str, str]]:
    """Appendix D.2 answers: ``1a. original`` / ``1b. altered`` pairs, in order of their number."""
    originals: dict[int, str] = {}
    altered: dict[int, str] = {}
    for line in _bounded(text).splitlines():
        m = re.match(r"^\s*[-*]?\s*(\d+)\s*([ab])\s*[.)]\s*(.+)$", line, re.IGNORECASE)
        if m:
            (originals if m.group(2).lower() == "a" else altered)[int(m.group(1))] = clean_item(m.group(3))
    pairs = [(originals[k], altered[k]) for k in sorted(originals) if k in altered]
    if not pairs:
        raise ValueError("expected lines '1a. original prompt' and '1b. altered prompt'")
    return pairs

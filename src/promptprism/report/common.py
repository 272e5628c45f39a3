"""Pieces every report page shares: safe figures, notes, run details, thumbnails of samples."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePath
from typing import Any

from .._version import __version__
from . import figures
from .html import Html, Page, details, el, esc, figure, fmt, img, kv_table, note, snippet

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm")


def safe_figure(fn: Callable[..., bytes], *args: Any, alt: str, caption: Any = None, **kwargs: Any) -> Html:
    """``fn(*args, **kwargs)`` as an embedded figure, or a note saying why it could not be drawn."""
    try:
        data = fn(*args, **kwargs)
    except figures.FiguresUnavailable as exc:
        return note(f"{alt}: {exc}")
    return figure(data, alt=alt, caption=caption)


def display_name(where: Any, default: str) -> str:
    """A set's name for headings when ``where`` is where it was read (a path: its file name), else the name
    it was given; ``default`` without either."""
    if not where:
        return default
    s = str(where)
    if os.sep in s or "/" in s:
        return PurePath(s).name or s
    return s


def _looks_like_path(value: str) -> bool:
    return "/" in value or "\\" in value or PurePath(value).suffix != ""


def _path_label(path: PurePath, level: int) -> str:
    """``level`` 0: the file stem; 1: the file name; 2, 3, ...: one more parent folder each two levels."""
    stem = path.stem if path.suffix else path.name
    if level == 0:
        return stem
    parents = path.parent.parts[-(level // 2):] if level >= 2 else ()
    return "/".join([*parents, stem if level % 2 == 0 else path.name])


def set_display_names(where: Mapping[str, Any], defaults: Mapping[str, str], *,
                      given: Sequence[str] | None = None) -> dict[str, str]:
    """The sets' names on a page, one scheme for the title, headings and verdict: ``given`` (the names the
    user gave, ``--names`` or NAME=PATH) exactly as given; else from ``where`` (each set's path or name),
    a path shortened to its file stem, with the file name and then the parent folders that tell two sets
    apart when stems collide (``d1/m`` and ``d2/m``, as the commands name sets); a name that is not a path
    as it is. ``defaults`` when the sets cannot be told apart (the same file twice) or nothing is known."""
    keys = list(defaults)
    if given is not None and len(set(given)) == len(keys) == len(given):
        return dict(zip(keys, (str(g) for g in given), strict=True))
    values = {k: str(where[k]) if where.get(k) else "" for k in keys}
    if not all(values.values()):
        return dict(defaults)
    paths = {k: PurePath(v) for k, v in values.items() if _looks_like_path(v)}
    levels = dict.fromkeys(keys, 0)
    while True:
        names = {k: _path_label(paths[k], levels[k]) if k in paths else values[k] for k in keys}
        clash = [k for k in keys if list(names.values()).count(names[k]) > 1]
        if not clash:
            return names
        movable = [k for k in clash if k in paths and levels[k] <= 2 * len(paths[k].parts)]
        if not movable:
            return dict(defaults)
        for k in movable:
            levels[k] += 1


def notes_block(notes: Iterable[str] | None) -> Html | None:
    """The non-empty notes as a block of note boxes, or None when there are none."""
    items = [n for n in (notes or []) if n]
    return el("div", [note(n) for n in items]) if items else None


def run_details(result: Any, extra: Iterable[tuple[str, Any]] = ()) -> Html:
    """Config, seed, timings and versions, collapsed."""
    cfg = getattr(result, "config", {}) or {}
    rows = [(k, _value(v)) for k, v in cfg.items()]
    rows += [("seed", getattr(result, "seed", None))] if hasattr(result, "seed") else []
    rows += list(extra)
    timings = getattr(result, "timings", {}) or {}
    if timings:
        rows.append(
            ("timings (s)", ", ".join(f"{k.removesuffix('_s')} {fmt(v, 3)}" for k, v in timings.items()))
        )
    rows.append(("promptprism", f"result {getattr(result, 'version', '?')}, report {__version__}"))
    return details("configuration, seed, timings", kv_table(rows))


def _value(v: Any) -> str:
    if isinstance(v, (dict, list)):
        return snippet(json.dumps(v, default=str), 400)
    return fmt(v) if isinstance(v, float) else str(v)


def finish(page: Page, *, kind: str, result: Any = None, view: dict | None = None,
           embed_result: bool = True) -> str:
    """Set the page footer (version, report kind), embed the data behind the views (``result``'s
    result.json content unless not ``embed_result``, its fingerprint and the renderer's ``view`` data) and
    return the whole page as HTML."""
    page.footer = [
        f"promptprism {__version__} · {kind} report · self-contained: figures, thumbnails, data and "
        "scripts are embedded in this file, nothing is loaded from elsewhere."
    ]
    if result is not None or view is not None:
        to_dict = getattr(result, "to_dict", None)
        content = to_dict() if callable(to_dict) else None
        page.data = {
            "kind": getattr(result, "kind", kind),
            "fingerprint": fingerprint(content if content is not None else view),
            "result": _for_page(content) if embed_result else None,
            "view": view or {},
        }
    return page.render()


#: result.json fields a page leaves out of its embedded copy (shown as a figure; in a file beside it):
#: the pixel CKA matrix is d^2 numbers (a 32 x 32 image's: 22 MB of JSON)
PAGE_OMITTED = ("cka_matrix",)


def _for_page(content: Any) -> Any:
    """result.json's content without :data:`PAGE_OMITTED` (each set to None)."""
    if not isinstance(content, dict) or not any(content.get(k) is not None for k in PAGE_OMITTED):
        return content
    return {k: (None if k in PAGE_OMITTED else v) for k, v in content.items()}


def fingerprint(content: Any) -> str:
    """A short hash of a result's content (result.json's fields): the key under which the page keeps the
    reader's tags and notes (localStorage), the same for every page of the same result."""
    import hashlib

    text = json.dumps(content, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# ------------------------------------------------------------------------------------------ thumbnails
def find_image_file(value: Any, bases: Iterable[Path]) -> Path | None:
    """``value`` as an existing image file: absolute, or relative to the working folder or to one of
    ``bases``."""
    if not isinstance(value, str) or not value.lower().endswith(IMAGE_SUFFIXES):
        return None
    p = Path(value)
    candidates = [p] if p.is_absolute() else [p, *(b / p for b in bases)]
    return next((c for c in candidates if c.is_file()), None)


def thumb(visual: tuple[bytes, str, bool] | None, caption: Any, *, title: str = "") -> Html:
    """A thumbnail with a caption (``visual`` from :mod:`.figures`), or the caption alone."""
    if visual is None:
        return el("div", caption, cls="thumb")
    data, mime, pixelated = visual
    return el(
        "div",
        img(data, alt=title or "sample", mime=mime, cls="px" if pixelated else None, title=title or None),
        caption,
        cls="thumb",
    )


def text_card(text: Any, caption: Any) -> Html:
    """A card with a text snippet (at most 280 characters) and a caption below it."""
    return el(
        "div", el("div", snippet(text, 280) or "(empty output)"), el("div", caption, cls="muted"), cls="snip"
    )


def visual_of(
    item: Any, *, index: int | None = None, images: Any = None, bases: Iterable[Path] = ()
) -> tuple[tuple[bytes, str, bool] | None, str | None]:
    """(thumbnail or None, why not): from ``images[index]`` when given, else ``item`` as an image file."""
    if images is not None and index is not None:
        try:
            if index < len(images):
                return figures.array_thumbnail(images[index]), None
        except (ValueError, TypeError, IndexError) as exc:
            return None, f"image {index} could not be drawn ({exc})"
    path = find_image_file(item, list(bases))
    if path is not None:
        try:
            return figures.file_thumbnail(path), None
        except figures.FiguresUnavailable as exc:
            return None, str(exc)
        except figures.ImageTooLarge as exc:
            return None, f"image not shown: {exc}"
        except (OSError, ValueError) as exc:
            return None, f"{path.name}: not readable ({exc})"
    if isinstance(item, str) and item.lower().endswith(IMAGE_SUFFIXES):
        return None, f"image file not found: {item}"
    return None, None


def image_folders(source: Any, base_dir: Any) -> list[Path]:
    """Where a set's image-file outputs may be: the folder of its input (when ``source`` is a path), then
    the results folder."""
    folders = [Path(source).parent] if source and ("/" in str(source) or "\\" in str(source)) else []
    if base_dir is not None:
        folders.append(Path(base_dir))
    return folders


def mapping(obj: Any) -> Mapping[str, Any]:
    """``obj`` if it is a mapping, else an empty dict."""
    return obj if isinstance(obj, Mapping) else {}


__all__ = [
    "esc",
    "safe_figure",
    "display_name",
    "set_display_names",
    "notes_block",
    "run_details",
    "finish",
    "thumb",
    "text_card",
    "visual_of",
    "find_image_file",
    "mapping",
]

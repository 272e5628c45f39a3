"""From what went wrong to one line for the user: exceptions -> messages, library parameters -> CLI flags.

The library names its parameters (``n_features must be even``); the CLI says which flag to change
(``--features must be even``). :data:`PARAMETER_OPTIONS` is the one table of parameter names that differ from
the option's own name; everything else maps ``a_b`` to the command's ``--a-b`` when the command has it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from ..errors import PromptPrismError

#: library parameter name -> the python name of the CLI option that sets it (per command where they differ)
PARAMETER_OPTIONS: dict[str, dict[str, str]] = {
    "*": {
        "n_features": "features", "number of features": "features", "n_modes": "modes",
        "n_clusters": "clusters", "n_regions": "n_regions", "cka_max_images": "cka_images",
        "max_images": "cka_images", "out": "out", "dim": "features", "sigma": "sigma_prompt",
        "n_discovery_prompts": "discovery_prompts", "n_attributes": "attributes",
        "n_generated": "generated", "template_dir": "templates", "cache_dir": "chat_cache",
        "api_key_env": "api_key_env", "chunk size": "chunk_size", "number of clusters": "clusters",
        "number of modes": "modes", "k": "k",
    },
    "compcon": {"batch_size": "description_prompts"},
    "demo": {"seed": "seed", "per_prompt": "per_prompt"},
}

_IDENT = re.compile(r"(?<![\w\-./'\"])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w\-/])")
_KEYWORD = re.compile(r"(?<![\w\-./'\"])([a-z][a-z0-9_]*)=(None|True|(?=\S))")
_LEADING = re.compile(r"^([a-z][a-z0-9 ]*?)(?= must | is | needs | should | cannot |: | ')")


def option_table(command: str, options: Mapping[str, str]) -> dict[str, str]:
    """``{library parameter: flag}`` for a command whose options are ``{python name: flag}``."""
    table = {name: flag for name, flag in options.items()}
    for scope in ("*", command):
        for param, option in PARAMETER_OPTIONS.get(scope, {}).items():
            if option in options:
                table[param] = options[option]
    return table


def to_flags(message: str, table: Mapping[str, str]) -> str:
    """Replace library parameter names in ``message`` by the command's flags (``sigma_prompt`` ->
    ``--sigma-prompt``): names with an underscore anywhere, plain words only as the message's subject."""
    if not table:
        return message

    def sub(match: re.Match) -> str:
        name = match.group(1)
        return table.get(name, name)

    def keyword(match: re.Match) -> str:
        name, value = match.group(1), match.group(2)
        if name == "cache" and value == "None":
            return table.get("no_cache", "--no-cache")
        if name not in table:
            return match.group(0)
        return table[name] + ("" if value == "True" else " " + value if value else " ")

    message = _KEYWORD.sub(keyword, message)
    message = _IDENT.sub(sub, message)
    lead = _LEADING.match(message)
    if lead and lead.group(1) in table:
        message = table[lead.group(1)] + message[lead.end(1):]
    return message


def _available_memory() -> str:
    try:
        import os

        pages = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        return f"{pages / 2**30:.1f} GiB"
    except (ValueError, OSError, AttributeError):  # pragma: no cover - platform dependent
        return "unknown"


def error_line(exc: BaseException) -> str | None:
    """One line for an exception a user's input or environment can cause; None for a bug."""
    if isinstance(exc, PromptPrismError):
        return str(exc)
    if isinstance(exc, MemoryError):
        detail = str(exc) or "an allocation failed"
        return f"not enough memory: {detail} ({_available_memory()} available); use smaller inputs or options"
    try:
        from PIL import Image

        if isinstance(exc, Image.DecompressionBombError):
            return f"image too large to decode safely: {exc}"
    except ImportError:  # pragma: no cover
        pass
    if isinstance(exc, UnicodeEncodeError) and isinstance(exc.object, str):
        start, end = exc.start, exc.end
        context = exc.object[max(0, start - 30) : end + 30]
        return (f"the text {context!r} holds {exc.object[start:end]!r}, which cannot be written as UTF-8 "
                f"({exc.reason}); fix that text in the input")
    if isinstance(exc, UnicodeError):
        return f"cannot read or write text: {exc}; expected UTF-8 text"
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON: {exc}"
    if isinstance(exc, OSError):
        names = " -> ".join(str(n) for n in (exc.filename, exc.filename2) if n is not None)
        why = exc.strerror or str(exc)
        return f"{names}: {why}" if names else why
    if isinstance(exc, (OverflowError, FloatingPointError)):
        return (f"a number overflowed ({exc}): an option (e.g. eta, a bandwidth) or the inputs are out of "
                "range for float64")
    if isinstance(exc, RecursionError):
        return "input nested too deeply to read"
    try:
        from rich.errors import MarkupError

        if isinstance(exc, MarkupError):
            return f"cannot print a value ({exc})"
    except ImportError:  # pragma: no cover
        pass
    return None

"""From what went wrong to one line for the user: exceptions -> messages, library parameters -> CLI flags.

The library names its parameters (``n_features must be even``) and says which one an error is about
(``OptionError.parameter``); the CLI says which flag to change (``--features must be even``).
:data:`PARAMETER_OPTIONS` is the one table of parameter names that differ from the option's own name;
everything else maps ``a_b`` to the command's ``--a-b`` when the command has it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..errors import PromptPrismError

#: library parameter name -> the python name of the CLI option that sets it (per command where they differ)
PARAMETER_OPTIONS: dict[str, dict[str, str]] = {
    "*": {
        "n_features": "features", "n_modes": "modes",
        "n_clusters": "clusters", "n_regions": "n_regions", "cka_max_images": "cka_images",
        "max_images": "cka_images", "out": "out",
        "n_discovery_prompts": "discovery_prompts", "n_attributes": "attributes",
        "template_dir": "templates", "cache_dir": "chat_cache",
        "api_key_env": "api_key_env", "k": "k",
        "n_folds": "n_folds",
    },
    # (compcon's own: regions' --generated names image sets, never compcon's prompts per iteration)
    "compcon": {"batch_size": "description_prompts", "answers_per_prompt": "samples",
                "n_generated": "generated_prompts"},
    "demo": {"seed": "seed", "per_prompt": "per_prompt"},
    "generate": {"guidance": "guide_reference", "scale": "guide_scale", "rho": "guide_rho"},
    "quality": {"pairs": "judge_pairs"},
}

#: characters that may follow a parameter's name inside a message (``sigma_output:``, ``(k,``)
_TRAILING = ",;:.)'\""


def option_table(command: str, options: Mapping[str, str]) -> dict[str, str]:
    """``{library parameter: flag}`` for a command whose options are ``{python name: flag}``."""
    table = {name: flag for name, flag in options.items()}
    for scope in ("*", command):
        for param, option in PARAMETER_OPTIONS.get(scope, {}).items():
            if option in options:
                table[param] = options[option]
    return table


def to_flags(message: str, table: Mapping[str, str], parameter: str | None = None) -> str:
    """``message`` with the parameter it is about (``parameter``, else the name it begins with as its
    subject) written as the command's flag: ``sigma_prompt must be > 0`` -> ``--sigma-prompt must be > 0``,
    ``nearest_k=70`` -> ``--nearest-k 70``, ``cache=None`` -> ``--no-cache``."""
    from ..errors import leading_parameter

    name = parameter or leading_parameter(message)
    flag = table.get(name) if name else None
    if flag is None:
        return message
    if message.startswith(name + " ") or message.startswith(name + ":"):
        message = flag + message[len(name):]
    words = message.split(" ")
    for i, word in enumerate(words):
        if word.rstrip(_TRAILING) == name:
            words[i] = flag + word[len(name):]
        elif word.startswith(name + "="):
            value = word[len(name) + 1:]
            negated = table.get(f"no_{name}")
            words[i] = negated + value[4:] if negated and value.startswith("None") else f"{flag} {value}"
    return " ".join(words)


def flag_message(exc: PromptPrismError, table: Mapping[str, str]) -> str:
    """The one line of a library error, its parameter (``exc.parameter``, and only that: the words of the
    message are not read for one) written as the command's flag."""
    parameter = getattr(exc, "parameter", None)
    return to_flags(str(exc), table, parameter) if parameter else str(exc)


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

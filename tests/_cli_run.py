"""Run the ``promptprism`` CLI in this process and capture what it printed (helper for the CLI tests)."""

from __future__ import annotations

import contextlib
import io

from promptprism.cli import main


def run_cli(*argv) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``promptprism ARGV``; stdout and stderr are not terminals."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def listed(folder):
    """The names in a results folder, less the hidden list of outputs every command writes."""
    return sorted(p.name for p in folder.iterdir() if p.name != ".promptprism-outputs.json")


def option_parser(param):
    """The ``parser`` an option was declared with (a :class:`promptprism.cli._options.OptionType`), or None;
    typer keeps it in its type descriptor (0.29) or in the click type it wraps it in (earlier)."""
    info = getattr(getattr(param, "type_descriptor", None), "parameter_info", None)
    return getattr(info, "parser", None) or getattr(getattr(param, "type", None), "func", None)


def option_annotation(param):
    """``int`` or ``float`` for an option annotated so (or with such a range), else None (either typer)."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if annotation is not None:
        return annotation
    name = getattr(getattr(param, "type", None), "name", "")
    return int if name.startswith(("int", "integer")) else float if name.startswith("float") else None

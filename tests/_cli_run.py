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

"""``promptprism check RESULT --fail-on COND``: exit 1 when a result meets a condition (a CI gate).

One line per condition and row (``FAIL`` or ``ok``); exit 1 when any condition holds, 0 otherwise, 2 for a
bad result or condition, 3 for a bug (never 1). The conditions are :mod:`promptprism.gate`'s:
``significant``, ``METRIC OP X``, and with ``--baseline`` ``change(METRIC) OP X`` / ``ratio(METRIC) OP X``.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ._app import app, console, run_state


@app.command("check")
def check(
    result: Path = typer.Argument(..., metavar="RESULT", help="A results folder (or its result.json)."),
    fail_on: list[str] = typer.Option(..., "--fail-on",
                                      help="A condition that fails the check (repeatable): significant, "
                                           "METRIC>X (also <, <=, >=, ==; e.g. fd>5, precision<0.8, "
                                           "distance>0.1), or with --baseline change(METRIC)>X, "
                                           "ratio(METRIC)>X."),
    baseline: Path | None = typer.Option(None, "--baseline",
                                         help="A results folder of the same kind to compare with "
                                              "(change/ratio conditions)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the failed conditions."),
) -> None:
    """Fail (exit 1) when a result meets any --fail-on condition: a gate for CI."""
    from ..errors import InputError
    from ..gate import evaluate
    from ..results import load_result

    current = load_result(result)
    before = load_result(baseline) if baseline is not None else None
    if before is not None and before.kind != current.kind:
        raise InputError(f"{baseline}: holds a {before.kind} result, {result} a {current.kind} one; a "
                         "baseline must be the same kind")
    checks = evaluate(current, fail_on, before)
    failed = [c for c in checks if c.failed]
    for c in checks:
        if c.failed or not quiet:
            console.print(f"{'FAIL' if c.failed else 'ok'} {c.condition}: {c.message}", markup=False,
                          soft_wrap=True, highlight=False)
    run_state().summary = {"kind": "check", "result": str(result), "baseline": None if baseline is None
                           else str(baseline), "passed": not failed,
                           "checks": [{"condition": c.condition, "row": c.row, "value": c.value,
                                       "failed": c.failed, "message": c.message} for c in checks]}
    if failed:
        raise typer.Exit(1)

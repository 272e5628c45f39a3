"""``promptprism report DIR``: (re)write ``DIR/report.html`` for an existing result; and the shared helper
with which every method command writes its report next to ``result.json`` (``--no-report`` skips it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from ._app import app, console

NO_REPORT = typer.Option(False, "--no-report", help="Do not write report.html next to result.json.")


def emit_report(
    result: Any, out: Path, *, inputs: Any = None, images: Any = None, skip: bool = False, quiet: bool = False
) -> Path | None:
    """Write ``out/report.html`` for a command that just saved ``out/result.json``; print where it is."""
    if skip:
        return None
    from ..report import write_report

    if not quiet:
        console.print("writing report.html ...", style="dim")
    path = write_report(result, out, inputs=inputs, images=images)
    console.print(f"report: {escape(str(path))}", soft_wrap=True)
    return path


@app.command("report")
def report(
    folder: Path = typer.Argument(..., metavar="DIR", help="A results folder holding result.json."),
    map_points: int = typer.Option(
        2000,
        "--map-points",
        help="PromptSplit: at most this many samples in the t-SNE map (a seeded subsample above it).",
    ),
) -> None:
    """Write DIR/report.html for the result in DIR: one self-contained page of figures and tables.

    Inputs the page needs beyond result.json (PromptSplit's embeddings and images, Regions' images, CompCon's
    image banks) are read again from the paths the result names, where they still exist.
    """
    from ..errors import OptionError
    from ..report.core import report_from_dir

    if map_points < 12:
        raise OptionError(f"--map-points must be at least 12, got {map_points}")
    path = report_from_dir(folder, map_points=map_points)
    console.print(f"report: {escape(str(path))}", soft_wrap=True)

"""``promptprism report DIR``: (re)write ``DIR/report.html`` for an existing result.

Method commands write their report with their result, as one transaction (:func:`._output.save_outputs`);
``--no-report`` skips it.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import InputError
from ._app import app, console, run_state
from ._options import Integer, typed, unique_names

NO_REPORT = typer.Option(False, "--no-report", help="Do not write report.html next to result.json.")


MAP_POINTS = 5_000  # report.map.MAP_POINTS (importing it here would load the report early)


@app.command("report")
def report(
    folders: list[Path] = typer.Argument(..., metavar="DIR...", help="A results folder holding result.json; "
                                         "several (one per checkpoint or date, in order): one page over "
                                         "the runs."),
    out: Path = typer.Option(None, "--out", "-o", help="The folder report.html is written to (default: DIR; "
                                                       "needed with several DIRs: the runs page)."),
    map_points: int = typed(MAP_POINTS, Integer(minimum=12), "--map-points",
                            help="PromptSplit: at most this many samples in the map (a seeded "
                                 "subsample above it; >= 12)."),
) -> None:
    """Write DIR/report.html for the result in DIR: one self-contained page of figures and tables. With
    several DIRs (runs over time), write one page over them to --out: verdicts, distances, diversity and
    regions metrics with their intervals, and the prompts that entered or left the significant set.

    Inputs the page needs beyond result.json (PromptSplit's embeddings and images, Regions' images, CompCon's
    image banks) are read again from the paths the result names, where they still exist.
    """
    from ..io import atomic_write_text, check_out_dir, exclusive_lock
    from ..report.core import reload_inputs, render_report
    from ..results import load_result
    from ._output import check_report_out

    if len(folders) > 1:
        _report_runs(folders, out)
        return
    folder = folders[0]
    if folder.is_file() and folder.name.endswith(".json"):
        folder = folder.parent
    if not folder.is_dir():
        raise InputError(f"{folder}: no such results folder")
    try:
        result = load_result(folder)
    except UnicodeDecodeError as exc:
        raise InputError(f"{folder / 'result.json'}: not a results file (not UTF-8 text: {exc.reason} at "
                         f"byte {exc.start})") from None
    target = folder if out is None else out
    with exclusive_lock(folder, parameter="folder"):  # not while a command writes this folder
        check_out_dir(target, names=("report.html",), parameter="folder" if out is None else "out")
        check_report_out(target, [folder])
        inputs, images, notes = reload_inputs(result, folder)
        try:
            page = render_report(result, inputs=inputs, images=images, base_dir=folder, notes=notes,
                                 map_points=map_points)
        except (AttributeError, TypeError, KeyError, IndexError) as exc:  # fields of the wrong type or shape
            raise InputError(f"{folder / 'result.json'}: not a valid {result.kind} result; its fields have "
                             f"the wrong types ({type(exc).__name__}: {exc})") from None
        target.mkdir(parents=True, exist_ok=True)
        path = atomic_write_text(target / "report.html", page)
    run_state().summary = {"kind": result.kind, "files": {"report.html": str(path)}}
    console.print(f"report: {path}", markup=False, soft_wrap=True)


def _report_runs(folders: list[Path], out: Path | None) -> None:
    """The page over several results folders (:mod:`promptprism.report.runs`), written to ``out``."""
    from ..errors import OptionError
    from ..io import atomic_write_text
    from ..report.runs import render_runs, run_links
    from ..results import load_result
    from ._output import check_report_out

    if out is None:
        raise OptionError("--out is needed with several results folders (the runs page is written there)")
    folders = [f.parent if f.is_file() and f.name.endswith(".json") else f for f in folders]
    for folder in folders:
        if not folder.is_dir():
            raise InputError(f"{folder}: no such results folder")
    # (folders of one name told apart by their parents, x/ab and y/ab; one folder twice numbered, ab#1, ab#2)
    runs = [(name, load_result(folder)) for name, folder in zip(unique_names(folders), folders, strict=True)]
    check_report_out(out, [])
    out.mkdir(parents=True, exist_ok=True)
    path = atomic_write_text(out / "report.html", render_runs(runs, run_links(folders, out)))
    run_state().summary = {"kind": "runs", "runs": [n for n, _ in runs], "files": {"report.html": str(path)}}
    console.print(f"report: {path}", markup=False, soft_wrap=True)

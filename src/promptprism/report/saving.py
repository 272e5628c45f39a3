"""A result, its other files and its report written into a folder as one transaction.

:func:`save_result` is the library's way to write a result where a person will look at it: ``result.json``
(``result.save``), the files ``extra(folder)`` writes, the inputs' fingerprints (``sources``) and
``report.html`` are written into a staging folder and moved over the earlier ones only when all of them are
there (:func:`promptprism.io.staged_outputs`), so a failure anywhere leaves the earlier result and report as
they were. The command line's ``save_outputs`` is this function plus its own bookkeeping.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..io import staged_outputs
from ..results import one_dict_per_result
from .core import REPORT_NAME


def save_result(
    result: Any,
    out: str | os.PathLike,
    *,
    report: bool = True,
    inputs: Mapping[str, Any] | None = None,
    sources: Mapping[str, str | os.PathLike] | None = None,
    images: Mapping[str, Any] | None = None,
    extra: Callable[[Path], None] | None = None,
    progress: bool | None = False,
    before_report: Callable[[], None] | None = None,
    finish: Callable[[Path, list[str], Any], None] | None = None,
    origin: str | os.PathLike | None = None,
) -> dict[str, Path]:
    """Write ``result``, ``extra(folder)`` and (``report``) its page into ``out``; ``{file name: path}``.

    ``sources``: the input sets' paths by name, recorded with their fingerprints in result.json's ``inputs``
    (:func:`promptprism.provenance.record_inputs`; a relative path that ``extra`` writes is recorded there);
    ``inputs`` and ``images``: what the report shows (:func:`promptprism.report.render_report`).
    ``before_report()`` runs before the page is rendered; ``finish(stage, names, result)`` (the result as
    written, its inputs recorded) may add files of its own once everything else is staged (they are not in
    the returned names). ``origin``: the results folder ``result`` was read from (``load_result``), whose
    recorded ``inputs`` are relative to it: they are re-expressed relative to ``out``, each from where the
    input is now (:func:`promptprism.provenance.rebase_inputs`), so a result written to another folder
    (``describe --out``) finds its inputs as the first one did."""
    from ..provenance import rebase_inputs, record_inputs

    out = Path(out)
    with one_dict_per_result(), staged_outputs(out) as stage:  # (result.json and the report: one dict)
        if extra is not None:
            extra(stage)
        if origin is not None and result.inputs:
            result = dataclasses.replace(result, inputs=rebase_inputs(result.inputs, out, origin=origin))
        if sources:
            recorded = record_inputs(sources, out, contents=inputs, stage=stage)
            result = dataclasses.replace(result, inputs={**result.inputs, **recorded})
        for name, content in result.files().items():  # (into the stage already: no second transaction)
            if isinstance(content, bytes):
                (stage / name).write_bytes(content)
            else:
                (stage / name).write_text(content, encoding="utf-8")
        if report:
            from .core import render_report

            if before_report is not None:
                before_report()
            page = render_report(result, inputs=inputs, images=images, base_dir=stage, progress=progress)
            (stage / REPORT_NAME).write_text(page, encoding="utf-8")
        names = sorted(p.relative_to(stage).as_posix() for p in stage.rglob("*") if p.is_file())
        if finish is not None:
            finish(stage, names, result)
    return {name: out / name for name in names}

"""Writing a command's outputs: result.json, report.html and any other file, as one transaction.

:func:`save_outputs` is what every method command calls once its result is computed: the result, its
extra files and its report are written into a staging folder and only then moved over the earlier ones
(:func:`promptprism.io.staged_outputs`), so a failure anywhere (the report included) leaves the earlier
result and report intact. It also records the summary that ``--json`` prints.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..io import staged_outputs
from ._app import console, run_state

REPORT_NAME = "report.html"

#: per result kind, the headline numbers that must be finite (result.json would write inf/NaN as null)
HEADLINE_FIELDS = {
    "promptsplit": ("distance", "eigenvalues"),
    "scendi": ("scendi", "scendi_prompt", "scendi_order2", "vendi", "rke", "model_share"),
    "regions": ("cms", "product_cms", "mmd2", "region_cms", "gamma"),
    "set_metrics": ("precision", "recall", "density", "coverage", "fd", "kid", "mmd2", "clip_score"),
}


def check_finite_result(result: Any) -> None:
    """Refuse a result whose headline numbers overflowed or underflowed to inf/NaN (never written as null)."""
    import numpy as np

    from ..errors import InputError

    parts = getattr(result, "models", None)
    for part in parts if isinstance(parts, list) else [result]:
        for name in HEADLINE_FIELDS.get(getattr(part, "kind", ""), ()):
            value = getattr(part, name, None)
            if value is None:
                continue
            try:
                arr = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError):
                continue
            if not np.isfinite(arr).all():
                where = getattr(part, "name", None)
                raise InputError(
                    f"{name}{f' of {where}' if where else ''} is not finite (an overflow or underflow in the "
                    "computation): an option (e.g. eta, a bandwidth) or the inputs are out of range for "
                    "float64; nothing was written")


def summary_of(result: Any, written: Mapping[str, Path]) -> dict[str, Any]:
    """A small JSON summary of a result for scripts: its scalar fields, short lists, the files written."""
    data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    summary: dict[str, Any] = {}
    for key, value in data.items():
        if value is None or isinstance(value, (str, int, float, bool)):
            summary[key] = value
        elif isinstance(value, list) and len(value) <= 64 and all(
                v is None or isinstance(v, (str, int, float, bool)) for v in value):
            summary[key] = value
    if isinstance(data.get("prompt_ranking"), list):
        summary["prompt_ranking"] = data["prompt_ranking"][:10]
    if data.get("kind") == "metrics":
        summary["models"] = result.table()
    summary["files"] = {name: str(path) for name, path in written.items()}
    return summary


def save_outputs(
    result: Any,
    out: str | Path,
    *,
    report: bool = True,
    inputs: Mapping[str, Any] | None = None,
    images: Mapping[str, Any] | None = None,
    extra: Callable[[Path], None] | None = None,
    quiet: bool = False,
) -> dict[str, Path]:
    """Write ``result`` (``result.save``), ``extra(folder)`` and the report into ``out`` as one transaction.

    Returns ``{file name: final path}`` of what was written.
    """
    out = Path(out)
    check_finite_result(result)
    with staged_outputs(out) as stage:
        result.save(stage)
        if extra is not None:
            extra(stage)
        if report:
            from ..report import render_report

            if not quiet:
                console.print("writing report.html ...", style="dim", markup=False)
            page = render_report(result, inputs=inputs, images=images, base_dir=stage,
                                 progress=False if quiet else None)
            (stage / REPORT_NAME).write_text(page, encoding="utf-8")
        names = sorted(p.relative_to(stage).as_posix() for p in stage.rglob("*") if p.is_file())
    written = {name: out / name for name in names}
    run_state().summary = summary_of(result, written)
    return written


def print_written(written: Mapping[str, Path]) -> None:
    """``results: PATH`` and ``report: PATH``, printed literally (no markup, no wrapping)."""
    if "result.json" in written:
        console.print(f"results: {written['result.json']}", markup=False, soft_wrap=True)
    if REPORT_NAME in written:
        console.print(f"report: {written[REPORT_NAME]}", markup=False, soft_wrap=True)

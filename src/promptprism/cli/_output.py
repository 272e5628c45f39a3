"""Writing a command's outputs: result.json, report.html and any other file, as one transaction.

:func:`save_outputs` is what every method command calls once its result is computed: the result, its
extra files and its report are written into a staging folder and only then moved over the earlier ones
(:func:`promptprism.io.staged_outputs`), so a failure anywhere (the report included) leaves the earlier
result and report intact. It also records the summary that ``--json`` prints.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import OptionError
from ..io import LOCK_SUFFIX, STAGING_PREFIX, atomic_write_text
from ..results import one_dict_per_result
from ._state import console, run_state

REPORT_NAME = "report.html"
#: the hidden list of what a command wrote into its results folder
OUTPUTS_LIST = ".promptprism-outputs.json"
#: result kinds each command writes (a folder holding another command's result is refused)
COMMAND_KINDS = {"split": ("promptsplit",), "demo": ("promptsplit",),
                 "diversity": ("scendi", "scendi_comparison"), "regions": ("regions",),
                 "compcon": ("compcon",), "compcon-eval": ("compcon-eval",),
                 "compare": ("promptsplit_kway",), "metrics": ("metrics",)}


def _visible_files(out: Path) -> list[str]:
    """Files in ``out`` (recursively) other than promptprism's own hidden ones."""
    names = []
    for p in out.rglob("*"):
        rel = p.relative_to(out)
        top = rel.parts[0]
        if top == OUTPUTS_LIST or top.startswith(STAGING_PREFIX) or top.endswith(LOCK_SUFFIX):
            continue
        if p.is_file() or p.is_symlink():
            names.append(rel.as_posix())
    return sorted(names)


def _listing(out: Path) -> dict | None:
    try:
        data = json.loads((out / OUTPUTS_LIST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(data, dict) and isinstance(data.get("files"), list)
    return data if ok else None


def _result_kind(out: Path) -> str | None:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads((out / "result.json").read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("kind"), str):
            return data["kind"]
    return None


def check_out_contents(out: str | Path, command: str) -> None:
    """Refuse ``out`` when it holds another command's result or files promptprism did not write there."""
    out = Path(out)
    if not out.is_dir():
        return
    files = _visible_files(out)
    if not files:
        return
    listing = _listing(out)
    owner = listing.get("command") if listing else None
    kind = _result_kind(out)
    writer = next((c for c, kinds in COMMAND_KINDS.items() if kind in kinds and command not in
                   [k for k, v in COMMAND_KINDS.items() if kind in v]), None)
    if owner and owner != command:
        other = owner
    elif owner:  # (written by this command, which may write it again: unless its result is now another's)
        other = writer if command in COMMAND_KINDS else None
        if listing.get("whole_folder") and other is None:
            return  # (a run that owns its whole folder, e.g. a demo resuming what it kept)
    else:
        other = writer
    if other is not None:
        raise OptionError(f"out {str(out)!r} holds the result of `promptprism {other}`; choose another "
                          f"folder (or delete that one) so that one folder holds one command's result")
    known = any(kind in kinds for kinds in COMMAND_KINDS.values())  # (an earlier run's, before listings)
    foreign = [f for f in files if f not in listing["files"] and f != REPORT_NAME] if listing else \
        ([] if known else files)
    if foreign:
        shown = ", ".join(repr(f) for f in foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3
                                                           else "")
        raise OptionError(f"out {str(out)!r} holds files promptprism did not write ({shown}); choose a new "
                          f"or empty folder, or move those files away")


def check_report_out(out: Path, results: list[Path]) -> None:
    """Refuse ``report --out OUT`` (a folder other than the results folder reported) when OUT holds a
    result, whose own page would be replaced, or files other than a page ``report`` wrote there."""
    if out.exists() and not out.is_dir():
        raise OptionError(f"out {str(out)!r} exists and is not a folder")
    if not out.is_dir() or any(out.resolve() == r.resolve() for r in results):
        return
    if (out / "result.json").exists():
        raise OptionError(f"out {str(out)!r} holds a result (result.json), whose own page this page would "
                          "replace; choose another folder")
    foreign = [f for f in _visible_files(out) if f != REPORT_NAME]
    if foreign:
        shown = ", ".join(repr(f) for f in foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3
                                                           else "")
        raise OptionError(f"out {str(out)!r} holds files promptprism did not write ({shown}); choose a new "
                          "or empty folder, or move those files away")


def claim_whole_folder(out: Path, command: str) -> None:
    """Mark the folder ``out`` as the whole-folder output of ``command`` (a demo that resumes: its
    sub-folders, data and summaries are its own), once it wrote there (finished or stopped), so that running
    it again on ``out`` (after Ctrl-C: it samples only what is missing) is not refused as a folder of foreign
    files."""
    listing = _listing(out)
    if listing is None or listing.get("command") != command or not listing.get("whole_folder"):
        atomic_write_text(out / OUTPUTS_LIST, json.dumps({"command": command, "files": [],
                                                          "whole_folder": True}, indent=1))


def _remove_stale(out: Path, before: dict | None, written: list[str]) -> None:
    """Delete files an earlier run of this command wrote that this run did not (e.g. report.html)."""
    stale = set(before["files"]) if before else set()
    stale.add(REPORT_NAME)
    for name in stale - set(written):
        target = out / name
        if target.is_file() and ".." not in Path(name).parts:
            with contextlib.suppress(OSError):
                target.unlink()

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


#: the longest list ``--json`` prints whole; longer ones are cut to their first entries (listed in
#: ``truncated``: path -> full length; result.json holds them all)
SUMMARY_LIST_LIMIT = 64


def _shorten(value: Any, path: str, truncated: dict[str, int]) -> Any:
    """``value`` with every list longer than :data:`SUMMARY_LIST_LIMIT` cut to that many entries (at any
    depth), each cut recorded in ``truncated`` by its JSON path; nothing else is changed or dropped."""
    if isinstance(value, dict):
        return {k: _shorten(v, f"{path}.{k}" if path else str(k), truncated) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) > SUMMARY_LIST_LIMIT:
            truncated[path] = len(value)
            value = value[:SUMMARY_LIST_LIMIT]
        return [_shorten(v, f"{path}[{i}]", truncated) for i, v in enumerate(value)]
    return value


def _label_pairs(data: dict) -> dict:
    """A K-way result's comparisons, each labelled with the models it compares (``pair``: [test,
    reference]; ``model`` for one against the rest)."""
    names = data.get("names") or []
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    data["pairs"] = [{"pair": list(p), **r} for p, r in zip(pairs, data.get("pairs") or [], strict=False)]
    data["one_vs_rest"] = [{"model": n, **r} for n, r in zip(names, data.get("one_vs_rest") or [],
                                                             strict=False)]
    return data


def summary_of(result: Any, written: Mapping[str, Path]) -> dict[str, Any]:
    """The JSON summary of a result for scripts (``--json``): result.json's data with its lists cut to
    their first :data:`SUMMARY_LIST_LIMIT` entries (``truncated`` says which and how long they are), K-way
    comparisons labelled by their pair, the verdict, each model's headline row; the files written.
    Validated by ``promptprism.schema.summary_schema``."""
    data = dict(result.to_dict() if hasattr(result, "to_dict") else result)  # (its top level relabelled)
    if data.get("kind") == "promptsplit_kway":
        data = _label_pairs(data)
    truncated: dict[str, int] = {}
    summary: dict[str, Any] = _shorten(data, "", truncated)
    verdict = getattr(result, "verdict", None)
    if isinstance(verdict, str) and verdict:
        summary.setdefault("verdict", verdict)
    if data.get("kind") == "metrics":
        summary["table"] = result.table()
    summary["truncated"] = truncated
    summary["files"] = {name: str(path) for name, path in written.items()}
    return summary


def save_outputs(
    result: Any,
    out: str | Path,
    *,
    report: bool = True,
    inputs: Mapping[str, Any] | None = None,
    sources: Mapping[str, str | Path] | None = None,
    images: Mapping[str, Any] | None = None,
    extra: Callable[[Path], None] | None = None,
    quiet: bool = False,
    amend: bool = False,
    origin: str | Path | None = None,
) -> dict[str, Path]:
    """Write ``result`` (``result.save``), ``extra(folder)`` and the report into ``out`` as one transaction.

    ``sources``: the input sets' paths by name, recorded with their fingerprints in result.json's ``inputs``
    (:func:`promptprism.provenance.record_inputs`; a relative path that ``extra`` writes into the folder is
    recorded there). ``amend``: ``out`` holds the result being extended (``describe``): the folder keeps its
    owner and every file the earlier run wrote. ``origin``: the results folder ``result`` was read from (its
    recorded inputs are re-expressed relative to ``out``; ``describe``, ``quality``). Returns ``{file name:
    final path}`` of what was written.
    """
    from ..report.saving import save_result

    out = Path(out)
    check_finite_result(result)
    before = _listing(out) if out.is_dir() else None
    saved: list[Any] = []

    def announce() -> None:
        if not quiet:
            console.print("writing report.html ...", style="dim", markup=False)

    def listing(stage: Path, names: list[str], written_result: Any) -> None:
        saved.append(written_result)
        entry = {"command": run_state().command or None, "files": names}
        if amend and before:
            entry = {"command": before.get("command"), "files": sorted({*before["files"], *names})}
        (stage / OUTPUTS_LIST).write_text(json.dumps(entry, indent=1), encoding="utf-8")

    with one_dict_per_result():  # (result.json, the report and the summary read one dict)
        written = save_result(result, out, report=report, inputs=inputs, sources=sources, images=images,
                              extra=extra, progress=False if quiet else None, before_report=announce,
                              finish=listing, origin=origin)
        if not amend:
            _remove_stale(out, before, list(written))
        run_state().summary = summary_of(saved[0], written)
    return written


def print_written(written: Mapping[str, Path]) -> None:
    """``results: PATH`` and ``report: PATH``, printed literally (no markup, no wrapping)."""
    if "result.json" in written:
        console.print(f"results: {written['result.json']}", markup=False, soft_wrap=True)
    if REPORT_NAME in written:
        console.print(f"report: {written[REPORT_NAME]}", markup=False, soft_wrap=True)

"""Facets from the user's own metadata: the manifest columns other than the prompt and the output.

A manifest (JSONL, CSV, Parquet: :mod:`promptprism.data.manifest`) keeps every column it does not use as
metadata (topic, seed, checkpoint, length, safety label ...). The report reads them again from the input's
file (``PairedSet.source``, or the path result.json records), row for row with the set (a manifest's rows
are the set's rows, in order), and turns each into a facet:

* a column of strings or booleans with at most ``MAX_VALUES`` distinct values: one value per sample;
* a column of numbers: ``BINS`` quantile bins ("12 – 40"), so it filters the same way;
* anything else (free text, ids, nested values) is left out, with a note.

Per facet the view holds its values, each side's count per value, each prompt's values, the share of the
result's disagreement (the prompt ranking's ``share``, summed over the prompts that have the value; on a run
with more prompts than the ranking keeps, only where it is known: :func:`value_shares`) and each sample's
value (to filter the map). Nothing is recomputed: counts and sums of stored numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..data.manifest import MANIFEST_SUFFIXES, ROLES

#: a string column with more distinct values than this is not a facet (free text, ids)
MAX_VALUES = 40
#: quantile bins of a numeric column
BINS = 5
#: at most this many facets per page
MAX_FACETS = 8
MISSING = "(missing)"


def manifest_columns(source: Any, n: int, used: tuple[list | None, ...]) -> dict[str, list]:
    """The metadata columns of the manifest at ``source`` (a path) with ``n`` rows: every column except
    the roles' names and those equal, row for row, to one of ``used`` (the prompts, the outputs: a
    ``--columns`` mapping); {} when ``source`` is not a manifest or its rows do not match ``n``."""
    from ..data.tables import read_table

    path = Path(str(source)) if source else None
    if path is None or path.suffix.lower() not in MANIFEST_SUFFIXES or not path.is_file():
        return {}
    try:
        table = read_table(path)
    except (OSError, ValueError, ImportError):  # an unreadable file: no facets, never a failed report
        return {}
    if len(table) != n:
        return {}
    out = {}
    for col in table.columns:
        if col in ROLES:
            continue
        values = [rec.values.get(col) for rec in table.records]
        text = [None if v is None else str(v) for v in values]
        if any(u is not None and text == list(u) for u in used):
            continue
        out[col] = values
    return out


class MetaSet:
    """A manifest's rows for the facets alone (no embeddings): its prompts, in the set's row order."""

    def __init__(self, prompts: list[str], source: str) -> None:
        self.prompts, self.outputs, self.source = prompts, None, source

    def __len__(self) -> int:
        return len(self.prompts)

    def prompt_label(self, i: int) -> str:
        """The prompt of row ``i`` (as :meth:`PairedSet.prompt_label`)."""
        return self.prompts[i]


def manifest_meta_set(path: Path, prompts: set[str], n: int) -> MetaSet | None:
    """The manifest at ``path`` as a :class:`MetaSet`, when it has ``n`` rows and a column whose values hold
    the result's ``prompts`` (``prompt``, or the column a ``--columns`` mapping named; the ranked prompts, so
    a subset of the column's values on a run with more prompts than the ranking keeps); else None."""
    from ..data.tables import read_table

    try:
        table = read_table(path)
    except (OSError, ValueError, ImportError):
        return None
    if len(table) != n:
        return None

    def overlap(col: str) -> float:
        vals = {str(r.values.get(col)) for r in table.records}
        return len(vals & prompts) / max(len(prompts), 1)  # (the ranking may hold only some of them)

    best = max(table.columns, key=lambda c: (overlap(c), c == "prompt"), default=None)
    if best is None or overlap(best) < 0.5:
        return None
    return MetaSet([str(r.values.get(best)) for r in table.records], str(path))


def _kind(values: list) -> str | None:
    present = [v for v in values if v is not None and v != ""]
    if not present:
        return None
    if all(isinstance(v, bool) for v in present):
        return "cat"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "num" if len(set(present)) > MAX_VALUES // 4 else "cat"
    if all(isinstance(v, (str, int, float, bool)) for v in present):
        return "cat" if len(set(map(str, present))) <= MAX_VALUES else None
    return None


def _labels(kind: str, pooled: list) -> tuple[list[str], Any]:
    """The facet's value labels and a function value -> label index."""
    if kind == "num":
        x = np.array([float(v) for v in pooled if v is not None and v != ""])
        edges = np.unique(np.quantile(x, np.linspace(0, 1, BINS + 1)))
        labels = [f"{edges[k]:.4g} – {edges[k + 1]:.4g}" for k in range(len(edges) - 1)] or [f"{x[0]:.4g}"]

        def index(v: Any) -> int:
            if v is None or v == "":
                return len(labels)
            return int(min(max(np.searchsorted(edges, float(v), side="right") - 1, 0), len(labels) - 1))

        return labels + [MISSING], index
    names = sorted({str(v) for v in pooled if v is not None and v != ""}, key=_natural)
    pos = {s: k for k, s in enumerate(names)}
    missing = MISSING  # (a user value that reads "(missing)" keeps its name; the gaps get another)
    while missing in pos:
        missing = f"({missing})"
    return names + [missing], lambda v: len(names) if v is None or v == "" else pos[str(v)]


def _natural(s: str) -> tuple:
    try:
        return (0, float(s), s)
    except ValueError:
        return (1, 0.0, s)


def facet_view(columns: dict[str, dict[str, list]], prompt_of: dict[str, list[int]], n_prompts: int,
               shares: list[float | None]) -> tuple[list[dict], list[str]]:
    """The facets of the view from ``columns`` (side -> column -> value per sample), ``prompt_of`` (side
    -> the prompt id of each sample) and each prompt's share of the disagreement; and notes on the columns
    left out."""
    notes: list[str] = []
    names = list(dict.fromkeys(c for cols in columns.values() for c in cols if c))
    facets = []
    for name in names:
        pooled = [v for cols in columns.values() for v in cols.get(name, [])]
        kind = _kind(pooled)
        if kind is None:
            notes.append(f"metadata column {name!r} is not a facet (free text, ids or mixed values)")
            continue
        if len(facets) == MAX_FACETS:
            notes.append(f"metadata column {name!r} is not a facet (at most {MAX_FACETS} facets)")
            continue
        labels, index = _labels(kind, pooled)
        per_prompt: list[set] = [set() for _ in range(n_prompts)]
        rows, counts = {}, {}
        for side, cols in columns.items():
            values = cols.get(name) or [None] * len(prompt_of[side])
            idx = [index(v) for v in values]
            rows[side] = idx
            counts[side] = np.bincount(idx, minlength=len(labels)).tolist()
            for k, pid in zip(idx, prompt_of[side], strict=True):
                if 0 <= pid < n_prompts:
                    per_prompt[pid].add(k)
        share, ranked, rest = value_shares(per_prompt, shares, len(labels))
        keep = [k for k in range(len(labels)) if any(counts[s][k] for s in counts)]
        unranked = sum(1 for pid in range(n_prompts) if pid >= len(shares) or shares[pid] is None)
        facet = {"name": name, "kind": kind, "values": labels, "counts": counts, "share": share,
                 "share_ranked": ranked, "ranked": n_prompts - unranked,
                 "unranked": unranked if ranked[0] is not None else 0,
                 "unranked_share": rest, "keep": keep, "prompts": [sorted(v) for v in per_prompt],
                 "rows": rows}
        if kind == "num":
            facet.update(numeric_range(columns, name, prompt_of, n_prompts))
        facets.append(facet)
    return facets, notes


def value_shares(per_prompt: list[set], shares: list[float | None], n_values: int
                 ) -> tuple[list[float | None], list[float | None], float]:
    """Each value's share of the disagreement (the shares of the prompts that carry it, summed) where it
    is known, the part its ranked prompts carry, and the part the unranked prompts carry together.

    The result ranks at most ``max(100, top_prompts)`` prompts (those with the largest d_p), so on a larger
    run the other prompts have no share of their own here; theirs add up to what the ranked shares leave of
    1 (the shares of all prompts add up to 1). A value that every unranked prompt carries has its ranked part
    plus that rest, one that none carries its ranked part; any other value's share is not known (None).
    Nothing is known (Nones, rest 0) when no prompt has a share (no significant mode)."""
    at = [shares[pid] if pid < len(shares) else None for pid in range(len(per_prompt))]
    known = [float(s) for s in at if s is not None]
    if not known:
        return [None] * n_values, [None] * n_values, 0.0
    ranked, n_with = [0.0] * n_values, [0] * n_values
    n_unranked = 0
    for s, vals in zip(at, per_prompt, strict=True):
        n_unranked += s is None
        for k in vals:
            if s is None:
                n_with[k] += 1
            else:
                ranked[k] += float(s)
    rest = 1.0 - sum(known) if n_unranked else 0.0
    share: list[float | None] = [
        ranked[k] + (rest if n_with[k] else 0.0) if n_with[k] in (0, n_unranked) else None
        for k in range(n_values)
    ]
    return share, ranked, rest


def _number(v: Any) -> float | None:
    return None if v is None or v == "" else float(v)


def numeric_range(columns: dict[str, dict[str, list]], name: str, prompt_of: dict[str, list[int]],
                  n_prompts: int) -> dict:
    """What the range slider of a number column needs: ``lo``/``hi`` (its smallest and largest value),
    ``raw`` (side -> each sample's value, None when missing) and ``span`` (each prompt's [min, max] over
    its samples, None without a value)."""
    raw = {side: [_number(v) for v in (cols.get(name) or [None] * len(prompt_of[side]))]
           for side, cols in columns.items()}
    span: list[list[float] | None] = [None] * n_prompts
    for side, values in raw.items():
        for v, pid in zip(values, prompt_of[side], strict=True):
            if v is None or not 0 <= pid < n_prompts:
                continue
            cur = span[pid]
            span[pid] = [v, v] if cur is None else [min(cur[0], v), max(cur[1], v)]
    present = [v for vals in raw.values() for v in vals if v is not None]
    return {"lo": min(present), "hi": max(present), "raw": raw, "span": span}


def sets_facets(sets: dict, prompt_id: Any, shares: list) -> tuple[list[dict], list[str]]:
    """The facets of ``sets`` (side or model name -> PairedSet, read from each set's manifest); the prompt
    ids from ``prompt_id(name)`` (called for every prompt of the sets before ``shares`` is read)."""
    columns = {side: manifest_columns(getattr(s, "source", None), len(s), (s.prompts, s.outputs))
               for side, s in sets.items()}
    if not any(columns.values()):  # no manifest: nothing to read per sample
        return [], []
    prompt_of = {side: [prompt_id(s.prompt_label(i)) for i in range(len(s))] for side, s in sets.items()}
    n_prompts = 1 + max((max(v) for v in prompt_of.values() if v), default=-1)
    return facet_view(columns, prompt_of, n_prompts, shares())


def facets_block(facets: list[dict], names: dict[str, str], *, with_share: bool = True,
                 verdicts: dict[tuple[str, str], list[str]] | None = None) -> Any:
    """Per facet a table: each value, each side's number of samples, the share of the disagreement on the
    prompts that have it and (``verdicts``: ``promptprism quality --facet``'s lines per (facet, value)) which
    model is closer or preferred there; a row filters the page to that value (``#facet=name:k``)."""
    from .html import el, p, table

    if not facets:
        return None
    with_share = with_share and any(x is not None for f in facets for x in f["share_ranked"])
    blocks = [p("Your manifests' own columns. Click a value to keep only its prompts in the tables and its "
                "samples on the map (or pick it in the toolbar); a prompt whose samples carry several values "
                "counts for each, so the shares may add up to more than 100%."
                + _share_notes(facets, with_share), cls="muted small")]
    judged = {name for name, _ in (verdicts or {})}
    for f in facets:
        sides = list(f["counts"])
        with_verdict = f["name"] in judged

        def verdict(label: str, name: str = f["name"]) -> Any:
            lines = (verdicts or {}).get((name, str(label)))
            return el("ul", [el("li", x) for x in lines], cls="small") if lines else "not tested"

        rows = [(f["values"][k], *[f["counts"][s][k] for s in sides],
                 *([_share_cell(f, k)] if with_share else []),
                 *([verdict(f["values"][k])] if with_verdict else [])) for k in f["keep"]]
        binned = " (number, in quantile bins)" if f["kind"] == "num" else ""
        blocks.append(el("h3", f"{f['name']}{binned}"))
        blocks.append(table([f["name"], *[f"n {names.get(s, s)}" for s in sides],
                             *(["share of the disagreement"] if with_share else []),
                             *(["verdict on the findings' samples of this value (Holm-adjusted p)"]
                               if with_verdict else [])], rows,
                            numeric=tuple(range(1, len(sides) + 2)),
                            row_attrs=[{"data_pp_facet": f"{f['name']}:{k}"} for k in f["keep"]]))
    if judged:
        blocks.append(p("Verdicts from promptprism quality --facet: on each finding, the models' samples of "
                        "the value only, on the finding's prompts; \"not tested\": no finding has samples "
                        "of every model with that value.", cls="muted small"))
    return el("div", blocks, id="facets")


def _share_cell(facet: dict, k: int) -> Any:
    """A value's share of the disagreement, or its ranked prompts' part when its share is not known."""
    from .html import el, fnum

    if facet["share"][k] is not None or facet["share_ranked"][k] is None:
        return fnum(facet["share"][k], ".1%")
    return el("span", f"{fnum(facet['share_ranked'][k], '.1%')} in the ranked prompts", cls="muted",
              title="only part of the share: some of the prompts with this value are not in the result's "
                    "ranking, and their shares are not stored")


def _share_notes(facets: list[dict], with_share: bool) -> str:
    """What the share column's caption adds: the ranking's cut, negative shares."""
    if not with_share:
        return ""
    notes = []
    cut = next((f for f in facets if f.get("unranked")), None)
    if cut is not None:
        notes.append(
            f" The result ranks only the {cut['ranked']:,} prompts with the largest disagreement "
            "(result.json's prompt_ranking keeps at most max(100, top_prompts) rows): the other "
            f"{cut['unranked']:,} prompts carry {cut['unranked_share']:.1%} of the disagreement together, "
            "and their own shares are not stored. "
            "A value that all of them or none of them carry has its exact share; for any other value the "
            "table gives the part its ranked prompts carry.")
    if any(x is not None and x < 0 for f in facets for x in [*f["share"], *f["share_ranked"]]):
        notes.append(" A negative share: on those prompts the other model shows more of the modes than the "
                     "model they favour (against their overall direction); the shares of all prompts add up "
                     "to 100%.")
    return "".join(notes)

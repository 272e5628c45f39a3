"""The data behind the K-way (``compare``) page's explorer (JSON-ready; embedded once by :mod:`.interactive`).

``view`` holds the K model names (``models``), the prompts (each model's number of samples, the share of
each model's disagreement with the rest on it, and a seeded sample of up to ``PER_PROMPT`` outputs per
model, as row ids), the deviations (per model: its strongest samples on its strongest significant mode
against the rest's on the same mode, as row ids) and the sample rows and thumbnails those refer to
(:class:`.explore._Rows`, the split page's rows: set = the model's name). Everything comes from result.json
and, for the outputs per prompt, from the inputs the caller passed (one PairedSet per model, by name).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..array_ops import sorted_subsample
from .common import image_folders
from .explore import MAX_PROMPTS, PER_PROMPT, _Rows, _rows_left_out
from .facets import sets_facets

#: the key of each model's outputs in a prompt's rows (the model's name)
ROWS = "rows"


def kway_sets(result: Any, inputs: Any, notes: list[str]) -> dict[str, Any]:
    """The given sets (by model name) whose size matches the result; notes why not."""
    from ..data.paired import PairedSet

    given = dict(inputs or {})
    sets = {}
    for name, n in zip(result.names, result.n_samples, strict=True):
        s = given.get(name)
        if s is None:
            continue
        if not isinstance(s, PairedSet) or len(s) != n:
            notes.append(f"the input of {name} does not match the result ({n:,} samples); not used")
            continue
        sets[name] = s
    return sets


def _prompts(result: Any) -> tuple[list[dict], dict[str, int]]:
    prompts: list[dict] = []
    ids: dict[str, int] = {}

    def pid(name: str) -> int:
        if name not in ids:
            ids[name] = len(prompts)
            prompts.append({"prompt": name, "n": {}, "dev": {}, ROWS: {m: [] for m in result.names}})
        return ids[name]

    for comparison in [*result.pairs, *result.one_vs_rest]:
        for r in comparison.prompt_ranking:
            pid(r["prompt"])
    for d in result.deviations:
        for x in d.get("attributed_prompts") or []:
            prompts[pid(x["prompt"])]["dev"][d["model"]] = x.get("share")
    return prompts, ids


def _per_prompt(result: Any, sets: dict, prompts: list[dict], pid: Any, rows: _Rows) -> list[str]:
    rng = np.random.default_rng(result.seed)
    sampled = 0
    for name, s in sets.items():
        if s.prompts is None:
            continue
        labels = np.asarray(s.prompts, dtype=object).astype(str)
        order = np.argsort(labels, kind="stable")
        uniq, starts = np.unique(labels[order], return_index=True)
        for label, a, b in zip(uniq, starts, [*starts[1:], len(order)], strict=True):
            k = pid(label)
            prompts[k]["n"][name] = int(b - a)
            if k >= MAX_PROMPTS:
                continue
            members = order[a:b]
            if len(members) > PER_PROMPT:
                members = sorted_subsample(members, PER_PROMPT, rng)
                sampled += 1
            prompts[k][ROWS][name] = [rows.add(name, int(i), label, s.output_label(int(i))) for i in members]
    notes = []
    missing = [m for m in result.names if m not in sets]
    if missing:
        notes.append(f"the outputs per prompt of {', '.join(missing)} are not in the views (their inputs "
                     "were not given): only the deviations' samples are")
    if sampled:
        notes.append(f"each prompt's view shows a seeded sample of at most {PER_PROMPT} outputs per model "
                     f"(seed {result.seed})")
    return notes


def _deviations(result: Any, pid: Any, rows: _Rows) -> list[dict]:
    out = []
    for d in result.deviations:
        own = [rows.add(s["model"], s["index"], s["prompt"], s.get("output"), s.get("score"))
               for s in d.get("top_samples") or []]
        rest = [rows.add(s["model"], s["index"], s["prompt"], s.get("output"), s.get("score"))
                for s in d.get("others_samples") or []]
        out.append({"model": d["model"], "deviates": bool(d.get("deviates")), "mode": d.get("mode"),
                    "significant_modes": d.get("significant_modes"), "against": d.get("against"),
                    "separated_from": d.get("separated_from") or [],
                    "prompts": [[pid(x["prompt"]), x.get("share")] for x in d.get("prompts") or []],
                    "samples": {"model": own, "rest": rest}})
    return out


def compare_view(result: Any, sets: dict, base_dir: Any = None) -> dict[str, Any]:
    """The ``view`` data of a K-way page (see the module docstring)."""
    prompts, ids = _prompts(result)

    def pid(name: str) -> int:
        if name not in ids:
            ids[name] = len(prompts)
            prompts.append({"prompt": name, "n": {}, "dev": {}, ROWS: {m: [] for m in result.names}})
        return ids[name]

    bases: dict[str, list[Path]] = {
        m: image_folders(sets[m].source if m in sets else None, base_dir) for m in result.names
    }
    facets, facet_notes = sets_facets(sets, pid, lambda: [None] * len(prompts))
    rows = _Rows(sets, {}, bases, pid)
    deviations = _deviations(result, pid, rows)
    left_out = _per_prompt(result, sets, prompts, pid, rows)
    left_out += _rows_left_out(rows) + facet_notes
    return {"kind": "kway", "models": list(result.names), "names": {m: m for m in result.names},
            "group_label": "model", "prompts": prompts, "deviations": deviations, "rows": rows.rows,
            "thumbs": rows.thumbs, "left_out": left_out, "facets": facets}

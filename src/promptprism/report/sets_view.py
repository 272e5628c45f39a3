"""The data behind a page whose prompts open every set's samples side by side (the metrics page: each
generated set and the reference), on the K-way explorer's components (:mod:`.compare_view`, ``compare.js``).

``view`` (kind ``sets``) holds the set names (``models``), the prompts (each set's number of samples and a
seeded sample of up to ``PER_PROMPT`` outputs per set, as row ids), the sample rows and thumbnails those
refer to (:class:`.explore._Rows`) and the facets of the sets' manifests. Nothing is recomputed: the rows
are the inputs' own, picked by prompt.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from .common import image_folders
from .compare_view import ROWS, _per_prompt
from .explore import _Rows, _rows_left_out
from .facets import sets_facets


def given_sets(names: list[str], inputs: Any) -> dict[str, Any]:
    """The given inputs (by set name) that are paired sets with prompts."""
    from ..data.paired import PairedSet

    given = dict(inputs or {}) if isinstance(inputs, dict) else {}
    return {n: given[n] for n in names if isinstance(given.get(n), PairedSet)}


def sets_view(names: list[str], sets: dict[str, Any], seed: int, order: list[str],
              base_dir: Any = None) -> dict[str, Any]:
    """The ``view`` data (see the module docstring); ``order``: the prompts whose ids come first (the
    page's tables refer to them as ``data-pp-prompt`` = their position here)."""
    prompts: list[dict] = []
    ids: dict[str, int] = {}

    def pid(name: str) -> int:
        if name not in ids:
            ids[name] = len(prompts)
            prompts.append({"prompt": name, "n": {}, "dev": {}, ROWS: {m: [] for m in names}})
        return ids[name]

    for name in order:
        pid(name)
    bases = {m: image_folders(sets[m].source if m in sets else None, base_dir) for m in names}
    facets, facet_notes = sets_facets(sets, pid, lambda: [None] * len(prompts))
    rows = _Rows(sets, {}, bases, pid)
    left_out = _per_prompt(SimpleNamespace(names=list(names), seed=seed), sets, prompts, pid, rows)
    return {"kind": "sets", "models": list(names), "names": {m: m for m in names}, "group_label": "set",
            "prompts": prompts, "deviations": [], "rows": rows.rows, "thumbs": rows.thumbs,
            "left_out": left_out + _rows_left_out(rows) + facet_notes, "facets": facets}

"""The data behind the PromptSplit page's linked views (JSON-ready; embedded once by :mod:`.interactive`).

``view`` holds, beside result.json's content (embedded as ``result``): the modes (their prompts and their
top samples of both sets, as row ids), the prompts (ranking numbers, each mode's contribution where the
prompt is among the mode's top prompts, and a seeded sample of each set's outputs for the prompt), the
sample rows those refer to (set, index, prompt id, output text cut to ``TEXT_LIMIT`` characters, thumbnail
id, score) and the thumbnails, within ``THUMB_BUDGET`` bytes. What is left out is listed in ``left_out``
and shown on the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..array_ops import sorted_subsample
from .common import visual_of
from .descriptions import finding_verdicts
from .facets import sets_facets
from .html import data_uri
from .map import mode_label

#: outputs per set kept for each prompt's side-by-side view (a seeded sample above it)
PER_PROMPT = 6
#: prompts with rows; the rest keep their numbers but no outputs
MAX_PROMPTS = 2000
#: an output text is cut to this many characters in the data (result.json keeps the top samples whole)
TEXT_LIMIT = 4000
#: total bytes of the thumbnails in the data (base64); later rows get none
THUMB_BUDGET = 8_000_000
#: thumbnail size in the data, pixels
THUMB_PX = 64


def mode_id(side: str, rank: int) -> str:
    """A mode's id in the page (data, ``data-pp-mode``, the ``#mode=`` fragment): ASCII, '+1' for the first
    positive (test) mode and '-1' for the first negative one, so that ``#mode=-1`` typed in a URL opens it
    (the page's labels print the minus sign as '−')."""
    return f"{'+' if side == 'test' else '-'}{int(rank)}"


def ascii_mode(label: str) -> str:
    """A mode label as its ASCII id ('−2' -> '-2'); other labels (the map's grey class) unchanged."""
    return label.replace("\u2212", "-")


class _Rows:
    """Sample rows, each once: (set, index) -> row id."""

    def __init__(self, sets, images, bases, prompt_id) -> None:
        self.rows: list[dict[str, Any]] = []
        self.thumbs: list[str] = []
        self.ids: dict[tuple[str, int], int] = {}
        self.sets, self.images, self.bases, self.prompt_id = sets, images, bases, prompt_id
        self.thumb_bytes = 0
        self.no_thumb = 0
        self.cut = 0

    def add(self, side: str, index: int, prompt: str, output: Any, score: Any = None) -> int:
        key = (side, int(index))
        if key in self.ids:
            if score is not None and self.rows[self.ids[key]].get("sc") is None:
                self.rows[self.ids[key]]["sc"] = score
            return self.ids[key]
        row: dict[str, Any] = {"s": side, "i": int(index), "p": self.prompt_id(prompt)}
        if score is not None:
            row["sc"] = score
        text = None if output is None else str(output)
        if text is not None and len(text) > TEXT_LIMIT:
            row["cut"] = len(text)
            text = text[:TEXT_LIMIT]
            self.cut += 1
        row["t"] = text
        self._thumb(row, side, index, output)
        self.ids[key] = len(self.rows)
        self.rows.append(row)
        return self.ids[key]

    def _thumb(self, row: dict, side: str, index: int, output: Any) -> None:
        images = self.images.get(side)
        is_file = isinstance(output, str) and "." in output[-6:]
        if images is None and not is_file:
            return
        if self.thumb_bytes >= THUMB_BUDGET:
            self.no_thumb += 1
            return
        from . import figures

        try:
            if images is not None:
                visual = figures.array_thumbnail(images[index], THUMB_PX)
            else:
                visual, _ = visual_of(output, bases=self.bases.get(side, ()))
        except (ValueError, TypeError, IndexError, OSError, figures.FiguresUnavailable):
            visual = None
        if visual is None:
            return
        uri = data_uri(visual[0], visual[1])
        self.thumb_bytes += len(uri)
        row["im"] = len(self.thumbs)
        self.thumbs.append(uri)


def _prompt_table(result: Any, sets: dict) -> tuple[list[dict], dict[str, int]]:
    prompts: list[dict] = []
    ids: dict[str, int] = {}
    for r in result.prompt_ranking:
        ids[r["prompt"]] = len(prompts)
        prompts.append(
            {
                "prompt": r["prompt"],
                "disagreement": r.get("disagreement"),
                "share": r.get("share"),
                "n_test": r.get("n_test"),
                "n_reference": r.get("n_reference"),
            }
        )
    for s in ("test", "reference"):
        if s in sets and sets[s].prompts is not None:
            counts = dict(
                zip(
                    *np.unique(np.asarray(sets[s].prompts, dtype=object).astype(str), return_counts=True),
                    strict=True,
                )
            )
            for name, c in counts.items():
                if name not in ids:
                    ids[name] = len(prompts)
                    prompts.append(
                        {"prompt": name, "disagreement": None, "share": None, "n_test": 0, "n_reference": 0}
                    )
                prompts[ids[name]][f"n_{s}"] = int(c)
    _every_share(result, prompts)
    for p in prompts:
        p["rows"] = {"test": [], "reference": []}
    return prompts, ids


def _every_share(result: Any, prompts: list[dict]) -> None:
    """Fill the d_p and share of the prompts ``prompt_ranking`` leaves out from the result's
    ``prompt_disagreement`` (every prompt's, in sorted prompt order), when its prompts are these."""
    from ..provenance import prompts_digest

    every = getattr(result, "prompt_disagreement", None) or {}
    names = sorted(p["prompt"] for p in prompts)
    if not every or len(every.get("values") or []) != len(names) or \
            prompts_digest(names) != every.get("prompts_sha256"):
        return
    captured = float(every.get("captured") or 0.0)
    by_name = dict(zip(names, every["values"], strict=True))
    for p in prompts:
        if p.get("disagreement") is None:
            p["disagreement"] = by_name[p["prompt"]]
            p["share"] = by_name[p["prompt"]] / captured if captured > 0 else 0.0


def _mode_views(result: Any, prompts: list[dict], prompt_id: Any, rows: _Rows) -> list[dict]:
    """Per mode: its id, eigenvalue, significance, prompt loadings and the view rows of its top samples
    (each prompt's contribution to each mode is noted in ``prompts``)."""
    modes = []
    for m in result.modes:
        mid = mode_id(m.side, m.rank)
        lam = float(m.eigenvalue) if m.eigenvalue is not None else 0.0
        loads = []
        for pl in m.top_prompts:
            pid = prompt_id(pl.prompt)
            prompts[pid].setdefault("contrib", {})[mid] = pl.contribution
            share = pl.contribution / lam if lam and pl.contribution is not None else None
            loads.append([pid, pl.contribution, share, pl.n_test, pl.n_reference])
        samples: dict[str, list[int]] = {"test": [], "reference": []}
        for s in [*m.top_samples, *m.top_samples_other]:
            samples[s.set].append(rows.add(s.set, s.index, s.prompt, s.output, s.score))
        modes.append(
            {
                "id": mid,
                "label": mode_label(m.side, m.rank),
                "side": m.side,
                "rank": m.rank,
                "eigenvalue": m.eigenvalue,
                "p_value": getattr(m, "p_value", None),
                "significant": getattr(m, "significant", None),
                "prompts": loads,
                "samples": samples,
                "verdicts": finding_verdicts(result, f"mode {'+' if m.side == 'test' else '-'}{m.rank}"),
            }
        )
    return modes


def _map_view(map_data: Any, sets: dict, rows: _Rows) -> dict[str, Any]:
    """The map's points (coordinates, mode, colours) with a view row for each."""
    map_rows = [
        rows.add(s, i, sets[s].prompt_label(i), sets[s].output_label(i)) for s, i in map_data["points"]
    ]
    return {
        "x": map_data["x"],
        "y": map_data["y"],
        "mode": [ascii_mode(x) for x in map_data["mode"]],
        "row": map_rows,
        "colors": {ascii_mode(k): v for k, v in map_data["colors"].items()},
    }


def _rows_left_out(rows: _Rows) -> list[str]:
    """Notes on the output texts cut and the thumbnails left out of the views."""
    out = []
    if rows.cut:
        out.append(
            f"{rows.cut:,} output texts longer than {TEXT_LIMIT:,} characters are cut to that "
            "length in the views"
        )
    if rows.no_thumb:
        out.append(
            f"{rows.no_thumb:,} samples have no thumbnail in the views (the "
            f"{THUMB_BUDGET / 1e6:.0f} MB budget for thumbnails was spent)"
        )
    return out


def promptsplit_view(
    result: Any, sets: dict, images: dict, bases: dict[str, list[Path]], names: dict[str, str], map_data: Any,
    facet_sets: dict | None = None,
) -> dict[str, Any]:
    """The ``view`` data of a PromptSplit page (see the module docstring); ``facet_sets``: where the
    facets' metadata is read (default ``sets``; a re-read manifest without embeddings counts)."""
    prompts, ids = _prompt_table(result, sets)

    def prompt_id(name: str) -> int:
        if name not in ids:
            ids[name] = len(prompts)
            prompts.append(
                {
                    "prompt": name,
                    "disagreement": None,
                    "share": None,
                    "n_test": None,
                    "n_reference": None,
                    "rows": {"test": [], "reference": []},
                }
            )
        return ids[name]

    facets, facet_notes = sets_facets(facet_sets if facet_sets is not None else sets, prompt_id,
                                      lambda: [p.get("share") for p in prompts])
    rows = _Rows(sets, images, bases, prompt_id)
    modes = _mode_views(result, prompts, prompt_id, rows)
    left_out = _per_prompt_rows(result, sets, prompts, ids, rows)
    view: dict[str, Any] = {
        "names": names,
        "modes": modes,
        "prompts": prompts,
        "ranking_basis": getattr(result, "ranking_basis", None),
    }
    if map_data:
        view["map"] = _map_view(map_data, sets, rows)
    left_out += _rows_left_out(rows) + facet_notes
    view.update(rows=rows.rows, thumbs=rows.thumbs, left_out=left_out, facets=facets)
    return view


def _per_prompt_rows(
    result: Any, sets: dict, prompts: list[dict], ids: dict[str, int], rows: _Rows
) -> list[str]:
    """Up to ``PER_PROMPT`` outputs per set for each of the first ``MAX_PROMPTS`` prompts (a seeded sample
    of the prompt's rows); returns notes on what was left out."""
    notes = []
    rng = np.random.default_rng(result.seed)
    sampled = 0
    for s in ("test", "reference"):
        if s not in sets or sets[s].prompts is None:
            if prompts:
                notes.append(
                    f"the {s} set's outputs per prompt are not in the views (its inputs were not "
                    "given): only the modes' top samples are"
                )
            continue
        labels = np.asarray(sets[s].prompts, dtype=object).astype(str)
        order = np.argsort(labels, kind="stable")
        names, starts = np.unique(labels[order], return_index=True)
        bounds = list(starts[1:]) + [len(order)]
        for name, a, b in zip(names, starts, bounds, strict=True):
            pid = ids.get(name)
            if pid is None or pid >= MAX_PROMPTS:
                continue
            members = order[a:b]
            if len(members) > PER_PROMPT:
                members = sorted_subsample(members, PER_PROMPT, rng)
                sampled += 1
            prompts[pid]["rows"][s] += [
                rows.add(s, int(i), name, sets[s].output_label(int(i))) for i in members
            ]
    if sampled:
        notes.append(
            f"each prompt's side-by-side view shows a seeded sample of at most {PER_PROMPT} outputs "
            f"per set (seed {result.seed})"
        )
    if len(prompts) > MAX_PROMPTS:
        notes.append(
            f"{len(prompts) - MAX_PROMPTS:,} prompts beyond the first {MAX_PROMPTS:,} have no outputs "
            "in the views"
        )
    return notes


def all_prompts_block(view: dict, ranked: int) -> Any:
    """The "All prompts" section: a table of every prompt of the data that the script draws (prompts.js:
    paged, sortable, searchable, filtered by the facets), or without the script a line that says where the
    ranked ones are; ``ranked``: the prompts in result.json's ranking."""
    from .html import el, link, p

    n = len(view["prompts"])
    return [
        el("div", cls="pp-widget", data_pp_widget="prompts"),
        p(
            f"{n:,} prompts. The table of all of them (sortable, searchable) needs the page's script; the "
            f"{ranked:,} ranked ones are in ",
            link("Run details", "run-details"),
            ".",
            cls="pp-static muted",
        ),
    ]


def views_note(left_out: list[str]) -> Any:
    """What the interactive views leave out (a small paragraph), or None."""
    from .html import p

    if not left_out:
        return None
    return p(
        "Interactive views (click a mode, a prompt, a map point; search above): " + "; ".join(left_out) + ".",
        cls="muted small",
    )

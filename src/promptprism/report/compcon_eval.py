"""The CompCon evaluation page (``compcon-eval``): the Appendix D scores, then per ID^2 split the ground truth
and the judge's rating of each predicted attribute and description, and the splits the judge failed on."""

from __future__ import annotations

from typing import Any

from .answer import answer_block
from .common import finish, mapping, notes_block, run_details
from .core import renderer
from .html import Page, cards, details, fmt, p, table


def _num(v: Any) -> str:
    return fmt(v, 3) if isinstance(v, (int, float)) and not isinstance(v, bool) else "–"


def _ratings(values: Any) -> str:
    if not isinstance(values, list) or not values:
        return "–"
    return ", ".join(str(v) for v in values)


def _split_table(rows: list[dict], k: Any) -> Any:
    """Per ID² split: the ground truth, the judge's ratings and the top-1 / best-of-top-k scores."""
    if not rows:
        return p("no split was judged", cls="muted")
    return table(
        [
            "split",
            "ground-truth attribute",
            "concepts",
            "attribute ratings",
            "description ratings",
            "attribute top 1",
            f"attribute top {k}",
            "description top 1",
            f"description top {k}",
        ],
        [
            (
                str(r.get("split", "?")),
                str(r.get("truth_attribute", "")),
                ", ".join(map(str, r.get("truth_concepts") or []))
                if isinstance(r.get("truth_concepts"), list)
                else str(r.get("truth_concepts", "")),
                _ratings(r.get("attribute_ratings")),
                _ratings(r.get("description_ratings")),
                _num(r.get("attribute_top1")),
                _num(r.get(f"attribute_top{k}")),
                _num(r.get("description_top1")),
                _num(r.get(f"description_top{k}")),
            )
            for r in rows
        ],
        numeric=(5, 6, 7, 8),
    )


def eval_verdict(summary: dict, k: Any) -> str:
    """One sentence: how often CompCon's top attribute and its best of the top k match the truth."""
    return (f"Over {fmt(summary.get('n_splits'))} splits, CompCon's top attribute scores "
            f"{_num(summary.get('attribute_top1'))} against the truth (best of its top {k}: "
            f"{_num(summary.get(f'attribute_top{k}'))}; 1 = always the right attribute).")


@renderer("compcon-eval")
def render_compcon_eval(result: Any, *, notes: list[str] | None = None, **_: Any) -> str:
    """The compcon-eval report page (see the module docstring)."""
    summary = mapping(getattr(result, "summary", None))
    cfg = mapping(getattr(result, "config", None))
    k = cfg.get("k", "k")
    judge = mapping(getattr(result, "judge", None))
    rows = [r for r in (getattr(result, "per_split", None) or []) if isinstance(r, dict)]
    failures = [f for f in (getattr(result, "failures", None) or []) if isinstance(f, dict)]
    page = Page(
        "CompCon evaluation · ID² splits",
        "How well CompCon's predicted attributes and descriptions match the ground truth of each ID² split, "
        "as rated by a judge model (rating 1-3, scored (rating - 1) / 2).",
    )
    page.add(
        "Overview",
        answer_block(eval_verdict(summary, k), [], []),
        notes_block(notes),
        cards(
            [
                (fmt(summary.get("n_splits")), "splits judged"),
                (_num(summary.get("attribute_top1")), "attribute, top 1"),
                (_num(summary.get(f"attribute_top{k}")), f"attribute, best of top {k}"),
                (_num(summary.get("description_top1")), "description, top 1"),
                (_num(summary.get(f"description_top{k}")), f"description, best of top {k}"),
            ]
        ),
        p(
            f"judge: {judge.get('model', '?')} · {len(failures)} split(s) the judge could not rate"
            + (" (scored 0)" if failures else ""),
            cls="muted small",
        ),
    )
    page.add("Per split", _split_table(rows, k))
    if failures:
        page.add(
            "Judge failures",
            table(
                ["split", "error"], [(str(f.get("split", "?")), str(f.get("error", ""))) for f in failures]
            ),
        )
    page.add(
        "Run details",
        run_details(result, [("judge", ", ".join(f"{a}: {b}" for a, b in judge.items()))]),
        details("scoring", p(str(cfg.get("rating_to_score", "")))),
    )
    return finish(page, kind="CompCon evaluation", result=result)

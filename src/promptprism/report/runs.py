"""One page over several results folders (one per checkpoint or date): verdicts, distances, diversity and
regions metrics with their intervals, and which prompts entered or left the significant set between
consecutive runs (``promptprism report RUN_DIR RUN_DIR ...``)."""

from __future__ import annotations

from typing import Any

from ..stats.intervals import format_estimate, format_p
from .common import finish
from .html import Page, el, fmt, p, snippet, table
from .summary import cms_with_interval


def _with_interval(value: Any, iv: Any) -> str:
    return format_estimate(value, iv, lambda v: fmt(v, 4))


def significant_prompts(result: Any) -> dict[str, set[str]]:
    """{what: prompts} a run calls significant: the prompts of a PromptSplit result's ranking over significant
    modes that carry more than an even share of the disagreement (1 / its prompts; the ranking lists every
    prompt, so the whole of it would change only with the prompts' text); a K-way result's prompts
    attributed to each deviating model (above-average shares too); {} for other kinds or without a test."""
    kind = getattr(result, "kind", "")
    if kind == "promptsplit" and getattr(result, "ranking_basis", "") == "significant modes":
        ranking = result.prompt_ranking
        return {"split": {r["prompt"] for r in ranking if float(r.get("share") or 0.0) > 1.0 / len(ranking)}}
    if kind == "promptsplit_kway":
        return {d["model"]: {x["prompt"] for x in d.get("attributed_prompts", [])}
                for d in result.deviations if d.get("deviates")}
    return {}


def _verdict(result: Any) -> str:
    said = getattr(result, "verdict", "")
    if said:
        return str(said)
    ranks = getattr(result, "rankings", None) or {}
    if ranks:
        return "; ".join(r["words"] for r in ranks.values())
    rank = getattr(result, "ranking", None) or {}
    return rank.get("words", "") if isinstance(rank, dict) else ""


def _distance_rows(name: str, result: Any) -> list[tuple]:
    kind = getattr(result, "kind", "")
    if kind == "promptsplit":
        s = result.significance or {}
        p_largest = s.get("p_largest")
        pair = f"{result.config.get('test')} vs {result.config.get('reference')}"
        return [(name, pair, fmt(result.distance), s.get("n_significant", "–"),
                 "–" if p_largest is None else format_p(p_largest, s.get("alpha")))]
    if kind == "promptsplit_kway":
        k = len(result.names)
        return [(name, f"{result.names[a]} vs {result.names[b]}", fmt(result.distances[a][b]), "–",
                 "–" if result.pair_p_values[a][b] is None else
                 format_p(result.pair_p_values[a][b], (result.significance or {}).get("alpha")))
                for a in range(k) for b in range(a + 1, k)]
    return []


def _diversity_rows(name: str, result: Any) -> list[tuple]:
    kind = getattr(result, "kind", "")
    models = result.models if kind == "scendi_comparison" else [result] if kind == "scendi" else []
    return [(name, m.name, *[_with_interval(getattr(m, x), (m.intervals or {}).get(x))
                             for x in ("scendi", "vendi", "rke", "model_share")]) for m in models]


def _regions_rows(name: str, result: Any) -> list[tuple]:
    if getattr(result, "kind", "") != "regions":
        return []
    ivs = list(result.intervals or [])
    return [(name, s, cms_with_interval(result.cms[k], ivs[k].get("cms") if k < len(ivs) else None),
             fmt(result.mmd2[k], 4)) for k, s in enumerate(result.names)]


def prompt_changes(runs: list[tuple[str, Any]]) -> list[tuple]:
    """(from run, to run, what, entered, left) for each pair of consecutive runs and each 'what' that
    either calls significant (:func:`significant_prompts`)."""
    rows = []
    for (name_a, a), (name_b, b) in zip(runs, runs[1:], strict=False):
        sa, sb = significant_prompts(a), significant_prompts(b)
        for what in sorted(set(sa) | set(sb)):
            before, after = sa.get(what, set()), sb.get(what, set())
            rows.append((name_a, name_b, what, sorted(after - before), sorted(before - after)))
    return rows


def render_runs(runs: list[tuple[str, Any]]) -> str:
    """The page over several runs, in the order given (``runs``: (name, result) pairs)."""
    page = Page(f"{len(runs)} runs", " → ".join(name for name, _ in runs))
    page.add("Verdicts", table(["run", "kind", "verdict"],
                               [(n, getattr(r, "kind", "?"), snippet(_verdict(r), 600)) for n, r in runs]))
    sections = (
        ("Distances", ["run", "comparison", "‖Λ‖²_F", "significant modes", "p (largest mode / pair)"],
         _distance_rows, (2, 3, 4)),
        ("Diversity", ["run", "model", "scendi", "vendi", "rke", "model share"], _diversity_rows,
         (2, 3, 4, 5)),
        ("Regions", ["run", "generated set", "CMS", "MMD²"], _regions_rows, (2, 3)),
    )
    for title, head, rows_of, numeric in sections:
        rows = [row for n, r in runs for row in rows_of(n, r)]
        if rows:
            page.add(title, p("Brackets: the run's bootstrap intervals, where it computed them."),
                     table(head, rows, numeric=numeric))
    changes = prompt_changes(runs)
    page.add("Significant prompts between runs",
             p("Prompts that entered or left the set a run calls significant (PromptSplit: prompts above "
               "an even share of the disagreement over significant modes; K-way: prompts attributed to a "
               "deviating model)."),
             table(["from", "to", "comparison / model", "entered", "left"],
                   [(a, b, w, el("span", "; ".join(e) or "–"), el("span", "; ".join(x) or "–"))
                    for a, b, w, e, x in changes]) if changes else p("No run holds a significance test."))
    return finish(page, kind="runs")

"""One page over several results folders (one per checkpoint or date): a verdict sentence on what changed
between runs of one kind (only like is compared with like; a run with no other of its kind is named as
such), each run's verdict with a link to its own report, distances, diversity and regions metrics with their
intervals, and which prompts entered or left the significant set between consecutive runs of one kind
(``promptprism report RUN_DIR RUN_DIR ...``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..stats.intervals import format_p
from .common import finish
from .html import Page, el, fmt, p, snippet, table
from .scendi import with_interval
from .significance import plain_verdict
from .summary import cms_with_interval

#: a result kind as the page names it
KIND_WORDS = {"promptsplit": "split", "promptsplit_kway": "K-way split", "scendi": "diversity",
              "scendi_comparison": "diversity", "regions": "regions", "metrics": "metrics",
              "compcon": "CompCon", "compcon-eval": "CompCon evaluation"}


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
        return plain_verdict(str(said))
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
    # (as the diversity page shows them: an interval its run found not calibrated says so)
    return [(name, m.name, *[with_interval(m, x, percent=x == "model_share")
                             for x in ("scendi", "vendi", "rke", "model_share")]) for m in models]


def _regions_rows(name: str, result: Any) -> list[tuple]:
    if getattr(result, "kind", "") != "regions":
        return []
    ivs = list(result.intervals or [])
    return [(name, s, cms_with_interval(result.cms[k], ivs[k].get("cms") if k < len(ivs) else None),
             fmt(result.mmd2[k], 4)) for k, s in enumerate(result.names)]


def _kind(result: Any) -> str:
    """A run's kind for comparing like with like (one Scendi model is a diversity run as a comparison is)."""
    kind = str(getattr(result, "kind", "?"))
    return "scendi_comparison" if kind == "scendi" else kind


def _named(name: str, result: Any) -> str:
    """A run with its kind, 'split2 (split)'; the name alone when it is the kind's word."""
    kind = KIND_WORDS.get(_kind(result), _kind(result))
    return name if name == kind else f"{name} ({kind})"


def _pairs(runs: list[tuple[str, Any]]) -> list[tuple[tuple[str, Any], tuple[str, Any]]]:
    """Each run with the next run of its own kind, in the order given."""
    out, last = [], {}
    for run in runs:
        kind = _kind(run[1])
        if kind in last:
            out.append((last[kind], run))
        last[kind] = run
    return out


def prompt_changes(runs: list[tuple[str, Any]]) -> list[tuple]:
    """(from run, to run, what, entered, left) for each run and the next run of its own kind, and each
    'what' that either calls significant (:func:`significant_prompts`); runs of other kinds are not
    compared (a diversity run has no significant prompts: every prompt would read 'left')."""
    rows = []
    for (name_a, a), (name_b, b) in _pairs(runs):
        sa, sb = significant_prompts(a), significant_prompts(b)
        for what in sorted(set(sa) | set(sb)):
            before, after = sa.get(what, set()), sb.get(what, set())
            rows.append((name_a, name_b, what, sorted(after - before), sorted(before - after)))
    return rows


def _change(a: tuple[str, Any], b: tuple[str, Any]) -> str:
    """What changed from run ``a`` to run ``b`` (of one kind), in a few words."""
    (na, ra), (nb, rb) = a, b
    kind = _kind(ra)
    head = f"from {na} to {nb} ({KIND_WORDS.get(kind, kind)})"
    if kind == "promptsplit":
        n_a, n_b = ((r.significance or {}).get("n_significant") for r in (ra, rb))
        sa, sb = (significant_prompts(r).get("split", set()) for r in (ra, rb))
        modes = "" if n_a is None or n_b is None else f", significant modes {n_a} → {n_b}"
        entered, left = len(sb - sa), len(sa - sb)
        moved = (f", {entered} prompt{'s' if entered != 1 else ''} entered the significant set and {left} "
                 "left it")
        return f"{head} the distance went {fmt(ra.distance)} → {fmt(rb.distance)}{modes}{moved}"
    if kind == "promptsplit_kway":
        return (f"{head} significant pairs {len(ra.significant_pairs)} → {len(rb.significant_pairs)}")
    if kind == "scendi_comparison":
        models = {m.name: m for m in (ra.models if ra.kind == "scendi_comparison" else [ra])}
        later = rb.models if rb.kind == "scendi_comparison" else [rb]
        both = [f"{m.name} {fmt(models[m.name].scendi)} → {fmt(m.scendi)}" for m in later if m.name in models]
        return f"{head} Scendi " + (", ".join(both) if both else "of no model that both runs hold")
    if kind == "regions":
        cms = dict(zip(ra.names, ra.cms, strict=False))
        both = [f"{n} {fmt(cms[n])} → {fmt(v)}" for n, v in zip(rb.names, rb.cms, strict=False) if n in cms]
        return f"{head} CMS " + (", ".join(both) if both else "of no generated set that both runs hold")
    return f"{head}: see each run's verdict below"


def runs_verdict(runs: list[tuple[str, Any]]) -> str:
    """The page's first sentence: what changed between each run and the next of its kind, and which runs
    have no other run of their kind to be compared with."""
    pairs = _pairs(runs)
    kinds = [_kind(r) for _, r in runs]
    alone = [_named(n, r) for (n, r), k in zip(runs, kinds, strict=True) if kinds.count(k) == 1]
    if not pairs:
        return ("No two runs are of the same kind, so nothing is compared between them: "
                + ", ".join(alone) + "; each run's own verdict is below.")
    said = "; ".join(_change(a, b) for a, b in pairs)
    if alone:
        said += "; not compared, no other run of their kind: " + ", ".join(alone)
    return said[:1].upper() + said[1:] + "."


def run_links(folders: Sequence[os.PathLike | str], out: os.PathLike | str) -> list[str | None]:
    """Each run's report.html relative to the folder the runs page is written to (None where a run has
    none), so the page's links work wherever the folders are moved together."""
    from urllib.parse import quote

    links: list[str | None] = []
    for folder in folders:
        page = Path(folder) / "report.html"
        try:
            rel = Path(os.path.relpath(page.resolve(), Path(out).resolve())).as_posix()
        except ValueError:  # (another drive: no relative path)
            rel = None
        links.append(quote(rel) if rel and page.is_file() else None)
    return links


def render_runs(runs: list[tuple[str, Any]], links: Sequence[str | None] | None = None) -> str:
    """The page over several runs, in the order given (``runs``: (name, result) pairs; ``links``: each
    run's report.html relative to the page, :func:`run_links`)."""
    page = Page(f"{len(runs)} runs", " → ".join(name for name, _ in runs))
    links = list(links or [None] * len(runs))
    own = [el("a", "report", href=href) if href else el("span", "no report.html", cls="muted")
           for href in links]
    page.add("Verdicts", el("p", el("b", runs_verdict(runs)), cls="pp-verdict"),
             table(["run", "kind", "verdict", "its page"],
                   [(n, KIND_WORDS.get(_kind(r), _kind(r)), snippet(_verdict(r), 600), link)
                    for (n, r), link in zip(runs, own, strict=True)]))
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
    page.add("Significant prompts between runs", *_changes_block(runs))
    return finish(page, kind="runs")


def _changes_block(runs: list[tuple[str, Any]]) -> list:
    """The prompts that entered or left the significant set, between each run and the next of its kind."""
    changes = prompt_changes(runs)
    tested = {"promptsplit", "promptsplit_kway"}
    other = [_named(n, r) for n, r in runs if _kind(r) not in tested]
    lone = [n for n, r in runs if _kind(r) in tested and [_kind(x) for _, x in runs].count(_kind(r)) == 1]
    notes = []
    if other:
        notes.append("no significant-prompt set, not compared: " + ", ".join(other))
    if lone:
        notes.append("no other run of their kind to compare with: " + ", ".join(lone))
    return [
        p("Prompts that entered or left the set a run calls significant, between each run and the next run "
          "of its own kind (PromptSplit: prompts above an even share of the disagreement over significant "
          "modes; K-way: prompts attributed to a deviating model)."
          + ("" if not notes else " " + "; ".join(notes)[:1].upper() + "; ".join(notes)[1:] + ".")),
        table(["from", "to", "comparison / model", "entered", "left"],
              [(a, b, w, el("span", "; ".join(e) or "–"), el("span", "; ".join(x) or "–"))
               for a, b, w, e, x in changes]) if changes else
        p("No two runs of one kind hold a significance test to compare."),
    ]

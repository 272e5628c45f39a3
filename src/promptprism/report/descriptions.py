"""The verified names of ``promptprism describe`` on a report: the name of a finding with its held-out
accuracy and p-value, or why it has none, and the tested candidates folded beneath."""

from __future__ import annotations

from typing import Any

from .html import el, fnum, p


def finding_description(result: Any, **key: Any) -> dict | None:
    """The ``descriptions`` entry of one finding (``side=, rank=`` for a mode, ``cluster=`` for a Scendi
    cluster, ``model=, rank=`` for a K-way deviation), when the result has one."""
    record = getattr(result, "descriptions", None) or {}
    for entry in record.get("modes", []) + record.get("clusters", []) + record.get("deviations", []):
        if all(entry.get(k) == v for k, v in key.items()):
            return entry
    return None


def candidate_counts(c: dict) -> str:
    """How a candidate fared on the held-out samples: the judge's yes counts, or its scores' AUC."""
    if c.get("statistic") == "auc":
        return (f"AUC {fnum(c['accuracy'], '.2f')} (mean score {fnum(c['mean_a'], '.2f')} on "
                f"{c['n_a']} of this side vs {fnum(c['mean_b'], '.2f')} on {c['n_b']} of the other)")
    return f"{c['matches_a']}/{c['n_a']} of this side vs {c['matches_b']}/{c['n_b']} of the other"


def description_block(entry: dict | None) -> Any:
    """The finding's verified name (held-out accuracy, p-value) or why it has none; candidates folded."""
    if entry is None:
        return None
    tried = [el("li", f"“{c['description']}”: {candidate_counts(c)}, adjusted p = "
                      f"{fnum(c['p_adjusted'], '.3g')} ({'kept' if c['accepted'] else 'rejected'})")
             for c in entry.get("candidates", [])]
    folded = (el("details", el("summary", f"{len(tried)} candidate names tested"), el("ul", tried))
              if tried else None)
    if entry.get("status") == "named":
        lo, hi = entry["interval"]
        line = p(el("strong", f"In words: “{entry['name']}”"),
                 " — held out, the judge tells the two sides apart with "
                 f"{'AUC' if entry.get('measure') == 'auc' else 'accuracy'} "
                 f"{fnum(entry['accuracy'], '.2f')} [{fnum(lo, '.2f')}, {fnum(hi, '.2f')}], "
                 f"p = {fnum(entry['p_value'], '.3g')} "
                 "(Holm-adjusted over the candidates).")
    else:
        why = f" ({entry['note']})" if entry.get("note") else ""
        line = p(f"In words: {entry.get('status', 'not named')}{why}; no name is shown as a finding.",
                 cls="muted small")
    return el("div", line, folded)


def quality_block(result: Any, finding_id: str) -> Any:
    """The quality verdicts of a finding (``promptprism quality``): which model is closer to the real data on
    its prompts (both means and intervals; with K models their ranking) and which one a judge prefers; None
    when there is neither."""
    quality = getattr(result, "quality", None) or {}
    entry = _entry(quality, finding_id)
    judged = _entry(quality.get("judge") or {}, finding_id)
    if entry is None and judged is None:
        return None
    return el("div", None if entry is None else _closeness_line(quality, entry),
              None if entry is None else _metrics_line(entry),
              None if entry is None else _facet_lines(entry),
              None if judged is None else _judge_line(judged),
              None if judged is None else _judge_facet_lines(judged))


def _judge_facet_lines(entry: dict) -> Any:
    """Per facet value (``quality --facet`` with a judge): the model the judge prefers on those samples
    (K models: their order, ties joined)."""
    if not entry.get("facets"):
        return None
    items = []
    for f in entry["facets"]:
        if "ranking" in f:
            items.append(el("li", f"{f['facet']} = {f['value']}: judge ", el("strong", _order(f["ranking"])),
                            f" ({f['ranking']['words']}; sign tests, Holm over every test)"))
            continue
        c = f["comparisons"][0]
        items.append(el("li", f"{f['facet']} = {f['value']}: judge prefers ",
                        el("strong", f.get("preferred") or "neither"),
                        f" ({c['a']}'s win rate {fnum(c['win_rate'], '.2f')} over {c['pairs']} pairs; "
                        f"p = {fnum(c['p_adjusted'], '.2g')}, Holm over every test)"))
    return el("ul", *items, cls="small")


def _facet_lines(entry: dict) -> Any:
    """Per facet value (``quality --facet``): which model is closer on the finding's samples of that value
    (K models: their order by closeness, ties joined)."""
    if not entry.get("facets"):
        return None
    items = []
    for f in entry["facets"]:
        means = "; ".join(f"{n} {fnum(m['mean'], '.2f')} (n = {m['n']})" for n, m in f["models"].items())
        if "ranking" in f:
            items.append(el("li", f"{f['facet']} = {f['value']}: closer ", el("strong", _order(f["ranking"])),
                            f" ({means}; {f['ranking']['words']}; Holm over every test)"))
            continue
        closer = el("strong", f.get("closer") or "neither")
        items.append(el("li", f"{f['facet']} = {f['value']}: closer ", closer,
                        f" ({means}; p = {fnum(f['p_adjusted'], '.2g')}, Holm over every test)"))
    return el("ul", *items, cls="small")


def finding_verdicts(result: Any, finding_id: str) -> list[str]:
    """The sentences of ``promptprism quality`` on one finding, for the explorer's panel: closeness, then
    per facet value, then the judge's (and per facet value); [] without a verdict."""
    quality = getattr(result, "quality", None) or {}
    lines = []
    for record in (quality, quality.get("judge") or {}):
        entry = _entry(record, finding_id)
        if entry is not None:
            lines += [entry["verdict"], *(f["verdict"] for f in entry.get("facets", []))]
    return [str(x) for x in lines if x]


def facet_verdicts(result: Any) -> dict[tuple[str, str], list[str]]:
    """The verdicts per facet value of ``promptprism quality --facet``, for the facet panel: (facet, value
    label) -> one line per finding and kind of verdict ("mode +1: reference closer (p = 0.004)", "mode +1:
    judge prefers neither (p = 0.6)"; K models: their order and the largest adjusted p of the pairs whose
    test separates them)."""
    quality = getattr(result, "quality", None) or {}
    out: dict[tuple[str, str], list[str]] = {}
    for judged, record in ((False, quality), (True, quality.get("judge") or {})):
        alpha = record.get("alpha", 0.05)
        for entry in record.get("findings", []):
            for f in entry.get("facets", []):
                line = f"{entry['id']}: {_cell_words(f, judged, alpha)}"
                out.setdefault((str(f["facet"]), str(f["value"])), []).append(line)
    return out


def _cell_words(cell: dict, judged: bool, alpha: float) -> str:
    """One facet value's verdict in a few words, with its Holm-adjusted p."""
    if "ranking" in cell:
        tests = (cell.get("comparisons") if judged else cell.get("pairs")) or []
        parted = [t["p_adjusted"] for t in tests
                  if (t.get("preferred") is not None if judged
                      else t["p_adjusted"] is not None and t["p_adjusted"] <= alpha)]
        head = f"{'judge' if judged else 'closer'} {_order(cell['ranking'])}"
        return f"{head} (p ≤ {fnum(max(parted), '.2g')})" if parted else head
    if judged:
        c = cell["comparisons"][0]
        return f"judge prefers {cell.get('preferred') or 'neither'} (p = {fnum(c['p_adjusted'], '.2g')})"
    return f"{cell.get('closer') or 'neither'} closer (p = {fnum(cell['p_adjusted'], '.2g')})"


def _entry(record: dict, finding_id: str) -> dict | None:
    found = [e for e in record.get("findings", []) if e.get("id") == finding_id]
    overall = record.get("overall")
    if not found and isinstance(overall, dict) and overall.get("id") == finding_id:
        found = [overall]
    return found[0] if found else None


def _closeness_line(quality: dict, entry: dict) -> Any:
    parts = []
    for name, m in entry["models"].items():
        iv = m.get("interval") or {}
        parts.append(f"{name} {fnum(m['mean'], '.2f')} [{fnum(iv.get('low'), '.2f')}, "
                     f"{fnum(iv.get('high'), '.2f')}]")
    if "ranking" in entry:  # K models: the ranking with its ties
        head = el("strong", "Closer to real data: " + _order(entry["ranking"]))
        return p(head, f" — {quality.get('closeness')} on the {entry['prompts']} prompts: "
                       f"{'; '.join(parts)}. {entry['ranking']['words']}.", cls="small")
    untested = entry.get("p_adjusted") is None  # (no prompt holds both models' scored samples)
    head = el("strong", "Closer to real data: " + (entry.get("closer") or ("not tested" if untested
                                                                         else "neither")))
    return p(head, f" — {quality.get('closeness')} on the {entry['prompts']} prompts that carry it: "
                   f"{'; '.join(parts)}; p = {fnum(entry['p_adjusted'], '.2g')} (within-prompt permutation "
                   "test, Holm over the findings).", cls="small")


def _metrics_line(entry: dict) -> Any:
    """``quality --metrics``: each model's precision, recall, density, coverage and FD on the finding's
    prompts against the real samples of those prompts, with their intervals."""
    if not entry.get("metrics"):
        return None

    def one(name: str, m: dict) -> str:
        parts = []
        for key in ("precision", "recall", "density", "coverage", "fd"):
            iv = m.get("intervals", {}).get(key) or {}
            bounds = f" [{fnum(iv['low'], '.2f')}, {fnum(iv['high'], '.2f')}]" if "low" in iv else ""
            parts.append(f"{key if key != 'fd' else 'FD'} {fnum(m.get(key), '.3g')}{bounds}")
        return f"{name} (n = {m['n']}): " + ", ".join(parts)

    shown = "; ".join(one(n, m) for n, m in entry["metrics"].items())
    return p(f"Reference metrics on these prompts — {shown}.", cls="small muted")


def _order(ranking: dict) -> str:
    """``'a = b > c'``: the models by rank, those sharing a rank joined (``'no model separated'`` when all
    share one)."""
    groups: dict[int, list[str]] = {}
    for row in ranking["rows"]:
        groups.setdefault(row["rank"], []).append(row["name"])
    if len(groups) == 1:
        return "no model separated"
    return " > ".join(" = ".join(g) for _, g in sorted(groups.items()))


def _judge_line(entry: dict) -> Any:
    if "ranking" in entry:
        return p(el("strong", "Judge: " + _order(entry["ranking"])), f" — {entry['ranking']['words']}.",
                 cls="small")
    head = el("strong", "Judge: prefers " + (entry.get("preferred") or "neither"))
    c = entry["comparisons"][0]
    iv = c["interval"]
    return p(head, f" — {c['a']}'s win rate against {c['b']} {fnum(c['win_rate'], '.2f')} "
                   f"[{fnum(iv['low'], '.2f')}, {fnum(iv['high'], '.2f')}] over {c['pairs']} pairs, each "
                   f"asked in both orders ({c['wins']} won, {c['losses']} lost, {c['ties']} ties of which "
                   f"{c['cancelled']} cancelled by position, {c['unreadable']} unreadable); sign test "
                   f"p = {fnum(c['p_adjusted'], '.2g')} (ties dropped, Holm over the findings).", cls="small")


def deviation_blocks(result: Any, model: str) -> list:
    """The verified names (or why none) of every named deviation of ``model`` in a K-way result, each
    headed by its mode."""
    record = getattr(result, "descriptions", None) or {}
    blocks = []
    for entry in record.get("deviations", []):
        if entry.get("model") == model:
            head = f"What {model} does on its mode +{entry['rank']} that the others don't (same prompts):"
            blocks += [p(head), description_block(entry)]
    return blocks

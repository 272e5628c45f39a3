"""The answer first on the diversity (Scendi) page: the verdict, the findings (differences larger than their
intervals, each model's largest model-driven cluster) and its caveats (warnings, notes, interval validity),
from result.json's fields (nothing recomputed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._words import and_join
from .answer import answer_block, severity
from .html import Html, fnum, num


def _scendi_groups(models: list[Any], rankings: Any) -> tuple[list[Any], list[Any]]:
    """The most and the least diverse models by Scendi, each a group of the models that share its rank in
    the result's tie-aware ranking (the page's Rankings: tied where the paired test or the intervals do not
    separate them); without that ranking, models of equal Scendi share a rank."""
    by_name = {m.name: m for m in models}
    rows = ((rankings or {}).get("scendi") or {}).get("rows") if isinstance(rankings, dict) else None
    if rows and all(r.get("name") in by_name for r in rows):
        ranks = {r["name"]: int(r["rank"]) for r in rows}
    else:
        values = {m.name: num(m.scendi) for m in models if num(m.scendi) == num(m.scendi)}
        ranks = {n: 1 + sum(1 for w in values.values() if w > v) for n, v in values.items()}
    ranked = sorted((m for m in models if m.name in ranks), key=lambda m: (ranks[m.name], -num(m.scendi)))
    if not ranked:
        return [], []
    top, bottom = ranks[ranked[0].name], ranks[ranked[-1].name]
    return ([m for m in ranked if ranks[m.name] == top], [m for m in ranked if ranks[m.name] == bottom])


def _verdict(models: list[Any], diffs: list[dict], wi: Callable, rankings: Any = None) -> str:
    if len(models) == 1:
        m = models[0]
        return (f"{m.name} has {wi(m, 'scendi')} effective model-driven modes (Scendi): "
                f"{fnum(m.model_share, '.0%')} of its output variance comes from the model rather than its "
                f"prompts (Vendi, prompts ignored: {wi(m, 'vendi')}).")
    most, least = _scendi_groups(models, rankings)
    scendi = [d for d in diffs if d.get("metric") == "scendi"]
    n_sep = sum(1 for d in scendi if d.get("separated"))
    ordered = sorted(models, key=lambda m: -num(m.scendi) if num(m.scendi) == num(m.scendi) else 0.0)
    values = ", ".join(f"{m.name} {wi(m, 'scendi')}" for m in ordered)
    if (scendi and not n_sep) or not most or len(most) == len(ordered):
        # (a ranking within the noise is not an answer: say the tie first)
        why = (f"none of the {len(scendi)} Scendi differences exceeds its bootstrap interval" if scendi else
               "the models share the first rank")
        return f"No detectable difference in diversity beyond the prompts: {why} (Scendi {values})."
    if len(most) == 1:
        head = f"{most[0].name} is the most diverse beyond its prompts (Scendi {wi(most[0], 'scendi')})"
    else:
        each = ", ".join(f"{m.name} {wi(m, 'scendi')}" for m in most)
        head = (f"{and_join([m.name for m in most])} are the most diverse beyond their prompts, tied (Scendi "
                f"{each}: within the noise of each other)")
    tail = (wi(least[0], "scendi") if len(least) == 1 else
            ", ".join(f"{m.name} {wi(m, 'scendi')}" for m in least))
    head += f", {and_join([m.name for m in least])} the least ({tail})"
    if scendi:
        return head + f"; {n_sep} of {len(scendi)} Scendi differences exceed their bootstrap intervals."
    if not any(getattr(m, "intervals", None) for m in models):
        return head + "; without bootstrap intervals the differences may be noise."
    return head + "."


def _findings(models: list[Any], diffs: list[dict], cluster_ids: dict, card: Callable) -> list[Html]:
    out = []
    for d in diffs:
        if d.get("separated"):
            diff = fnum(d.get("difference"), "+.3g")
            out.append(card(f"{d['a']} vs {d['b']}: {d['metric']} differs by {diff}",
                            "larger than the resampling noise",
                            where=f"{d['a']} and {d['b']}",
                            sure=f"interval of the difference [{fnum(d.get('low'), '.3g')}, "
                                 f"{fnum(d.get('high'), '.3g')}] excludes 0"))
    for m in models:
        if not m.clusters:
            continue
        c = max(m.clusters, key=lambda c: num(c.share) if num(c.share) == num(c.share) else -1.0)
        s = c.top_samples[0] if c.top_samples else None
        quote = None if s is None else (s.output if s.output is not None else s.prompt)
        cid = cluster_ids.get((m.name, c.rank))
        out.append(card(f"{m.name}: its largest model-driven cluster, #{c.rank}",
                        f"{fnum(c.share, '.1%')} of the model-driven trace: what {m.name} varies most "
                        "beyond its prompts",
                        where=None if s is None else f"e.g. sample #{s.index}, prompt: {s.prompt}",
                        sure=f"eigenvalue {fnum(c.eigenvalue, '.3g')}", quote=quote,
                        attrs={"data_pp_cluster": cid} if cid is not None else None))
    return out


def _caveats(models: list[Any], notes: list[str] | None) -> list[tuple[str, str]]:
    out = [(severity(n), n) for n in notes or []]
    seen: dict[str, list[str]] = {}
    for m in models:
        for w in getattr(m, "warnings", None) or []:
            seen.setdefault(str(w), [])
            if m.name not in seen[str(w)]:
                seen[str(w)].append(m.name)
    for w, who in seen.items():
        suffix = f" ({', '.join(who)})" if len(models) > 1 and len(who) < len(models) else ""
        out.append((severity(w), w + suffix))
    for m in models:
        boot = getattr(m, "bootstrap", None)
        v = boot.get("validity") if isinstance(boot, dict) else None
        if isinstance(v, dict) and not v.get("holds", True):
            out.append(("important", f"Intervals of {m.name} not calibrated here: {v.get('reason', '')}."))
    return out


def scendi_answer(result: Any, models: list[Any], notes: list[str] | None, view: dict, wi: Callable) -> Html:
    """The answer block of the Scendi page; ``wi(model, key)``: a value with its interval, ``view``'s
    clusters: the ids the cards open."""
    from .answer import finding_card

    ids = {(c["model"], c["rank"]): k for k, c in enumerate(view.get("clusters", []))
           if c.get("kind") == "model-driven"}
    diffs = list(getattr(result, "differences", None) or [])
    rankings = getattr(result, "rankings", None)
    return answer_block(_verdict(models, diffs, wi, rankings), _findings(models, diffs, ids, finding_card),
                        _caveats(models, notes))

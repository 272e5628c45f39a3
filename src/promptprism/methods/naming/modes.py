"""Names for PromptSplit's significant modes: what the favoured model does on the mode's prompts that the
other model does not, checked on held-out samples (:mod:`.contrast`).

For a mode, side A is the set it favours (test for a positive eigenvalue, reference for a negative one)
restricted to the prompts where the mode lives (the fewest top prompts carrying 90 % of its contributions
of the eigenvalue's sign), side B the other set on the same prompts. Comparing the two models on the *same*
prompts means a name can only pass by describing a difference in the outputs, never the topic of the prompts.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ...errors import InputError
from ...llm.conversation import ChatModel
from .contrast import NAMED, ContrastName, NamingOptions, Sample, name_contrast
from .judges import Judge, Namer, as_namer


def texts_of(ps: Any, side: str) -> tuple[list[str], list[str]]:
    """The prompt and output texts of a paired set (an InputError naming the set when it has none)."""
    prompts, outputs = getattr(ps, "prompts", None), getattr(ps, "outputs", None)
    if prompts is None or outputs is None:
        name = getattr(ps, "source", None) or getattr(ps, "name", side)
        raise InputError(f"{name}: naming modes needs the {side} set's prompt and output texts "
                         "('prompts' and 'outputs'), which it does not hold")
    return list(prompts), list(outputs)


def mode_prompts(mode: Any, *, share: float = 0.9, max_prompts: int = 20) -> list[str]:
    """The fewest top prompts (at most ``max_prompts``) whose contributions of the mode's sign add up to
    ``share`` of the mode's total of that sign: where the mode lives. (A prompt's contribution is its share of
    the eigenvalue, so a reference-side mode's prompts contribute negative amounts.)"""
    sign = 1.0 if mode.side == "test" else -1.0
    loads = sorted(((p.prompt, sign * p.contribution) for p in mode.top_prompts if sign * p.contribution > 0),
                   key=lambda x: -x[1])
    total = sum(c for _, c in loads)
    chosen, running = [], 0.0
    for prompt, c in loads[:max_prompts]:
        chosen.append(prompt)
        running += c
        if running >= share * total:
            break
    return chosen


def mode_pools(mode: Any, sets: dict[str, Any]) -> tuple[list[Sample], list[Sample]]:
    """Side A (the favoured set) and side B (the other set) on the prompts where the mode lives."""
    wanted = set(mode_prompts(mode))
    favoured = mode.side
    other = "reference" if favoured == "test" else "test"
    pools = []
    for side in (favoured, other):
        ps, outs = texts_of(sets[side], side)
        pools.append([Sample(p, o, i) for i, (p, o) in enumerate(zip(ps, outs, strict=True)) if p in wanted])
    return pools[0], pools[1]


def describe_modes(result: Any, test: Any, reference: Any, *, namer: Namer | ChatModel, judge: Judge,
                   options: NamingOptions = NamingOptions(), all_modes: bool = False) -> dict:
    """Name each significant mode of a PromptSplit ``result`` (every reported mode with ``all_modes``).

    Returns the record stored as ``result.descriptions``: ``config``, one entry per mode (side, rank,
    eigenvalue, p-value, and the :class:`~.contrast.ContrastName` fields) and ``notes``.
    """
    sets = {"test": test, "reference": reference}
    modes = [m for m in result.modes if all_modes or m.significant]
    entries, notes = [], []
    if not modes:
        notes.append("no mode was significant, so none was named" if result.significance
                     else "the permutation test was off: pass all_modes (--all-modes) to name every mode")
    for k, mode in enumerate(modes):
        pool_a, pool_b = mode_pools(mode, sets)
        outcome: ContrastName = name_contrast(
            pool_a, pool_b, namer=namer, judge=judge,
            options=dataclasses.replace(options, seed=options.seed + 1000 * k))
        entries.append({"side": mode.side, "rank": mode.rank, "eigenvalue": mode.eigenvalue,
                        "mode_p_value": mode.p_value, **outcome.to_dict()})
    notes += repeated_name_notes(entries, "modes", "each mode from the other model")
    notes += judge_notes(judge, entries)
    return {"config": naming_config(options, namer, judge, all_modes), "modes": entries, "notes": notes}


def repeated_name_notes(entries: list[dict], what: str, separates: str) -> list[str]:
    """A note when one name was kept for several findings: it separates ``separates`` but not the findings."""
    named = [e["name"].lower() for e in entries if e["status"] == NAMED]
    repeated = sorted({n for n in named if named.count(n) > 1})
    if not repeated:
        return []
    names = "; ".join(repeated)
    return [f"the same name was kept for several {what} ({names}): it separates {separates} but does not "
            f"tell the {what} apart"]


def judge_notes(judge: Judge, entries: list[dict]) -> list[str]:
    """A caveat beside names kept by a judge that checks separation, not meaning: the embedding judge
    keeps a name whose embedding's cosine separates the held-out samples, which any sentence in the one
    side's language can do (docs/naming.md)."""
    if getattr(judge, "name", "") != "embedding" or not any(e.get("name") for e in entries):
        return []
    return ["the embedding judge kept each name because its embedding separates the held-out samples, not "
            "because it was read against them: a name can separate without describing (e.g. any English "
            "sentence against French answers); a chat or completion judge reads each sample"]


def naming_config(options: NamingOptions, namer: Namer | ChatModel, judge: Judge, all_modes: bool) -> dict:
    """The ``config`` recorded beside the names: the options, the namer's model and the judge's name."""
    return {**dataclasses.asdict(options), "namer": as_namer(namer).model,
            "judge": getattr(judge, "name", type(judge).__name__), "all_modes": all_modes}

"""Names for the deviating models of a K-way comparison: what a model's outputs on the prompts where it
deviates do that every other model's outputs on the same prompts don't, checked on held-out samples
(:mod:`.contrast`).

A K-way result marks a model as deviating when it differs significantly from the pooled others and at least
half of that disagreement lies on prompts attributed to it. Each significant mode of its comparison with the
rest on its own side is one deviation: side A is the model's samples on the mode's prompts (the fewest top
prompts carrying 90 % of the mode, :func:`.modes.mode_prompts`), side B every other model's samples on the
same prompts. As for two models, comparing on the *same* prompts means a name can only pass by describing the
outputs, never the topic of the prompts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..._words import and_join
from ...errors import InputError
from ...llm.conversation import ChatModel
from .contrast import NamingOptions, Sample, name_contrast
from .judges import Judge, Namer
from .modes import judge_notes, mode_prompts, naming_config, repeated_name_notes, texts_of


def deviation_pools(mode: Any, model: str, sets: Mapping[str, Any]) -> tuple[list[Sample], list[Sample]]:
    """Side A: ``model``'s samples on the prompts where ``mode`` lives; side B: every other model's samples
    on the same prompts (``index``: the row in its own set)."""
    wanted = set(mode_prompts(mode))
    pool_a, pool_b = [], []
    for name, paired in sets.items():
        prompts, outputs = texts_of(paired, name)
        pool = pool_a if name == model else pool_b
        rows = enumerate(zip(prompts, outputs, strict=True))
        pool += [Sample(p, o, i) for i, (p, o) in rows if p in wanted]
    return pool_a, pool_b


def deviation_modes(result: Any, model: str, *, all_modes: bool = False) -> list[Any]:
    """The modes of ``model``'s comparison with the rest on its own side (what it produces more than the
    others): the significant ones, or every reported one with ``all_modes``."""
    comparison = result.against_rest(model)
    side = "test" if comparison.config["test"] == model else "reference"
    return [m for m in comparison.modes if m.side == side and (all_modes or m.significant)]


def describe_deviations(result: Any, sets: Mapping[str, Any], *, namer: Namer | ChatModel, judge: Judge,
                        options: NamingOptions = NamingOptions(), all_modes: bool = False) -> dict:
    """Name each deviation of a K-way PromptSplit ``result`` (:class:`.KWayResult`): for every model marked
    ``deviates``, each significant mode it produces more than the rest (with ``all_modes``: every model's
    every reported mode on its side). ``sets``: each model's paired set with texts, by the result's names.

    Returns the record stored as ``result.descriptions``: ``config``, ``deviations`` (one entry per mode:
    model, against, rank, eigenvalue, mode p-value and the :class:`~.contrast.ContrastName` fields) and
    ``notes``.
    """
    missing = [n for n in result.names if n not in sets]
    if missing:
        raise InputError(f"naming K-way deviations needs every model's set; missing: {', '.join(missing)}")
    entries, notes = [], []
    for d in result.deviations:
        if not (all_modes or d["deviates"]):
            continue
        for mode in deviation_modes(result, d["model"], all_modes=all_modes):
            pool_a, pool_b = deviation_pools(mode, d["model"], sets)
            seeded = dataclasses.replace(options, seed=options.seed + 1000 * len(entries))
            outcome = name_contrast(pool_a, pool_b, namer=namer, judge=judge, options=seeded)
            entries.append({"model": d["model"], "against": d["against"], "rank": mode.rank,
                            "eigenvalue": mode.eigenvalue, "mode_p_value": mode.p_value, **outcome.to_dict()})
    if not entries:
        deviating = [d["model"] for d in result.deviations if d["deviates"]]
        notes.append(
            "the permutation test was off: pass all_modes (--all-modes) to name every mode"
            if not result.significance else "no model deviates from the rest, so none was named"
            if not deviating else
            f"{and_join(deviating)} deviate{'s' if len(deviating) == 1 else ''} from the rest only by "
            "producing less of what the others produce (modes on the rest's side), and names are given to "
            "what a model produces more of; pass all_modes (--all-modes) to name every reported mode")
    notes += repeated_name_notes(entries, "deviations", "each from the other models")
    notes += judge_notes(judge, entries)
    return {"config": naming_config(options, namer, judge, all_modes), "deviations": entries, "notes": notes}

"""K models closer to a reference where they differ: per finding (and over every prompt) each model's
closeness, the within-prompt test of every pair, and a ranking whose ties are honest.

The closeness scores, the stratified permutation test and the bootstrap over prompts are
:class:`.findings.FindingQuality`'s. For each finding and each pair of models (a, b) the within-prompt test
(:func:`.stats.permutation.stratified_permutation_test`, on the prompts the pair holds) runs with seed
``seed + 1009 i + j`` (finding i, pair j in the models' name order, the pair's two in name order: the same
draws whichever order the models came in); Holm runs over every pair test of every finding (the "all
prompts" entry included). Each model's mean weighs the prompts every model holds alike
(:func:`.stats.permutation.stratum_weights` of all K). The ranking is
:func:`~promptprism.stats.ranking.ranking`: rank(k) = 1 + #{models ahead of k by their pair's own difference
and separated from k by a Holm-adjusted test at alpha}, so models the tests do not separate share a rank
and no separated pair is ranked against its test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from ...errors import InputError, OptionError
from ...stats.permutation import stratum_weights
from ...stats.ranking import ranking
from ...stats.two_sample import holm
from .findings import FindingQuality, finding_scores, model_closeness, pair_test, shared_prompts

#: the id of the entry over every prompt the models and the reference share
ALL_PROMPTS = "all prompts"


@dataclass(frozen=True)
class FindingRanking(FindingQuality):
    """:class:`.FindingQuality` for two or more models: per finding each model's mean closeness with its
    interval, every pair's test, the ranking with ties (module docstring) and one sentence; ``overall``: the
    same over every prompt the models share with the reference.

    ``fit(findings, models, reference)`` as :meth:`.FindingQuality.fit`, with any number (>= 2) of models."""

    def fit(self, findings: Sequence[dict], models: dict[str, Any], reference: Any) -> dict[str, Any]:
        """The quality record (``{..., 'findings': [...], 'overall': {...}, 'verdict'}``)."""
        return self._record(self._entries(findings, models, reference), models, reference)

    def _entries(self, findings: Sequence[dict], models: dict[str, Any], reference: Any) -> list[dict]:
        """Each finding's scored entry, then the entry over every prompt shared with the reference."""
        if len(models) < 2:
            raise OptionError(f"models: two or more sets to rank, got {len(models)}", parameter="models")
        shared = shared_prompts(models, reference)
        every = {"id": ALL_PROMPTS, "prompts": sorted(shared)}
        return [self._scored(f, models, reference, i) for i, f in enumerate([*findings, every])]

    def _record(self, entries: list[dict], models: dict[str, Any], reference: Any,
                more: Sequence[dict] = ()) -> dict[str, Any]:
        """Holm over the pair tests of ``entries`` (the findings', then "all prompts") and of ``more``
        (entries shown under the findings: facet values), every entry ranked, and the record."""
        tests = [t for e in [*entries, *more] for t in e["pairs"] if t["p_value"] is not None]
        for t in (t for e in [*entries, *more] for t in e["pairs"]):
            t["p_adjusted"] = None
        for t, p_adj in zip(tests, holm([t["p_value"] for t in tests]) if tests else [], strict=True):
            t["p_adjusted"] = p_adj
        target = str(getattr(reference, "name", None) or "the reference")
        for e in [*entries, *more]:
            self._rank(e, list(models), target)
        *per_finding, overall = entries
        ranked = [e["verdict"] for e in [*per_finding, *more] if e["closer"] or _has_ties_broken(e)]
        verdict = ("; ".join(ranked) if ranked else
                   f"no finding separates the models by closeness to {target} ({self.closeness}, Holm over "
                   f"{len(tests)} pair test(s) at alpha = {self.alpha:g})")
        return {**self.get_params(), "reference": getattr(reference, "name", "reference"),
                "models": list(models), "findings": per_finding, "overall": overall, "tests": len(tests),
                "verdict": verdict + f"; overall: {overall['ranking']['words']}"}

    def _scored(self, finding: dict, models: dict[str, Any], reference: Any, i: int) -> dict[str, Any]:
        scored, note = finding_scores(finding["prompts"], models, reference, closeness=self.closeness,
                                      k=self.nearest_k)
        empty = [n for n, (s, _) in scored.items() if s.size == 0]
        if empty:
            raise InputError(f"finding {finding['id']}: no scored samples of {empty[0]} on its prompts (gold "
                             "needs reference outputs of the same prompts)")
        # each pair tested on the prompts it holds (its own weights: a third model changes nothing); the
        # means shown weigh the prompts every model holds alike, and the ranking takes each separated pair's
        # direction from its own difference
        common = stratum_weights(*(q for _, q in scored.values()))
        pairs, named = [], {pair: j for j, pair in enumerate(combinations(sorted(scored), 2))}
        for a, b in combinations(scored, 2):
            diff, p = pair_test(scored, a, b, permutations=self.permutations,
                                seed=self.seed + 1009 * i + named[tuple(sorted((a, b)))])
            untested = bool(np.isnan(p))  # no prompt holds both: nothing to compare, not in Holm's family
            pairs.append({"a": a, "b": b, "difference": None if untested else diff,
                          "p_value": None if untested else p})
        models_ = {n: model_closeness(s, q, common, replicates=self.bootstrap, level=self.confidence,
                                      seed=self.seed + i) for n, (s, q) in scored.items()}
        held = len(set(finding["prompts"]))
        if len(common) < held:
            note = "; ".join(x for x in (note, (
                f"the means are over the {len(common)} of its {held} prompts every model holds"
                if common else "no prompt is held by every model: the means are over different prompts")
                + "; each pair is tested on the prompts it holds, and the ranking follows those tests") if x)
        extra = {k: finding[k] for k in ("model", "modes") if k in finding}
        return {"id": finding["id"], **extra, "prompts": len(set(finding["prompts"])),
                "example_prompts": list(finding["prompts"])[:3],
                "shared_prompts": len(common), "models": models_,
                "pairs": pairs, "note": note, **self._metrics(finding, models, reference, i)}

    def _rank(self, entry: dict, names: list[str], target: str) -> None:
        index = {n: k for k, n in enumerate(names)}
        sep = np.zeros((len(names), len(names)), dtype=bool)
        ahead = np.zeros_like(sep)
        for t in entry["pairs"]:
            i, j = index[t["a"]], index[t["b"]]
            sep[i, j] = sep[j, i] = t["p_adjusted"] is not None and t["p_adjusted"] <= self.alpha
            if t["difference"] is not None:
                ahead[i, j], ahead[j, i] = t["difference"] > 0, t["difference"] < 0
        means = [entry["models"][n]["mean"] for n in names]
        entry["ranking"] = ranking(names, means, sep, metric=f"{self.closeness} against {target}",
                                   basis=f"the within-prompt permutation test (Holm, alpha = {self.alpha:g})",
                                   ahead=ahead)
        top = [r for r in entry["ranking"]["rows"] if r["rank"] == 1]
        entry["closer"] = top[0]["name"] if len(top) == 1 and not top[0]["not_separated_from"] else None
        where = (f"on all {entry['prompts']} prompts" if entry["id"] == ALL_PROMPTS
                 else f"on the {entry['prompts']} prompts of {entry['id']}")
        entry["verdict"] = f"{where}, {entry['ranking']['words']}"


def _has_ties_broken(entry: dict) -> bool:
    """Whether some test separates two of the finding's models (a ranking that says more than one tie)."""
    return len({r["rank"] for r in entry["ranking"]["rows"]}) > 1

"""Several models' Scendi on one configuration: :func:`compare` (one row per model, paired differences)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ...data.paired import PairedSet, as_paired_set, set_names
from ...errors import OptionError
from ..rankings import diversity_rankings
from .bootstrap import compare_models
from .estimator import Scendi
from .nullifier import check_paired, scendi_groups
from .result import ScendiComparison


def compare(sets: list[PairedSet | tuple], estimator: Scendi | None = None, names: list[str] | None = None
            ) -> ScendiComparison:
    """Fit the same Scendi configuration on several models' paired sets: one row per model, and with a
    bootstrap, pairwise ``differences`` (paired over shared prompt draws when every set holds the same
    prompts, else by interval overlap; each row says which)."""
    est = estimator or Scendi()
    if names is not None and len(names) != len(sets):
        raise OptionError(f"{len(names)} names for {len(sets)} sets")
    sets = [check_paired(as_paired_set(s, names[i] if names else f"set {i + 1}"), est.kernel)
            for i, s in enumerate(sets)]  # (a tuple of arrays is named by its name or position)
    names = set_names(sets, names)  # (distinct: 'set 1', 'set 2' for two Python-built sets)
    labels, note = scendi_groups(*sets)
    shared = len(sets) > 1 and all(set(np.unique(lab)) == set(np.unique(labels[0])) for lab in labels)
    results, reps = [], []
    for s, n, lab in zip(sets, names, labels, strict=True):
        if shared:  # one prompt numbering: the seeded draws pick the same prompts for every model
            r, rep = est.fit_with_draws(s, name=n, groups=lab, notes=[note] if note else ())
        else:
            own, own_note = scendi_groups(s, warn=False)  # (warned above)
            r, rep = est.fit_with_draws(s, name=n, groups=own[0], notes=[own_note] if own_note else ())
        results.append(r)
        reps.append(rep)
    differences: list[dict] = []
    if len(results) > 1 and all(r.intervals for r in results):
        methods = {r.bootstrap.get("interval", "").startswith("jackknife") for r in results}
        jackknife = methods == {True}
        lengths = {len(rep["scendi"]) for rep in reps if rep is not None}
        paired = shared and len(methods) == 1 and len(lengths | ({-1} if None in reps else set())) == 1
        points = [r.summary() for r in results]  # (an undefined model share: NaN, no difference row)
        raw = [p | {k: v["raw"] for k, v in r.clipped.items()} for p, r in zip(points, results, strict=True)]
        differences = compare_models(names, points, reps if paired else None, [r.intervals for r in results],
                                     level=est.confidence, jackknife=jackknife, pivots=raw)
    comparison = ScendiComparison(models=results, seed=est.seed, differences=differences)
    return dataclasses.replace(comparison, rankings=diversity_rankings(comparison))


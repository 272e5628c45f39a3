"""Which model is closer to the reference (or preferred by a judge) on a finding, per value of a facet (a
column of the user's manifest: topic, seed, checkpoint...).

For a finding (a set of prompts) and a facet value v, each model keeps only its samples whose facet value is
v (a sample's value is its manifest row's), on the finding's prompts (:func:`facet_cells`, the one iterator
every kind of result uses); those samples get exactly the verdict the whole finding gets: two models
(:class:`FacetQuality`, a split result), K models ranked with ties (:class:`FacetRanking`, a compare or a
diversity comparison), a cluster's samples against the model's other samples
(:class:`.findings_clusters.ClusterQuality` with facets), or a judge's preference
(:func:`facet_preference`). Holm runs over every reported test: the findings' and all their facet values'.
A value with no sample of some model on the finding's prompts is not tested; one whose samples cannot be
scored (k or fewer for precision, no gold answer) is listed with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import count
from typing import Any

import numpy as np

from ...data.paired import PairedSet
from ...errors import InputError
from .findings import FindingQuality, holm_verdicts, no_shared_prompt
from .findings_rank import FindingRanking
from .judge import FindingPreference, conclude_preferences


def restrict_rows(model: Any, keep: np.ndarray) -> PairedSet:
    """The paired set of ``model``'s rows where ``keep`` is True (name, prompts and outputs kept)."""
    idx = np.flatnonzero(keep)
    outputs = getattr(model, "outputs", None)
    return PairedSet(np.asarray(model.prompt_embeddings)[idx], np.asarray(model.output_embeddings)[idx],
                     prompts=[model.prompts[i] for i in idx],
                     outputs=None if outputs is None else [outputs[i] for i in idx],
                     name=getattr(model, "name", "set"))


def value_mask(rows: Sequence[int] | None, k: int, n: int) -> np.ndarray:
    """The rows whose facet value index is ``k`` (none when the set has no such column)."""
    if rows is None:
        return np.zeros(n, dtype=bool)
    return np.asarray(rows, dtype=int) == k


def facet_cells(finding: dict, models: dict[str, Any], facets: Sequence[dict]
                ) -> Iterator[tuple[dict, Any, dict[str, PairedSet]]]:
    """(facet, value label, each model restricted to its samples of that value on the finding's prompts)
    for every facet value that every model has samples of there, in the facets' and values' order."""
    prompts = list(finding["prompts"])
    on = {n: np.isin(np.asarray(s.prompts, dtype=object), prompts) for n, s in models.items()}
    for facet in facets:
        for k, label in enumerate(facet["values"]):
            keep = {n: value_mask(facet["rows"].get(n), k, on[n].size) for n in models}
            if any(not (keep[n] & on[n]).any() for n in models):
                continue
            yield facet, label, {n: restrict_rows(models[n], keep[n]) for n in models}


def facet_subsets(facets: Sequence[dict], parts: dict[str, tuple[str, np.ndarray]]) -> list[dict]:
    """The facets re-indexed for sets made of some rows of others: ``parts`` maps each new set's name to
    (the name of the set its rows come from, the boolean mask of those rows)."""
    out = []
    for f in facets:
        rows = {new: (None if f["rows"].get(src) is None else np.asarray(f["rows"][src])[mask].tolist())
                for new, (src, mask) in parts.items()}
        out.append({**f, "rows": rows})
    return out


def cell_entries(score: Callable[[dict, dict, int], dict], finding: dict, models: dict[str, Any],
                 facets: Sequence[dict], index: Iterator[int]) -> tuple[list[dict], list[dict]]:
    """``score(cell, restricted models, next(index))`` on each facet value of ``finding``
    (:func:`facet_cells`; ``cell`` is the finding with id ``'<id>, <facet> = <value>'``), each entry with
    ``facet`` and ``value``; and the values that could not be scored, with the reason."""
    entries, skipped = [], []
    for facet, label, restricted in facet_cells(finding, models, facets):
        cell = {**finding, "id": f"{finding['id']}, {facet['name']} = {label}"}
        try:
            one = score(cell, restricted, next(index))
        except InputError as exc:
            skipped.append({"facet": facet["name"], "value": label, "reason": str(exc)})
            continue
        one.update(facet=facet["name"], value=label)
        entries.append(one)
    return entries, skipped


def tested(entry: dict, sides: str = "the models") -> dict:
    """A facet value's entry, or an InputError (the value is then listed as skipped, with the reason) where
    no pair of models shares a prompt with scored samples: such a cell has no test to report."""
    pvalues = [entry["p_value"]] if "p_value" in entry else [t["p_value"] for t in entry["pairs"]]
    if all(p is None for p in pvalues):
        raise InputError(no_shared_prompt(sides))
    return entry


@dataclass(frozen=True)
class FacetQuality(FindingQuality):
    """:class:`.FindingQuality` with, under each finding, the same verdict per facet value (module
    docstring); the options are FindingQuality's.

    ``fit(findings, models, reference, facets)``: ``facets`` a list of ``{'name', 'values': [label, ...],
    'rows': {model: [value index of each row]}}`` (the facet view's shape; an index outside ``values``, e.g.
    the missing value's, is a value of its own)."""

    def fit(self, findings: Sequence[dict], models: dict[str, Any], reference: Any,  # type: ignore[override]
            facets: Sequence[dict] = ()) -> dict[str, Any]:
        """The quality record, each finding with ``'facets'`` (``{'facet', 'value', ...}`` entries) and
        ``'facets_skipped'``; Holm over the findings' and the facet values' tests together."""
        record = super().fit(findings, models, reference)
        if not facets:
            return record
        tests = list(record["findings"])
        index = count(len(findings))
        for entry, finding in zip(record["findings"], findings, strict=True):
            entry["facets"], entry["facets_skipped"] = cell_entries(
                lambda cell, restricted, i: tested(self._one(cell, restricted, reference, i)), finding,
                models, facets, index)
            tests += entry["facets"]
        target = str(getattr(reference, "name", None) or "the reference")
        holm_verdicts(tests, alpha=self.alpha, closeness=self.closeness, target=target)
        closer = [t["verdict"] for t in tests if t["closer"]]
        n_tests = sum(t["p_value"] is not None for t in tests)
        record["verdict"] = ("; ".join(closer) if closer else
                             f"no finding or facet value shows one model closer to {target} "
                             f"({self.closeness}, Holm over {n_tests} test(s) at alpha = {self.alpha:g})")
        record["tests"] = n_tests
        return record


@dataclass(frozen=True)
class FacetRanking(FindingRanking):
    """:class:`.findings_rank.FindingRanking` (K models ranked with ties) with, under each finding, the same
    ranking per facet value; the pair tests of the m-th value scored use seed ``seed + 1009 (F + 1 + m) +
    j`` (F findings, after the findings' and "all prompts"'); Holm over every pair test of the findings,
    "all prompts" and the values. ``fit(findings, models, reference, facets)``, ``facets`` as in
    :class:`FacetQuality`."""

    def fit(self, findings: Sequence[dict], models: dict[str, Any], reference: Any,  # type: ignore[override]
            facets: Sequence[dict] = ()) -> dict[str, Any]:
        """The quality record, each finding with ``'facets'`` and ``'facets_skipped'``."""
        if not facets:
            return super().fit(findings, models, reference)
        entries = self._entries(findings, models, reference)
        index, more = count(len(findings) + 1), []
        for entry, finding in zip(entries[:len(findings)], findings, strict=True):
            entry["facets"], entry["facets_skipped"] = cell_entries(
                lambda cell, restricted, i: tested(self._scored(cell, restricted, reference, i)), finding,
                models, facets, index)
            more += entry["facets"]
        return self._record(entries, models, reference, more)


def facet_preference(estimator: FindingPreference, findings: Sequence[dict], models: dict[str, Any],
                     judge: Any, facets: Sequence[dict]) -> dict[str, Any]:
    """:class:`.judge.FindingPreference` with, under each finding, the judge's verdict per facet value: the
    pairs drawn from each model's samples of that value on the finding's prompts (the m-th value tested
    draws from ``default_rng([seed, len(findings) + m, j])``, j its pair, after the findings' draws); Holm
    over every comparison, the findings' and the values'; with more than two models, each value's ranking."""
    record = estimator.fit(findings, models, judge)
    if not facets:
        return record
    entries = list(record["findings"])
    index = count(len(findings))
    for entry, finding in zip(record["findings"], findings, strict=True):
        entry["facets"], entry["facets_skipped"] = cell_entries(
            lambda cell, restricted, i: estimator._one(cell, restricted, judge, i), finding, models, facets,
            index)
        entries += entry["facets"]
    tests = conclude_preferences(entries, list(models) if len(models) > 2 else None, estimator.alpha)
    shown = [e["verdict"] for e in entries if e.get("preferred")]
    record["verdict"] = "; ".join(shown) if shown else (
        f"the judge prefers no model on any finding or facet value (sign test, Holm over {tests} "
        f"test(s) at alpha = {estimator.alpha:g})")
    record["tests"] = tests
    return record

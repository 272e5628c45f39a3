"""Which model is closer to the reference on a finding, per value of a facet (a column of the user's manifest:
topic, seed, checkpoint...).

For a finding (a set of prompts) and a facet value v, each model keeps only its samples whose facet value is
v (a sample's value is its manifest row's), on the finding's prompts; both are scored against the reference
samples of those prompts and compared by :func:`.findings.stratified_permutation_test`, exactly as the whole
finding is (:class:`.findings.FindingQuality`). Holm runs over every reported test: the findings' and all
their facet values'. A value with no sample of some model on the finding's prompts is not tested; one whose
samples cannot be scored (k or fewer for precision, no gold answer) is listed with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...data.paired import PairedSet
from ...errors import InputError
from ...stats.two_sample import holm
from .findings import FindingQuality, holm_verdicts
from .judge import FindingPreference, _conclude


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
        tests = list(record["findings"])
        seed_offset = len(findings)
        for entry, finding in zip(record["findings"], findings, strict=True):
            entry["facets"], entry["facets_skipped"] = [], []
            for facet, label, restricted in facet_cells(finding, models, facets):
                seed_offset += 1
                try:
                    one = self._one(finding, restricted, reference, seed_offset)
                except InputError as exc:
                    entry["facets_skipped"].append({"facet": facet["name"], "value": label,
                                                    "reason": str(exc)})
                    continue
                one.update(facet=facet["name"], value=label, id=f"{finding['id']}, {facet['name']} = {label}")
                entry["facets"].append(one)
                tests.append(one)
        target = str(getattr(reference, "name", None) or "the reference")
        holm_verdicts(tests, alpha=self.alpha, closeness=self.closeness, target=target)
        closer = [t["verdict"] for t in tests if t["closer"]]
        record["verdict"] = ("; ".join(closer) if closer else
                             f"no finding or facet value shows one model closer to {target} "
                             f"({self.closeness}, Holm over {len(tests)} test(s) at alpha = {self.alpha:g})")
        record["tests"] = len(tests)
        return record


def facet_preference(estimator: FindingPreference, findings: Sequence[dict], models: dict[str, Any],
                     judge: Any, facets: Sequence[dict]) -> dict[str, Any]:
    """:class:`.judge.FindingPreference` with, under each finding, the judge's verdict per facet value: the
    pairs drawn from each model's samples of that value on the finding's prompts (the m-th value tested
    draws from ``default_rng([seed, len(findings) + m])``, after the findings' draws); Holm over every
    comparison, the findings' and the values'."""
    record = estimator.fit(findings, models, judge)
    names = list(models) if len(models) > 2 else None
    entries = list(record["findings"])
    draw = len(findings)
    for entry, finding in zip(record["findings"], findings, strict=True):
        entry["facets"] = []
        for facet, label, restricted in facet_cells(finding, models, facets):
            one = estimator._one({**finding, "id": f"{finding['id']}, {facet['name']} = {label}"}, restricted,
                                 judge, draw)
            draw += 1
            one.update(facet=facet["name"], value=label)
            entry["facets"].append(one)
            entries.append(one)
    tests = [c for e in entries for c in e["comparisons"]]
    for c, p_adj in zip(tests, holm([c["p_value"] for c in tests]) if tests else [], strict=True):
        c["p_adjusted"] = p_adj
        c["preferred"] = (None if p_adj > estimator.alpha or c["wins"] == c["losses"]
                          else c["a"] if c["wins"] > c["losses"] else c["b"])
    for e in entries:
        _conclude(e, names, estimator.alpha)
    shown = [e["verdict"] for e in entries if e.get("preferred")]
    record["verdict"] = "; ".join(shown) if shown else (
        f"the judge prefers no model on any finding or facet value (sign test, Holm over {len(tests)} "
        f"test(s) at alpha = {estimator.alpha:g})")
    record["tests"] = len(tests)
    return record

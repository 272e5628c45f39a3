"""Whether a model-driven cluster of one model (a Scendi cluster) is closer to the reference than the model's
other samples of the same prompts.

A cluster is a set of the model's samples (the rows of its top samples) and the prompts they answer. On those
prompts the model's samples split in two: the cluster's and the others. Both are scored against the
reference samples of the same prompts (:func:`.findings.finding_scores`: precision's indicator, or the
cosine to the nearest gold answer) and compared by
:func:`.stats.permutation.stratified_permutation_test` (labels exchanged within each prompt, so prompts of
different difficulty do not decide the verdict); Holm over the
clusters. With K models, :class:`.findings_rank.FindingRanking` ranks the models on each cluster's prompts
instead.

Per facet value (``facets``): the cluster's samples of that value against the model's other samples of that
value on the cluster's prompts (:func:`.findings_facets.facet_cells` on the two parts), Holm over the clusters
and their values together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import count
from typing import Any

import numpy as np

from ...data.paired import PairedSet
from ...errors import InputError
from .findings import FindingQuality, holm_verdicts, shared_prompts
from .findings_facets import cell_entries, facet_subsets, tested
from .judge import FindingPreference, conclude_preferences

#: the name of the model's samples outside the cluster, on the cluster's prompts
OTHERS = "other samples"

#: the two sides a cluster's verdict compares
SIDES = "the cluster and the model's other samples"


def cluster_masks(model: Any, rows: Sequence[int], prompts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(the cluster's rows, the model's other rows) among the model's samples of ``prompts``, as masks."""
    all_prompts = np.asarray(model.prompts, dtype=object)
    inside = np.zeros(len(all_prompts), dtype=bool)
    inside[np.asarray(rows, dtype=int)] = True
    on = np.isin(all_prompts, list(prompts))
    return inside & on, ~inside & on


def split_by_rows(model: Any, rows: Sequence[int], prompts: Sequence[str], name: str
                  ) -> tuple[PairedSet, PairedSet]:
    """(the cluster's samples, the model's other samples) on ``prompts``, as two paired sets."""
    all_prompts = np.asarray(model.prompts, dtype=object)
    pe, oe = np.asarray(model.prompt_embeddings), np.asarray(model.output_embeddings)
    outputs = getattr(model, "outputs", None)

    def subset(mask: np.ndarray, label: str) -> PairedSet:
        idx = np.flatnonzero(mask)
        return PairedSet(pe[idx], oe[idx], prompts=[str(p) for p in all_prompts[idx]],
                         outputs=None if outputs is None else [outputs[i] for i in idx], name=label)

    inside, others = cluster_masks(model, rows, prompts)
    return subset(inside, name), subset(others, OTHERS)


def cluster_parts(model: Any, finding: dict, facets: Sequence[dict]
                  ) -> tuple[dict[str, PairedSet], list[dict]]:
    """The cluster's samples and the model's other samples (by name: the cluster's id, :data:`OTHERS`), and
    ``facets`` (indexed by the model's rows, under its name) re-indexed for those two sets."""
    inside, others = split_by_rows(model, finding["rows"], finding["prompts"], finding["id"])
    mask_in, mask_out = cluster_masks(model, finding["rows"], finding["prompts"])
    parts = []
    for f in facets:  # (rows under the model's name, or under the facet's one set whatever its name)
        name = getattr(model, "name", "model")
        name = name if name in f["rows"] or len(f["rows"]) != 1 else next(iter(f["rows"]))
        parts += facet_subsets([f], {finding["id"]: (name, mask_in), OTHERS: (name, mask_out)})
    return {finding["id"]: inside, OTHERS: others}, parts


@dataclass(frozen=True)
class ClusterQuality(FindingQuality):
    """Per cluster of one model, whether its samples are closer to the reference than the model's other
    samples of the same prompts (module docstring); the options are :class:`.FindingQuality`'s.

    ``fit(findings, model, reference, facets=())``: ``findings`` a list of ``{'id', 'prompts', 'rows'}``
    (``ScendiResult.findings()``), ``model`` the paired set the clusters come from, ``reference`` the
    reference paired set, ``facets`` as in :class:`.findings_facets.FacetQuality` (rows under the model's
    name): each cluster's verdict per facet value too (``'facets'``, ``'facets_skipped'``). Clusters whose
    samples cannot be scored (too few, no gold answer of their prompts) are listed under ``'skipped'`` with
    the reason."""

    def fit(self, findings: Sequence[dict], model: Any, reference: Any,  # type: ignore[override]
            facets: Sequence[dict] = ()) -> dict[str, Any]:
        """The quality record (``{'closeness', ..., 'findings': [...], 'skipped': [...], 'verdict'}``)."""
        for name, s in {"model": model, "reference": reference}.items():
            if getattr(s, "prompts", None) is None:
                raise InputError(f"{name}: no prompt strings; a cluster's finding is a set of prompts")
        shared_prompts({getattr(model, "name", None) or "model": model}, reference)
        entries, skipped, tests = [], [], []
        index = count(len(findings))
        for i, f in enumerate(findings):
            pair, parts = cluster_parts(model, f, facets)
            try:
                entry = {**tested(self._one(f, pair, reference, i), SIDES), "rank": f.get("rank")}
            except InputError as exc:
                skipped.append({"id": f["id"], "reason": str(exc)})
                continue
            if facets:
                entry["facets"], entry["facets_skipped"] = cell_entries(
                    lambda cell, restricted, k: tested(self._one(cell, restricted, reference, k), SIDES), f,
                    pair, parts, index)
            entries.append(entry)
            tests += [entry, *entry.get("facets", [])]
        target = str(getattr(reference, "name", None) or "the reference")
        holm_verdicts(tests, alpha=self.alpha, closeness=self.closeness, target=target,
                      neither="neither the cluster nor the model's other samples")
        closer = [e["verdict"] for e in tests if e["closer"]]
        overall = ("; ".join(closer) if closer else
                   f"no cluster's samples differ from the model's other samples in closeness to {target} "
                   f"({self.closeness}, Holm over {len(tests)} test(s) at alpha = {self.alpha:g})")
        return {**self.get_params(), "reference": getattr(reference, "name", "reference"),
                "models": [getattr(model, "name", "model")], "compared": "cluster vs other samples",
                "findings": entries, "skipped": skipped, "tests": len(tests), "verdict": overall}


def cluster_preference(estimator: FindingPreference, findings: Sequence[dict], model: Any, judge: Any,
                       facets: Sequence[dict] = ()) -> dict[str, Any]:
    """Per cluster of one model, which a judge prefers: the cluster's samples or the model's other samples of
    the same prompts (:class:`.judge.FindingPreference` on each cluster, seed ``seed + i`` for cluster i;
    with ``facets``, the m-th value of cluster i draws from ``default_rng([seed + i, 1 + m, j])``, j its
    pair); Holm over the clusters and their values."""
    entries, tests = [], []
    for i, f in enumerate(findings):
        pair, parts = cluster_parts(model, f, facets)
        one = dataclasses.replace(estimator, seed=estimator.seed + i)
        entry = one.fit([f], pair, judge)["findings"][0]
        if facets:
            entry["facets"], entry["facets_skipped"] = cell_entries(
                lambda cell, restricted, k, one=one: one._one(cell, restricted, judge, k), f, pair, parts,
                count(1))
        entries.append(entry)
        tests += [entry, *entry.get("facets", [])]
    n = conclude_preferences(tests, None, estimator.alpha)
    shown = [e["verdict"] for e in tests if e["preferred"]]
    overall = "; ".join(shown) if shown else (
        f"the judge prefers neither a cluster's samples nor the model's other samples on any cluster (sign "
        f"test, Holm over {n} test(s) at alpha = {estimator.alpha:g})")
    return {**estimator.get_params(), "rubric": estimator.rubric_text,
            "models": [getattr(model, "name", "model")], "compared": "cluster vs other samples",
            "order": "both orders per pair", "findings": entries, "tests": n, "verdict": overall}

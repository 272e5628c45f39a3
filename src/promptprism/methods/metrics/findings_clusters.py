"""Whether a model-driven cluster of one model (a Scendi cluster) is closer to the reference than the model's
other samples of the same prompts.

A cluster is a set of the model's samples (the rows of its top samples) and the prompts they answer. On those
prompts the model's samples split in two: the cluster's and the others. Both are scored against the
reference samples of the same prompts (:func:`.findings.finding_scores`: precision's indicator, or the
cosine to the nearest gold answer) and compared by :func:`.findings.stratified_permutation_test` (labels
exchanged within each prompt, so prompts of different difficulty do not decide the verdict); Holm over the
clusters. With K models, :class:`.findings_rank.FindingRanking` ranks the models on each cluster's prompts
instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...data.paired import PairedSet
from ...errors import InputError
from ...stats.two_sample import holm
from .findings import FindingQuality, holm_verdicts
from .judge import FindingPreference, _conclude

#: the name of the model's samples outside the cluster, on the cluster's prompts
OTHERS = "other samples"


def split_by_rows(model: Any, rows: Sequence[int], prompts: Sequence[str], name: str
                  ) -> tuple[PairedSet, PairedSet]:
    """(the cluster's samples, the model's other samples) on ``prompts``, as two paired sets."""
    all_prompts = np.asarray(model.prompts, dtype=object)
    inside = np.zeros(len(all_prompts), dtype=bool)
    inside[np.asarray(rows, dtype=int)] = True
    on = np.isin(all_prompts, list(prompts))
    pe, oe = np.asarray(model.prompt_embeddings), np.asarray(model.output_embeddings)
    outputs = getattr(model, "outputs", None)

    def subset(mask: np.ndarray, label: str) -> PairedSet:
        idx = np.flatnonzero(mask)
        return PairedSet(pe[idx], oe[idx], prompts=[str(p) for p in all_prompts[idx]],
                         outputs=None if outputs is None else [outputs[i] for i in idx], name=label)

    return subset(inside & on, name), subset(~inside & on, OTHERS)


@dataclass(frozen=True)
class ClusterQuality(FindingQuality):
    """Per cluster of one model, whether its samples are closer to the reference than the model's other
    samples of the same prompts (module docstring); the options are :class:`.FindingQuality`'s.

    ``fit(findings, model, reference)``: ``findings`` a list of ``{'id', 'prompts', 'rows'}``
    (``ScendiResult.findings()``), ``model`` the paired set the clusters come from, ``reference`` the
    reference paired set. Clusters whose samples cannot be scored (too few, no gold answer of their
    prompts) are listed under ``'skipped'`` with the reason."""

    def fit(self, findings: Sequence[dict], model: Any, reference: Any) -> dict[str, Any]:  # type: ignore[override]
        """The quality record (``{'closeness', ..., 'findings': [...], 'skipped': [...], 'verdict'}``)."""
        for name, s in {"model": model, "reference": reference}.items():
            if getattr(s, "prompts", None) is None:
                raise InputError(f"{name}: no prompt strings; a cluster's finding is a set of prompts")
        entries, skipped = [], []
        for i, f in enumerate(findings):
            inside, others = split_by_rows(model, f["rows"], f["prompts"], f["id"])
            try:
                entry = self._one(f, {f["id"]: inside, OTHERS: others}, reference, i)
            except InputError as exc:
                skipped.append({"id": f["id"], "reason": str(exc)})
                continue
            entries.append({**entry, "rank": f.get("rank")})
        target = str(getattr(reference, "name", None) or "the reference")
        holm_verdicts(entries, alpha=self.alpha, closeness=self.closeness, target=target)
        closer = [e["verdict"] for e in entries if e["closer"]]
        overall = ("; ".join(closer) if closer else
                   f"no cluster's samples differ from the model's other samples in closeness to {target} "
                   f"({self.closeness}, Holm over {len(entries)} cluster(s) at alpha = {self.alpha:g})")
        return {**self.get_params(), "reference": getattr(reference, "name", "reference"),
                "models": [getattr(model, "name", "model")], "compared": "cluster vs other samples",
                "findings": entries, "skipped": skipped, "verdict": overall}


def cluster_preference(estimator: FindingPreference, findings: Sequence[dict], model: Any, judge: Any
                       ) -> dict[str, Any]:
    """Per cluster of one model, which a judge prefers: the cluster's samples or the model's other samples of
    the same prompts (:class:`.judge.FindingPreference` on each cluster, seed ``seed + i`` for cluster i;
    Holm over the clusters)."""
    entries = []
    for i, f in enumerate(findings):
        inside, others = split_by_rows(model, f["rows"], f["prompts"], f["id"])
        one = dataclasses.replace(estimator, seed=estimator.seed + i)
        entries.append(one.fit([f], {f["id"]: inside, OTHERS: others}, judge)["findings"][0])
    tests = [e["comparisons"][0] for e in entries]
    for c, p_adj in zip(tests, holm([c["p_value"] for c in tests]) if tests else [], strict=True):
        c["p_adjusted"] = p_adj
        c["preferred"] = (None if p_adj > estimator.alpha or c["wins"] == c["losses"]
                          else c["a"] if c["wins"] > c["losses"] else c["b"])
    for e in entries:
        _conclude(e, None, estimator.alpha)
    shown = [e["verdict"] for e in entries if e["preferred"]]
    overall = "; ".join(shown) if shown else (
        f"the judge prefers neither a cluster's samples nor the model's other samples on any cluster (sign "
        f"test, Holm over {len(tests)} test(s) at alpha = {estimator.alpha:g})")
    return {**estimator.get_params(), "rubric": estimator.rubric_text,
            "models": [getattr(model, "name", "model")], "compared": "cluster vs other samples",
            "order": "both orders per pair", "findings": entries, "verdict": overall}

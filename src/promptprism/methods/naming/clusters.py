"""Names for Scendi's model-driven clusters: what the model adds beyond the prompt, checked on held-out data.

A cluster is a top eigenvector of Lambda_I, the prompt-nullified covariance: its strongest samples vary in a
way the prompts do not predict. Side A is those samples; side B is the same model's other outputs for the
same prompts, so a name can only pass by describing what sets the cluster's outputs apart from the model's
other answers to the same prompts (:mod:`.contrast`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ...llm.conversation import ChatModel
from .contrast import NAMED, NamingOptions, Sample, name_contrast
from .judges import Judge, Namer, as_namer
from .modes import texts_of


def cluster_pools(cluster: Any, paired: Any) -> tuple[list[Sample], list[Sample]]:
    """Side A: the cluster's strongest samples; side B: the model's other outputs for the same prompts."""
    prompts, outputs = texts_of(paired, "scored")
    top = [s.index for s in cluster.top_samples]
    chosen = set(top)
    wanted = {prompts[i] for i in top}
    pool_a = [Sample(prompts[i], outputs[i], i) for i in top]
    pool_b = [Sample(p, o, i) for i, (p, o) in enumerate(zip(prompts, outputs, strict=True))
              if p in wanted and i not in chosen]
    return pool_a, pool_b


def describe_clusters(result: Any, paired: Any, *, namer: Namer | ChatModel, judge: Judge,
                      options: NamingOptions = NamingOptions()) -> dict:
    """Name each model-driven cluster of a Scendi ``result`` (the record stored as ``result.descriptions``:
    ``config``, one entry per cluster with the :class:`~.contrast.ContrastName` fields, ``notes``)."""
    entries = []
    for k, cluster in enumerate(result.clusters):
        pool_a, pool_b = cluster_pools(cluster, paired)
        outcome = name_contrast(pool_a, pool_b, namer=namer, judge=judge,
                                options=dataclasses.replace(options, seed=options.seed + 1000 * k))
        entries.append({"cluster": cluster.rank, "share": cluster.share, **outcome.to_dict()})
    named = [e["name"].lower() for e in entries if e["status"] == NAMED]
    notes = ["no model-driven cluster"] if not entries else []
    if len(set(named)) < len(named):
        notes.append("the same name was kept for several clusters: it does not tell them apart")
    config = {**dataclasses.asdict(options), "namer": as_namer(namer).model,
              "judge": getattr(judge, "name", type(judge).__name__)}
    return {"config": config, "clusters": entries, "notes": notes}

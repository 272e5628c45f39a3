"""Scendi's results: scores, clusters, intervals; saved as result.json."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..._version import __version__
from ...results import PerModelResult, Result


def _defined(value: float | None) -> bool:
    """A share that is a number (not None, not NaN)."""
    return value is not None and not math.isnan(value)


@dataclass(frozen=True)
class ClusterSample:
    """A sample aligned with a cluster direction: its row, prompt, output and projection score."""

    index: int
    prompt: str
    output: str | None
    score: float


@dataclass(frozen=True)
class Cluster:
    """One eigenvector of Lambda_I (model-driven) or C_II (unconditioned) and its top samples."""

    rank: int
    eigenvalue: float
    share: float  #: eigenvalue / trace of the matrix it comes from
    top_samples: list[ClusterSample]

    @classmethod
    def from_dict(cls, d: dict) -> Cluster:
        """Rebuild from the dict written into result.json."""
        return cls(rank=d["rank"], eigenvalue=d["eigenvalue"], share=d["share"],
                   top_samples=[ClusterSample(**s) for s in d["top_samples"]])


@dataclass(frozen=True)
class ScendiResult(Result):
    """What :meth:`Scendi.fit` returns; ``save(dir)`` writes ``dir/result.json``."""

    kind = "scendi"
    nested = {"clusters": Cluster, "clusters_unconditioned": Cluster}

    name: str
    scendi: float  #: exp(Scendi_I): model-driven diversity (at most vendi)
    scendi_prompt: float  #: exp(Scendi_T): prompt-driven diversity (at most vendi)
    scendi_order2: float  #: order-2 (RKE-style) Scendi of Lambda_I
    scendi_prompt_order2: float  #: order-2 Scendi of Lambda_T
    vendi: float  #: Vendi of the outputs (C_II)
    rke: float  #: RKE of the outputs (C_II)
    #: Tr(Lambda_I), in [0, 1] (clipped: see ``clipped``); None (null in result.json) when the outputs have
    #: no diversity (C_II spans one direction: nothing to split, ``warnings`` says so; :meth:`summary` NaN)
    model_share: float
    prompt_share: float  #: Tr(Lambda_T) (= 1 - model_share), in [0, 1]; NaN when model_share is None
    entropies: dict  #: the entropies in nats behind the scores
    clusters: list[Cluster]  #: top eigenvectors of Lambda_I (model-driven clusters)
    clusters_unconditioned: list[Cluster]  #: top eigenvectors of C_II (prompt-unaware clusters)
    eigenvalues: dict  #: 'model' (Lambda_I), 'prompt' (Lambda_T), 'output' (C_II): descending, truncated
    n: int
    prompt_rank: int  #: numerical rank of C_TT
    seed: int
    config: dict
    warnings: list[str] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    version: str = __version__
    #: {metric: {'low', 'high'}} percentile intervals of the prompt bootstrap (empty when it was off)
    intervals: dict = field(default_factory=dict)
    #: {'replicates', 'level', 'seed', 'resample', 'interval', 'validity'} (empty when the bootstrap was off;
    #: ``replicates``: the refits behind the intervals, B bootstrap draws or one per prompt jackknifed)
    bootstrap: dict = field(default_factory=dict)
    #: how Gamma* was estimated: 'in-sample' or 'cross-fit (k folds, ridge r)'
    gamma_estimator: str = "in-sample"
    #: verified names of the clusters (``promptprism describe``; ``methods.naming.describe_clusters``)
    descriptions: dict = field(default_factory=dict)
    #: against a reference set (``diversity --reference``): the ``metrics.SetMetrics`` record as a dict
    #: (precision, recall, density, coverage, fd, kid, mmd2, clip_score, intervals, notes)
    reference_metrics: dict = field(default_factory=dict)
    #: the fields the estimator left outside their range ({field: {'raw', 'reported', 'range'}}: shares in
    #: [0, 1], scendi and scendi_prompt at most vendi; :mod:`.ranges`), empty when none
    clipped: dict = field(default_factory=dict)
    #: on each model-driven cluster, whether its samples are closer to a reference than the model's other
    #: samples of the same prompts, and a judge's preference (``promptprism quality``)
    quality: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Undefined shares (no output diversity; NaN from the fit, null from result.json) in one form:
        ``model_share`` None (the headline check before saving skips None and refuses NaN as an overflow),
        ``prompt_share`` NaN; :meth:`summary` gives NaN for both, which ``check --fail-on`` refuses as not a
        number, and every table prints as '–'."""
        if not _defined(self.model_share) or not _defined(self.prompt_share):
            object.__setattr__(self, "model_share", None)
            object.__setattr__(self, "prompt_share", float("nan"))

    def findings(self) -> list[dict]:
        """The model-driven clusters as findings of the quality verdicts: ``{'id': 'cluster 1', 'rank',
        'prompts', 'rows'}`` with the rows of the cluster's top samples and their distinct prompts."""
        out = []
        for c in self.clusters:
            prompts = list(dict.fromkeys(s.prompt for s in c.top_samples if s.prompt is not None))
            if prompts:
                out.append({"id": f"cluster {c.rank}", "rank": c.rank, "prompts": prompts,
                            "rows": [s.index for s in c.top_samples]})
        return out

    def summary(self) -> dict:
        """The scores of one row of the comparison table."""
        return {"name": self.name, "scendi": self.scendi, "scendi_prompt": self.scendi_prompt,
                "scendi_order2": self.scendi_order2, "vendi": self.vendi, "rke": self.rke,
                "model_share": self.model_share if self.model_share is not None else math.nan}

    row = summary  #: the row of :meth:`ScendiComparison.table`


@dataclass(frozen=True)
class ScendiComparison(PerModelResult):
    """Several models' :class:`ScendiResult`, one per input, in the order given (``models``)."""

    kind = "scendi_comparison"
    nested = {"models": ScendiResult}

    seed: int
    version: str = __version__
    #: pairwise differences {'a', 'b', 'metric', 'difference', 'low', 'high', 'separated', 'method'}
    differences: list = field(default_factory=list)
    #: per metric, the models ranked with honest ties (``methods.rankings.diversity_rankings``)
    rankings: dict = field(default_factory=dict)
    #: on the prompts of each model's clusters, the models ranked by closeness to a reference and by a
    #: judge's preference (``promptprism quality``)
    quality: dict = field(default_factory=dict)

    def findings(self) -> list[dict]:
        """Every model's clusters (:meth:`ScendiResult.findings`) as findings of the quality verdicts, with
        ``'model'`` set and the id ``'<model> cluster <rank>'``."""
        return [{**f, "id": f"{m.name} {f['id']}", "model": m.name}
                for m in self.models for f in m.findings()]

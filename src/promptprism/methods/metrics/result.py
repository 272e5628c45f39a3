"""The reference-set metrics' result: one record per generated set, saved as result.json."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ..._version import __version__
from ...results import PerModelResult

#: the headline numbers of a set, in table order
HEADLINE = ("precision", "recall", "density", "coverage", "fd", "kid", "mmd2", "clip_score")


@dataclass(frozen=True)
class SetMetrics:
    """One generated set against the reference: the metrics (None where refused, with a note saying why),
    their intervals, the per-prompt breakdown and the alignment details."""

    kind: ClassVar[str] = "set_metrics"  #: (not a result of its own: for the finiteness check of the CLI)

    name: str
    n: int
    precision: float
    recall: float
    density: float
    coverage: float
    fd: float | None
    kid: float
    kid_std: float  #: standard deviation of the subset values (as torchmetrics reports it)
    mmd2: float
    clip_score: float | None = None  #: mean of w max(cos, 0) (Hessel et al.), None without a joint space
    cosine: float | None = None  #: mean raw prompt-output cosine
    #: {metric: {'low', 'high'}}: bootstrap percentile intervals; KID's and MMD's: normal intervals from
    #: the U-statistic's projection variance (:func:`.kid.mmd2_interval`)
    intervals: dict = field(default_factory=dict)
    #: {'holds', 'not_calibrated' [metrics], 'reason'}: whether the intervals lie where the simulation grid
    #: measured 0.92-0.98 coverage (:func:`.calibration.interval_validity`); {} without intervals
    interval_validity: dict = field(default_factory=dict)
    #: {'prompts', 'truncated', 'context_length'} when prompt token counts were known, else {}
    truncation: dict = field(default_factory=dict)
    per_prompt: list = field(default_factory=list)  #: one dict per prompt group with enough samples
    notes: list[str] = field(default_factory=list)

    def row(self) -> dict:
        """The headline numbers of the comparison table."""
        return {"name": self.name, "n": self.n, **{k: getattr(self, k) for k in HEADLINE}}

    @classmethod
    def from_dict(cls, d: dict) -> SetMetrics:
        """Rebuild from the dict written into result.json."""
        return cls(**d)


@dataclass(frozen=True)
class MetricsResult(PerModelResult):
    """Generated sets against one reference set: fidelity, diversity, distances and alignment."""

    kind = "metrics"
    nested = {"models": SetMetrics}

    reference: str
    n_reference: int
    dim: int
    seed: int
    config: dict
    notes: list[str] = field(default_factory=list)
    version: str = __version__

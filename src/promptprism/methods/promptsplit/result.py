"""PromptSplit's result: modes, their samples and prompts, significance, as frozen dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath

from ..._version import __version__
from ...results import Result


@dataclass(frozen=True)
class SampleScore:
    """One sample's score psi(s) . v on a mode."""

    set: str  #: 'test' or 'reference'
    index: int  #: row in that set
    prompt: str
    output: str | None
    score: float


@dataclass(frozen=True)
class PromptLoading:
    """How strongly one prompt loads on a mode.

    ``contribution`` = (1/n) sum_{i in p} s_i^2 - (eta/m) sum_{j in p} s_j^2: the prompt's share of the
    eigenvalue (the contributions of all prompts add up to it exactly). ``mean_score`` is the mean score of
    the prompt's samples in the set the mode favours (test for positive modes, reference for negative ones).
    """

    prompt: str
    contribution: float
    mean_score: float | None
    n_test: int
    n_reference: int


@dataclass(frozen=True)
class Mode:
    """One eigen-mode of Lambda: its eigenvalue, the side it favours, its strongest samples and prompts.

    ``p_value`` / ``significant`` come from the permutation test (None when it was off); ``sample_note``
    says why a sample list mixes score signs, when it does.
    """

    rank: int  #: 1 = largest |eigenvalue| of its sign
    eigenvalue: float
    side: str  #: 'test' (positive eigenvalue) or 'reference' (negative)
    top_samples: list[SampleScore]  #: strongest samples of the favoured set
    top_samples_other: list[SampleScore]  #: strongest samples of the other set, for contrast
    top_prompts: list[PromptLoading]
    p_value: float | None = None
    significant: bool | None = None
    sample_note: str | None = None

    @classmethod
    def from_dict(cls, d: dict) -> Mode:
        """Rebuild a mode from its ``result.json`` form (fields added later may be absent)."""
        return cls(rank=d["rank"], eigenvalue=d["eigenvalue"], side=d["side"],
                   top_samples=[SampleScore(**s) for s in d["top_samples"]],
                   top_samples_other=[SampleScore(**s) for s in d["top_samples_other"]],
                   top_prompts=[PromptLoading(**p) for p in d["top_prompts"]],
                   p_value=d.get("p_value"), significant=d.get("significant"),
                   sample_note=d.get("sample_note"))


@dataclass(frozen=True)
class PromptSplitResult(Result):
    """What :meth:`PromptSplit.fit` returns; ``save(dir)`` writes ``dir/result.json``.

    ``eigenvalues`` holds what ``eigenvalues_scope`` says: the whole computed spectrum ("all": dense exact
    solver, random-feature routes) or only the extreme eigenvalues the solver computed ("top k of each sign").
    ``significance`` is the permutation test's record (empty when it was off), ``prompt_ranking`` is built
    from the modes ``ranking_basis`` names, and ``bandwidth_scan`` records a ``'stable'`` bandwidth search.
    """

    kind = "promptsplit"
    nested = {"modes": Mode}

    eigenvalues: list[float]  #: descending; see ``eigenvalues_scope``
    modes: list[Mode]  #: positive modes (rank 1, 2, ...) then negative modes (rank 1, 2, ...)
    distance: float  #: ||Lambda||_F^2, the PromptSplit distance
    method: str  #: the route actually used
    n_test: int
    n_reference: int
    seed: int
    config: dict  #: every option, with bandwidths resolved to numbers
    prompt_ranking: list[dict] = field(default_factory=list)  #: prompts by disagreement, strongest first
    timings: dict = field(default_factory=dict)
    version: str = __version__
    significance: dict = field(default_factory=dict)
    identical: bool = False  #: test and reference hold the same pairs
    ranking_basis: str = "all reported modes (no significance test)"
    eigenvalues_scope: str = "all"
    bandwidth_scan: dict = field(default_factory=dict)
    #: verified names of the modes (``promptprism describe``; ``methods.naming.describe_modes``)
    descriptions: dict = field(default_factory=dict)
    #: the sample map (a seeded subsample in 2-D, each point's mode), computed once when the result is
    #: written (:func:`.layout.with_layout`); {} when none was computed
    layout: dict = field(default_factory=dict)
    #: which model is closer to a reference on each finding (``promptprism quality``;
    #: ``methods.metrics.FindingQuality``)
    quality: dict = field(default_factory=dict)
    #: the fit's caveats, each said as a warning too (a test that cannot reject at alpha, prompts in one
    #: set only, prompt strings naming several prompt embeddings, eigenvalues beyond their range)
    notes: list = field(default_factory=list)
    #: every prompt's d_p where ``prompt_ranking`` keeps the strongest (the report's facet shares over all
    #: prompts): ``{'prompts_sha256', 'captured', 'values'}``, values in the sorted prompt strings' order
    #: (:func:`.summary.every_prompt_disagreement`); {} without a ranking, without prompt strings or above
    #: 100,000 prompts
    prompt_disagreement: dict = field(default_factory=dict)

    @property
    def positive_modes(self) -> list[Mode]:
        """Modes the test set produces more (positive eigenvalues), strongest first."""
        return [m for m in self.modes if m.side == "test"]

    @property
    def negative_modes(self) -> list[Mode]:
        """Modes the reference set produces more (negative eigenvalues), strongest first."""
        return [m for m in self.modes if m.side == "reference"]

    @property
    def verdict(self) -> str:
        """One sentence on what the comparison found ('' when no test ran and the sets differ)."""
        if self.significance:
            return str(self.significance.get("verdict", ""))
        same = "test and reference hold the same pairs: there is no difference to find"
        return same if self.identical else ""

    def given_names(self) -> tuple[str, str] | None:
        """(test, reference): the names ``--names`` or ``NAME=PATH`` gave the two sets (``config['names']``),
        or None. Results written before that record: inferred from ``config``, None when it holds where the
        sets were read (the file of the recorded input; without a record, a value that looks like a path) or
        the side's own word."""
        given = self.config.get("names")
        if isinstance(given, list) and len(given) == 2 and all(isinstance(n, str) for n in given):
            return given[0], given[1]
        names = []
        for side in ("test", "reference"):
            value = self.config.get(side)
            if not isinstance(value, str) or value in ("", side):
                return None
            record = self.inputs.get(side) or {}
            where = record.get("absolute") or record.get("path")
            looks_like_path = "/" in value or "\\" in value or PurePath(value).suffix != ""
            if (PurePath(value).name == PurePath(where).name) if isinstance(where, str) else looks_like_path:
                return None
            names.append(value)
        return names[0], names[1]

    def findings(self, carried: float = 0.9) -> list[dict]:
        """The modes as findings for the quality verdicts: ``{'id': 'mode +1', 'side', 'rank', 'prompts'}``
        with the prompts that carry the mode: the fewest of its top prompts whose contributions (of the
        eigenvalue's sign) add up to ``carried`` of the eigenvalue (all of them when they do not). The
        significant modes when the test ran, else every reported mode."""
        tested = bool(self.significance)
        out = []
        for m in self.modes:
            if tested and not m.significant:
                continue
            loads = sorted(((pl.contribution * m.eigenvalue, pl.prompt) for pl in m.top_prompts
                            if pl.contribution is not None and pl.contribution * m.eigenvalue > 0),
                           reverse=True)
            prompts, total = [], 0.0
            for weight, prompt in loads:  # (weight = contribution x eigenvalue > 0: |contribution| |lambda|)
                prompts.append(prompt)
                total += weight
                if total >= carried * m.eigenvalue**2:
                    break
            if prompts:
                out.append({"id": f"mode {'+' if m.side == 'test' else '-'}{m.rank}", "side": m.side,
                            "rank": m.rank, "prompts": prompts})
        return out

    def name_of(self, mode: Mode) -> str | None:
        """The verified name of ``mode``, when :func:`~promptprism.methods.naming.describe_modes` kept one."""
        for entry in self.descriptions.get("modes", []):
            if entry["side"] == mode.side and entry["rank"] == mode.rank and entry["status"] == "named":
                return entry["name"]
        return None

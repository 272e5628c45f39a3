"""K-way PromptSplit's result: the K x K distance matrix with significance, every comparison as a
:class:`.PromptSplitResult`, and per model the prompts and samples where it deviates from the rest."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._gc import collection_paused
from ..._version import __version__
from ..._words import and_join
from ...results import Result
from ...stats.intervals import format_p
from .result import Mode, PromptSplitResult, SampleScore
from .summary import SummaryOptions, summarise
from .verdicts import empty_record


@dataclass(frozen=True)
class KWayResult(Result):
    """What :meth:`KWaySplit.fit` returns.

    ``distances[a][b]`` = ||C_a - eta C_b||_F^2 (the PromptSplit distance of the pair with a as test);
    ``pair_p_values[a][b]``: the smallest family-wise p-value among the pair's modes (None on the diagonal or
    without a test; with eta != 1 only a < b is tested, a as test: [b][a] is None). ``pairs``: one
    :class:`.PromptSplitResult` per pair a < b (a = its test side); ``one_vs_rest``: one per set against the
    pooled others (empty for K = 2, where the rest of one set is the other: the pair). ``deviations``: per
    set, its significant modes against the rest, the prompts they come from, its strongest samples against the
    others', the sets it differs from significantly (``separated_from``), the prompts on which it is the one
    that deviates (``attributed_prompts``, :func:`attribute_prompts`: a deviation of one set also shows,
    diluted, in every other set's comparison with a rest that holds it) and ``deviates``: significant against
    the rest and another set, with at least half of its disagreement with the rest on prompts attributed to it
    (:func:`_mark_deviating`).
    """

    kind = "promptsplit_kway"
    nested = {"pairs": PromptSplitResult, "one_vs_rest": PromptSplitResult}

    names: list[str]
    n_samples: list[int]
    method: str
    seed: int
    config: dict
    distances: list[list[float]]
    rest_distances: list[float]
    pair_p_values: list[list[float | None]]
    pairs: list[PromptSplitResult]
    one_vs_rest: list[PromptSplitResult]
    deviations: list[dict]
    significance: dict = field(default_factory=dict)
    verdict: str = ""
    timings: dict = field(default_factory=dict)
    version: str = __version__
    #: verified names of the deviations (``promptprism describe``; ``methods.naming.describe_deviations``)
    descriptions: dict = field(default_factory=dict)
    #: which model is closer to a reference / preferred by a judge on each finding (``promptprism quality``)
    quality: dict = field(default_factory=dict)
    #: the 'stable' bandwidth rule's scans by key (as :class:`.PromptSplitResult`'s; empty without it)
    bandwidth_scan: dict = field(default_factory=dict)
    #: the fit's caveats, each said as a warning too (as :class:`.PromptSplitResult`'s)
    notes: list = field(default_factory=list)

    def findings(self, carried: float = 0.9) -> list[dict]:
        """The findings of the quality verdicts, one per comparison with its significant modes together (the
        union of the prompts that carry them, :meth:`.PromptSplitResult.findings`): each deviating model
        against the rest (id ``'<model> vs rest'``, ``'model'`` set), then each significantly different
        pair (``'<a> vs <b>'``)."""
        rest = [] if len(self.names) == 2 else [(f"{d['model']} vs rest", self.against_rest(d["model"]),
                                                  d["model"]) for d in self.deviations if d["deviates"]]
        pairs = [(f"{a} vs {b}", self.pair(a, b), None) for a, b in self.significant_pairs]
        out = []
        for label, r, model in rest + pairs:
            modes = r.findings(carried)
            prompts = list(dict.fromkeys(p for f in modes for p in f["prompts"]))
            if prompts:
                out.append({"id": label, "model": model, "modes": [f["id"] for f in modes],
                            "prompts": prompts})
        return out

    def pair(self, a: str, b: str) -> PromptSplitResult:
        """The comparison of sets ``a`` and ``b`` (by name; it is stored with the earlier set as test)."""
        for r in self.pairs:
            if {r.config["test"], r.config["reference"]} == {a, b}:
                return r
        raise KeyError(f"no pair ({a!r}, {b!r}); sets: {', '.join(self.names)}")

    def against_rest(self, name: str) -> PromptSplitResult:
        """Set ``name`` against the pooled others (for K = 2: the pair)."""
        if len(self.names) == 2:
            return self.pairs[0]
        return self.one_vs_rest[self.names.index(name)]

    @property
    def significant_pairs(self) -> list[tuple[str, str]]:
        """The pairs with at least one family-wise significant mode."""
        alpha = self.significance.get("alpha")
        k = len(self.names)
        return [(self.names[a], self.names[b]) for a in range(k) for b in range(a + 1, k)
                if alpha is not None and self.pair_p_values[a][b] is not None
                and self.pair_p_values[a][b] <= alpha]


@dataclass
class ComparisonFit:
    """What one fit of the comparison engine found for K-way's result: the sets, their sizes, per comparison
    its spectrum, per-side score statistics and distance, and the K x K distance matrix."""

    sets: list
    counts: np.ndarray
    spectra: dict
    stats: dict
    distances: dict
    matrix: np.ndarray


def _comparison_result(est: Any, fit: ComparisonFit, c: tuple, names: list[str], prompt_names: list[str],
                       test: tuple | None, method: str, config: dict) -> PromptSplitResult:
    """One comparison of the fit as a :class:`.PromptSplitResult` (the pairwise result's fields)."""
    spec = fit.spectra[c]
    first, second = c
    ref_set = _pooled(fit.sets, second)
    sets = {"test": fit.sets[first], "reference": ref_set}
    record, p_values = test if test is not None else ({}, None)
    alpha = float(est.alpha) if p_values is not None else None
    brief = len(second) == 1 and len(fit.sets) > 2 and est.pair_details == "leading"
    modes, ranking, basis, _ = summarise(sets=sets, eigenvalues=spec.mode_eigenvalues, stats=fit.stats[c],
                                      names=prompt_names,
                                      options=SummaryOptions(est.eta, est.top_prompts, est.rank_prompts_by),
                                      p_values=p_values, alpha=alpha,
                                      detailed=leading_modes(spec.mode_eigenvalues, p_values, alpha)
                                      if brief else None)
    reference = names[second[0]] if len(second) == 1 else "rest (" + ", ".join(names[b] for b in second) + ")"
    cfg = {**{k: v for k, v in config.items() if k != "sets"}, "test": names[first], "reference": reference,
           "names": [names[first], reference]}  # (the comparison's two sides, as split's config names them)
    return PromptSplitResult(
        eigenvalues=[float(v) for v in spec.eigenvalues], modes=modes, distance=float(fit.distances[c]),
        method=method, n_test=len(sets["test"]), n_reference=len(ref_set), seed=est.seed, config=cfg,
        prompt_ranking=ranking, significance=record, ranking_basis=basis, eigenvalues_scope=spec.scope)


def leading_modes(eigenvalues: np.ndarray, p_values: list | None, alpha: float | None) -> list[bool]:
    """Per mode, whether a K-way pair lists its samples and prompts under ``pair_details='leading'``: the
    largest mode of each sign, and every significant mode (p <= ``alpha``)."""
    vals = np.asarray(eigenvalues, dtype=np.float64)
    out = [bool(p_values is not None and alpha is not None and p_values[j] is not None
                and p_values[j] <= alpha) for j in range(vals.size)]
    for sign in (vals > 0, vals < 0):
        if sign.any():
            out[int(np.argmax(np.where(sign, np.abs(vals), -np.inf)))] = True
    return out


def _pooled(sets: list, members: tuple) -> Any:
    if len(members) == 1:
        return sets[members[0]]
    from ...data.paired import PairedSet

    parts = [sets[b] for b in members]
    strings = {a: None if any(getattr(s, a) is None for s in parts)
               else sum((getattr(s, a) for s in parts), []) for a in ("prompts", "outputs")}
    return PairedSet(np.concatenate([s.prompt_embeddings for s in parts]),
                     np.concatenate([s.output_embeddings for s in parts]), strings["prompts"],
                     strings["outputs"], name="rest")


def _deviation(k: int, comparison: PromptSplitResult, c: tuple, names: list[str], counts: np.ndarray,
               top_prompts: int) -> dict:
    """Set k's significant modes against the rest, their prompts, and its strongest samples against the
    others' (on the strongest significant mode of its side; samples of the rest named by their set)."""
    first, second = c
    side = "test" if k == first else "reference"
    others = second if k == first else (first,)
    sig = [m for m in comparison.modes if m.significant]
    more = [m for m in sig if m.side == side]
    tested = bool(comparison.significance) and any(m.p_value is not None for m in comparison.modes)
    out = {"model": names[k], "against": comparison.config["reference" if side == "test" else "test"],
           "tested": tested, "significant_modes": len(sig), "modes_more": len(more),
           "modes_less": len(sig) - len(more),
           "prompts": comparison.prompt_ranking[:top_prompts] if sig else [], "top_samples": [],
           "others_samples": []}
    if more:
        mode = more[0]
        out["mode"] = {"rank": mode.rank, "eigenvalue": mode.eigenvalue, "p_value": mode.p_value}
        out["top_samples"] = [_named(s, [k], counts, names) for s in mode.top_samples]
        out["others_samples"] = [_named(s, list(others), counts, names) for s in mode.top_samples_other]
    return out


def _named(s: SampleScore, members: list[int], counts: np.ndarray, names: list[str]) -> dict:
    """A sample of a (possibly pooled) side as {model, index in that model, prompt, output, score}."""
    offsets = np.cumsum([0] + [int(counts[b]) for b in members])
    j = int(np.searchsorted(offsets, s.index, side="right") - 1)
    return {"model": names[members[j]], "index": int(s.index - offsets[j]), "prompt": s.prompt,
            "output": s.output, "score": s.score}


def assemble(*, est: Any, fit: ComparisonFit, names: list[str], prompt_names: list[str], family: list,
             n_pairs: int, tests: dict, common: dict, method: str, config: dict, timings: dict) -> KWayResult:
    """The K-way result from a finished fit and its test (``tests``: comparison -> (record, p-values), or
    None for a comparison without a mode to test; ``common``: what the comparisons' tests share)."""
    k = len(names)
    for c, test in tests.items():
        if test is None:
            tests[c] = (empty_record(permutations=config["permutations"], alpha=float(est.alpha),
                                     seed=est.seed, identical=False), None)
        else:
            test[0]["subspace"] = dict(common["subspace"])
    with collection_paused():  # (each comparison's modes, samples and prompts: many small objects)
        results = {c: _comparison_result(est, fit, c, names, prompt_names, tests.get(c), method, config)
                   for c in family}
    pair_p: list[list[float | None]] = [[None] * k for _ in range(k)]
    tested: dict[frozenset, float | None] = {}
    for (a, (b,)) in family[:n_pairs]:
        ps = [m.p_value for m in results[(a, (b,))].modes if m.p_value is not None]
        pair_p[a][b] = tested[frozenset((a, b))] = min(ps) if ps else (1.0 if tests else None)
        if float(est.eta) == 1.0:  # (with eta != 1, C_b - eta C_a is another operator: not tested)
            pair_p[b][a] = pair_p[a][b]
    rest = family[n_pairs:]
    own = {a: (rest[a] if rest else family[0]) for a in range(k)}
    alpha = float(est.alpha)
    deviations = [_deviation(a, results[own[a]], own[a], names, fit.counts, est.top_prompts)
                  for a in range(k)]
    attributed = (attribute_prompts([results[c].prompt_ranking for c in rest]) if rest
                  else [[] for _ in range(k)])
    for a, d in enumerate(deviations):
        seen = {b: tested[frozenset((a, b))] for b in range(k) if b != a}
        d["separated_from"] = [names[b] for b, p in seen.items() if p is not None and p <= alpha]
        d["attributed_prompts"] = [{"prompt": x["prompt"], "disagreement": x["disagreement"],
                                    "share": x["share"]} for x in attributed[a]]
    _mark_deviating(deviations, names)
    rest_distances = [float(fit.distances[rest[a]]) if rest else float(fit.matrix[a][1 - a])
                      for a in range(k)]
    significance = {} if not tests else {
        "test": "permutation", "scheme": "within-prompt", "permutations": config["permutations"],
        "alpha": alpha, "seed": est.seed, "comparisons": len(family),
        "correction": next(iter(tests.values()))[0].get("correction"),
        **{key: common[key] for key in ("statistic", "aggregation") if key in common}}
    result = KWayResult(
        names=names, n_samples=[int(c) for c in fit.counts], method=method, seed=est.seed, config=config,
        distances=np.asarray(fit.matrix).tolist(), rest_distances=rest_distances, pair_p_values=pair_p,
        pairs=[results[c] for c in family[:n_pairs]], one_vs_rest=[results[c] for c in rest],
        deviations=deviations, significance=significance, timings=timings)
    return dataclasses.replace(result, verdict=kway_verdict(result))


def attribute_prompts(rankings: list[list[dict]]) -> list[list[dict]]:
    """Per set, the prompts on which *it* deviates: from each set's one-vs-rest prompt ranking (significant
    modes; rows with 'prompt', 'disagreement', 'share'), a prompt goes to the set whose ranking gives it the
    largest disagreement d_p, among the rankings where its share is above that ranking's average (1 / its
    length).

    Why the largest: a deviation of set k on prompt p enters every other set's comparison with a rest that
    holds k at 1/(K-1) of its size, so its eigenvalue there is ~1/(K-1) and d_p ~1/(K-1)^2 of k's own.
    """
    best: dict[str, tuple[float, int]] = {}
    for k, rows in enumerate(rankings):
        floor = 1.0 / len(rows) if rows else 0.0
        for row in rows:
            d = float(row["disagreement"])
            if row["share"] > floor and d > best.get(row["prompt"], (0.0, -1))[0]:
                best[row["prompt"]] = (d, k)
    return [[row for row in rows if best.get(row["prompt"], (0.0, -1))[1] == k]
            for k, rows in enumerate(rankings)]


#: a set deviates when at least this share of its disagreement with the rest lies on prompts attributed to it
DEVIATION_SHARE = 0.5


def _mark_deviating(deviations: list[dict], names: list[str]) -> None:
    """``deviates``: significant against the rest and some other set, and (K >= 3) at least
    :data:`DEVIATION_SHARE` of its disagreement with the rest on prompts attributed to it (a set that only
    reflects another's deviation keeps a small share: that deviation's prompts go to the other set)."""
    for d in deviations:
        d["attributed_share"] = float(sum(x["share"] for x in d["attributed_prompts"]))
        d["deviates"] = bool(d["significant_modes"]) and bool(d["separated_from"]) and (
            len(names) == 2 or d["attributed_share"] >= DEVIATION_SHARE)


def kway_verdict(r: KWayResult) -> str:
    """One plain sentence: which pairs differ and which models deviate from the rest, family-wise."""
    if not r.significance:
        return "no significance test ran (permutations = 0): the distances alone say nothing about noise"
    s = r.significance
    k = len(r.names)
    n_pairs = k * (k - 1) // 2
    sig_pairs = r.significant_pairs
    head = (f"{len(sig_pairs)} of {n_pairs} pairs differ significantly at alpha = {s['alpha']:g} "
            f"(family-wise over every mode of {s['comparisons']} comparisons, {s['permutations']} "
            "permutations)")
    agg = s.get("aggregation") or {}
    if not sig_pairs and agg.get("p") is not None and agg["p"] <= s["alpha"]:
        found = [kern["name"] for kern in agg.get("kernels", []) if kern.get("n_significant")]
        p_text = format_p(agg["p"], s["alpha"])
        head = (f"a significant difference among the {k} sets at alpha = {s['alpha']:g} by the test "
                f"aggregated over {len(agg.get('kernels', []))} kernels (family-wise, p = {p_text})"
                + (f": modes found by the {and_join(found)} kernels" if found else "")
                + f"; no pair's mode of the fitted kernel is significant alone ({n_pairs} pairs, "
                f"{s['permutations']} permutations)")
    if k == 2:
        return head
    deviating = [d for d in r.deviations if d["deviates"]]
    if deviating:
        parts = [f"{d['model']} on {len(d['attributed_prompts'])} prompt"
                 f"{'s' if len(d['attributed_prompts']) != 1 else ''} "
                 f"(top: {d['attributed_prompts'][0]['prompt']!r})" for d in deviating]
        head += "; deviating from the rest: " + ", ".join(parts)
    else:
        head += "; no prompt is attributed to a model deviating from the rest"
    return head


__all__ = ["ComparisonFit", "KWayResult", "Mode", "assemble", "attribute_prompts", "kway_verdict",
           "leading_modes"]

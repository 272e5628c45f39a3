"""Which model is closer to the reference where they differ: reference-set metrics restricted to a finding.

A finding (a PromptSplit mode, a deviating model of a K-way comparison) is a set of prompts. On those prompts,
each model's samples are scored against the reference samples of the same prompts:

* ``precision``: the per-sample indicator of Kynkäänniemi et al.'s precision, 1[exists i: |Y_j - X_i| <
  r_k(X_i)] (:func:`.prdc.neighbour_indicators`), for images and any embedding;
* ``gold``: the cosine similarity of a sample to the nearest reference output of its own prompt (a reference
  of gold answers, for texts);
* ``exact``: 1.0 when a sample's text equals a reference output of its own prompt once both are normalised
  (case, surrounding white space and punctuation; :func:`normalise_answer`), else 0.0 (short gold answers:
  a number, a name, a symbol).

With ``metrics=True`` each entry also holds the reference-set metrics restricted to the finding
(:func:`finding_metrics`: precision, recall, density, coverage and FD of each model's samples on the
finding's prompts against the reference samples of those prompts, with :class:`.ReferenceMetrics`'s
intervals and notes, e.g. where FD's sizes do not allow a full-rank covariance).

Which model is closer is tested by exchanging the model labels within each prompt
(:func:`.stats.permutation.stratified_permutation_test`: the weighted difference of the within-prompt means
over the prompts both models hold, studentised by its per-prompt Welch variance): under "equally close on
every prompt" the labels are exchangeable within a prompt, so the test is exact for the binary precision
indicator and for any score whose distribution per prompt is the same for both models, and its level holds
approximately for equal means of unequal spreads. Each model's mean is its side of that statistic, with a
bootstrap interval over those prompts. Several findings: Holm over their p-values.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..._params import POSITIVE_INT, PROBABILITY, SEED, Estimator, Options
from ..._params import Interval as Between
from ...errors import InputError, OptionError
from ...kernels.gram import unit_rows
from ...stats.intervals import Interval, format_p
from ...stats.permutation import stratified_mean, stratified_permutation_test, stratum_weights
from ...stats.resampling import MIN_BOOTSTRAP_CLUSTERS, percentile_interval, prompt_draws
from ...stats.two_sample import holm
from .prdc import neighbour_indicators

CLOSENESS = ("precision", "gold", "exact")


def precision_scores(generated: np.ndarray, reference: np.ndarray, k: int = 5) -> np.ndarray:
    """Per generated sample, 1.0 when it lies inside some reference sample's k-NN ball (precision's
    indicator, Kynkäänniemi et al. 2019 eq. 1-2), else 0.0."""
    return neighbour_indicators(reference, generated, k).in_real_manifold.astype(np.float64)


def gold_scores(generated: np.ndarray, prompts: Sequence[str], reference: np.ndarray,
                reference_prompts: Sequence[str]) -> np.ndarray:
    """Per generated sample, the largest cosine similarity to a reference output of the same prompt (NaN
    where the reference has none)."""
    ref = unit_rows(reference)
    gen = unit_rows(generated)
    out = np.full(gen.shape[0], np.nan)
    ref_prompts = np.asarray(reference_prompts, dtype=object)
    gen_prompts = np.asarray(prompts, dtype=object)
    for p in np.unique(gen_prompts):
        rows, refs = np.flatnonzero(gen_prompts == p), np.flatnonzero(ref_prompts == p)
        if refs.size:
            out[rows] = (gen[rows] @ ref[refs].T).max(axis=1)
    return out


def normalise_answer(text: object) -> str:
    """An answer as exact match compares it: case-folded, white space collapsed, surrounding punctuation and
    quotes removed."""
    return " ".join(str(text).casefold().split()).strip(" .,;:!?\"'`()[]")


def exact_scores(outputs: Sequence[object], prompts: Sequence[str], reference_outputs: Sequence[object],
                 reference_prompts: Sequence[str]) -> np.ndarray:
    """Per generated answer, 1.0 when it equals (:func:`normalise_answer`) a reference answer of the same
    prompt, else 0.0 (NaN where the reference has none)."""
    gold: dict[str, set[str]] = {}
    for p, o in zip(reference_prompts, reference_outputs, strict=True):
        gold.setdefault(str(p), set()).add(normalise_answer(o))
    return np.array([np.nan if str(p) not in gold else float(normalise_answer(o) in gold[str(p)])
                     for p, o in zip(prompts, outputs, strict=True)])


def prompt_bootstrap(scores: np.ndarray, strata: np.ndarray, *, replicates: int, level: float, seed: int,
                     weights: dict | None = None) -> Interval:
    """A percentile interval of the mean score, prompts resampled with their samples; on fewer than
    :data:`.stats.resampling.MIN_BOOTSTRAP_CLUSTERS` prompts (where resampling prompts hardly varies: two
    give three values), the samples resampled within each prompt instead. ``weights`` ({prompt: w}, the
    prompts two models share: :func:`.stats.permutation.stratum_weights`): the interval of the weighted mean
    of the per-prompt means over those prompts (:func:`.stats.permutation.stratified_mean`)."""
    scores, strata = np.asarray(scores, dtype=np.float64), np.asarray(strata)
    if weights is not None:
        keep = np.isin(strata, list(weights))
        scores, strata = scores[keep], strata[keep]
    keys, inverse = np.unique(strata, return_inverse=True)
    counts = np.bincount(inverse, minlength=keys.size).astype(np.float64)
    w = (np.array([weights[k] for k in keys.tolist()], dtype=np.float64) if weights is not None
         else counts)  # (a prompt's mean at its sample count: the plain mean)
    if keys.size < MIN_BOOTSTRAP_CLUSTERS:
        rng = np.random.default_rng(seed)
        means = np.zeros(replicates)
        for s in range(keys.size):
            values = scores[inverse == s]
            means += w[s] * values[rng.integers(0, values.size, size=(replicates, values.size))].mean(axis=1)
        means /= w.sum()
        what = f"samples within {'its one prompt' if keys.size == 1 else f'each of its {keys.size} prompts'}"
    else:  # (the prompts' draw counts of every bootstrap over prompts: stats.resampling.prompt_draws)
        prompt_means = np.bincount(inverse, weights=scores, minlength=keys.size) / counts
        drawn = prompt_draws(keys.size, replicates, seed).astype(np.float64)
        means = drawn @ (w * prompt_means) / (drawn @ w)
        what = "prompts"
    lo, hi = percentile_interval(means, level, omit_nan=False)
    return Interval(float(lo), float(hi), level, f"bootstrap over {what} (percentile)")


def shared_prompts(models: dict[str, Any], reference: Any) -> set:
    """The prompts every model and the reference hold; an InputError where a set has no prompt strings or
    the reference shares none with the models (closeness to real samples of other prompts says nothing)."""
    for name, s in {**models, "reference": reference}.items():
        if getattr(s, "prompts", None) is None:
            raise InputError(f"{name}: no prompt strings; a finding is a set of prompts")
    among = set.intersection(*(set(s.prompts) for s in models.values()))
    if not among:
        raise InputError(f"{' and '.join(models)} share no prompt (prompts are matched as exact strings): "
                         "the within-prompt test compares prompts both hold")
    shared = among & set(reference.prompts)
    if not shared:
        raise InputError(f"{getattr(reference, 'name', None) or 'the reference'}: shares no prompt with the "
                         "models (prompts are matched as exact strings); closeness needs the same prompts")
    return shared


def finding_scores(finding_prompts: Sequence[str], models: dict[str, Any], reference: Any, *, closeness: str,
                   k: int) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], str | None]:
    """Each model's (scores, prompt of each sample) on the finding's prompts, and a note when the reference
    had to be taken whole (too few of its samples on those prompts)."""
    wanted = set(finding_prompts)
    ref_prompts = np.asarray(reference.prompts, dtype=object)
    ref_rows = np.flatnonzero(np.isin(ref_prompts, list(wanted)))
    note = None
    if closeness == "precision" and ref_rows.size <= k:
        note = (f"the reference has {ref_rows.size} sample(s) on these prompts, {k} or fewer (nearest_k); "
                "scored against the whole reference (closeness to the reference overall, not to its "
                "samples of these prompts)")
        ref_rows = np.arange(len(reference))
    ref_out = np.asarray(reference.output_embeddings, dtype=np.float64)[ref_rows]
    out = {}
    for name, s in models.items():
        prompts = np.asarray(s.prompts, dtype=object)
        rows = np.flatnonzero(np.isin(prompts, list(wanted)))
        gen = np.asarray(s.output_embeddings, dtype=np.float64)[rows]
        if rows.size <= k and closeness == "precision":
            raise InputError(f"{name}: {rows.size} samples on the finding's prompts; precision needs more "
                             f"than nearest_k = {k}")
        if closeness == "exact":
            scores = exact_scores(_texts(s, name)[rows], prompts[rows], _texts(reference, "the reference")[
                ref_rows], ref_prompts[ref_rows])
        else:
            scores = (precision_scores(gen, ref_out, k) if closeness == "precision"
                      else gold_scores(gen, prompts[rows], ref_out, ref_prompts[ref_rows]))
        keep = np.isfinite(scores)
        out[name] = (scores[keep], prompts[rows][keep])
    return out, note


#: the note of a finding (or facet cell) on which no prompt holds scored samples of both models
def no_shared_prompt(sides: str = "the models") -> str:
    """Why a finding (or facet value) is not tested: ``sides`` hold no prompt with scored samples of both."""
    return (f"{sides} share no prompt with scored samples here: the within-prompt test has nothing to "
            "compare, so no verdict (and no place in Holm's family)")


def pair_test(scored: dict[str, tuple[np.ndarray, np.ndarray]], a: str, b: str, *, permutations: int,
              seed: int) -> tuple[float, float]:
    """(mean difference a - b, p) of :func:`~promptprism.stats.permutation.stratified_permutation_test` on
    ``scored[name] = (scores, prompts)``, run with the two models in name order: the same draws, and the same
    p, whichever order the models were given in."""
    first, second = sorted((a, b))
    diff, p = stratified_permutation_test(*scored[first], *scored[second], permutations=permutations,
                                          seed=seed)
    return (diff if first == a else -diff), p


def model_closeness(scores: np.ndarray, strata: np.ndarray, shared: dict, *, replicates: int, level: float,
                    seed: int) -> dict[str, Any]:
    """A model's entry: its mean closeness over the prompts both models hold, each prompt's mean at its
    weight (:func:`.stats.permutation.stratified_mean`: the two entries' means differ by the test's
    statistic; on balanced samples, the plain mean), its samples and the bootstrap interval over those
    prompts; the plain mean over all its samples beside it."""
    if not shared:
        iv = prompt_bootstrap(scores, strata, replicates=replicates, level=level, seed=seed)
        mean = float(np.mean(scores))
    else:
        iv = prompt_bootstrap(scores, strata, replicates=replicates, level=level, seed=seed, weights=shared)
        mean = stratified_mean(scores, strata, shared)
    used = int(np.isin(np.asarray(strata), list(shared)).sum()) if shared else int(np.size(scores))
    return {"mean": mean, "n": int(np.size(scores)), "n_shared": used, "pooled_mean": float(np.mean(scores)),
            "interval": iv.to_dict()}


#: the reference-set metrics kept per finding (``metrics=True``)
FINDING_METRICS = ("precision", "recall", "density", "coverage", "fd")


def finding_rows(finding_prompts: Sequence[str], data: Any) -> np.ndarray:
    """The rows of ``data`` (a paired set) whose prompt is one of the finding's."""
    return np.flatnonzero(np.isin(np.asarray(data.prompts, dtype=object), list(set(finding_prompts))))


def finding_metrics(finding_prompts: Sequence[str], models: dict[str, Any], reference: Any, *, k: int,
                    bootstrap: int, confidence: float, seed: int) -> dict[str, dict]:
    """Per model, precision / recall / density / coverage (Kynkäänniemi et al. 2019, Naeem et al. 2020) and
    FD of its samples on the finding's prompts against the reference samples of those prompts (the whole
    reference when it has ``k`` or fewer there), by :class:`.ReferenceMetrics` (its bootstrap intervals
    over prompts, its notes); a model with ``k`` or fewer samples there is left out."""
    from .estimator import ReferenceMetrics

    ref_rows = finding_rows(finding_prompts, reference)
    if ref_rows.size <= k:
        ref_rows = np.arange(len(reference.prompts))
    kept = {n: finding_rows(finding_prompts, s) for n, s in models.items()}
    kept = {n: rows for n, rows in kept.items() if rows.size > k}
    if not kept:
        return {}
    result = ReferenceMetrics(nearest_k=k, bootstrap=bootstrap, confidence=confidence, seed=seed,
                              alignment="off").fit([_rows_of(models[n], rows) for n, rows in kept.items()],
                                                   _rows_of(reference, ref_rows), names=list(kept))
    return {m.name: {"n": m.n, **{x: getattr(m, x) for x in FINDING_METRICS},
                     "intervals": {x: m.intervals[x] for x in FINDING_METRICS if x in m.intervals},
                     "notes": list(m.notes)} for m in result.models}


def _rows_of(data: Any, rows: np.ndarray) -> Any:
    from ...data.paired import PairedSet

    return PairedSet(np.asarray(data.prompt_embeddings)[rows], np.asarray(data.output_embeddings)[rows],
                     prompts=[data.prompts[i] for i in rows], name=getattr(data, "name", "set"))


def _texts(data: Any, name: str) -> np.ndarray:
    outputs = getattr(data, "outputs", None)
    if outputs is None:
        raise InputError(f"{name}: no output texts (an embeddings file); exact match compares the answers' "
                         "texts")
    return np.asarray([str(o) for o in outputs], dtype=object)


@dataclass(frozen=True)
class FindingQuality(Estimator):
    """Per finding, which of two models is closer to a reference (module docstring): each model's mean
    closeness with a bootstrap interval over prompts, their difference, the stratified permutation p-value
    (Holm over the findings) and one sentence.

    ``fit(findings, models, reference)``: ``findings`` a list of ``{'id', 'prompts'}`` (e.g.
    ``PromptSplitResult.findings()``), ``models`` the two paired sets by name (the finding's favoured model
    first is not required), ``reference`` the reference paired set (its outputs are the real samples or gold
    answers; its prompts match the models')."""

    closeness: str = "precision"
    nearest_k: int = 5
    alpha: float = 0.05
    permutations: int = 2000
    bootstrap: int = 500
    confidence: float = 0.95
    seed: int = 0
    metrics: bool = False

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "closeness": [Options(CLOSENESS)], "nearest_k": [POSITIVE_INT], "alpha": [PROBABILITY],
        "permutations": [Between(numbers.Integral, 99, 10**6)],
        "bootstrap": [Between(numbers.Integral, 50, 10**5)],
        "confidence": [PROBABILITY], "seed": [SEED], "metrics": ["boolean"]}

    def fit(self, findings: Sequence[dict], models: dict[str, Any], reference: Any) -> dict[str, Any]:
        """The quality record (``{'closeness', ..., 'findings': [...], 'verdict'}``)."""
        if len(models) != 2:
            raise OptionError(f"models: two sets to compare, got {len(models)}", parameter="models")
        shared_prompts(models, reference)
        entries = [self._one(f, models, reference, i) for i, f in enumerate(findings)]
        target = str(getattr(reference, "name", None) or "the reference")
        holm_verdicts(entries, alpha=self.alpha, closeness=self.closeness, target=target)
        closer = [e for e in entries if e["closer"]]
        overall = ("; ".join(e["verdict"] for e in closer) if closer else
                   f"no finding shows one model closer to {target} ({self.closeness}, Holm over "
                   f"{sum(e['p_value'] is not None for e in entries)} finding(s) at alpha = {self.alpha:g})")
        return {**self.get_params(), "reference": getattr(reference, "name", "reference"),
                "models": list(models), "findings": entries, "verdict": overall}

    def _one(self, finding: dict, models: dict[str, Any], reference: Any, i: int) -> dict[str, Any]:
        scored, note = finding_scores(finding["prompts"], models, reference, closeness=self.closeness,
                                      k=self.nearest_k)
        (na, (a, pa)), (nb, (b, pb)) = scored.items()
        if a.size == 0 or b.size == 0:
            raise InputError(f"finding {finding['id']}: no scored samples of {na if a.size == 0 else nb} on "
                             "its prompts (gold needs reference outputs of the same prompts)")
        diff, p = pair_test(scored, na, nb, permutations=self.permutations, seed=self.seed + i)
        shared = stratum_weights(pa, pb)
        return {"id": finding["id"], "prompts": len(set(finding["prompts"])),
                "example_prompts": list(finding["prompts"])[:3], "shared_prompts": len(shared),
                "models": {n: model_closeness(s, q, shared, replicates=self.bootstrap, level=self.confidence,
                                              seed=self.seed + i) for n, (s, q) in scored.items()},
                "difference": None if np.isnan(diff) else diff, "p_value": None if np.isnan(p) else p,
                "leader": None if np.isnan(diff) else (na if diff > 0 else nb), "note": note,
                **self._metrics(finding, models, reference, i)}

    def _metrics(self, finding: dict, models: dict[str, Any], reference: Any, i: int) -> dict[str, Any]:
        """``{'metrics': finding_metrics(...)}`` with ``metrics=True`` (seed ``seed + i``), else {}."""
        if not self.metrics:
            return {}
        return {"metrics": finding_metrics(finding["prompts"], models, reference, k=self.nearest_k,
                                           bootstrap=self.bootstrap, confidence=self.confidence,
                                           seed=self.seed + i)}


def holm_verdicts(entries: Sequence[dict], *, alpha: float, closeness: str, target: str,
                  neither: str = "neither model") -> None:
    """Holm over the entries' p-values (those tested); each entry gets ``p_adjusted``, ``closer`` (its
    leader when the adjusted p is at most ``alpha``) and its sentence (``neither``: its subject without a
    verdict)."""
    tested = [e for e in entries if e["p_value"] is not None]  # (no shared prompt: untestable, left out)
    adjusted = dict(zip(map(id, tested), holm([e["p_value"] for e in tested]) if tested else [], strict=True))
    for entry in entries:
        p_adj = adjusted.get(id(entry))
        entry["p_adjusted"] = p_adj
        entry["closer"] = entry["leader"] if p_adj is not None and p_adj <= alpha else None
        entry["verdict"] = _sentence(entry, closeness, alpha, target, neither)


def _sentence(entry: dict, closeness: str, alpha: float, target: str, neither: str) -> str:
    names = list(entry["models"])
    means = {n: entry["models"][n]["mean"] for n in names}
    held = entry.get("shared_prompts", entry["prompts"])
    where = (f"on the {entry['prompts']} prompts of {entry['id']}" if not held or held >= entry["prompts"]
             else f"on the {held} of the {entry['prompts']} prompts of {entry['id']} both hold")
    if entry["p_adjusted"] is None:
        return f"{where}, not tested: the models share no prompt with scored samples there"
    if entry["closer"] is None:
        return (f"{where}, {neither} is closer to {target} ({closeness} {means[names[0]]:.2f} vs "
                f"{means[names[1]]:.2f}, p = {format_p(entry['p_adjusted'], alpha)} > {alpha:g})")
    other = names[1] if entry["closer"] == names[0] else names[0]
    closer = entry["closer"]
    return (f"{where}, {closer} is closer to {target}: {closeness} {means[closer]:.2f} "
            f"vs {means[other]:.2f} for {other} (p = {format_p(entry['p_adjusted'], alpha)}, Holm)")

"""Turn the spectrum and the per-mode score statistics into modes (samples, prompts) and a prompt ranking."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...data.paired import PairedSet
from ...stats.modes import ModeStats
from .core import prompt_contributions, prompt_disagreement
from .result import Mode, PromptLoading, SampleScore

SIDES = ("test", "reference")
MIXED_SIGNS = ("the lists hold the samples with the largest |score| on this mode; a negative score is a "
               "sample at the mode's opposite end, listed because few samples load on the mode itself")


@dataclass(frozen=True)
class SummaryOptions:
    """What the mode summaries list: samples per mode, prompts per mode, and how prompts are ranked."""

    eta: float
    top_prompts: int
    rank_prompts_by: str


def summarise(*, sets: dict[str, PairedSet], eigenvalues: np.ndarray, stats: dict[str, ModeStats],
              names: Sequence[str], options: SummaryOptions, p_values: Sequence[float | None] | None = None,
              alpha: float | None = None, detailed: Sequence[bool] | None = None
              ) -> tuple[list[Mode], list[dict], str, dict]:
    """Per mode: top samples of each side and prompt loadings; the prompt ranking; the ranking's basis;
    every prompt's d_p (:func:`every_prompt_disagreement`; {} without a ranking).

    The prompt ranking scores prompt p by d_p = sum_j lambda_j c_pj (:func:`prompt_disagreement`) over the
    significant modes when ``p_values`` are given (over every reported mode otherwise). ``detailed``: per
    mode, whether it lists its samples and prompts (None: every mode; the others keep their eigenvalue,
    side and p-value, and empty lists).
    """
    k = len(eigenvalues)
    n, m = len(sets["test"]), len(sets["reference"])
    (top_t, (sums_t, counts_t)) = stats["test"].compute()
    (top_r, (sums_r, counts_r)) = stats["reference"].compute()
    top = {"test": top_t, "reference": top_r}
    sums = {"test": (sums_t, counts_t), "reference": (sums_r, counts_r)}
    contributions = prompt_contributions(sums_t[:, k:], sums_r[:, k:], n, m, options.eta)  # prompts x modes
    present = (counts_t + counts_r) > 0
    modes: list[Mode] = []
    counters = {"test": 0, "reference": 0}
    for j, lam in enumerate(float(v) for v in eigenvalues):
        side = "test" if lam > 0 else "reference"
        other = "reference" if side == "test" else "test"
        counters[side] += 1
        # orient the eigenvector so that the strongest sample of the favoured side scores positive
        ids, scores = top[side]
        sign = 1.0 if scores.shape[0] == 0 or scores[0, j] >= 0 else -1.0
        contribution = contributions[:, j]
        fav_sum, fav_count = sums[side][0][:, j] * sign, sums[side][1]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_score = np.where(fav_count > 0, fav_sum / np.maximum(fav_count, 1), np.nan)
        if options.rank_prompts_by == "contribution":
            key = contribution if side == "test" else -contribution
        else:
            key = np.nan_to_num(mean_score, nan=-np.inf)
        order = (strongest(key, options.top_prompts, where=present).tolist()
                 if detailed is None or detailed[j] else [])
        at = np.asarray(order, dtype=np.int64)
        loadings = [PromptLoading(prompt=names[p], contribution=c, mean_score=None if ms != ms else ms,
                                  n_test=int(nt), n_reference=int(nr))  # (ms != ms: nan)
                    for p, c, ms, nt, nr in zip(order, contribution[at].tolist(), mean_score[at].tolist(),
                                               counts_t[at].tolist(), counts_r[at].tolist(), strict=True)]
        lists = {s: _samples(sets[s], s, top[s], j, sign) if detailed is None or detailed[j] else []
                 for s in SIDES}
        mixed = any(len({x.score > 0 for x in lists[s] if x.score != 0}) > 1 for s in SIDES)
        p = None if p_values is None else p_values[j]
        modes.append(Mode(rank=counters[side], eigenvalue=lam, side=side, top_samples=lists[side],
                          top_samples_other=lists[other], top_prompts=loadings,
                          p_value=None if p is None else float(p),
                          significant=None if p is None or alpha is None else bool(p <= alpha),
                          sample_note=MIXED_SIGNS if mixed else None))
    if p_values is None:
        use, basis = np.ones(k, dtype=bool), "all reported modes (no significance test)"
    else:
        use = np.array([m.significant for m in modes], dtype=bool)
        basis = "significant modes" if use.any() else "none: no mode is significant"
    if not use.any():
        return modes, [], basis, {}
    used = np.asarray(eigenvalues)[use], contributions[:, use]
    ranking = prompt_ranking(eigenvalues=used[0], contributions=used[1], names=names,
                             counts=(counts_t, counts_r), limit=max(100, options.top_prompts))
    strings = all(sets[s].prompts is not None for s in SIDES)  # (what a reader matches prompts by)
    every = every_prompt_disagreement(*used, names=names, present=counts_t + counts_r > 0) if strings else {}
    return modes, ranking, basis, every


#: every prompt's d_p is stored with the result up to this many prompts (about 20 bytes each)
EVERY_PROMPT_MAX = 100_000


def every_prompt_disagreement(eigenvalues: np.ndarray, contributions: np.ndarray, *, names: Sequence[str],
                              present: np.ndarray) -> dict:
    """d_p (:func:`.core.prompt_disagreement`) of every prompt either set holds, for what reads the result
    with its inputs (the report's facet shares over all prompts, where ``prompt_ranking`` keeps the
    strongest): ``{'values'}`` in the order of the prompt strings sorted, ``prompts_sha256`` of that order
    (:func:`~promptprism.provenance.prompts_digest`), ``captured`` = sum_j lambda_j^2 (a prompt's share is
    d_p / captured); {} above :data:`EVERY_PROMPT_MAX` prompts (:func:`summarise`: and when the sets hold no
    prompt strings)."""
    from ...provenance import prompts_digest

    held = [str(names[p]) for p in np.flatnonzero(present)]
    if len(held) > EVERY_PROMPT_MAX:
        return {}
    d = prompt_disagreement(eigenvalues, contributions)[np.flatnonzero(present)]
    order = sorted(range(len(held)), key=held.__getitem__)
    return {"prompts_sha256": prompts_digest([held[i] for i in order]),
            "captured": float(np.sum(np.asarray(eigenvalues, dtype=np.float64) ** 2)),
            "values": [float(f"{d[i]:.6g}") for i in order]}


def prompt_ranking(*, eigenvalues: np.ndarray, contributions: np.ndarray, names: Sequence[str],
                   counts: tuple[np.ndarray, np.ndarray], limit: int) -> list[dict]:
    """Prompts by disagreement d_p (:func:`prompt_disagreement`), strongest first, with their share of
    sum_j lambda_j^2 and their sample counts; prompts absent from both sets are left out."""
    disagreement = prompt_disagreement(eigenvalues, contributions)
    captured = float(np.sum(np.asarray(eigenvalues) ** 2))
    counts_t, counts_r = counts
    order = strongest(disagreement, limit, where=(counts_t + counts_r) > 0)
    return [{"prompt": names[p], "disagreement": float(disagreement[p]),
             "share": float(disagreement[p] / captured) if captured > 0 else 0.0,
             "n_test": int(counts_t[p]), "n_reference": int(counts_r[p])}
            for p in order.tolist()]


def strongest(key: np.ndarray, count: int, *, where: np.ndarray) -> np.ndarray:
    """Indices of the ``count`` largest ``key`` values among those ``where`` is true, largest first, ties
    by smaller index (a partial selection, then a sort of the candidates only)."""
    candidates = np.flatnonzero(where)
    values = key[candidates]
    if count <= 0:
        return candidates[:0]
    if count < candidates.size:
        at = candidates.size - count
        kth = np.partition(np.where(np.isnan(values), -np.inf, values), at)[at]
        keep = (values >= kth) | np.isnan(values)  # ties with the k-th stay candidates; nan sorts last
        candidates, values = candidates[keep], values[keep]
    return candidates[np.lexsort((candidates, -values))][:count]


def _samples(ps: PairedSet, side: str, top: tuple[np.ndarray, np.ndarray], j: int, sign: float
             ) -> list[SampleScore]:
    ids, scores = top  # (as Python numbers first: numpy scalars cost a conversion each)
    return [SampleScore(set=side, index=i, prompt=ps.prompt_label(i), output=ps.output_label(i), score=sc)
            for i, sc in zip(ids[:, j].tolist(), (sign * scores[:, j]).tolist(), strict=True)]

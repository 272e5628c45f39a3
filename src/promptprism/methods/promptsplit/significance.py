"""Permutation test of PromptSplit's modes: is a mode more than sampling noise?

H0: test and reference pairs come from the same joint distribution (within prompt groups: for every prompt
the two models' outputs are exchangeable). Under H0 the test/reference labels can be exchanged: within each
prompt group when both sets share their prompts (``scheme='within-prompt'``: the prompts' own mix is kept),
over all samples otherwise (``'pooled'``). Relabelling changes only the signed weights of
Lambda = Psi^T D Psi (eq. 2), never the joint Gram matrix G = Psi Psi^T or the random features, so nothing is
refitted: with a factor F (F F^T = G, or the features themselves), the permuted spectra are those of
F^T diag(w_k) F for a weight matrix W (N x K), computed for all K permutations together by
:func:`~promptprism.stats.batched_eigen.weighted_factor_extremes`.

Family-wise error over modes (both signs together) is controlled by the max-statistic step-down procedure
(Westfall & Young 1993): each sign's |eigenvalues| are put on one scale by the median of that sign's
largest |eigenvalue| over the K + 1 labellings; the modes are tested in decreasing order of that scaled
statistic, each against the permutation distribution of the largest scaled permuted eigenvalue over the
signs that still have untested modes (:func:`~promptprism.stats.permutation.step_down_pvalues`, which says
why the largest, not the j-th);
p-values are add-one, p = (1 + #{null >= observed}) / (1 + K), made monotone along the order. Under the
complete null the family-wise error is at most alpha.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...array_ops import blas_limits, blas_thread_count, blas_threads_for
from ...backend import array_namespace
from ...stats.batched_eigen import (
    DENSE_BATCH_RANK,
    principal_factor,
    weighted_factor_extremes,
    weighted_gram_extremes,
)
from ...stats.permutation import labelling_statistic, min_p_aggregate, step_down_scales
from ...stats.subspace_spectra import factor_shared, lanczos_subspace, subspace_extremes
from ...stats.subspaces import column_shares, exact_factor, leading_rank, operand_trace
from .relabel import (  # noqa: F401 (the relabellings, named here too)
    SELECT_MAX_GROUPS,
    permuted_labels,
    test_labellings,
)
from .verdicts import CORRECTION, empty_record, verdict  # noqa: F401 (the test's records, named here)

SCHEMES = ("within-prompt", "pooled")
#: permutations when ``permutations=None``: the exact route, and the random-feature routes
DEFAULT_PERMUTATIONS = {"exact": 200, "rff": 100, "sketch": 100}
#: the default of PromptSplit's ``null_samples``: above this many samples (n + m) the test runs on a seeded
#: subsample of this size (:func:`.comparisons.null_rows`)
NULL_MAX_SAMPLES = 20_000
#: the statistic (:func:`principal_operand`): uncompressed on at most FULL_MAX_ROWS rows (from an exact
#: factor P P^T = G up to FULL_DENSE_RANK columns, else Lanczos over the operand); above, a leading principal
#: subspace of NULL_RANK directions doubled until it holds NULL_ENERGY of tr G (at most NULL_MAX_RANK); short
#: of that, uncompressed again on at most FALLBACK_MAX_ROWS rows (its Lanczos costs about as much as, or less
#: than, the cap's dense solves there)
FULL_MAX_ROWS, FULL_DENSE_RANK = 1000, 384
NULL_RANK, NULL_MAX_RANK, NULL_ENERGY, FALLBACK_MAX_ROWS = 128, 256, 0.99, 1500


def statistic_text(subspace: dict) -> str:
    """The ``statistic``: from the ``subspace`` record :func:`principal_operand` (or a route) filled."""
    rank = subspace.get("rank")
    if subspace.get("full", True):
        where = (f"the principal subspace that holds all of the pooled samples' Gram matrix (rank {rank})"
                 if subspace.get("factor") else "every direction")
        return (f"the extreme eigenvalues of Lambda over {where}: the uncompressed statistic (at most "
                f"{FULL_MAX_ROWS:,} samples tested, an operator that narrow, or at most "
                f"{FALLBACK_MAX_ROWS:,} samples whose {NULL_MAX_RANK} leading directions hold less than "
                f"{NULL_ENERGY:.1%} of the energy)")
    return (f"the extreme eigenvalues of Lambda restricted to a leading principal subspace of the pooled "
            f"samples of rank {rank}, holding {subspace.get('energy', 0.0):.2%} of their energy (trace), the "
            f"same for every labelling: the least of {NULL_RANK}, {2 * NULL_RANK}, ... (at most "
            f"{NULL_MAX_RANK}) that holds {NULL_ENERGY:.1%} (exact route: a seeded Nystrom approximation of "
            "the joint Gram matrix; random-feature routes: the leading eigenvectors of the pooled feature "
            "second moment of all samples; the kernel family: Nystrom from seeded landmark columns)")


#: relabellings drawn before the first look of the sequential (curtailed) rule (:func:`next_look` places the
#: others)
LOOK = 10
STOPPING_RULE = ("curtailed (futility only): relabellings are drawn in blocks, the first look after 10, "
                 "each later one where the exceedances seen so far say a stop is likely (at least twice as "
                 "many drawn each time; all K at once when a stop is unlikely before the end), and at all K; "
                 "at each look the test stops once h = floor(alpha (K + 1)) of them are at least as extreme "
                 "as the observed "
                 "labelling (aggregated over the kernel family when there is one): its p-value "
                 "(1 + h) / (1 + K) can no longer reach alpha. It stops only to accept, so it rejects only "
                 "where the K-permutation test would reject on the same draws, and the family-wise level "
                 "holds")


def next_look(drawn: int, exceedances: int, permutations: int, h: int, look: int = LOOK) -> int:
    """Relabellings drawn by the next look of the curtailed rule, ``drawn`` having been drawn so far with
    ``exceedances`` (< ``h``) at least as extreme as the observed labelling: ``look`` first; then, at the
    smoothed exceedance rate (e + 1) / (L + 2), the draws expected to bring the h - e exceedances still
    needed, at least as many again as drawn; all K when twice that expectation reaches K (a stop is then
    unlikely to save much: each look costs a pass over the test's operand, ~30 relabellings' work on a
    Lanczos factor). Where the looks fall never changes the decision (the rule only stops to accept)."""
    if drawn <= 0:
        return min(permutations, look)
    expected = (h - exceedances) * (drawn + 2) / (exceedances + 1)
    if drawn + 2 * expected >= permutations:
        return permutations
    return min(permutations, drawn + max(drawn, int(np.ceil(expected))))


def shared_prompt_cover(labels_test: np.ndarray, labels_ref: np.ndarray) -> tuple[int, float]:
    """(prompts seen by one set only, the share of all samples whose prompt both sets saw)."""
    shared = np.intersect1d(labels_test, labels_ref)
    covered = np.isin(labels_test, shared).sum() + np.isin(labels_ref, shared).sum()
    seen = np.union1d(labels_test, labels_ref).size
    return int(seen - shared.size), float(covered / max(labels_test.size + labels_ref.size, 1))


def choose_scheme(labels_test: np.ndarray, labels_ref: np.ndarray) -> str:
    """'within-prompt' when prompts seen in both sets hold at least half of all samples, else 'pooled'."""
    return "within-prompt" if shared_prompt_cover(labels_test, labels_ref)[1] >= 0.5 else "pooled"


def unshared_prompts_note(labels_test: np.ndarray, labels_ref: np.ndarray, *, tested: bool = True
                          ) -> str | None:
    """What the test (``tested``: one runs) and the ranking do with prompts only one set saw (None when
    every prompt is shared)."""
    alone, cover = shared_prompt_cover(labels_test, labels_ref)
    if not alone:
        return None
    what = f"{alone} prompt(s) appear in one set only ({1 - cover:.0%} of the samples): "
    ranking = "the prompt ranking compares a prompt one model never answered with nothing"
    if not tested:
        return what + ranking + "; check that both sets hold the same prompt strings"
    if cover < 0.5:
        return what + ("the permutation test relabels samples over all prompts (scheme 'pooled'), not within "
                       "each prompt, and the prompt ranking sets prompts one model never answered against "
                       "each other; check that both sets hold the same prompt strings")
    return what + ("the permutation test leaves their samples on their side (within a prompt one set never "
                   "answered there is nothing to exchange) and " + ranking)


def family_thresholds(null_pos: np.ndarray, null_neg: np.ndarray, observed: tuple, alpha: float) -> dict:
    """|eigenvalue| above which a mode of each sign is significant at the first step (the chart's line):
    the (1 - alpha) quantile of the per-permutation max over signs of the scaled largest |eigenvalue|
    (:func:`~promptprism.stats.permutation.step_down_scales`), mapped back to each sign's scale."""
    null = {"test": np.asarray(null_pos, float)[:, 0], "reference": np.asarray(null_neg, float)[:, 0]}
    scale = step_down_scales({"test": observed[0], "reference": observed[1]}, null)
    worst = np.max(np.stack([null[s] / scale[s] for s in null]), axis=0)
    q = float(np.quantile(worst, 1.0 - alpha))
    return {s: q * scale[s] for s in null}


def permuted_spectra(operand: tuple[str, np.ndarray], weights: np.ndarray, n_top: int, *, seed: int,
                     shared: Any = None, observed: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(positive, |negative|) top ``n_top`` eigenvalues of Lambda_k = F^T diag(w_k) F for each weight
    column w_k; ``operand`` is ``("gram", G)`` (exact route, G = F F^T), ``("features", F)`` or
    ``("subspace", P)`` (:func:`principal_operand`: a narrow factor, every labelling's p x p matrix formed
    from one SYRK over its smaller side and diagonalised densely,
    :func:`~promptprism.stats.batched_eigen.subspace_extremes`; ``shared``: what its blocks share,
    :func:`operand_shared`).
    ``observed``: column 0 is the observed labelling (a wide factor's Lanczos then gives it its whole
    spectrum, :func:`~promptprism.stats.batched_eigen.factor_lanczos_extremes`)."""
    kind, array = operand
    if kind == "subspace" and lanczos_subspace(array):  # (wide: Lanczos over P, the threads it is given)
        return subspace_extremes(array, weights, n_top, shared=shared, seed=seed, observed=observed)
    if kind == "subspace":
        # p x p products and eigen-solves: one BLAS thread each (measured on 2 busy cores, a labelling's
        # float32 SYRK of 10,000 x 128 took 2.9 ms on one thread, 31 ms on two), the labellings shared among
        # as many threads as the BLAS had (quiet 2 cores, 200 labellings of 10,000 x 128: 0.28 s -> 0.15 s)
        workers = blas_thread_count()
        with blas_limits(1):
            return subspace_extremes(array, weights, n_top, workers=workers, shared=shared, seed=seed)
    with blas_threads_for(array.shape[0] if kind == "gram" else array.shape[1]):
        if kind == "gram":
            return weighted_gram_extremes(array, weights, n_top, seed=seed)
        return weighted_factor_extremes(array, weights, n_top, seed=seed)


def operand_shared(operand: tuple[str, Any]) -> Any:
    """What every block of labellings of a ``("subspace", P)`` operand shares
    (:func:`~promptprism.stats.batched_eigen.factor_shared`; None for the others)."""
    return factor_shared(operand[1]) if operand[0] == "subspace" else None


def principal_operand(operand: tuple[str, np.ndarray], *, seed: int, rank: int | None = None,
                      record: dict | None = None, positions: np.ndarray | None = None
                      ) -> tuple[str, np.ndarray]:
    """The test's operand for a ``("gram", G)`` or ``("features", F)`` one (a ``("subspace", P)`` one, which
    a random-feature route projected itself, is returned as it is).

    At most :data:`FULL_MAX_ROWS` rows: the uncompressed statistic, the operand itself when it is narrow
    (``DENSE_BATCH_RANK``: diagonalised densely), else ``("subspace", P)`` with P P^T = G
    (:func:`~promptprism.stats.subspaces.exact_factor`, up to :data:`FULL_DENSE_RANK` columns), else the
    operand itself again (batched Lanczos over every direction). Above: the pooled samples' leading principal
    factor (:func:`~promptprism.stats.batched_eigen.principal_factor`, seeded, label-free, so the test on it
    is exact) built once at :data:`NULL_MAX_RANK` and cut to its leading directions of the least rank in
    NULL_RANK, 2 NULL_RANK, ... holding :data:`NULL_ENERGY` of tr G (:func:`leading_rank`; a cut of a wider
    sketch is the better rank-k factor, and one build costs less than one per rank tried); when the cap
    holds less, the operand itself on at most
    :data:`FALLBACK_MAX_ROWS` rows (uncompressed). ``rank``: that rank, fixed (no growth, no uncompressed
    path). Factors in float32 (twice the rate of float64 for the labellings' products, summed in float64: a
    statistic that only has to be the same function for every labelling). ``record`` (a dict) receives the
    rank, the energy held and whether the statistic is uncompressed (:func:`statistic_text`). ``positions``:
    the operand's rows' canonical positions, which the seeded sketch follows (:func:`principal_factor`)."""
    info = {} if record is None else record
    if operand[0] == "subspace":  # (the route projected its rows itself: FeatureRoute.replicates)
        return operand
    rows = operand[1].shape[0]
    if rank is None and rows <= FULL_MAX_ROWS:
        if min(operand[1].shape) <= DENSE_BATCH_RANK:  # (diagonalised densely as it is, in float64)
            info.update(full=True, energy=1.0, factor=False, rank=None)
            return operand
        factor = exact_factor(operand, FULL_DENSE_RANK)
        info.update(full=True, energy=1.0, factor=factor is not None,
                    rank=int(factor.shape[1]) if factor is not None else None)
        return operand if factor is None else ("subspace", _float32(factor))
    total = operand_trace(operand)
    cap = NULL_MAX_RANK if rank is None else rank
    with blas_threads_for(operand[1].shape[0] if operand[0] == "gram" else operand[1].shape[1]):
        factor = principal_factor(operand, cap, seed=seed, positions=positions)
    if factor is None:  # (no wider than the cap: the operand itself, uncompressed)
        info.update(full=True, energy=1.0, factor=False, rank=None)
        return operand
    # the least rank in NULL_RANK, 2 NULL_RANK, ... whose leading directions (the last columns) hold it
    kept, energy = leading_rank(column_shares(factor, total)[::-1], start=cap if rank else NULL_RANK, cap=cap,
                                target=NULL_ENERGY)
    if rank is None and energy < NULL_ENERGY and rows <= FALLBACK_MAX_ROWS:
        info.update(full=True, energy=1.0, factor=False, rank=None)  # (the fallback)
        return operand
    info.update(full=False, energy=float(energy), factor=True, rank=int(kept))
    return "subspace", _float32(factor[:, factor.shape[1] - kept:])


def _float32(factor: Any) -> Any:
    xp = array_namespace(factor)
    return xp.asarray(factor, dtype=xp.float32)


def curtail_at(permutations: int, alpha: float) -> int:
    """h: the number of relabellings at least as extreme as the observed one at which a rejection at
    ``alpha`` is out of reach, the least c with (1 + c) / (1 + K) > alpha."""
    return int(np.floor(alpha * (permutations + 1) + 1e-9))


def global_pvalue(spectra: Sequence[tuple[np.ndarray, np.ndarray]]) -> float:
    """The test's global p-value over the labellings drawn so far (row 0 observed): each kernel's first-step
    statistic (``stats.permutation.labelling_statistic``), combined by min-p over kernels (one kernel: its
    own rank p-value, the first step of the step-down)."""
    stats = np.stack([labelling_statistic(pos[:, 0], neg[:, 0]) for pos, neg in spectra])
    return min_p_aggregate(stats)[0]


def spectra_test(pos: np.ndarray, neg: np.ndarray, *, tested: tuple[int, int], alpha: float) -> dict:
    """One comparison's null summary from its spectra over the labellings (row 0 observed; ``tested``: the
    positive and negative modes tested): the chart's band and thresholds (:func:`family_thresholds`), each
    rank's null quantile, and the observed |eigenvalues| tested. The modes' p-values are the step-down's
    over every (comparison, sign) key (:func:`~promptprism.stats.permutation.step_down_pvalues`)."""
    n_top = max(*tested, 1)
    obs_pos, obs_neg = (np.asarray(o, dtype=np.float64) for o in (pos[0, : tested[0]], neg[0, : tested[1]]))
    pos, neg = pos[1:], neg[1:]
    marginal = {"test": np.quantile(pos, 1.0 - alpha, axis=0).tolist(),
                "reference": np.quantile(neg, 1.0 - alpha, axis=0).tolist()}
    threshold = family_thresholds(pos, neg, (obs_pos, obs_neg), alpha)
    # the chart's band: per rank, the |eigenvalue| above which that mode is significant (flat, since every
    # mode is compared with the permuted largest eigenvalue)
    band = {s: [threshold[s]] * n_top for s in threshold}
    return {"null_top": band, "threshold": threshold, "null_rank_quantiles": marginal,
            "null_largest": {"test": pos[:, 0].tolist(), "reference": neg[:, 0].tolist()},
            "observed": {"test": obs_pos.tolist(), "reference": obs_neg.tolist()}}

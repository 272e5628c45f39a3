"""The permutation test applied to a fit's comparisons: which rows, which operand, which labellings, which
record; one test for two-way PromptSplit (one comparison) and K-way PromptSplit (every comparison at once).

:mod:`.significance` holds the test's statistics (permuted spectra, step-down p-values, the principal
subspace, sequential stopping); this module connects them to a fit: it picks the rows the test runs on (all,
or a seeded subsample above ``null_samples``, on which the test is exact, :func:`.comparisons.null_rows`),
takes the operand for those rows from the route's ``replicates`` (:mod:`.routes`: the joint Gram matrix of the
exact route, or the random features: kept from the covariance pass, or recomputed from the same seed), draws
the relabellings (:class:`Labellings`: labels exchanged among the sets within each prompt), runs every
comparison's spectra on the same relabellings, with the kernel family when there is one (:mod:`.family`,
min-p over kernels), and assembles the ``significance`` records.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..._words import and_join
from ...array_ops import map_in_threads
from ...stats.batched_eigen import DENSE_BATCH_RANK
from ...stats.intervals import format_p
from ...stats.permutation import adjust_pvalues, step_down_pvalues
from . import aggregate as agg
from . import comparisons as kc
from . import core, kway_subspace
from . import significance as sig
from .family import Family, aggregation_record, family_members
from .labelling_blocks import piece_columns, pool_workers, sequential_spectra
from .labellings import Labellings
from .relabel import canonical_positions, set_order

#: the statistic without compression (K-way with three or more sets on at most
#: ``kway.WHOLE_OPERAND_MAX_ROWS`` rows: a pair's weights take three values, 1/n_a, -eta/n_b and 0, where a
#: principal subspace's labelling matrices lose their one-SYRK form and cost more than the batched Lanczos
#: over a small whole operand; on more rows the principal subspace is the cheaper by far)
WHOLE_OPERAND = ("the extreme eigenvalues of every comparison's Lambda over every direction of the joint "
                 "Gram matrix or the random features (the uncompressed statistic, batched Lanczos)")


def stacked(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Several comparisons' (positive, |negative|) spectra side by side (columns)."""
    if len(parts) == 1:
        return parts[0]
    return np.concatenate([p for p, _ in parts], axis=1), np.concatenate([q for _, q in parts], axis=1)


@dataclass
class TestOutcome:
    """What :func:`comparison_significance` found: per comparison (record, p-values of its reported modes,
    positive first; None where it has no mode to test), and what the comparisons share (``common``: the
    statistic, its subspace, the permutations drawn, the stopping rule, the aggregation over kernels)."""

    tests: dict
    common: dict = field(default_factory=dict)


def comparison_significance(sets: list, comparisons: list, spectra: dict, labels: list, *,
                            operand_of: Callable, eta: float, permutations: int, alpha: float, seed: int,
                            max_samples: int = sig.NULL_MAX_SAMPLES, family: Family | None = None,
                            sequential: bool = True, subspace: dict | None = None, compress: bool = True,
                            plan: TestPlan | None = None) -> TestOutcome:
    """Permutation test of every comparison's reported modes (SPEC's test; PromptSplit paper, sec. 4): on at
    most ``max_samples`` samples (a seeded subsample above), every comparison's spectra under the same
    relabellings; the family-wise error over every mode of every comparison by one max-statistic step-down
    (:func:`~promptprism.stats.permutation.step_down_pvalues` over every (comparison, sign) key). With a
    ``family`` of other kernels the test is aggregated over the fitted kernel and those (:mod:`.aggregate`:
    min-p over kernels; the modes' p-values are adjusted for the family). The statistic is the uncompressed
    one on at most ``significance.FULL_MAX_ROWS`` rows, above in the pooled samples' leading principal
    subspace of an adaptive rank (:func:`.significance.principal_operand`; ``subspace``: the record a route
    that projects its rows itself fills; ``compress=False``: the whole operand, :data:`WHOLE_OPERAND`);
    the relabellings are drawn in blocks and the test stops once a
    rejection is out of reach (``sequential``, one comparison: :func:`.significance.sequential_spectra`).
    ``plan``: the relabellings and the family's operands made ahead (:func:`plan_test`, same arguments)."""
    lay = _layout(sets, comparisons, spectra, labels, max_samples=max_samples, seed=seed)
    counts, rows, sub, group_labels, scheme, tested, _ = lay
    at = canonical_positions(sub, lay.order)
    if not tested:
        return TestOutcome({c: None for c in comparisons}, {"permutations_drawn": 0})
    widths = [max(*t, 1) for t in tested.values()]
    t0 = time.perf_counter()
    info: dict = {} if compress else {"full": True, "energy": 1.0, "rank": None}
    if plan is None:
        with ThreadPoolExecutor(1) as pool:  # (the relabellings drawn beside the operand's products: both
            drawing = pool.submit(_labellings, lay, permutations, seed)  # leave the interpreter free)
            operand = operand_of(*rows)
            if compress:
                operand = sig.principal_operand(operand, seed=seed, record=info, positions=at)
            drawn = drawing.result()
        members, sizes = [], (0, 0)
        if family is not None and family.kernels:
            members, sizes = family_members(sets, rows, drawn, list(tested), family, eta=eta, seed=seed)
        t0 += sum(mb.seconds for mb in members)
    else:  # (drawn, and the family's operands built, while the route computed its directions ahead)
        drawn, members, sizes = plan.drawn, plan.members, plan.sizes
        t0 -= plan.draw_seconds
        operand = operand_of(*rows)
        if compress:
            operand = sig.principal_operand(operand, seed=seed, record=info, positions=at)
    info = dict(subspace or {}) if operand[0] == "subspace" and not compress else info or dict(subspace or {})
    solvers = [_fitted_solver(operand, drawn, tested, widths, eta=eta, seed=seed),
               *(member.spectra for member in members)]
    setup = time.perf_counter() - t0
    drawn_spectra, n_drawn, seconds = sequential_spectra(
        solvers, permutations, alpha=alpha, sequential=sequential and len(tested) == 1,
        workers=pool_workers([operand, *(mb.operand for mb in members)]),
        pieces=[piece_columns(operand), *(piece_columns(mb.operand) for mb in members)])
    outs, p = _pvalues(drawn_spectra[0], tested, widths, alpha)
    common: dict = (_stopping(drawn_spectra, n_drawn, permutations=permutations, alpha=alpha,
                              sequential=sequential) if len(tested) == 1
                    else {"permutations_drawn": n_drawn})
    projected = compress or operand[0] == "subspace"
    said = info.get("statistic") or sig.statistic_text(info)
    common.update(statistic=said if projected else WHOLE_OPERAND,
                  subspace={k: info.get(k) for k in ("rank", "energy", "full")})
    if members:
        cost = {mb.entry["name"]: mb.seconds + s for mb, s in zip(members, seconds[1:], strict=True)}
        aggregation = aggregation_record(members, drawn_spectra, family, group_labels=group_labels,
                                         sizes=sizes, fitted_samples=int(sub.sum()), eta=eta, alpha=alpha,
                                         cost=cost,
                                         widths=(widths, [agg.OTHER_MODES] * len(tested)),
                                         names=list(tested))
        aggregation["cost_s"]["fitted kernel"] = round(setup + seconds[0], 4)
        aggregation["p_modes_fitted_kernel"] = p[next(iter(tested))] if len(tested) == 1 else \
            {kc.comparison_name(c, family.set_names): p[c] for c in tested}
        null_min = aggregation.pop("_null_min_p")
        p = {c: [float(x) for x in adjust_pvalues(np.array(v), null_min)] for c, v in p.items()}
        common["aggregation"] = aggregation
    correction = (sig.CORRECTION if len(comparisons) == 1 else
                  f"max-statistic step-down (FWER) over every mode of all {len(comparisons)} comparisons")
    tests = {c: None for c in comparisons}
    for c in tested:
        tests[c] = (_record(spectra[c], outs[c], p[c], scheme=scheme, permutations=permutations, alpha=alpha,
                            seed=seed, counts=counts, sub=sub, correction=correction), p[c])
    return TestOutcome(tests, common)


class _Layout(NamedTuple):
    """Each set's number of rows, the test's rows of each set and their numbers, their prompt labels, the
    relabelling scheme, {tested comparison: (positive, negative) modes tested}, and the sets'
    canonical order (:func:`~promptprism.array_ops.canonical_order`), in which every seeded draw over the
    rows is made."""

    counts: np.ndarray
    rows: list
    sub: np.ndarray
    group_labels: np.ndarray
    scheme: str
    tested: dict
    order: np.ndarray


def _layout(sets: list, comparisons: list, spectra: dict, labels: list, *, max_samples: int, seed: int
            ) -> _Layout:
    """The test's :class:`_Layout` for the sets (at most ``max_samples`` rows, a seeded subsample above)."""
    counts = np.array([len(s) for s in sets])
    order = set_order(sets)
    rows = kc.null_rows_in_order(counts, order, max_samples, seed)  # (the same rows in any order of the sets)
    return _Layout(counts, rows, np.array([r.size for r in rows]),
                   np.concatenate([labels[k][r] for k, r in enumerate(rows)]),
                   sig.choose_scheme(labels[0], labels[1]) if len(sets) == 2 else "within-prompt",
                   {c: _tested(spectra[c]) for c in comparisons if spectra[c].selected.size}, order)


def _labellings(lay: _Layout, permutations: int, seed: int) -> Labellings:
    """The test's relabellings of its rows: within each prompt, or pooled."""
    groups = np.zeros_like(lay.group_labels) if lay.scheme == "pooled" else lay.group_labels
    return Labellings(groups, lay.sub, permutations, seed, order=lay.order)


@dataclass
class TestPlan:
    """The part of a test that no operand decides (:func:`plan_test`): the relabellings, the kernel family
    it was made for, the family's members on the test's rows and their numbers of rows, and the seconds the
    relabellings took."""

    drawn: Labellings
    family: Family | None = None
    members: list = field(default_factory=list)
    sizes: tuple = (0, 0)
    draw_seconds: float = 0.0


def plan_test(sets: list, comparisons: list, spectra: dict, labels: list, *, eta: float, permutations: int,
              seed: int, max_samples: int = sig.NULL_MAX_SAMPLES, family: Family | None = None
              ) -> TestPlan | None:
    """What :func:`comparison_significance` (the same arguments) needs besides the operand, made before it:
    a route that computes the operand's directions ahead (:meth:`.route_base.Route.fit`) has the caller
    make this meanwhile (rff r = 3000, n = m = 30,000 on 2 cores: the family's 0.2-0.26 s and the
    relabellings' 0.05 s where the caller would wait). None when no comparison is tested."""
    lay = _layout(sets, comparisons, spectra, labels, max_samples=max_samples, seed=seed)
    if not lay.tested:
        return None
    t0 = time.perf_counter()
    drawn = _labellings(lay, permutations, seed)
    draw_seconds = time.perf_counter() - t0
    if family is None or not family.kernels:
        return TestPlan(drawn, family, draw_seconds=draw_seconds)
    members, sizes = family_members(sets, lay.rows, drawn, list(lay.tested), family, eta=eta, seed=seed)
    return TestPlan(drawn, family, members, sizes, draw_seconds)


def _fitted_solver(operand: tuple, drawn: Labellings, tested: dict, widths: list[int], *, eta: float,
                   seed: int) -> Callable:
    """cols -> every tested comparison's (positive, |negative|) spectra side by side on those labellings,
    for the fitted kernel: a K-way pair from its own rows, a one-vs-rest in G's eigenbasis (those small
    solves, and with them the others, on a pool of the BLAS's threads,
    :func:`~promptprism.array_ops.map_in_threads`), else the batched solve over the operand."""
    rows_of = kc.label_rows(drawn.model, drawn.counts) if drawn.model is not None else []
    if operand[0] == "subspace" and drawn.model is not None:  # (K-way's shared subspace: the sets' moments)
        return lambda cols: kway_subspace.moment_extremes(operand[1], rows_of, cols, list(tested),
                                                          drawn.counts, eta, widths, seed=seed)
    shared = sig.operand_shared(operand)
    rest = _rest_factor(operand, drawn)
    small = {c: _from_pair_block(operand, drawn, c) or (rest is not None and len(c[1]) > 1) for c in tested}
    weights = {c: drawn.weights(c, eta) for c in tested if not small[c]}

    def spectra_of(c: kc.Comparison, width: int, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if _from_pair_block(operand, drawn, c):
            return kc.pair_block_extremes(operand[1], rows_of[c[0]][cols], rows_of[c[1][0]][cols], eta, width)
        if rest is not None and len(c[1]) > 1:
            return kc.rest_extremes(*rest, rows_of[c[0]][cols], eta, width, seed=seed + int(cols[0]))
        return sig.permuted_spectra(operand, weights[c][:, cols], width, shared=shared,
                                    seed=seed + int(cols[0]),
                                    observed=int(cols[0]) == 0)

    pairs = list(zip(tested, widths, strict=True))
    if not any(small.values()) or len(tested) < 2:
        return lambda cols: stacked([spectra_of(*cw, cols) for cw in pairs])
    return lambda cols: stacked(map_in_threads(lambda cw: spectra_of(*cw, cols), pairs))


def _from_pair_block(operand: tuple, drawn: Labellings, c: kc.Comparison) -> bool:
    """Whether a K-way pair is tested from its own rows (:func:`.comparisons.pair_block_extremes`): model
    labels (K >= 3), a numpy Gram matrix, a pair of at most ``PAIR_BLOCK_MAX_ROWS`` test rows."""
    return (drawn.model is not None and operand[0] == "gram" and isinstance(operand[1], np.ndarray)
            and len(c[1]) == 1
            and int(drawn.counts[c[0]] + drawn.counts[c[1][0]]) <= kc.PAIR_BLOCK_MAX_ROWS)


def _rest_factor(operand: tuple, drawn: Labellings) -> tuple | None:
    """G's eigen-factor for the one-vs-rest comparisons (:func:`.comparisons.rest_extremes`): model labels,
    a numpy Gram matrix of more than ``DENSE_BATCH_RANK`` rows (below, the whole-operand solve is dense and
    exact) and at most ``REST_LOW_RANK_MAX_ROWS``, every set within ``PAIR_BLOCK_MAX_ROWS``; else None."""
    if drawn.model is None or operand[0] != "gram" or not isinstance(operand[1], np.ndarray):
        return None
    if not DENSE_BATCH_RANK < operand[1].shape[0] <= kc.REST_LOW_RANK_MAX_ROWS:
        return None
    if drawn.counts.max() > kc.PAIR_BLOCK_MAX_ROWS:
        return None
    return kc.gram_factor(operand[1])


def _tested(spec: core.Spectrum) -> tuple[int, int]:
    vals = spec.mode_eigenvalues
    return int(np.sum(vals > 0)), int(np.sum(vals < 0))


def _pvalues(spectra: tuple, tested: dict, widths: list[int], alpha: float) -> tuple[dict, dict]:
    """Each comparison's null summary (:func:`.significance.spectra_test`) and the family-wise p-values of
    its modes: one max-statistic step-down over every (comparison, sign) key
    (:func:`~promptprism.stats.permutation.step_down_pvalues`; one comparison: over its two signs)."""
    offsets = np.r_[0, np.cumsum(widths)]
    outs, observed, null = {}, {}, {}
    for i, (c, t) in enumerate(tested.items()):
        cols = slice(offsets[i], offsets[i + 1])
        pos, neg = spectra[0][:, cols], spectra[1][:, cols]
        outs[c] = sig.spectra_test(pos, neg, tested=t, alpha=alpha)
        observed[(c, "+")], observed[(c, "-")] = pos[0, :t[0]], neg[0, :t[1]]
        null[(c, "+")], null[(c, "-")] = pos[1:, 0], neg[1:, 0]
    fam = step_down_pvalues(observed, null)
    return outs, {c: [float(x) for x in fam[(c, "+")]] + [float(x) for x in fam[(c, "-")]] for c in tested}


def mode_significance(sets: dict, spec: core.Spectrum, labels: dict, *, operand_of: Callable, eta: float,
                      permutations: int, alpha: float, seed: int, max_samples: int = sig.NULL_MAX_SAMPLES,
                      family: Family | None = None, sequential: bool = True, subspace: dict | None = None,
                      plan: TestPlan | None = None) -> tuple[dict, list[float]]:
    """Two-way PromptSplit's test (:func:`comparison_significance` of the one comparison test-vs-reference):
    (the result's ``significance`` record, one p-value per reported mode, positive modes first). The record
    also holds what the test shares (``statistic``, ``subspace``, ``permutations_drawn``, ``stopping``,
    ``aggregation``: which kernel found what)."""
    c = kc.TEST_VS_REFERENCE
    outcome = comparison_significance(list(sets.values()), [c], {c: spec}, list(labels.values()),
                                      operand_of=operand_of, eta=eta, permutations=permutations,
                                      alpha=alpha, seed=seed, max_samples=max_samples, family=family,
                                      sequential=sequential, subspace=subspace, plan=plan)
    record, p_values = outcome.tests[c]
    common = outcome.common
    aggregation = common.pop("aggregation", None)
    record.update(common)
    if aggregation is not None:
        record["aggregation"] = aggregation
        record["verdict"] = aggregated_verdict(record, aggregation, alpha)
    if record["permutations_drawn"] < permutations:
        stop = record["stopping"]
        record["verdict"] += (f" (the test stopped after {record['permutations_drawn']} of {permutations} "
                              f"permutations: {stop['exceedances']} were at least as extreme, so p >= "
                              f"{stop['p_at_least']:.2g} > alpha whatever the rest would have drawn)")
    return record, p_values


def aggregated_verdict(record: dict, aggregation: dict, alpha: float) -> str:
    """The verdict of a test aggregated over a kernel family: the family-wise answer (``aggregation['p']``)
    first. Where the aggregate rejects but no mode of the fitted kernel is significant alone, the sets differ
    (:func:`.verdicts.verdict` would say they do not), by the modes the other kernels found."""
    others = [k["name"] for k in aggregation["kernels"] if not k["fitted"] and k["n_significant"]]
    count, p = len(aggregation["kernels"]), float(aggregation["p"])
    if p <= alpha and not record.get("n_significant"):
        found = (f"modes found by the {and_join(others)} kernels" if others else
                 "no single kernel's mode significant alone")
        largest = record.get("p_largest")
        tail = "" if largest is None else f" (largest eigenvalue p = {format_p(largest, alpha)})"
        return (f"a significant difference between test and reference at alpha = {alpha:g} by the test "
                f"aggregated over {count} kernels (family-wise, p = {format_p(p, alpha)}): {found}; none of "
                f"the fitted kernel's modes is significant alone{tail}")
    return (f"{record['verdict']}; tested over {count} kernels together: p = {format_p(p, alpha)}" +
            (f"; the {and_join(others)} kernels find these modes too" if others else ""))


def _stopping(spectra: list, drawn: int, *, permutations: int, alpha: float, sequential: bool) -> dict:
    """The record's ``permutations_drawn`` and ``stopping`` entries (one comparison)."""
    exceed = round(sig.global_pvalue(spectra) * (drawn + 1)) - 1
    return {"permutations_drawn": drawn,
            "stopping": {"rule": sig.STOPPING_RULE if sequential else "none: all permutations drawn",
                         "h": sig.curtail_at(permutations, alpha) if sequential else None,
                         "permutations_drawn": drawn, "exceedances": int(exceed),
                         "p_at_least": (1.0 + exceed) / (1.0 + permutations),
                         "stopped_early": drawn < permutations}}


def _record(spec: core.Spectrum, out: dict, p_values: list[float], *, scheme: str, permutations: int,
            alpha: float, seed: int, counts: np.ndarray, sub: np.ndarray, correction: str) -> dict:
    """One comparison's ``significance`` record (``counts``: each set's rows; ``sub``: the test's rows)."""
    vals = spec.mode_eigenvalues
    p_by_mode = np.array(p_values)  # spec.selected lists the positive modes first, then the negative ones
    subsample = int(sub.sum()) < int(counts.sum())
    approx = None
    if subsample and len(counts) == 2:
        approx = (f"the test ran on a seeded subsample of {sub[0]} test and {sub[1]} reference samples "
                  "(exact there: the subsample's eigenvalues against its own relabellings; their null "
                  "quantiles are on the subsample's scale); the eigenvalues reported are the full sets'")
    elif subsample:
        approx = (f"the test ran on a seeded subsample of {', '.join(str(int(c)) for c in sub)} samples of "
                  "the sets (exact there: the subsample's eigenvalues against its own relabellings); the "
                  "eigenvalues reported are the full sets'")
    largest = int(np.argmax(np.abs(vals)))
    return {
        "test": "permutation", "scheme": scheme, "permutations": permutations, "alpha": alpha,
        "seed": seed, "correction": correction, "null_top": out["null_top"],
        "threshold": out["threshold"], "null_rank_quantiles": out["null_rank_quantiles"],
        "p_largest": float(p_by_mode[largest]), "n_significant": int(np.sum(p_by_mode <= alpha)),
        "approximation": approx, "null_samples": int(sub.sum()),
        "subsample_eigenvalues": out["observed"] if subsample else None,
        "verdict": sig.verdict(identical=False, alpha=alpha, permutations=permutations,
                               p_values=[("test" if v > 0 else "reference", float(v), float(p))
                                         for v, p in zip(vals, p_by_mode, strict=True)]),
    }

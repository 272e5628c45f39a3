"""The permutation test applied to a fitted PromptSplit spectrum: which rows, which operand, which record.

:mod:`.significance` holds the test itself (relabellings, permuted spectra, step-down p-values); this module
connects it to a fit: it picks the rows the test runs on (all, or a seeded subsample above
``null_samples``, on which the test is exact), takes the operand for those rows from the route's
``replicates`` (:mod:`.routes`: the joint Gram matrix of the exact route, or the random features: kept
from the covariance pass, or recomputed from the same seed) and assembles the ``significance`` record of
the result.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from . import aggregate as agg
from . import core
from . import significance as sig
from .family import Family, aggregated_test


def mode_significance(sets: dict, spec: core.Spectrum, labels: dict, *, operand_of: Callable, eta: float,
                      permutations: int, alpha: float, seed: int, max_samples: int = sig.NULL_MAX_SAMPLES,
                      family: Family | None = None) -> tuple[dict, list[float]]:
    """Permutation test of the reported modes of ``spec``, on at most ``max_samples`` samples (a seeded
    subsample above): (the result's ``significance`` record, one p-value per reported mode, positive
    modes first). With a ``family`` of other kernels the test is aggregated over the fitted kernel and
    those (:mod:`.aggregate`: the modes' p-values are adjusted for the family; the record's
    ``aggregation`` says which kernel found what)."""
    n, m = len(sets["test"]), len(sets["reference"])
    rows_t, rows_r = sig.null_rows(n, m, max_samples, seed)
    n_sub, m_sub = rows_t.size, rows_r.size
    groups = np.r_[labels["test"][rows_t], labels["reference"][rows_r]]
    scheme = sig.choose_scheme(labels["test"], labels["reference"])
    if scheme == "pooled":
        groups = np.zeros_like(groups)
    vals = spec.mode_eigenvalues
    tested = (int(np.sum(vals > 0)), int(np.sum(vals < 0)))
    t0 = time.perf_counter()
    pos, neg = sig.labelling_spectra(operand_of(rows_t, rows_r), groups=groups, n=n_sub, m=m_sub, eta=eta,
                                     n_top=max(*tested, 1), permutations=permutations, seed=seed)
    out = sig.spectra_test(pos, neg, tested=tested, alpha=alpha)
    p_values = [float(x) for x in out["p_positive"][: tested[0]]] + \
               [float(x) for x in out["p_negative"][: tested[1]]]
    aggregation = None
    if family is not None and family.kernels:
        rows = {"test": rows_t, "reference": rows_r}
        aggregation = aggregated_test(sets, rows, groups, np.r_[labels["test"][rows_t],
                                                                 labels["reference"][rows_r]],
                                      family, primary=(pos[:, 0], neg[:, 0]), eta=eta,
                                      permutations=permutations, alpha=alpha, seed=seed)
        aggregation["cost_s"]["fitted kernel"] = round(time.perf_counter() - t0
                                                       - sum(aggregation["cost_s"].values()), 4)
        aggregation["p_modes_fitted_kernel"] = p_values
        p_values = [float(x) for x in agg.adjust_pvalues(np.array(p_values), aggregation.pop("_null_min_p"))]
    record = _record(spec, out, p_values, scheme=scheme, permutations=permutations, alpha=alpha, seed=seed,
                     sizes=(n, m, n_sub, m_sub))
    if aggregation is not None:
        record["aggregation"] = aggregation
        others = [k["name"] for k in aggregation["kernels"] if not k["fitted"] and k["n_significant"]]
        record["verdict"] += (f"; aggregated over {len(aggregation['kernels'])} kernels: p = "
                              f"{aggregation['p']:.2g}" + (f", modes also found by {', '.join(others)} "
                                                           "(significance.aggregation)" if others else ""))
    return record, p_values


def _record(spec: core.Spectrum, out: dict, p_values: list[float], *, scheme: str, permutations: int,
            alpha: float, seed: int, sizes: tuple[int, int, int, int]) -> dict:
    """The result's ``significance`` record."""
    n, m, n_sub, m_sub = sizes
    vals = spec.mode_eigenvalues
    p_by_mode = np.array(p_values)  # spec.selected lists the positive modes first, then the negative ones
    subsample = n_sub + m_sub < n + m
    approx = None
    if subsample:
        approx = (f"the test ran on a seeded subsample of {n_sub} test and {m_sub} reference samples (exact "
                  "there: the subsample's eigenvalues against its own relabellings; their null quantiles "
                  "are on the subsample's scale); the eigenvalues reported are the full sets'")
    largest = int(np.argmax(np.abs(vals)))
    return {
        "test": "permutation", "scheme": scheme, "permutations": permutations, "alpha": alpha,
        "seed": seed, "correction": sig.CORRECTION, "null_top": out["null_top"],
        "threshold": out["threshold"], "null_rank_quantiles": out["null_rank_quantiles"],
        "p_largest": float(p_by_mode[largest]), "n_significant": int(np.sum(p_by_mode <= alpha)),
        "approximation": approx, "null_samples": n_sub + m_sub,
        "subsample_eigenvalues": out["observed"] if subsample else None,
        "verdict": sig.verdict(identical=False, alpha=alpha, permutations=permutations,
                               p_values=[("test" if v > 0 else "reference", float(v), float(p))
                                         for v, p in zip(vals, p_by_mode, strict=True)]),
    }

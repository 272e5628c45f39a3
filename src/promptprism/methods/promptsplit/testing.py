"""The permutation test applied to a fitted PromptSplit spectrum: which rows, which operand, which record.

:mod:`.significance` holds the test itself (relabellings, permuted spectra, step-down p-values); this module
connects it to a fit: it picks the rows the test runs on (all, or a seeded subsample above
``null_samples``, on which the test is exact), the operand on the fit's backend (the joint Gram matrix
of the exact route, or the random features: kept from the covariance pass, or recomputed from the same
seed) and assembles the ``significance`` record of the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...backend import Backend
from . import core
from . import significance as sig


def null_operand(sets: dict, *, gram: Any, fmap: Any, feats: dict | None, backend: Backend, chunk_size: int
                 ) -> Callable[[np.ndarray, np.ndarray], tuple[str, Any]]:
    """A function (test rows, reference rows) -> the operand of :func:`.significance.permuted_spectra`
    for those rows: ``("gram", G)`` (exact route) or ``("features", F)`` (kept features, or recomputed)."""
    n, m = len(sets["test"]), len(sets["reference"])

    def operand(rows_t: np.ndarray, rows_r: np.ndarray) -> tuple[str, Any]:
        pairs = (("test", rows_t), ("reference", rows_r))
        if gram is not None:
            if rows_t.size == n and rows_r.size == m:
                return "gram", gram
            idx = backend.asarray(np.r_[rows_t, n + rows_r])
            return "gram", gram[idx, ...][:, idx]
        if feats is not None:  # kept from the covariance pass
            return "features", backend.xp.concat([
                feats[s] if rows.size == len(sets[s]) else feats[s][backend.asarray(rows), ...]
                for s, rows in pairs])
        return "features", backend.xp.concat([
            core.feature_rows(fmap, sets[s].prompt_embeddings, sets[s].output_embeddings, rows, chunk_size,
                              backend) for s, rows in pairs])

    return operand


def mode_significance(sets: dict, spec: core.Spectrum, labels: dict, *, operand_of: Callable, eta: float,
                      permutations: int, alpha: float, seed: int, max_samples: int = sig.NULL_MAX_SAMPLES
                      ) -> tuple[dict, list[float]]:
    """Permutation test of the reported modes of ``spec``, on at most ``max_samples`` samples (a seeded
    subsample above): (the result's ``significance`` record, one p-value per reported mode, positive
    modes first)."""
    n, m = len(sets["test"]), len(sets["reference"])
    rows_t, rows_r = sig.null_rows(n, m, max_samples, seed)
    n_sub, m_sub = rows_t.size, rows_r.size
    groups = np.r_[labels["test"][rows_t], labels["reference"][rows_r]]
    scheme = sig.choose_scheme(labels["test"], labels["reference"])
    if scheme == "pooled":
        groups = np.zeros_like(groups)
    vals = spec.mode_eigenvalues
    n_pos, n_neg = int(np.sum(vals > 0)), int(np.sum(vals < 0))
    out = sig.permutation_test(operand_of(rows_t, rows_r), groups=groups, n=n_sub, m=m_sub, eta=eta,
                               tested=(n_pos, n_neg), permutations=permutations, alpha=alpha, seed=seed)
    p_values = [float(out["p_positive"][i]) for i in range(n_pos)] + \
               [float(out["p_negative"][i]) for i in range(n_neg)]
    # spec.selected lists the positive modes first, then the negative ones (both by rank)
    p_by_mode = np.array(p_values)
    subsample = n_sub + m_sub < n + m
    approx = None
    if subsample:
        approx = (f"the test ran on a seeded subsample of {n_sub} test and {m_sub} reference samples (exact "
                  "there: the subsample's eigenvalues against its own relabellings; their null quantiles "
                  "are on the subsample's scale); the eigenvalues reported are the full sets'")
    largest = int(np.argmax(np.abs(vals)))
    record = {
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
    return record, p_values

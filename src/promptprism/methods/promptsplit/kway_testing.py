"""The K-way permutation test: model labels exchanged among all K sets within each prompt, the family-wise
error controlled over every mode of every comparison (pairs and one-vs-rest) by one max-statistic step-down.

H0 (complete null): all K sets come from one joint distribution, prompt by prompt. A relabelling changes
only each comparison's signed weights D_c, never the Gram matrix or the features, so each comparison's
permuted spectra come from :func:`.significance.permuted_spectra` with its weight matrix (zeros on the rows a
relabelling puts outside the comparison). The statistic of a (comparison, sign) is its largest |eigenvalue|
scaled by that key's median over all labellings; :func:`.kway_core.family_step_down` takes the maximum over
every key per relabelling. With K = 2 this is the pairwise test to the bit (same draws, same solver calls).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kway_core as kc
from . import significance as sig


def kway_permutation_test(fit: Any, family: list, permutations: int) -> dict:
    """{comparison: (significance record, p-values of its reported modes, positive first)} for the
    comparisons of ``family`` with modes to test (an empty record for the others)."""
    est = fit.est
    alpha, seed = float(est.alpha), est.seed
    rows = kc.null_rows_k(fit.counts, int(est.null_samples), seed)
    sub_counts = np.array([r.size for r in rows])
    model = np.repeat(np.arange(len(rows)), sub_counts)
    groups = np.concatenate([fit.labels[k][r] for k, r in enumerate(rows)])
    operand = fit.operand(rows)
    rng = np.random.default_rng(seed)
    perm = kc.permuted_model_labels(groups, model, permutations, rng)
    labels = np.concatenate([model[:, None], perm], axis=1)
    tested = [c for c in family if fit.spectra[c].selected.size]
    spectra, observed, null = {}, {}, {}
    for c in tested:
        vals = fit.spectra[c].mode_eigenvalues
        n_pos, n_neg = int(np.sum(vals > 0)), int(np.sum(vals < 0))
        w = kc.comparison_weights(labels, c, sub_counts, est.eta)
        pos, neg = sig.permuted_spectra(operand, w, max(n_pos, n_neg, 1), seed=seed)
        spectra[c] = (pos, neg, n_pos, n_neg)
        observed[(c, "+")], observed[(c, "-")] = pos[0, :n_pos], neg[0, :n_neg]
        null[(c, "+")], null[(c, "-")] = pos[1:, 0], neg[1:, 0]
    p = kc.family_step_down(observed, null) if tested else {}
    subsample = int(sub_counts.sum()) < int(fit.counts.sum())
    correction = (sig.CORRECTION if len(family) == 1 else
                  f"max-statistic step-down (FWER) over every mode of all {len(family)} comparisons")
    out = {}
    for c in family:
        if c not in spectra:
            out[c] = (sig.empty_record(permutations=permutations, alpha=alpha, seed=seed, identical=False),
                      None)
            continue
        pos, neg, n_pos, n_neg = spectra[c]
        p_values = [float(x) for x in p[(c, "+")]] + [float(x) for x in p[(c, "-")]]
        record = _record(fit.spectra[c].mode_eigenvalues, p_values, pos, neg, (n_pos, n_neg),
                         permutations=permutations, alpha=alpha, seed=seed, correction=correction)
        record.update(null_samples=int(sub_counts.sum()),
                      approximation=_approximation(sub_counts) if subsample else None,
                      subsample_eigenvalues=record.pop("observed") if subsample else None,
                      subspace={"rank": None, "energy": 1.0, "full": True})  # (the operand as it is)
        record.pop("observed", None)
        out[c] = (record, p_values)
    return out


def _record(vals: np.ndarray, p_values: list[float], pos: np.ndarray, neg: np.ndarray, tested: tuple,
            *, permutations: int, alpha: float, seed: int, correction: str) -> dict:
    """The comparison's ``significance`` record, with the keys of the pairwise one."""
    obs_pos, obs_neg = pos[0, : tested[0]], neg[0, : tested[1]]
    null_pos, null_neg = pos[1:], neg[1:]
    threshold = sig.family_thresholds(null_pos, null_neg, (obs_pos, obs_neg), alpha)
    n_top = max(*tested, 1)
    p_by_mode = np.array(p_values)
    largest = int(np.argmax(np.abs(vals)))
    return {
        "test": "permutation", "scheme": "within-prompt", "permutations": permutations, "alpha": alpha,
        "seed": seed, "correction": correction, "null_top": {s: [threshold[s]] * n_top for s in threshold},
        "threshold": threshold,
        "null_rank_quantiles": {"test": np.quantile(null_pos, 1.0 - alpha, axis=0).tolist(),
                                "reference": np.quantile(null_neg, 1.0 - alpha, axis=0).tolist()},
        "p_largest": float(p_by_mode[largest]), "n_significant": int(np.sum(p_by_mode <= alpha)),
        "observed": {"test": obs_pos.tolist(), "reference": obs_neg.tolist()},
        "verdict": sig.verdict(identical=False, alpha=alpha, permutations=permutations,
                               p_values=[("test" if v > 0 else "reference", float(v), float(q))
                                         for v, q in zip(vals, p_by_mode, strict=True)]),
    }


def _approximation(sub_counts: np.ndarray) -> str:
    return (f"the test ran on a seeded subsample of {', '.join(str(int(c)) for c in sub_counts)} samples of "
            "the sets (exact there: the subsample's eigenvalues against its own relabellings); the "
            "eigenvalues reported are the full sets'")

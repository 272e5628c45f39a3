"""PromptSplit's permutation test aggregated over a small family of kernels (power without one bandwidth).

In the manner of the aggregated MMD test (Schrab et al., "MMD Aggregated Two-Sample Test", 2023), with a
single level and a max-type (min-p) rule: every kernel of the family is tested on the SAME K relabellings
(:func:`.significance.test_labellings`); kernel k's statistic of a labelling is T_k = the larger over the
two signs of the top |eigenvalue| of Lambda, scaled by that sign's median over the K + 1 labellings (the
first step of :func:`~promptprism.stats.permutation.step_down_pvalues`,
:func:`~promptprism.stats.permutation.labelling_statistic`); it is put on the probability scale by its rank
among the K + 1 labellings, p_k(l) = #{l': T_k(l') >= T_k(l)} / (K + 1); the aggregate statistic is
min_k p_k(l), and its p-value is the rank of the observed minimum among the K + 1 minima,
p_agg = #{l: min_k p_k(l) <= min_k p_k(observed)} / (K + 1). Every step is a symmetric function of the
K + 1 labellings, so under H0 (exchangeable labels) P(p_agg <= alpha) <= alpha: the family-wise error over
kernels is kept. A mode of kernel k with its own step-down p-value p is reported with the adjusted
p = (1 + #{relabellings l: min_k p_k(l) <= p}) / (1 + K); a mode can be significant only when
p_agg <= alpha, so the family-wise error over kernels and modes stays at most alpha under the complete
null. The statistics are :mod:`promptprism.stats.permutation`'s (``labelling_statistic``,
``labelling_pvalues``, ``min_p_aggregate``, ``adjust_pvalues``).

Kernels other than the fitted one run on the exact route (their Gram matrix on the test's rows, or on a
seeded subsample of at most ``AGGREGATE_SAMPLES`` of them: the relabellings restricted to those rows,
weighted by each labelling's own counts, so the statistic is still a function of the full labelling); the
test and the modes it reports live in that Gram matrix's principal subspace, as the fitted kernel's test
(:func:`.significance.principal_operand`, :func:`mode_findings`).
"""

from __future__ import annotations

import numpy as np

from ...array_ops import blas_threads_for
from ...backend import to_numpy
from ...stats.eigen import select_modes
from . import core

#: kernel families (name, kernel, multiple of the median bandwidth) per modality of the outputs: 'text'
#: (unit-norm embeddings) and 'image' (unnormalised features); docs/promptsplit.md has the measured power
FAMILIES = {
    "text": (("cosine", "cosine", None), ("gaussian x1", "gaussian", 1.0), ("gaussian x2", "gaussian", 2.0)),
    "image": (("gaussian x0.5", "gaussian", 0.5), ("gaussian x1", "gaussian", 1.0),
              ("gaussian x2", "gaussian", 2.0)),
}
AGGREGATES = ("auto", "none", *FAMILIES)
#: the other kernels of the family run on at most this many of the test's rows (a seeded subsample above)
AGGREGATE_SAMPLES = 4_000
#: modes of each sign tested for each other kernel of the family
OTHER_MODES = 3
RULE = ("min-p over kernels (single level, max-type): each kernel's largest scaled eigenvalue ranked among "
        "the K + 1 labellings, the minimum of those p-values calibrated on its own permutation "
        "distribution; the same permutations for every kernel")


def modality(outputs: np.ndarray, tolerance: float = 1e-3) -> str:
    """'text' when every output row (of at most the first 1,000) has unit norm to ``tolerance``, else
    'image'."""
    norms = np.linalg.norm(np.asarray(outputs[:1000], dtype=np.float64), axis=1)
    return "text" if norms.size and bool(np.all(np.abs(norms - 1.0) <= tolerance)) else "image"


def mode_findings(operand: tuple, group_labels: np.ndarray, n: int, m: int, *, eta: float,
                  p_pos: np.ndarray, p_neg: np.ndarray, names, top: int = 3) -> list[dict]:
    """The top modes of one kernel of the family, n test rows then m reference rows: per mode its side,
    eigenvalue, p-value and ``top`` prompts by contribution (:func:`.core.prompt_contributions`).

    ``operand``: the kernel's test operand (:func:`.significance.principal_operand`). ``("subspace", P)``:
    the modes are those the test's statistic saw, the eigenvectors u of P^T D P (Lambda restricted to the
    principal subspace; eigenvalues of the observed labelling's own matrix), each sample's score p_i . u;
    ``("gram", G)`` (a kernel whose uncompressed statistic runs on G itself): :func:`.core.exact_spectrum`
    on G."""
    n_pos, n_neg = len(p_pos), len(p_neg)
    weights = core.signed_weights(n, m, eta)
    if operand[0] == "subspace":
        factor = np.asarray(to_numpy(operand[1]), dtype=np.float64)
        with blas_threads_for(factor.shape[1]):
            vals, vecs = np.linalg.eigh(factor.T @ (weights[:, None] * factor))
        vals, vecs = vals[::-1], vecs[:, ::-1]  # descending, as exact_spectrum's
        sel = select_modes(vals, max(n_pos, n_neg, 1), 1.0 + eta, precision="float32")
        vals, scores = vals[sel], factor @ vecs[:, sel]
    else:
        spec = core.exact_spectrum(operand[1], weights, n_modes=max(n_pos, n_neg, 1), eta=eta)
        vals, scores = spec.mode_eigenvalues, spec.scores
    size = int(group_labels.max()) + 1
    out, rank = [], {"test": 0, "reference": 0}
    for j, lam in enumerate(vals):
        side = "test" if lam > 0 else "reference"
        ps = p_pos if side == "test" else p_neg
        if rank[side] >= len(ps):
            continue
        p = float(ps[rank[side]])
        rank[side] += 1
        sq = scores[:, j] ** 2
        contrib = core.prompt_contributions(np.bincount(group_labels[:n], sq[:n], size),
                                            np.bincount(group_labels[n:], sq[n:], size), n, m, eta)
        order = np.argsort(-contrib if side == "test" else contrib, kind="stable")[:top]
        out.append({"side": side, "eigenvalue": float(lam), "p_kernel": p,
                    "top_prompts": [str(names[i]) for i in order]})
    return out

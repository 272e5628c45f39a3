"""MMD^2 on prompt-stratified sets: each set's within-set term weighted as its prompt design is.

A set of N rows over prompts s with N_s rows each is a draw from the mixture P = sum_s pi_s P_s,
pi_s = N_s / N. The mixture's within term E k(X, X') (X, X' independent draws of P) is

    T = sum_{s, t} pi_s pi_t kappa_st,   kappa_st = E k(X_s, X'_t),

and is estimated without bias by weighting each pair of distinct rows (i, j) by 1 / N^2, except pairs of
one prompt, which stand for kappa_ss and are weighted N_s / (N^2 (N_s - 1)):

    T_hat = (A + sum_s B_s / (N_s - 1)) / N^2

(A: the sum of k over all ordered pairs of distinct rows; B_s: over those of prompt s). The U-statistic
MMD^2_u (Gretton et al. 2012, eq. 3) weights every pair alike, A / (N (N - 1)): a pair of its rows shares a
prompt with probability (N_s - 1) / (N - 1), less than the design's pi_s, so on two sets of the same prompts
(whose cross term holds same-prompt pairs at the design's rate) it reads low by O(1 / N), the order of its own
spread between sets that agree. The difference is

    D = T_hat - A / (N (N - 1)) = (sum_s pi_s kappa_ss - W) / N,   W = A / (N (N - 1)),

a per-set constant: :func:`design_correction` estimates D (kappa_ss and W from at most ``cap`` seeded
rows of the set and :data:`PROMPT_ROWS` of each prompt: D's error is that of such a mean, divided by N). A
prompt of one row holds no pair: its kappa_ss is taken as W (no correction for it). Adding D_x + D_y to
every subset value of MMD^2_u (the subsets' mean estimates W) gives the design-weighted MMD^2, zero in
expectation for two draws of one model over the same prompts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...array_ops import sorted_subsample

#: rows per Gram block when the prompts' own pairs are summed (whole prompts; a larger prompt alone): small
#: blocks waste few products on pairs of two prompts
BLOCK_ROWS = 128
#: rows of a prompt its own pairs are read from (seeded draws beyond): 32,640 pairs, an error in kappa_ss
#: that D divides by N
PROMPT_ROWS = 256


def _gram(kernel: str, x: np.ndarray, sigma: float | None) -> np.ndarray:
    """promptprism's ``kernel`` among the rows ``x`` (float64): the cosine, or the gaussian from distances
    expanded on the rows centred on their mean (a block of one prompt's rows sits close together). Not
    :func:`~promptprism.kernels.kernel_gram`: its cancellation-safe distances (a check per block) made
    5,000 small blocks 4x slower, and one prompt's rows centred on their mean need no such check."""
    if kernel == "cosine":
        unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), np.finfo(np.float64).tiny)
        return unit @ unit.T
    z = x - x.mean(axis=0)
    sq = np.einsum("ij,ij->i", z, z)
    d2 = z @ z.T
    d2 *= -2.0
    d2 += sq[:, None]
    d2 += sq[None, :]
    np.maximum(d2, 0.0, out=d2)
    d2 *= -0.5 / sigma**2
    return np.exp(d2, out=d2)


def _pair_means(x: Any, rows: np.ndarray, labels: np.ndarray, kernel: str, sigma: float | None
                ) -> dict[int, float]:
    """{prompt: the mean of k over its ordered pairs of distinct rows} for prompts of at least 2 rows, the
    ``rows`` of ``x`` sorted by their ``labels``; whole prompts in blocks of up to :data:`BLOCK_ROWS` rows."""
    _, starts, counts = np.unique(labels, return_index=True, return_counts=True)
    means: dict[int, float] = {}
    lo = 0
    while lo < len(starts):
        hi, size = lo, 0
        while hi < len(starts) and (hi == lo or size + counts[hi] <= BLOCK_ROWS):
            size += counts[hi]
            hi += 1
        a, b = starts[lo], starts[lo] + size
        k = _gram(kernel, np.asarray(x[rows[a:b]], dtype=np.float64), sigma)
        own = labels[a:b]
        k[own[:, None] != own[None, :]] = 0.0
        np.fill_diagonal(k, 0.0)
        sums = np.bincount(np.searchsorted(own, own, side="left"), k.sum(axis=1), minlength=size)
        for q in range(lo, hi):
            if counts[q] > 1:
                means[int(labels[starts[q]])] = float(sums[starts[q] - a]) / (counts[q] * (counts[q] - 1))
        lo = hi
    return means


def design_correction(x: Any, labels: Any, *, kernel: str, sigma: float | None = None, cap: int = 1000,
                      seed: int = 0) -> float:
    """D = (sum_s pi_s kappa_ss - W) / N (module docstring): what the design-weighted within-set term of
    MMD^2 adds to the U-statistic's, for the rows ``x`` with prompt ``labels`` (None: rows drawn
    independently, 0) under promptprism's ``kernel`` ('gaussian' with ``sigma``, or 'cosine').
    ``cap``: rows for W, at most :data:`PROMPT_ROWS` (or ``cap``) per prompt (seeded draws without
    replacement beyond them)."""
    if labels is None:
        return 0.0
    labels = np.asarray(labels)
    n = x.shape[0]
    codes, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    if codes.size < 2 or counts.max() < 2:  # one prompt: the U-statistic is the design's; no pairs: nothing
        return 0.0
    rng = np.random.default_rng(seed)
    per_prompt = min(cap, PROMPT_ROWS)
    keep = np.concatenate([rows if rows.size <= per_prompt else sorted_subsample(rows, per_prompt, rng)
                           for rows in np.split(np.argsort(inverse, kind="stable"), np.cumsum(counts)[:-1])])
    kappa = _pair_means(x, keep, inverse[keep], kernel, sigma)
    some = sorted_subsample(n, cap, rng) if n > cap else np.arange(n)
    k = _gram(kernel, np.asarray(x[some], dtype=np.float64), sigma)
    w = (float(k.sum()) - float(np.trace(k))) / (some.size * (some.size - 1))
    shares = counts / n
    within = sum(shares[s] * kappa.get(s, w) for s in range(codes.size))
    return float((within - w) / n)


__all__ = ["design_correction"]

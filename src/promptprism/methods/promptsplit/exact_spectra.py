"""Every comparison's observed spectrum on the exact route, from the one joint Gram matrix of the K sets.

A comparison is a signed weighting D_c of the sets (:mod:`.comparisons`), zero on the rows it leaves out, so
the non-zero spectrum of Lambda_c = Psi^T D_c Psi is that of D_S G_SS on its own rows S (eq. 3):

* a pair (a, b) of small sets: its (n_a + n_b)-square block of G, every pair of the same sizes in one batch
  (:func:`pair_spectra`: Cholesky G_SS = L L^T, the symmetric L^T D_S L diagonalised, scores L w: the
  dense solve of :func:`~promptprism.stats.eigen.weighted_gram_eigenpairs` with a plain Cholesky factor in
  place of the pivoted one, batched over pairs; a block whose factor is near singular goes through that
  solve itself);
* a set against the pooled rest (every row): the top ``n_modes`` of each sign by Lanczos in the G inner
  product above :data:`REST_DENSE_MAX_ROWS` rows (:func:`~promptprism.stats.lanczos.weighted_gram_lanczos`,
  converged to 1e-13 of the largest eigenvalue: the selected modes of the dense solve to round-off, at a
  fraction of its O(N^3)); dense below; above :data:`REST_LOW_RANK_MAX_ROWS` rows every set's run in
  lockstep, one product with G per round (:func:`.core.exact_spectra_lockstep`: K = 8 sets of 1,500 rows,
  2-core AMD EPYC, the spectra 12.7 s -> 4.2 s);
* anything else: :func:`.core.exact_spectrum` on its rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...array_ops import blas_limits, map_in_threads
from ...backend import Backend
from ...stats.eigen import select_modes
from . import comparisons as kc
from . import core
from .route_base import take_rows

#: one-vs-rest comparisons on more rows than this report the top ``n_modes`` of each sign (Lanczos), not
#: every eigenvalue (a dense solve of all N rows per set; K = 50 sets of 20 rows: 1.7 s each, Lanczos 0.11 s)
REST_DENSE_MAX_ROWS = 256
#: comparisons of at most this many rows are solved one BLAS thread each, several at once (K >= 3, numpy)
REST_LOW_RANK_MAX_ROWS = kc.REST_LOW_RANK_MAX_ROWS
#: float64 entries of the stacked pair blocks solved at once
_BATCH_ENTRIES = 8 * 1024**2


def comparison_spectra(gram: Any, bounds: np.ndarray, comparisons: list, *, eta: float, n_modes: int,
                       solver: str, precision: str, backend: Backend) -> dict:
    """{c: :class:`.core.Spectrum`} of every comparison on the joint Gram matrix ``gram`` of the sets whose
    rows are ``bounds`` (K + 1 offsets): pairs in batches of their own blocks, one-vs-rest by Lanczos above
    :data:`REST_DENSE_MAX_ROWS` rows (``solver='auto'``, numpy), the rest by :func:`.core.exact_spectrum`."""
    counts = np.diff(bounds)
    model = np.repeat(np.arange(counts.size), counts)
    blocks = [c for c in comparisons
              if len(c[1]) == 1 and counts[c[0]] + counts[c[1][0]] <= kc.PAIR_BLOCK_MAX_ROWS]
    out = {}
    if solver == "auto" and isinstance(gram, np.ndarray) and counts.size > 2:
        with blas_limits(1):
            out = pair_spectra(gram, bounds, blocks, eta=eta, n_modes=n_modes, precision=precision)

    def solve(c: kc.Comparison) -> core.Spectrum:
        w = kc.comparison_weights(model, c, counts, eta)
        rows = np.flatnonzero(w != 0)
        how = "lanczos" if solver == "auto" and len(c[1]) > 1 and rows.size > REST_DENSE_MAX_ROWS else solver
        return core.exact_spectrum(take_rows(gram, rows, backend), w[rows], n_modes=n_modes, eta=eta,
                                   solver=how, precision=precision)

    rests = [c for c in comparisons if c not in out and len(c[1]) == counts.size - 1 > 1]
    if solver == "auto" and isinstance(gram, np.ndarray) and len(rests) > 1 and gram.shape[0] > max(
            REST_DENSE_MAX_ROWS, REST_LOW_RANK_MAX_ROWS):  # (each set against all the others: one G)
        out.update(zip(rests, core.exact_spectra_lockstep(
            gram, [kc.comparison_weights(model, c, counts, eta) for c in rests], n_modes=n_modes, eta=eta,
            precision=precision), strict=True))
    left = [c for c in comparisons if c not in out]
    pooled = counts.size > 2 and backend.name == "numpy" and all(
        int(counts[c[0]] + counts[list(c[1])].sum()) <= REST_LOW_RANK_MAX_ROWS for c in left)
    # (K-way's small solves one BLAS thread each, pooled; a comparison of many rows: the BLAS's threads)
    out.update(zip(left, map_in_threads(solve, left) if pooled else [solve(c) for c in left], strict=True))
    return {c: out[c] for c in comparisons}


def pair_spectra(gram: np.ndarray, bounds: np.ndarray, pairs: list, *, eta: float, n_modes: int,
                 precision: str) -> dict:
    """{(a, (b,)): Spectrum} of pairs from their blocks of G, batched over pairs of equal sizes: every
    eigenvalue of D_S G_SS (descending, scope 'all'), the top ``n_modes`` of each sign selected as
    :func:`.core.exact_spectrum` does, with their scores on the pair's rows (a's, then b's). A pair whose
    block is near singular (a Cholesky pivot within 1e3 of the pivoted factor's round-off tolerance) is left
    out: :func:`.core.exact_spectrum` drops the block's null directions."""
    sizes: dict[tuple[int, int], list] = {}
    counts = np.diff(bounds)
    for a, (b,) in pairs:
        sizes.setdefault((int(counts[a]), int(counts[b])), []).append((a, (b,)))
    eps = float(np.finfo(gram.dtype).eps)
    out = {}
    for (n_a, n_b), group in sizes.items():
        size = n_a + n_b
        w = np.r_[np.full(n_a, 1.0 / n_a), np.full(n_b, -eta / n_b)]
        step = max(1, _BATCH_ENTRIES // (size * size))
        for start in range(0, len(group), step):
            part = group[start:start + step]
            idx = np.stack([np.r_[bounds[a]:bounds[a + 1], bounds[b]:bounds[b + 1]] for a, (b,) in part])
            blocks = np.asarray(gram[idx[:, :, None], idx[:, None, :]], dtype=np.float64)
            factor, ok = _cholesky(blocks, tol=1e3 * size * eps)
            vals, vecs = np.linalg.eigh(np.swapaxes(factor, 1, 2) @ (w[None, :, None] * factor))
            vals, scores = vals[:, ::-1], (factor @ vecs)[:, :, ::-1]
            for i in np.flatnonzero(ok):
                sel = select_modes(vals[i], n_modes, 1.0 + eta, precision=precision)
                out[part[i]] = core.Spectrum(vals[i].copy(), sel, "all", scores=scores[i][:, sel])
    return out


def _cholesky(blocks: np.ndarray, *, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """(L, ok): lower Cholesky factors of the stacked blocks, and which have every pivot L_ii^2 above
    ``tol`` times the block's largest diagonal entry (the others: zeros, not ok)."""
    try:
        factor = np.linalg.cholesky(blocks)
    except np.linalg.LinAlgError:
        factor = np.zeros_like(blocks)
        for i, block in enumerate(blocks):
            try:
                factor[i] = np.linalg.cholesky(block)
            except np.linalg.LinAlgError:
                pass
    pivots = np.diagonal(factor, axis1=1, axis2=2) ** 2
    largest = np.max(np.diagonal(blocks, axis1=1, axis2=2), axis=1)
    return factor, np.all(pivots > tol * largest[:, None], axis=1)

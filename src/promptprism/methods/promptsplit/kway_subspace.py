"""K-way PromptSplit's exact route on many rows: every set's kernel second moment in one shared subspace.

The joint Gram matrix of K sets of n rows holds (K n)^2 numbers (8 x 5,000 rows: 12.8 GB in float64). Here
no N x N array exists: a seeded, label-free randomly pivoted Cholesky factor of the joint Gram matrix
(:func:`~promptprism.stats.subspaces.pivoted_cholesky_factor`, F = Psi Q with Q an orthonormal basis of the
span of the pivots' features, rank r) gives every set's second moment in that span,

    Q^T C_k Q = F_k^T F_k / n_k                                   (:func:`set_moments`; SPEC, eq. 2's C_k)

and every comparison's Lambda_c = sum_k w_k C_k (a pair, or a set against the pooled rest) restricted to it,
Q^T Lambda_c Q = sum_k w_k F_k^T F_k / n_k, an r x r matrix (:func:`comparison_matrix`): its extreme
eigenvalues are the Ritz values of Lambda_c on the span (never larger in magnitude than Lambda_c's own, equal
when the span holds every set's features, i.e. r reaches the rank of G), its eigenvectors z give the scores
psi(s) . Q z = F_s z. Memory: N r + K r^2 numbers, linear in K. The energy left out of each set,
eps_k = tr(C_k) - tr(Q^T C_k Q) (:func:`dropped_trace`), bounds every eigenvalue's error
(:func:`eigenvalue_bound`, Weyl's inequality).

The permutation test (:func:`moment_extremes`) runs on the test rows' leading principal directions of F
(rank :data:`TEST_RANK`, label-free, so the test is exact): per labelling the K sets' p x p moments once
(K SYRKs, the work every comparison shares), then every comparison's matrix from them and one stacked
eigen-solve.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ...array_ops import map_in_threads
from ...kernels.gram import joint_gram_columns
from ...stats.eigen import select_modes, signed_extremes, symmetric_extreme_eigenpairs
from ...stats.subspace_spectra import matrix_lanczos_extremes
from ...stats.subspaces import pivoted_cholesky_factor
from . import comparisons as kc
from . import core
from .relabel import canonical_positions, set_order
from .route_base import Replicates, Route

#: K-way exact fits (K >= 3, numpy) on more rows than this use the shared subspace (the joint Gram matrix
#: would hold more than 3.2 GB in float64); at most this many: the joint Gram matrix (``routes.ExactRoute``)
SUBSPACE_MIN_ROWS = 20_000
#: the shared subspace: at most SUBSPACE_RANK pivots, drawn SUBSPACE_BLOCK at a time, fewer once the
#: energy left out (tr(G - F F^T) / tr G) is at most SUBSPACE_TOLERANCE
SUBSPACE_RANK, SUBSPACE_BLOCK, SUBSPACE_TOLERANCE = 1024, 128, 1e-3
#: the permutation test's principal directions (two-way PromptSplit's first try, ``significance.NULL_RANK``;
#: at 256, its cap, the test of 8 x 5,000 rows took 3.9x the CPU of a two-way fit on 10,000: 36 dense
#: eigen-solves of 256 per labelling)
TEST_RANK = 128
#: the relabellings' comparison matrices wider than this: their extremes by lockstep Lanczos (10 labellings
#: of 8 x 5,000 rows, 360 matrices of 128: 0.185 s dense, 0.064 s in 16 steps, the top of each sign to
#: 4e-13)
LANCZOS_MIN_RANK = 64
#: rough seconds of the test (one thread): per labelling, a SYRK costing this per test row and squared
#: rank, and a dense eigen-solve of TEST_RANK per comparison
SECONDS_PER_ROW_RANK2 = 1e-10
#: bytes of moments and comparison matrices :func:`moment_extremes` holds at once (201 labellings of 3 sets at
#: rank 256 would take 0.6 GB at once, of 50 sets 125 GB)
MOMENT_BLOCK_BYTES = 128 * 2**20
#: the test's ``statistic`` record
STATISTIC = ("the extreme eigenvalues of every comparison's Lambda restricted to the test rows' {rank} "
             "leading principal directions of the shared subspace (a seeded pivoted-Cholesky factor of the "
             "joint Gram matrix), holding {energy:.2%} of their energy (trace), the same for every labelling")
SECONDS_PER_SOLVE = 1.5e-3


def wanted(k: int, total_rows: int, method: str, on_numpy: bool) -> bool:
    """Whether a K-way fit runs on the shared subspace: the exact method, K >= 3, numpy, more than
    :data:`SUBSPACE_MIN_ROWS` rows in all."""
    return method == "exact" and k >= 3 and on_numpy and total_rows > SUBSPACE_MIN_ROWS


def set_moments(factor: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """K x r x r float64: F_k^T F_k for the row blocks ``bounds`` (K + 1 offsets) of the factor, i.e.
    n_k Q^T C_k Q (SPEC eq. 2's second moment of set k, in the shared subspace); float32 products."""
    return np.stack([np.asarray(factor[a:b].T @ factor[a:b], dtype=np.float64)
                     for a, b in zip(bounds[:-1], bounds[1:], strict=True)])


def comparison_matrix(moments: np.ndarray, counts: np.ndarray, comparison: kc.Comparison, eta: float, *,
                      total: np.ndarray | None = None) -> np.ndarray:
    """Q^T Lambda_c Q = M_a / n_a - eta sum_{b in B} M_b / n_B (SPEC eq. 2: a pair, or a set against the
    pooled rest B), from the sets' moments M_k = F_k^T F_k (:func:`set_moments`). ``total``: sum_k M_k,
    when the caller has it: a rest of more than half the sets is then that total less the others (a
    set against all the others: one subtraction instead of K - 1 additions of r x r)."""
    first, second = comparison
    n_second = float(np.sum(counts[list(second)]))
    others = [k for k in range(len(moments)) if k != first and k not in second]
    if total is not None and len(others) < len(second) - 1:
        summed = total - moments[first] - (np.sum(moments[others], axis=0) if others else 0.0)
    else:
        summed = np.sum(moments[list(second)], axis=0)
    return moments[first] / float(counts[first]) - (eta / n_second) * summed


def dropped_trace(residual: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """eps_k = tr(C_k) - tr(Q^T C_k Q) = mean over set k's rows of (G - F F^T)_ii: each set's energy
    outside the shared subspace (``residual``: that diagonal, :func:`pivoted_cholesky_factor`)."""
    return np.array([float(np.mean(residual[a:b])) for a, b in zip(bounds[:-1], bounds[1:], strict=True)])


def eigenvalue_bound(eps: np.ndarray, trace: np.ndarray, counts: np.ndarray, comparison: kc.Comparison,
                     eta: float) -> float:
    """A bound on |lambda_i(Lambda_c) - lambda_i(Q^T Lambda_c Q)| for every i (Weyl's inequality):
    ||C - P C P||_2 <= eps + 2 sqrt(eps ||C||_2) for each C_k (eps = tr((I - P) C), ||C||_2 <= tr C), summed
    with the weights 1 and eta (the reference side's eps and trace: its sets' weighted by their rows)."""
    first, second = comparison
    b = list(second)
    eps_b = float(np.dot(eps[b], counts[b]) / counts[b].sum())
    tr_b = float(np.dot(trace[b], counts[b]) / counts[b].sum())

    def one(e: float, t: float) -> float:
        return e + 2.0 * float(np.sqrt(max(e, 0.0) * t))

    return one(float(eps[first]), float(trace[first])) + eta * one(eps_b, tr_b)


def subspace_spectrum(matrix: np.ndarray, factor_rows: np.ndarray, *, n_modes: int, eta: float,
                      precision: str, scope: str) -> core.Spectrum:
    """The top ``n_modes`` of each sign of Q^T Lambda_c Q (Lanczos, :func:`symmetric_extreme_eigenpairs`),
    selected as :func:`.core.exact_spectrum` does, with the scores F_s z of the comparison's rows."""
    n_each = min(n_modes, max(1, matrix.shape[0] // 2))
    vals, vecs = symmetric_extreme_eigenpairs(matrix, n_each)
    vals, vecs = np.asarray(vals, dtype=np.float64), np.asarray(vecs, dtype=np.float64)
    sel = select_modes(vals, n_modes, 1.0 + eta, precision=precision)
    scores = np.asarray(factor_rows @ vecs[:, sel].astype(np.float32), dtype=np.float64)
    return core.Spectrum(vals, sel, scope, scores=scores)


def principal_directions(factor: np.ndarray, rank: int) -> tuple[np.ndarray, float]:
    """(F V_p, held): the ``rank`` leading principal directions of F's rows (float32; V_p: the top
    eigenvectors of F^T F) and the squared norm they hold. Label-free: the test on them is exact."""
    vals, vecs = np.linalg.eigh(np.asarray(factor.T @ factor, dtype=np.float64))
    top = vecs[:, ::-1][:, :rank]
    return factor @ top.astype(np.float32), float(np.sum(vals[::-1][:rank]))


def moment_extremes(factor: np.ndarray, rows_of: list[np.ndarray], cols: np.ndarray, comparisons: list,
                    counts: np.ndarray, eta: float, widths: list[int], *, seed: int = 0
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(positive, |negative|) top ``widths`` eigenvalues of every comparison's P^T D_c P (SPEC eq. 2 on the
    test's principal directions P = ``factor``) for the labellings ``cols``, stacked side by side
    (:func:`.testing.stacked`'s layout). ``rows_of[k]``: L x n_k, the rows labelled k under each labelling
    (:func:`.comparisons.label_rows`). Per labelling the K moments once, then the comparisons' matrices:
    the observed labelling's (column 0, whose top modes are reported) and narrow ones
    (at most :data:`LANCZOS_MIN_RANK`) by one stacked dense eigen-solve, the relabellings' by lockstep
    Lanczos from one start vector drawn from ``seed`` (:func:`~promptprism.stats.subspace_spectra.
    matrix_lanczos_extremes`: each labelling's statistic one function of its weights). The labellings go
    through in blocks whose moments and matrices hold at most :data:`MOMENT_BLOCK_BYTES`."""
    p = factor.shape[1]
    block = max(1, MOMENT_BLOCK_BYTES // (8 * (len(counts) + len(comparisons)) * p * p))
    if cols.size > block:  # (labellings in blocks: each one's numbers do not depend on the others)
        parts = [moment_extremes(factor, rows_of, cols[i:i + block], comparisons, counts, eta, widths,
                                 seed=seed) for i in range(0, cols.size, block)]
        return np.concatenate([q[0] for q in parts]), np.concatenate([q[1] for q in parts])
    pos = np.zeros((cols.size, sum(widths)))
    neg = np.zeros_like(pos)
    offsets = np.r_[0, np.cumsum(widths)]
    moments = np.stack([_moments(factor, rows_of, col) for col in cols])  # (L, K, p, p)
    weights = comparison_set_weights(counts, comparisons, eta)
    mats = np.matmul(weights, moments.reshape(cols.size, len(counts), -1)
                     ).reshape(cols.size, len(comparisons), p, p)  # (L, comps, p, p)
    del moments
    dense = (cols == 0) | (p <= LANCZOS_MIN_RANK)
    top = max(widths)
    for pick, solve in ((dense, lambda m: signed_extremes(np.linalg.eigvalsh(m), top)),
                        (~dense, lambda m: matrix_lanczos_extremes(m, top, seed=seed))):
        if not pick.any():
            continue
        p_all, n_all = (x.reshape(int(pick.sum()), len(comparisons), top)
                        for x in solve(mats[pick].reshape(-1, *mats.shape[2:])))
        for j, w in enumerate(widths):
            pos[pick, offsets[j]:offsets[j + 1]] = p_all[:, j, :w]
            neg[pick, offsets[j]:offsets[j + 1]] = n_all[:, j, :w]
    return pos, neg


def comparison_set_weights(counts: np.ndarray, comparisons: list, eta: float) -> np.ndarray:
    """W (comparisons x K): row c holds :func:`comparison_matrix`'s weights, 1 / n_a on its set a and
    -eta / n_B on each set of its rest B (:func:`.comparisons.comparison_weights` of one row per set), so
    that Q^T Lambda_c Q = sum_k W[c, k] M_k (one product for all comparisons)."""
    sets = np.arange(len(counts))
    return np.array([kc.comparison_weights(sets, c, counts, eta) for c in comparisons]
                    ).reshape(len(comparisons), len(counts))


def comparison_distances(inner: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """||Q^T Lambda_c Q||_F^2 = w_c^T <M_k, M_l> w_c for each row w_c of ``weights``
    (:func:`comparison_set_weights`), from the K x K Frobenius inner products of the sets' moments: no r x r
    matrix formed (round-off relative to sum_k |w_k| ||M_k||, squared)."""
    return np.maximum(np.einsum("ci,ij,cj->c", weights, inner, weights), 0.0)


def _moments(factor: np.ndarray, rows_of: list[np.ndarray], col: int) -> np.ndarray:
    """K x p x p float64: F_k^T F_k of the rows labelled k under labelling ``col`` (float32 products; one
    SYRK each: numpy multiplies an array by its own transpose that way, half a GEMM's work)."""
    out = np.empty((len(rows_of), factor.shape[1], factor.shape[1]))
    for k, r in enumerate(rows_of):
        rows = factor[r[col]]
        out[k] = rows.T @ rows
    return out


def test_seconds(k: int, null_rows: int, permutations: int, threads: int = 1) -> float:
    """Rough seconds of :func:`moment_extremes` over every labelling: K SYRKs of the test rows and
    K(K-1)/2 + K eigen-solves of :data:`TEST_RANK` per labelling."""
    pairs, rest = kc.comparisons(int(k))
    per = (SECONDS_PER_ROW_RANK2 * float(null_rows) * TEST_RANK**2
           + SECONDS_PER_SOLVE * (len(pairs) + len(rest)))
    return (int(permutations) + 1) * per / max(1, int(threads))


class SubspaceRoute(Route):
    """K-way exact route without the joint Gram matrix: per-set moments in one shared subspace (module
    doc). Distances ||Q^T Lambda_c Q||_F^2 (the compression's: at most ||Lambda_c||_F^2)."""

    name = "exact"

    def covariance(self, timings: dict) -> dict:
        """The shared factor F (seeded pivots over all rows pooled), every set's moments, the distances."""
        est, t0 = self.est, time.perf_counter()
        prompts = np.concatenate([s.prompt_embeddings for s in self.sets])
        outputs = np.concatenate([s.output_embeddings for s in self.sets])

        columns = joint_gram_columns(prompts, outputs, kernel=est.kernel, sigma_prompt=self.sigmas[0],
                                     sigma_output=self.sigmas[1], precision="float32")
        size = int(self.counts.sum())
        at = canonical_positions(self.counts, set_order(self.sets))
        self.factor, residual = pivoted_cholesky_factor(columns, size, min(SUBSPACE_RANK, size),
                                                        block=SUBSPACE_BLOCK, tolerance=SUBSPACE_TOLERANCE,
                                                        seed=est.seed, positions=at)
        self.eps = dropped_trace(residual, self.bounds)
        self.moments = set_moments(self.factor, self.bounds)
        self.total = np.sum(self.moments, axis=0)
        flat = self.moments.reshape(len(self.sets), -1)
        self.inner = flat @ flat.T  # <M_k, M_l>
        self.traces = np.ones(len(self.sets))  # (normalised kernels: k(x, x) = 1)
        self.subspace: dict = {}
        timings["gram_s"] = time.perf_counter() - t0
        weights = comparison_set_weights(self.counts, self.comparisons, est.eta)
        return dict(zip(self.comparisons, map(float, comparison_distances(self.inner, weights)), strict=True))

    def _matrix(self, c: kc.Comparison) -> np.ndarray:
        """Comparison c's Q^T Lambda_c Q (:func:`comparison_matrix`, from the sets' moments and their sum)."""
        return comparison_matrix(self.moments, self.counts, c, self.est.eta, total=self.total)

    def distance_matrix(self) -> np.ndarray:
        """||Q^T (C_a - eta C_b) Q||_F^2 for every ordered pair."""
        k = len(self.sets)
        pairs = [(a, (b,)) for a in range(k) for b in range(k)]
        weights = comparison_set_weights(self.counts, pairs, self.est.eta)
        return comparison_distances(self.inner, weights).reshape(k, k)

    def spectrum(self, timings: dict) -> dict:
        """Each comparison's Ritz values and scores (:func:`subspace_spectrum`), one BLAS thread each."""
        est, t0 = self.est, time.perf_counter()

        def solve(c: kc.Comparison) -> core.Spectrum:
            rows = np.flatnonzero(np.isin(self.model, (c[0], *c[1])))
            bound = eigenvalue_bound(self.eps, self.traces, self.counts, c, est.eta)
            scope = (f"top {est.n_modes} of each sign, Ritz values in a shared subspace of rank "
                     f"{self.factor.shape[1]} (energy left out per set <= {float(self.eps.max()):.3g}; "
                     f"|error| <= {bound:.3g}, docs/promptsplit.md)")
            every = rows.size == self.factor.shape[0]  # (a set against all the others: no copy of F)
            return subspace_spectrum(self._matrix(c), self.factor if every else self.factor[rows],
                                     n_modes=est.n_modes, eta=est.eta, precision="float32", scope=scope)

        with self._status(f"{int(self.counts.sum())} samples, shared subspace"):  # (one BLAS thread each)
            out = dict(zip(self.comparisons, map_in_threads(solve, self.comparisons), strict=True))
        timings["eigen_s"] = time.perf_counter() - t0
        return out

    def mode_stats(self, spectra: dict, labels: list, n_groups: int, timings: dict) -> dict:
        """Scores from the Ritz vectors (no second pass)."""
        return {c: self._side_stats(c, np.flatnonzero(np.isin(self.model, (c[0], *c[1]))), spec.scores,
                                    labels, n_groups) for c, spec in spectra.items()}

    def replicates(self, compress: bool = True) -> Replicates:
        """("subspace", P): the test rows' :data:`TEST_RANK` leading principal directions of F."""
        def operand(*rows: np.ndarray) -> tuple[str, Any]:
            idx = np.concatenate([self.bounds[k] + r for k, r in enumerate(rows)])
            p, held = principal_directions(self.factor[idx], TEST_RANK)
            self.subspace.update(rank=int(p.shape[1]), energy=held / idx.size, full=False, factor=True,
                                 statistic=STATISTIC.format(rank=int(p.shape[1]), energy=held / idx.size))
            return "subspace", p

        return operand

    def resolved(self) -> dict:
        """No feature dimension, no partitions on this route."""
        return {"n_features": None, "partition_rows": None}

    def release(self) -> None:
        """Drop the factor and the moments."""
        self.factor = self.moments = None

"""PromptSplit's functional core: pure functions over arrays for the spectrum, the scores and the prompts.

With psi(t, z) = phi_T(t) (x) phi_Z(z) (SPEC: the joint feature map of the product kernel k_T k_Z),

    Lambda = (1/n) sum_i psi(t_i, x_i) psi(t_i, x_i)^T - (eta/m) sum_j psi(t'_j, y_j) psi(t'_j, y_j)^T
           = Psi^T D Psi,   D = diag(1/n 1_n, -eta/m 1_m)                         (PromptSplit paper, eq. 2)

* exact route: the non-zero eigenvalues of Lambda are those of D G, G = Psi Psi^T = K_T o K_Z (eq. 3),
  computed from a factor G = L L^T (:func:`exact_spectrum`);
* random-feature routes: Lambda_r = C_test - eta C_ref of r-dimensional random features, diagonalised
  directly (:func:`feature_spectrum`).

A prompt's contribution to an eigenvalue and its disagreement score (:func:`prompt_contributions`,
:func:`prompt_disagreement`) follow from the per-prompt sums of squared scores.

Backends: the array functions here run on numpy or torch (``promptprism.backend``): the inputs' backend, or
the ``backend`` argument of the streaming tasks, which move each chunk there; what they return for the
results (spectra, scores, accumulators) is numpy.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._validation import chunks
from ...array_ops import map_in_threads, sorted_subsample
from ...backend import NUMPY, Backend, backend_of, dtype_name, is_numpy, to_numpy
from ...kernels.bandwidth import Bandwidth, stable_bandwidth, stable_multiples
from ...kernels.features import PhaseRange
from ...kernels.gram import covariance_difference_norm, joint_gram
from ...stats.accumulators import CovarianceAccumulator, KeyedCovarianceAccumulator
from ...stats.eigen import (
    lanczos_too_wide,
    select_modes,
    signed_extremes,
    symmetric_eigenpairs,
    symmetric_extreme_eigenpairs,
    weighted_gram_eigenpairs,
)
from ...stats.lanczos import weighted_gram_lanczos_runs
from ...stats.modes import ModeStats
from .comparisons import TEST_VS_REFERENCE, comparison_weights
from .relabel import set_order

#: ||Lambda||_F^2 = tr(D G D G) = sum_ij D_i D_j G_ij^2 from the joint Gram matrix (the PromptSplit distance,
#: SPEC): the kernels' :func:`~promptprism.kernels.gram.covariance_difference_norm`, also what the torch
#: guidance loss computes
promptsplit_distance_from_gram = covariance_difference_norm


def signed_weights(n: int, m: int, eta: float) -> np.ndarray:
    """D = diag(1/n 1_n, -eta/m 1_m), the signed sample weights of Lambda = Psi^T D Psi (eq. 2): the
    test-vs-reference :func:`.comparisons.comparison_weights` of n test rows, then m reference rows."""
    return comparison_weights(np.repeat([0, 1], [n, m]), TEST_VS_REFERENCE, (n, m), eta)


@dataclass(frozen=True)
class Spectrum:
    """Lambda's spectrum and the modes chosen from it.

    ``eigenvalues``: what the solver computed, descending (``scope`` says whether that is the whole
    spectrum); ``selected``: indices of the reported modes (top positive, then top negative); ``scores``
    (exact route: psi(s) . v_j for every sample s and selected mode j) or ``basis`` (random features: the
    selected unit eigenvectors, r x k).
    """

    eigenvalues: np.ndarray
    selected: np.ndarray
    scope: str
    scores: np.ndarray | None = None
    basis: np.ndarray | None = None

    @property
    def mode_eigenvalues(self) -> np.ndarray:
        """The selected modes' eigenvalues."""
        return self.eigenvalues[self.selected]


def exact_spectrum(gram: np.ndarray, weights: np.ndarray, *, n_modes: int, eta: float,
                   solver: str = "auto", precision: str = "float64") -> Spectrum:
    """Eigenvalues of D G (eq. 3) and the scores of every sample on the top ``n_modes`` modes of each sign.

    ``solver='dense'`` keeps the whole spectrum; 'lanczos' computes only the extremes; 'auto' diagonalises
    fully up to :data:`~promptprism.stats.eigen.GRAM_LANCZOS_MIN_ROWS` samples, and up to
    :data:`~promptprism.stats.eigen.DENSE_SIZE_LIMIT` when Lanczos does not converge within its budget (a
    dense solve keeps the whole spectrum).
    ``precision``: the precision G was computed in (sets the round-off below which no mode is reported).
    """
    want = None if solver == "dense" else n_modes
    eig = weighted_gram_eigenpairs(gram, weights, n_positive=want, n_negative=want, solver=solver)
    vals, scores = to_numpy(eig.eigenvalues), to_numpy(eig.scores)
    if eig.spectrum is not None:  # a dense solve: report the whole spectrum it computed
        sel = select_modes(vals, n_modes, 1.0 + eta, precision=precision)
        return Spectrum(to_numpy(eig.spectrum), eig.kept[sel], "all", scores=scores[:, sel])
    return _solved_spectrum(vals, scores, n_modes=n_modes, eta=eta, precision=precision,
                            whole=want is None)


def _solved_spectrum(vals: np.ndarray, scores: np.ndarray, *, n_modes: int, eta: float, precision: str,
                     whole: bool = False) -> Spectrum:
    """The Spectrum of the eigenvalues a solver computed (``whole``: all of them, else the top ``n_modes`` of
    each sign) with the scores of the modes selected from them."""
    sel = select_modes(vals, n_modes, 1.0 + eta, precision=precision)
    return Spectrum(vals, sel, "all" if whole else f"top {n_modes} of each sign", scores=scores[:, sel])


def exact_spectra_lockstep(gram: np.ndarray, weights: list[np.ndarray], *, n_modes: int, eta: float,
                           precision: str = "float64") -> list[Spectrum]:
    """:func:`exact_spectrum` with ``solver='lanczos'`` for each weighting of one numpy G (K-way: each set
    against the pooled rest), the runs in lockstep (:func:`~promptprism.stats.lanczos.
    weighted_gram_lanczos_runs`: one product with G per round for all of them)."""
    if lanczos_too_wide(gram.shape[0], n_modes, n_modes):  # (the dense solve answers)
        return [exact_spectrum(gram, w, n_modes=n_modes, eta=eta, solver="lanczos", precision=precision)
                for w in weights]
    gram = gram if gram.dtype == np.float32 else np.asarray(gram, dtype=np.float64)
    found = weighted_gram_lanczos_runs(gram, [np.asarray(w, dtype=np.float64) for w in weights], n_modes,
                                       n_modes)
    return [_solved_spectrum(vals, scores, n_modes=n_modes, eta=eta, precision=precision)
            for vals, scores in found]


#: ``solver='auto'`` diagonalises Lambda_r fully up to this many features, and computes only the top modes
#: (Lanczos) above: a full decomposition of r = 3000 takes ~9 s here, the top 2 x 10 modes well under 1 s
FEATURE_DENSE_LIMIT = 1000


def feature_spectrum(lam: np.ndarray, *, n_modes: int, eta: float, solver: str = "auto",
                     precision: str = "float64") -> Spectrum:
    """Eigenpairs of the r x r Lambda_r = C_test - eta C_ref (random-feature routes) and the top modes.

    ``solver='dense'``: every eigenpair; 'lanczos': the ``n_modes`` largest and smallest only; 'auto':
    dense up to :data:`FEATURE_DENSE_LIMIT` features, lanczos above. Lambda_r itself is float64 (the
    accumulators' running sums); ``precision`` is that of the features, which sets the round-off below
    which no mode is reported and the precision of lanczos' products. A torch ``lam`` is diagonalised on its
    device; the spectrum comes back numpy.
    """
    r = lam.shape[0]
    if solver == "lanczos" or (solver == "auto" and r > FEATURE_DENSE_LIMIT):
        vals, vecs = symmetric_extreme_eigenpairs(lam, n_modes, precision=precision)
        scope = "all" if vals.shape[0] == r else f"top {n_modes} of each sign"
    else:
        vals, vecs = symmetric_eigenpairs(lam)
        scope = "all"
    vals, vecs = to_numpy(vals), to_numpy(vecs)
    sel = select_modes(vals, n_modes, 1.0 + eta, precision=precision)
    return Spectrum(vals, sel, scope, basis=vecs[:, sel])


def prompt_contributions(sum_sq_test: np.ndarray, sum_sq_ref: np.ndarray, n: int, m: int, eta: float
                         ) -> np.ndarray:
    """c_p = (1/n) sum_{i in p} s_i^2 - (eta/m) sum_{j in p} s_j^2: prompt p's exact share of lambda.

    Since lambda = v^T Lambda v = (1/n) sum_i s_i^2 - (eta/m) sum_j s_j^2 (eq. 2 with s = psi . v), the
    contributions of all prompts add up to the eigenvalue. Arrays of shape (prompts, ...) broadcast.
    """
    return np.asarray(sum_sq_test) / n - eta * np.asarray(sum_sq_ref) / m


def prompt_disagreement(eigenvalues: np.ndarray, contributions: np.ndarray) -> np.ndarray:
    """d_p = sum_j lambda_j c_pj over the modes j given (contributions: prompts x modes).

    Since sum_p c_pj = lambda_j, the d_p add up to sum_j lambda_j^2, the part of ||Lambda||_F^2 the modes
    capture; a prompt's share is d_p / sum_j lambda_j^2.
    """
    c = np.asarray(contributions, dtype=np.float64).reshape(-1, len(eigenvalues))
    return c @ np.asarray(eigenvalues, dtype=np.float64)


def paired_subsample(sets: list, size: int, seed: int) -> tuple[np.ndarray, ...]:
    """(prompts, outputs) of at most ``size`` seeded random rows of each set, set after set, as arrays; the
    rows drawn in the sets' canonical order (:func:`~promptprism.array_ops.canonical_order`), so each set
    gives the same rows whatever the order the sets came in."""
    rng = np.random.default_rng(seed)
    picked: list = [None] * len(sets)
    for k in set_order(sets):
        s = sets[int(k)]
        idx = sorted_subsample(len(s), min(size, len(s)), rng)
        picked[int(k)] = [np.asarray(s.prompt_embeddings[idx]), np.asarray(s.output_embeddings[idx])]
    return tuple(a for pair in picked for a in pair)


def difference_partition(fmap: Any, parts: list[tuple], chunk_size: int, backend: Backend = NUMPY
                         ) -> CovarianceAccumulator:
    """Task: the sum over ``parts`` (prompts, outputs, start, stop, weight, features_out) of
    weight * sum_i psi psi^T over rows [start, stop), in one running sum. With weights 1/n (test rows) and
    -eta/m (reference rows) the merged sums of all tasks are Lambda = C_test - eta C_ref (eq. 2): one
    dim x dim sum per task, not one per set. Each chunk's features and update are in the feature map's
    precision, on ``backend``; the running sum float64 there and returned as numpy, so partitions merge and
    travel as plain arrays. ``features_out``: an (N, r) array of ``backend`` (N >= stop) whose rows
    [start, stop) receive the features, kept for the scoring pass (:func:`mode_stats_from_features`)
    instead of computing them twice."""
    acc = CovarianceAccumulator(fmap.dim, precision=getattr(fmap, "precision", "float64"))
    phases = PhaseRange()
    for weight, feats in _part_features(fmap, parts, chunk_size, backend, phases):
        acc.update(feats, weight)
    phases.check()
    return acc.to_host()


def side_moments_partition(fmap: Any, parts: list[tuple], chunk_size: int, backend: Backend = NUMPY
                           ) -> KeyedCovarianceAccumulator:
    """Task: for each of ``parts`` (prompts, outputs, start, stop, side, features_out), sum_i psi psi^T over
    rows [start, stop) added to the running sum of its ``side``: the merged sums S_test and S_ref of all
    tasks give Lambda = S_test / n - eta S_ref / m (eq. 2) and the pooled second moment S_test + S_ref (no
    relabelling changes it: the test's subspace,
    :func:`~promptprism.stats.subspaces.leading_eigenvectors`) from the same products. ``features_out``
    as in :func:`difference_partition`."""
    acc = KeyedCovarianceAccumulator(fmap.dim, precision=getattr(fmap, "precision", "float64"))
    phases = PhaseRange()
    for side, feats in _part_features(fmap, parts, chunk_size, backend, phases):
        acc.update(side, feats)
    phases.check()
    return acc.to_host()


def _part_features(fmap: Any, parts: list[tuple], chunk_size: int, backend: Backend,
                   phases: PhaseRange) -> Iterator[tuple]:
    """(the part's tag, the features of one chunk of its rows) for each chunk of each of ``parts``
    (prompts, outputs, start, stop, tag, features_out); the rows also written to ``features_out``. On a
    device the phases' range goes to ``phases``, which the caller checks once the pass is done."""
    for prompts, outputs, start, stop, tag, features_out in parts:
        for a, b in chunks(stop - start, chunk_size):
            rows = slice(start + a, start + b)
            out = None if features_out is None else features_out[rows, ...]
            yield tag, fmap.transform(backend.asarray(prompts[rows]), backend.asarray(outputs[rows]), out=out,
                                      phases=phases)


def _fold_scores(stats: ModeStats, feats: Any, basis: Any, ids: np.ndarray, labels: np.ndarray) -> None:
    stats.update(ids, labels, to_numpy(feats @ backend_of(feats).asarray(basis, dtype_name(feats))))


def mode_stats_partition(fmap: Any, basis: np.ndarray, prompts: Any, outputs: Any, start: int, stop: int,
                         labels: np.ndarray, first_index: int, chunk_size: int, top_k: int, n_groups: int,
                         backend: Backend = NUMPY) -> ModeStats:
    """Task: scores psi(s) . v_j of rows [start, stop) on the chosen modes, folded into ModeStats.

    ``first_index`` is the global index of row ``start`` in its set; ``labels`` holds the partition's
    prompt labels. Features and scores are computed on ``backend``; the statistics are numpy.
    """
    stats = ModeStats.empty(top_k, basis.shape[1], n_groups)
    if backend.name != "numpy":  # the scores of every chunk kept on the device, read back once
        phases, modes = PhaseRange(), None
        scores = []
        for a, b in chunks(stop - start, chunk_size):
            feats = fmap.transform(backend.asarray(prompts[start + a : start + b]),
                                   backend.asarray(outputs[start + a : start + b]), phases=phases)
            modes = backend.asarray(basis, dtype_name(feats)) if modes is None else modes
            scores.append(feats @ modes)
        phases.check()
        if scores:
            stats.update(np.arange(first_index, first_index + stop - start), labels,
                         to_numpy(backend.xp.concat(scores)))
        return stats
    for a, b in chunks(stop - start, chunk_size):
        feats = fmap.transform(backend.asarray(prompts[start + a : start + b]),
                               backend.asarray(outputs[start + a : start + b]))
        _fold_scores(stats, feats, basis, np.arange(first_index + a, first_index + b), labels[a:b])
    return stats


#: rows of kept features one product of the scoring reads at a time (numpy): a few MB, so the product
#: streams them once (measured, 60,000 x 3000 float32 against 20 modes: 0.080 s in steps of 8,192 rows,
#: 0.064 s in steps of 1,024)
SCORE_ROWS = 1024


def mode_stats_from_features(feats: Any, basis: np.ndarray, labels: np.ndarray, *, chunk_size: int,
                             top_k: int, n_groups: int, first_index: int = 0) -> ModeStats:
    """:func:`mode_stats_partition` over all rows of features already computed (N x r, numpy or torch);
    ``first_index``: the global index of row 0 (a set within a side of several sets)."""
    stats = ModeStats.empty(top_k, basis.shape[1], n_groups)
    if not is_numpy(feats):  # all rows' scores (N x k) in one product on the device, read back once
        if feats.shape[0]:
            _fold_scores(stats, feats, basis, np.arange(first_index, first_index + feats.shape[0]), labels)
        return stats
    modes = np.asarray(basis, dtype=feats.dtype)
    scores = np.empty((min(chunk_size, feats.shape[0]), modes.shape[1]), dtype=feats.dtype)
    for a, b in chunks(feats.shape[0], chunk_size):
        for c, d in chunks(b - a, SCORE_ROWS):
            np.matmul(feats[a + c:a + d], modes, out=scores[c:d])
        stats.update(np.arange(first_index + a, first_index + b), labels[a:b], scores[: b - a])
    return stats


def feature_rows(fmap: Any, prompts: Any, outputs: Any, rows: np.ndarray, chunk_size: int,
                 backend: Backend = NUMPY) -> Any:
    """psi of the given rows (sorted indices), computed chunk by chunk on ``backend``: (len(rows), r)."""
    xp = backend.xp
    out = xp.empty((rows.size, fmap.dim), dtype=getattr(xp, getattr(fmap, "precision", "float64")),
                   device=backend.device)
    phases = PhaseRange()
    for a, b in chunks(rows.size, chunk_size):
        idx = rows[a:b]
        out[a:b, ...] = fmap.transform(backend.asarray(prompts[idx]), backend.asarray(outputs[idx]),
                                       phases=phases)
    phases.check()
    return out


def top_eigenvalues(prompts_a: np.ndarray, outputs_a: np.ndarray, prompts_b: np.ndarray,
                    outputs_b: np.ndarray, *, kernel: str, sigma_prompt: float | None,
                    sigma_output: float | None, eta: float, n_top: int, backend: Backend = NUMPY
                    ) -> np.ndarray:
    """[top n_top positive eigenvalues, top n_top |negative| ones] of D G (eq. 3), zero-padded: the
    quantity the 'stable' bandwidth rule watches (dense, for a few hundred samples; on ``backend``)."""
    gram = joint_gram(prompts_a, outputs_a, prompts_b, outputs_b, kernel=kernel, sigma_prompt=sigma_prompt,
                      sigma_output=sigma_output, backend=backend)
    n, m = len(prompts_a), len(prompts_b)
    eig = weighted_gram_eigenpairs(gram, signed_weights(n, m, eta), n_positive=n_top, n_negative=n_top,
                                   solver="dense")
    pos, neg = signed_extremes(to_numpy(eig.eigenvalues if eig.spectrum is None else eig.spectrum), n_top)
    return np.r_[pos, neg]


def stable_scan(subsample: tuple, sigmas: dict[str, float], key: str, *, eta: float, n_top: int,
                backend: Backend = NUMPY) -> dict:
    """The 'stable' rule for ``sigma_<key>``: the top eigenvalues of D G (eq. 3, :func:`top_eigenvalues`) on
    ``subsample`` (prompts, outputs of each set in turn: two-way test then reference) of every pair of
    sets, at each multiple of the median ``sigmas[key]``, the other bandwidth held at ``sigmas``; the scan
    and the smallest sigma at which every pair's are stable
    (:func:`~promptprism.kernels.bandwidth.stable_bandwidth`)."""
    k = len(subsample) // 2
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    tops = []
    for sigma in stable_multiples(sigmas[key]):
        s = dict(sigmas, **{key: sigma})
        tops.append(np.concatenate([
            top_eigenvalues(*subsample[2 * a:2 * a + 2], *subsample[2 * b:2 * b + 2], kernel="gaussian",
                            sigma_prompt=s["prompt"], sigma_output=s["output"], eta=eta, n_top=n_top,
                            backend=backend) for a, b in pairs]))
    return stable_bandwidth(tops, sigmas[key])


def pooled_bandwidths(rules: dict[str, Bandwidth], sets: list, *, seed: int) -> dict[str, Bandwidth]:
    """Each bandwidth rule ({'prompt': ..., 'output': ...}) resolved on the seeded pool of every set's rows
    (:meth:`~promptprism.kernels.bandwidth.Bandwidth.resolve_pooled`); the median rules side by side on
    threads (2 x 30,000 rows: 0.1 s -> 0.05 s), the same numbers."""
    def resolved(key: str) -> Bandwidth:
        rows = [getattr(s, f"{key}_embeddings") for s in sets]
        # (one prompt shared by every row is a comparison of its own: its prompt kernel is 1 at any bandwidth)
        return rules[key].resolve_pooled(rows, name=f"sigma_{key}", seed=seed, one_point_ok=key == "prompt")

    keys = list(rules)
    return dict(zip(keys, map_in_threads(resolved, keys), strict=True))


def stable_bandwidths(bandwidths: dict[str, Bandwidth], sets: dict | list, *, seed: int, eta: float,
                      stable_samples: int, stable_top: int, backend: Backend = NUMPY
                      ) -> tuple[dict[str, Bandwidth], dict[str, dict]]:
    """The resolved bandwidths {'prompt': ..., 'output': ...} with each 'stable' one chosen by the scan of
    :func:`stable_scan` (on ``stable_samples`` rows per set of ``sets``: two-way's {'test', 'reference'} or
    K sets, prompt first, from its median), and the scans by key."""
    out = dict(bandwidths)
    scans: dict[str, dict] = {}
    stable = [key for key, bw in out.items() if bw.rule == "stable"]
    members = list(sets.values()) if isinstance(sets, dict) else list(sets)
    sub = paired_subsample(members, stable_samples, seed) if stable else ()
    for key in stable:
        scans[key] = stable_scan(sub, {k: b.value for k, b in out.items()}, key, eta=eta, n_top=stable_top,
                                 backend=backend)
        out[key] = out[key].chosen(scans[key]["chosen"], scans[key]["note"])
    return out, scans


def same_pairs(a: Any, b: Any) -> bool:
    """Whether two PairedSets hold the same (prompt, output) pairs, in any order (checked when they fit in
    memory: at most 50 million values; larger sets count as different)."""
    if a is b:
        return True
    if len(a) != len(b) or len(a) * (a.dim_prompt + a.dim_output) > 50_000_000:
        return False
    # cheap necessary condition first: the same rows have the same multiset of first coordinates
    for attr in ("prompt_embeddings", "output_embeddings"):
        first = [np.sort(np.asarray(getattr(s, attr)[0 : len(s)])[:, 0]) for s in (a, b)]
        if not np.array_equal(first[0], first[1]):
            return False
    rows = []
    for s in (a, b):
        x = np.ascontiguousarray(np.concatenate(
            [np.asarray(s.prompt_embeddings[0 : len(s)], dtype=np.float64),
             np.asarray(s.output_embeddings[0 : len(s)], dtype=np.float64)], axis=1))
        rows.append(np.sort(x.view(np.dtype((np.void, x.dtype.itemsize * x.shape[1]))).ravel()))
    return bool(np.array_equal(rows[0], rows[1]))

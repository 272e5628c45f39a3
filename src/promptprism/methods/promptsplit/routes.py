"""The comparison engine's routes to every comparison's spectrum, chosen once per fit.

The interface (:class:`~.route_base.Route`: ``covariance``, ``spectrum``, ``mode_stats``, ``replicates``)
serves two-way PromptSplit (K = 2, the one comparison test-vs-reference) and K-way PromptSplit (every pair and
each set against the pooled rest) alike, on any backend (``device``).

Routes: :class:`~.exact_route.ExactRoute` (``exact``, eq. 3: :func:`~.core.exact_spectrum` on the joint
Gram matrix of all K sets, each comparison from its rows with its signed weights, O(N^2) memory; its own
module) and :class:`FeatureRoute`
(``rff``: gaussian random Fourier features; ``sketch``: cosine tensor-sketch projection; the K r x r second
moments accumulated in one streaming pass through the runner, each comparison's Lambda_r diagonalised by
:func:`~.core.feature_spectrum`, a second pass scoring the samples).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..._progress import progress_enabled
from ...array_ops import blas_thread_count
from ...backend import NUMPY, Backend, feature_memory, is_numpy, to_numpy
from ...data.paired import PairedSet
from ...kernels.bandwidth import pooled_rows
from ...kernels.features import ProductRandomFourierFeatures, ProductRandomProjection
from ...scale.runner import DaskRunner, Runner, balanced_blocks, partition_rows, partition_size
from ...stats.eigen import prefetch_extreme_solver
from ...stats.modes import ModeStats
from ...stats.subspaces import leading_eigenpairs, leading_rank
from . import comparisons as kc
from . import core
from . import significance as sig
from .exact_route import ExactRoute
from .operand_ahead import PROJECTION_ROWS, OperandAhead, pieces_of, project_pieces
from .relabel import set_order
from .route_base import Replicates, Route
from .summary import SIDES


class FeatureRoute(Route):
    """``rff`` / ``sketch``: Lambda_r of an r-dimensional random feature map, streamed through the runner.

    In this process, when every feature fits the memory budget (:func:`~promptprism.backend.feature_memory`),
    the features of the covariance pass are kept for scoring (and the test); else (or on a cluster: workers
    use numpy) both passes stream. Every set's rows go through one map-reduce that keeps each set's sum
    S_k = sum_i psi psi^T apart (:func:`.core.side_moments_partition`): each comparison's Lambda_r is their
    signed weighting, and their total the pooled second moment of the test's label-free subspace.
    """

    NOTES = {
        "rff": ("measured on text (MiniLM, one of ten topics hedged, n = m = 240, 50 sets): this route found "
                "the planted topic in 0.16 of the sets, the exact gaussian route in 0.14 "
                "(docs/promptsplit.md)"),
        "sketch": ("measured on text (MiniLM, one of ten topics hedged, n = m = 240, 50 sets): this route "
                   "found the planted topic in 0.24 of the sets, the exact cosine route in 0.22 "
                   "(docs/promptsplit.md)"),
    }

    def __init__(self, name: str, est: Any, sets: dict[str, PairedSet] | list[PairedSet], sigmas: tuple, *,
                 precision: str, backend: Backend, runner: Runner, comparisons: list | None = None) -> None:
        super().__init__(est, sets, sigmas, precision=precision, backend=backend, comparisons=comparisons)
        self.name, self.test_note, self.runner = name, self.NOTES[name], runner
        first, members = self.sets[0], self.sets
        self.fmap = feature_map(
            name, first.dim_prompt, first.dim_output, n_features=est.n_features, sigmas=sigmas, seed=est.seed,
            precision=precision,
            pool=lambda a: pooled_rows([getattr(s, a) for s in members], 1000, est.seed))
        self.on_cluster = isinstance(runner, DaskRunner)
        self.size = partition_size(est.partition_rows, est.chunk_size)
        # on a device the sets' rows go there once too (not chunk by chunk: a copy from pageable host memory
        # waits for the device each time)
        width = self.fmap.dim + (0 if backend.name == "numpy" else first.dim_prompt + first.dim_output)
        self.keep = (not self.on_cluster and int(self.counts.sum()) * width
                     * np.dtype(self.fmap.precision).itemsize <= feature_memory(backend))
        self.task_backend = NUMPY if self.on_cluster else backend
        self.threads = backend.name == "numpy"  # (tasks on threads: numpy's products release the GIL)
        self.subspace: dict = {}  #: the test's subspace, once :meth:`_directions` chose it
        self.feats: list | None = None
        #: two-way: S_ref, kept from the covariance pass for the test (which makes it S_test + S_ref in
        #: place); K-way: every S_k
        self.ref_sum: np.ndarray | None = None
        self.set_sums: list | None = None
        self.ref_is_pooled = False
        #: the test's operand started by :meth:`replicates_ahead`
        self._ahead: OperandAhead | None = None

    def covariance(self, timings: dict) -> dict:
        """Every set's S_k in one streaming map-reduce (features kept when they fit); {c:
        ||Lambda_r,c||_F^2}. Two-way: Lambda_r = S_test / n - eta S_ref / m, written over S_test; S_ref stays
        for the test's label-free subspace (:meth:`replicates`)."""
        est, fmap, t0 = self.est, self.fmap, time.perf_counter()
        if self.backend.name == "numpy" and fmap.dim > core.FEATURE_DENSE_LIMIT:
            prefetch_extreme_solver()  # (the spectrum's solver, imported while the pass runs)
        sums = self.runner.map_reduce(
            core.side_moments_partition, self._covariance_tasks(), description="PromptSplit: covariance",
            progress=progress_enabled(est.progress), threads=self.threads).sums
        if self.pairwise:
            self.ref_sum, self.ref_is_pooled = sums[1].sum_outer(copy=False), False
            self.lam = sums[0].sum_outer(copy=False)  # -> Lambda = S_test / n - eta S_ref / m, in place
            self.lam *= 1.0 / self.n
            _add_scaled(self.lam, self.ref_sum, -est.eta / self.m)
            distances = {self.comparisons[0]: _frobenius2(self.lam)}
        else:
            self.set_sums = [sums[k].sum_outer(copy=False) for k in range(len(self.sets))]
            distances = {c: _frobenius2(self._lambda(c)) for c in self.comparisons}
        timings["covariance_s"] = time.perf_counter() - t0
        return distances

    def _covariance_tasks(self) -> list[tuple]:
        """The covariance pass's tasks: in this process, per local worker, whole chunks of every set
        (balanced), features kept; else blocks of ``partition_rows`` rows, features not kept."""
        est, fmap = self.est, self.fmap
        if not self.keep:
            return [(fmap, [(*partition_rows(s, a, b), k, None)], est.chunk_size, self.task_backend)
                    for k, s in enumerate(self.sets) for a, b in core.chunks(len(s), self.size)]
        self.feats = [self.backend.empty((len(s), fmap.dim), fmap.precision, threads_write=True)
                      for s in self.sets]
        to = self.backend.asarray if self.backend.name != "numpy" else (lambda a: a)
        rows = [(to(s.prompt_embeddings), to(s.output_embeddings), k, self.feats[k])
                for k, s in enumerate(self.sets)]
        dealt = balanced_blocks([len(s) for s in self.sets], est.chunk_size,  # (a device: one task)
                                getattr(self.runner, "workers", 1) if self.threads else 1)
        return [(fmap, [(*rows[i][:2], a, b, *rows[i][2:]) for i, a, b in blocks], est.chunk_size,
                 self.backend) for blocks in dealt]

    def _lambda(self, c: kc.Comparison) -> np.ndarray:
        """Lambda_r,c = S_a / n_a - eta sum_{b in B} S_b / n_B (K-way; two-way: the one kept)."""
        if self.pairwise:
            return self.lam
        first, second = c
        n_second = float(self.counts[list(second)].sum())
        lam = self.set_sums[first] * (1.0 / float(self.counts[first]))
        for b in second:
            _add_scaled(lam, self.set_sums[b], -self.est.eta / n_second)
        return lam

    def distance_matrix(self) -> np.ndarray:
        """||C_a - eta C_b||_F^2 from the per-set second moments (two-way: C_ref = S_ref / m and
        C_test = Lambda + eta C_ref; the pair's own entry is its distance). Once the test's operand has
        pooled S_ref in place (:meth:`_pooled_moment`; on its own thread, done by the fit's end:
        :meth:`replicates_ahead`), C_ref = (S_pooled - n Lambda) / (m + n eta)."""
        eta, k = self.est.eta, len(self.sets)
        if self.pairwise:
            ref = ((self.ref_sum - self.n * self.lam) / (self.m + self.n * eta) if self.ref_is_pooled
                   else self.ref_sum / self.m)
            moments = [None, ref]
            moments[0] = self.lam + eta * moments[1]
        else:
            moments = [s / float(n) for s, n in zip(self.set_sums, self.counts, strict=True)]
        out = np.array([[_frobenius2(moments[a] - eta * moments[b]) for b in range(k)] for a in range(k)])
        if self.pairwise:
            out[0, 1] = _frobenius2(self.lam)
        return out

    def spectrum(self, timings: dict) -> dict:
        """Each comparison's r x r eigen-problem (:func:`.core.feature_spectrum`)."""
        est, t0, out = self.est, time.perf_counter(), {}
        with self._status(f"{self.fmap.dim} features"):
            for c in self.comparisons:
                out[c] = core.feature_spectrum(self.backend.asarray(self._lambda(c)), n_modes=est.n_modes,
                                               eta=est.eta, solver=est.solver, precision=self.fmap.precision)
        timings["eigen_s"] = time.perf_counter() - t0
        return out

    def mode_stats(self, spectra: dict, labels: list, n_groups: int, timings: dict) -> dict:
        """Scores psi(s) . v: from the kept features, or a second streaming pass; a side of several sets
        numbers its samples through them in order."""
        t0 = time.perf_counter()
        out = {c: {side: self._side_mode_stats(spec.basis, members, labels, n_groups)
                   for side, members in self.sides(c).items()} for c, spec in spectra.items()}
        timings["scoring_s"] = time.perf_counter() - t0
        return out

    def _side_mode_stats(self, basis: Any, members: list[int], labels: list, n_groups: int) -> ModeStats:
        est, stats, offset = self.est, None, 0
        for k in members:
            if self.keep:
                part = core.mode_stats_from_features(self.feats[k], basis, labels[k],
                                                     chunk_size=est.chunk_size, top_k=est.top_k,
                                                     n_groups=n_groups, first_index=offset)
            else:
                part = self.runner.map_reduce(core.mode_stats_partition, [
                    (self.fmap, basis, *partition_rows(self.sets[k], a, b), labels[k][a:b], offset + a,
                     est.chunk_size, est.top_k, n_groups, self.task_backend)
                    for a, b in core.chunks(len(self.sets[k]), self.size)],
                    description=f"PromptSplit: scoring ({SIDES[k] if self.pairwise else f'set {k + 1}'})",
                    progress=progress_enabled(est.progress), threads=self.threads)
            stats = part if stats is None else stats.merge(part)
            offset += len(self.sets[k])
        return stats

    def replicates_ahead(self) -> Any:
        """On two BLAS threads, the test's label-free operand (:class:`.operand_ahead.OperandAhead`: V on a
        thread of its own, then P = psi(rows) V of the test's rows in pieces both threads claim) made while
        the spectra, the scoring and the caller's test plan run (:meth:`.Route.fit`), when the test will
        project numpy float32 kept features. Those steps gain little from a second BLAS thread (ARPACK's
        matrix-vector products and the scores' product are memory-bound; ModeStats and the plan's kernel
        family run mostly on one core), so the BLAS runs on one thread from before V starts until P is done
        (the context's exit), which also makes every product's rounding independent of the timing. With
        more cores the steps run in turn on all of them (V on one thread would be the slower)."""
        rows = self._test_rows()
        if rows is None or blas_thread_count() != 2:
            return contextlib.nullcontext()
        self._ahead = OperandAhead(rows, self.feats, self._directions)
        return self._ahead.start()

    def operand_ahead(self) -> bool:
        """Whether :meth:`replicates_ahead` started the test's operand (not yet taken)."""
        return self._ahead is not None

    def _test_rows(self) -> list[np.ndarray] | None:
        """The rows of each set the permutation test will run on (:func:`.comparisons.null_rows_in_order`),
        when its operand is the projected one of numpy float32 kept features; else None."""
        est = self.est
        if (self.feats is None or not is_numpy(self.feats[0]) or self.feats[0].dtype != np.float32
                or not est.resolved_permutations(self.name)):
            return None
        rows = kc.null_rows_in_order(self.counts, set_order(self.sets), int(est.null_samples), est.seed)
        return rows if self._projects(rows) else None

    def _projects(self, rows: tuple | list) -> bool:
        """Whether the test's operand for these rows of each set is the projected one (P = psi(rows) V): a
        map wider than ``significance.NULL_RANK`` and more than ``significance.FULL_MAX_ROWS`` rows."""
        return self.fmap.dim > sig.NULL_RANK and sum(r.size for r in rows) > max(sig.NULL_RANK,
                                                                                 sig.FULL_MAX_ROWS)

    def replicates(self, compress: bool = True) -> Replicates:
        """The test's operand for given rows of each set: ``("features", F)``, the rows' features (the
        uncompressed statistic, :func:`.significance.principal_operand`), without ``compress``, on at most
        ``significance.FULL_MAX_ROWS`` rows or when the map is narrower than ``significance.NULL_RANK``;
        above, ``("subspace", P)``, P = psi(rows) V, their features projected on V, the leading principal
        directions of the pooled second moment sum_k S_k of all samples (:meth:`_directions`, seeded, of an
        adaptive rank): no label enters V, so the permutation test on P is exact. Features: the kept ones,
        or recomputed from the same seed."""
        directions: list = []

        def operand(*rows: np.ndarray) -> tuple[str, Any]:
            pairs = tuple(enumerate(rows))
            if not compress or not self._projects(rows):
                return "features", self.backend.xp.concat([f for k, r in pairs
                                                           for f in self._row_features(k, r)])
            ahead, self._ahead = self._ahead, None
            if ahead is not None:  # (made by replicates_ahead: V, and P for the rows it expected)
                v, projected = ahead.operand(rows)
                directions[:] = directions or [v]
                if projected is not None:
                    return "subspace", projected
            if not directions:
                directions.append(self._directions())
            return "subspace", self._projected(pairs, directions[0])

        return operand

    def _directions(self) -> Any:
        """V: the leading eigenvectors of the pooled second moment S
        (:func:`~promptprism.stats.subspaces.leading_eigenpairs`), computed once at
        ``significance.NULL_MAX_RANK`` and cut to the least rank in NULL_RANK, 2 NULL_RANK, ... whose
        leading directions hold ``significance.NULL_ENERGY`` of tr S (tr V^T S V / tr S, from the Ritz
        values: the share of every sample's |psi|^2 they keep); the rank and the energy go to
        ``self.subspace`` (the record's ``subspace``)."""
        moment = self.backend.asarray(self._pooled_moment())
        xp = self.backend.xp
        total = float(xp.sum(xp.linalg.diagonal(moment)))
        cap = min(sig.NULL_MAX_RANK, self.fmap.dim)
        ritz, v = leading_eigenpairs(moment, cap, seed=self.est.seed)  # (ascending: the leading one last)
        shares = np.asarray(to_numpy(ritz), dtype=np.float64) / total
        kept, energy = leading_rank(shares[::-1], start=sig.NULL_RANK, cap=cap, target=sig.NULL_ENERGY)
        v = v[:, v.shape[1] - kept:]
        self.subspace.update(rank=int(v.shape[1]), energy=energy, full=False, factor=True)
        return v

    def _projected(self, pairs: tuple, v: Any) -> Any:
        """P = psi(rows) V (float32) for the (set, rows) ``pairs``, :data:`PROJECTION_ROWS` rows at a time;
        numpy float32 kept features are gathered into one reused buffer and multiplied straight into P (no
        new array per step)."""
        out = self.backend.empty((sum(rows.size for _, rows in pairs), v.shape[1]), "float32")
        start, kept = 0, self.feats
        if kept is not None and is_numpy(kept[0]) and kept[0].dtype == np.float32:
            project_pieces(kept, pieces_of(pairs), np.asarray(v, dtype=np.float32), out,
                           itertools.count().__next__)
            return out
        for k, rows in pairs:
            for f in self._row_features(k, rows, step=PROJECTION_ROWS):
                out[start:start + f.shape[0], ...] = f @ self.backend.xp.asarray(v, dtype=f.dtype)
                start += f.shape[0]
        return out

    def _row_features(self, k: int, rows: np.ndarray, step: int | None = None) -> Iterator[Any]:
        """psi of the given rows of set ``k``, ``step`` rows at a time (default: the chunk size): kept, or
        recomputed."""
        feats, backend, step = self.feats, self.backend, min(step or self.est.chunk_size, self.est.chunk_size)
        for a, b in core.chunks(rows.size, step):
            if feats is not None:
                yield feats[k][rows[a:b] if is_numpy(feats[k]) else backend.asarray(rows[a:b]), ...]
            else:
                s = self.sets[k]
                yield core.feature_rows(self.fmap, s.prompt_embeddings, s.output_embeddings, rows[a:b], step,
                                        backend)

    def _pooled_moment(self) -> np.ndarray:
        """sum_k S_k. Two-way: S_test + S_ref = n Lambda + (1 + n eta / m) S_ref, written over S_ref on the
        first call (a new r x r array would cost its page faults: 0.03-0.1 s at r = 3000)."""
        if not self.ref_is_pooled:
            if self.pairwise:
                self.ref_sum *= 1.0 + self.n * self.est.eta / self.m
                _add_scaled(self.ref_sum, self.lam, float(self.n))
            else:
                self.ref_sum = sum(self.set_sums[1:], self.set_sums[0].copy())
            self.ref_is_pooled = True
        return self.ref_sum

    def resolved(self) -> dict:
        """The feature dimension; the partition size when the passes ran on a cluster."""
        return {"n_features": self.est.n_features, "partition_rows": self.size if self.on_cluster else None}

    def release(self) -> None:
        """Drop the kept features and the sums: unmapped on a thread of their own (720 MB take 0.05-0.07 s,
        which the steps after the test need not wait for; the unmapping runs without the GIL)."""
        self._ahead = None  # (a test that did not run: its thread ended with the fit)
        kept = [*(self.feats or []), self.ref_sum, *(self.set_sums or [])]
        self.feats = self.ref_sum = self.set_sums = None
        if self.backend.name == "numpy":
            threading.Thread(target=kept.clear, name="promptprism-release").start()


def _frobenius2(a: np.ndarray) -> float:
    flat = a.ravel(order="K")  # (a view: vdot of the 2-d array would copy it to C order)
    return float(np.vdot(flat, flat))


def _add_scaled(target: np.ndarray, source: np.ndarray, factor: float, block: int = 512) -> np.ndarray:
    """target += factor * source, in place, column block by column block (no full-size temporary)."""
    for j in range(0, target.shape[1], block):
        target[:, j:j + block] += factor * source[:, j:j + block]
    return target


def choose_route(est: Any, sets: dict[str, PairedSet] | list[PairedSet], sigmas: tuple, *, backend: Backend,
                 runner: Runner, comparisons: list | None = None) -> Route:
    """The route of ``est.method`` ('auto': exact up to ``EXACT_MAX_SAMPLES`` samples over all sets), made
    once per fit, over ``sets`` and ``comparisons`` (default: set 0 against set 1)."""
    members = list(sets.values()) if isinstance(sets, dict) else list(sets)
    name = est.route_name(sum(len(s) for s in members))
    precision = est.resolved_precision(name, members)
    if name == "exact":
        return ExactRoute(est, members, sigmas, precision=precision, backend=backend, comparisons=comparisons)
    return FeatureRoute(name, est, members, sigmas, precision=precision, backend=backend, runner=runner,
                        comparisons=comparisons)


def feature_map(method: str, dim_prompt: int, dim_output: int, *, n_features: int, sigmas: tuple, seed: int,
                precision: str, pool: Callable[[str], np.ndarray]) -> Any:
    """The random feature map of a route: ``rff`` (gaussian, product random Fourier features) or ``sketch``
    (cosine, product random projection). ``pool(attr)``: a seeded subsample of the pooled rows of the
    embeddings ``attr``, whose mean centres the float32 rff phases (keeps them small)."""
    if method == "rff":
        center = None
        if precision == "float32":
            center = tuple(pool(a).mean(axis=0) for a in ("prompt_embeddings", "output_embeddings"))
        return ProductRandomFourierFeatures(dim_prompt, dim_output, n_features, sigmas[0], sigmas[1],
                                            seed=seed, fast_trig=True, precision=precision, center=center)
    return ProductRandomProjection(dim_prompt, dim_output, n_features, seed=seed, precision=precision)

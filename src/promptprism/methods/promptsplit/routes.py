"""PromptSplit's routes to the spectrum of Lambda, as objects with one interface, chosen once per fit.

Every route answers the same four questions, in this order:

* :meth:`~Route.covariance` - build the operand (the joint Gram matrix, or Lambda_r of a random feature map)
  and return the distance ||Lambda||_F^2;
* :meth:`~Route.spectrum` - the reported modes (:class:`.core.Spectrum`);
* :meth:`~Route.mode_stats` - each set's per-mode score statistics (:class:`~promptprism.stats.ModeStats`);
* :meth:`~Route.replicates` - the operand of the permutation test for given rows of each set
  (:func:`.testing.mode_significance` draws the relabellings and computes the permuted spectra).

Routes: :class:`ExactRoute` (``exact``, eq. 3: :func:`~.core.exact_spectrum` on the joint Gram matrix,
O((n+m)^2) memory) and :class:`FeatureRoute` (``rff``: gaussian random Fourier features; ``sketch``: cosine
tensor-sketch projection; Lambda_r (r x r) accumulated in one streaming pass through the runner,
diagonalised by :func:`~.core.feature_spectrum`, a second pass scoring the samples).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..._progress import progress_enabled, status
from ...backend import NUMPY, Backend, feature_memory, is_numpy
from ...data.paired import PairedSet
from ...kernels.features import ProductRandomFourierFeatures, ProductRandomProjection
from ...scale.runner import DaskRunner, Runner, balanced_blocks, partition_rows, partition_size
from ...stats.eigen import prefetch_extreme_solver
from ...stats.modes import ModeStats
from ...stats.subspaces import grow_rank, leading_eigenvectors
from . import core
from . import significance as sig
from .summary import SIDES

#: rows of kept features projected at a time for the test: a buffer of a few MB, below the size at which
#: numpy asks for huge pages (whose first touch can cost 2 ms per MB on a virtual machine); measured,
#: 2 x 10,000 of 30,000 rows of r = 3000 onto 128 directions: 0.089-0.092 s in steps of 256 to 2,048 rows
PROJECTION_ROWS = 256
#: the operand of the permutation test for (test rows, reference rows): ("gram", G) or ("features", F)
Replicates = Callable[[np.ndarray, np.ndarray], tuple[str, Any]]


class Route:
    """One way to Lambda's spectrum; ``est`` holds the options (a :class:`.PromptSplit`)."""

    name: str = ""
    #: what this route's test was measured to find (``significance['route_note']``)
    test_note: str | None = None

    def __init__(self, est: Any, sets: dict[str, PairedSet], sigmas: tuple, *, precision: str,
                 backend: Backend) -> None:
        self.est, self.sets, self.sigmas, self.precision, self.backend = est, sets, sigmas, precision, backend
        self.n, self.m = len(sets["test"]), len(sets["reference"])

    def fit(self, labels: dict, n_groups: int, timings: dict) -> tuple[core.Spectrum, float, dict]:
        """Covariance, spectrum, score statistics: (spectrum, ||Lambda||_F^2, {side: ModeStats})."""
        distance = self.covariance(timings)
        spec = self.spectrum(timings)
        return spec, distance, self.mode_stats(spec, labels, n_groups, timings)

    def covariance(self, timings: dict) -> float:
        """Build the operand (Gram matrix or Lambda_r); return ||Lambda||_F^2."""
        raise NotImplementedError

    def spectrum(self, timings: dict) -> core.Spectrum:
        """The reported modes of Lambda (after :meth:`covariance`)."""
        raise NotImplementedError

    def mode_stats(self, spec: core.Spectrum, labels: dict, n_groups: int, timings: dict) -> dict:
        """{side: ModeStats} of the samples' scores on the modes of ``spec``."""
        raise NotImplementedError

    def replicates(self) -> Replicates:
        """(test rows, reference rows) -> the permutation test's operand for those rows."""
        raise NotImplementedError

    def resolved(self) -> dict:
        """The options this route resolves, for the result's ``config``."""
        raise NotImplementedError

    def release(self) -> None:
        """Drop the operand (the Gram matrix or the kept features) once the test has run."""

    def _status(self, what: str) -> Any:
        return status(f"PromptSplit: eigen-solve ({what})", enabled=progress_enabled(self.est.progress))


class ExactRoute(Route):
    """eq. 3 on the joint Gram matrix of both sets (float64 by default)."""

    name = "exact"

    def covariance(self, timings: dict) -> float:
        """The joint Gram matrix of both sets (eq. 3); the distance from it."""
        est, test, ref = self.est, self.sets["test"], self.sets["reference"]
        t0 = time.perf_counter()
        self.gram = core.joint_gram(test.prompt_embeddings, test.output_embeddings, ref.prompt_embeddings,
                                    ref.output_embeddings, kernel=est.kernel, sigma_prompt=self.sigmas[0],
                                    sigma_output=self.sigmas[1], precision=self.precision,
                                    backend=self.backend)
        distance = core.promptsplit_distance_from_gram(self.gram, self.n, est.eta)
        timings["gram_s"] = time.perf_counter() - t0
        return distance

    def spectrum(self, timings: dict) -> core.Spectrum:
        """The weighted eigen-problem of the Gram matrix (:func:`.core.exact_spectrum`)."""
        est, t0 = self.est, time.perf_counter()
        with self._status(f"{self.n + self.m} samples"):
            spec = core.exact_spectrum(self.gram, core.signed_weights(self.n, self.m, est.eta),
                                       n_modes=est.n_modes, eta=est.eta, solver=est.solver,
                                       precision=self.precision)
        timings["eigen_s"] = time.perf_counter() - t0
        return spec

    def mode_stats(self, spec: core.Spectrum, labels: dict, n_groups: int, timings: dict) -> dict:
        """Scores from the eigenvectors (no second pass)."""
        k = spec.selected.size
        stats = {side: ModeStats.empty(self.est.top_k, k, n_groups) for side in SIDES}
        stats["test"].update(np.arange(self.n), labels["test"], spec.scores[:self.n])
        stats["reference"].update(np.arange(self.m), labels["reference"], spec.scores[self.n:])
        return stats

    def replicates(self) -> Replicates:
        """The Gram matrix, or its sub-matrix of the given rows."""
        gram, n, m, backend = self.gram, self.n, self.m, self.backend

        def operand(rows_t: np.ndarray, rows_r: np.ndarray) -> tuple[str, Any]:
            if rows_t.size == n and rows_r.size == m:
                return "gram", gram
            idx = backend.asarray(np.r_[rows_t, n + rows_r])
            return "gram", gram[idx, ...][:, idx]

        return operand

    def resolved(self) -> dict:
        """No feature dimension, no partitions on this route."""
        return {"n_features": None, "partition_rows": None}

    def release(self) -> None:
        """Drop the Gram matrix."""
        self.gram = None


class FeatureRoute(Route):
    """``rff`` / ``sketch``: Lambda_r of an r-dimensional random feature map, streamed through the runner.

    In this process, when every feature fits the memory budget (:func:`~promptprism.backend.feature_memory`),
    the features of the covariance pass are kept for scoring (and the test); else (or on a cluster: workers
    use numpy) both passes stream. Both sets' rows go through one map-reduce whose tasks sum with weights 1/n
    and -eta/m, so the merged sum is Lambda itself (:func:`.core.difference_partition`).
    """

    NOTES = {
        "rff": ("measured on text (MiniLM, one of ten topics hedged, n = m = 240, 50 sets): this route found "
                "the planted topic in 0.16 of the sets, the exact gaussian route in 0.14 "
                "(docs/promptsplit.md)"),
        "sketch": ("measured on text (MiniLM, one of ten topics hedged, n = m = 240, 50 sets): this route "
                   "found the planted topic in 0.24 of the sets, the exact cosine route in 0.22 "
                   "(docs/promptsplit.md)"),
    }

    def __init__(self, name: str, est: Any, sets: dict[str, PairedSet], sigmas: tuple, *, precision: str,
                 backend: Backend, runner: Runner) -> None:
        super().__init__(est, sets, sigmas, precision=precision, backend=backend)
        self.name, self.test_note, self.runner = name, self.NOTES[name], runner
        test, ref = sets["test"], sets["reference"]
        self.fmap = feature_map(
            name, test.dim_prompt, test.dim_output, n_features=est.n_features, sigmas=sigmas, seed=est.seed,
            precision=precision,
            pool=lambda a: core.pooled_rows(getattr(test, a), getattr(ref, a), 1000, est.seed))
        self.on_cluster = isinstance(runner, DaskRunner)
        self.size = partition_size(est.partition_rows, est.chunk_size)
        self.keep = (not self.on_cluster and (self.n + self.m) * self.fmap.dim
                     * np.dtype(self.fmap.precision).itemsize <= feature_memory(backend))
        self.task_backend = NUMPY if self.on_cluster else backend
        self.threads = backend.name == "numpy"  # (tasks on threads: numpy's products release the GIL)
        self.subspace: dict = {}  #: the test's subspace, once :meth:`_directions` chose it
        self.feats: dict | None = None
        #: S_ref, kept from the covariance pass for the test (which makes it S_test + S_ref in place)
        self.ref_sum: np.ndarray | None = None
        self.ref_is_pooled = False

    def covariance(self, timings: dict) -> float:
        """Lambda_r in one streaming map-reduce (features kept when they fit); ||Lambda_r||_F^2. The test's
        and the reference's sums are kept apart (:func:`.core.side_moments_partition`): the reference's
        stays for the test's label-free subspace (:meth:`replicates`)."""
        est, sets, fmap, t0 = self.est, self.sets, self.fmap, time.perf_counter()
        if self.backend.name == "numpy" and fmap.dim > core.FEATURE_DENSE_LIMIT:
            prefetch_extreme_solver()  # (the spectrum's solver, imported while the pass runs)
        if self.keep:  # in this process: per local worker, whole chunks of both sets (balanced), kept
            self.feats = {side: self.backend.empty((len(s), fmap.dim), fmap.precision, threads_write=True)
                          for side, s in sets.items()}
            rows = [(s.prompt_embeddings, s.output_embeddings, side, self.feats[side])
                    for side, s in sets.items()]
            dealt = balanced_blocks([len(s) for s in sets.values()], est.chunk_size,  # (a device: one task)
                                    getattr(self.runner, "workers", 1) if self.threads else 1)
            tasks = [(fmap, [(*rows[i][:2], a, b, *rows[i][2:]) for i, a, b in blocks], est.chunk_size,
                      self.backend) for blocks in dealt]
        else:
            tasks = [(fmap, [(*partition_rows(s, a, b), side, None)], est.chunk_size, self.task_backend)
                     for side, s in sets.items() for a, b in core.chunks(len(s), self.size)]
        sums = self.runner.map_reduce(
            core.side_moments_partition, tasks, description="PromptSplit: covariance",
            progress=progress_enabled(est.progress), threads=self.threads).sums
        self.ref_sum, self.ref_is_pooled = sums["reference"].sum_outer(copy=False), False
        self.lam = sums["test"].sum_outer(copy=False)  # -> Lambda = S_test / n - eta S_ref / m, in place
        self.lam *= 1.0 / self.n
        _add_scaled(self.lam, self.ref_sum, -est.eta / self.m)
        timings["covariance_s"] = time.perf_counter() - t0
        flat = self.lam.ravel(order="K")  # (a view: vdot of the 2-d array would copy it to C order)
        return float(np.vdot(flat, flat))

    def spectrum(self, timings: dict) -> core.Spectrum:
        """The r x r eigen-problem (:func:`.core.feature_spectrum`)."""
        est, t0 = self.est, time.perf_counter()
        with self._status(f"{self.lam.shape[0]} features"):
            spec = core.feature_spectrum(self.backend.asarray(self.lam), n_modes=est.n_modes, eta=est.eta,
                                         solver=est.solver, precision=self.fmap.precision)
        timings["eigen_s"] = time.perf_counter() - t0
        return spec

    def mode_stats(self, spec: core.Spectrum, labels: dict, n_groups: int, timings: dict) -> dict:
        """Scores psi(s) . v: from the kept features, or a second streaming pass."""
        est, t0 = self.est, time.perf_counter()
        if self.keep:
            stats = {side: core.mode_stats_from_features(self.feats[side], spec.basis, labels[side],
                                                         chunk_size=est.chunk_size, top_k=est.top_k,
                                                         n_groups=n_groups) for side in SIDES}
        else:
            stats = {side: self.runner.map_reduce(core.mode_stats_partition, [
                (self.fmap, spec.basis, *partition_rows(self.sets[side], a, b), labels[side][a:b], a,
                 est.chunk_size, est.top_k, n_groups, self.task_backend)
                for a, b in core.chunks(len(self.sets[side]), self.size)],
                description=f"PromptSplit: scoring ({side})", progress=progress_enabled(est.progress),
                threads=self.threads) for side in SIDES}
        timings["scoring_s"] = time.perf_counter() - t0
        return stats

    def replicates(self) -> Replicates:
        """The test's operand for given rows: ``("features", F)``, the rows' features (the uncompressed
        statistic, :func:`.significance.principal_operand`), on at most ``significance.FULL_MAX_ROWS`` rows
        or when the map is narrower than ``significance.NULL_RANK``; above, ``("subspace", P)``, P = psi(rows)
        V, their features projected on V, the leading principal directions of the pooled second moment
        S_test + S_ref of all samples (:meth:`_directions`, seeded, of an adaptive rank): no label enters V,
        so the permutation test on P is exact. Features: the kept ones, or recomputed from the same seed."""
        directions: list = []

        def operand(rows_t: np.ndarray, rows_r: np.ndarray) -> tuple[str, Any]:
            pairs = (("test", rows_t), ("reference", rows_r))
            if self.fmap.dim <= sig.NULL_RANK or rows_t.size + rows_r.size <= max(sig.NULL_RANK,
                                                                                  sig.FULL_MAX_ROWS):
                return "features", self.backend.xp.concat([f for s, rows in pairs
                                                           for f in self._row_features(s, rows)])
            if not directions:
                directions.append(self._directions())
            return "subspace", self._projected(pairs, directions[0])

        return operand

    def _directions(self) -> Any:
        """V: the leading eigenvectors of the pooled second moment S
        (:func:`~promptprism.stats.subspaces.leading_eigenvectors`) of the least rank in NULL_RANK,
        2 NULL_RANK, ... (at most ``significance.NULL_MAX_RANK``) whose directions hold
        ``significance.NULL_ENERGY`` of tr S (tr V^T S V / tr S: the share of every sample's |psi|^2 they
        keep); the rank and the energy go to ``self.subspace`` (the record's ``subspace``)."""
        moment = self.backend.asarray(self._pooled_moment())
        xp = self.backend.xp
        total = float(xp.sum(xp.linalg.diagonal(moment)))

        def build(rank: int) -> tuple[Any, float]:
            v = leading_eigenvectors(moment, rank, seed=self.est.seed)
            v64 = xp.asarray(v, dtype=moment.dtype)
            return v, float(xp.sum(v64 * (moment @ v64))) / total

        v, _, energy = grow_rank(build, start=sig.NULL_RANK, cap=min(sig.NULL_MAX_RANK, self.fmap.dim),
                                 target=sig.NULL_ENERGY)
        self.subspace.update(rank=int(v.shape[1]), energy=energy, full=False, factor=True)
        return v

    def _projected(self, pairs: tuple, v: Any) -> Any:
        """P = psi(rows) V (float32) for the (side, rows) ``pairs``, :data:`PROJECTION_ROWS` rows at a time;
        numpy float32 kept features are gathered into one reused buffer and multiplied straight into P (no
        new array per step)."""
        out = self.backend.empty((sum(rows.size for _, rows in pairs), v.shape[1]), "float32")
        start, kept = 0, self.feats
        if kept is not None and is_numpy(kept["test"]) and kept["test"].dtype == np.float32:
            v = np.asarray(v, dtype=np.float32)
            buffer = np.empty((min(PROJECTION_ROWS, max(rows.size for _, rows in pairs)), self.fmap.dim),
                              dtype=np.float32)
            for side, rows in pairs:
                for a, b in core.chunks(rows.size, PROJECTION_ROWS):
                    np.take(kept[side], rows[a:b], axis=0, out=buffer[: b - a], mode="clip")  # (valid rows)
                    np.matmul(buffer[: b - a], v, out=out[start:start + b - a])
                    start += b - a
            return out
        for side, rows in pairs:
            for f in self._row_features(side, rows, step=PROJECTION_ROWS):
                out[start:start + f.shape[0], ...] = f @ self.backend.xp.asarray(v, dtype=f.dtype)
                start += f.shape[0]
        return out

    def _row_features(self, side: str, rows: np.ndarray, step: int | None = None) -> Iterator[Any]:
        """psi of the given rows of one set, ``step`` rows at a time (default: the chunk size): kept, or
        recomputed."""
        feats, backend, step = self.feats, self.backend, min(step or self.est.chunk_size, self.est.chunk_size)
        for a, b in core.chunks(rows.size, step):
            if feats is not None:
                yield feats[side][rows[a:b] if is_numpy(feats[side]) else backend.asarray(rows[a:b]), ...]
            else:
                s = self.sets[side]
                yield core.feature_rows(self.fmap, s.prompt_embeddings, s.output_embeddings, rows[a:b], step,
                                        backend)

    def _pooled_moment(self) -> np.ndarray:
        """S_test + S_ref = n Lambda + (1 + n eta / m) S_ref, written over S_ref on the first call (a new
        r x r array would cost its page faults: 0.03-0.1 s at r = 3000)."""
        if not self.ref_is_pooled:
            self.ref_sum *= 1.0 + self.n * self.est.eta / self.m
            _add_scaled(self.ref_sum, self.lam, float(self.n))
            self.ref_is_pooled = True
        return self.ref_sum

    def resolved(self) -> dict:
        """The feature dimension; the partition size when the passes ran on a cluster."""
        return {"n_features": self.est.n_features, "partition_rows": self.size if self.on_cluster else None}

    def release(self) -> None:
        """Drop the kept features and the reference's sum: unmapped on a thread of their own (720 MB take
        0.05-0.07 s, which the steps after the test need not wait for; the unmapping runs without the GIL)."""
        kept = [*(self.feats or {}).values(), self.ref_sum]
        self.feats = self.ref_sum = None
        if self.backend.name == "numpy":
            threading.Thread(target=kept.clear, name="promptprism-release").start()


def _add_scaled(target: np.ndarray, source: np.ndarray, factor: float, block: int = 512) -> np.ndarray:
    """target += factor * source, in place, column block by column block (no full-size temporary)."""
    for j in range(0, target.shape[1], block):
        target[:, j:j + block] += factor * source[:, j:j + block]
    return target


def choose_route(est: Any, sets: dict[str, PairedSet], sigmas: tuple, *, backend: Backend, runner: Runner
                 ) -> Route:
    """The route of ``est.method`` ('auto': exact up to ``EXACT_MAX_SAMPLES`` samples), made once per fit."""
    name = est.route_name(sum(len(s) for s in sets.values()))
    precision = est.resolved_precision(name)
    if name == "exact":
        return ExactRoute(est, sets, sigmas, precision=precision, backend=backend)
    return FeatureRoute(name, est, sets, sigmas, precision=precision, backend=backend, runner=runner)


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

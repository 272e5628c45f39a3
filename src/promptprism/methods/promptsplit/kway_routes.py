"""K-way PromptSplit's routes: the state of one fit over K sets, as objects chosen once per fit.

:class:`ExactKWayRoute` computes the joint Gram matrix of all K sets once ((sum n_k)^2 entries) and takes each
pair's spectrum from its sub-block and each one-vs-rest spectrum from the whole matrix with that
comparison's signed weights; :class:`FeatureKWayRoute` accumulates the K r x r second moments in one pass and
diagonalises K(K-1)/2 + K differences of them. Both give the permutation test (:mod:`.kway_testing`) its
operand for rows of each set.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backend import NUMPY, feature_memory
from ...data.paired import PairedSet
from ...scale.runner import current_runner
from ...stats.modes import ModeStats
from . import core
from . import kway_core as kc
from .routes import feature_map


def _frobenius2(a: np.ndarray) -> float:
    flat = a.ravel(order="K")
    return float(np.vdot(flat, flat))


class KWayRoute:
    """The state one K-way fit builds: per comparison its spectrum, distance and per-side score statistics,
    and the operand of the permutation test. Subclasses are the routes: :meth:`run` fits every comparison,
    :meth:`operand` gives the test's replicates for rows of each set."""

    name = ""

    def __init__(self, est: Any, sets: list[PairedSet], labels: list[np.ndarray], n_groups: int,
                 counts: np.ndarray, precision: str) -> None:
        self.est, self.sets, self.labels, self.n_groups = est, sets, labels, n_groups
        self.counts, self.precision = counts, precision
        self.bounds = np.r_[0, np.cumsum(counts)]
        self.model = np.repeat(np.arange(len(sets)), counts)
        self.spectra: dict = {}
        self.stats: dict = {}
        self.distances: dict = {}
        self.matrix = np.zeros((len(sets), len(sets)))

    def run(self, sigmas: tuple, family: list) -> None:
        """Fit every comparison of ``family`` (spectra, distances, statistics) with bandwidths ``sigmas``."""
        raise NotImplementedError

    def operand(self, rows: list[np.ndarray]) -> tuple[str, Any]:
        """The permutation test's operand for the given rows of each set (Gram sub-matrix or features)."""
        raise NotImplementedError

    def significance(self, family: list, permutations: int) -> dict:
        """The K-way permutation test (:mod:`.kway_testing`) of every comparison's reported modes."""
        from .kway_testing import kway_permutation_test

        return kway_permutation_test(self, family, permutations)

    def _side_stats(self, c: kc.Comparison, rows: np.ndarray, scores: np.ndarray) -> dict[str, ModeStats]:
        """ModeStats of the comparison's two sides from the scores of its ``rows`` (global, ascending): ids
        within the first set, and within the other side's sets concatenated in order."""
        first, _ = c
        k = scores.shape[1]
        out = {}
        for side, mask in (("test", self.model[rows] == first), ("reference", self.model[rows] != first)):
            glob = rows[mask]
            lab = np.concatenate([self.labels[m][glob[self.model[glob] == m] - self.bounds[m]]
                                  for m in np.unique(self.model[glob])])
            out[side] = ModeStats.empty(self.est.top_k, k, self.n_groups).update(
                np.arange(glob.size), lab, scores[mask])
        return out


class ExactKWayRoute(KWayRoute):
    """One joint Gram matrix of all K sets; each comparison's spectrum from its rows with its weights."""

    name = "exact"

    def run(self, sigmas: tuple, family: list) -> None:
        """One joint Gram matrix; each comparison's spectrum from its rows with its weights (eq. 3)."""
        est, sets = self.est, self.sets
        rest_p = np.concatenate([s.prompt_embeddings for s in sets[1:]])
        rest_o = np.concatenate([s.output_embeddings for s in sets[1:]])
        gram = core.joint_gram(sets[0].prompt_embeddings, sets[0].output_embeddings, rest_p, rest_o,
                               kernel=est.kernel, sigma_prompt=sigmas[0], sigma_output=sigmas[1],
                               precision=self.precision)
        self.gram = gram
        self.sums = kc.block_square_sums(gram, self.bounds)
        self.matrix = kc.pair_distances(self.sums, self.counts, est.eta)
        for c in family:
            self.distances[c] = kc.comparison_distance(self.sums, self.counts, c, est.eta)
            w = kc.comparison_weights(self.model, c, self.counts, est.eta)
            rows = np.flatnonzero(w != 0)
            sub = gram if rows.size == gram.shape[0] else gram[np.ix_(rows, rows)]
            spec = core.exact_spectrum(sub, w[rows], n_modes=est.n_modes, eta=est.eta, solver=est.solver,
                                       precision=self.precision)
            self.spectra[c] = spec
            self.stats[c] = self._side_stats(c, rows, spec.scores)

    def operand(self, rows: list[np.ndarray]) -> tuple[str, Any]:
        """The Gram matrix, or its sub-matrix of the given rows."""
        glob = np.concatenate([self.bounds[k] + r for k, r in enumerate(rows)])
        return "gram", self.gram if glob.size == self.gram.shape[0] else self.gram[np.ix_(glob, glob)]


class FeatureKWayRoute(KWayRoute):
    """``rff`` / ``sketch``: K second moments of one random feature map, K(K-1)/2 + K small spectra."""

    def __init__(self, name: str, *args: Any) -> None:
        super().__init__(*args)
        self.name = name
        self.feats: list | None = None

    def run(self, sigmas: tuple, family: list) -> None:
        """K second moments in one pass (features kept when they fit), K(K-1)/2 + K small spectra, one
        scoring pass over every comparison's modes at once."""
        est, sets = self.est, self.sets
        self.fmap = fmap = self._feature_map(sigmas)
        total = int(self.counts.sum())
        keep = total * fmap.dim * np.dtype(fmap.precision).itemsize <= feature_memory(NUMPY)
        runner = current_runner()
        workers = max(1, getattr(runner, "workers", 1))
        moments, feats = [], []
        for s in sets:
            out = NUMPY.empty((len(s), fmap.dim), fmap.precision) if keep else None
            step = -(-len(s) // workers)
            tasks = [(fmap, [(s.prompt_embeddings, s.output_embeddings, a, b, 1.0, out)], est.chunk_size,
                      NUMPY)
                     for a, b in core.chunks(len(s), step)]
            acc = runner.map_reduce(core.difference_partition, tasks, description="K-way: covariance",
                                    threads=True)
            moments.append(acc.sum_outer(copy=False) / len(s))
            feats.append(out)
        self.feats = feats if keep else None
        k = len(sets)
        self.matrix = np.array([[_frobenius2(moments[a] - est.eta * moments[b]) for b in range(k)]
                                for a in range(k)])
        for c in family:
            first, second = c
            n_second = float(self.counts[list(second)].sum())
            lam = moments[first] - est.eta * sum(moments[b] * (self.counts[b] / n_second) for b in second)
            self.distances[c] = _frobenius2(lam)
            self.spectra[c] = core.feature_spectrum(lam, n_modes=est.n_modes, eta=est.eta, solver=est.solver,
                                                    precision=fmap.precision)
        self._score_all(family)

    def _feature_map(self, sigmas: tuple) -> Any:
        est, sets, first = self.est, self.sets, self.sets[0]
        return feature_map(self.name, first.dim_prompt, first.dim_output, n_features=est.n_features,
                           sigmas=sigmas, seed=est.seed, precision=self.precision,
                           pool=lambda a: kc.pooled_rows_k([getattr(s, a) for s in sets], 1000, est.seed))

    def _score_all(self, family: list) -> None:
        """Scores psi(s) . v of every sample on every comparison's modes (one product per set)."""
        bases = [self.spectra[c].basis for c in family]
        cols = np.cumsum([0] + [b.shape[1] for b in bases])
        basis = np.concatenate(bases, axis=1)
        scores = np.concatenate([self._set_scores(k, basis) for k in range(len(self.sets))])
        for i, c in enumerate(family):
            rows = np.flatnonzero(np.isin(self.model, (c[0], *c[1])))
            self.stats[c] = self._side_stats(c, rows, scores[rows, cols[i]:cols[i + 1]])

    def _set_scores(self, k: int, basis: np.ndarray) -> np.ndarray:
        s = self.sets[k]
        if self.feats is not None:
            f = self.feats[k]
            return np.asarray(f @ basis.astype(f.dtype), dtype=np.float64)
        out = np.empty((len(s), basis.shape[1]))
        for a, b in core.chunks(len(s), self.est.chunk_size):
            f = self.fmap.transform(s.prompt_embeddings[a:b], s.output_embeddings[a:b])
            out[a:b] = f @ basis.astype(f.dtype)
        return out

    def operand(self, rows: list[np.ndarray]) -> tuple[str, Any]:
        """The kept features of the given rows, or the rows' features recomputed from the same seed."""
        if self.feats is not None:
            return "features", np.concatenate([f[r] for f, r in zip(self.feats, rows, strict=True)])
        return "features", np.concatenate([
            core.feature_rows(self.fmap, s.prompt_embeddings, s.output_embeddings, r, self.est.chunk_size)
            for s, r in zip(self.sets, rows, strict=True)])


def choose_kway_route(method: str, est: Any, sets: list[PairedSet], labels: list[np.ndarray], n_groups: int,
                      counts: np.ndarray, precision: str) -> KWayRoute:
    """The K-way route of ``method`` ('exact', 'rff' or 'sketch'), made once per fit."""
    args = (est, sets, labels, n_groups, counts, precision)
    return ExactKWayRoute(*args) if method == "exact" else FeatureKWayRoute(method, *args)

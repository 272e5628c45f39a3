"""K-way PromptSplit: K >= 2 sets on the same prompts, every pair and each set against the pooled rest.

One fit for all comparisons (:mod:`.kway_core`): the exact route computes the joint Gram matrix of all K sets
once ((sum n_k)^2 entries) and takes each pair's spectrum from its sub-block and each one-vs-rest spectrum
from the whole matrix with that comparison's signed weights; the random-feature routes accumulate the K r x r
second moments in one pass and diagonalise K(K-1)/2 + K differences of them. The permutation test exchanges
model labels among all K sets within each prompt and controls the family-wise error over every mode of
every comparison (:func:`.kway_core.family_step_down`). With K = 2 (exact route) everything reproduces
:class:`.PromptSplit` to the bit.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ...backend import NUMPY, feature_memory
from ...data.paired import PairedSet, check_compatible, prompt_groups
from ...errors import InputError, OptionError
from ...kernels.bandwidth import parse_bandwidth, resolve_bandwidth
from ...scale.runner import current_runner
from ...stats.modes import ModeStats
from . import core
from . import kway_core as kc
from .estimator import PromptSplit
from .kway_result import KWayResult, assemble
from .options import SplitOptions, as_paired
from .routes import feature_map


@dataclass(frozen=True)
class KWaySplit(SplitOptions):
    """K-way PromptSplit: ``fit([set_1, ..., set_K], names)`` -> :class:`KWayResult`.

    Options as :class:`.PromptSplit` (the fields of :class:`.SplitOptions`: same names, same defaults;
    bandwidth rules are evaluated on all K sets pooled; the 'stable' rule and devices other than the CPU are
    not offered here). ``method='auto'`` is exact up to ``EXACT_MAX_SAMPLES`` samples over all sets.
    ``permutations``: None = 200 (exact) / 100 (random features); the test's cost is about that of one
    pairwise test on the pooled sets per comparison.
    """

    STABLE_BANDWIDTH: ClassVar[bool] = False

    def pairwise(self) -> PromptSplit:
        """The :class:`.PromptSplit` estimator with the same options (what one pair's ``split`` would run)."""
        return PromptSplit(**{f.name: getattr(self, f.name) for f in dataclasses.fields(SplitOptions)},
                           device="cpu")

    def fit(self, sets: Sequence[PairedSet | tuple], names: Sequence[str] | None = None) -> KWayResult:
        """Compare K >= 2 sets (PairedSets or (prompt_emb, output_emb) tuples) sharing their prompts."""
        t0 = time.perf_counter()
        sets, names = self._check_sets(sets, names)
        labels, prompt_names = prompt_groups(*sets)
        _check_shared_prompts(labels, prompt_names, names)
        counts = np.array([len(s) for s in sets])
        sigmas = self._bandwidths(sets)
        method = self.route_name(int(counts.sum()))
        pairs, rest = kc.comparisons(len(sets))
        family = pairs + rest
        fit = _Fit(self, sets, labels, len(prompt_names), counts, self.resolved_precision(method))
        timings = {"setup_s": time.perf_counter() - t0}
        t1 = time.perf_counter()
        if method == "exact":
            fit.exact(sigmas, family)
        else:
            fit.random_features(sigmas, family, method)
        timings["fit_s"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        permutations = self.resolved_permutations(method)
        tests = fit.significance(family, permutations) if permutations else {}
        timings["significance_s"] = time.perf_counter() - t2
        config = self.recorded_options(
            sigma_prompt=sigmas[0], sigma_output=sigmas[1], permutations=permutations,
            precision=fit.precision, n_features=None if method == "exact" else self.n_features,
            sets=[s.where for s in sets], device=NUMPY.label)
        result = assemble(fit=fit, names=names, prompt_names=prompt_names, family=family, n_pairs=len(pairs),
                          tests=tests, method=method, config=config, timings=timings)
        return dataclasses.replace(result, timings={**timings, "total_s": time.perf_counter() - t0})

    def _check_sets(self, sets: Sequence, names: Sequence[str] | None) -> tuple[list[PairedSet], list[str]]:
        sets = list(sets)
        if len(sets) < 2:
            raise InputError(f"K-way PromptSplit needs at least 2 sets, got {len(sets)}")
        if names is not None and len(names) != len(sets):
            raise OptionError(f"names must give one name per set: {len(names)} names for {len(sets)} sets")
        paired = [as_paired(s, names[i] if names else f"set {i + 1}") for i, s in enumerate(sets)]
        names = list(names) if names else [s.name if s.name != "set" else f"set {i + 1}"
                                           for i, s in enumerate(paired)]
        for s in paired[1:]:
            check_compatible(paired[0], s)
        for a in range(len(paired)):
            for b in range(a + 1, len(paired)):
                if core.same_pairs(paired[a], paired[b]):
                    raise InputError(f"{paired[a].where} and {paired[b].where} hold the same pairs (a "
                                     "duplicated input?); give each set once")
        if len(set(names)) != len(names):
            raise OptionError(f"names must be distinct, got {names}")
        if self.kernel == "cosine":
            for s in paired:
                s.check_nonzero("the cosine kernel is undefined for a zero vector")
        return paired, names

    def _bandwidths(self, sets: list[PairedSet]) -> tuple[float | None, float | None]:
        """Both bandwidths as numbers; rules evaluated on a seeded subsample of all K sets pooled (with
        K = 2 the subsample of :class:`.PromptSplit`)."""
        if self.kernel != "gaussian":
            return None, None
        out = []
        for key, spec in (("prompt", self.sigma_prompt), ("output", self.sigma_output)):
            attr = f"{key}_embeddings"
            parsed = parse_bandwidth(spec, f"sigma_{key}")
            if isinstance(parsed, float):
                out.append(parsed)
                continue
            pool = kc.pooled_rows_k([getattr(s, attr) for s in sets], 1000, self.seed)
            out.append(resolve_bandwidth(spec, pool, name=f"sigma_{key}", seed=self.seed))
        return out[0], out[1]


def _check_shared_prompts(labels: list[np.ndarray], prompt_names: list[str], names: list[str]) -> None:
    missing = kc.missing_prompts(labels, prompt_names)
    if any(missing):
        said = "; ".join(f"{name} lacks {', '.join(repr(p) for p in miss[:3])}"
                         + (f" and {len(miss) - 3} more" if len(miss) > 3 else "")
                         for name, miss in zip(names, missing, strict=True) if miss)
        raise InputError("K-way PromptSplit needs every set on the same prompts (labels are exchanged "
                         f"within each prompt): {said}")


def _frobenius2(a: np.ndarray) -> float:
    flat = a.ravel(order="K")
    return float(np.vdot(flat, flat))


class _Fit:
    """The state one K-way fit builds: per comparison its spectrum, distance and per-side score statistics,
    and the operand of the permutation test."""

    def __init__(self, est: KWaySplit, sets: list[PairedSet], labels: list[np.ndarray], n_groups: int,
                 counts: np.ndarray, precision: str) -> None:
        self.est, self.sets, self.labels, self.n_groups = est, sets, labels, n_groups
        self.counts, self.precision = counts, precision
        self.bounds = np.r_[0, np.cumsum(counts)]
        self.model = np.repeat(np.arange(len(sets)), counts)
        self.spectra: dict = {}
        self.stats: dict = {}
        self.distances: dict = {}
        self.matrix = np.zeros((len(sets), len(sets)))
        self.gram = None
        self.fmap = None
        self.feats: list | None = None

    # ------------------------------------------------------------------------------------ exact route
    def exact(self, sigmas: tuple, family: list) -> None:
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

    # ---------------------------------------------------------------------------- random-feature route
    def random_features(self, sigmas: tuple, family: list, method: str) -> None:
        """K second moments in one pass (features kept when they fit), K(K-1)/2 + K small spectra, one
        scoring pass over every comparison's modes at once."""
        est, sets = self.est, self.sets
        self.fmap = fmap = self._feature_map(sigmas, method)
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

    def _feature_map(self, sigmas: tuple, method: str) -> Any:
        est, sets, first = self.est, self.sets, self.sets[0]
        return feature_map(method, first.dim_prompt, first.dim_output, n_features=est.n_features,
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

    # ----------------------------------------------------------------------------------- significance
    def operand(self, rows: list[np.ndarray]) -> tuple[str, Any]:
        """The permutation test's operand for the given rows of each set (Gram sub-matrix or features)."""
        glob = np.concatenate([self.bounds[k] + r for k, r in enumerate(rows)])
        if self.gram is not None:
            return "gram", self.gram if glob.size == self.gram.shape[0] else self.gram[np.ix_(glob, glob)]
        if self.feats is not None:
            return "features", np.concatenate([f[r] for f, r in zip(self.feats, rows, strict=True)])
        return "features", np.concatenate([
            core.feature_rows(self.fmap, s.prompt_embeddings, s.output_embeddings, r, self.est.chunk_size)
            for s, r in zip(self.sets, rows, strict=True)])

    def significance(self, family: list, permutations: int) -> dict:
        """The K-way permutation test (:mod:`.kway_testing`) of every comparison's reported modes."""
        from .kway_testing import kway_permutation_test

        return kway_permutation_test(self, family, permutations)

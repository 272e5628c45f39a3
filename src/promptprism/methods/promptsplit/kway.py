"""K-way PromptSplit: K >= 2 sets on the same prompts, every pair and each set against the pooled rest.

The comparison engine of two-way PromptSplit run over K sets: one route (:mod:`.routes`) fits every comparison
(:func:`.comparisons.comparisons`: the pairs, and from K = 3 each set against the pooled rest), the exact
route from one joint Gram matrix of all K sets (above ``kway_subspace.SUBSPACE_MIN_ROWS`` rows: the
sets' moments in one shared subspace, :mod:`.kway_subspace`), the random-feature routes from the K r x r
second moments of one pass; on any ``device``, with the bandwidth rules of PromptSplit ('stable'
included, evaluated on the pairs). The permutation test (:mod:`.testing`) exchanges model labels among
all K sets within each prompt and controls the family-wise error over every mode of every comparison
(:func:`~promptprism.stats.permutation.step_down_pvalues`), optionally aggregated over a kernel family
(``aggregate``).
With K = 2 everything is :class:`.PromptSplit`'s (exact route: to the bit).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..._params import one_of
from ...array_ops import blas_thread_count
from ...backend import resolve_backend
from ...data.paired import (
    PairedSet,
    as_paired_set,
    check_compatible,
    missing_strings_note,
    prompt_groups,
    set_names,
)
from ...errors import InputError, OptionError
from ...scale.runner import current_runner
from ...stats.batched_eigen import DENSE_BATCH_RANK
from . import comparisons as kc
from . import core, kway_subspace
from . import significance as sig
from .estimator import STABLE_SAMPLES, STABLE_TOP, PromptSplit
from .family import family_for
from .kway_result import ComparisonFit, KWayResult, assemble
from .kway_subspace import SubspaceRoute
from .options import PAIR_DETAILS, SplitOptions
from .routes import choose_route
from .testing import comparison_significance
from .verdicts import caveat, out_of_range_note, strings_note

#: the K-way test's measured cost per comparison and labelling (2-core AMD EPYC, numpy, float32 Lanczos):
#: a fixed part, and a part per entry of the operand (null rows x its width: the rows for the exact route's
#: Gram matrix, the random features for rff and sketch)
TEST_SECONDS_PER_LABELLING = 1.5e-3
TEST_SECONDS_PER_ENTRY = 2.5e-9
#: K >= 3 on more rows than this in all: the test's statistic in the pooled samples' leading principal
#: subspace (:func:`.significance.principal_operand`, as two-way PromptSplit's above as many rows; per
#: labelling the K sets' moments there, then every comparison's matrix,
#: :func:`.kway_subspace.moment_extremes`); on at most this many, over the whole operand
#: (:data:`.testing.WHOLE_OPERAND`: batched Lanczos, or the small sets' own solves, cheaper there).
#: Measured (the test's wall seconds, 3 sets of 32-d data, 2-core AMD EPYC; docs/promptsplit.md): exact
#: 3 x 400 rows 2.8 whole / 2.8 subspace, 3 x 1,000 8.8 / 4.0, 3 x 2,000 26.9 / 4.2; rff 3 x 400 2.7 / 1.4
WHOLE_OPERAND_MAX_ROWS = sig.FULL_MAX_ROWS
#: ... for at most this many comparisons (K(K-1)/2 + K: K <= 22): each labelling forms every comparison's
#: rank x rank matrix (at rank 256, 0.5 MB each), one labelling's within ``kway_subspace.MOMENT_BLOCK_BYTES``
SUBSPACE_MAX_COMPARISONS = kway_subspace.MOMENT_BLOCK_BYTES // (8 * sig.NULL_MAX_RANK**2)
#: ... and its cost per labelling, one thread: rows x rank^2 for the moments (kway_subspace's constant) and
#: this per comparison and rank^2 for its solve (rank 256, the test's wall seconds on 2 threads, estimate /
#: measured: 3 x 2,000 rows 4.9 / 4.5 s, 8 x 700 9.6 / 8.7 s, 15 x 200 21.7 / 23.7 s; over the whole
#: operand those took 27, 136 and 138 s)
SUBSPACE_SECONDS_PER_SOLVE_RANK2 = 2.5e-8
#: the exact route's small-set solves (K >= 3, every set of at most PAIR_BLOCK_MAX_ROWS / 2 test rows;
#: CPU seconds of one thread, measured on a busy 2-core Intel Xeon, numpy): a pair from its own rows per
#: labelling a + b s^3 (s = its rows, :func:`.comparisons.pair_block_extremes`: 1.6e-5 s at s = 10,
#: 1.7e-4 s at s = 40), a one-vs-rest in the Gram eigenbasis c per test row
#: (:func:`.comparisons.rest_extremes`, in cache-sized blocks: 2.5e-3 s per labelling at N = 1,000). The
#: comparisons share the BLAS's threads (:func:`~promptprism.array_ops.map_in_threads`)
PAIR_SECONDS_PER_LABELLING = 1.5e-5
PAIR_SECONDS_PER_CUBED_ROW = 2.5e-9
REST_SECONDS_PER_ROW = 2.5e-6


def subspace_statistic(k: int, rows: int) -> bool:
    """Whether K >= 3 sets of ``rows`` rows in all are tested in the principal subspace
    (:data:`WHOLE_OPERAND_MAX_ROWS`, :data:`SUBSPACE_MAX_COMPARISONS`)."""
    pairs, rest = kc.comparisons(k)
    return k >= 3 and rows > WHOLE_OPERAND_MAX_ROWS and len(pairs) + len(rest) <= SUBSPACE_MAX_COMPARISONS


def test_cost_seconds(k: int, null_rows: int, width: int, permutations: int, *,
                      set_rows: int | None = None, threads: int = 1) -> float:
    """Rough seconds of the K-way permutation test: C = K(K-1)/2 pairs + K one-vs-rest comparisons (one
    for K = 2), each diagonalised for the observed labelling and the ``permutations`` others, each solve
    costing about a + b N w (:data:`TEST_SECONDS_PER_LABELLING`, :data:`TEST_SECONDS_PER_ENTRY`); an upper
    bound in the comparisons (those without a mode to test are skipped), within a factor of about 2. K >= 3
    on more than :data:`WHOLE_OPERAND_MAX_ROWS` rows: the principal subspace's moments and solves instead
    (:data:`SUBSPACE_SECONDS_PER_SOLVE_RANK2`).
    ``set_rows`` (the exact route: the largest set's test rows): with K >= 3 and pairs of at most
    ``PAIR_BLOCK_MAX_ROWS`` rows, the pairs' and the one-vs-rest's small-set solves instead
    (:data:`PAIR_SECONDS_PER_LABELLING`, :data:`PAIR_SECONDS_PER_CUBED_ROW`, :data:`REST_SECONDS_PER_ROW`),
    shared among ``threads`` threads."""
    pairs, rest = kc.comparisons(int(k))
    labellings = int(permutations) + 1
    per = TEST_SECONDS_PER_LABELLING + TEST_SECONDS_PER_ENTRY * float(null_rows) * float(width)
    if subspace_statistic(int(k), int(null_rows)):  # (the principal subspace's statistic)
        rank2 = float(sig.NULL_MAX_RANK) ** 2
        per = rank2 * (kway_subspace.SECONDS_PER_ROW_RANK2 * float(null_rows)
                       + SUBSPACE_SECONDS_PER_SOLVE_RANK2 * (len(pairs) + len(rest)))
        return labellings * per / max(1, int(threads))
    if set_rows is None or int(k) < 3 or 2 * int(set_rows) > kc.PAIR_BLOCK_MAX_ROWS:
        return (len(pairs) + len(rest)) * labellings * per
    pair = PAIR_SECONDS_PER_LABELLING + PAIR_SECONDS_PER_CUBED_ROW * float(2 * int(set_rows)) ** 3
    low_rank = DENSE_BATCH_RANK < int(null_rows) <= kc.REST_LOW_RANK_MAX_ROWS
    one = REST_SECONDS_PER_ROW * float(null_rows) if low_rank else per
    return labellings * (len(pairs) * pair + len(rest) * one) / max(1, int(threads))


@dataclass(frozen=True)
class KWaySplit(SplitOptions):
    """K-way PromptSplit: ``fit([set_1, ..., set_K], names)`` -> :class:`KWayResult`.

    Options as :class:`.PromptSplit` (the fields of :class:`.SplitOptions`: same names, same meaning;
    bandwidth rules are evaluated on all K sets pooled, the 'stable' rule on a subsample of every set,
    watching every pair's top eigenvalues). ``method='auto'`` is exact up to ``EXACT_MAX_SAMPLES`` samples
    over all sets. ``permutations``: None = 200 (exact) / 100 (random features); the test's cost is about
    that of one pairwise test on the pooled sets per comparison; every permutation is drawn (no early stop:
    the family's p-values come from all of them).

    device : where the array core runs, as :class:`.PromptSplit`'s ('auto': torch on CUDA when a GPU is
        present, else numpy; 'cpu', 'cuda', 'cuda:N', 'mps', 'torch'): the joint Gram matrix and every
        comparison's eigen-solve, random features and second moments, the scoring pass, the permutation
        test; random draws stay numpy's and the results are numpy (tolerances: docs/devices.md).
    aggregate : the permutation test over a kernel family (:mod:`.aggregate`): 'none' (default: the fitted
        kernel alone), 'auto' (by the outputs' modality), 'text' or 'image'. Every kernel is tested on the
        same relabellings, its statistic the largest scaled eigenvalue over every comparison; min-p over
        kernels; the modes stay the fitted kernel's, their p-values adjusted
        (``significance['aggregation']``). It costs one test per other kernel of the family.
    partition_rows : rows per task of the random-feature routes' streaming passes on a dask cluster.
    pair_details : what each pair's modes list (K >= 3; the K(K-1)/2 pairs dominate a result's size):
        'leading' (default: the samples and prompts of its significant modes and of its largest mode of
        each sign; its other modes keep their eigenvalue, side and p-value, with empty lists) or 'all'
        (every mode's, as a two-way split's: K = 50 sets of 20 rows, result.json 98 MB against 21 MB).
        The comparisons against the rest always list every mode's.
    """

    aggregate: str = "none"
    pair_details: str = "leading"

    NOT_IN_CONFIG: ClassVar[tuple[str, ...]] = ("progress",)
    _parameter_constraints: ClassVar[dict[str, list]] = {
        **SplitOptions._parameter_constraints, "pair_details": [one_of(PAIR_DETAILS)]}

    def pairwise(self) -> PromptSplit:
        """The :class:`.PromptSplit` estimator with the same options (what one pair's ``split`` would run)."""
        return PromptSplit(**{f.name: getattr(self, f.name) for f in dataclasses.fields(SplitOptions)})

    def test_seconds(self, counts: Sequence[int]) -> float:
        """A rough estimate of the permutation test's seconds on sets of ``counts`` rows
        (:func:`test_cost_seconds`); 0 without a test."""
        total = int(sum(counts))
        method = self.route_name(total)
        permutations = self.resolved_permutations(method)
        rows = min(total, int(self.null_samples))
        width = rows if method == "exact" else min(rows, int(self.n_features))
        largest = -(-max(int(c) for c in counts) * rows // total) if method == "exact" else None
        threads = blas_thread_count() if self.device in ("auto", "cpu") else 1
        on_cpu = self.device in ("auto", "cpu")
        if permutations and kway_subspace.wanted(len(counts), total, method, on_cpu):
            return kway_subspace.test_seconds(len(counts), rows, permutations, threads)
        return test_cost_seconds(len(counts), rows, width, permutations, set_rows=largest,
                                 threads=threads) if permutations else 0.0

    def fit(self, sets: Sequence[PairedSet | tuple] | Mapping[str, PairedSet | tuple],
            names: Sequence[str] | None = None) -> KWayResult:
        """Compare K >= 2 sets (PairedSets or (prompt_emb, output_emb) tuples, or a mapping name -> set)
        sharing their prompts."""
        t0 = time.perf_counter()
        sets, names = self._check_sets(sets, names)
        labels, prompt_names = prompt_groups(*sets)
        _check_shared_prompts(labels, prompt_names, names, missing_strings_note(sets, names))
        counts = np.array([len(s) for s in sets])
        method = self.route_name(int(counts.sum()))
        notes: list[str] = []
        caveat(notes, self.check_test(int(counts.sum()), method))
        caveat(notes, strings_note(*sets))
        backend = resolve_backend(self.device)
        sigmas, scan = self._bandwidths(sets, backend)
        pairs, rest = kc.comparisons(len(sets))
        family = pairs + rest
        if kway_subspace.wanted(len(sets), int(counts.sum()), method, backend.name == "numpy"):
            route = SubspaceRoute(self, sets, sigmas, precision="float32", backend=backend,
                                  comparisons=family)
        else:
            route = choose_route(self, sets, sigmas, backend=backend, runner=current_runner(),
                                 comparisons=family)
        timings = {"setup_s": time.perf_counter() - t0}
        t1 = time.perf_counter()
        spectra, distances, stats = route.fit(labels, len(prompt_names), timings)
        matrix = route.distance_matrix()
        caveat(notes, out_of_range_note([v for spec in spectra.values() for v in spec.eigenvalues], method,
                                        self.n_features, self.eta))
        timings["fit_s"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        permutations = self.resolved_permutations(method)
        tests, common = self._significance(route, sets, names, prompt_names, labels, spectra, sigmas,
                                           permutations)
        route.release()
        timings["significance_s"] = time.perf_counter() - t2
        config = self.recorded_options(
            sigma_prompt=sigmas[0], sigma_output=sigmas[1], permutations=permutations,
            precision=route.precision, **route.resolved(), sets=[s.where for s in sets],
            device=backend.label)
        fit = ComparisonFit(sets=sets, counts=counts, spectra=spectra, stats=stats, distances=distances,
                               matrix=matrix)
        result = assemble(est=self, fit=fit, names=names, prompt_names=prompt_names, family=family,
                          n_pairs=len(pairs), tests=tests, common=common, method=method, config=config,
                          timings=timings)
        return dataclasses.replace(result, timings={**timings, "total_s": time.perf_counter() - t0},
                                   bandwidth_scan=scan, notes=notes)

    def _significance(self, route, sets: list[PairedSet], names: list[str], prompt_names: list[str],
                      labels: list[np.ndarray], spectra: dict, sigmas: tuple, permutations: int
                      ) -> tuple[dict, dict]:
        """Every comparison's test on the route's replicates (:func:`.testing.comparison_significance`;
        the kernel family of ``aggregate``): ({c: (record, p-values) or None}, what they share)."""
        if not permutations:
            return {}, {}
        fam = family_for(self.aggregate, sets, kernel=self.kernel, sigmas=sigmas, seed=self.seed,
                         rules=(self.bandwidth("prompt"), self.bandwidth("output")), names=prompt_names,
                         backend=route.backend, set_names=names)
        # (K >= 3 on few rows or with many comparisons: the whole operand, testing.WHOLE_OPERAND)
        compress = len(sets) == 2 or subspace_statistic(len(sets), int(sum(len(s) for s in sets)))
        outcome = comparison_significance(
            sets, route.comparisons, spectra, labels, operand_of=route.replicates(compress), eta=self.eta,
            permutations=permutations, alpha=float(self.alpha), seed=self.seed,
            max_samples=int(self.null_samples), family=fam, sequential=False,
            subspace=getattr(route, "subspace", None), compress=compress)
        return outcome.tests, outcome.common

    def _check_sets(self, sets: Sequence | Mapping, names: Sequence[str] | None
                    ) -> tuple[list[PairedSet], list[str]]:
        if isinstance(sets, Mapping):  # {name: set}: the keys are the names
            if names is not None:
                raise OptionError("names: the sets came as a mapping, whose keys name them; give one or the "
                                  "other", parameter="names")
            names = [str(k) for k in sets]
            sets = list(sets.values())
        sets = list(sets)
        if len(sets) < 2:
            raise InputError(f"K-way PromptSplit needs at least 2 sets, got {len(sets)}")
        if names is not None and len(names) != len(sets):
            raise OptionError(f"names must give one name per set: {len(names)} names for {len(sets)} sets")
        paired = [as_paired_set(s, names[i] if names else f"set {i + 1}") for i, s in enumerate(sets)]
        names = set_names(paired, names)  # (distinct: refused when given twice, numbered when repeated)
        for s in paired[1:]:
            check_compatible(paired[0], s)
        for a in range(len(paired)):
            for b in range(a + 1, len(paired)):
                if core.same_pairs(paired[a], paired[b]):
                    first, second = paired[a].where, paired[b].where
                    which = (f"{first} and {second}" if first != second else
                             f"sets {a + 1} and {b + 1} ({first})")
                    raise InputError(f"{which} hold the same pairs (a duplicated input?); give each set once")
        if self.kernel == "cosine":
            for s in paired:
                s.check_nonzero("the cosine kernel is undefined for a zero vector")
        return paired, names

    def _bandwidths(self, sets: list[PairedSet], backend) -> tuple[tuple, dict]:
        """Both bandwidths as numbers: rules evaluated on a seeded subsample of all K sets pooled (with
        K = 2 the subsample of :class:`.PromptSplit`), 'stable' by the scan of
        :func:`.core.stable_bandwidths` over every pair (recorded in ``bandwidth_scan``)."""
        if self.kernel != "gaussian":
            return (None, None), {}
        bws = core.pooled_bandwidths({key: self.bandwidth(key) for key in ("prompt", "output")}, sets,
                                     seed=self.seed)
        bws, scan = core.stable_bandwidths(bws, sets, seed=self.seed, eta=self.eta,
                                           stable_samples=STABLE_SAMPLES, stable_top=STABLE_TOP,
                                           backend=backend)
        for key, record in scan.items():
            if not record["plateau"]:
                warnings.warn(f"sigma_{key}='stable': {record['note']}", UserWarning, stacklevel=3)
        return (bws["prompt"].value, bws["output"].value), scan


def _check_shared_prompts(labels: list[np.ndarray], prompt_names: list[str], names: list[str],
                          cause: str | None = None) -> None:
    present = [set(np.unique(lab).tolist()) for lab in labels]
    every = set().union(*present)
    missing = [[prompt_names[g] for g in sorted(every - have)] for have in present]
    if any(missing):
        said = "; ".join(f"{name} lacks {', '.join(repr(p) for p in miss[:3])}"
                         + (f" and {len(miss) - 3} more" if len(miss) > 3 else "")
                         for name, miss in zip(names, missing, strict=True) if miss)
        raise InputError("K-way PromptSplit needs every set on the same prompts (labels are exchanged "
                         "within each prompt): " + (f"{cause}; {said}" if cause else said))

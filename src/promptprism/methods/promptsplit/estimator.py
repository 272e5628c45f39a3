"""The PromptSplit estimator: validate options, resolve defaults, call the functional core, build the result.

Routes: ``exact`` (eq. 3: :func:`~.core.exact_spectrum` on the joint Gram matrix, O((n+m)^2) memory); ``rff``
(gaussian) and ``sketch`` (cosine): Lambda_r (r x r) of an r-dimensional random feature map accumulated in one
streaming pass through the runner, diagonalised (:func:`~.core.feature_spectrum`), a second pass scoring the
samples; ``auto``: ``exact`` when n + m <= ``EXACT_MAX_SAMPLES``, else ``rff`` / ``sketch``.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._progress import progress_enabled, status
from ..._validation import check_choice, check_interval, check_positive_number, check_seed
from ...backend import NUMPY, Backend, feature_memory, resolve_backend
from ...data.paired import PairedSet, as_paired_set, check_compatible, prompt_groups
from ...errors import OptionError
from ...kernels.bandwidth import BANDWIDTH_RULES, SPECTRAL_RULES, Bandwidth
from ...kernels.features import ProductRandomFourierFeatures, ProductRandomProjection
from ...kernels.gram import KERNELS
from ...scale.runner import DaskRunner, balanced_blocks, current_runner, partition_rows, partition_size
from ...stats.modes import ModeStats
from . import aggregate, core, testing
from . import significance as sig
from .family import family_for
from .result import PromptSplitResult
from .summary import SIDES, SummaryOptions, summarise

METHODS = ("auto", "exact", "rff", "sketch")
PRECISIONS = ("auto", "float32", "float64")
AUTO_PRECISION = {"exact": "float64", "rff": "float32", "sketch": "float32"}
RANKINGS = ("contribution", "mean_score")
#: ``method='auto'`` uses the exact kernel route up to this many samples (n + m), random features above:
#: at 10,000 samples the exact route needs ~2.4 GB and ~15 s here; its cost grows as (n + m)^2 in memory.
EXACT_MAX_SAMPLES = 10_000
#: the bandwidth rules PromptSplit resolves (the median rule, and the 'stable' scan of its spectrum)
SIGMA_RULES = BANDWIDTH_RULES + SPECTRAL_RULES
#: rows per set of the subsample on which the 'stable' bandwidth rule computes spectra
STABLE_SAMPLES = 500
#: eigenvalues of each sign the 'stable' rule watches
STABLE_TOP = 5


@dataclass
class PromptSplit:
    """PromptSplit estimator: configure here, then ``fit(test, reference)`` -> :class:`PromptSplitResult`.

    Parameters
    ----------
    kernel : 'gaussian' or 'cosine', used for both prompts and outputs.
    method : 'auto', 'exact', 'rff' (gaussian only) or 'sketch' (cosine only).
    eta : weight of the reference covariance, Lambda = C_test - eta C_ref.
    sigma_prompt, sigma_output : gaussian bandwidths: a number, a rule ('median', '0.5*median', ...)
        evaluated on the pooled test + reference embeddings (see :mod:`promptprism.kernels.bandwidth`), or
        'stable': the smallest multiple of the median at which the top eigenvalues stop changing
        (:func:`~promptprism.kernels.bandwidth.stable_bandwidth`; the scan is in ``result.bandwidth_scan``).
    n_modes : modes reported per sign (the top ``n_modes`` positive and the top ``n_modes`` negative).
    n_features : r, the random-feature dimension of the 'rff' / 'sketch' routes (even for 'rff').
    seed : seeds every random draw (random features, bandwidth subsample, permutations); recorded.
    chunk_size : rows per streaming step.
    partition_rows : rows per task of the streaming passes (rounded up to whole chunks).
    top_k : samples listed per mode and side; top_prompts: prompts listed per mode.
    rank_prompts_by : 'contribution' (the prompt's exact share of the eigenvalue: default) or 'mean_score'
        (mean score of the prompt's samples in the favoured set, as in the paper's description).
    solver : 'auto', 'dense' (whole spectrum) or 'lanczos' (only the modes asked for); 'auto' is dense up
        to 3,000 samples (exact route) or 1,000 features (random-feature routes).
    permutations : label permutations of the significance test (:mod:`.significance`); None = 200 on the
        exact route and 100 on the random-feature routes; 0 turns the test off.
    alpha : family-wise significance level of the test (0 < alpha < 1).
    null_samples : the test runs on at most this many samples (n + m; at least 4), a seeded subsample of
        both sets above, exact on it; the test's time grows linearly with it (docs/promptsplit.md).
    progress : show progress bars (None: only on a terminal).
    aggregate : the test over a kernel family (:mod:`.aggregate`): 'auto' (by the outputs' modality),
        'text', 'image', or 'none' (the fitted kernel alone); modes stay the fitted kernel's, p-values
        adjusted; ``significance['aggregation']``: each kernel's p, what it finds, the cost.
    device : where the array core runs (:func:`promptprism.backend.resolve_backend`): 'auto' (torch on CUDA
        when a GPU is present, else numpy), 'cpu' (numpy, the reference), 'cuda', 'cuda:N', 'mps', or
        'torch' (torch on the CPU). Everything runs there: the joint Gram matrix and its eigen-solve, random
        features, covariances, the scoring pass, the permutation test and the 'stable' bandwidth scan;
        random draws stay numpy's (the same numbers on every device) and the results are numpy. On a dask
        cluster the streaming passes run with numpy on the workers. Recorded as ``config['device']``
        ('numpy' or 'torch:<device>'); tolerances between backends: docs/devices.md.
    precision : 'auto' (float32 on the random-feature routes, float64 on the exact route), 'float32' or
        'float64': the arithmetic of the features / Gram matrix and of the covariance updates (running sums
        and the r x r spectrum stay float64). The resolved value is ``result.config['precision']``; the
        accuracy cost is measured in docs/precision.md.
    """

    kernel: str = "gaussian"
    method: str = "auto"
    eta: float = 1.0
    sigma_prompt: Any = "median"
    sigma_output: Any = "median"
    n_modes: int = 10
    n_features: int = 2000
    seed: int = 0
    chunk_size: int = 8192
    top_k: int = 10
    top_prompts: int = 10
    rank_prompts_by: str = "contribution"
    solver: str = "auto"
    partition_rows: int = 262_144
    permutations: int | None = None
    alpha: float = 0.05
    null_samples: int = sig.NULL_MAX_SAMPLES
    progress: bool | None = False
    precision: str = "auto"
    device: str = "auto"
    aggregate: str = "auto"

    def __post_init__(self) -> None:
        self._validate()

    def _validate(self) -> None:
        if self.kernel not in KERNELS:
            raise OptionError(f"unknown kernel {self.kernel!r}; choose one of {', '.join(KERNELS)}")
        if self.method not in METHODS:
            raise OptionError(f"unknown method {self.method!r}; choose one of {', '.join(METHODS)}")
        if self.method == "rff" and self.kernel != "gaussian":
            raise OptionError("method 'rff' (random Fourier features) needs the gaussian kernel; "
                              "for the cosine kernel use method 'sketch'")
        if self.method == "sketch" and self.kernel != "cosine":
            raise OptionError("method 'sketch' (tensor-sketch random projection) needs the cosine kernel; "
                              "for the gaussian kernel use method 'rff'")
        check_choice(self.rank_prompts_by, RANKINGS, parameter="rank_prompts_by")
        resolve_backend(self.device)
        check_choice(self.precision, PRECISIONS, parameter="precision")
        if self.solver not in ("auto", "dense", "lanczos"):
            raise OptionError(f"solver must be 'auto', 'dense' or 'lanczos', got {self.solver!r}")
        check_positive_number(self.eta, "eta")
        check_positive_number(self.n_modes, "number of modes", integer=True)
        check_positive_number(self.n_features, "number of features", integer=True,
                              even=self.kernel == "gaussian")
        check_positive_number(self.chunk_size, "chunk size", integer=True)
        check_positive_number(self.partition_rows, "partition_rows", integer=True)
        check_positive_number(self.top_k, "top_k", integer=True)
        check_positive_number(self.top_prompts, "top_prompts", integer=True)
        if self.permutations is not None:  # (0 = no test)
            check_positive_number(self.permutations, "permutations", integer=True, allow_zero=True)
        check_interval(self.alpha, 0.0, 1.0, parameter="alpha")
        check_seed(self.seed)
        if check_positive_number(self.null_samples, "null_samples", integer=True) and self.null_samples < 4:
            raise OptionError(f"null_samples must be at least 4 (2 per set), got {self.null_samples}")
        check_choice(self.aggregate, aggregate.AGGREGATES, parameter="aggregate")
        if self.kernel == "gaussian":  # parsed once: a Bandwidth stays as it is
            self.sigma_prompt = Bandwidth.parse(self.sigma_prompt, "sigma_prompt", rules=SIGMA_RULES)
            self.sigma_output = Bandwidth.parse(self.sigma_output, "sigma_output", rules=SIGMA_RULES)

    # -------------------------------------------------------------------------------------------- fit
    def fit(self, test: PairedSet | tuple, reference: PairedSet | tuple) -> PromptSplitResult:
        """Compare ``test`` against ``reference`` (PairedSets, or (prompt_emb, output_emb) tuples).

        The random-feature routes' streaming passes run on :func:`promptprism.scale.current_runner`: in this
        process by default, on a dask cluster inside ``with execution(client):`` (one task per block of
        ``partition_rows`` rows; inputs streamed from files are read by the workers themselves); the
        result is the same either way.
        """
        self._validate()
        test = as_paired_set(test, "test")
        reference = as_paired_set(reference, "reference")
        check_compatible(test, reference)
        if self.kernel == "cosine":
            why = "the cosine kernel is undefined for a zero vector"
            test.check_nonzero(why)
            reference.check_nonzero(why)
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        sets = {"test": test, "reference": reference}
        sigmas, scan = self._resolve_bandwidths(sets)
        method = self.method
        if method == "auto":
            method = ("exact" if len(test) + len(reference) <= EXACT_MAX_SAMPLES
                      else "rff" if self.kernel == "gaussian" else "sketch")
        precision = AUTO_PRECISION[method] if self.precision == "auto" else self.precision
        label_list, names = prompt_groups(test, reference)
        labels = dict(zip(SIDES, label_list, strict=True))
        runner = current_runner()
        backend = resolve_backend(self.device)
        timings["setup_s"] = time.perf_counter() - t0

        feats = None
        if method == "exact":
            spec, distance, stats, gram = self._exact(sets, sigmas, timings, labels, len(names),
                                                      precision=precision, backend=backend)
            fmap = None
        else:
            fmap = self._feature_map(test, reference, method, sigmas, precision)
            spec, distance, stats, feats = self._random_features(sets, fmap, timings, labels, len(names),
                                                                 runner, backend=backend)
            gram = None
        identical = core.same_pairs(test, reference)
        permutations = self._permutations(method)
        t1 = time.perf_counter()
        significance, p_values = ({}, None)
        if permutations and not identical and spec.selected.size:
            family = family_for(self.aggregate, sets, kernel=self.kernel, sigmas=sigmas, seed=self.seed,
                                rules=(self.sigma_prompt, self.sigma_output), names=names, backend=backend)
            significance, p_values = self._significance(sets, spec, labels, gram=gram, fmap=fmap, feats=feats,
                                                        permutations=permutations, backend=backend,
                                                        family=family)
            significance["route_note"] = testing.ROUTE_NOTES.get(method)
        elif permutations:
            significance = sig.empty_record(permutations=permutations, alpha=float(self.alpha),
                                            seed=self.seed, identical=identical)
        del gram, feats
        timings["significance_s"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        modes, ranking, basis = summarise(
            sets=sets, eigenvalues=spec.mode_eigenvalues, stats=stats, names=names,
            options=SummaryOptions(self.eta, self.top_prompts, self.rank_prompts_by), p_values=p_values,
            alpha=float(self.alpha) if p_values is not None else None)
        if significance and identical:
            basis = "none: the sets are identical"
        timings["modes_s"] = time.perf_counter() - t2
        timings["total_s"] = time.perf_counter() - t0
        on_cluster = isinstance(runner, DaskRunner)
        config = {
            "kernel": self.kernel, "method": self.method, "eta": float(self.eta),
            "sigma_prompt": sigmas[0], "sigma_output": sigmas[1],
            "sigma_prompt_rule": str(self.sigma_prompt) if self.kernel == "gaussian" else None,
            "sigma_output_rule": str(self.sigma_output) if self.kernel == "gaussian" else None,
            "n_modes": self.n_modes, "n_features": None if method == "exact" else self.n_features,
            "chunk_size": self.chunk_size,
            "partition_rows": self._partition_size() if on_cluster and method != "exact" else None,
            "top_k": self.top_k, "top_prompts": self.top_prompts, "rank_prompts_by": self.rank_prompts_by,
            "solver": self.solver, "precision": precision, "device": backend.label,
            "permutations": permutations, "alpha": float(self.alpha), "null_samples": int(self.null_samples),
            "aggregate": self.aggregate,
            "test": test.where, "reference": reference.where,
        }
        return PromptSplitResult(
            eigenvalues=[float(v) for v in spec.eigenvalues], modes=modes, distance=float(distance),
            method=method, n_test=len(test), n_reference=len(reference), seed=self.seed, config=config,
            prompt_ranking=ranking, timings={k: round(v, 4) for k, v in timings.items()},
            significance=significance, identical=identical, ranking_basis=basis,
            eigenvalues_scope=spec.scope, bandwidth_scan=scan)

    def _permutations(self, method: str) -> int:
        return sig.DEFAULT_PERMUTATIONS[method] if self.permutations is None else int(self.permutations)

    # ------------------------------------------------------------------------------------ bandwidths
    def _resolve_bandwidths(self, sets: dict[str, PairedSet]) -> tuple[tuple[Any, Any], dict]:
        """Both bandwidths as numbers, resolved once: fixed, a median rule or the 'stable' scan (recorded)."""
        if self.kernel != "gaussian":
            return (None, None), {}
        bws = {key: bw.resolve_pooled([getattr(sets[side], f"{key}_embeddings") for side in SIDES],
                                      name=f"sigma_{key}", seed=self.seed)
               for key, bw in (("prompt", self.sigma_prompt), ("output", self.sigma_output))}
        bws, scan = core.stable_bandwidths(bws, sets, seed=self.seed, eta=self.eta,
                                           stable_samples=STABLE_SAMPLES, stable_top=STABLE_TOP,
                                           backend=resolve_backend(self.device))
        for key, record in scan.items():
            if not record["plateau"]:
                warnings.warn(f"sigma_{key}='stable': {record['note']}", UserWarning, stacklevel=3)
        return (bws["prompt"].value, bws["output"].value), scan

    # ------------------------------------------------------------------------------------ exact route
    def _exact(self, sets, sigmas, timings, labels, n_groups, *, precision, backend):
        test, reference = sets["test"], sets["reference"]
        n, m = len(test), len(reference)
        t0 = time.perf_counter()
        gram = core.joint_gram(test.prompt_embeddings, test.output_embeddings, reference.prompt_embeddings,
                               reference.output_embeddings, kernel=self.kernel, sigma_prompt=sigmas[0],
                               sigma_output=sigmas[1], precision=precision, backend=backend)
        distance = core.promptsplit_distance_from_gram(gram, n, self.eta)
        timings["gram_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        with status(f"PromptSplit: eigen-solve ({n + m} samples)", enabled=progress_enabled(self.progress)):
            spec = core.exact_spectrum(gram, core.signed_weights(n, m, self.eta), n_modes=self.n_modes,
                                       eta=self.eta, solver=self.solver, precision=precision)
        timings["eigen_s"] = time.perf_counter() - t1
        k = spec.selected.size
        stats = {side: ModeStats.empty(self.top_k, k, n_groups) for side in SIDES}
        stats["test"].update(np.arange(n), labels["test"], spec.scores[:n])
        stats["reference"].update(np.arange(m), labels["reference"], spec.scores[n:])
        return spec, distance, stats, gram

    # ---------------------------------------------------------------------------- random-feature route
    def _feature_map(self, test: PairedSet, reference: PairedSet, method: str, sigmas, precision: str):
        if method == "rff":
            center = None
            if precision == "float32":  # a fixed, seeded centre keeps the float32 phases small
                center = tuple(core.pooled_rows(getattr(test, a), getattr(reference, a), 1000, self.seed)
                               .mean(axis=0) for a in ("prompt_embeddings", "output_embeddings"))
            return ProductRandomFourierFeatures(test.dim_prompt, test.dim_output, self.n_features,
                                                sigmas[0], sigmas[1], seed=self.seed, fast_trig=True,
                                                precision=precision, center=center)
        return ProductRandomProjection(test.dim_prompt, test.dim_output, self.n_features, seed=self.seed,
                                       precision=precision)

    def _random_features(self, sets, fmap, timings, labels, n_groups, runner, *, backend: Backend):
        """Covariance pass, eigen-solve, scoring pass. In this process, when every feature fits the memory
        budget (:func:`~promptprism.backend.feature_memory`), the features of the covariance pass are kept
        for scoring (and the test); else (or on a cluster: workers use numpy) both passes stream. Both sets'
        rows go through one map-reduce whose tasks sum with weights 1/n and -eta/m, so the merged sum is
        Lambda itself (:func:`.core.difference_partition`)."""
        show = progress_enabled(self.progress)
        size = self._partition_size()
        t0 = time.perf_counter()
        total = sum(len(s) for s in sets.values())
        keep = (not isinstance(runner, DaskRunner)
                and total * fmap.dim * np.dtype(fmap.precision).itemsize <= feature_memory(backend))
        feats = {}
        on_numpy = backend.name == "numpy"  # (partition tasks on threads: numpy's products release the GIL)
        weights = {"test": 1.0 / len(sets["test"]), "reference": -self.eta / len(sets["reference"])}
        if keep:  # in this process: per local worker, whole chunks of both sets (balanced), features in place
            feats = {side: backend.empty((len(s), fmap.dim), fmap.precision) for side, s in sets.items()}
            rows = [(s.prompt_embeddings, s.output_embeddings, weights[side], feats[side])
                    for side, s in sets.items()]
            dealt = balanced_blocks([len(s) for s in sets.values()], self.chunk_size,
                                    getattr(runner, "workers", 1))
            tasks = [(fmap, [(*rows[i][:2], a, b, *rows[i][2:]) for i, a, b in blocks], self.chunk_size,
                      backend) for blocks in dealt]
        else:
            task_backend = NUMPY if isinstance(runner, DaskRunner) else backend
            tasks = [(fmap, [(*partition_rows(s, a, b), weights[side], None)], self.chunk_size, task_backend)
                     for side, s in sets.items() for a, b in core.chunks(len(s), size)]
        lam = runner.map_reduce(core.difference_partition, tasks, description="PromptSplit: covariance",
                                progress=show, threads=on_numpy).sum_outer(copy=False)
        timings["covariance_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        with status(f"PromptSplit: eigen-solve ({lam.shape[0]} features)", enabled=show):
            spec = core.feature_spectrum(backend.asarray(lam), n_modes=self.n_modes, eta=self.eta,
                                         solver=self.solver, precision=fmap.precision)
        flat = lam.ravel(order="K")  # (a view: vdot of the 2-d array would copy it to C order)
        distance = float(np.vdot(flat, flat))
        timings["eigen_s"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        if keep:
            stats = {side: core.mode_stats_from_features(feats[side], spec.basis, labels[side],
                                                         chunk_size=self.chunk_size, top_k=self.top_k,
                                                         n_groups=n_groups) for side in SIDES}
        else:
            stats = {side: runner.map_reduce(core.mode_stats_partition, [
                (fmap, spec.basis, *partition_rows(sets[side], a, b), labels[side][a:b], a,
                 self.chunk_size, self.top_k, n_groups, task_backend)
                for a, b in core.chunks(len(sets[side]), size)],
                description=f"PromptSplit: scoring ({side})", progress=show, threads=on_numpy)
                for side in SIDES}
        timings["scoring_s"] = time.perf_counter() - t2
        return spec, distance, stats, (feats or None)

    def _partition_size(self) -> int:
        return partition_size(self.partition_rows, self.chunk_size)

    # ----------------------------------------------------------------------------------- significance
    def _significance(self, sets, spec, labels, *, gram, fmap, feats, permutations, backend, family=None):
        """The permutation test of the reported modes (see :mod:`.significance` and :mod:`.testing`)."""
        operand_of = testing.null_operand(sets, gram=gram, fmap=fmap, feats=feats, backend=backend,
                                          chunk_size=self.chunk_size)
        with status(f"PromptSplit: permutation test ({permutations} permutations)",
                    enabled=progress_enabled(self.progress)):
            return testing.mode_significance(sets, spec, labels, operand_of=operand_of, eta=self.eta,
                                             permutations=permutations, alpha=float(self.alpha),
                                             seed=self.seed, max_samples=int(self.null_samples),
                                             family=family)



def replace_config(est: PromptSplit, **changes: Any) -> PromptSplit:
    """A copy of ``est`` with some options changed (validated)."""
    return dataclasses.replace(est, **changes)

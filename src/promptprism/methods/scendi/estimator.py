"""The Scendi estimator: validate, resolve defaults, call the core, assemble a :class:`ScendiResult`.

Estimator contract (the same for every promptprism method, :class:`promptprism._params.Estimator`): the
estimator holds its parameters, checked when it is made and never changed (``set_params`` and ``clone``
return new ones); ``fit`` returns what it found: a result (:class:`Scendi`, :func:`compare`) or the fitted
state (:class:`PromptNullifier` -> :class:`FittedNullifier`).

``fit`` = validate, choose the route, assemble: the routes (feature space streamed, feature space with the
prompts grouped, sample space; same numbers up to round-off; chosen by size, recorded in
``config['route']``) are objects with one interface in :mod:`.routes`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..._params import (
    BOOLEAN,
    BOOTSTRAP,
    PRECISION,
    SEED,
    Check,
    Interval,
    Options,
    at_least,
    between,
    positive,
)
from ..._progress import Stopwatch
from ...array_ops import blas_threads_for
from ...backend import DEVICE, resolve_backend
from ...data.paired import PairedSet
from ...errors import OptionError
from ...kernels.scendi_features import ScendiKernelOptions
from ...scale.runner import current_client
from .bootstrap import (
    MIN_JACKKNIFE_PROMPTS,
    check_bootstrap_memory,
    hold_estimates,
    interval_method,
    interval_notes,
    prompt_draws,
    prompt_intervals,
)
from .calibration import interval_validity
from .clusters import build_clusters
from .core import EIGEN_FLOOR, MAX_STORED_EIGENVALUES, PromptRankWarning
from .debias import debias_possible
from .dual import PRECISIONS
from .nullifier import check_paired, prompt_rank_warnings, resolve_feature_maps, scendi_groups
from .options import GAMMA_ESTIMATORS, INTERVAL_METHODS, unused_options
from .ranges import NO_SPLIT_NOTE, clip_table, clipped_notes, no_output_diversity, without_shares
from .result import ScendiResult
from .routes import SAMPLE_SPACE_MAX_ROWS, FitInputs, Route, RouteSpectra, choose_route

#: the matrix behind scendi_prompt / prompt_share per estimator (``config['prompt_part']``): C_II - Lambda_I
PROMPT_PART = {"in-sample": "Lambda_T = C_IT C_TT^+ C_TI = C_II - Lambda_I (in-sample Gamma*)",
               "debiased": "Lambda_T = C_II - Lambda_I (Lambda_I: in-sample, degrees-of-freedom corrected)",
               "cross-fit": "Lambda_T = C_II - Lambda_I (Lambda_I: covariance of the out-of-fold residuals)"}
#: the feature-space bootstrap holds the n x (d_I + d_T) features: at most this many values
FEATURE_BOOTSTRAP_MAX_VALUES = 50_000_000
#: bootstrap='auto' (the CLI default) runs this many replicates when one replicate is cheap ...
AUTO_BOOTSTRAP_REPLICATES = 200
#: ... that is, when its matrices are at most this size (min(n, d_I + d_T)); and the jackknife (one refit
#: per distinct prompt G) only within the same budget, G size^3 <= 200 x 600^3 (a jackknife refit at
#: size 500 took 0.14 s on a 2-core AMD EPYC: 500 prompts, 70 s, where 200 basic replicates take 27 s)
AUTO_BOOTSTRAP_MAX_SIZE = 600
#: the score table's entries that are fields of :class:`ScendiResult` of the same name
TABLE_FIELDS = ("scendi", "scendi_prompt", "scendi_order2", "scendi_prompt_order2", "vendi", "rke",
                "model_share", "prompt_share", "entropies")
#: the options recorded in ``config`` as given (the others are recorded resolved, or elsewhere in the result)
CONFIG_FIELDS = ("n_clusters", "top_k", "chunk_size")
#: the gaussian kernel's bandwidth options, recorded as ``<name>_rule`` in ``config`` (None for cosine)
BANDWIDTH_FIELDS = ("sigma_prompt", "sigma_output")


def _interval(value: Any, name: str) -> None:
    if not isinstance(value, str) or value not in INTERVAL_METHODS:
        raise OptionError(f"{name} must be 'auto', 'jackknife' or 'basic', got {value!r}", parameter=name)


def _head(values: np.ndarray) -> list[float]:
    """The stored eigenvalues: the first :data:`MAX_STORED_EIGENVALUES`, those above :data:`EIGEN_FLOOR`."""
    v = np.asarray(values)[:MAX_STORED_EIGENVALUES]
    return [float(x) for x in v if x > EIGEN_FLOOR]


@dataclass(frozen=True)
class Scendi(ScendiKernelOptions):
    """Scendi estimator: configure here, then ``fit(paired_set)`` -> :class:`ScendiResult` (a measurement:
    ``fit`` returns the result; :class:`PromptNullifier` is the learning counterpart). Parameters are
    checked when it is made (declared in ``_parameter_constraints``) and never changed afterwards.

    Parameters
    ----------
    kernel : 'cosine' (exact, no bandwidth; the default) or 'gaussian' (random Fourier features).
    sigma_prompt, sigma_output : gaussian bandwidths, a number or a rule ('median', '0.5*median', ...),
        each evaluated on its own embeddings (seeded subsample of 1,000).
    n_features : RFF output dimension per modality, 2D (even); the reference implementation uses 5000
        (2 x 2500).
    shared_frequencies : one set of RFF frequencies and one bandwidth (``sigma_output``, evaluated on prompts
        and outputs pooled) for both modalities, as the reference implementation does for CLIP; needs
        prompts and outputs in one space. Default False: separate maps (any two embedding spaces).
    n_clusters : eigenvectors of Lambda_I (and of C_II) reported as clusters; top_k : samples per cluster.
    gamma_estimator : 'in-sample' (the paper), 'debiased' (the same, degrees-of-freedom corrected:
        :mod:`.debias`), 'cross-fit' (Gamma* fitted on the other folds' prompts) or 'auto' (debiased while
        rank(C_TT) < the distinct prompts, else in-sample when 2 rank < n, else cross-fit; docs/scendi.md).
    n_folds : folds of the cross-fitted estimator (prompts dealt into folds, seeded).
    ridge : 'cv' (chosen from ``RIDGE_GRID`` by the folds' out-of-fold error) or a number >= 0, the ridge of
        the cross-fitted Gamma* = C_IT (C_TT + ridge I)^+.
    bootstrap : replicates of the prompt bootstrap for confidence intervals (0 = off; 'auto' = 200 when one
        replicate is cheap, else off with a note); confidence : the intervals' level.
    interval : 'jackknife' (delete-one-prompt jackknife, bias-corrected centre +- t SE; G replicates,
        ``bootstrap`` only switches it on), 'basic' (basic interval of ``bootstrap`` prompt bootstrap
        replicates) or 'auto' (jackknife, but basic for the cross-fitted estimator, whose re-dealt folds
        make the jackknife's spread G-fold noisy); docs/scendi.md: the coverage of each on the grid.
    precision : 'float64' or 'float32' for the sample-space matrices and their eigen-decompositions (the
        streaming feature-space pass accumulates in float64).
    device : where the array core runs (:func:`promptprism.backend.resolve_backend`): 'auto' (torch on CUDA
        when present, else numpy; the default), 'cpu' (numpy, the reference), 'cuda', 'cuda:N', 'mps', or
        'torch' (torch on the CPU). Random draws stay numpy-seeded; results are numpy either way.
    seed : seeds every random draw (RFF frequencies: ``seed`` for outputs, ``seed + 1`` for prompts unless
        shared; the bandwidth subsample; the folds; the bootstrap draws); recorded in the result.
    chunk_size : rows per streaming step. progress : progress bars (None: only on a terminal).
    """

    n_clusters: int = 5
    top_k: int = 10
    seed: int = 0
    chunk_size: int = 2048
    partition_rows: int = 262_144
    progress: bool | None = False
    gamma_estimator: str = "auto"
    n_folds: int = 5
    ridge: Any = "cv"
    bootstrap: Any = 0
    confidence: float = 0.95
    precision: str = "float64"
    device: str = "auto"
    interval: str = "auto"

    _parameter_constraints: ClassVar[dict[str, list]] = {
        **ScendiKernelOptions._parameter_constraints,
        "n_clusters": [positive()], "top_k": [positive()], "seed": [SEED], "chunk_size": [positive()],
        "partition_rows": [positive()], "progress": [BOOLEAN, None],
        "gamma_estimator": [Options(GAMMA_ESTIMATORS)], "n_folds": [at_least(2)],
        "ridge": [Options(("cv",)), Interval(numbers.Real, 0, None)],
        "bootstrap": [Options(("auto",)), BOOTSTRAP],
        "confidence": [between(0.0, 1.0)], "precision": [PRECISION], "device": [DEVICE],
        "interval": [Check(_interval, "'auto', 'jackknife' or 'basic'")]}

    def fit(self, data: PairedSet | tuple, name: str | None = None) -> ScendiResult:
        """Scendi, Vendi and RKE of one paired set, the model-driven and unconditioned clusters and, with
        ``bootstrap``, their confidence intervals. Returns a :class:`ScendiResult`.

        Inside ``with promptprism.execution(client):`` the streaming passes run on the dask cluster; the
        result equals the local one.
        """
        data = check_paired(data, self.kernel)
        labels, note = scendi_groups(data)
        return self.fit_with_draws(data, name=name, groups=labels[0], notes=[note] if note else ())[0]

    def fit_with_draws(self, data: PairedSet, *, name: str | None, groups: np.ndarray,
                       counts: np.ndarray | None = None, notes: Sequence[str] = ()
                       ) -> tuple[ScendiResult, dict | None]:
        """:meth:`fit` with the rows' prompt labels (0..G-1) given (:func:`.nullifier.scendi_groups`; with
        the ``notes`` of how they were made), and optionally the bootstrap's prompt draws ``counts``
        (replicates x G), so that several models can share them; also returns the replicates ({metric:
        values}) or None when the bootstrap is off."""
        clock, notes = Stopwatch(), list(notes)
        inputs = self._inputs(data, groups, notes)
        replicates = self._replicates(inputs.n, inputs.dim, inputs.distinct, notes)
        route = choose_route(inputs)  # the covariance pass
        clock.lap("covariance_s")
        rank = route.rank
        estimator = self._resolve_estimator(rank, inputs.n, inputs.distinct, inputs.in_memory, notes)
        route, estimator = route.settle(estimator, notes)
        replicates = self._within_auto_budget(replicates, estimator, inputs, notes)
        self._warn_rank(data.where, rank, inputs.n, estimator, notes)
        k = min(self.n_clusters, inputs.d_i, inputs.n)  # (n samples span at most n directions)
        spectra = route.spectrum(estimator, k)
        table, clipped = clip_table(spectra.table)  # (the estimate in its range; the raw values recorded)
        no_split = no_output_diversity(spectra.output, self.precision)
        if no_split:  # C_II spans one direction: nothing to split between prompts and model
            table, clipped = without_shares(table), {}
            notes.append(NO_SPLIT_NOTE)
        notes.extend(clipped_notes(clipped, spectra.described))
        clock.lap("eigen_s")
        ids, scores = route.mode_stats(spectra, self.top_k)
        clusters = [] if no_split else build_clusters(data, ids, scores, eigenvalues=spectra.model,
                                                      trace=spectra.table["model_share"], k=k, offset=0)
        clusters_c = build_clusters(data, ids, scores, eigenvalues=spectra.output,
                                    trace=float(np.sum(spectra.output)), k=k, offset=k)
        clock.lap("clusters_s")
        intervals, boot, reps = self._intervals(route, inputs, spectra, estimator, rank, replicates, counts,
                                                notes, reported=table)
        for note in unused_options(self, kernel=self.kernel, gamma_estimator=spectra.described,
                                   intervals=bool(intervals)):
            notes.append(note)
            warnings.warn(note, UserWarning, stacklevel=3)
        if replicates:
            clock.lap("bootstrap_s")
        return ScendiResult(
            name=name or data.name, **{m: table[m] for m in TABLE_FIELDS}, clipped=clipped,
            clusters=clusters, clusters_unconditioned=clusters_c,
            eigenvalues={part: _head(getattr(spectra, part)) for part in ("model", "prompt", "output")},
            n=inputs.n, prompt_rank=int(rank), seed=self.seed, warnings=notes, timings=clock.total(),
            config=self._config(inputs, route, estimator, spectra.ridge), intervals=intervals,
            bootstrap=boot, gamma_estimator=spectra.described), reps

    def _inputs(self, data: PairedSet, groups: np.ndarray, notes: list[str]) -> FitInputs:
        """The fit's inputs with the feature maps resolved (bandwidth rules evaluated, seeded)."""
        maps = resolve_feature_maps(data, kernel=self.kernel, sigma_output=self.sigma_output,
                                    sigma_prompt=self.sigma_prompt, n_features=self.n_features,
                                    shared_frequencies=self.shared_frequencies, seed=self.seed, notes=notes)
        return FitInputs(data=data, maps=maps, groups=groups, dtype=PRECISIONS[self.precision],
                         backend=resolve_backend(self.device), chunk_size=self.chunk_size,
                         partition_rows=self.partition_rows, progress=self.progress,
                         gamma_estimator=self.gamma_estimator, n_folds=self.n_folds, ridge=self.ridge,
                         seed=self.seed)

    @staticmethod
    def _warn_rank(where: str, rank: int, n: int, estimator: str, notes: list[str]) -> None:
        """The rank warnings of :func:`.nullifier.prompt_rank_warnings`, noted and raised at fit's caller."""
        for msg in prompt_rank_warnings(where, rank, n, estimator=estimator):
            notes.append(msg)
            warnings.warn(msg, PromptRankWarning, stacklevel=4)

    def _intervals(self, route: Route, inputs: FitInputs, spectra: RouteSpectra, estimator: str, rank: int,
                   replicates: int, counts: np.ndarray | None, notes: list[str], *, reported: dict
                   ) -> tuple[dict, dict, Any]:
        """(intervals, the bootstrap record, the replicates) of the prompt bootstrap or jackknife; empty
        when ``replicates`` is 0. Built from the raw estimate (the replicates are the raw estimator's);
        whether each holds the ``reported`` (clipped) value is checked against that value."""
        if not replicates:
            return {}, {}, None
        if inputs.distinct < 2:
            raise OptionError(f"{inputs.data.where}: a bootstrap over prompts needs at least 2 distinct "
                              "prompts, this set has 1; pass bootstrap=0")
        if counts is None:
            counts = prompt_draws(int(np.max(inputs.groups)) + 1, replicates, self.seed)
        engine, side = route.replicates(estimator, spectra.ridge)
        method = interval_method(self.interval, estimator)
        with blas_threads_for(side):
            intervals, reps, method = prompt_intervals(inputs.groups, counts, engine, spectra.table,
                                                       self.confidence, method)
        intervals = {m: iv for m, iv in intervals.items() if math.isfinite(reported[m])}  # (undefined: none)
        intervals = hold_estimates(intervals, reported)  # never an interval that excludes its estimate
        notes.extend(interval_notes(intervals, reported))
        fits = int(replicates) if reps is None else int(np.asarray(reps["model_share"]).size)
        boot = {"replicates": fits, "level": float(self.confidence), "seed": self.seed,
                "resample": "prompts", "interval": method,
                "validity": interval_validity(estimator, method, self.kernel, rank, inputs.distinct,
                                              vendi=float(reported["vendi"]), output_dim=inputs.d_i)}
        return intervals, boot, reps

    def _config(self, inputs: FitInputs, route: Route, estimator: str, ridge: float) -> dict:
        """result.json's ``config``: the kernel and its resolved feature maps (bandwidth rules and shared
        frequencies recorded for the gaussian kernel only), the fields of :data:`CONFIG_FIELDS` as given,
        then the values resolved by the fit (input, precision, route, device, the cross-fit's folds and
        ridge, the prompt part)."""
        gaussian, cross_fitted = self.kernel == "gaussian", estimator == "cross-fit"
        return {"kernel": self.kernel, **inputs.maps.describe(),
                **{f"{name}_rule": str(getattr(self, self._rule_of(name))) if gaussian else None
                   for name in BANDWIDTH_FIELDS},
                "shared_frequencies": bool(self.shared_frequencies and gaussian),
                **{name: getattr(self, name) for name in CONFIG_FIELDS},
                "eigen_floor": EIGEN_FLOOR, "input": inputs.data.where, "precision": self.precision,
                "route": route.name, "device": inputs.backend.label,
                "n_folds": self.n_folds if cross_fitted else None,
                "ridge": (None if math.isinf(ridge) else ridge) if cross_fitted else None,
                "prompt_part": PROMPT_PART[estimator]}

    def _rule_of(self, name: str) -> str:
        """The option whose rule set the bandwidth ``name`` (shared frequencies: sigma_output's for both)."""
        return "sigma_output" if self.shared_frequencies and name == "sigma_prompt" else name

    def _replicates(self, n: int, dim: int, distinct: int, notes: list[str]) -> int:
        """The bootstrap's replicate count: ``bootstrap``, or for 'auto' 200 when one replicate is cheap."""
        size = min(n, dim)
        if self.bootstrap == "auto" and distinct < 2:
            notes.append("no confidence intervals: every row has the same prompt, and the bootstrap "
                         "resamples prompts")
            return 0
        if self.bootstrap == "auto":
            if size <= AUTO_BOOTSTRAP_MAX_SIZE and current_client() is None:
                return AUTO_BOOTSTRAP_REPLICATES
            notes.append(f"no confidence intervals: a bootstrap replicate here diagonalises {size} x {size} "
                         f"matrices; ask for them with bootstrap=B (CLI --bootstrap B, e.g. 100)")
            return 0
        if self.bootstrap and (current_client() is not None or (
                n > SAMPLE_SPACE_MAX_ROWS if n < dim else n * dim > FEATURE_BOOTSTRAP_MAX_VALUES)):
            raise OptionError(
                f"bootstrap needs the features in one process's memory: n = {n} rows x {dim} features is "
                f"over the limit (n <= {SAMPLE_SPACE_MAX_ROWS} when n is below the feature dimension, else "
                f"n x dim <= {FEATURE_BOOTSTRAP_MAX_VALUES:,}) or a cluster is in use; pass bootstrap=0")
        check_bootstrap_memory(int(self.bootstrap), rows=n, groups=distinct)
        return int(self.bootstrap)

    def _within_auto_budget(self, replicates: int, estimator: str, inputs: FitInputs, notes: list[str]
                            ) -> int:
        """``bootstrap='auto'`` with the jackknife's intervals: ``replicates``, or 0 (with a note) when its G
        refits (one per distinct prompt) cost more than the 200 cheap replicates 'auto' allows."""
        size = min(inputs.n, inputs.dim)
        jackknife = (interval_method(self.interval, estimator) == "jackknife"
                     and inputs.distinct >= MIN_JACKKNIFE_PROMPTS)
        if (self.bootstrap != "auto" or not replicates or not jackknife
                or inputs.distinct * size**3 <= AUTO_BOOTSTRAP_REPLICATES * AUTO_BOOTSTRAP_MAX_SIZE**3):
            return replicates
        notes.append(f"no confidence intervals: the jackknife refits the estimator once per distinct prompt "
                     f"({inputs.distinct:,} refits on {size} x {size} matrices); ask for them with "
                     f"bootstrap=B (CLI --bootstrap B: the jackknife's {inputs.distinct:,} refits, or "
                     f"B with interval='basic')")
        return 0

    def _resolve_estimator(self, rank: int, n: int, distinct: int, in_memory: bool, notes: list[str]) -> str:
        """'in-sample', 'debiased' or 'cross-fit' for this set (see ``gamma_estimator``)."""
        if self.gamma_estimator == "cross-fit":
            if distinct < 2:
                raise OptionError("gamma_estimator='cross-fit' needs at least 2 distinct prompts; every row "
                                  "has the same prompt")
            if not in_memory:
                raise OptionError(f"gamma_estimator='cross-fit' works in sample space: it needs n <= "
                                  f"{SAMPLE_SPACE_MAX_ROWS} rows in one process (got n = {n}"
                                  f"{', on a cluster' if current_client() is not None else ''})")
            return "cross-fit"
        if self.gamma_estimator in ("in-sample", "debiased"):
            return self.gamma_estimator
        if distinct < 2:
            return "in-sample"
        if debias_possible(rank, distinct):
            return "debiased"
        if 2 * rank < n:  # each prompt's mean fitted exactly, several outputs each: the within-prompt part
            return "in-sample"
        if not in_memory:
            notes.append(f"rank(C_TT) = {rank} is near the {distinct} distinct prompts, but the cross-fitted "
                         f"estimator needs the set in one process with n <= {SAMPLE_SPACE_MAX_ROWS}; Gamma* "
                         "was fitted in-sample (biased low)")
            return "in-sample"
        return "cross-fit"

"""The Scendi estimator: validate, resolve defaults, call the core, assemble a :class:`ScendiResult`.

Estimator contract (the same for every promptprism method): an estimator that learns state
(:class:`PromptNullifier`) returns itself from ``fit``; one that measures or compares (:class:`Scendi`,
:func:`compare`) returns a result object.

Routes (same numbers up to round-off; chosen by size, recorded in ``config['route']``):

* feature space: one streaming pass accumulates the (d_I + d_T)^2 joint covariance (any n, any runner),
  then the Schur split and the spectra of d_I x d_I matrices;
* sample space: phi_I, phi_T held in memory, n x n Gram matrices, the spectra of n x n matrices
  (:mod:`.dual`); used when n is below the feature dimension, and for the cross-fitted estimator and the
  bootstrap.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._validation import check_choice, check_interval, check_positive_number
from ...array_ops import blas_threads_for, index_array, trace
from ...backend import resolve_backend, to_numpy
from ...data.paired import PairedSet, prompt_groups
from ...errors import OptionError
from ...kernels.scendi_features import ScendiKernelOptions
from ...scale.runner import current_client
from .bootstrap import check_bootstrap, interval_method, interval_notes, prompt_draws, prompt_intervals
from .calibration import interval_validity
from .clusters import build_clusters, stream_cluster_scores, top_samples
from .core import (
    EIGEN_FLOOR,
    MAX_STORED_EIGENVALUES,
    PINV_RCOND,
    PromptRankWarning,
    scendi_score_table,
    schur_split,
    spectrum_and_top_vectors,
)
from .crossfit import check_folds, cross_fit
from .debias import debias_possible, debias_unique, describe_in_sample
from .dual import check_precision, grouped_prompt_basis, sample_space_spectra
from .grouped import grouped_spectra, grouped_split
from .nullifier import (
    PromptNullifier,
    check_paired,
    joint_covariance_on,
    prompt_rank_warnings,
    resolve_feature_maps,
)
from .replicates import (
    FeatureSpaceReplicates,
    GroupedReplicates,
    SampleSpaceReplicates,
    feature_matrices,
    gram,
)
from .results import ScendiResult

#: Gamma* estimators: 'auto' = 'debiased' while G > rank(C_TT), else in-sample if 2 rank < n, else cross-fit
GAMMA_ESTIMATORS = ("auto", "in-sample", "debiased", "cross-fit")
INTERVAL_METHODS = ("auto", "jackknife", "basic")
#: the matrix behind scendi_prompt / prompt_share per estimator (``config['prompt_part']``): C_II - Lambda_I
PROMPT_PART = {"in-sample": "Lambda_T = C_IT C_TT^+ C_TI = C_II - Lambda_I (in-sample Gamma*)",
               "debiased": "Lambda_T = C_II - Lambda_I (Lambda_I: in-sample, degrees-of-freedom corrected)",
               "cross-fit": "Lambda_T = C_II - Lambda_I (Lambda_I: covariance of the out-of-fold residuals)"}
#: the sample-space route holds phi_I, phi_T and n x n matrices in memory: at most this many rows
SAMPLE_SPACE_MAX_ROWS = 8000
#: the grouped feature-space route holds Phi_I (n x d_I) in memory: at most this many values
GROUPED_MAX_VALUES = 100_000_000
#: the feature-space bootstrap holds the n x (d_I + d_T) features: at most this many values
FEATURE_BOOTSTRAP_MAX_VALUES = 50_000_000
#: bootstrap='auto' (the CLI default) runs this many replicates when one replicate is cheap ...
AUTO_BOOTSTRAP_REPLICATES = 200
#: ... that is, when its matrices are at most this size (min(n, d_I + d_T))
AUTO_BOOTSTRAP_MAX_SIZE = 600


@dataclass
class Scendi(ScendiKernelOptions):
    """Scendi estimator: configure here, then ``fit(paired_set)`` -> :class:`ScendiResult` (a measurement:
    ``fit`` returns the result, not self; :class:`PromptNullifier` is the learning counterpart).

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

    def __post_init__(self) -> None:
        self._validate()

    def _validate(self) -> None:
        check_positive_number(self.n_clusters, "number of clusters", integer=True)
        check_positive_number(self.top_k, "top_k", integer=True)
        check_choice(self.gamma_estimator, GAMMA_ESTIMATORS, parameter="gamma_estimator")
        check_positive_number(self.n_folds, "n_folds", integer=True)
        if self.n_folds < 2:
            raise OptionError(f"n_folds must be >= 2, got {self.n_folds}")
        if self.ridge != "cv":
            if isinstance(self.ridge, bool) or not isinstance(self.ridge, (int, float)) or not (
                    math.isfinite(self.ridge) and self.ridge >= 0):
                raise OptionError(f"ridge must be 'cv' or a number >= 0, got {self.ridge!r}")
        if self.bootstrap != "auto":
            check_bootstrap(self.bootstrap, self.confidence)
        else:
            check_interval(self.confidence, 0.0, 1.0, parameter="confidence")
        check_precision(self.precision)
        if self.interval not in INTERVAL_METHODS:
            raise OptionError(f"interval must be 'auto', 'jackknife' or 'basic', got {self.interval!r}")
        resolve_backend(self.device)
        self._nullifier()._validate()

    def _nullifier(self) -> PromptNullifier:
        return PromptNullifier(kernel=self.kernel, sigma_prompt=self.sigma_prompt,
                               sigma_output=self.sigma_output, n_features=self.n_features,
                               shared_frequencies=self.shared_frequencies, seed=self.seed,
                               chunk_size=self.chunk_size, partition_rows=self.partition_rows,
                               progress=self.progress)

    def fit(self, data: PairedSet | tuple, name: str | None = None) -> ScendiResult:
        """Scendi, Vendi and RKE of one paired set, the model-driven and unconditioned clusters and, with
        ``bootstrap``, their confidence intervals. Returns a :class:`ScendiResult`.

        Inside ``with promptprism.execution(client):`` the streaming passes run on the dask cluster; the
        result equals the local one.
        """
        self._validate()
        data = check_paired(data, self.kernel)
        labels, _ = prompt_groups(data)
        return self.fit_with_draws(data, name=name, groups=labels[0])[0]

    def fit_with_draws(self, data: PairedSet, *, name: str | None, groups: np.ndarray,
                       counts: np.ndarray | None = None) -> tuple[ScendiResult, dict | None]:
        """:meth:`fit` with the rows' prompt labels (0..G-1) given, and optionally the bootstrap's prompt
        draws ``counts`` (replicates x G), so that several models can share them; also returns the
        replicates ({metric: values}) or None when the bootstrap is off."""
        t0 = time.perf_counter()
        notes: list[str] = []
        n = len(data)
        backend = resolve_backend(self.device)
        maps = resolve_feature_maps(data, kernel=self.kernel, sigma_output=self.sigma_output,
                                    sigma_prompt=self.sigma_prompt, n_features=self.n_features,
                                    shared_frequencies=self.shared_frequencies, seed=self.seed, notes=notes)
        d_i, dim = maps.dim_output, maps.dim_output + maps.dim_prompt
        dtype = check_precision(self.precision)
        n_groups = int(np.max(groups)) + 1 if n else 0
        distinct_groups = len(np.unique(groups))
        in_memory = current_client() is None and n <= SAMPLE_SPACE_MAX_ROWS
        replicates = self._replicates(n, dim, distinct_groups, notes)
        timings: dict[str, float] = {}
        route = "feature space"
        feats = split = grouped = None
        g = distinct_groups  # the grouped route costs O(n d_I^2 + G^2 d_T + G^3), the streaming one O(n d^2)
        if self._grouped_route(n, dim, d_i, g):
            feats = feature_matrices(data, maps, groups=groups, chunk_size=self.chunk_size, dtype=dtype,
                                     backend=backend)
            grouped = grouped_split(feats[0], feats[1], groups, rcond=PINV_RCOND)
            rank = grouped.prompt_rank
            route = "feature space, grouped prompts"
        elif in_memory and (n < dim or self.gamma_estimator == "cross-fit"):
            feats = feature_matrices(data, maps, groups=groups, chunk_size=self.chunk_size, dtype=dtype,
                                     backend=backend)
            grams = gram(feats[0]), gram(feats[1])  # outputs n x n, distinct prompts G x G
            w = np.full(n, 1.0 / n, dtype=dtype)
            basis, rank = grouped_prompt_basis(grams[1], groups, w, rcond=PINV_RCOND)
            route = "sample space"
        else:
            c = joint_covariance_on(backend, data, maps, chunk_size=self.chunk_size,
                                    partition_rows=self.partition_rows, progress=self.progress)
            split = schur_split(c, d_i, rcond=PINV_RCOND)
            del c
            rank = split.prompt_rank
            route = "feature space"
        timings["covariance_s"] = time.perf_counter() - t0
        estimator = self._resolve_estimator(rank, n, distinct_groups, in_memory, notes)
        if estimator == "debiased" and split is not None:
            if distinct_groups == n:  # every prompt distinct: Lambda_I^dfc = Lambda_I n / (n - k)
                split = debias_unique(split, rank, n)
            else:
                estimator = "in-sample"
                notes.append("the debiased estimator needs the prompts grouped in one process here; Gamma* "
                             "was fitted in-sample (biased low by the fitted degrees of freedom)")
        if estimator == "debiased" and grouped is not None:
            grouped = grouped_split(feats[0], feats[1], groups, rcond=PINV_RCOND, debias=True)
        if estimator == "cross-fit" and (split is not None or grouped is not None):
            split = grouped = None
            feats = feats if feats is not None else feature_matrices(
                data, maps, groups=groups, chunk_size=self.chunk_size, dtype=dtype, backend=backend)
            grams = gram(feats[0]), gram(feats[1])
            w = np.full(n, 1.0 / n, dtype=dtype)
            route = "sample space"
        for msg in prompt_rank_warnings(data.where, rank, n, estimator=estimator):
            notes.append(msg)
            warnings.warn(msg, PromptRankWarning, stacklevel=3)

        t1 = time.perf_counter()
        k = min(self.n_clusters, d_i, n)  # (n samples span at most n directions)
        ridge, described = 0.0, describe_in_sample(estimator, grouped, split, n, rank, distinct_groups)
        s = None  # the spectra of the in-memory paths (grouped features, sample space)
        if grouped is not None:  # feature space, prompts grouped, in-sample
            s = grouped_spectra(grouped, feats[0], groups, n_top=k)
        elif split is not None:  # feature space, in-sample
            li_vals, li_vecs = spectrum_and_top_vectors(split.lambda_i, k)
            c_vals, c_vecs = spectrum_and_top_vectors(split.c_ii, k)
            table = scendi_score_table(li_vals, split.lambda_t_eigenvalues, c_vals,
                                       model_share=trace(split.lambda_i), prompt_share=trace(split.lambda_t))
            lt_vals = split.lambda_t_eigenvalues
            timings["eigen_s"] = time.perf_counter() - t1
            t2 = time.perf_counter()
            ids, scores = stream_cluster_scores(
                data, maps, to_numpy(split.gamma), li_vecs, c_vecs, chunk_size=self.chunk_size,
                partition_rows=self.partition_rows, top_k=self.top_k, progress=self.progress)
        else:
            if estimator != "cross-fit":
                s = sample_space_spectra(grams[0], w, dim=d_i, basis=basis, n_top=k,
                                         debias_groups=groups if estimator == "debiased" else None)
            else:
                folds = self.n_folds
                if self.gamma_estimator == "cross-fit":
                    folds = check_folds(self.n_folds, distinct_groups)
                fitted = cross_fit(grams[0], grams[1], groups, w, n_folds=folds, ridge=self.ridge,
                                   seed=self.seed, dim=d_i, n_top=k, rcond=PINV_RCOND)
                s, ridge, described = fitted.spectra, fitted.ridge, fitted.described
        if s is not None:
            li_vals, c_vals, lt_vals = s.model, s.output, s.prompt
            table = scendi_score_table(s.model, s.prompt, s.output, model_share=s.model_share,
                                       prompt_share=s.prompt_share)
            timings["eigen_s"] = time.perf_counter() - t1
            t2 = time.perf_counter()
            ids, scores = top_samples(s.model_scores, s.output_scores, self.top_k)
        clusters = build_clusters(data, ids, scores, eigenvalues=li_vals, trace=table["model_share"], k=k,
                                  offset=0)
        clusters_c = build_clusters(data, ids, scores, eigenvalues=c_vals, trace=float(np.sum(c_vals)), k=k,
                                    offset=k)
        timings["clusters_s"] = time.perf_counter() - t2

        intervals, boot, reps = {}, {}, None
        if replicates:
            t3 = time.perf_counter()
            if distinct_groups < 2:
                raise OptionError(f"{data.where}: a bootstrap over prompts needs at least 2 distinct "
                                  "prompts, this set has 1; pass bootstrap=0")
            if counts is None:
                counts = prompt_draws(n_groups, replicates, self.seed)
            if split is None and grouped is None:
                engine: Any = SampleSpaceReplicates(
                    grams[0], grams[1], dim=d_i, cross_fit=estimator == "cross-fit", n_folds=self.n_folds,
                    ridge=ridge, seed=self.seed, debias=estimator == "debiased")
            else:
                f_i, f_g = feats if feats is not None else feature_matrices(
                    data, maps, groups=groups, chunk_size=self.chunk_size, dtype=dtype, backend=backend)
                engine = (GroupedReplicates(f_i, f_g) if estimator == "debiased"
                          else FeatureSpaceReplicates(f_i, f_g[index_array(groups, f_g)]))
            side = grams[0].shape[0] if grouped is None and split is None else d_i
            with blas_threads_for(side):
                intervals, reps, method = prompt_intervals(groups, counts, engine, table, self.confidence,
                                                           interval_method(self.interval, estimator))
            notes.extend(interval_notes(intervals, table))
            boot = {"replicates": int(replicates), "level": float(self.confidence), "seed": self.seed,
                    "resample": "prompts", "interval": method,
                    "validity": interval_validity(estimator, method, self.kernel, rank, distinct_groups)}
            timings["bootstrap_s"] = time.perf_counter() - t3
        timings["total_s"] = time.perf_counter() - t0
        config = {"kernel": self.kernel, **maps.describe(),
                  "sigma_prompt_rule": str(self.sigma_prompt) if self.kernel == "gaussian" else None,
                  "sigma_output_rule": str(self.sigma_output) if self.kernel == "gaussian" else None,
                  "shared_frequencies": bool(self.shared_frequencies and self.kernel == "gaussian"),
                  "n_clusters": self.n_clusters, "top_k": self.top_k, "chunk_size": self.chunk_size,
                  "eigen_floor": EIGEN_FLOOR, "input": data.where, "precision": self.precision,
                  "route": route, "device": backend.label,
                  "n_folds": self.n_folds if estimator == "cross-fit" else None,
                  "ridge": (None if math.isinf(ridge) else ridge) if estimator == "cross-fit" else None,
                  "prompt_part": PROMPT_PART[estimator]}

        def head(v: np.ndarray) -> list[float]:
            v = np.asarray(v)[:MAX_STORED_EIGENVALUES]
            return [float(x) for x in v if x > EIGEN_FLOOR]

        result = ScendiResult(
            name=name or data.name, scendi=table["scendi"], scendi_prompt=table["scendi_prompt"],
            scendi_order2=table["scendi_order2"], scendi_prompt_order2=table["scendi_prompt_order2"],
            vendi=table["vendi"], rke=table["rke"], model_share=table["model_share"],
            prompt_share=table["prompt_share"], entropies=table["entropies"], clusters=clusters,
            clusters_unconditioned=clusters_c,
            eigenvalues={"model": head(li_vals), "prompt": head(lt_vals), "output": head(c_vals)},
            n=n, prompt_rank=int(rank), seed=self.seed, config=config, warnings=notes,
            timings={k_: round(v, 4) for k_, v in timings.items()},
            intervals=intervals, bootstrap=boot, gamma_estimator=described)
        return result, reps

    def _grouped_route(self, n: int, dim: int, d_i: int, g: int) -> bool:
        """Whether the in-sample split runs on grouped prompts in memory (cheaper than streaming, and what
        the debiased estimator needs when prompts repeat; with every prompt distinct it scales instead)."""
        if current_client() is not None or n < dim or self.gamma_estimator == "cross-fit":
            return False
        if n * d_i > GROUPED_MAX_VALUES:
            return False
        cheap = 2 * g < n and g ** 3 + g * g * (dim - d_i) < n * dim ** 2
        return cheap or (self.gamma_estimator != "in-sample" and g < n and g <= SAMPLE_SPACE_MAX_ROWS)

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
        return int(self.bootstrap)

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

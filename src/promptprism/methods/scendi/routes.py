"""Scendi's routes: where the joint covariance is split and its spectra taken, one object per route.

Every route has one interface (:class:`Route`): ``name`` (``config['route']``) and ``rank`` (rank C_TT) once
built; ``settle(estimator, notes)`` adapts it to the resolved Gamma* estimator (and may hand over to another
route); ``spectrum(estimator, n_top)`` the eigenvalues, score table and Gamma* description;
``mode_stats(spectra, top_k)`` the top samples along the cluster directions; ``replicates(estimator,
ridge)`` the bootstrap's replicate engine. :func:`choose_route` picks one by size, once per fit.

* :class:`StreamingRoute` ("feature space"): one streaming pass accumulates the (d_I + d_T)^2 joint
  covariance (any n, any runner), then the Schur split (:func:`.core.schur_split`);
* :class:`GroupedRoute` ("feature space, grouped prompts"): Phi_I in memory, the prompt side in G x G
  (:mod:`.grouped`), when prompts repeat;
* :class:`SampleSpaceRoute` ("sample space"): n x n Gram matrices (:mod:`.dual`), when n is below the
  feature dimension; the cross-fitted estimator's only route (:mod:`.crossfit`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from ...array_ops import index_array, trace, values_and_top_vectors_of
from ...backend import Backend, to_numpy
from ...data.paired import PairedSet
from ...kernels.gram import feature_gram
from ...kernels.scendi_features import ScendiFeatureMaps
from ...scale.runner import current_client
from .clusters import top_samples
from .core import PINV_RCOND, scendi_score_table, schur_split
from .crossfit import check_folds, cross_fit
from .debias import debias_unique, describe_in_sample
from .dual import grouped_prompt_basis, sample_space_spectra
from .grouped import grouped_spectra, grouped_split
from .replicates import (
    FeatureSpaceReplicates,
    GroupedReplicates,
    SampleSpaceReplicates,
    feature_matrices,
)
from .streaming import joint_covariance_on, stream_cluster_scores

#: the sample-space route holds phi_I, phi_T and n x n matrices in memory: at most this many rows
SAMPLE_SPACE_MAX_ROWS = 8000
#: the grouped feature-space route holds Phi_I (n x d_I) in memory: at most this many values
GROUPED_MAX_VALUES = 100_000_000


@dataclass(frozen=True)
class FitInputs:
    """What every route needs of one fit: the set, its feature maps and prompt labels, the options."""

    data: PairedSet
    maps: ScendiFeatureMaps
    groups: np.ndarray  #: each row's prompt label, 0..G-1
    dtype: type
    backend: Backend
    chunk_size: int
    partition_rows: int
    progress: bool | None
    gamma_estimator: str  #: as requested ('auto', 'in-sample', 'debiased', 'cross-fit')
    n_folds: int
    ridge: Any
    seed: int

    @property
    def n(self) -> int:
        """Rows."""
        return len(self.data)

    @property
    def d_i(self) -> int:
        """Output feature dimension."""
        return self.maps.dim_output

    @property
    def dim(self) -> int:
        """Joint feature dimension d_I + d_T."""
        return self.maps.dim_output + self.maps.dim_prompt

    @property
    def distinct(self) -> int:
        """Distinct prompts G."""
        return len(np.unique(self.groups))

    @property
    def in_memory(self) -> bool:
        """Whether the set fits the sample-space route (one process, n <= SAMPLE_SPACE_MAX_ROWS)."""
        return current_client() is None and self.n <= SAMPLE_SPACE_MAX_ROWS

    def features(self) -> tuple:
        """(Phi_I, Phi_G) in memory (:func:`.replicates.feature_matrices`)."""
        return feature_matrices(self.data, self.maps, groups=self.groups, chunk_size=self.chunk_size,
                                dtype=self.dtype, backend=self.backend)


@dataclass(frozen=True)
class RouteSpectra:
    """One estimate's spectra (descending eigenvalues of Lambda_I, the prompt part and C_II), its score
    table, the cross-fitted ridge (0 in-sample), the Gamma* description and what the cluster pass needs."""

    model: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    table: dict
    described: str
    directions: tuple  #: (model scores, output scores) per row, or (Gamma*, Lambda_I's, C_II's vectors)
    ridge: float = 0.0


class Route(Protocol):
    """The interface every route implements (module doc)."""

    name: str
    rank: int

    def settle(self, estimator: str, notes: list[str]) -> tuple[Route, str]:
        """(the route that runs ``estimator``, the estimator it runs); a change is explained in ``notes``."""

    def spectrum(self, estimator: str, n_top: int) -> RouteSpectra:
        """The estimate's spectra, score table and description, with the top ``n_top`` directions."""

    def mode_stats(self, spectra: RouteSpectra, top_k: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, scores) of the ``top_k`` samples along each direction (as :func:`.clusters.top_samples`)."""

    def replicates(self, estimator: str, ridge: float) -> tuple[Any, int]:
        """(the bootstrap's replicate engine, the side of the matrices one replicate diagonalises)."""


def _in_memory_spectra(s: Any, described: str, ridge: float = 0.0) -> RouteSpectra:
    """The :class:`RouteSpectra` of a sample-space or grouped estimate (:class:`.dual.DualSpectra` shape)."""
    table = scendi_score_table(s.model, s.prompt, s.output, model_share=s.model_share,
                               prompt_share=s.prompt_share)
    return RouteSpectra(model=s.model, prompt=s.prompt, output=s.output, table=table, described=described,
                        directions=(s.model_scores, s.output_scores), ridge=ridge)


@dataclass(frozen=True)
class SampleSpaceRoute:
    """phi_I, phi_T in memory, n x n Gram matrices (outputs n x n, distinct prompts G x G)."""

    inputs: FitInputs
    features: tuple
    output_gram: Any
    group_gram: Any
    basis: Any = None  #: the in-sample projection's basis (:func:`.dual.grouped_prompt_basis`)
    rank: int = 0
    name: str = "sample space"

    @classmethod
    def build(cls, inputs: FitInputs, features: tuple | None = None, *, in_sample: bool = True
              ) -> SampleSpaceRoute:
        """Gram matrices of ``features`` (computed when None) and, ``in_sample``, the prompt basis and rank
        (a cross-fit needs neither: the route it settles from keeps its rank)."""
        feats = features if features is not None else inputs.features()
        grams = feature_gram(feats[0]), feature_gram(feats[1])
        if not in_sample:
            return cls(inputs, feats, *grams)
        basis, rank = grouped_prompt_basis(grams[1], inputs.groups, cls.weights_of(inputs), rcond=PINV_RCOND)
        return cls(inputs, feats, *grams, basis=basis, rank=rank)

    @staticmethod
    def weights_of(inputs: FitInputs) -> np.ndarray:
        """Equal row weights 1/n in the fit's precision."""
        return np.full(inputs.n, 1.0 / inputs.n, dtype=inputs.dtype)

    def settle(self, estimator: str, notes: list[str]) -> tuple[Route, str]:
        """Every estimator runs here as it is."""
        return self, estimator

    def spectrum(self, estimator: str, n_top: int) -> RouteSpectra:
        """In-sample, debiased: :func:`.dual.sample_space_spectra`; cross-fit: :func:`.crossfit.cross_fit`."""
        i, w = self.inputs, self.weights_of(self.inputs)
        if estimator == "cross-fit":
            folds = check_folds(i.n_folds, i.distinct) if i.gamma_estimator == "cross-fit" else i.n_folds
            fitted = cross_fit(self.output_gram, self.group_gram, i.groups, w, n_folds=folds, ridge=i.ridge,
                               seed=i.seed, dim=i.d_i, n_top=n_top, rcond=PINV_RCOND)
            return _in_memory_spectra(fitted.spectra, fitted.described, fitted.ridge)
        s = sample_space_spectra(self.output_gram, w, dim=i.d_i, basis=self.basis, n_top=n_top,
                                 debias_groups=i.groups if estimator == "debiased" else None)
        return _in_memory_spectra(s, describe_in_sample(estimator, None, None, i.n, self.rank, i.distinct))

    def mode_stats(self, spectra: RouteSpectra, top_k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top samples from the sample-space eigenvectors."""
        return top_samples(*spectra.directions, top_k)

    def replicates(self, estimator: str, ridge: float) -> tuple[Any, int]:
        """:class:`.replicates.SampleSpaceReplicates` over the Gram matrices; n x n matrices per replicate."""
        i = self.inputs
        engine = SampleSpaceReplicates(self.output_gram, self.group_gram, dim=i.d_i,
                                       cross_fit=estimator == "cross-fit", n_folds=i.n_folds, ridge=ridge,
                                       seed=i.seed, debias=estimator == "debiased")
        return engine, self.output_gram.shape[0]


def _feature_replicates(inputs: FitInputs, features: tuple | None, estimator: str) -> tuple[Any, int]:
    """The feature-space replicate engine (grouped for the debiased estimator); d_I x d_I per replicate."""
    f_i, f_g = features if features is not None else inputs.features()
    engine = (GroupedReplicates(f_i, f_g) if estimator == "debiased"
              else FeatureSpaceReplicates(f_i, f_g[index_array(inputs.groups, f_g)]))
    return engine, inputs.d_i


@dataclass(frozen=True)
class GroupedRoute:
    """Feature space with the prompts grouped: Phi_I in memory, the prompt side G x G (:mod:`.grouped`)."""

    inputs: FitInputs
    features: tuple
    split: Any  #: :class:`.grouped.GroupedSplit`
    name: str = "feature space, grouped prompts"

    @classmethod
    def build(cls, inputs: FitInputs) -> GroupedRoute:
        """Features in memory, the in-sample grouped split."""
        feats = inputs.features()
        return cls(inputs, feats, grouped_split(feats[0], feats[1], inputs.groups, rcond=PINV_RCOND))

    @property
    def rank(self) -> int:
        """rank C_TT."""
        return self.split.prompt_rank

    def settle(self, estimator: str, notes: list[str]) -> tuple[Route, str]:
        """Debiased: the split again with the degrees-of-freedom correction; cross-fit: sample space."""
        if estimator == "cross-fit":
            return replace(SampleSpaceRoute.build(self.inputs, self.features, in_sample=False),
                           rank=self.rank), estimator
        if estimator == "debiased":
            f_i, f_g = self.features
            split = grouped_split(f_i, f_g, self.inputs.groups, rcond=PINV_RCOND, debias=True)
            return replace(self, split=split), estimator
        return self, estimator

    def spectrum(self, estimator: str, n_top: int) -> RouteSpectra:
        """:func:`.grouped.grouped_spectra` of the split."""
        i = self.inputs
        s = grouped_spectra(self.split, self.features[0], i.groups, n_top=n_top)
        return _in_memory_spectra(s, describe_in_sample(estimator, self.split, None, i.n, self.rank,
                                                        i.distinct))

    def mode_stats(self, spectra: RouteSpectra, top_k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top samples from the in-memory scores."""
        return top_samples(*spectra.directions, top_k)

    def replicates(self, estimator: str, ridge: float) -> tuple[Any, int]:
        """Feature-space replicates of the features in memory."""
        return _feature_replicates(self.inputs, self.features, estimator)


@dataclass(frozen=True)
class StreamingRoute:
    """Feature space, streamed: the joint covariance from one pass, its Schur split, a second pass for the
    cluster scores; any n, any runner (a dask cluster included)."""

    inputs: FitInputs
    split: Any  #: :class:`.core.SchurSplit`
    name: str = "feature space"

    @classmethod
    def build(cls, inputs: FitInputs) -> StreamingRoute:
        """One streaming pass (:func:`.streaming.joint_covariance_on`), then the Schur split."""
        c = joint_covariance_on(inputs.backend, inputs.data, inputs.maps, chunk_size=inputs.chunk_size,
                                partition_rows=inputs.partition_rows, progress=inputs.progress)
        return cls(inputs, schur_split(c, inputs.d_i, rcond=PINV_RCOND))

    @property
    def rank(self) -> int:
        """rank C_TT."""
        return self.split.prompt_rank

    def settle(self, estimator: str, notes: list[str]) -> tuple[Route, str]:
        """Debiased: the n / (n - k) correction when every prompt is distinct, else in-sample (with a note);
        cross-fit: sample space."""
        i = self.inputs
        if estimator == "cross-fit":
            return replace(SampleSpaceRoute.build(i, in_sample=False), rank=self.rank), estimator
        if estimator != "debiased":
            return self, estimator
        if i.distinct == i.n:  # every prompt distinct: Lambda_I^dfc = Lambda_I n / (n - k)
            return replace(self, split=debias_unique(self.split, self.rank, i.n)), estimator
        notes.append("the debiased estimator needs the prompts grouped in one process here; Gamma* "
                     "was fitted in-sample (biased low by the fitted degrees of freedom)")
        return self, "in-sample"

    def spectrum(self, estimator: str, n_top: int) -> RouteSpectra:
        """Eigenvalues and top eigenvectors of Lambda_I and C_II (d_I x d_I)."""
        i, split = self.inputs, self.split
        solved = values_and_top_vectors_of([split.lambda_i, split.c_ii], n_top)
        (li_vals, li_vecs), (c_vals, c_vecs) = ((to_numpy(v), to_numpy(u)) for v, u in solved)
        table = scendi_score_table(li_vals, split.lambda_t_eigenvalues, c_vals,
                                   model_share=trace(split.lambda_i), prompt_share=trace(split.lambda_t))
        described = describe_in_sample(estimator, None, split, i.n, self.rank, i.distinct)
        return RouteSpectra(model=li_vals, prompt=split.lambda_t_eigenvalues, output=c_vals, table=table,
                            described=described, directions=(to_numpy(split.gamma), li_vecs, c_vecs))

    def mode_stats(self, spectra: RouteSpectra, top_k: int) -> tuple[np.ndarray, np.ndarray]:
        """A second streaming pass projecting every row on the cluster directions."""
        i = self.inputs
        return stream_cluster_scores(i.data, i.maps, *spectra.directions, chunk_size=i.chunk_size,
                                     partition_rows=i.partition_rows, top_k=top_k, progress=i.progress)

    def replicates(self, estimator: str, ridge: float) -> tuple[Any, int]:
        """Feature-space replicates (the features computed now, in memory)."""
        return _feature_replicates(self.inputs, None, estimator)


def grouped_route_fits(inputs: FitInputs) -> bool:
    """Whether the in-sample split runs on grouped prompts in memory (cheaper than streaming, and what
    the debiased estimator needs when prompts repeat; with every prompt distinct it scales instead).
    The grouped route costs O(n d_I^2 + G^2 d_T + G^3), the streaming one O(n d^2)."""
    n, dim, d_i, g, requested = inputs.n, inputs.dim, inputs.d_i, inputs.distinct, inputs.gamma_estimator
    if n < dim or requested == "cross-fit":
        return False
    if n * d_i > GROUPED_MAX_VALUES:
        return False
    cheap = 2 * g < n and g ** 3 + g * g * (dim - d_i) < n * dim ** 2
    return cheap or (requested != "in-sample" and g < n and g <= SAMPLE_SPACE_MAX_ROWS)


def choose_route(inputs: FitInputs) -> Route:
    """The route for this set, built (its covariance pass run): grouped when prompts repeat and it is
    cheaper, sample space in memory when n is below the feature dimension (or for 'cross-fit'), else
    streaming."""
    if grouped_route_fits(inputs):
        return GroupedRoute.build(inputs)
    if inputs.in_memory and (inputs.n < inputs.dim or inputs.gamma_estimator == "cross-fit"):
        return SampleSpaceRoute.build(inputs)
    return StreamingRoute.build(inputs)


__all__ = ["GROUPED_MAX_VALUES", "SAMPLE_SPACE_MAX_ROWS", "FitInputs", "GroupedRoute", "Route",
           "RouteSpectra", "SampleSpaceRoute", "StreamingRoute", "choose_route", "grouped_route_fits"]

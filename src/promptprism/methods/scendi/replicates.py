"""Where Scendi's sample-space and bootstrap computations get their matrices: features held in memory.

:func:`feature_matrices` computes phi_I and phi_T for every row (in the requested precision); from them the
Gram matrices (sample-space route) or the joint covariance of a weighted subset (feature-space route).
Each replicate engine returns the score table of one weighted subset; which engine is cheaper depends on
whether n or the feature dimension is smaller (same non-zero eigenvalues either way).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...array_ops import as_like, grid, index_array, symmetric_eigh, trace
from ...backend import NUMPY, Backend, array_namespace, to_numpy
from ...data.paired import PairedSet
from ...errors import OptionError
from ...kernels.gram import feature_gram as gram  # noqa: F401  (K = Phi Phi^T: the estimator's Gram matrices)
from ...kernels.scendi_features import ScendiFeatureMaps
from .bootstrap import INTERVAL_METRICS
from .core import PINV_RCOND, scendi_score_table, schur_split
from .dual import assign_folds, cross_fit_hats, grouped_prompt_basis, sample_space_spectra


def feature_matrices(data: PairedSet, maps: ScendiFeatureMaps, *, groups: np.ndarray, chunk_size: int,
                     dtype: type = np.float64, backend: Backend = NUMPY) -> tuple:
    """(Phi_I, Phi_G): every row's output features (n x d_I) and the features of each distinct prompt
    (G x d_T, row g = the prompt of label g in ``groups``; a label absent from ``data`` gets zeros), in
    ``dtype``, as arrays of ``backend``. Rows with one prompt share one prompt feature, so
    Phi_T = Phi_G[groups]."""
    n = len(data)
    xp = backend.xp
    on = {} if backend.name == "numpy" else {"device": backend.torch_device}
    dt = backend.asarray(np.zeros(0, dtype=dtype)).dtype
    fi = backend.empty((n, maps.dim_output), np.dtype(dtype))  # (pages mapped up front)
    for a in range(0, n, chunk_size):
        b = min(n, a + chunk_size)
        fi[a:b] = xp.astype(maps.outputs(np.asarray(data.output_embeddings[a:b]), backend), dt)
    n_groups = int(np.max(groups)) + 1
    labels, first = np.unique(groups, return_index=True)
    fg = xp.zeros((n_groups, maps.dim_prompt), dtype=dt, **on)
    fg[index_array(labels, fg)] = xp.astype(maps.prompts(np.asarray(data.prompt_embeddings[first]), backend),
                                            dt)
    return fi, fg


@dataclass(frozen=True)
class SampleSpaceReplicates:
    """Replicates from the Gram matrices: the cheaper route when n is below the feature dimension.

    ``output_gram`` is n x n; ``group_gram`` G x G over the distinct prompts (rows' labels index it).
    """

    output_gram: np.ndarray
    group_gram: np.ndarray
    dim: int
    cross_fit: bool = False
    n_folds: int = 5
    ridge: float = 0.0
    seed: int = 0
    rcond: float = PINV_RCOND
    debias: bool = False

    def __call__(self, rows: np.ndarray, weights: np.ndarray, groups: np.ndarray, replicate: int) -> dict:
        """Scores of the subset ``rows`` weighted by ``weights`` (sum 1); ``groups`` are their prompts."""
        k_i = self.output_gram[grid(rows, rows, self.output_gram)]
        w = np.asarray(weights, dtype=np.float64)
        if self.cross_fit:
            folds = assign_folds(groups, self.n_folds, self.seed + 1 + replicate)
            k_t = self.group_gram[grid(groups, groups, self.group_gram)]
            hat = cross_fit_hats(k_t, w, folds, [self.ridge], rcond=self.rcond)[0]
            s = sample_space_spectra(k_i, w, dim=self.dim, hat=hat, in_sample=False)
        else:
            basis = grouped_prompt_basis(self.group_gram, groups, w, rcond=self.rcond)[0]
            try:
                s = sample_space_spectra(k_i, w, dim=self.dim, basis=basis,
                                         debias_groups=groups if self.debias else None)
            except OptionError:  # the drawn prompts leave no residual degree of freedom: no value
                return dict.fromkeys(INTERVAL_METRICS, float("nan"))
        return scendi_score_table(s.model, s.prompt, s.output, model_share=s.model_share,
                                  prompt_share=s.prompt_share)


@dataclass(frozen=True)
class FeatureSpaceReplicates:
    """In-sample replicates from the features (weighted joint covariance, d x d): for n above d."""

    output_features: np.ndarray
    prompt_features: np.ndarray
    rcond: float = PINV_RCOND

    def __call__(self, rows: np.ndarray, weights: np.ndarray, groups: np.ndarray, replicate: int) -> dict:
        """Scores of the subset ``rows`` weighted by ``weights`` (sum 1)."""
        idx = index_array(rows, self.output_features)
        xp = array_namespace(self.output_features)
        f = xp.concat([self.output_features[idx], self.prompt_features[idx]], axis=1)
        c = xp.astype((f * as_like(weights, f)[:, None]).T @ f, xp.float64)
        d_i = self.output_features.shape[1]
        split = schur_split(c, d_i, rcond=self.rcond)
        model = to_numpy(symmetric_eigh(split.lambda_i, values_only=True))[::-1]
        output = to_numpy(symmetric_eigh(split.c_ii, values_only=True))[::-1]
        return scendi_score_table(model, split.lambda_t_eigenvalues, output,
                                  model_share=trace(split.lambda_i), prompt_share=trace(split.lambda_t))



@dataclass(frozen=True)
class GroupedReplicates:
    """Replicates from the grouped feature-space split (:func:`.grouped.grouped_split`; d_I x d_I spectra):
    the debiased estimator's engine when n is above the feature dimension."""

    output_features: np.ndarray
    group_features: np.ndarray  #: G x d_T, row g = prompt g's features
    debias: bool = True
    rcond: float = PINV_RCOND

    def __call__(self, rows: np.ndarray, weights: np.ndarray, groups: np.ndarray, replicate: int) -> dict:
        """Scores of the subset ``rows`` weighted by ``weights`` (sum 1); ``groups`` are their prompts."""
        from .grouped import grouped_split, prompt_spectrum

        f_i = self.output_features[index_array(rows, self.output_features)]
        try:
            split = grouped_split(f_i, self.group_features, groups, rcond=self.rcond, weights=weights,
                                  debias=self.debias)
        except OptionError:  # the drawn prompts leave no residual degree of freedom: no value
            return dict.fromkeys(INTERVAL_METRICS, float("nan"))
        d_i = f_i.shape[1]
        model = to_numpy(symmetric_eigh(split.lambda_i, values_only=True))[::-1]
        output = to_numpy(symmetric_eigh(split.c_ii, values_only=True))[::-1]
        if split.lambda_t is None:
            prompt, prompt_share = prompt_spectrum(split.b, d_i), trace(split.b.T @ split.b)
        else:
            prompt = to_numpy(symmetric_eigh(split.lambda_t, values_only=True))[::-1]
            prompt_share = trace(split.lambda_t)
        return scendi_score_table(model, prompt, output, model_share=trace(split.lambda_i),
                                  prompt_share=prompt_share)

"""PromptNullifier: fit Gamma* = C_IT C_TT^+ once, then remove the prompt from any output's features.

Also the streaming tasks shared with :class:`~promptprism.methods.scendi.Scendi` (the joint covariance pass
and the cluster-score pass), run through :func:`promptprism.scale.current_runner`.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._progress import progress_enabled
from ..._validation import check_positive_number, check_seed, chunks
from ...backend import Backend
from ...data.paired import PairedSet, as_paired_set
from ...errors import InputError, OptionError
from ...kernels.bandwidth import Bandwidth, subsample_rows
from ...kernels.scendi_features import ScendiFeatureMaps, ScendiKernelOptions
from ...scale.runner import current_client, current_runner, partition_size
from ...scale.runner import partition_rows as partition_rows_of
from ...stats.accumulators import CovarianceAccumulator, TopKAccumulator
from .core import PromptRankWarning, accumulate_joint, nullify, schur_split


def check_paired(data: Any, kernel: str, *, min_rows: int = 2) -> PairedSet:
    """A PairedSet from ``data`` (or a tuple of arrays), checked: enough rows, no zero row for cosine."""
    data = as_paired_set(data, "set")
    if len(data) < min_rows:
        raise InputError(f"{data.where}: has {len(data)} (prompt, output) pair; Scendi needs at least "
                         f"{min_rows} (a covariance of one sample has no spread to measure)")
    if kernel == "cosine":
        data.check_nonzero("the cosine kernel is undefined for a zero vector")
    return data


def stream_joint_covariance(data: PairedSet, maps: ScendiFeatureMaps, *, chunk_size: int,
                            partition_rows: int, progress: bool | None) -> CovarianceAccumulator:
    """The joint covariance's accumulator, from one pass over ``data`` on the current runner."""
    client = current_client()
    size = chunk_size if client is None else partition_size(partition_rows, chunk_size)
    return current_runner().map_reduce(joint_covariance_partition, [
        (maps, *partition_rows_of(data, a, b), chunk_size) for a, b in chunks(len(data), size)],
        description="Scendi: covariance", progress=progress_enabled(progress))


def joint_covariance_on(backend: Backend, data: PairedSet, maps: ScendiFeatureMaps, *, chunk_size: int,
                        partition_rows: int, progress: bool | None) -> Any:
    """The joint covariance C (Section 4) as an array of ``backend``: on numpy (or with a cluster) the
    streaming pass of :func:`stream_joint_covariance`; on torch in this process, chunk by chunk on the
    device (C += f^T f, in float64)."""
    if backend.name == "numpy" or current_client() is not None:
        return backend.asarray(stream_joint_covariance(data, maps, chunk_size=chunk_size,
                                                       partition_rows=partition_rows,
                                                       progress=progress).compute())
    xp = backend.xp
    dim = maps.dim_output + maps.dim_prompt
    c = xp.zeros((dim, dim), dtype=xp.float64, device=backend.torch_device)
    for a, b in chunks(len(data), chunk_size):
        f = xp.concat([maps.outputs(np.asarray(data.output_embeddings[a:b]), backend),
                       maps.prompts(np.asarray(data.prompt_embeddings[a:b]), backend)], axis=1)
        c += f.T @ f
    return c / len(data)


def prompt_rank_warnings(where: str, rank: int, n: int, *, estimator: str) -> list[str]:
    """True, actionable sentences about C_TT's rank: rank <= 1 (the prompts carry no information), or a rank
    near n with the in-sample Gamma* (it interpolates the outputs and Lambda_I collapses towards 0)."""
    if rank <= 1:
        return [f"{where}: the prompt covariance C_TT has rank {rank} (all prompts are identical): it is "
                "inverted by pseudo-inverse, the prompts explain only the mean output, and Scendi then "
                "measures the prompt-unaware diversity of the outputs, as Vendi does (not the same number: "
                "Scendi uses their spread around the mean, Vendi the uncentred covariance)"]
    if 2 * rank >= n and estimator == "in-sample":
        return [f"{where}: the prompt features have rank {rank} for {n} samples; Gamma* is fitted in-sample "
                "and, as the rank nears n, it predicts every output from its own prompt (at rank n, "
                "Lambda_I = 0), so Scendi is biased low; estimate Gamma* out of sample "
                "(gamma_estimator='cross-fit', the default 'auto' does it here) or give several outputs per "
                "prompt"]
    return []


def resolve_feature_maps(data: PairedSet, *, kernel: str, sigma_output: Any, sigma_prompt: Any,
                         n_features: int, shared_frequencies: bool, seed: int,
                         notes: list[str]) -> ScendiFeatureMaps:
    """phi_I and phi_T for ``data``: bandwidth rules evaluated on seeded subsamples (1,000 rows; 500 + 500
    pooled when the frequencies are shared); a remark worth reporting is appended to ``notes``."""
    sigma_out, sigma_p = _resolve_sigmas(data, kernel=kernel, sigma_output=sigma_output,
                                         sigma_prompt=sigma_prompt, shared=shared_frequencies, seed=seed,
                                         notes=notes)
    return ScendiFeatureMaps(kernel, data.dim_output, data.dim_prompt, sigma_output=sigma_out,
                             sigma_prompt=sigma_p, n_features=n_features if kernel == "gaussian" else None,
                             shared_frequencies=shared_frequencies and kernel == "gaussian", seed=seed)


def _resolve_sigmas(data: PairedSet, *, kernel: str, sigma_output: Any, sigma_prompt: Any, shared: bool,
                    seed: int, notes: list[str]) -> tuple[float | None, float | None]:
    if kernel != "gaussian":
        return None, None
    if shared:
        if data.dim_prompt != data.dim_output:
            raise InputError(
                f"{data.where}: shared RFF frequencies need prompts and outputs in one embedding space, "
                f"but prompt_embeddings has {data.dim_prompt} columns and output_embeddings "
                f"{data.dim_output}; use separate frequencies")
        pool = np.concatenate([subsample_rows(data.output_embeddings, 500, seed),
                               subsample_rows(data.prompt_embeddings, 500, seed)])
        # one bandwidth for both: the sigma_output option's (its errors name it)
        shared_bw = Bandwidth.parse(sigma_output, "sigma_output")
        sigma = shared_bw.resolve(pool, name="sigma_output", seed=seed).value
        return sigma, sigma
    # each rule on a seeded subsample of 1,000 rows (Bandwidth.resolve draws it)
    sigma_out = Bandwidth.parse(sigma_output, "sigma_output").resolve(
        data.output_embeddings, name="sigma_output", seed=seed).value
    prompt = Bandwidth.parse(sigma_prompt, "sigma_prompt")
    try:
        sigma_prompt = prompt.resolve(data.prompt_embeddings, name="sigma_prompt", seed=seed).value
    except OptionError:
        # every prompt embedding is the same point: any bandwidth gives the same (constant) features
        notes.append("the prompt embeddings are all identical, so the median rule has no distance to "
                     "measure; sigma_prompt was set to 1 (with identical prompts it does not matter)")
        sigma_prompt = 1.0
    return sigma_out, sigma_prompt


@dataclass
class PromptNullifier(ScendiKernelOptions):
    """Fit Gamma* = C_IT C_TT^+ on a paired set; ``transform`` removes the prompt from new pairs' features.

    ``transform(prompt_emb, output_emb)`` returns phi_I(x) - Gamma* phi_T(t): the output's features with what
    its prompt (or any text describing a concept to remove) predicts of them taken out (eq. 7). On the
    training pairs their covariance is Lambda_I.

    Fitted attributes (scikit-learn style): ``feature_maps_``, ``gamma_``, ``split_`` (the
    :class:`SchurSplit`), ``n_samples_``, ``warnings_`` (messages of warnings raised by ``fit``).
    """

    seed: int = 0
    chunk_size: int = 2048
    partition_rows: int = 262_144
    rcond: float | None = None
    progress: bool | None = False

    def __post_init__(self) -> None:
        self._validate()

    def _validate(self) -> None:
        self._validate_kernel()
        check_seed(self.seed)
        check_positive_number(self.chunk_size, "chunk size", integer=True)
        check_positive_number(self.partition_rows, "partition_rows", integer=True)
        if self.rcond is not None:
            check_positive_number(self.rcond, "rcond")

    def fit(self, data: PairedSet | tuple) -> PromptNullifier:
        """Learn Gamma* from ``data`` (one streaming pass for the joint covariance, then its Schur split);
        returns self (the estimator contract: learning state -> ``fit`` returns self).

        Inside ``with promptprism.execution(client):`` the pass runs as one task per ``partition_rows`` rows
        on the dask cluster (row-streamed ``.npy`` inputs are read by the workers), merged by a tree
        reduction.
        """
        self._validate()
        data = check_paired(data, self.kernel)
        notes: list[str] = []
        t0 = time.perf_counter()
        maps = resolve_feature_maps(data, kernel=self.kernel, sigma_output=self.sigma_output,
                                    sigma_prompt=self.sigma_prompt, n_features=self.n_features,
                                    shared_frequencies=self.shared_frequencies, seed=self.seed, notes=notes)
        acc = stream_joint_covariance(data, maps, chunk_size=self.chunk_size,
                                      partition_rows=self.partition_rows, progress=self.progress)
        t1 = time.perf_counter()
        c = acc.compute()
        del acc
        split = schur_split(c, maps.dim_output, rcond=self.rcond)
        del c
        for msg in prompt_rank_warnings(data.where, split.prompt_rank, len(data), estimator="in-sample"):
            notes.append(msg)
            warnings.warn(msg, PromptRankWarning, stacklevel=2)
        self.feature_maps_ = maps
        self.split_ = split
        self.gamma_ = split.gamma
        self.n_samples_ = len(data)
        self.warnings_ = notes
        self.timings_ = {"covariance_s": t1 - t0, "split_s": time.perf_counter() - t1}
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "gamma_"):
            raise OptionError("this PromptNullifier is not fitted yet; call fit(paired_set) first")

    def output_features(self, output_embeddings: np.ndarray) -> np.ndarray:
        """phi_I(x) for output embeddings."""
        self._check_fitted()
        return self.feature_maps_.outputs(output_embeddings)

    def prompt_features(self, prompt_embeddings: np.ndarray) -> np.ndarray:
        """phi_T(t) for prompt embeddings."""
        self._check_fitted()
        return self.feature_maps_.prompts(prompt_embeddings)

    def predict(self, prompt_embeddings: np.ndarray) -> np.ndarray:
        """Gamma* phi_T(t): the output features the prompt alone predicts."""
        return self.prompt_features(prompt_embeddings) @ self.gamma_.T

    def transform(self, prompt_embeddings: np.ndarray, output_embeddings: np.ndarray) -> np.ndarray:
        """phi_I(x) - Gamma* phi_T(t) for paired rows (prompt i goes with output i)."""
        self._check_fitted()
        t = np.asarray(prompt_embeddings, dtype=np.float64)
        x = np.asarray(output_embeddings, dtype=np.float64)
        if t.ndim == 1:
            t = t[None, :]
        if x.ndim == 1:
            x = x[None, :]
        if t.shape[0] != x.shape[0]:
            if t.shape[0] != 1:
                raise InputError(f"transform: {t.shape[0]} prompt rows but {x.shape[0]} output rows; give "
                                 "one prompt per output, or a single prompt to remove from every output")
            t = np.repeat(t, x.shape[0], axis=0)
        for name, arr in (("prompt embeddings", t), ("output embeddings", x)):
            if not np.isfinite(arr).all():
                raise InputError(f"transform: the {name} contain NaN or inf")
        return nullify(self.output_features(x), self.prompt_features(t), self.gamma_)

    def fit_transform(self, data: PairedSet | tuple) -> np.ndarray:
        """``fit(data)``, then the nullified features of its own pairs (their covariance is Lambda_I)."""
        self.fit(data)
        data = check_paired(data, self.kernel)
        return self.transform(data.prompt_embeddings, data.output_embeddings)


def joint_covariance_partition(maps: ScendiFeatureMaps, prompts: Any, outputs: Any, start: int, stop: int,
                               chunk_size: int) -> CovarianceAccumulator:
    """Task: sum_i [phi_I(x_i); phi_T(t_i)][...]^T over rows [start, stop), chunk by chunk."""
    pieces = ((maps.outputs(outputs[start + a : start + b]), maps.prompts(prompts[start + a : start + b]))
              for a, b in chunks(stop - start, chunk_size))
    return accumulate_joint(pieces, maps.dim_output, maps.dim_prompt)


def cluster_scores_partition(maps: ScendiFeatureMaps, gamma: np.ndarray, li_vecs: np.ndarray,
                             c_vecs: np.ndarray, prompts: Any, outputs: Any, start: int, stop: int,
                             first_index: int, chunk_size: int, top_k: int) -> TopKAccumulator:
    """Task: the top samples along each eigenvector of Lambda_I (nullified features) and of C_II (plain).

    Columns: positive parts then negative parts of [nullified scores, plain scores]; ``first_index`` is the
    global index of row ``start``.
    """
    k = li_vecs.shape[1]
    top = TopKAccumulator(top_k, 4 * k)
    for a, b in chunks(stop - start, chunk_size):
        fi = maps.outputs(outputs[start + a : start + b])
        ft = maps.prompts(prompts[start + a : start + b])
        s = np.concatenate([nullify(fi, ft, gamma) @ li_vecs, fi @ c_vecs], axis=1)
        top.update(np.arange(first_index + a, first_index + b),
                   np.concatenate([np.maximum(s, 0.0), np.maximum(-s, 0.0)], axis=1))
    return top

"""PromptNullifier: fit Gamma* = C_IT C_TT^+ once, then remove the prompt from any output's features.

Also what :class:`~promptprism.methods.scendi.Scendi` shares with it before the covariance pass: the input
check (:func:`check_paired`), the feature maps with their bandwidths resolved (:func:`resolve_feature_maps`)
and the rank warnings (:func:`prompt_rank_warnings`). The streaming passes live in :mod:`.streaming`.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..._params import BOOLEAN, SEED, positive
from ...data.paired import PairedSet, as_paired_set, prompt_groups, strings_disagree
from ...errors import InputError, OptionError
from ...kernels.bandwidth import Bandwidth, subsample_rows
from ...kernels.scendi_features import ScendiFeatureMaps, ScendiKernelOptions
from .core import PromptRankWarning, nullify, schur_split
from .streaming import stream_joint_covariance


def check_paired(data: Any, kernel: str, *, min_rows: int = 2) -> PairedSet:
    """A PairedSet from ``data`` (or a tuple of arrays), checked: enough rows, no zero row for cosine."""
    data = as_paired_set(data, "set")
    if len(data) < min_rows:
        raise InputError(f"{data.where}: has {len(data)} (prompt, output) pair; Scendi needs at least "
                         f"{min_rows} (a covariance of one sample has no spread to measure)")
    if kernel == "cosine":
        data.check_nonzero("the cosine kernel is undefined for a zero vector")
    return data


def scendi_groups(*sets: PairedSet, warn: bool = True) -> tuple[list[np.ndarray], str | None]:
    """The rows' prompt labels for Scendi (:func:`~promptprism.data.paired.prompt_groups`), and a note when
    they are not the prompt strings'. Scendi gives the rows of one label one prompt feature (Phi_T =
    Phi_G[groups], the Schur complement's C_TT): where, within a set, a string labels rows of different
    prompt embeddings (a category) the rows are grouped by their embeddings instead, noted and (``warn``)
    warned. Across sets the strings keep pairing the sets' prompts (two models' embeddings of one prompt
    may differ in their last digits). The labels are numbered by content (``numbered='content'``), so the
    same pairs in another row or set order give the same folds and bootstrap draws."""
    why = next((w for s in sets if (w := strings_disagree(s)) is not None), None)
    if why is None:  # (numbered by content: folds and bootstrap draws over prompts ignore the row order)
        return prompt_groups(*sets, numbered="content")[0], None
    note = (f"prompt strings do not name one prompt embedding each ({why}): Scendi's prompt features come "
            "from the embeddings, so its prompts are the distinct prompt embeddings, not the strings")
    if warn:
        warnings.warn(note, UserWarning, stacklevel=3)
    return prompt_groups(*sets, by="embedding", numbered="content")[0], note


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


@dataclass(frozen=True)
class PromptNullifier(ScendiKernelOptions):
    """Fit Gamma* = C_IT C_TT^+ on a paired set: ``fit`` returns a :class:`FittedNullifier`, whose
    ``transform`` removes the prompt from new pairs' features.

    ``transform(prompt_emb, output_emb)`` returns phi_I(x) - Gamma* phi_T(t): the output's features with what
    its prompt (or any text describing a concept to remove) predicts of them taken out (eq. 7). On the
    training pairs their covariance is Lambda_I.

    The estimator holds its parameters only (checked when it is made, never changed); what ``fit`` learns is
    the :class:`FittedNullifier` it returns (in the manner of Spark ML's Estimator -> Model).
    """

    seed: int = 0
    chunk_size: int = 2048
    partition_rows: int = 262_144
    rcond: float | None = None
    progress: bool | None = False

    _parameter_constraints: ClassVar[dict[str, list]] = {
        **ScendiKernelOptions._parameter_constraints,
        "seed": [SEED], "chunk_size": [positive()], "partition_rows": [positive()],
        "rcond": [positive(integer=False), None], "progress": [BOOLEAN, None]}

    def fit(self, data: PairedSet | tuple) -> FittedNullifier:
        """Learn Gamma* from ``data`` (one streaming pass for the joint covariance, then its Schur split);
        returns the :class:`FittedNullifier` (``transform``, ``gamma_``, ``split_``, ...).

        Inside ``with promptprism.execution(client):`` the pass runs as one task per ``partition_rows`` rows
        on the dask cluster (row-streamed ``.npy`` inputs are read by the workers), merged by a tree
        reduction.
        """
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
        return FittedNullifier(estimator=self, feature_maps_=maps, split_=split, gamma_=split.gamma,
                               n_samples_=len(data), warnings_=notes,
                               timings_={"covariance_s": t1 - t0, "split_s": time.perf_counter() - t1})

    def _not_fitted(self, *_: Any) -> Any:
        """Refused: the estimator holds its parameters only; ``fit`` returns the :class:`FittedNullifier`
        whose ``transform``, ``predict``, ``output_features`` and ``prompt_features`` apply Gamma*."""
        raise OptionError("this PromptNullifier is not fitted yet; call fit(paired_set) first (it returns "
                          "the fitted nullifier)")

    output_features = prompt_features = predict = transform = _not_fitted

    def fit_transform(self, data: PairedSet | tuple) -> np.ndarray:
        """``fit(data)``, then the nullified features of its own pairs (their covariance is Lambda_I)."""
        fitted = self.fit(data)
        data = check_paired(data, self.kernel)
        return fitted.transform(data.prompt_embeddings, data.output_embeddings)


@dataclass(frozen=True)
class FittedNullifier:
    """What :meth:`PromptNullifier.fit` learned (scikit-learn's names): ``feature_maps_``, ``gamma_``,
    ``split_`` (the :class:`SchurSplit`), ``n_samples_``, ``warnings_`` (messages of warnings raised by
    ``fit``), ``timings_``; ``estimator`` is the nullifier that was fitted."""

    estimator: PromptNullifier
    feature_maps_: ScendiFeatureMaps
    split_: Any
    gamma_: np.ndarray
    n_samples_: int
    warnings_: list[str]
    timings_: dict[str, float]

    def output_features(self, output_embeddings: np.ndarray) -> np.ndarray:
        """phi_I(x) for output embeddings."""
        return self.feature_maps_.outputs(output_embeddings)

    def prompt_features(self, prompt_embeddings: np.ndarray) -> np.ndarray:
        """phi_T(t) for prompt embeddings."""
        return self.feature_maps_.prompts(prompt_embeddings)

    def predict(self, prompt_embeddings: np.ndarray) -> np.ndarray:
        """Gamma* phi_T(t): the output features the prompt alone predicts."""
        return self.prompt_features(prompt_embeddings) @ self.gamma_.T

    def transform(self, prompt_embeddings: np.ndarray, output_embeddings: np.ndarray) -> np.ndarray:
        """phi_I(x) - Gamma* phi_T(t) for paired rows (prompt i goes with output i)."""
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

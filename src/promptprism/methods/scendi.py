"""Scendi: prompt-aware diversity, from the Schur complement of the joint (output, prompt) covariance.

With feature maps phi_I (outputs) and phi_T (prompts) and the paired set {(t_i, x_i)}_{i=1..n},

    C = (1/n) sum_i [phi_I(x_i); phi_T(t_i)] [phi_I(x_i); phi_T(t_i)]^T = [[C_II, C_IT], [C_TI, C_TT]]
    Gamma* = C_IT C_TT^+            (text-to-output conversion, Proposition 1; ^+ = pseudo-inverse)
    Lambda_T = C_IT C_TT^+ C_TI      (prompt-driven part of C_II)
    Lambda_I = C_II - Lambda_T       (Schur complement: the model-driven part)

Tr(C_II) = 1 (normalised kernels), so Tr(Lambda_I) + Tr(Lambda_T) = 1. Lambda_I is the (uncentred) covariance
of the prompt-nullified features phi_I(x) - Gamma* phi_T(t) (eq. 7).

Scores (all reported as exponentials of entropies in nats, "effective numbers of modes"):

* ``scendi``       exp(Scendi_I), Scendi_I = sum_j l_j log(Tr(Lambda_I) / l_j), l_j = eigenvalues of Lambda_I
                   (appendix eq. 9); the weights are the un-normalised eigenvalues, so exp(Scendi_I) =
                   exp(-sum_j l_j log(l_j / sum_k l_k)), the reference implementation's formula. Eigenvalues
                   are clamped at 1e-10 as there.
* ``scendi_prompt`` exp(Scendi_T), the same with Lambda_T.
* ``scendi_order2`` / ``scendi_prompt_order2``: the order-2 (RKE-style) variant. Order 1 is Tr(L) times the
  Shannon entropy of the normalised spectrum p = l / Tr(L); order 2 replaces it by Tr(L) times the order-2
  Renyi entropy, -log sum_j p_j^2. So exp(Scendi^(2)) = (1 / sum_j p_j^2)^Tr(L) = RKE(L / Tr L)^Tr(L),
  exactly as exp(Scendi) = Vendi(L / Tr L)^Tr(L).
* ``vendi`` = exp(-sum p log p), ``rke`` = 1 / sum p^2, with p the eigenvalues of C_II (trace 1): the
  prompt-unaware baselines of the same outputs.

Kernels: ``cosine`` (exact feature map a / |a|, any two embedding spaces) and ``gaussian`` (random Fourier
features). For the gaussian kernel, prompts and outputs get *separate* RFF maps by default (each with its
own bandwidth and frequencies: they may live in different spaces, and even CLIP's text and image embeddings
sit at different scales). ``shared_frequencies=True`` draws one set of frequencies and one bandwidth for
both, as the reference implementation does with CLIP (sigma 3.5 on raw ViT-B/32 features, 2 x 2500
features); it needs prompts and outputs in one space.

The joint covariance is a sum of outer products, accumulated chunk by chunk in a
:class:`~promptprism.stats.CovarianceAccumulator` (memory O((d_I + d_T)^2), independent of n).
Model-driven clusters are the top eigenvectors of Lambda_I (kernel PCA of the nullified features), each with
the samples that score highest on it; the same for C_II shows what conditioning on the prompt removed.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse.linalg

from .._progress import progress_enabled
from .._validation import check_positive_number, check_seed
from .._version import __version__
from ..data.paired import PairedSet
from ..errors import InputError, OptionError
from ..kernels.bandwidth import parse_bandwidth, resolve_bandwidth
from ..kernels.features import RandomFourierFeatures, cosine_features
from ..kernels.gram import KERNELS
from ..results import Result
from ..scale.runner import DaskRunner, LocalRunner, partition_rows, partition_size
from ..stats.accumulators import CovarianceAccumulator, TopKAccumulator
from ..stats.eigen import gram_factor, symmetric_eigenpairs

#: eigenvalues are clamped at this value in the Scendi entropies (as in the reference implementation)
EIGEN_FLOOR = 1e-10
#: most eigenvalues of each spectrum written to result.json
MAX_STORED_EIGENVALUES = 1000


class PromptRankWarning(UserWarning):
    """The prompt covariance has rank <= 1 (the prompts carry no information) or a rank near n (Gamma*
    interpolates the outputs and Lambda_I collapses towards 0)."""


# ------------------------------------------------------------------------------------ pure computations
def joint_covariance(output_features: np.ndarray, prompt_features: np.ndarray) -> np.ndarray:
    """C = (1/n) sum_i [phi_I; phi_T][phi_I; phi_T]^T in one go (small data; see :func:`accumulate_joint`)."""
    f = np.concatenate([np.asarray(output_features, dtype=np.float64),
                        np.asarray(prompt_features, dtype=np.float64)], axis=1)
    return CovarianceAccumulator(f.shape[1]).update(f).compute()


def accumulate_joint(chunks: Iterator[tuple[np.ndarray, np.ndarray]], dim_output: int, dim_prompt: int,
                     accumulator: CovarianceAccumulator | None = None) -> CovarianceAccumulator:
    """Stream (output_features, prompt_features) chunks into a joint :class:`CovarianceAccumulator`.

    Pass an existing ``accumulator`` to continue one (or build several and ``merge`` them).
    """
    acc = accumulator if accumulator is not None else CovarianceAccumulator(dim_output + dim_prompt)
    for fi, ft in chunks:
        acc.update(np.concatenate([np.asarray(fi, dtype=np.float64), np.asarray(ft, dtype=np.float64)],
                                  axis=1))
    return acc


@dataclass(frozen=True)
class SchurSplit:
    """The blocks of the split C_II = Lambda_T + Lambda_I and the conversion Gamma*."""

    c_ii: np.ndarray  #: output covariance C_II (d_I x d_I)
    lambda_t: np.ndarray  #: prompt-driven part C_IT C_TT^+ C_TI
    lambda_i: np.ndarray  #: model-driven part, the Schur complement C_II - Lambda_T
    gamma: np.ndarray  #: Gamma* = C_IT C_TT^+ (d_I x d_T)
    prompt_rank: int  #: numerical rank of C_TT (eigenvalues above rcond * largest)
    lambda_t_eigenvalues: np.ndarray  #: spectrum of Lambda_T, descending, padded with zeros to d_I


#: ``schur_split(solver='auto')`` diagonalises C_TT up to this dimension, above it uses a pivoted Cholesky
#: factor (about 40x faster at d_T = 5000, the reference's RFF size)
EIGH_MAX_DIM = 1000


#: relative cut-off of the pseudo-inverse of C_TT (see :func:`schur_split`)
PINV_RCOND = 1e-10


def schur_split(c: np.ndarray, dim_output: int, *, rcond: float | None = None, solver: str = "auto"
                ) -> SchurSplit:
    """Split the output block of the joint covariance ``c`` (outputs first, then prompts).

    C_TT^+ is the Moore-Penrose pseudo-inverse restricted to C_TT's numerical range: directions with
    variance at most ``rcond * max`` are dropped (default ``PINV_RCOND`` = 1e-10: inverting directions whose
    variance is at round-off level would amplify round-off into the result, making it depend on how the
    sum over samples was chunked; such directions carry no prompt information). Two equivalent routes:

    * ``'eigh'``: C_TT = U diag(mu) U^T; B = C_IT U_k diag(mu_k^-1/2), Lambda_T = B B^T.
    * ``'cholesky'``: C_TT = L L^T by pivoted Cholesky (L: d_T x r, full column rank r), so
      C_TT^+ = L G^-2 L^T with G = L^T L; B = C_IT L G^-1, Lambda_T = B B^T, Gamma* = B G^-1 L^T.

    Either way Lambda_T is PSD by construction. ``'auto'`` picks ``'eigh'`` up to d_T = ``EIGH_MAX_DIM``.
    """
    c = np.asarray(c, dtype=np.float64)
    d_i = int(dim_output)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or not 0 < d_i < c.shape[0]:
        raise InputError(f"schur_split: expected a square joint covariance with more than {d_i} rows, "
                         f"got shape {c.shape}")
    if solver not in ("auto", "eigh", "cholesky"):
        raise OptionError(f"solver must be 'auto', 'eigh' or 'cholesky', got {solver!r}")
    c_ii = c[:d_i, :d_i]
    c_it = c[:d_i, d_i:]
    c_tt = 0.5 * (c[d_i:, d_i:] + c[d_i:, d_i:].T)
    d_t = c_tt.shape[0]
    rel = PINV_RCOND if rcond is None else float(rcond)
    if solver == "eigh" or (solver == "auto" and d_t <= EIGH_MAX_DIM):
        mu, u = scipy.linalg.eigh(c_tt)
        keep = mu > rel * max(float(mu.max()), 0.0)
        u_k, mu_k = u[:, keep], mu[keep]
        b = (c_it @ u_k) / np.sqrt(mu_k)
        gamma = (b / np.sqrt(mu_k)) @ u_k.T
    else:
        factor = gram_factor(c_tt, tol=rel * max(float(np.max(np.diag(c_tt))), 0.0))
        g_chol = scipy.linalg.cho_factor(factor.T @ factor)
        b = scipy.linalg.cho_solve(g_chol, (c_it @ factor).T).T
        gamma = b @ scipy.linalg.cho_solve(g_chol, factor.T)
    lambda_t = b @ b.T
    lambda_i = c_ii - lambda_t
    lambda_i = 0.5 * (lambda_i + lambda_i.T)
    k = b.shape[1]
    if k <= d_i:  # the non-zero spectrum of B B^T is that of the (smaller) B^T B
        small = scipy.linalg.eigvalsh(b.T @ b) if k else np.empty(0)
        lt_eigs = np.concatenate([small[::-1], np.zeros(d_i - k)])
    else:
        lt_eigs = scipy.linalg.eigvalsh(lambda_t)[::-1]
    return SchurSplit(c_ii=c_ii, lambda_t=lambda_t, lambda_i=lambda_i, gamma=gamma, prompt_rank=int(k),
                      lambda_t_eigenvalues=np.maximum(lt_eigs, 0.0))


def scendi_entropy(eigenvalues: np.ndarray, order: int = 1) -> float:
    """Scendi entropy (nats) of a PSD component with eigenvalues l_j (not normalised), clamped at 1e-10.

    order 1: sum_j l_j log(T / l_j) = -sum_j l_j log(l_j / T), T = sum_j l_j  (appendix eq. 9);
    order 2: T log(T^2 / sum_j l_j^2) (T times the order-2 Renyi entropy of l / T).
    """
    lam = np.maximum(np.asarray(eigenvalues, dtype=np.float64), EIGEN_FLOOR)
    total = lam.sum()
    if order == 1:
        return float(-np.sum(lam * np.log(lam / total)))
    if order == 2:
        return float(total * np.log(total * total / np.sum(lam * lam)))
    raise OptionError(f"order must be 1 or 2, got {order!r}")


def scendi_score(eigenvalues: np.ndarray, order: int = 1) -> float:
    """exp(Scendi entropy): for order 1, exp(-sum l log(l / sum l)) with un-normalised weights l."""
    return float(np.exp(scendi_entropy(eigenvalues, order)))


def _normalised(eigenvalues: np.ndarray) -> np.ndarray:
    lam = np.clip(np.asarray(eigenvalues, dtype=np.float64), 0.0, None)
    total = lam.sum()
    if not total > 0:
        raise InputError("the kernel covariance is zero: no diversity can be measured")
    return lam / total


def vendi_score(eigenvalues: np.ndarray) -> float:
    """Vendi = exp(-sum p log p), p = eigenvalues normalised to sum 1 (negatives from round-off dropped)."""
    p = _normalised(eigenvalues)
    p = p[p > 0]
    return float(np.exp(-np.sum(p * np.log(p))))


def rke_score(eigenvalues: np.ndarray) -> float:
    """RKE = 1 / sum p^2, p = eigenvalues normalised to sum 1."""
    p = _normalised(eigenvalues)
    return float(1.0 / np.sum(p * p))


def vendi_score_from_gram(gram: np.ndarray, order: int = 1) -> float:
    """Vendi (order 1) or RKE (order 2) from an n x n kernel matrix with k(a, a) = 1 (eigenvalues of K / n).

    ``vendi_score_from_gram([[1, .9, 0], [.9, 1, 0], [0, 0, 1]])`` = 2.1573, as in the Vendi paper's package.
    """
    k = np.asarray(gram, dtype=np.float64)
    if k.ndim != 2 or k.shape[0] != k.shape[1] or k.shape[0] == 0:
        raise InputError(f"expected a square, non-empty kernel matrix, got shape {k.shape}")
    vals = scipy.linalg.eigvalsh(0.5 * (k + k.T)) / k.shape[0]
    if order == 1:
        return vendi_score(vals)
    if order == 2:
        return rke_score(vals)
    raise OptionError(f"order must be 1 or 2, got {order!r}")


def spectrum_and_top_vectors(a: np.ndarray, k: int, *, dense_limit: int = 600
                             ) -> tuple[np.ndarray, np.ndarray]:
    """All eigenvalues of a symmetric matrix (descending) and the unit eigenvectors of the top ``k``.

    Small matrices are fully diagonalised; larger ones get all eigenvalues from ``eigvalsh`` (no vectors,
    several times cheaper) and the top ``k`` vectors from Lanczos (ARPACK, deterministic start vector).
    """
    a = np.asarray(a, dtype=np.float64)
    d = a.shape[0]
    if d <= dense_limit or k + 1 >= d // 2:
        vals, vecs = symmetric_eigenpairs(a)
        return vals, vecs[:, :k]
    a = 0.5 * (a + a.T)
    vals = scipy.linalg.eigvalsh(a)[::-1].copy()
    top_vals, vecs = scipy.sparse.linalg.eigsh(a, k=k, which="LA", v0=np.full(d, 1.0 / np.sqrt(d)), tol=0.0)
    order = np.argsort(-top_vals, kind="stable")
    return vals, vecs[:, order]


def nullify(output_features: np.ndarray, prompt_features: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """Prompt-nullified features phi_I(x) - Gamma* phi_T(t) (eq. 7), row-wise."""
    fi = np.asarray(output_features, dtype=np.float64)
    return fi - np.asarray(prompt_features, dtype=np.float64) @ gamma.T


# ------------------------------------------------------------------------------------------ feature maps
@dataclass(frozen=True)
class ScendiFeatureMaps:
    """phi_I for outputs, phi_T for prompts: cosine, or gaussian RFF with separate or shared frequencies."""

    kernel: str
    dim_output_in: int
    dim_prompt_in: int
    sigma_output: float | None = None
    sigma_prompt: float | None = None
    n_features: int | None = None
    shared_frequencies: bool = False
    seed: int = 0
    _output_rff: RandomFourierFeatures | None = field(default=None, init=False, repr=False, compare=False)
    _prompt_rff: RandomFourierFeatures | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kernel not in KERNELS:
            raise OptionError(f"unknown kernel {self.kernel!r}; choose one of {', '.join(KERNELS)}")
        if self.kernel == "gaussian":
            if self.shared_frequencies:
                if self.dim_output_in != self.dim_prompt_in:
                    raise InputError(
                        f"shared RFF frequencies need prompts and outputs in one embedding space, but the "
                        f"prompt embeddings have {self.dim_prompt_in} dimensions and the output embeddings "
                        f"{self.dim_output_in}; use separate frequencies")
                if self.sigma_prompt != self.sigma_output:
                    raise OptionError("shared RFF frequencies use one bandwidth: sigma_prompt must equal "
                                      f"sigma_output, got {self.sigma_prompt} and {self.sigma_output}")
                rff = RandomFourierFeatures(self.dim_output_in, self.n_features, self.sigma_output, self.seed)
                object.__setattr__(self, "_output_rff", rff)
                object.__setattr__(self, "_prompt_rff", rff)
            else:
                object.__setattr__(self, "_output_rff", RandomFourierFeatures(
                    self.dim_output_in, self.n_features, self.sigma_output, self.seed))
                object.__setattr__(self, "_prompt_rff", RandomFourierFeatures(
                    self.dim_prompt_in, self.n_features, self.sigma_prompt, self.prompt_seed))

    @property
    def prompt_seed(self) -> int:
        """Seed of the prompt frequencies: ``seed`` when shared, ``seed + 1`` when separate."""
        return self.seed if self.shared_frequencies else self.seed + 1

    @property
    def dim_output(self) -> int:
        return self.dim_output_in if self.kernel == "cosine" else int(self.n_features)

    @property
    def dim_prompt(self) -> int:
        return self.dim_prompt_in if self.kernel == "cosine" else int(self.n_features)

    def outputs(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.dim_output_in:
            raise InputError(f"output embeddings: expected shape (n, {self.dim_output_in}), got {x.shape}")
        return cosine_features(x) if self.kernel == "cosine" else self._output_rff.transform(x)

    def prompts(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        if t.ndim != 2 or t.shape[1] != self.dim_prompt_in:
            raise InputError(f"prompt embeddings: expected shape (n, {self.dim_prompt_in}), got {t.shape}")
        return cosine_features(t) if self.kernel == "cosine" else self._prompt_rff.transform(t)

    def describe(self) -> dict:
        if self.kernel == "cosine":
            return {"map": "cosine", "dim_output": self.dim_output, "dim_prompt": self.dim_prompt}
        return {"map": "rff_shared" if self.shared_frequencies else "rff_separate",
                "n_features": self.n_features, "sigma_output": self.sigma_output,
                "sigma_prompt": self.sigma_prompt, "seed_output": self.seed, "seed_prompt": self.prompt_seed}


def _chunks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


def _subsample(x: np.ndarray, max_rows: int, seed: int) -> np.ndarray:
    if x.shape[0] <= max_rows:
        return np.asarray(x, dtype=np.float64)
    idx = np.sort(np.random.default_rng(seed).choice(x.shape[0], size=max_rows, replace=False))
    return np.asarray(x[idx], dtype=np.float64)


def _check_paired(data: Any, kernel: str, *, min_rows: int = 2) -> PairedSet:
    if isinstance(data, tuple) and len(data) in (2, 3, 4):
        data = PairedSet(*data, name="set")
    if not isinstance(data, PairedSet):
        raise OptionError("expected a PairedSet or a (prompt_embeddings, output_embeddings) tuple, "
                          f"got {type(data).__name__}")
    if len(data) < min_rows:
        raise InputError(f"{data.where}: has {len(data)} (prompt, output) pair; Scendi needs at least "
                         f"{min_rows} (a covariance of one sample has no spread to measure)")
    if kernel == "cosine":
        data.check_nonzero("the cosine kernel is undefined for a zero vector")
    return data


# ------------------------------------------------------------------------------------ PromptNullifier
@dataclass
class PromptNullifier:
    """Fit Gamma* = C_IT C_TT^+ on a paired set; ``transform`` removes the prompt from new pairs' features.

    ``transform(prompt_emb, output_emb)`` returns phi_I(x) - Gamma* phi_T(t): the output's features with what
    its prompt (or any text describing a concept to remove) predicts of them taken out (eq. 7). On the
    training pairs their covariance is Lambda_I.

    Fitted attributes (scikit-learn style): ``feature_maps_``, ``gamma_``, ``split_`` (the
    :class:`SchurSplit`), ``n_samples_``, ``warnings_`` (messages of warnings raised by ``fit``).
    """

    kernel: str = "cosine"
    sigma_prompt: Any = "median"
    sigma_output: Any = "median"
    n_features: int = 2000
    shared_frequencies: bool = False
    seed: int = 0
    chunk_size: int = 2048
    partition_rows: int = 262_144
    rcond: float | None = None
    progress: bool | None = False

    def __post_init__(self) -> None:
        self._validate()

    def _validate(self) -> None:
        if self.kernel not in KERNELS:
            raise OptionError(f"unknown kernel {self.kernel!r}; choose one of {', '.join(KERNELS)}")
        check_seed(self.seed)
        check_positive_number(self.chunk_size, "chunk size", integer=True)
        check_positive_number(self.partition_rows, "partition_rows", integer=True)
        if self.kernel == "gaussian":
            check_positive_number(self.n_features, "number of features", integer=True, even=True)
            parse_bandwidth(self.sigma_output, "sigma_output")
            if not self.shared_frequencies:
                parse_bandwidth(self.sigma_prompt, "sigma_prompt")
        if self.rcond is not None:
            check_positive_number(self.rcond, "rcond")

    def _resolve_sigmas(self, data: PairedSet, notes: list[str]) -> tuple[float | None, float | None]:
        if self.kernel != "gaussian":
            return None, None
        if self.shared_frequencies:
            if data.dim_prompt != data.dim_output:
                raise InputError(
                    f"{data.where}: shared RFF frequencies need prompts and outputs in one embedding space, "
                    f"but prompt_embeddings has {data.dim_prompt} columns and output_embeddings "
                    f"{data.dim_output}; use separate frequencies")
            pool = np.concatenate([_subsample(data.output_embeddings, 500, self.seed),
                                   _subsample(data.prompt_embeddings, 500, self.seed)])
            sigma = resolve_bandwidth(self.sigma_output, pool, name="sigma", seed=self.seed)
            return sigma, sigma
        sigma_out = resolve_bandwidth(self.sigma_output, _subsample(data.output_embeddings, 1000, self.seed),
                                      name="sigma_output", seed=self.seed)
        parsed = parse_bandwidth(self.sigma_prompt, "sigma_prompt")
        if isinstance(parsed, float):
            return sigma_out, parsed
        prompts = _subsample(data.prompt_embeddings, 1000, self.seed)
        try:
            sigma_prompt = resolve_bandwidth(self.sigma_prompt, prompts, name="sigma_prompt", seed=self.seed)
        except OptionError:
            # every prompt embedding is the same point: any bandwidth gives the same (constant) features
            notes.append("the prompt embeddings are all identical, so the median rule has no distance to "
                         "measure; sigma_prompt was set to 1 (with identical prompts it does not matter)")
            sigma_prompt = 1.0
        return sigma_out, sigma_prompt

    def fit(self, data: PairedSet | tuple, *, client: Any = None) -> PromptNullifier:
        """Accumulate the joint covariance of ``data`` in one streaming pass and split it.

        With a dask ``client`` the pass runs as one task per ``partition_rows`` rows on the cluster (row-
        streamed ``.npy`` inputs are read by the workers), merged by a tree reduction.
        """
        self._validate()
        data = _check_paired(data, self.kernel)
        notes: list[str] = []
        t0 = time.perf_counter()
        sigma_out, sigma_prompt = self._resolve_sigmas(data, notes)
        maps = ScendiFeatureMaps(self.kernel, data.dim_output, data.dim_prompt, sigma_output=sigma_out,
                                 sigma_prompt=sigma_prompt,
                                 n_features=self.n_features if self.kernel == "gaussian" else None,
                                 shared_frequencies=self.shared_frequencies and self.kernel == "gaussian",
                                 seed=self.seed)
        runner = LocalRunner() if client is None else DaskRunner(client)
        size = self.chunk_size if client is None else partition_size(self.partition_rows, self.chunk_size)
        acc = runner.map_reduce(joint_covariance_partition, [
            (maps, *partition_rows(data, a, b), self.chunk_size) for a, b in _chunks(len(data), size)],
            description="Scendi: covariance", progress=progress_enabled(self.progress))
        t1 = time.perf_counter()
        c = acc.compute()
        del acc
        split = schur_split(c, maps.dim_output, rcond=self.rcond)
        del c
        if split.prompt_rank <= 1:
            msg = (f"{data.where}: the prompt covariance C_TT has rank {split.prompt_rank} (all prompts are "
                   "identical): it is inverted by pseudo-inverse, the prompts explain only the mean output, "
                   "and Scendi then measures the prompt-unaware diversity of the outputs, as Vendi does "
                   "(not the same number: Scendi uses their spread around the mean, Vendi the uncentred "
                   "covariance)")
            notes.append(msg)
            warnings.warn(msg, PromptRankWarning, stacklevel=2)
        elif 2 * split.prompt_rank >= len(data):
            msg = (f"{data.where}: the prompt features have rank {split.prompt_rank} for {len(data)} "
                   "samples; "
                   "Gamma* is fitted in-sample and, as the rank nears n, it predicts every output from its "
                   "prompt (at rank n, Lambda_I = 0), so Scendi is biased low; use more samples per distinct "
                   "prompt, the cosine kernel, or fewer random features than samples")
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
        self.fit(data)
        data = _check_paired(data, self.kernel)
        return self.transform(data.prompt_embeddings, data.output_embeddings)


# ----------------------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class ClusterSample:
    """A sample aligned with a cluster direction: its row, prompt, output and projection score."""

    index: int
    prompt: str
    output: str | None
    score: float


@dataclass(frozen=True)
class Cluster:
    """One eigenvector of Lambda_I (model-driven) or C_II (unconditioned) and its top samples."""

    rank: int
    eigenvalue: float
    share: float  #: eigenvalue / trace of the matrix it comes from
    top_samples: list[ClusterSample]

    @classmethod
    def from_dict(cls, d: dict) -> Cluster:
        return cls(rank=d["rank"], eigenvalue=d["eigenvalue"], share=d["share"],
                   top_samples=[ClusterSample(**s) for s in d["top_samples"]])


@dataclass(frozen=True)
class ScendiResult(Result):
    """What :meth:`Scendi.fit` returns; ``save(dir)`` writes ``dir/result.json``."""

    kind = "scendi"

    name: str
    scendi: float  #: exp(Scendi_I): model-driven diversity
    scendi_prompt: float  #: exp(Scendi_T): prompt-driven diversity
    scendi_order2: float  #: order-2 (RKE-style) Scendi of Lambda_I
    scendi_prompt_order2: float  #: order-2 Scendi of Lambda_T
    vendi: float  #: Vendi of the outputs (C_II)
    rke: float  #: RKE of the outputs (C_II)
    model_share: float  #: Tr(Lambda_I)
    prompt_share: float  #: Tr(Lambda_T) (= 1 - model_share)
    entropies: dict  #: the entropies in nats behind the scores
    clusters: list[Cluster]  #: top eigenvectors of Lambda_I (model-driven clusters)
    clusters_unconditioned: list[Cluster]  #: top eigenvectors of C_II (prompt-unaware clusters)
    eigenvalues: dict  #: 'model' (Lambda_I), 'prompt' (Lambda_T), 'output' (C_II): descending, truncated
    n: int
    prompt_rank: int  #: numerical rank of C_TT
    seed: int
    config: dict
    warnings: list[str] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    version: str = __version__

    @classmethod
    def from_dict(cls, data: dict) -> ScendiResult:
        data = {k: v for k, v in data.items() if k != "kind"}
        for key in ("clusters", "clusters_unconditioned"):
            data[key] = [Cluster.from_dict(c) if isinstance(c, dict) else c for c in data[key]]
        return cls(**data)

    def summary(self) -> dict:
        """The scores of one row of the comparison table."""
        return {"name": self.name, "scendi": self.scendi, "scendi_prompt": self.scendi_prompt,
                "scendi_order2": self.scendi_order2, "vendi": self.vendi, "rke": self.rke,
                "model_share": self.model_share}


@dataclass(frozen=True)
class ScendiComparison(Result):
    """Several models' :class:`ScendiResult`, one per input, in the order given (``models``)."""

    kind = "scendi_comparison"

    models: list[ScendiResult]
    seed: int
    version: str = __version__

    @classmethod
    def from_dict(cls, data: dict) -> ScendiComparison:
        data = {k: v for k, v in data.items() if k != "kind"}
        data["models"] = [ScendiResult.from_dict(m) if isinstance(m, dict) else m for m in data["models"]]
        return cls(**data)

    def table(self) -> list[dict]:
        return [m.summary() for m in self.models]


# ------------------------------------------------------------------------------------------- estimator
@dataclass
class Scendi:
    """Scendi estimator: configure here, then ``fit(paired_set)`` -> :class:`ScendiResult`.

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
    seed : seeds every random draw (RFF frequencies: ``seed`` for outputs, ``seed + 1`` for prompts unless
        shared; the bandwidth subsample); recorded in the result.
    chunk_size : rows per streaming step. progress : progress bars (None: only on a terminal).
    """

    kernel: str = "cosine"
    sigma_prompt: Any = "median"
    sigma_output: Any = "median"
    n_features: int = 2000
    shared_frequencies: bool = False
    n_clusters: int = 5
    top_k: int = 10
    seed: int = 0
    chunk_size: int = 2048
    partition_rows: int = 262_144
    progress: bool | None = False

    def __post_init__(self) -> None:
        self._validate()

    def _validate(self) -> None:
        check_positive_number(self.n_clusters, "number of clusters", integer=True)
        check_positive_number(self.top_k, "top_k", integer=True)
        self._nullifier()._validate()

    def _nullifier(self) -> PromptNullifier:
        return PromptNullifier(kernel=self.kernel, sigma_prompt=self.sigma_prompt,
                               sigma_output=self.sigma_output, n_features=self.n_features,
                               shared_frequencies=self.shared_frequencies, seed=self.seed,
                               chunk_size=self.chunk_size, partition_rows=self.partition_rows,
                               progress=self.progress)

    def fit(self, data: PairedSet | tuple, name: str | None = None, *, client: Any = None) -> ScendiResult:
        """Scendi, Vendi and RKE of one paired set, with the model-driven and unconditioned clusters.

        With a dask ``client`` both streaming passes run on the cluster; the result equals the local one.
        """
        self._validate()
        data = _check_paired(data, self.kernel)
        t0 = time.perf_counter()
        nullifier = self._nullifier().fit(data, client=client)  # warns (PromptRankWarning) if prompts are one
        split = nullifier.split_
        timings = dict(nullifier.timings_)
        t1 = time.perf_counter()
        k = min(self.n_clusters, split.lambda_i.shape[0])
        li_vals, li_vecs = spectrum_and_top_vectors(split.lambda_i, k)
        c_vals, c_vecs = spectrum_and_top_vectors(split.c_ii, k)
        lt_vals = split.lambda_t_eigenvalues
        timings["eigen_s"] = time.perf_counter() - t1
        tr_i = float(np.trace(split.lambda_i))
        tr_t = float(np.trace(split.lambda_t))
        entropies = {
            "scendi": scendi_entropy(li_vals, 1), "scendi_prompt": scendi_entropy(lt_vals, 1),
            "scendi_order2": scendi_entropy(li_vals, 2), "scendi_prompt_order2": scendi_entropy(lt_vals, 2),
            "vendi": float(np.log(vendi_score(c_vals))), "rke": float(np.log(rke_score(c_vals))),
        }
        t2 = time.perf_counter()
        clusters, clusters_c = self._clusters(data, nullifier, li_vals, li_vecs, tr_i,
                                              c_vals, c_vecs, float(np.trace(split.c_ii)), client)
        timings["clusters_s"] = time.perf_counter() - t2
        timings["total_s"] = time.perf_counter() - t0
        maps = nullifier.feature_maps_
        config = {"kernel": self.kernel, **maps.describe(),
                  "sigma_prompt_rule": str(self.sigma_prompt) if self.kernel == "gaussian" else None,
                  "sigma_output_rule": str(self.sigma_output) if self.kernel == "gaussian" else None,
                  "shared_frequencies": bool(self.shared_frequencies and self.kernel == "gaussian"),
                  "n_clusters": self.n_clusters, "top_k": self.top_k, "chunk_size": self.chunk_size,
                  "eigen_floor": EIGEN_FLOOR, "input": data.where}

        def head(v: np.ndarray) -> list[float]:
            v = np.asarray(v)[:MAX_STORED_EIGENVALUES]
            return [float(x) for x in v if x > EIGEN_FLOOR]

        return ScendiResult(
            name=name or data.name, scendi=float(np.exp(entropies["scendi"])),
            scendi_prompt=float(np.exp(entropies["scendi_prompt"])),
            scendi_order2=float(np.exp(entropies["scendi_order2"])),
            scendi_prompt_order2=float(np.exp(entropies["scendi_prompt_order2"])),
            vendi=vendi_score(c_vals), rke=rke_score(c_vals), model_share=tr_i, prompt_share=tr_t,
            entropies=entropies, clusters=clusters, clusters_unconditioned=clusters_c,
            eigenvalues={"model": head(li_vals), "prompt": head(lt_vals), "output": head(c_vals)},
            n=len(data), prompt_rank=split.prompt_rank, seed=self.seed, config=config,
            warnings=list(nullifier.warnings_), timings={k_: round(v, 4) for k_, v in timings.items()})

    def _clusters(self, data: PairedSet, nullifier: PromptNullifier, li_vals, li_vecs, tr_i,
                  c_vals, c_vecs, tr_c, client: Any = None) -> tuple[list[Cluster], list[Cluster]]:
        """Second streaming pass: project nullified (and plain) output features on the top eigenvectors.

        Each eigenvector is oriented so that its strongest sample scores positive; the cluster lists the
        ``top_k`` samples with the largest scores along it.
        """
        k = li_vecs.shape[1]
        runner = LocalRunner() if client is None else DaskRunner(client)
        size = self.chunk_size if client is None else partition_size(self.partition_rows, self.chunk_size)
        top = runner.map_reduce(cluster_scores_partition, [
            (nullifier.feature_maps_, nullifier.gamma_, li_vecs, c_vecs, *partition_rows(data, a, b), a,
             self.chunk_size, self.top_k) for a, b in _chunks(len(data), size)],
            description="Scendi: clusters", progress=progress_enabled(self.progress))
        ids, scores = top.compute()

        def build(offset: int, vals: np.ndarray, trace: float) -> list[Cluster]:
            out = []
            for j in range(k):
                pos, neg = offset + j, 2 * k + offset + j
                best_pos = scores[0, pos] if scores.shape[0] else 0.0
                best_neg = scores[0, neg] if scores.shape[0] else 0.0
                col = pos if best_pos >= best_neg else neg
                samples = [ClusterSample(index=int(i), prompt=data.prompt_label(int(i)),
                                         output=data.output_label(int(i)), score=float(sc))
                           for i, sc in zip(ids[:, col], scores[:, col], strict=True) if sc > 0]
                share = float(vals[j] / trace) if trace > EIGEN_FLOOR else 0.0
                out.append(Cluster(rank=j + 1, eigenvalue=float(vals[j]), share=share, top_samples=samples))
            return out

        return build(0, li_vals, tr_i), build(k, c_vals, tr_c)


def joint_covariance_partition(maps: ScendiFeatureMaps, prompts: Any, outputs: Any, start: int, stop: int,
                               chunk_size: int) -> CovarianceAccumulator:
    """Task: sum_i [phi_I(x_i); phi_T(t_i)][...]^T over rows [start, stop), chunk by chunk."""
    chunks = ((maps.outputs(outputs[start + a : start + b]), maps.prompts(prompts[start + a : start + b]))
              for a, b in _chunks(stop - start, chunk_size))
    return accumulate_joint(chunks, maps.dim_output, maps.dim_prompt)


def cluster_scores_partition(maps: ScendiFeatureMaps, gamma: np.ndarray, li_vecs: np.ndarray,
                             c_vecs: np.ndarray, prompts: Any, outputs: Any, start: int, stop: int,
                             first_index: int, chunk_size: int, top_k: int) -> TopKAccumulator:
    """Task: the top samples along each eigenvector of Lambda_I (nullified features) and of C_II (plain).

    Columns: positive parts then negative parts of [nullified scores, plain scores]; ``first_index`` is the
    global index of row ``start``.
    """
    k = li_vecs.shape[1]
    top = TopKAccumulator(top_k, 4 * k)
    for a, b in _chunks(stop - start, chunk_size):
        fi = maps.outputs(outputs[start + a : start + b])
        ft = maps.prompts(prompts[start + a : start + b])
        s = np.concatenate([nullify(fi, ft, gamma) @ li_vecs, fi @ c_vecs], axis=1)
        top.update(np.arange(first_index + a, first_index + b),
                   np.concatenate([np.maximum(s, 0.0), np.maximum(-s, 0.0)], axis=1))
    return top


def compare(sets: list[PairedSet], estimator: Scendi | None = None, names: list[str] | None = None
            ) -> ScendiComparison:
    """Fit the same Scendi configuration on several models' paired sets: one row per model."""
    est = estimator or Scendi()
    names = names or [s.name for s in sets]
    if len(names) != len(sets):
        raise OptionError(f"{len(names)} names for {len(sets)} sets")
    return ScendiComparison(models=[est.fit(s, name=n) for s, n in zip(sets, names, strict=True)],
                            seed=est.seed)

"""PromptSplit: where two prompt-guided models disagree, as eigen-modes of a joint covariance difference.

With psi(t, z) = phi_T(t) (x) phi_Z(z) (tensor product of prompt and output feature maps),

    Lambda = (1/n) sum_i psi(t_i, x_i) psi(t_i, x_i)^T - (eta/m) sum_j psi(t'_j, y_j) psi(t'_j, y_j)^T

over the test set X and the reference set Y. Positive eigenvalues are (prompt, output) modes the test model
produces more than the reference; negative ones, modes the reference produces more.

Routes:

* ``exact``: the kernel trick (eq. 3). The joint Gram matrix G = (K_T o K_Z) over X and Y is factored by a
  pivoted Cholesky G = L L^T; the eigenpairs of the symmetric matrix L^T D L (D = diag(1/n, -eta/m)) are
  those of Lambda, and the score of sample s on the unit mode v is psi(s) . v = (L w)_s. O((n+m)^2) memory.
* ``rff`` (gaussian kernels) and ``sketch`` (cosine kernel): an r-dimensional random feature map psi_r with
  E[psi_r(s) . psi_r(s')] = k_T k_Z; Lambda_r (r x r) is accumulated in one streaming pass (memory O(r^2),
  independent of n) and diagonalised; a second streaming pass scores the samples on the top modes.
* ``auto``: ``exact`` when n + m <= ``EXACT_MAX_SAMPLES``, else ``rff`` (gaussian) or ``sketch`` (cosine).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._progress import progress_enabled, track
from .._validation import check_positive_number, check_seed
from .._version import __version__
from ..data.paired import PairedSet, check_compatible, prompt_groups
from ..errors import OptionError
from ..kernels.bandwidth import parse_bandwidth, resolve_bandwidth
from ..kernels.features import ProductRandomFourierFeatures, ProductRandomProjection
from ..kernels.gram import KERNELS, kernel_gram, squared_distances
from ..results import Result
from ..scale.runner import DaskRunner, partition_size
from ..scale.runner import partition_rows as _partition_rows
from ..stats.accumulators import CovarianceAccumulator, GroupSumAccumulator, TopKAccumulator
from ..stats.eigen import symmetric_eigenpairs, weighted_gram_eigenpairs

METHODS = ("auto", "exact", "rff", "sketch")
RANKINGS = ("contribution", "mean_score")
#: ``method='auto'`` uses the exact kernel route up to this many samples (n + m), random features above:
#: at 10,000 samples the exact route needs ~2.4 GB and ~15 s here; its cost grows as (n + m)^2 in memory.
EXACT_MAX_SAMPLES = 10_000
SIDES = ("test", "reference")
#: the random-feature route keeps the features of the first pass for scoring when they fit in this many bytes
FEATURE_CACHE_BYTES = 2 * 1024**3


# ----------------------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class SampleScore:
    """One sample's score psi(s) . v on a mode."""

    set: str  #: 'test' or 'reference'
    index: int  #: row in that set
    prompt: str
    output: str | None
    score: float


@dataclass(frozen=True)
class PromptLoading:
    """How strongly one prompt loads on a mode.

    ``contribution`` = (1/n) sum_{i in p} s_i^2 - (eta/m) sum_{j in p} s_j^2: the prompt's share of the
    eigenvalue (the contributions of all prompts add up to it exactly). ``mean_score`` is the mean score of
    the prompt's samples in the set the mode favours (test for positive modes, reference for negative ones).
    """

    prompt: str
    contribution: float
    mean_score: float | None
    n_test: int
    n_reference: int


@dataclass(frozen=True)
class Mode:
    """One eigen-mode of Lambda: its eigenvalue, the side it favours, its strongest samples and prompts."""

    rank: int  #: 1 = largest |eigenvalue| of its sign
    eigenvalue: float
    side: str  #: 'test' (positive eigenvalue) or 'reference' (negative)
    top_samples: list[SampleScore]  #: strongest samples of the favoured set
    top_samples_other: list[SampleScore]  #: strongest samples of the other set, for contrast
    top_prompts: list[PromptLoading]

    @classmethod
    def from_dict(cls, d: dict) -> Mode:
        return cls(rank=d["rank"], eigenvalue=d["eigenvalue"], side=d["side"],
                   top_samples=[SampleScore(**s) for s in d["top_samples"]],
                   top_samples_other=[SampleScore(**s) for s in d["top_samples_other"]],
                   top_prompts=[PromptLoading(**p) for p in d["top_prompts"]])


@dataclass(frozen=True)
class PromptSplitResult(Result):
    """What :meth:`PromptSplit.fit` returns; ``save(dir)`` writes ``dir/result.json``."""

    kind = "promptsplit"

    eigenvalues: list[float]  #: the whole computed spectrum, descending
    modes: list[Mode]  #: positive modes (rank 1, 2, ...) then negative modes (rank 1, 2, ...)
    distance: float  #: ||Lambda||_F^2, the PromptSplit distance
    method: str  #: the route actually used
    n_test: int
    n_reference: int
    seed: int
    config: dict  #: every option, with bandwidths resolved to numbers
    prompt_ranking: list[dict] = field(default_factory=list)  #: prompts by disagreement, strongest first
    timings: dict = field(default_factory=dict)
    version: str = __version__

    @classmethod
    def from_dict(cls, data: dict) -> PromptSplitResult:
        data = {k: v for k, v in data.items() if k != "kind"}
        data["modes"] = [Mode.from_dict(m) if isinstance(m, dict) else m for m in data["modes"]]
        return cls(**data)

    @property
    def positive_modes(self) -> list[Mode]:
        return [m for m in self.modes if m.side == "test"]

    @property
    def negative_modes(self) -> list[Mode]:
        return [m for m in self.modes if m.side == "reference"]

    def summary_rows(self) -> list[tuple[str, int, float, str]]:
        """(side, rank, eigenvalue, top prompt) per reported mode."""
        return [(m.side, m.rank, m.eigenvalue, m.top_prompts[0].prompt if m.top_prompts else "")
                for m in self.modes]


# ------------------------------------------------------------------------------------ pure computations
def joint_gram(
    prompts_a: np.ndarray, outputs_a: np.ndarray, prompts_b: np.ndarray, outputs_b: np.ndarray, *,
    kernel: str, sigma_prompt: float | None = None, sigma_output: float | None = None,
) -> np.ndarray:
    """G = K_T o K_Z over the stacked samples [a; b] (elementwise product of the two Gram matrices).

    For gaussians the product is one gaussian on the rescaled concatenation:
    exp(-|t - t'|^2 / (2 s_t^2) - |z - z'|^2 / (2 s_z^2)) = exp(-|w - w'|^2 / 2), w = [t / s_t ; z / s_z].
    """
    t = np.concatenate([np.asarray(prompts_a, dtype=np.float64), np.asarray(prompts_b, dtype=np.float64)])
    z = np.concatenate([np.asarray(outputs_a, dtype=np.float64), np.asarray(outputs_b, dtype=np.float64)])
    if kernel == "gaussian" and sigma_prompt is not None and sigma_output is not None:
        check_positive_number(sigma_prompt, "sigma_prompt")
        check_positive_number(sigma_output, "sigma_output")
        # one gaussian (sigma 1) on the concatenation [t / sigma_t ; z / sigma_z]: a single distance matrix
        w = np.concatenate([t / sigma_prompt, z / sigma_output], axis=1)
        g = squared_distances(w)
        g *= -0.5
        return np.exp(g, out=g)
    g = kernel_gram(kernel, t, sigma=sigma_prompt)
    g *= kernel_gram(kernel, z, sigma=sigma_output)
    return g


def signed_weights(n: int, m: int, eta: float) -> np.ndarray:
    """D = diag(1/n 1_n, -eta/m 1_m)."""
    return np.r_[np.full(n, 1.0 / n), np.full(m, -eta / m)]


def promptsplit_distance_from_gram(gram: np.ndarray, n: int, eta: float) -> float:
    """||Lambda||_F^2 = tr(D G D G) = sum_ij D_i D_j G_ij^2."""
    m = gram.shape[0] - n
    g2 = gram * gram
    return float(g2[:n, :n].sum() / n**2 + eta**2 * g2[n:, n:].sum() / m**2
                 - 2.0 * eta * g2[:n, n:].sum() / (n * m))


def _chunks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


def _pooled_rows(a: np.ndarray, b: np.ndarray, max_rows: int, seed: int) -> np.ndarray:
    """At most ``max_rows`` rows drawn (seeded) from a and b together, without reading the rest."""
    rng = np.random.default_rng(seed)
    parts = []
    for arr, k in ((a, max_rows // 2), (b, max_rows - max_rows // 2)):
        idx = np.sort(rng.choice(arr.shape[0], size=min(k, arr.shape[0]), replace=False))
        parts.append(np.asarray(arr[idx], dtype=np.float64))
    return np.concatenate(parts)


# ------------------------------------------------------------------------------------------- estimator
@dataclass
class PromptSplit:
    """PromptSplit estimator: configure here, then ``fit(test, reference)`` -> :class:`PromptSplitResult`.

    Parameters
    ----------
    kernel : 'gaussian' or 'cosine', used for both prompts and outputs.
    method : 'auto', 'exact', 'rff' (gaussian only) or 'sketch' (cosine only).
    eta : weight of the reference covariance, Lambda = C_test - eta C_ref.
    sigma_prompt, sigma_output : gaussian bandwidths: a number, or a rule ('median', '0.5*median', ...)
        evaluated on the pooled test + reference embeddings (see :mod:`promptprism.kernels.bandwidth`).
    n_modes : modes reported per sign (the top ``n_modes`` positive and the top ``n_modes`` negative).
    n_features : r, the random-feature dimension of the 'rff' / 'sketch' routes (even for 'rff').
    seed : seeds every random draw (random features, bandwidth subsample); recorded in the result.
    chunk_size : rows per streaming step.
    partition_rows : rows per task when ``fit`` runs on a dask cluster (rounded up to whole chunks).
    top_k : samples listed per mode and side; top_prompts: prompts listed per mode.
    rank_prompts_by : 'contribution' (the prompt's exact share of the eigenvalue: default) or 'mean_score'
        (mean score of the prompt's samples in the favoured set, as in the paper's description).
    solver : for the exact route: 'auto', 'dense' (whole spectrum) or 'lanczos' (only the modes asked for).
    progress : show progress bars (None: only on a terminal).
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
    progress: bool | None = False

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
        if self.rank_prompts_by not in RANKINGS:
            raise OptionError(f"rank_prompts_by must be one of {', '.join(RANKINGS)}, "
                              f"got {self.rank_prompts_by!r}")
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
        check_seed(self.seed)
        if self.kernel == "gaussian":
            parse_bandwidth(self.sigma_prompt, "sigma_prompt")
            parse_bandwidth(self.sigma_output, "sigma_output")

    # -------------------------------------------------------------------------------------------- fit
    def fit(self, test: PairedSet | tuple, reference: PairedSet | tuple, *, client: Any = None
            ) -> PromptSplitResult:
        """Compare ``test`` against ``reference`` (PairedSets, or (prompt_emb, output_emb) tuples).

        With a dask ``client``, the random-feature routes run one task per block of ``partition_rows``
        rows on the cluster (inputs streamed from ``.npy`` folders are read by the workers themselves) and
        merge the accumulators with a tree reduction; the result equals the single-process one.
        """
        self._validate()
        test = _as_paired(test, "test")
        reference = _as_paired(reference, "reference")
        check_compatible(test, reference)
        if self.kernel == "cosine":
            why = "the cosine kernel is undefined for a zero vector"
            test.check_nonzero(why)
            reference.check_nonzero(why)
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        sigmas = self._resolve_bandwidths(test, reference)
        method = self.method
        if method == "auto":
            method = ("exact" if len(test) + len(reference) <= EXACT_MAX_SAMPLES
                      else "rff" if self.kernel == "gaussian" else "sketch")
        show = progress_enabled(self.progress)
        label_list, names = prompt_groups(test, reference)
        labels = dict(zip(SIDES, label_list, strict=True))
        timings["setup_s"] = time.perf_counter() - t0

        if method == "exact":
            eig, distance, stats = self._exact(test, reference, sigmas, timings, labels, len(names))
            n_features = None
        else:
            runner = None if client is None else DaskRunner(client)
            eig, distance, stats = self._random_features(test, reference, sigmas, method, show, timings,
                                                         labels, len(names), runner)
            n_features = self.n_features
        t1 = time.perf_counter()
        modes, ranking = self._summarise(test, reference, eig, stats, names)
        timings["modes_s"] = time.perf_counter() - t1
        timings["total_s"] = time.perf_counter() - t0
        config = {
            "kernel": self.kernel, "method": self.method, "eta": float(self.eta),
            "sigma_prompt": sigmas[0], "sigma_output": sigmas[1],
            "sigma_prompt_rule": str(self.sigma_prompt) if self.kernel == "gaussian" else None,
            "sigma_output_rule": str(self.sigma_output) if self.kernel == "gaussian" else None,
            "n_modes": self.n_modes, "n_features": n_features, "chunk_size": self.chunk_size,
            "partition_rows": self._partition_size() if client is not None and method != "exact" else None,
            "top_k": self.top_k, "top_prompts": self.top_prompts, "rank_prompts_by": self.rank_prompts_by,
            "solver": self.solver if method == "exact" else None,
            "test": test.where, "reference": reference.where,
        }
        return PromptSplitResult(
            eigenvalues=[float(v) for v in eig[0]], modes=modes, distance=float(distance), method=method,
            n_test=len(test), n_reference=len(reference), seed=self.seed, config=config,
            prompt_ranking=ranking, timings={k: round(v, 4) for k, v in timings.items()})

    def _resolve_bandwidths(self, test: PairedSet, reference: PairedSet) -> tuple[float | None, float | None]:
        if self.kernel != "gaussian":
            return None, None
        out = []
        for spec, name, attr in ((self.sigma_prompt, "sigma_prompt", "prompt_embeddings"),
                                 (self.sigma_output, "sigma_output", "output_embeddings")):
            parsed = parse_bandwidth(spec, name)
            if isinstance(parsed, float):
                out.append(parsed)
            else:
                pool = _pooled_rows(getattr(test, attr), getattr(reference, attr), 1000, self.seed)
                out.append(resolve_bandwidth(spec, pool, name=name, seed=self.seed))
        return out[0], out[1]

    # ------------------------------------------------------------------------------------ exact route
    def _exact(self, test: PairedSet, reference: PairedSet, sigmas, timings, labels, n_groups):
        n, m = len(test), len(reference)
        t0 = time.perf_counter()
        gram = joint_gram(test.prompt_embeddings, test.output_embeddings, reference.prompt_embeddings,
                          reference.output_embeddings, kernel=self.kernel, sigma_prompt=sigmas[0],
                          sigma_output=sigmas[1])
        distance = promptsplit_distance_from_gram(gram, n, self.eta)
        timings["gram_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        want = None if self.solver == "dense" else self.n_modes
        eig = weighted_gram_eigenpairs(gram, signed_weights(n, m, self.eta), n_positive=want,
                                       n_negative=want, solver=self.solver)
        del gram
        timings["eigen_s"] = time.perf_counter() - t1
        vals = eig.eigenvalues
        sel = _select_modes(vals, self.n_modes, 1.0 + self.eta)
        chosen = eig.scores[:, sel]
        stats = {side: ModeStats.empty(self.top_k, len(sel), n_groups) for side in SIDES}
        stats["test"].update(np.arange(n), labels["test"], chosen[:n])
        stats["reference"].update(np.arange(m), labels["reference"], chosen[n:])
        return (vals, sel), distance, stats

    # ---------------------------------------------------------------------------- random-feature route
    def _feature_map(self, test: PairedSet, method: str, sigmas):
        if method == "rff":
            return ProductRandomFourierFeatures(test.dim_prompt, test.dim_output, self.n_features,
                                                sigmas[0], sigmas[1], seed=self.seed, fast_trig=True)
        return ProductRandomProjection(test.dim_prompt, test.dim_output, self.n_features, seed=self.seed)

    def _random_features(self, test, reference, sigmas, method, show, timings, labels, n_groups, runner):
        fmap = self._feature_map(test, method, sigmas)
        t0 = time.perf_counter()
        k_basis: np.ndarray
        sets = {"test": test, "reference": reference}
        if runner is None:
            # one process: chunks in order; keep the features for the scoring pass when they fit the budget
            accs = {side: CovarianceAccumulator(fmap.dim) for side in SIDES}
            steps = [(side, a, b) for side in SIDES for a, b in _chunks(len(sets[side]), self.chunk_size)]
            keep = (len(test) + len(reference)) * fmap.dim * 8 <= FEATURE_CACHE_BYTES
            kept: list[np.ndarray] = []
            for side, a, b in track(steps, total=len(steps), description="PromptSplit: covariance",
                                    enabled=show):
                s = sets[side]
                feats = fmap.transform(s.prompt_embeddings[a:b], s.output_embeddings[a:b])
                accs[side].update(feats)
                if keep:
                    kept.append(feats)
        else:
            accs = {side: runner.map_reduce(covariance_partition, [
                (fmap, *_partition_rows(sets[side], a, b), self.chunk_size)
                for a, b in _chunks(len(sets[side]), self._partition_size())],
                description=f"PromptSplit: covariance ({side})", progress=show) for side in SIDES}
        lam = accs["test"].compute() - self.eta * accs["reference"].compute()
        timings["covariance_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        vals, vecs = symmetric_eigenpairs(lam)
        timings["eigen_s"] = time.perf_counter() - t1
        distance = float(np.sum(lam * lam))
        sel = _select_modes(vals, self.n_modes, 1.0 + self.eta)
        k_basis = vecs[:, sel]
        t2 = time.perf_counter()
        if runner is None:
            stats = {side: ModeStats.empty(self.top_k, len(sel), n_groups) for side in SIDES}
            for i, (side, a, b) in enumerate(track(steps, total=len(steps),
                                                   description="PromptSplit: scoring", enabled=show)):
                s = sets[side]
                if keep:
                    feats = kept[i]
                else:
                    feats = fmap.transform(s.prompt_embeddings[a:b], s.output_embeddings[a:b])
                stats[side].update(np.arange(a, b), labels[side][a:b], feats @ k_basis)
        else:
            stats = {side: runner.map_reduce(mode_stats_partition, [
                (fmap, k_basis, *_partition_rows(sets[side], a, b), labels[side][a:b], a,
                 self.chunk_size, self.top_k, n_groups)
                for a, b in _chunks(len(sets[side]), self._partition_size())],
                description=f"PromptSplit: scoring ({side})", progress=show) for side in SIDES}
        timings["scoring_s"] = time.perf_counter() - t2
        return (vals, sel), distance, stats

    def _partition_size(self) -> int:
        return partition_size(self.partition_rows, self.chunk_size)

    # ------------------------------------------------------------------------------------- summaries
    def _summarise(self, test, reference, eig, stats, names) -> tuple[list[Mode], list[dict]]:
        """Per mode: top samples of each side and prompt loadings; plus the prompt ranking over modes.

        The prompt ranking scores prompt p by d_p = sum_j lambda_j c_pj over the reported modes, with c_pj
        the prompt's contribution to lambda_j; since sum_p c_pj = lambda_j, the d_p add up to
        sum_j lambda_j^2, the part of ||Lambda||_F^2 the reported modes capture.
        """
        vals, sel = eig
        k = len(sel)
        n, m = len(test), len(reference)
        sets = {"test": test, "reference": reference}
        top = {side: stats[side].top for side in SIDES}
        groups = {side: stats[side].groups for side in SIDES}
        modes: list[Mode] = []
        counters = {"test": 0, "reference": 0}
        disagreement = np.zeros(len(names))
        for j, idx in enumerate(sel):
            lam = float(vals[idx])
            side = "test" if lam > 0 else "reference"
            other = "reference" if side == "test" else "test"
            counters[side] += 1
            # orient the eigenvector so that the strongest sample of the favoured side scores positive
            top_ids, top_scores = top[side].compute()
            sign = 1.0 if top_scores.shape[0] == 0 or top_scores[0, j] >= 0 else -1.0
            sums = {s: groups[s].compute() for s in SIDES}
            sum_sq_t = sums["test"][0][:, k + j]
            sum_sq_r = sums["reference"][0][:, k + j]
            contribution = sum_sq_t / n - self.eta * sum_sq_r / m
            disagreement += lam * contribution
            fav_sum, fav_count = sums[side][0][:, j] * sign, sums[side][1]
            with np.errstate(invalid="ignore", divide="ignore"):
                mean_score = np.where(fav_count > 0, fav_sum / np.maximum(fav_count, 1), np.nan)
            present = (sums["test"][1] + sums["reference"][1]) > 0
            if self.rank_prompts_by == "contribution":
                key = contribution if side == "test" else -contribution
            else:
                key = np.nan_to_num(mean_score, nan=-np.inf)
            order = [p for p in np.lexsort((np.arange(len(names)), -key)) if present[p]][: self.top_prompts]
            loadings = [PromptLoading(prompt=names[p], contribution=float(contribution[p]),
                                      mean_score=None if np.isnan(mean_score[p]) else float(mean_score[p]),
                                      n_test=int(sums["test"][1][p]),
                                      n_reference=int(sums["reference"][1][p]))
                        for p in order]

            def samples(s: str, j: int = j, sign: float = sign) -> list[SampleScore]:
                ids, scores = top[s].compute()
                ps = sets[s]
                return [SampleScore(set=s, index=int(i), prompt=ps.prompt_label(int(i)),
                                    output=ps.output_label(int(i)), score=float(sign * sc))
                        for i, sc in zip(ids[:, j], scores[:, j], strict=True)]

            modes.append(Mode(rank=counters[side], eigenvalue=lam, side=side, top_samples=samples(side),
                              top_samples_other=samples(other), top_prompts=loadings))
        captured = float(np.sum(vals[sel] ** 2))
        counts_t, counts_r = groups["test"].counts, groups["reference"].counts
        order = np.lexsort((np.arange(len(names)), -disagreement))
        ranking = [{"prompt": names[p], "disagreement": float(disagreement[p]),
                    "share": float(disagreement[p] / captured) if captured > 0 else 0.0,
                    "n_test": int(counts_t[p]), "n_reference": int(counts_r[p])}
                   for p in order[: max(100, self.top_prompts)] if counts_t[p] + counts_r[p] > 0]
        return modes, ranking


@dataclass
class ModeStats:
    """Mergeable per-side statistics of the mode scores: top samples per mode and per-prompt sums."""

    top: TopKAccumulator
    groups: GroupSumAccumulator  #: per prompt: [sum of scores (k), sum of squared scores (k)]

    @classmethod
    def empty(cls, top_k: int, n_modes: int, n_groups: int) -> ModeStats:
        return cls(TopKAccumulator(top_k, n_modes), GroupSumAccumulator(n_groups, 2 * n_modes))

    def update(self, ids: np.ndarray, labels: np.ndarray, scores: np.ndarray) -> ModeStats:
        self.top.update(ids, scores)
        self.groups.update(labels, np.concatenate([scores, scores * scores], axis=1))
        return self

    def merge(self, other: ModeStats) -> ModeStats:
        self.top.merge(other.top)
        self.groups.merge(other.groups)
        return self


def covariance_partition(fmap: Any, prompts: Any, outputs: Any, start: int, stop: int, chunk_size: int
                         ) -> CovarianceAccumulator:
    """Task: sum_i psi(t_i, z_i) psi(t_i, z_i)^T over rows [start, stop), chunk by chunk."""
    acc = CovarianceAccumulator(fmap.dim)
    for a, b in _chunks(stop - start, chunk_size):
        acc.update(fmap.transform(prompts[start + a : start + b], outputs[start + a : start + b]))
    return acc


def mode_stats_partition(fmap: Any, basis: np.ndarray, prompts: Any, outputs: Any, start: int, stop: int,
                         labels: np.ndarray, first_index: int, chunk_size: int, top_k: int, n_groups: int
                         ) -> ModeStats:
    """Task: scores psi(s) . v_j of rows [start, stop) on the chosen modes, folded into ModeStats.

    ``first_index`` is the global index of row ``start`` in its set; ``labels`` holds the partition's
    prompt labels.
    """
    stats = ModeStats.empty(top_k, basis.shape[1], n_groups)
    for a, b in _chunks(stop - start, chunk_size):
        scores = fmap.transform(prompts[start + a : start + b], outputs[start + a : start + b]) @ basis
        stats.update(np.arange(first_index + a, first_index + b), labels[a:b], scores)
    return stats


def _select_modes(vals: np.ndarray, n_modes: int, norm: float = 0.0) -> np.ndarray:
    """Indices (into the descending ``vals``) of the top ``n_modes`` positive and negative eigenvalues.

    Eigenvalues within round-off of zero are not modes. Round-off is relative to the size of Lambda's two
    terms, ``norm`` = 1 + eta (normalised kernels: each covariance has trace 1), so that two identical sets
    (Lambda = 0, computed eigenvalues ~1e-17) report no modes rather than noise.
    """
    scale = max(float(np.max(np.abs(vals))) if vals.size else 0.0, norm, 1e-300)
    pos = np.flatnonzero(vals > 1e-12 * scale)[:n_modes]
    neg = np.flatnonzero(vals < -1e-12 * scale)[::-1][:n_modes]
    return np.r_[pos, neg].astype(np.int64)


def _as_paired(obj: PairedSet | tuple, name: str) -> PairedSet:
    if isinstance(obj, PairedSet):
        return obj
    if isinstance(obj, tuple) and len(obj) in (2, 3, 4):
        return PairedSet(*obj, name=name)
    raise OptionError(f"{name} must be a PairedSet or a (prompt_embeddings, output_embeddings) tuple, "
                      f"got {type(obj).__name__}")


def replace_config(est: PromptSplit, **changes: Any) -> PromptSplit:
    """A copy of ``est`` with some options changed (validated)."""
    return dataclasses.replace(est, **changes)

"""Scendi's quantities in feature space: joint covariance, Schur split, entropies and scores.

Equations are those of the Scendi paper (Jalali et al., "Conditional Vendi Score: an information-theoretic
approach to diversity evaluation of prompt-based generative models"), as SPEC restates them:

* joint covariance C = (1/n) sum_i [phi_I(x_i); phi_T(t_i)][...]^T (Section 4);
* Gamma* = C_IT C_TT^+ (Proposition 1), Lambda_T = Gamma* C_TI, Lambda_I = C_II - Lambda_T (the Schur
  complement, eq. 6), Lambda_I being the covariance of the prompt-nullified features phi_I - Gamma* phi_T
  (eq. 7);
* Scendi_I = sum_j l_j log(Tr(Lambda_I) / l_j) (appendix eq. 9) and its order-2 variant; Vendi and RKE of
  C_II.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..._validation import first_non_finite
from ...array_ops import cholesky_solve_right, is_numpy, symmetric_eigh
from ...backend import array_namespace, to_numpy
from ...errors import InputError, OptionError
from ...stats.accumulators import CovarianceAccumulator
from ...stats.eigen import gram_factor

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

    Either way Lambda_T is PSD by construction. ``'auto'`` picks ``'eigh'`` up to d_T = ``EIGH_MAX_DIM``
    (and always on torch: the pivoted Cholesky is a numpy routine). Runs on the backend of ``c``; the
    eigenvalues of Lambda_T come back as numpy.
    """
    if is_numpy(c):
        c = np.asarray(c, dtype=np.float64)
    xp = array_namespace(c)
    d_i = int(dim_output)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or not 0 < d_i < c.shape[0]:
        raise InputError(f"schur_split: expected a square joint covariance with more than {d_i} rows, "
                         f"got shape {tuple(c.shape)}")
    if solver not in ("auto", "eigh", "cholesky"):
        raise OptionError(f"solver must be 'auto', 'eigh' or 'cholesky', got {solver!r}")
    c_ii = c[:d_i, :d_i]
    c_it = c[:d_i, d_i:]
    c_tt = 0.5 * (c[d_i:, d_i:] + c[d_i:, d_i:].T)
    d_t = c_tt.shape[0]
    rel = PINV_RCOND if rcond is None else float(rcond)
    if solver == "eigh" or not is_numpy(c) or (solver == "auto" and d_t <= EIGH_MAX_DIM):
        mu, u = symmetric_eigh(c_tt)
        keep = mu > rel * max(float(mu.max()), 0.0)
        u_k, mu_k = u[:, keep], mu[keep]
        b = (c_it @ u_k) / xp.sqrt(mu_k)
        gamma = (b / xp.sqrt(mu_k)) @ u_k.T
    else:
        factor = gram_factor(c_tt, tol=rel * max(float(np.max(np.diag(c_tt))), 0.0))
        g = factor.T @ factor
        b = cholesky_solve_right(g, c_it @ factor)
        gamma = cholesky_solve_right(g, b) @ factor.T
    lambda_t = b @ b.T
    lambda_i = c_ii - lambda_t
    lambda_i = 0.5 * (lambda_i + lambda_i.T)
    k = b.shape[1]
    if k <= d_i:  # the non-zero spectrum of B B^T is that of the (smaller) B^T B
        small = to_numpy(symmetric_eigh(b.T @ b, values_only=True)) if k else np.empty(0)
        lt_eigs = np.concatenate([small[::-1], np.zeros(d_i - k)])
    else:
        lt_eigs = to_numpy(symmetric_eigh(lambda_t, values_only=True))[::-1]
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
    """exp(Scendi entropy) (appendix eq. 9, :func:`scendi_entropy`): for order 1, exp(-sum l log(l / sum l))
    with un-normalised weights l."""
    return float(np.exp(scendi_entropy(eigenvalues, order)))


#: negative eigenvalues of a PSD spectrum within this share of its largest |value| are round-off (dropped)
ROUND_OFF = 1e-6


def normalised_spectrum(eigenvalues: np.ndarray, name: str = "eigenvalues") -> np.ndarray:
    """p = max(l, 0) / sum max(l, 0): a PSD spectrum (a 1-D array of eigenvalues, finite) as a probability
    vector (Vendi's normalisation). A non-finite value, or a negative one beyond :data:`ROUND_OFF`, is
    refused naming its position, a matrix naming its shape (:func:`vendi_score_from_gram` takes a kernel
    matrix)."""
    raw = np.asarray(eigenvalues, dtype=np.float64)
    if raw.ndim != 1:
        raise InputError(f"{name}: expected a 1-D array of eigenvalues, got shape {raw.shape}; for an n x n "
                         "kernel matrix use vendi_score_from_gram")
    bad = first_non_finite(raw)
    if bad is not None:
        raise InputError(f"{name}: {bad}; every value must be finite")
    if raw.size and raw.min() < -ROUND_OFF * float(np.abs(raw).max()):
        low = int(np.argmin(raw))
        raise InputError(f"{name}: entry {low} (0-based) is {raw[low]:.4g}, a negative eigenvalue beyond "
                         f"round-off ({ROUND_OFF:g} of the largest |value|): a kernel covariance's spectrum "
                         "has none")
    lam = np.clip(raw, 0.0, None)
    total = lam.sum()
    if not total > 0:
        raise InputError("the kernel covariance is zero: no diversity can be measured")
    return lam / total


def vendi_score(eigenvalues: np.ndarray) -> float:
    """Vendi = exp(-sum p log p) (SPEC's baseline: the exponential of the von Neumann entropy of C_II), p =
    the eigenvalues normalised to sum 1 (negatives from round-off dropped, :func:`normalised_spectrum`)."""
    p = normalised_spectrum(eigenvalues, "vendi_score")
    p = p[p > 0]
    return float(np.exp(-np.sum(p * np.log(p))))


def rke_score(eigenvalues: np.ndarray) -> float:
    """RKE = 1 / sum p^2 (SPEC's baseline: the order-2 Renyi kernel entropy, exponentiated), p = the
    eigenvalues normalised to sum 1."""
    p = normalised_spectrum(eigenvalues, "rke_score")
    return float(1.0 / np.sum(p * p))


def vendi_score_from_gram(gram: np.ndarray, order: int = 1) -> float:
    """Vendi (order 1) or RKE (order 2) from an n x n kernel matrix with k(a, a) = 1 (eigenvalues of K / n).

    ``vendi_score_from_gram([[1, .9, 0], [.9, 1, 0], [0, 0, 1]])`` = 2.1573, as in the Vendi paper's package.
    """
    k = np.asarray(gram, dtype=np.float64)
    if k.ndim != 2 or k.shape[0] != k.shape[1] or k.shape[0] == 0:
        raise InputError(f"expected a square, non-empty kernel matrix, got shape {k.shape}")
    bad = first_non_finite(k)
    if bad is not None:
        raise InputError(f"vendi_score_from_gram: the kernel matrix's {bad}; every value must be finite")
    import scipy.linalg

    vals = scipy.linalg.eigvalsh(0.5 * (k + k.T)) / k.shape[0]
    if order == 1:
        return vendi_score(vals)
    if order == 2:
        return rke_score(vals)
    raise OptionError(f"order must be 1 or 2, got {order!r}")


def nullify(output_features: np.ndarray, prompt_features: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """Prompt-nullified features phi_I(x) - Gamma* phi_T(t) (eq. 7), row-wise."""
    if not is_numpy(gamma):
        return output_features - prompt_features @ gamma.T
    fi = np.asarray(output_features, dtype=np.float64)
    return fi - np.asarray(prompt_features, dtype=np.float64) @ gamma.T



def scendi_score_table(model: np.ndarray, prompt: np.ndarray, output: np.ndarray, *, model_share: float,
                       prompt_share: float) -> dict:
    """Every score of one estimate from its three spectra (eigenvalues of Lambda_I, Lambda_T and C_II).

    scendi = exp(Scendi_I) and scendi_prompt = exp(Scendi_T) (appendix eq. 9, order 1), their order-2
    variants, Vendi and RKE of C_II, the shares, and ``entropies`` (the same in nats).
    """
    ent = {"scendi": scendi_entropy(model, 1), "scendi_prompt": scendi_entropy(prompt, 1),
           "scendi_order2": scendi_entropy(model, 2), "scendi_prompt_order2": scendi_entropy(prompt, 2)}
    vendi, rke = vendi_score(output), rke_score(output)
    ent["vendi"], ent["rke"] = float(np.log(vendi)), float(np.log(rke))
    table = {k: float(np.exp(v)) for k, v in ent.items() if k.startswith("scendi")}
    table.update(vendi=vendi, rke=rke, model_share=float(model_share), prompt_share=float(prompt_share),
                 entropies=ent)
    return table

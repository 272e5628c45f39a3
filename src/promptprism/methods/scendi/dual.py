"""Scendi in sample space: the spectra of C_II, Lambda_I and Lambda_T from n x n kernel matrices.

Write X = D^1/2 Phi_I and Y = D^1/2 Phi_T (rows scaled by the square roots of sample weights w_i, sum 1;
w_i = 1/n for a plain set, multiplicities / n for a bootstrap replicate). Then C_II = X^T X, C_IT = X^T Y,
C_TT = Y^T Y, and every quantity of the Schur split has a sample-space twin with the same non-zero
eigenvalues (the feature-space matrices are d x d, these are n x n: the cheaper one is used):

* C_II            <->  K_X = D^1/2 K_I D^1/2                 (K_I = Phi_I Phi_I^T, the output Gram matrix)
* C_TT^+ (cut)    <->  P = U_k U_k^T, U_k the eigenvectors of K_Y = D^1/2 K_T D^1/2 above rcond * max
* Lambda_T        <->  P K_X P                                (C_IT C_TT^+ C_TI = X^T P X)
* Lambda_I        <->  (I - P) K_X (I - P)                    (Schur complement, eq. 6 = covariance of eq. 7)

The prompt predictor enters only through the "hat" matrix H (weighted coordinates) that maps the outputs'
features to their predictions: the residuals (prompt-nullified features, eq. 7) are (I - H) X and their
covariance has the spectrum of (I - H) K_X (I - H)^T; the predictions' covariance that of H K_X H^T.
In-sample (the paper's estimator) H = P, a projection, so the two add up to K_X. Cross-fitted, H predicts each
sample from a Gamma* fitted on the other folds only (:func:`cross_fit_hat`): an out-of-sample residual.

Every function runs on the backend of its matrices (numpy or torch, :mod:`promptprism.backend`); row labels,
folds and weights' bookkeeping stay numpy, spectra and scores come back as numpy float64.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._validation import PRECISIONS, check_precision  # noqa: F401 (PRECISIONS: re-exported)
from ...array_ops import as_like, device_of, grid, index_array, symmetric_eigh, trace, values_and_top_vectors
from ...backend import array_namespace, to_numpy
from ...errors import InputError
from .debias import debiased_twins, difference_twin


def weighted_gram(gram: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """D^1/2 K D^1/2: the n x n twin of a weighted covariance Phi^T D Phi (same non-zero eigenvalues)."""
    s = array_namespace(gram).sqrt(weights)
    return s[:, None] * gram * s[None, :]


def kept(mu: np.ndarray, rcond: float, size: int | None = None) -> np.ndarray:
    """Mask of the eigenvalues kept by the pseudo-inverse: above ``rcond`` times the largest, and in float32
    also above n * eps(float32) times it (smaller ones are round-off of that precision, not prompt signal);
    n: ``size``, the order of the matrix (default: the number of eigenvalues given)."""
    rel = rcond
    if array_namespace(mu).finfo(mu.dtype).bits == 32:
        rel = max(rel, (mu.shape[0] if size is None else size) * float(np.finfo(np.float32).eps))
    return mu > rel * max(float(mu.max()), 0.0)


def prompt_rank(prompt_gram: np.ndarray, weights: np.ndarray, *, rcond: float) -> int:
    """Numerical rank of C_TT (eigenvalues of D^1/2 K_T D^1/2 above ``rcond`` times the largest)."""
    mu = symmetric_eigh(weighted_gram(prompt_gram, as_like(weights, prompt_gram)), values_only=True)
    return int(kept(mu, rcond).sum())


def assign_folds(groups: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """Fold of each row: prompt groups are shuffled (seeded) and dealt round-robin into ``n_folds`` folds,
    so every output of a prompt lands in the same fold and held-out prompts are never seen in training."""
    groups = np.asarray(groups)
    uniq, inverse = np.unique(groups, return_inverse=True)
    if len(uniq) < 2:
        raise InputError("cross-fitting needs at least 2 distinct prompts; all rows share one prompt")
    k = min(int(n_folds), len(uniq))
    order = np.random.default_rng(seed).permutation(len(uniq))
    fold_of_group = np.empty(len(uniq), dtype=np.int64)
    fold_of_group[order] = np.arange(len(uniq)) % k
    return fold_of_group[inverse]


def cross_fit_hats(prompt_gram: np.ndarray, weights: np.ndarray, folds: np.ndarray,
                   ridges: Sequence[float], *, rcond: float) -> list[np.ndarray]:
    """Cross-fitted hat matrices H_lambda (weighted coordinates), one per ridge in ``ridges``.

    For each fold f with training rows S (weights renormalised to sum 1 on S) and held-out rows h,
    Gamma*_f = C_IT^S (C_TT^S + lambda I)^+ (Proposition 1's conversion, ridge-regularised; lambda = 0 is the
    paper's pseudo-inverse) predicts phi_I(x_h) as Phi_I,S^T alpha_h, with
    alpha_h = D_S^1/2 (K_Y,S + lambda I)^+ D_S^1/2 K_T[S, h]   (push-through identity),
    so H[h, S] = sqrt(w_h) alpha_h^T / sqrt(w_S). One eigen-decomposition of K_Y,S per fold serves every
    lambda; eigenvalues of K_Y,S at most ``rcond`` times the largest are dropped, as in-sample.
    """
    k_t = prompt_gram
    xp = array_namespace(k_t)
    w = np.asarray(weights, dtype=np.float64)
    n = k_t.shape[0]
    hats = [xp.zeros((n, n), dtype=k_t.dtype, **device_of(k_t)) for _ in ridges]
    for f in np.unique(folds):
        held = np.flatnonzero(folds == f)
        train = np.flatnonzero(folds != f)
        if train.size == 0:
            continue
        ws = w[train] / w[train].sum()
        sq = as_like(np.sqrt(ws), k_t)
        mu, u = symmetric_eigh(weighted_gram(k_t[grid(train, train, k_t)], as_like(ws, k_t)))
        keep = kept(mu, rcond)
        u_k, mu_k = u[:, keep], mu[keep]
        proj = u_k.T @ (sq[:, None] * k_t[grid(train, held, k_t)])  # (k, |h|)
        scale = as_like(np.sqrt(w[held])[None, :] / np.sqrt(w[train])[:, None] * np.sqrt(ws)[:, None],
                           k_t)  # (|S|, |h|)
        for hat, lam in zip(hats, ridges, strict=True):
            alpha = u_k @ (proj / (mu_k + lam)[:, None])
            hat[grid(held, train, k_t)] = (scale * alpha).T
    return hats


def residual_gram(output_gram: np.ndarray, hat: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(I - H) K_X (I - H)^T: the twin of Lambda_I, the covariance of the nullified features (eq. 7)."""
    k_x = weighted_gram(output_gram, as_like(weights, output_gram))
    r = k_x - hat @ k_x
    r = r - r @ hat.T
    return 0.5 * (r + r.T)


def prediction_gram(output_gram: np.ndarray, hat: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """H K_X H^T: the twin of the covariance of the prompt predictions Gamma* phi_T (in-sample: Lambda_T)."""
    k_x = weighted_gram(output_gram, as_like(weights, output_gram))
    p = hat @ k_x @ hat.T
    return 0.5 * (p + p.T)


def prompt_part_twin(k_x, hat):
    """The n x n twin of SPEC's cross-fitted Lambda_T = C_II - Lambda_I (same non-zero eigenvalues).

    With X = D^1/2 Phi_I, C_II = X^T X and Lambda_I = X^T (I - H)^T (I - H) X, so C_II - Lambda_I = X^T S X
    with S = H + H^T - H^T H (symmetric, possibly indefinite): :func:`difference_twin`. Its trace is
    Tr K_X - Tr((I - H) K_X (I - H)^T)."""
    return difference_twin(k_x, hat + hat.T - hat.T @ hat)


def choose_ridge(output_gram: np.ndarray, prompt_gram: np.ndarray, weights: np.ndarray, folds: np.ndarray,
                 *, ridges: Sequence[float], rcond: float, allow_none: bool = False
                 ) -> tuple[float, list[float]]:
    """The ridge lambda (in units of Tr C_TT = 1) whose cross-fitted residual has the smallest trace.

    Tr((I - H) K_X (I - H)^T) is the out-of-fold mean squared error of Gamma*'s predictions; returns the
    minimiser over ``ridges`` (the smallest on ties) and the whole curve. With ``allow_none``, predicting
    nothing (Gamma* = 0, error Tr K_X = Tr C_II) is a candidate too, returned as ``math.inf`` (the limit of a
    growing ridge) when every ridge does worse: the out-of-fold error then never exceeds Tr C_II.
    """
    xp = array_namespace(output_gram)
    k_x = weighted_gram(output_gram, as_like(weights, output_gram))
    curve = []
    for hat in cross_fit_hats(prompt_gram, weights, folds, ridges, rcond=rcond):
        hk = hat @ k_x
        curve.append(trace(k_x) - 2.0 * trace(hk) + float(xp.sum(hk * hat)))
    best = int(np.argmin(np.round(np.asarray(curve), 12)))
    if allow_none and round(curve[best], 12) > round(trace(k_x), 12):
        return math.inf, curve
    return float(ridges[best]), curve


@dataclass(frozen=True)
class DualSpectra:
    """Spectra and cluster scores of one estimate, computed in sample space.

    ``model``/``prompt``/``output``: eigenvalues (descending, length ``dim``: padded with zeros or cut, as
    the d x d feature-space matrix has exactly ``dim`` of them) of Lambda_I, of the prompt-explained part and
    of C_II. ``model_scores``/``output_scores``: (n, k) projections of each sample's nullified (resp. plain)
    features on the top-k unit eigenvectors. ``model_share`` = Tr Lambda_I; ``prompt_share`` = Tr of the
    prompt part (in-sample) or 1 - Tr Lambda_I (cross-fitted, see :func:`sample_space_spectra`).
    """

    model: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    model_share: float
    prompt_share: float
    model_scores: np.ndarray
    output_scores: np.ndarray


def round_off_zeroed(vals: Any, size: int) -> np.ndarray:
    """A float64 copy of descending eigenvalues; float32 ones below size * eps32 times the largest are
    round-off, not spectrum, and are zeroed (the entropies clamp them). When those carried more than 1 % of
    the spectrum's mass, the entropies (scendi, vendi) depend on them: a warning says to use float64."""
    out = np.asarray(vals, dtype=np.float64).copy()
    if np.asarray(vals).dtype != np.float32 or not out.size:
        return out
    low = out < size * float(np.finfo(np.float32).eps) * max(out[0], 0.0)
    lost = float(np.sum(np.maximum(out[low], 0.0))) / max(float(np.sum(np.maximum(out, 0.0))), 1e-300)
    out[low] = 0.0
    if lost > 0.01:
        warnings.warn(f"precision='float32': {lost:.1%} of a spectrum lies below float32's round-off and was "
                      "dropped, so scendi/vendi are not reliable here; use precision='float64'",
                      RuntimeWarning, stacklevel=2)
    return out


def _spectrum(a, dim: int, n_top: int, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All eigenvalues (descending, ``dim`` of them) and the top ``n_top`` samples' scores (numpy float64;
    ``weights`` numpy)."""
    size = a.shape[0]
    vals, vecs = values_and_top_vectors(a, n_top)
    vals, vecs = to_numpy(vals), to_numpy(vecs)
    scores = vecs * np.sqrt(np.maximum(vals[:n_top], 0.0))[None, :] / np.sqrt(weights)[:, None]
    vals = round_off_zeroed(vals[:dim], size)
    if vals.size < dim:
        vals = np.concatenate([vals, np.zeros(dim - vals.size)])
    return vals, np.asarray(scores, dtype=np.float64)


def grouped_prompt_basis(group_gram, groups: np.ndarray, weights: np.ndarray, *, rcond: float
                         ) -> tuple[np.ndarray, int]:
    """Q (n x k, orthonormal columns) with P = Q Q^T the in-sample projection, from the G x G Gram matrix of
    the distinct prompts (rows with one prompt have one prompt feature, so K_T has rank <= G).

    With E[i, g] = sqrt(w_i) [g(i) = g] and S = E^T E = diag(W_g), K_Y = E H E^T shares its non-zero
    eigenvalues with S^1/2 H S^1/2 = V diag(mu) V^T, and U = E S^-1/2 V are K_Y's eigenvectors; the same
    ``rcond`` cut as :func:`prompt_rank` keeps k of them. Cost O(G^3 + n k) instead of O(n^3).
    """
    xp = array_namespace(group_gram)
    n_groups = group_gram.shape[0]
    w = np.asarray(weights, dtype=np.float64)
    totals = np.bincount(groups, weights=w, minlength=n_groups)
    present = np.flatnonzero(totals > 0)
    sw = as_like(np.sqrt(totals[present]), group_gram)
    mu, v = symmetric_eigh(sw[:, None] * group_gram[grid(present, present, group_gram)] * sw[None, :])
    keep = kept(mu, rcond)
    k = int(keep.sum())
    per_group = xp.zeros((n_groups, k), dtype=group_gram.dtype, **device_of(group_gram))
    per_group[index_array(present, group_gram)] = v[:, keep] / sw[:, None]
    sq = as_like(np.sqrt(w), group_gram)
    return sq[:, None] * per_group[index_array(groups, group_gram)], k


def sample_space_spectra(output_gram, weights: np.ndarray, *, dim: int, hat=None, basis=None,
                         n_top: int = 0, in_sample: bool = True, debias_groups: np.ndarray | None = None
                         ) -> DualSpectra:
    """Spectra of Lambda_I, of the prompt part and of C_II (see the module doc), for a predictor given as an
    n x n ``hat`` matrix, or in-sample as the orthonormal ``basis`` Q of the projection P = Q Q^T
    (:func:`grouped_prompt_basis`; Lambda_T's spectrum is then that of the k x k matrix Q^T K_X Q).

    In-sample the prompt part is Lambda_T = C_IT C_TT^+ C_TI and the shares are the traces of Lambda_I and
    Lambda_T (they add up to Tr C_II = 1). With ``debias_groups`` (the rows' prompt labels) and a ``basis``,
    Lambda_I is the degrees-of-freedom corrected one and the prompt part C_II - Lambda_I
    (:func:`.debias.debiased_twins`). Cross-fitted, Lambda_I is the covariance of the out-of-fold
    residuals and the prompt part SPEC's Lambda_T = C_II - Lambda_I (twin K_X - (I - H) K_X (I - H)^T; it
    can have negative eigenvalues, which the entropy clamps), model_share = Tr Lambda_I (1 - out-of-sample
    R^2 of the outputs' features) and prompt_share = Tr Lambda_T = 1 - model_share.
    """
    w = np.asarray(to_numpy(weights), dtype=np.float64)
    k_x = weighted_gram(output_gram, as_like(w, output_gram))
    if basis is not None and debias_groups is not None:

        resid, pred, _ = debiased_twins(k_x, basis, debias_groups, w)
        prompt = _spectrum(pred, dim, 0, w)[0]
        tr_pred = trace(pred)
    elif basis is not None:
        qk = basis.T @ k_x  # k x n
        small = qk @ basis
        resid = k_x - basis @ qk
        resid -= qk.T @ basis.T
        resid += basis @ small @ basis.T
        resid = 0.5 * (resid + resid.T)
        prompt = _spectrum(0.5 * (small + small.T), dim, 0, np.ones(small.shape[0]))[0]
        tr_pred = trace(small)
    else:
        resid = residual_gram(output_gram, hat, w)
        if in_sample:
            pred = prediction_gram(output_gram, hat, w)
        else:  # SPEC: Lambda_T = C_II - Lambda_I under cross-fitting (may have negative eigenvalues)
            pred = prompt_part_twin(k_x, hat)
        prompt = _spectrum(pred, dim, 0, w)[0]
        tr_pred = trace(pred)
    tr_i = trace(resid)
    model, model_scores = _spectrum(resid, dim, n_top, w)
    output, output_scores = _spectrum(k_x, dim, n_top, w)
    tr_t = tr_pred if in_sample else trace(k_x) - tr_i
    return DualSpectra(model=model, prompt=prompt, output=output, model_share=tr_i, prompt_share=tr_t,
                       model_scores=model_scores, output_scores=output_scores)

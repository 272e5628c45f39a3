"""Straightforward baselines, written from the papers' definitions, to time promptprism against.

Each function computes what a reader of the paper would write first: the definitions, with numpy, no
algorithmic shortcuts (and no deliberate slowness either: kernel matrices use the BLAS-friendly
|a|^2 + |b|^2 - 2 a.b form). ``tests/test_benchmarks_baselines.py`` checks on small data that they give the
same numbers as promptprism, so a speed-up measured against them is a speed-up on the same answer.

* :func:`exact_block_eig` - PromptSplit, kernel route (Algorithm 1): build the (n+m) x (n+m) block kernel
  matrix K_{X,eta Y|T} of eq. 3 block by block (K_TT o K_XX, K_TT' o K_XY, ...) and take its whole spectrum
  with a dense ``numpy.linalg.eig`` (the matrix is not symmetric). O((n+m)^2 (d_t + d_z)) for the blocks,
  O((n+m)^3) for the eigen-decomposition.
* :func:`rff_outer_loop` - PromptSplit, random-feature route (eq. 4, Algorithm 2 with the product-RFF map
  of section 3.2): Lambda_r = (1/n) sum_i psi_r psi_r^T - (eta/m) sum_j psi_r psi_r^T accumulated one
  sample at a time (``batch=1``: one outer product per sample, as the sum is written; ``batch=b`` sums b
  outer products per matrix product), then a dense ``numpy.linalg.eigh`` of the r x r matrix.
* :func:`pixel_cka_nested_loop` - disentangled mean embeddings, region discovery (Algorithm 1 of the regions
  paper, as its notebook does it): for every pixel pair (i, j) and every mini-batch (appendix C), the two
  b x b RBF Gram matrices and CKA (eq. 13) from tr(K H L H) with H = I - 11^T / b.
* :func:`scendi_dense` - Scendi (SPEC / appendix): features, the joint covariance C as a dense matrix
  product, C_TT^+ by a dense pseudo-inverse, Lambda_T = C_IT C_TT^+ C_TI, Lambda_I = C_II - Lambda_T, and
  dense eigen-decompositions of Lambda_I, Lambda_T and C_II in feature space.

The timings in ``compare.py`` come from these functions; where a baseline is too slow to run in full at a
benchmark size, ``compare.py`` runs part of it (a subset of samples or pixel pairs, a smaller eigen-problem)
and extrapolates by the known cost law, and says so in the table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# ------------------------------------------------------------------------------------- PromptSplit exact


def gaussian_gram(a: np.ndarray, b: np.ndarray, sigma: float) -> np.ndarray:
    """k(a_i, b_j) = exp(-|a_i - b_j|^2 / (2 sigma^2)) (SPEC, gaussian kernel)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
    return np.exp(-np.maximum(d2, 0.0) / (2.0 * sigma**2))


def block_kernel_matrix(t_x: np.ndarray, x: np.ndarray, t_y: np.ndarray, y: np.ndarray, *,
                        sigma_prompt: float, sigma_output: float, eta: float = 1.0) -> np.ndarray:
    """K_{X,eta Y|T} of the PromptSplit paper's eq. 3, built from its four blocks.

    [[ (1/n) K_TT o K_XX,            (1/sqrt(nm)) K_TT' o K_XY ],
     [ -(eta/sqrt(nm)) (K_TT' o K_XY)^T,  -(eta/m) K_T'T' o K_YY ]]   (o: elementwise product)
    """
    n, m = len(x), len(y)
    k_xx = gaussian_gram(t_x, t_x, sigma_prompt) * gaussian_gram(x, x, sigma_output)
    k_xy = gaussian_gram(t_x, t_y, sigma_prompt) * gaussian_gram(x, y, sigma_output)
    k_yy = gaussian_gram(t_y, t_y, sigma_prompt) * gaussian_gram(y, y, sigma_output)
    return np.block([[k_xx / n, k_xy / math.sqrt(n * m)],
                     [-eta * k_xy.T / math.sqrt(n * m), -eta * k_yy / m]])


def exact_block_eig(t_x: np.ndarray, x: np.ndarray, t_y: np.ndarray, y: np.ndarray, *,
                    sigma_prompt: float, sigma_output: float, eta: float = 1.0) -> np.ndarray:
    """The whole spectrum of eq. 3's block matrix (dense ``numpy.linalg.eig``), real parts, descending.

    Its non-zero eigenvalues are those of Lambda = C_test - eta C_ref (Proposition 1).
    """
    k = block_kernel_matrix(t_x, x, t_y, y, sigma_prompt=sigma_prompt, sigma_output=sigma_output, eta=eta)
    return block_eig_spectrum(k)


def block_eig_spectrum(k: np.ndarray) -> np.ndarray:
    """Every eigenvalue of eq. 3's (non-symmetric) block matrix by ``numpy.linalg.eig``, descending.

    The spectrum is real (the matrix is similar to a symmetric one); the real parts are returned.
    """
    return np.sort(np.linalg.eig(k)[0].real)[::-1]


# --------------------------------------------------------------------------------------- PromptSplit rff


def product_rff_frequencies(dim_prompt: int, dim_output: int, n_frequencies: int, *, sigma_prompt: float,
                            sigma_output: float, seed: int = 0) -> np.ndarray:
    """Frequencies of the product-kernel RFF, stacked ((d_t + d_z) x D): w_t ~ N(0, sigma_t^-2 I) on top,
    w_z ~ N(0, sigma_z^-2 I) below, so that w . [t; z] = w_t . t + w_z . z (PromptSplit section 3.2)."""
    w = np.random.default_rng(seed).standard_normal((dim_prompt + dim_output, n_frequencies))
    w[:dim_prompt] /= sigma_prompt
    w[dim_prompt:] /= sigma_output
    return w


def product_rff(t: np.ndarray, z: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
    """psi_r(t, z) = sqrt(1/D) [cos(w_l . [t; z]), sin(w_l . [t; z])]_l, r = 2D; rows are samples."""
    u = np.concatenate([np.atleast_2d(t), np.atleast_2d(z)], axis=1) @ frequencies
    return np.concatenate([np.cos(u), np.sin(u)], axis=1) / math.sqrt(frequencies.shape[1])


def rff_outer_loop(t_x: np.ndarray, x: np.ndarray, t_y: np.ndarray, y: np.ndarray, *,
                   frequencies: np.ndarray, eta: float = 1.0, batch: int = 1,
                   max_samples: int | None = None) -> tuple[np.ndarray, int]:
    """Lambda_r of eq. 4, summed sample by sample: (Lambda_r, number of samples processed).

    ``batch=1`` adds one ``numpy.outer(psi, psi)`` per sample (weight 1/n for the test set, -eta/m for the
    reference); ``batch=b`` adds Psi_b^T W Psi_b per block of b samples. ``max_samples`` stops after that
    many samples (taken alternately from the two sets, as a timing probe; the matrix is then partial).
    """
    n, m = len(x), len(y)
    r = 2 * frequencies.shape[1]
    lam = np.zeros((r, r))
    order = [(0, i) for i in range(n)] + [(1, j) for j in range(m)]
    if max_samples is not None:  # interleave so that a probe touches both sets
        k = min(n, m)
        order = ([p for pair in zip(order[:k], order[n:n + k], strict=True) for p in pair]
                 + order[k:n] + order[n + k:])
        order = order[:max_samples]
    sets = ((t_x, x, 1.0 / n), (t_y, y, -eta / m))
    for start in range(0, len(order), batch):
        chunk = order[start:start + batch]
        if batch == 1:
            which, i = chunk[0]
            ts, zs, weight = sets[which]
            psi = product_rff(ts[i], zs[i], frequencies)[0]
            lam += weight * np.outer(psi, psi)
        else:
            for which in (0, 1):
                rows = [i for w_, i in chunk if w_ == which]
                if rows:
                    ts, zs, weight = sets[which]
                    psi = product_rff(ts[rows], zs[rows], frequencies)
                    lam += weight * (psi.T @ psi)
    return lam, len(order)


def rff_spectrum(lam: np.ndarray) -> np.ndarray:
    """The whole spectrum of Lambda_r (dense ``numpy.linalg.eigh``), descending."""
    return np.linalg.eigh(lam)[0][::-1]


# ----------------------------------------------------------------------------------------------- pixel CKA


def _hsic_trace(k: np.ndarray, l_: np.ndarray, h: np.ndarray) -> float:
    """HSIC(K, L) = tr(K H L H) (regions paper, eq. 11)."""
    return float(np.trace(k @ h @ l_ @ h))


def pixel_cka_nested_loop(images: np.ndarray, *, gamma: float, block_size: int | None = None, seed: int = 0,
                          pairs: Sequence[tuple[int, int]] | None = None) -> np.ndarray:
    """The d x d pixel-by-pixel CKA matrix by the nested loop over pixel pairs (regions paper, Algorithm 1).

    ``images``: (n, H, W) or (n, H, W, C). Pixel kernel k(a, b) = exp(-gamma |a - b|^2) on a pixel's value
    (its channel vector) across images. Mini-batch CKA (appendix C): the images are split into
    n // block_size blocks of a seeded permutation (``None``: one block of all images) and the blocks' CKA
    values are averaged. A pixel constant within a block has CKA 0 with every other pixel (1 with itself).
    With ``pairs``, only those entries are computed and the others are NaN (a timing probe).
    """
    arr = np.asarray(images, dtype=np.float64)
    if arr.ndim == 3:
        arr = arr[..., None]
    n = arr.shape[0]
    px = arr.reshape(n, -1, arr.shape[-1])  # (n, d, c)
    d = px.shape[1]
    b = n if block_size is None else int(block_size)
    order = np.arange(n) if block_size is None else np.random.default_rng(seed).permutation(n)
    blocks = [order[k * b:(k + 1) * b] for k in range(n // b)]
    h = np.eye(b) - np.ones((b, b)) / b
    todo = pairs if pairs is not None else [(i, j) for i in range(d) for j in range(d)]
    out = np.full((d, d), np.nan)
    tol = 1e-12 * b
    for i, j in todo:
        total = 0.0
        for rows in blocks:
            vi, vj = px[rows, i], px[rows, j]
            k = np.exp(-gamma * ((vi[:, None, :] - vi[None, :, :]) ** 2).sum(-1))
            l_ = np.exp(-gamma * ((vj[:, None, :] - vj[None, :, :]) ** 2).sum(-1))
            hkl, hkk, hll = _hsic_trace(k, l_, h), _hsic_trace(k, k, h), _hsic_trace(l_, l_, h)
            if i == j:
                total += 1.0
            elif math.sqrt(max(hkk, 0.0)) > tol and math.sqrt(max(hll, 0.0)) > tol:
                total += hkl / math.sqrt(hkk * hll)
        out[i, j] = total / len(blocks)
    return out


# -------------------------------------------------------------------------------------------------- Scendi


def rff(a: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
    """phi(a) = sqrt(1/D) [cos(w_l . a), sin(w_l . a)]_l (SPEC, gaussian kernel); rows are samples."""
    u = np.asarray(a, dtype=np.float64) @ frequencies
    return np.concatenate([np.cos(u), np.sin(u)], axis=1) / math.sqrt(frequencies.shape[1])


def _entropy_score(vals: np.ndarray) -> float:
    """exp(-sum_j l_j log(l_j / sum_k l_k)), eigenvalues clamped at 1e-10 (Scendi's reference formula)."""
    v = np.maximum(vals, 1e-10)
    return float(np.exp(-np.sum(v * np.log(v / v.sum()))))


def scendi_dense(prompts: np.ndarray, outputs: np.ndarray, *, kernel: str = "cosine",
                 frequencies: np.ndarray | None = None, rcond: float = 1e-10) -> dict[str, float]:
    """Scendi, Scendi_T and Vendi of one paired set by dense feature-space linear algebra.

    ``kernel='cosine'``: phi(a) = a / |a|. ``kernel='gaussian'``: RFF with one shared set of
    ``frequencies`` (d x D, already divided by sigma) for prompts and outputs, as the reference
    implementation does with CLIP. C = F^T F / n with F = [phi_I(outputs), phi_T(prompts)];
    C_TT^+ = ``numpy.linalg.pinv`` (directions below ``rcond`` x the largest eigenvalue dropped).
    Returns {'scendi', 'scendi_prompt', 'vendi'}: exp(Scendi_I), exp(Scendi_T), exp(von Neumann entropy
    of C_II).
    """
    if kernel == "cosine":
        def phi(a: np.ndarray) -> np.ndarray:
            a = np.asarray(a, dtype=np.float64)
            return a / np.linalg.norm(a, axis=1, keepdims=True)
    elif kernel == "gaussian":
        if frequencies is None:
            raise ValueError("kernel='gaussian' needs the RFF frequencies")

        def phi(a: np.ndarray) -> np.ndarray:
            return rff(a, frequencies)
    else:
        raise ValueError(f"kernel must be 'cosine' or 'gaussian', got {kernel!r}")
    f_i, f_t = phi(outputs), phi(prompts)
    n, d_i = f_i.shape
    f = np.concatenate([f_i, f_t], axis=1)
    c = f.T @ f / n
    c_ii, c_it, c_tt = c[:d_i, :d_i], c[:d_i, d_i:], c[d_i:, d_i:]
    lambda_t = c_it @ np.linalg.pinv(c_tt, rcond=rcond, hermitian=True) @ c_it.T
    lambda_i = c_ii - lambda_t
    return {"scendi": _entropy_score(np.linalg.eigvalsh(lambda_i)),
            "scendi_prompt": _entropy_score(np.linalg.eigvalsh(lambda_t)),
            "vendi": _entropy_score(np.linalg.eigvalsh(c_ii))}

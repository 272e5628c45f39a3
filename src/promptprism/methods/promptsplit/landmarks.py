"""Placing many points on a map from a few landmarks: the cheap path of the sample map beyond
``LANDMARKS`` points.

Only the landmarks (a seeded subset of the drawn points) are projected (kernel PCA or t-SNE) and scored
on the modes by the exact route; every other point gets the kernel-weighted mean of its ``k`` nearest
landmarks' mode scores (a Nadaraya-Watson interpolation, Gaussian weights with the bandwidth set to the
median k-NN distance) and is placed by a local affine map fitted to those landmarks
(:func:`place_on_landmarks`: LAMP, Joia et al. 2011, a weighted scaled orthogonal Procrustes fit per
point), so points between landmarks keep their local arrangement instead of collapsing on the landmarks'
weighted mean. A point equal to a landmark lands on that landmark. Cost: one PCA of the landmarks, an (n,
landmarks) distance matrix in at most ``PCA_DIMS`` dimensions and n small (``PCA_DIMS`` x 2) SVDs.
"""

from __future__ import annotations

import numpy as np

from ...array_ops import sorted_subsample

#: at most this many points are projected (kernel PCA or t-SNE) and scored exactly; the rest are interpolated
LANDMARKS = 600
#: nearest landmarks per interpolated point
NEIGHBOURS = 8
#: the joint features are projected on the landmarks' top principal axes, at most this many, first
PCA_DIMS = 32
#: rows per block of the distance computation (bounds the memory at block x landmarks)
BLOCK = 4096


def landmark_indices(n: int, n_landmarks: int, seed: int) -> np.ndarray:
    """A seeded subset of ``min(n, n_landmarks)`` row indices of ``range(n)``, sorted."""
    if n <= n_landmarks:
        return np.arange(n)
    rng = np.random.default_rng([int(seed), 41])
    return sorted_subsample(n, int(n_landmarks), rng)


def project_on_landmarks(x: np.ndarray, land: np.ndarray, dims: int = PCA_DIMS) -> np.ndarray:
    """Rows of ``x`` centred on the landmarks' mean and projected on the landmarks' top ``dims`` principal
    axes (an SVD of the centred landmark rows); ``x`` itself, centred, with at most ``dims`` columns."""
    mean = x[land].mean(axis=0)
    if x.shape[1] <= dims:
        return x - mean
    _, _, vt = np.linalg.svd(x[land] - mean, full_matrices=False)
    basis = np.ascontiguousarray(vt[:dims].T)
    return x @ basis - mean @ basis  # (no centred copy of x: it may be 20,000 x 800)


def knn_weights(x: np.ndarray, landmarks: np.ndarray, k: int = NEIGHBOURS
                ) -> tuple[np.ndarray, np.ndarray]:
    """For each row of ``x``: its ``k`` nearest landmark rows (indices into ``landmarks``) and normalised
    Gaussian weights exp(-d^2 / (2 h^2)), h the median distance to the k-th neighbour; a row at distance
    zero from a landmark gets weight 1 on it (its first one) and 0 elsewhere."""
    k = int(min(k, landmarks.shape[0]))
    l2 = (landmarks * landmarks).sum(axis=1)
    idx = np.empty((x.shape[0], k), dtype=np.int64)
    d2 = np.empty((x.shape[0], k))
    for a in range(0, x.shape[0], BLOCK):
        xb = x[a:a + BLOCK]
        dist = (xb * xb).sum(axis=1)[:, None] + l2[None, :] - 2.0 * (xb @ landmarks.T)
        np.maximum(dist, 0.0, out=dist)
        part = np.argpartition(dist, k - 1, axis=1)[:, :k] if k < landmarks.shape[0] else \
            np.broadcast_to(np.arange(k), (xb.shape[0], k)).copy()
        pd = np.take_along_axis(dist, part, axis=1)
        order = np.lexsort((part, pd), axis=1)  # by distance, ties by landmark index: deterministic
        idx[a:a + BLOCK] = np.take_along_axis(part, order, axis=1)
        d2[a:a + BLOCK] = np.take_along_axis(pd, order, axis=1)
    h2 = float(np.median(d2[:, -1]))
    h2 = h2 if h2 > 0 else 1.0
    w = np.exp(-(d2 - d2[:, :1]) / (2.0 * h2))  # shifted by the nearest: no underflow to all-zero rows
    exact = d2[:, 0] <= 1e-12 * max(h2, 1e-300)
    w[exact] = 0.0
    w[exact, 0] = 1.0
    return idx, w / w.sum(axis=1, keepdims=True)


def interpolate(values: np.ndarray, idx: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each row's weighted mean of its neighbours' ``values`` rows: sum_j weights[i, j] values[idx[i, j]]."""
    return np.einsum("ij,ijk->ik", weights, values[idx])


def place_on_landmarks(x: np.ndarray, landmarks: np.ndarray, positions: np.ndarray, idx: np.ndarray,
                       weights: np.ndarray) -> np.ndarray:
    """2-D positions of the rows of ``x`` from their nearest landmarks (``idx``, ``weights``:
    :func:`knn_weights`) by LAMP's local map (Joia et al. 2011, eq. 2-5). With the weighted means x~ and y~
    of the neighbours' features L_j and positions Y_j, L^ = sqrt(w)(L - x~), Y^ = sqrt(w)(Y - y~) and
    L^T Y^ = U S V^T: the scaled orthogonal Procrustes map A = U V^T, s = sum(S) / ||L^||_F^2, and
    y = y~ + s (x - x~) A, clipped to the bounding box of the neighbours' positions (so a point far from
    every landmark stays among them). A row equal to a landmark (weight 1 on it) lands on it."""
    out = np.empty((x.shape[0], positions.shape[1]))
    for a in range(0, x.shape[0], BLOCK):
        nb, w = idx[a:a + BLOCK], weights[a:a + BLOCK][..., None]
        feat, pos = landmarks[nb], positions[nb]  # (b, k, d), (b, k, 2)
        fbar, ybar = (w * feat).sum(axis=1), (w * pos).sum(axis=1)
        fh, yh = np.sqrt(w) * (feat - fbar[:, None]), np.sqrt(w) * (pos - ybar[:, None])
        u, sv, vt = np.linalg.svd(np.einsum("nkd,nke->nde", fh, yh), full_matrices=False)
        norm = (fh * fh).sum(axis=(1, 2))
        scale = np.divide(sv.sum(axis=1), norm, out=np.zeros_like(norm), where=norm > 0)
        y = ybar + scale[:, None] * np.einsum("nd,nde->ne", x[a:a + BLOCK] - fbar, u @ vt)
        out[a:a + BLOCK] = np.clip(y, pos.min(axis=1), pos.max(axis=1))
    return out

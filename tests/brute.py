"""Brute-force reference computations straight from SPEC's definitions (small data only)."""

from __future__ import annotations

import numpy as np


def two_set_weights(is_test: np.ndarray, n: int, m: int, eta: float) -> np.ndarray:
    """SPEC eq. 2's D of each labelling of two sets (booleans, True = test): 1/n on its test rows, -eta/m on
    its reference rows."""
    return np.where(is_test, 1.0 / n, -eta / m)


def unit_rows(a: np.ndarray) -> np.ndarray:
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def cosine_psi(prompts: np.ndarray, outputs: np.ndarray) -> np.ndarray:
    """psi(t, z) = phi_T(t) (x) phi_Z(z) with phi(a) = a / |a|, one np.kron per sample."""
    return np.stack([np.kron(t, z) for t, z in zip(unit_rows(prompts), unit_rows(outputs), strict=True)])


def lambda_matrix(psi_test: np.ndarray, psi_ref: np.ndarray, eta: float) -> np.ndarray:
    """Lambda = (1/n) sum psi psi^T - (eta/m) sum psi psi^T, as a sum of outer products."""
    n, m = len(psi_test), len(psi_ref)
    lam = sum(np.outer(p, p) for p in psi_test) / n
    return lam - eta * sum(np.outer(p, p) for p in psi_ref) / m


def desc_eigh(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    vals, vecs = np.linalg.eigh(a)
    return vals[::-1], vecs[:, ::-1]


def gaussian_k(a: np.ndarray, b: np.ndarray, sigma: float) -> float:
    return float(np.exp(-np.sum((a - b) ** 2) / (2.0 * sigma**2)))


def cosine_k(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def joint_gram_loops(t: np.ndarray, z: np.ndarray, kernel: str, sigma_t: float = 1.0,
                     sigma_z: float = 1.0) -> np.ndarray:
    """G_ab = k_T(t_a, t_b) k_Z(z_a, z_b), entry by entry."""
    n = len(t)
    g = np.empty((n, n))
    for a in range(n):
        for b in range(n):
            if kernel == "cosine":
                g[a, b] = cosine_k(t[a], t[b]) * cosine_k(z[a], z[b])
            else:
                g[a, b] = gaussian_k(t[a], t[b], sigma_t) * gaussian_k(z[a], z[b], sigma_z)
    return g


def eq3_matrix(gram: np.ndarray, n: int, eta: float) -> np.ndarray:
    """The paper's eq. 3: [[K/n, K/sqrt(nm)], [-eta K^T/sqrt(nm), -eta K/m]] (not symmetric)."""
    m = gram.shape[0] - n
    out = np.empty_like(gram)
    out[:n, :n] = gram[:n, :n] / n
    out[:n, n:] = gram[:n, n:] / np.sqrt(n * m)
    out[n:, :n] = -eta * gram[n:, :n] / np.sqrt(n * m)
    out[n:, n:] = -eta * gram[n:, n:] / m
    return out


def eq3_eigenvalues(gram: np.ndarray, n: int, eta: float) -> np.ndarray:
    vals = np.linalg.eigvals(eq3_matrix(gram, n, eta))
    assert np.max(np.abs(vals.imag)) < 1e-9 * max(1.0, np.max(np.abs(vals.real)))
    return np.sort(vals.real)[::-1]


def padded_sorted(a, b) -> tuple[np.ndarray, np.ndarray]:
    """Two spectra, padded with zeros to the same length, each sorted descending."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    size = max(a.size, b.size)
    a = np.sort(np.r_[a, np.zeros(size - a.size)])[::-1]
    b = np.sort(np.r_[b, np.zeros(size - b.size)])[::-1]
    return a, b


def nonzero(vals, rel: float = 1e-10) -> np.ndarray:
    vals = np.asarray(vals, dtype=float)
    return vals[np.abs(vals) > rel * np.max(np.abs(vals))]


def small_sets(seed: int = 0, n: int = 30, m: int = 25, d_t: int = 3, d_z: int = 4, n_prompts: int = 6):
    """Random test / reference sets whose prompts come from a small bank (strings 'prompt k')."""
    rng = np.random.default_rng(seed)
    bank = rng.standard_normal((n_prompts, d_t))
    lt, lr = rng.integers(0, n_prompts, n), rng.integers(0, n_prompts, m)
    t_test = bank[lt] + 0.0
    t_ref = bank[lr] + 0.0
    z_test = rng.standard_normal((n, d_z)) + 0.5
    z_ref = rng.standard_normal((m, d_z)) - 0.3
    names_t = [f"prompt {k}" for k in lt]
    names_r = [f"prompt {k}" for k in lr]
    return (t_test, z_test, names_t), (t_ref, z_ref, names_r)

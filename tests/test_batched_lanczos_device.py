"""The permutation test's batched Lanczos on an accelerator's code path (torch): no host round-trip per
step, and the same extremes as numpy, also where runs break down (invariant subspaces)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from backends import TORCH_DEVICE  # noqa: E402
from promptprism.stats import batched_eigen  # noqa: E402


def _device() -> str:
    return "cpu" if TORCH_DEVICE == "torch" else TORCH_DEVICE


def _weights(size: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = np.r_[np.full(size // 2, 2.0 / size), np.full(size - size // 2, -2.0 / size)]
    return np.stack([rng.permutation(base) for _ in range(k)], axis=1)


def _counting(monkeypatch) -> list[int]:
    calls = [0]
    real = batched_eigen.to_numpy

    def counted(x):
        calls[0] += 1
        return real(x)

    monkeypatch.setattr(batched_eigen, "to_numpy", counted)
    return calls


@pytest.mark.slow
def test_steps_make_no_host_round_trip(monkeypatch):
    rng = np.random.default_rng(0)
    f = rng.standard_normal((900, 300)) * np.linspace(2.0, 0.1, 300)  # wider than the dense batch: Lanczos
    w = _weights(900, 16, 1)
    expected = batched_eigen.weighted_factor_extremes(f, w, 5, dtype=np.float64, seed=3)
    calls = _counting(monkeypatch)
    got = batched_eigen.weighted_factor_extremes(torch.from_numpy(f).to(_device()), w, 5, dtype=np.float64,
                                                 seed=3)
    steps = batched_eigen.lanczos_steps(5, 300)
    assert steps >= 30
    assert calls[0] <= 3  # one copy of alpha, beta and the breakdown flags per block, not two per step
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, rtol=0, atol=1e-10 * np.abs(expected[0]).max())


def test_rows_that_break_down_are_rerun_and_match_numpy():
    rng = np.random.default_rng(2)
    f = rng.standard_normal((300, 6))  # G of rank 6 in 300 dimensions: every run breaks down after 6 steps
    gram = f @ f.T
    w = _weights(300, 7, 4)
    expected = batched_eigen.weighted_gram_extremes(gram, w, 4, dtype=np.float64, seed=5)
    got = batched_eigen.weighted_gram_extremes(torch.from_numpy(gram).to(_device()), w, 4, dtype=np.float64,
                                               seed=5)
    scale = np.abs(expected[0]).max()
    assert np.isfinite(got[0]).all() and np.isfinite(got[1]).all()
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, rtol=0, atol=1e-8 * scale)
    dense = np.array([np.linalg.eigvalsh(f.T @ (w[:, k, None] * f)) for k in range(w.shape[1])])
    np.testing.assert_allclose(got[0][:, 0], dense.max(axis=1), rtol=1e-8)

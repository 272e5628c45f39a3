"""Precision, recall (Kynkäänniemi et al. 2019) and density, coverage (Naeem et al. 2020), in row blocks.

With real (reference) samples X_1..X_N, fake (generated) samples Y_1..Y_M and the k-nearest-neighbour radius
r_k(Z) of a sample within its own set (the distance to its k-th nearest other sample):

* precision = (1/M) sum_j 1[exists i: |Y_j - X_i| <= r_k(X_i)]            (Kynkäänniemi et al. eq. 1-2)
* recall    = (1/N) sum_i 1[exists j: |X_i - Y_j| <= r_k(Y_j)]            (Kynkäänniemi et al. eq. 1-2)
* density   = (1/(kM)) sum_j sum_i w_i 1[|Y_j - X_i| <= r_k(X_i)]         (Naeem et al. eq. 3)
* coverage  = (1/N) sum_i 1[exists j: |X_i - Y_j| <= r_k(X_i)]            (Naeem et al. eq. 4)

Balls are closed (``<=``, as in Kynkäänniemi et al.'s f(phi, Phi)); the reference package ``prdc`` uses open
balls (``<``), which read 0 wherever a radius is 0: a sample with k or more exact duplicates (prdc issue #7:
two identical constant sets give density and coverage 0). Ties also break density's premise that a ball
holds k samples: a ball holding c > k other reference samples (duplicates at its radius) is weighted
w_i = k / c (w_i = 1 without ties), so identical sets read density n / (n - 1), not n / k. For data without
ties both definitions agree exactly with prdc.

Distances are computed in row blocks against the whole other set (bounded memory: ``block_rows`` x N
distances at a time), never as the full N x M matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InputError, OptionError

#: the distance block's budget in bytes (block_rows x other-set rows x 8)
BLOCK_BYTES = 256 * 2**20


@dataclass(frozen=True)
class NeighbourIndicators:
    """Per-sample indicators behind the four metrics (their means are the metrics; bootstrap resamples them).

    ``in_real_manifold[j]`` (fake j inside some real ball), ``real_balls[j]`` (how many real balls hold fake
    j, each ball weighted k / (samples it holds): 1 without ties), ``in_fake_manifold[i]`` (real i inside
    some fake ball), ``covered[i]`` (real i's own ball holds a fake sample), the radii, and ``tied_balls``:
    how many real balls hold more than k other samples (ties at the radius: exact duplicates).
    """

    in_real_manifold: np.ndarray
    real_balls: np.ndarray
    in_fake_manifold: np.ndarray
    covered: np.ndarray
    real_radii: np.ndarray
    fake_radii: np.ndarray
    k: int
    tied_balls: int = 0

    def metrics(self) -> dict[str, float]:
        """{'precision', 'recall', 'density', 'coverage'}: the means of the indicators."""
        return {"precision": float(self.in_real_manifold.mean()),
                "recall": float(self.in_fake_manifold.mean()),
                "density": float(self.real_balls.mean() / self.k), "coverage": float(self.covered.mean())}


def check_nearest_k(k: Any, n_real: int, n_fake: int) -> int:
    """``k`` when both sets have more than k rows (a k-NN radius leaves the sample itself out)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise OptionError(f"nearest_k must be an integer >= 1, got {k!r}")
    for what, n in (("reference", n_real), ("generated", n_fake)):
        if n < k + 1:
            raise InputError(f"the {what} set has {n} samples; nearest_k={k} needs at least {k + 1} (each "
                             f"sample's k-NN radius is the distance to its {k}-th nearest other sample)")
    return int(k)


class _Centred:
    """Both sets centred on the reference mean (distances are translation invariant; the expansion
    |a|^2 + |b|^2 - 2<a, b> then works on numbers of the size of the distances), with squared norms."""

    def __init__(self, real: Any, fake: Any, dtype: Any):
        self.dtype = np.dtype(dtype)
        shift = _block_mean(real)
        self.real = _centre(real, shift, self.dtype)
        self.fake = _centre(fake, shift, self.dtype)
        self.real_sq = np.einsum("ij,ij->i", self.real, self.real)
        self.fake_sq = np.einsum("ij,ij->i", self.fake, self.fake)


def _block_mean(x: Any, rows: int = 8192) -> np.ndarray:
    total = np.zeros(x.shape[1])
    for start in range(0, x.shape[0], rows):
        total += np.asarray(x[start : start + rows], dtype=np.float64).sum(axis=0)
    return total / x.shape[0]


def _centre(x: Any, shift: np.ndarray, dtype: np.dtype, rows: int = 8192) -> np.ndarray:
    out = np.empty(x.shape, dtype=dtype)
    for start in range(0, x.shape[0], rows):
        out[start : start + rows] = np.asarray(x[start : start + rows], dtype=np.float64) - shift
    return out


def _block_rows(other: int, block_rows: int | None) -> int:
    return int(block_rows) if block_rows else max(1, min(4096, BLOCK_BYTES // (8 * max(other, 1))))


def _sq_dist(a: np.ndarray, a_sq: np.ndarray, b: np.ndarray, b_sq: np.ndarray) -> np.ndarray:
    d2 = a @ b.T
    d2 *= -2.0
    d2 += a_sq[:, None]
    d2 += b_sq[None, :]
    np.maximum(d2, 0.0, out=d2)
    return d2


def knn_radii(x: np.ndarray, x_sq: np.ndarray, k: int, *, block_rows: int | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """Squared distance of each row of ``x`` to its k-th nearest other row (the (k+1)-th smallest distance
    counting itself at 0, as prdc), and how many other rows its closed ball holds (k without ties), in row
    blocks."""
    n = x.shape[0]
    radii = np.empty(n, dtype=np.float64)
    held = np.empty(n, dtype=np.int64)
    step = _block_rows(n, block_rows)
    for start in range(0, n, step):
        stop = min(n, start + step)
        d2 = _sq_dist(x[start:stop], x_sq[start:stop], x, x_sq)
        d2[np.arange(stop - start), np.arange(start, stop)] = 0.0  # itself, exactly
        radii[start:stop] = np.partition(d2, k, axis=1)[:, k]
        held[start:stop] = (d2 <= radii[start:stop, None]).sum(axis=1) - 1
    return radii, held


def neighbour_indicators(real: Any, fake: Any, k: int = 5, *, dtype: Any = np.float64,
                         block_rows: int | None = None) -> NeighbourIndicators:
    """The per-sample indicators of precision, recall, density and coverage (module docstring, eqs.).

    ``dtype``: the distances' precision (float32 halves memory and time; ties can then differ from float64
    at round-off). Memory: the two centred copies plus one block of ``block_rows`` x (N or M) distances.
    """
    if real.shape[1] != fake.shape[1]:
        raise InputError(f"the reference and generated features have {real.shape[1]} and {fake.shape[1]} "
                         "dimensions; they must come from the same encoder")
    k = check_nearest_k(k, real.shape[0], fake.shape[0])
    c = _Centred(real, fake, dtype)
    r_real, held = knn_radii(c.real, c.real_sq, k, block_rows=block_rows)
    r_fake, _ = knn_radii(c.fake, c.fake_sq, k, block_rows=block_rows)
    weight = k / held  # 1 without ties; a ball holding c > k samples (duplicates) counts k / c
    n, m = c.real.shape[0], c.fake.shape[0]
    in_real = np.zeros(m, dtype=bool)
    balls = np.zeros(m)
    in_fake = np.zeros(n, dtype=bool)
    nearest_fake = np.full(n, np.inf)
    step = _block_rows(n, block_rows)
    for start in range(0, m, step):
        stop = min(m, start + step)
        d2 = _sq_dist(c.fake[start:stop], c.fake_sq[start:stop], c.real, c.real_sq)  # (block, N)
        inside = d2 <= r_real[None, :]
        in_real[start:stop] = inside.any(axis=1)
        balls[start:stop] = inside @ weight
        in_fake |= (d2 <= r_fake[start:stop, None]).any(axis=0)
        np.minimum(nearest_fake, d2.min(axis=0), out=nearest_fake)
    return NeighbourIndicators(in_real, balls, in_fake, nearest_fake <= r_real, np.sqrt(r_real),
                               np.sqrt(r_fake), k, int(np.count_nonzero(held > k)))


def prdc(real: Any, fake: Any, k: int = 5, **options: Any) -> dict[str, float]:
    """{'precision', 'recall', 'density', 'coverage'} of ``fake`` against ``real`` (module docstring)."""
    return neighbour_indicators(real, fake, k, **options).metrics()
